//! Normalizations over the last axis.

use ndarray::Axis;

use super::checks::{expect_dtype_of, expect_float};
use crate::kernel::rows::{RowLive, row_tiles};
use crate::prelude::*;

/// A per-column param (`[cols]`, checked by `row_shapes`) in f32, as a vector.
fn row_param(name: &str, t: &Tensor) -> Result<ndarray::Array1<f32>, OpError> {
    t.to_f32_array()
        .into_dimensionality::<ndarray::Ix1>()
        .map_err(|e| {
            OpError::input(
                name,
                format!("expected rank 1, got shape {}: {e}", t.shape()),
            )
        })
}

/// The sum of `values`, gathered in `scratch` (reused across rows) and summed the way
/// ndarray's `sum_axis` sums one contiguous lane, so a row gives the same f32 bits as the
/// whole-array form.
fn row_sum(scratch: &mut Vec<f32>, values: impl Iterator<Item = f32>) -> f32 {
    scratch.clear();
    scratch.extend(values);
    ndarray::ArrayView1::from(scratch.as_slice()).sum()
}

/// Checks `x` has rank >= 1 with non-empty rows, and that each of `params` (named inputs
/// of one row's size) has shape `[last]`.
fn row_shapes(x: &Shape, params: &[(&str, &Shape)]) -> Result<Shape, OpError> {
    x.expect_min_rank("x", 1)?;
    let cols = x.last()?;
    if cols == 0 {
        return Err(OpError::input(
            "x",
            format!("rows of shape {x} are empty: nothing to normalize"),
        ));
    }
    for (name, shape) in params {
        shape.expect_eq(name, &Shape::from([cols]))?;
    }
    Ok(x.clone())
}

/// Checks `x` is a float dtype and each of `params` has it too.
fn row_dtypes(x: DType, params: &[(&str, DType)]) -> Result<DType, OpError> {
    expect_float("x", x)?;
    for (name, dtype) in params {
        expect_dtype_of(name, *dtype, "x", x)?;
    }
    Ok(x)
}

/// y = (x - mean) / sqrt(var + eps) * gamma + beta, with the mean and (biased) variance of
/// each row (the last axis), as ONNX LayerNormalization with `axis = -1`.
///
/// `gamma` and `beta` have shape `[last]` and the dtype of `x`, a float dtype, which `y`
/// keeps; computed in f32.
#[custom_op(name = "std.layer_norm", params(eps: f32 = 1e-5))]
pub mod layer_norm {
    use super::*;

    /// What the kernel keeps in UB at its peak, on the simulator and in its Ascend C
    /// lowering: six tiles of the rows (the input queue, the centered rows, their squares,
    /// the scaled and shifted products, the output queue) with `gamma` and `beta`. Its row
    /// tiles are sized for it ([`crate::kernel::rows::row_tiles`]).
    pub const LIVE: RowLive = RowLive {
        tiles: 6,
        params: 2,
    };

    #[infer_shape]
    fn infer_shape(x: &Shape, gamma: &Shape, beta: &Shape, _p: &Params) -> Result<Shape, OpError> {
        row_shapes(x, &[("gamma", gamma), ("beta", beta)])
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, gamma: DType, beta: DType, _p: &Params) -> Result<DType, OpError> {
        row_dtypes(x, &[("gamma", gamma), ("beta", beta)])
    }

    #[reference]
    fn reference(x: &Tensor, gamma: &Tensor, beta: &Tensor, p: &Params) -> Result<Tensor, OpError> {
        // One pass per row, in place, in the order of the whole-array form
        // `centered = x - mean; centered * inv * gamma + beta` (see `row_sum`).
        let mut y = x.to_f32_array();
        let axis = Axis(y.ndim() - 1);
        let n = y.len_of(axis) as f32;
        let (gamma, beta) = (row_param("gamma", gamma)?, row_param("beta", beta)?);
        let mut squares = Vec::with_capacity(y.len_of(axis));
        for mut row in y.lanes_mut(axis) {
            let mean = row.sum() / n;
            row.mapv_inplace(|v| v - mean);
            let variance = row_sum(&mut squares, row.iter().map(|v| v * v)) / n;
            let inv = 1.0 / (variance + p.eps).sqrt();
            ndarray::Zip::from(&mut row)
                .and(&gamma)
                .and(&beta)
                .for_each(|v, &g, &b| *v = *v * inv * g + b);
        }
        Ok(Tensor::from_f32_array(y, x.dtype()))
    }

