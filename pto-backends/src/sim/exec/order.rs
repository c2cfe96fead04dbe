//! Ordering instructions: index reductions (`argreduce`) and row-wise top-k. Equal
//! elements go to the lower index; a NaN counts as the largest for `argmax` and top-k
//! and as the smallest for `argmin`, the first NaN winning (numpy's `argmax` / `argmin`,
//! torch's `topk`).

use std::cmp::Ordering;
use std::rc::Rc;

use ndarray::{ArrayD, Axis, IxDyn};
use pto_op::kernel::ir::{ArgOp, TileId};

use super::data::Data;
use super::machine::Machine;
use crate::sim::error::SimError;

/// `a` against `b` with NaN above every number (and equal to NaN).
fn nan_high(a: f32, b: f32) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// The index of the first extreme element of `lane` under `better` (true when its first
/// argument beats the second strictly).
fn first_best<T: Copy>(lane: impl Iterator<Item = T>, better: impl Fn(T, T) -> bool) -> i128 {
    let mut best: Option<(usize, T)> = None;
    for (i, x) in lane.enumerate() {
        if best.is_none_or(|(_, b)| better(x, b)) {
            best = Some((i, x));
        }
    }
    best.map_or(0, |(i, _)| i as i128)
}

/// The positions of a row's `k` largest elements, descending, equal ones in row order.
fn top_positions<T: Copy>(row: &[T], k: usize, order: impl Fn(T, T) -> Ordering) -> Vec<usize> {
    let mut positions: Vec<usize> = (0..row.len()).collect();
    // A stable sort keeps equal elements in row order.
    positions.sort_by(|&a, &b| order(row[b], row[a]));
    positions.truncate(k);
    positions
}

impl Machine<'_> {
    /// `argreduce`: the index of the largest or smallest element along `axis`.
    pub(super) fn run_arg_reduce(
        &mut self,
        dst: TileId,
        op: ArgOp,
        src: TileId,
        axis: usize,
    ) -> Result<(), SimError> {
        let ax = Axis(axis);
        let indices = match (self.value(src), op) {
            (Data::F(v), ArgOp::Max) => v.map_axis(ax, |lane| {
                first_best(lane.iter().copied(), |x, b| {
                    nan_high(x, b) == Ordering::Greater
                })
            }),
            (Data::F(v), ArgOp::Min) => v.map_axis(ax, |lane| {
                // NaN is the smallest here: invert the NaN rule, not the order of numbers.
                first_best(lane.iter().copied(), |x, b| {
                    match (x.is_nan(), b.is_nan()) {
                        (true, false) => true,
                        (_, true) => false,
                        _ => x < b,
                    }
                })
            }),
            (Data::I(v), ArgOp::Max) => {
                v.map_axis(ax, |lane| first_best(lane.iter().copied(), |x, b| x > b))
            }
            (Data::I(v), ArgOp::Min) => {
                v.map_axis(ax, |lane| first_best(lane.iter().copied(), |x, b| x < b))
            }
        };
        self.bind(dst, Rc::new(Data::I(indices.insert_axis(ax))));
        Ok(())
    }

    /// `topk`: each row's `k` largest elements, descending, and their indices.
    pub(super) fn run_top_k(
        &mut self,
        values: TileId,
        indices: TileId,
        src: TileId,
        k: usize,
    ) -> Result<(), SimError> {
        let out_shape = self.program.tile_type(values).shape.clone();
        let (value_data, index_data) = match self.value(src) {
            Data::F(v) => {
                let (kept, positions) = rows_top_k(v, k, nan_high);
                (Data::F(kept), positions)
            }
            Data::I(v) => {
                let (kept, positions) = rows_top_k(v, k, |a: i128, b: i128| a.cmp(&b));
                (Data::I(kept), positions)
            }
        };
        let shape = IxDyn(&out_shape);
        let reshape = |data: Data| -> Data {
            match data {
                Data::F(a) => Data::F(a.into_shape_with_order(shape.clone()).expect("k per row")),
                Data::I(a) => Data::I(a.into_shape_with_order(shape.clone()).expect("k per row")),
            }
        };
        self.bind(values, Rc::new(reshape(value_data)));
        self.bind(indices, Rc::new(reshape(Data::I(index_data))));
        Ok(())
    }
}

/// The top `k` of every row (the last axis) of `data`, flat: values and positions.
fn rows_top_k<T: Copy + Default>(
    data: &ArrayD<T>,
    k: usize,
    order: impl Fn(T, T) -> Ordering + Copy,
) -> (ArrayD<T>, ArrayD<i128>) {
    let row_len = data.shape().last().copied().unwrap_or(1).max(1);
    let flat: Vec<T> = data.iter().copied().collect();
    let (mut kept, mut positions) = (Vec::new(), Vec::new());
    for row in flat.chunks(row_len) {
        for p in top_positions(row, k, order) {
            kept.push(row[p]);
            positions.push(p as i128);
        }
    }
    let n = kept.len();
    (
        ArrayD::from_shape_vec(IxDyn(&[n]), kept).expect("one dim"),
        ArrayD::from_shape_vec(IxDyn(&[n]), positions).expect("one dim"),
    )
}
