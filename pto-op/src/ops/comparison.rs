//! Comparison and selection: element-wise max and min, equal, less, less-or-equal, greater,
//! greater-or-equal, where.
//!
//! Max, min and where move elements as their bytes, so every dtype is exact; the
//! comparisons compare integers as integers and floats as f64 (exact for every float dtype),
//! NaN comparing false. The comparisons have no kernel: on a kernel target they run on the
//! CPU reference (a fallback the compile report lists).

use std::cmp::Ordering;

use super::assemble::{assemble, source_indices};
use super::checks::{expect_dtype_of, kernel_unsupported};
use super::elementwise::{broadcast_shapes, cast_to, integers_i128, load_broadcast};
use crate::kernel::rows::elementwise_tiles;
use crate::prelude::*;

/// Values that order the elements of a tensor exactly: integers as i128, floats and bool
/// as f64.
enum Keys {
    Int(Vec<i128>),
    Float(Vec<f64>),
}

impl Keys {
    fn of(t: &Tensor) -> Result<Keys, OpError> {
        Ok(match t.dtype().is_integer() {
            true => Keys::Int(integers_i128(t)?.iter().copied().collect()),
            false => Keys::Float(t.to_f64_vec()),
        })
    }

    /// Whether element `j` of `other` is greater than (`greater`) or less than element `i`
    /// of `self`, or is NaN: the element max (min) takes instead.
    fn other_wins(&self, i: usize, other: &Keys, j: usize, greater: bool) -> bool {
        match (self, other) {
            (Keys::Int(a), Keys::Int(b)) => match greater {
                true => b[j] > a[i],
                false => b[j] < a[i],
            },
            (Keys::Float(a), Keys::Float(b)) => {
                !a[i].is_nan()
                    && (b[j].is_nan()
                        || match greater {
                            true => b[j] > a[i],
                            false => b[j] < a[i],
                        })
            }
            _ => false,
        }
    }

    /// How element `i` of `self` orders against element `j` of `other`: `None` when either
    /// is NaN (every comparison of NaN is false).
    fn order(&self, i: usize, other: &Keys, j: usize) -> Option<Ordering> {
        match (self, other) {
            (Keys::Int(a), Keys::Int(b)) => Some(a[i].cmp(&b[j])),
            (Keys::Float(a), Keys::Float(b)) => a[i].partial_cmp(&b[j]),
            _ => None,
        }
    }
}

/// `holds(order of a[i] against b[j])` for every element of the numpy broadcast of `a` and
/// `b`, as a bool tensor.
fn compare(a: &Tensor, b: &Tensor, holds: fn(Ordering) -> bool) -> Result<Tensor, OpError> {
    let shape = broadcast_shapes(&a.shape(), &b.shape())?;
    let (ia, ib) = (
        source_indices(shape.dims(), a.dims()),
        source_indices(shape.dims(), b.dims()),
    );
    let (ka, kb) = (Keys::of(a)?, Keys::of(b)?);
    let values: Vec<bool> = (0..shape.numel())
        .map(|i| ka.order(ia[i], &kb, ib[i]).is_some_and(holds))
        .collect();
    Tensor::from_vec(shape, values).map_err(|e| OpError::invalid(e.to_string()))
}

/// The dtype of a comparison: bool, of inputs `a` and `b` of one float or integer dtype.
fn comparison_dtype(a: DType, b: DType) -> Result<DType, OpError> {
    numeric(a, b)?;
    Ok(DType::Bool)
}

broadcast_binary_op! {
    /// y = (a < b), element-wise with numpy broadcasting, as ONNX Less: `a` and `b` share one
    /// float or integer dtype; `y` is bool. Exact; false where either is NaN.
    "std.less",
    less,
    dtype: comparison_dtype,
    reference: |a, b| compare(a, b, Ordering::is_lt),
}

broadcast_binary_op! {
    /// y = (a <= b), element-wise with numpy broadcasting, as ONNX LessOrEqual: `a` and `b`
    /// share one float or integer dtype; `y` is bool. Exact; false where either is NaN.
    "std.less_equal",
    less_equal,
    dtype: comparison_dtype,
    reference: |a, b| compare(a, b, Ordering::is_le),
}

