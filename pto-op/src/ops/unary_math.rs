//! Element-wise math that exported transformers use: negation, square root, tanh, powers,
//! exp, erf and reciprocal (with kernels); cosine, sine, absolute value, natural log, sign,
//! floor, ceiling and rounding (CPU references only: on a kernel target they run on the
//! CPU, a fallback the compile report lists).

use super::checks::{expect_dtype_of, expect_float, kernel_unsupported};
use super::elementwise::{
    activation_kernel, activation_reference, broadcast_shapes, cast_to, load_broadcast,
};
use crate::kernel::rows::elementwise_tiles;
use crate::prelude::*;

float_unary_op! {
    /// y = -x, element-wise. Float dtypes, which `y` keeps.
    "std.neg",
    neg,
    reference: |v| -v,
    kernel: Tile::neg,
    live_tiles: 2,
}

float_unary_op! {
    /// y = sqrt(x), element-wise (NaN for negative x). Float dtypes, which `y` keeps; computed
    /// in f32.
    "std.sqrt",
    sqrt,
    reference: f32::sqrt,
    kernel: Tile::sqrt,
    live_tiles: 2,
}

float_unary_op! {
    /// y = tanh(x), element-wise. Float dtypes, which `y` keeps; computed in f32.
    "std.tanh",
    tanh,
    reference: f32::tanh,
    kernel: Tile::tanh,
    live_tiles: 2,
}

/// y = a ^ b, numpy broadcasting, as ONNX Pow; `y` has the dtype of the base `a`.
///
/// - A float base (f32, f16, bf16): `b` has its dtype (convert an integer exponent with
///   `std.cast`, as import does); computed in f32 (`powf`: a negative base with a non-integer
///   exponent gives NaN).
/// - An integer base (i32, i64), any integer or float exponent:
///   - an integer exponent `e >= 0` gives the exact power, wrapping in `a`'s dtype as the
///     products of ONNX's reference (numpy) do;
///   - an integer exponent `e < 0` gives the real power truncated toward zero: 1 for a base
///     of 1, ±1 for -1, 0 for any other base (0 too, which has no finite power);
///   - a float exponent gives the real power computed in f64, then converted like
///     [`Tensor::cast`] (truncated toward zero, saturated, NaN gives 0), as ONNX's
///     `power(a, b).astype(a.dtype)`.
///
/// The kernel takes float bases; on the tile simulator an integer base runs on the CPU
/// reference (a fallback its compile report lists).
#[custom_op(name = "std.pow")]
pub mod pow {
    use super::*;

    /// Row tiles (f32) the kernel keeps live in UB at once, on the simulator and in its
    /// Ascend C lowering: what its column chunks are sized for
    /// ([`crate::kernel::rows::elementwise_tiles`]).
    pub const LIVE_TILES: usize = 5;

    #[infer_shape]
    fn infer_shape(a: &Shape, b: &Shape) -> Result<Shape, OpError> {
        broadcast_shapes(a, b)
    }

    #[infer_dtype]
    fn infer_dtype(a: DType, b: DType) -> Result<DType, OpError> {
        if matches!(a, DType::I32 | DType::I64) {
            if !(b.is_integer() || b.is_float()) {
                return Err(OpError::input(
                    "b",
                    format!("expected an integer or float exponent, got {b}"),
                ));
            }
            return Ok(a);
        }
        if !a.is_float() {
            return Err(OpError::input(
                "a",
                format!("expected f32, f16, bf16, i32 or i64, got {a}"),
            ));
        }
        expect_dtype_of("b", b, "a", a)?;
        Ok(a)
    }