    #[kernel]
    fn kernel(
        k: &mut Kernel,
        x: &Global,
        gamma: &Global,
        beta: &Global,
        y: &Global,
        p: &Params,
    ) -> Result<(), OpError> {
        let tiles = row_tiles(k, x, LIVE)?;
        let cols = x.shape().last()?;
        let xt = k
            .load(x, tiles.offsets.clone(), &tiles.shape)?
            .cast(DType::F32);
        let g = k.load(gamma, [0], [cols])?.cast(DType::F32);
        let b = k.load(beta, [0], [cols])?.cast(DType::F32);
        let centered = &xt - xt.mean(-1);
        let inv = (centered.square().mean(-1) + p.eps).rsqrt();
        k.store(y, tiles.offsets, &(centered * inv * g + b).cast(y.dtype()))
    }
}

/// y = x * rsqrt(mean(x^2, last axis) + eps) * gamma.
///
/// `gamma` has shape `[last]` and the dtype of `x`, a float dtype, which `y` keeps;
/// computed in f32.
#[custom_op(name = "std.rms_norm", params(eps: f32 = 1e-6))]
pub mod rms_norm {
    use super::*;

    /// What the kernel keeps in UB at its peak, on the simulator and in its Ascend C
    /// lowering: five tiles of the rows (the input queue, the squares, the two products, the
    /// output queue) with `gamma`. Its row tiles are sized for it
    /// ([`crate::kernel::rows::row_tiles`]).
    pub const LIVE: RowLive = RowLive {
        tiles: 5,
        params: 1,
    };

    #[infer_shape]
    fn infer_shape(x: &Shape, gamma: &Shape, _p: &Params) -> Result<Shape, OpError> {
        row_shapes(x, &[("gamma", gamma)])
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, gamma: DType, _p: &Params) -> Result<DType, OpError> {
        row_dtypes(x, &[("gamma", gamma)])
    }

    #[reference]
    fn reference(x: &Tensor, gamma: &Tensor, p: &Params) -> Result<Tensor, OpError> {
        // One pass per row, in place, in the order of the whole-array form
        // `x * inv * gamma` (see `row_sum`).
        let mut y = x.to_f32_array();
        let axis = Axis(y.ndim() - 1);
        let n = y.len_of(axis) as f32;
        let gamma = row_param("gamma", gamma)?;
        let mut squares = Vec::with_capacity(y.len_of(axis));
        for mut row in y.lanes_mut(axis) {
            let mean_square = row_sum(&mut squares, row.iter().map(|v| v * v)) / n;
            let inv = 1.0 / (mean_square + p.eps).sqrt();
            ndarray::Zip::from(&mut row)
                .and(&gamma)
                .for_each(|v, &g| *v = *v * inv * g);
        }
        Ok(Tensor::from_f32_array(y, x.dtype()))
    }

    #[kernel]
    fn kernel(
        k: &mut Kernel,
        x: &Global,
        gamma: &Global,
        y: &Global,
        p: &Params,
    ) -> Result<(), OpError> {
        let tiles = row_tiles(k, x, LIVE)?;
        let cols = x.shape().last()?;
        let xt = k
            .load(x, tiles.offsets.clone(), &tiles.shape)?
            .cast(DType::F32);
        let g = k.load(gamma, [0], [cols])?.cast(DType::F32);
        let inv = (xt.square().mean(-1) + p.eps).rsqrt();
        k.store(y, tiles.offsets, &(xt * inv * g).cast(y.dtype()))
    }
}

crate::register_sweep!(
    RMS_NORM_SWEEP,
    crate::sweep::SweepDef {
        op: rms_norm::NAME,
        sizes: || crate::sweep::rows_cols(|r, c| vec![vec![r, c], vec![c]]),
        location: crate::source_location!(),
    }
);

crate::register_sweep!(
    LAYER_NORM_SWEEP,
    crate::sweep::SweepDef {
        op: layer_norm::NAME,
        sizes: || crate::sweep::rows_cols(|r, c| vec![vec![r, c], vec![c], vec![c]]),
        location: crate::source_location!(),
    }
);