broadcast_binary_op! {
    /// y = (a > b), element-wise with numpy broadcasting, as ONNX Greater: `a` and `b` share
    /// one float or integer dtype; `y` is bool. Exact; false where either is NaN.
    "std.greater",
    greater,
    dtype: comparison_dtype,
    reference: |a, b| compare(a, b, Ordering::is_gt),
}

broadcast_binary_op! {
    /// y = (a >= b), element-wise with numpy broadcasting, as ONNX GreaterOrEqual: `a` and
    /// `b` share one float or integer dtype; `y` is bool. Exact; false where either is NaN.
    "std.greater_equal",
    greater_equal,
    dtype: comparison_dtype,
    reference: |a, b| compare(a, b, Ordering::is_ge),
}

/// The dtype of max, min and the ordered comparisons' inputs: one float or integer dtype.
fn numeric(a: DType, b: DType) -> Result<DType, OpError> {
    numeric_named("a", a, "b", b)
}

/// `first`'s dtype, a float or an integer one, which input `second` must share.
fn numeric_named(first: &str, a: DType, second: &str, b: DType) -> Result<DType, OpError> {
    if !(a.is_float() || a.is_integer()) {
        return Err(OpError::input(
            first,
            format!("expected a float or an integer dtype, got {a}"),
        ));
    }
    expect_dtype_of(second, b, first, a)?;
    Ok(a)
}

/// Element-wise max (`greater`) or min of `a` and `b`, broadcast.
fn extremum(a: &Tensor, b: &Tensor, greater: bool) -> Result<Tensor, OpError> {
    let shape = broadcast_shapes(&a.shape(), &b.shape())?;
    let (ia, ib) = (
        source_indices(shape.dims(), a.dims()),
        source_indices(shape.dims(), b.dims()),
    );
    let (ka, kb) = (Keys::of(a)?, Keys::of(b)?);
    assemble(&[a, b], &shape, |i| {
        match ka.other_wins(ia[i], &kb, ib[i], greater) {
            true => (1, ib[i]),
            false => (0, ia[i]),
        }
    })
}

/// The kernel of max and min: float dtypes, row tiles with both inputs broadcast.
fn extremum_kernel(
    k: &mut Kernel,
    name: &str,
    live_tiles: usize,
    a: &Global,
    b: &Global,
    y: &Global,
    greater: bool,
) -> Result<(), OpError> {
    if !matches!(y.dtype(), DType::F32 | DType::F16 | DType::BF16) {
        return Err(kernel_unsupported(
            name,
            "input `a`",
            format!("the kernel takes f32, f16 or bf16, got {}", y.dtype()),
        ));
    }
    let tiles = elementwise_tiles(k, y, live_tiles)?;
    let at = cast_to(load_broadcast(k, a, &tiles)?, DType::F32);
    let bt = cast_to(load_broadcast(k, b, &tiles)?, DType::F32);
    let result = match greater {
        true => at.max(&bt),
        false => at.min(&bt),
    };
    k.store(y, tiles.offsets, &cast_to(result, y.dtype()))
}

broadcast_binary_op! {
    /// y = max(a, b), element-wise with numpy broadcasting, as ONNX Max of two inputs (chain it
    /// for more): `a` and `b` share one float or integer dtype, which `y` keeps; exact; NaN
    /// wins. The kernel takes f32, f16 and bf16.
    "std.max",
    max,
    dtype: numeric,
    reference: |a, b| extremum(a, b, true),
    kernel: |k, a, b, y| extremum_kernel(k, NAME, LIVE_TILES, a, b, y, true),
    live_tiles: 4,
}

broadcast_binary_op! {
    /// y = min(a, b), element-wise with numpy broadcasting, as ONNX Min of two inputs (chain it
    /// for more): `a` and `b` share one float or integer dtype, which `y` keeps; exact; NaN
    /// wins. The kernel takes f32, f16 and bf16.
    "std.min",
    min,
    dtype: numeric,
    reference: |a, b| extremum(a, b, false),
    kernel: |k, a, b, y| extremum_kernel(k, NAME, LIVE_TILES, a, b, y, false),
    live_tiles: 4,
}