    #[reference]
    fn reference(a: &Tensor, b: &Tensor) -> Result<Tensor, OpError> {
        let shape = broadcast_shapes(&a.shape(), &b.shape())?;
        if a.dtype().is_integer() {
            return integer_power(a, b, &shape);
        }
        let dims = ndarray::IxDyn(shape.dims());
        let not_broadcast = || OpError::input("b", format!("does not broadcast to {shape}"));
        let (a32, b32) = (a.to_f32_array(), b.to_f32_array());
        let a32 = a32.broadcast(dims.clone()).ok_or_else(not_broadcast)?;
        let b32 = b32.broadcast(dims).ok_or_else(not_broadcast)?;
        let mut y = a32.to_owned();
        y.zip_mut_with(&b32, |x, &e| *x = x.powf(e));
        Ok(Tensor::from_f32_array(y, a.dtype()))
    }

    #[kernel]
    fn kernel(k: &mut Kernel, a: &Global, b: &Global, y: &Global) -> Result<(), OpError> {
        if !a.dtype().is_float() {
            return Err(kernel_unsupported(
                NAME,
                "input `a`",
                format!("the kernel takes float bases, got {}", a.dtype()),
            ));
        }
        let tiles = elementwise_tiles(k, y, LIVE_TILES)?;
        let at = cast_to(load_broadcast(k, a, &tiles)?, DType::F32);
        let bt = cast_to(load_broadcast(k, b, &tiles)?, DType::F32);
        k.store(y, tiles.offsets, &cast_to(at.pow(&bt), y.dtype()))
    }
}

/// `base ^ exponent` for an integer exponent, as [`pow`] defines it: exact and wrapping in
/// i64 (whose low bits are the power wrapping in any narrower integer) for `exponent >= 0`,
/// the real power truncated toward zero otherwise.
fn integer_power_of(base: i64, exponent: i128) -> i64 {
    if exponent < 0 {
        return match base {
            1 => 1,
            -1 if exponent % 2 == 0 => 1,
            -1 => -1,
            _ => 0,
        };
    }
    let (mut result, mut square, mut e) = (1i64, base, exponent.unsigned_abs());
    while e > 0 {
        if e & 1 == 1 {
            result = result.wrapping_mul(square);
        }
        square = square.wrapping_mul(square);
        e >>= 1;
    }
    result
}

/// [`pow`]'s reference for an integer base `a`, broadcast to `shape`.
fn integer_power(a: &Tensor, b: &Tensor, shape: &Shape) -> Result<Tensor, OpError> {
    let dims = ndarray::IxDyn(shape.dims());
    let not_broadcast = |input: &str, t: &Tensor| {
        OpError::input(
            input,
            format!("shape {} does not broadcast to {shape}", t.shape()),
        )
    };
    let wide = a.cast(DType::I64);
    let base = wide.view::<i64>()?;
    let base = base
        .broadcast(dims.clone())
        .ok_or_else(|| not_broadcast("a", a))?;
    if b.dtype().is_float() {
        let exponent = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(b.dims()), b.to_f64_vec())
            .map_err(|e| OpError::invalid(format!("exponent of shape {}: {e}", b.shape())))?;
        let exponent = exponent
            .broadcast(dims)
            .ok_or_else(|| not_broadcast("b", b))?;
        let mut y = base.mapv(|v| v as f64);
        y.zip_mut_with(&exponent, |x, &e| *x = x.powf(e));
        return Ok(Tensor::from_array(y).cast(a.dtype()));
    }
    // Every integer exponent as i128: u64 ones beyond i64::MAX stay exact.
    let exponents: Vec<i128> = match b.dtype() {
        DType::U64 => b.to_vec::<u64>()?.into_iter().map(i128::from).collect(),
        _ => b
            .cast(DType::I64)
            .to_vec::<i64>()?
            .into_iter()
            .map(i128::from)
            .collect(),
    };
    let exponent = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(b.dims()), exponents)
        .map_err(|e| OpError::invalid(format!("exponent of shape {}: {e}", b.shape())))?;
    let exponent = exponent
        .broadcast(dims)
        .ok_or_else(|| not_broadcast("b", b))?;
    let mut y = base.to_owned();
    y.zip_mut_with(&exponent, |x, &e| *x = integer_power_of(*x, e));
    Ok(Tensor::from_array(y).cast(a.dtype()))
}

