//! Row-wise top-k on the tile language's sort path (`Tile::top_k`): the values and the i32
//! indices of each row's `k` largest elements, descending, equal values in row order.
//!
//! `examples/top_k_vs_unrolled.rs` measures it on the simulator against the same top-k
//! written as `k` unrolled rounds of max / compare / select / min.

use pto_op::prelude::*;

/// `values, indices = topk(x, k)` along the last axis: the `k` largest elements of each
/// row, descending, and their positions in the row (i32); equal elements keep their order
/// (the lower index first) and a NaN counts as the largest (torch's
/// `topk(x, k, sorted=True)`). Float inputs, `1 <= k <=` the row's length.
#[custom_op(name = "sorting.top_k", params(k: i64 = 8), outputs(values, indices))]
pub mod top_k {
    use super::*;

    /// What the kernel keeps in UB at its peak: the input rows and the top-k of them as
    /// tiles of the rows, and the sort's buffers of one padded row (scores, indices, pairs
    /// twice and the split: some 22 bytes an element of f16, six one-row tiles of f32).
    pub const LIVE: pto_op::kernel::rows::RowLive = pto_op::kernel::rows::RowLive {
        tiles: 2,
        params: 6,
    };

    fn kept(x: &Shape, p: &Params) -> Result<usize, OpError> {
        x.expect_min_rank("x", 1)?;
        let n = x.last()?;
        match usize::try_from(p.k) {
            Ok(k) if (1..=n).contains(&k) => Ok(k),
            _ => Err(OpError::input(
                "x",
                format!(
                    "k = {} is not in 1..={n}, the length of the rows of {x}",
                    p.k
                ),
            )),
        }
    }

    #[infer_shape]
    fn infer_shape(x: &Shape, p: &Params) -> Result<(Shape, Shape), OpError> {
        let k = kept(x, p)?;
        let out = x.with_dim(-1, k)?;
        Ok((out.clone(), out))
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _p: &Params) -> Result<(DType, DType), OpError> {
        match x {
            DType::F32 | DType::F16 => Ok((x, DType::I32)),
            other => Err(OpError::input(
                "x",
                format!("expected f32 or f16 (the sort API's types), got {other}"),
            )),
        }
    }

    /// A plain stable sort of each row's (value, position) pairs, descending by value.
    #[reference]
    fn reference(x: &Tensor, p: &Params) -> Result<(Tensor, Tensor), OpError> {
        let k = kept(&Shape::from(x.dims()), p)?;
        let n = x.dims().last().copied().unwrap_or(1);
        let data: Vec<f32> = x.to_f32_array().iter().copied().collect();
        let (mut values, mut indices) = (Vec::new(), Vec::new());
        for row in data.chunks(n.max(1)) {
            let mut order: Vec<usize> = (0..row.len()).collect();
            order.sort_by(|&a, &b| {
                let (x, y) = (row[a], row[b]);
                // NaN first, then descending; `sort_by` is stable: ties in row order.
                y.is_nan()
                    .cmp(&x.is_nan())
                    .then(y.partial_cmp(&x).unwrap_or(std::cmp::Ordering::Equal))
            });
            for &i in &order[..k] {
                values.push(row[i]);
                indices.push(i as i32);
            }
        }
        let mut dims = x.dims().to_vec();
        if let Some(last) = dims.last_mut() {
            *last = k;
        }
        Ok((
            Tensor::from_vec(dims.clone(), values)?.cast(x.dtype()),
            Tensor::from_vec(dims, indices)?,
        ))
    }

    #[parity(x = f32[16, 100], k = 8)]
    #[parity(x = f16[8, 1024], k = 64)]
    #[parity(x = f32[3, 5, 40], k = 40)]
    #[parity(x = f16[300], k = 1)]
    #[kernel]
    fn kernel(
        k: &mut Kernel,
        x: &Global,
        values: &Global,
        indices: &Global,
        p: &Params,
    ) -> Result<(), OpError> {
        let kept = usize::try_from(p.k).map_err(|_| OpError::input("x", "k < 0"))?;
        let tiles = pto_op::kernel::rows::row_tiles(k, x, LIVE)?; // sets the grid
        let (v, i) = k.load(x, tiles.offsets.clone(), &tiles.shape)?.top_k(kept);
        k.store(values, tiles.offsets.clone(), &v)?;
        k.store(indices, tiles.offsets, &i)
    }
}

// The parity tests run on the `cpu` and `sim` targets (and `ascendc-host` with the
// `device` feature) of pto-backends: link it in tests.
#[cfg(test)]
use pto_backends as _;
