//! Movement instructions: masked loads and stores between globals and tiles, moves between
//! buffers, and windows of a tile.

use std::rc::Rc;

use ndarray::{ArrayD, IxDyn, Slice};
use pto_op::kernel::ir::{GlobalId, Index, TileId};

use super::data::{Data, float_scalar, integer_scalar, is_integer, round_in_place};
use super::machine::Machine;
use crate::sim::error::SimError;

impl Machine<'_> {
    /// `load`: the `dst`-shaped window of global `src` at `offsets`, `pad` outside the
    /// global.
    pub(super) fn run_load(
        &mut self,
        dst: TileId,
        src: GlobalId,
        offsets: &[Index],
        pad: f64,
    ) -> Result<(), SimError> {
        let dst_ty = self.program.tile_type(dst);
        let offsets = self.offsets(offsets)?;
        let data = match &self.globals[src] {
            Data::F(global) => {
                let mut data = load(
                    global,
                    &offsets,
                    &dst_ty.shape,
                    float_scalar(pad, dst_ty.dtype),
                );
                // A valid program loads a global of the tile's dtype: rounding
                // changes nothing but the pad, rounded above.
                if self.program.global(src).map(|g| g.dtype) != Some(dst_ty.dtype) {
                    round_in_place(&mut data, dst_ty.dtype);
                }
                Data::F(data)
            }
            Data::I(global) => Data::I(load(
                global,
                &offsets,
                &dst_ty.shape,
                integer_scalar(pad, dst_ty.dtype),
            )),
        };
        if is_integer(dst_ty.dtype) != matches!(data, Data::I(_)) {
            return Err(self.mixed(dst));
        }
        self.env[dst] = Some(Rc::new(data));
        Ok(())
    }

    /// `store`: the part of tile `src` at `offsets` that lies inside global `dst`.
    pub(super) fn run_store(
        &mut self,
        dst: GlobalId,
        offsets: &[Index],
        src: TileId,
    ) -> Result<(), SimError> {
        let offsets = self.offsets(offsets)?;
        let value = self.shared(src);
        match (&mut self.globals[dst], &*value) {
            (Data::F(global), Data::F(v)) => store(global, &offsets, v),
            (Data::I(global), Data::I(v)) => store(global, &offsets, v),
            _ => return Err(self.mixed(src)),
        }
        Ok(())
    }

    /// `move`: `src` in another buffer, converted where its dtype changes.
    pub(super) fn run_move(&mut self, dst: TileId, src: TileId) -> Result<(), SimError> {
        let dst_dtype = self.program.tile_type(dst).dtype;
        let src_dtype = self.program.tile_type(src).dtype;
        let value = self.shared(src);
        if dst_dtype == src_dtype {
            self.bind(dst, value);
        } else {
            // Only L0C -> UB converts, to a float dtype.
            let converted = Data::of_tensor(&value.to_tensor(src_dtype).cast(dst_dtype));
            self.bind(dst, Rc::new(converted));
        }
        Ok(())
    }

    /// `extract`: the `dst`-shaped window of tile `src` at `offsets`.
    pub(super) fn run_extract(
        &mut self,
        dst: TileId,
        src: TileId,
        offsets: &[usize],
    ) -> Result<(), SimError> {
        let dst_ty = self.program.tile_type(dst);
        let window = |axis: ndarray::AxisDescription| {
            let start = offsets[axis.axis.index()];
            ndarray::Slice::from(start..start + dst_ty.shape[axis.axis.index()])
        };
        let part = match self.value(src) {
            Data::F(value) => Data::F(value.slice_each_axis(window).to_owned()),
            Data::I(value) => Data::I(value.slice_each_axis(window).to_owned()),
        };
        self.bind(dst, Rc::new(part));
        Ok(())
    }
}

/// The per-axis overlap of a tile at `offsets` with a tensor of shape `dims`: for each
/// axis, the range inside the tile and the range inside the tensor; `None` if they do not
/// overlap.
type Overlap = Vec<((usize, usize), (usize, usize))>;

/// A valid program gives one offset per dim and tiles of the tensor's rank.
fn overlap(dims: &[usize], offsets: &[i64], tile: &[usize]) -> Option<Overlap> {
    debug_assert!(offsets.len() == dims.len() && tile.len() == dims.len());
    let mut ranges = Vec::with_capacity(dims.len());
    for ((&dim, &offset), &size) in dims.iter().zip(offsets).zip(tile) {
        // Saturating: an offset near i64::MAX plus the tile's size lies past any tensor.
        let start = offset.max(0);
        let end = offset
            .saturating_add(i64::try_from(size).unwrap_or(i64::MAX))
            .min(i64::try_from(dim).unwrap_or(i64::MAX));
        if start >= end {
            return None;
        }
        let in_tile = ((start - offset) as usize, (end - offset) as usize);
        ranges.push((in_tile, (start as usize, end as usize)));
    }
    Some(ranges)
}

fn slice_of(ranges: &[(usize, usize)]) -> impl Fn(ndarray::AxisDescription) -> Slice + '_ {
    |ax| {
        let (start, end) = ranges[ax.axis.index()];
        Slice::from(start..end)
    }
}

/// `tile` with the leading dims of size 1 that it drops of a global of rank `rank` (a tile
/// of lower rank covers one element of each).
fn with_dropped_dims(tile: &[usize], rank: usize) -> Vec<usize> {
    let mut dims = vec![1; rank.saturating_sub(tile.len())];
    dims.extend_from_slice(tile);
    dims
}

/// A masked load: the `tile`-shaped window of `global` at `offsets`, `pad` outside it (a
/// tile of lower rank than the global: the window of one element of its leading dims).
fn load<T: Copy>(global: &ArrayD<T>, offsets: &[i64], tile: &[usize], pad: T) -> ArrayD<T> {
    if tile.len() < global.ndim() {
        let full = with_dropped_dims(tile, global.ndim());
        let window = load(global, offsets, &full, pad);
        return window
            .to_shape(IxDyn(tile))
            .expect("dropping dims of size 1 keeps the elements")
            .into_owned();
    }
    let Some(ranges) = overlap(global.shape(), offsets, tile) else {
        return ArrayD::from_elem(IxDyn(tile), pad);
    };
    let (in_tile, in_global): (Vec<_>, Vec<_>) = ranges.into_iter().unzip();
    let window = global.slice_each_axis(slice_of(&in_global));
    if window.shape() == tile {
        return window.to_owned();
    }
    let mut out = ArrayD::from_elem(IxDyn(tile), pad);
    out.slice_each_axis_mut(slice_of(&in_tile)).assign(&window);
    out
}

/// A masked store: writes the part of `value` at `offsets` that lies inside `global` (a
/// tile of lower rank than the global: into one element of its leading dims).
fn store<T: Copy>(global: &mut ArrayD<T>, offsets: &[i64], value: &ArrayD<T>) {
    if value.ndim() < global.ndim() {
        let full = with_dropped_dims(value.shape(), global.ndim());
        let value = value
            .to_shape(IxDyn(&full))
            .expect("adding dims of size 1 keeps the elements")
            .into_owned();
        return store(global, offsets, &value);
    }
    let Some(ranges) = overlap(global.shape(), offsets, value.shape()) else {
        return;
    };
    let (in_tile, in_global): (Vec<_>, Vec<_>) = ranges.into_iter().unzip();
    global
        .slice_each_axis_mut(slice_of(&in_global))
        .assign(&value.slice_each_axis(slice_of(&in_tile)));
}