broadcast_binary_op! {
    /// y = (a == b), element-wise with numpy broadcasting, as ONNX Equal: `a` and `b` share
    /// one dtype (any); `y` is bool. Exact (integers compared as integers); false where
    /// either is NaN.
    "std.equal",
    equal,
    dtype: |a: DType, b: DType| {
        expect_dtype_of("b", b, "a", a)?;
        Ok(DType::Bool)
    },
    reference: |a, b| compare(a, b, Ordering::is_eq),
}

/// The shape rule of a bound of [`clip`]: one element, of rank 0 or 1.
fn scalar_bound(input: &str, shape: &Shape) -> Result<(), OpError> {
    match shape.dims() {
        [] | [1] => Ok(()),
        _ => Err(OpError::input(
            input,
            format!("expected a scalar (shape [] or [1]), got shape {shape}"),
        )),
    }
}

/// y = min(max(x, lo), hi), element-wise, as ONNX Clip (opset 11 on, whose `min` and `max`
/// are inputs): `lo` and `hi` are scalars (shape `[]` or `[1]`) of `x`'s dtype, any float
/// or integer, which `y` keeps. Exact (elements are moved, integers compared as integers);
/// NaN in `x` stays NaN; where `lo > hi` every element is `hi`, as ONNX says. Import gives
/// an omitted bound the dtype's lowest (highest) value, -inf (+inf) for floats. No kernel:
/// on a kernel target it runs on the CPU reference (a fallback the compile report lists).
#[custom_op(name = "std.clip")]
pub mod clip {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, lo: &Shape, hi: &Shape) -> Result<Shape, OpError> {
        scalar_bound("lo", lo)?;
        scalar_bound("hi", hi)?;
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, lo: DType, hi: DType) -> Result<DType, OpError> {
        numeric_named("x", x, "lo", lo)?;
        expect_dtype_of("hi", hi, "x", x)?;
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor, lo: &Tensor, hi: &Tensor) -> Result<Tensor, OpError> {
        let (kx, klo, khi) = (Keys::of(x)?, Keys::of(lo)?, Keys::of(hi)?);
        assemble(&[x, lo, hi], &x.shape(), |i| {
            // max(x, lo): lo where it is above x (never for a NaN x, which compares false).
            let raised = match klo.order(0, &kx, i) {
                Some(Ordering::Greater) => (1, &klo, 0),
                _ => (0, &kx, i),
            };
            match raised.1.order(raised.2, &khi, 0) {
                Some(Ordering::Greater) => (2, 0),
                _ => (raised.0, raised.2),
            }
        })
    }
}

/// y = cond ? x : y (module `select`), element-wise with numpy broadcasting of all three,
/// as ONNX Where:
/// `cond` is bool, `x` and `y` share one dtype (any), which the output keeps.
#[custom_op(name = "std.where")]
pub mod select {
    use super::*;

    #[infer_shape]
    fn infer_shape(cond: &Shape, x: &Shape, y: &Shape) -> Result<Shape, OpError> {
        broadcast_shapes(&broadcast_shapes(cond, x)?, y)
    }

    #[infer_dtype]
    fn infer_dtype(cond: DType, x: DType, y: DType) -> Result<DType, OpError> {
        if cond != DType::Bool {
            return Err(OpError::input("cond", format!("expected bool, got {cond}")));
        }
        expect_dtype_of("y", y, "x", x)?;
        Ok(x)
    }

    #[reference]
    fn reference(cond: &Tensor, x: &Tensor, y: &Tensor) -> Result<Tensor, OpError> {
        let shape = broadcast_shapes(&broadcast_shapes(&cond.shape(), &x.shape())?, &y.shape())?;
        let flags = cond.to_vec::<bool>()?;
        let [ic, ix, iy] = [cond, x, y].map(|t| source_indices(shape.dims(), t.dims()));
        assemble(&[x, y], &shape, |i| match flags[ic[i]] {
            true => (0, ix[i]),
            false => (1, iy[i]),
        })
    }
}

crate::register_sweep!(
    MAX_SWEEP,
    crate::sweep::SweepDef {
        op: max::NAME,
        sizes: || crate::sweep::rows_cols(|r, c| vec![vec![r, c], vec![r, c]]),
        location: crate::source_location!(),
    }
);
