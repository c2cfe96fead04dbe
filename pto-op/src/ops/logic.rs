//! Logic on bool tensors and the float classifications exporters build masks from: and, or,
//! xor, not, is-NaN and is-infinite.
//!
//! Every output is bool, computed exactly on the CPU; none has a kernel, so on a kernel
//! target they run on the CPU reference (a fallback the compile report lists).

use super::assemble::source_indices;
use super::elementwise::broadcast_shapes;
use crate::prelude::*;

/// `values` as a bool tensor of `shape`.
fn bools(shape: Shape, values: Vec<bool>) -> Result<Tensor, OpError> {
    Tensor::from_vec(shape, values).map_err(|e| OpError::invalid(e.to_string()))
}

/// The elements of input `input`, which must be bool.
fn expect_bool(input: &str, dtype: DType) -> Result<(), OpError> {
    match dtype {
        DType::Bool => Ok(()),
        other => Err(OpError::input(input, format!("expected bool, got {other}"))),
    }
}

/// `f(a[i], b[j])` for every element of the numpy broadcast of bool tensors `a` and `b`.
fn logical(a: &Tensor, b: &Tensor, f: fn(bool, bool) -> bool) -> Result<Tensor, OpError> {
    let shape = broadcast_shapes(&a.shape(), &b.shape())?;
    let (ia, ib) = (
        source_indices(shape.dims(), a.dims()),
        source_indices(shape.dims(), b.dims()),
    );
    let (va, vb) = (a.to_vec::<bool>()?, b.to_vec::<bool>()?);
    let values = (0..shape.numel())
        .map(|i| f(va[ia[i]], vb[ib[i]]))
        .collect();
    bools(shape, values)
}

/// The dtype of a logical op: bool, of bool inputs `a` and `b`.
fn logical_dtype(a: DType, b: DType) -> Result<DType, OpError> {
    expect_bool("a", a)?;
    expect_bool("b", b)?;
    Ok(DType::Bool)
}

broadcast_binary_op! {
    /// y = a and b, element-wise with numpy broadcasting, as ONNX And: `a`, `b` and `y` are
    /// bool.
    "std.and",
    and,
    dtype: logical_dtype,
    reference: |a, b| logical(a, b, |x, y| x && y),
}

broadcast_binary_op! {
    /// y = a or b, element-wise with numpy broadcasting, as ONNX Or: `a`, `b` and `y` are
    /// bool.
    "std.or",
    or,
    dtype: logical_dtype,
    reference: |a, b| logical(a, b, |x, y| x || y),
}

broadcast_binary_op! {
    /// y = a xor b, element-wise with numpy broadcasting, as ONNX Xor: `a`, `b` and `y` are
    /// bool.
    "std.xor",
    xor,
    dtype: logical_dtype,
    reference: |a, b| logical(a, b, |x, y| x != y),
}

/// y = not x, element-wise, as ONNX Not: `x` and `y` are bool.
#[custom_op(name = "std.not")]
pub mod not {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape) -> Result<Shape, OpError> {
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType) -> Result<DType, OpError> {
        expect_bool("x", x)?;
        Ok(DType::Bool)
    }

    #[reference]
    fn reference(x: &Tensor) -> Result<Tensor, OpError> {
        let values = x.to_vec::<bool>()?.into_iter().map(|v| !v).collect();
        bools(x.shape(), values)
    }
}

/// The float dtype of input `x` of a classification, which `y` does not keep (it is bool).
fn float_input(x: DType) -> Result<DType, OpError> {
    match x.is_float() {
        true => Ok(DType::Bool),
        false => Err(OpError::input(
            "x",
            format!("expected f32, f16, bf16 or f64, got {x}"),
        )),
    }
}

/// y = isnan(x), element-wise, as ONNX IsNaN: `x` is f32, f16, bf16 or f64, `y` bool.
#[custom_op(name = "std.is_nan")]
pub mod is_nan {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape) -> Result<Shape, OpError> {
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType) -> Result<DType, OpError> {
        float_input(x)
    }

    #[reference]
    fn reference(x: &Tensor) -> Result<Tensor, OpError> {
        let values = x.to_f64_vec().into_iter().map(f64::is_nan).collect();
        bools(x.shape(), values)
    }
}

/// y = isinf(x), element-wise, as ONNX IsInf: true for +inf when `detect_positive`, for
/// -inf when `detect_negative`, false for every finite value and NaN. `x` is f32, f16, bf16
/// or f64, `y` bool.
#[custom_op(
    name = "std.is_inf",
    params(detect_positive: bool = true, detect_negative: bool = true)
)]
pub mod is_inf {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, _p: &Params) -> Result<Shape, OpError> {
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _p: &Params) -> Result<DType, OpError> {
        float_input(x)
    }

    #[reference]
    fn reference(x: &Tensor, p: &Params) -> Result<Tensor, OpError> {
        let values = x
            .to_f64_vec()
            .into_iter()
            .map(|v| {
                (p.detect_positive && v == f64::INFINITY)
                    || (p.detect_negative && v == f64::NEG_INFINITY)
            })
            .collect();
        bools(x.shape(), values)
    }
}