float_unary_op! {
    /// y = exp(x), element-wise. Float dtypes, which `y` keeps; computed in f32.
    "std.exp",
    exp,
    reference: f32::exp,
    kernel: Tile::exp,
    live_tiles: 2,
}

float_unary_op! {
    /// y = erf(x), element-wise (the error function). Float dtypes, which `y` keeps; computed
    /// in f64 and rounded.
    "std.erf",
    erf,
    reference: |v| super::super::math::erf(f64::from(v)) as f32,
    kernel: Tile::erf,
    live_tiles: 3,
}

float_unary_op! {
    /// y = 1 / x, element-wise (infinite for 0). Float dtypes, which `y` keeps; computed in f32.
    "std.reciprocal",
    reciprocal,
    reference: |v| 1.0 / v,
    kernel: Tile::recip,
    live_tiles: 2,
}

float_unary_reference_op! {
    /// y = cos(x), element-wise, x in radians, as ONNX Cos. Float dtypes, which `y` keeps;
    /// computed in f64 and rounded.
    "std.cos",
    cos,
    reference: f64::cos,
}

float_unary_reference_op! {
    /// y = sin(x), element-wise, x in radians, as ONNX Sin. Float dtypes, which `y` keeps;
    /// computed in f64 and rounded.
    "std.sin",
    sin,
    reference: f64::sin,
}

float_unary_reference_op! {
    /// y = |x|, element-wise, as ONNX Abs. Float dtypes, which `y` keeps; exact.
    "std.abs",
    abs,
    reference: f64::abs,
}

float_unary_reference_op! {
    /// y = ln(x), element-wise (the natural log: -inf for 0, NaN for negative x), as ONNX Log.
    /// Float dtypes, which `y` keeps; computed in f64 and rounded.
    "std.log",
    log,
    reference: f64::ln,
}

float_unary_reference_op! {
    /// y = sign(x), element-wise, as ONNX Sign: 1 for positive x, -1 for negative, 0 for
    /// zero, NaN for NaN. Float dtypes, which `y` keeps; exact.
    "std.sign",
    sign,
    reference: |v: f64| match v {
        v if v > 0.0 => 1.0,
        v if v < 0.0 => -1.0,
        v => v,
    },
}

float_unary_reference_op! {
    /// y = floor(x), element-wise (the largest integer not above x), as ONNX Floor. Float
    /// dtypes, which `y` keeps; exact.
    "std.floor",
    floor,
    reference: f64::floor,
}

float_unary_reference_op! {
    /// y = ceil(x), element-wise (the smallest integer not below x), as ONNX Ceil. Float
    /// dtypes, which `y` keeps; exact.
    "std.ceil",
    ceil,
    reference: f64::ceil,
}

float_unary_reference_op! {
    /// y = round(x), element-wise, halves to the even integer (2.5 -> 2, -1.5 -> -2), as
    /// ONNX Round. Float dtypes, which `y` keeps; exact.
    "std.round",
    round,
    reference: f64::round_ties_even,
}

/// `f` on each element of float tensor `x`, in f64, rounded to `x`'s dtype.
fn f64_reference(x: &Tensor, f: fn(f64) -> f64) -> Result<Tensor, OpError> {
    let values: Vec<f64> = x.to_f64_vec().into_iter().map(f).collect();
    let y = Tensor::from_vec(x.shape(), values).map_err(|e| OpError::invalid(e.to_string()))?;
    Ok(y.cast(x.dtype()))
}

crate::register_sweep!(
    EXP_SWEEP,
    crate::sweep::SweepDef {
        op: exp::NAME,
        sizes: || crate::sweep::rows_cols(|r, c| vec![vec![r, c]]),
        location: crate::source_location!(),
    }
);
