//! Normalizations over the last axis.

use ndarray::Axis;

use super::{expect_dtype_of, expect_float};
use crate::kernel::rows::row_tiles;
use crate::prelude::*;

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
        let x32 = x.to_f32_array();
        let axis = Axis(x32.ndim() - 1);
        let n = x32.len_of(axis) as f32;
        let mean = x32.sum_axis(axis).insert_axis(axis) / n;
        let centered = &x32 - &mean;
        let variance = centered.mapv(|v| v * v).sum_axis(axis).insert_axis(axis) / n;
        let inv = variance.mapv(|v| 1.0 / (v + p.eps).sqrt());
        let y = &centered * &inv * &gamma.to_f32_array() + &beta.to_f32_array();
        Ok(Tensor::from_array(y).cast(x.dtype()))
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
        let tiles = row_tiles(k, x)?;
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
        let x32 = x.to_f32_array();
        let axis = Axis(x32.ndim() - 1);
        let n = x32.len_of(axis) as f32;
        let mean_square = x32.mapv(|v| v * v).sum_axis(axis).insert_axis(axis) / n;
        let inv = mean_square.mapv(|m| 1.0 / (m + p.eps).sqrt());
        let y = &x32 * &inv * &gamma.to_f32_array();
        Ok(Tensor::from_array(y).cast(x.dtype()))
    }

    #[kernel]
    fn kernel(
        k: &mut Kernel,
        x: &Global,
        gamma: &Global,
        y: &Global,
        p: &Params,
    ) -> Result<(), OpError> {
        let tiles = row_tiles(k, x)?;
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
