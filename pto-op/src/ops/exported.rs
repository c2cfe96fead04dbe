//! More ops that exporters emit: exp, erf and reciprocal; element-wise max and min;
//! comparison and selection (equal, where); ReduceMax; expand and trilu.
//!
//! The data-movement ops (expand, where, trilu, max, min) move elements as their bytes, so
//! every dtype is exact.

use ndarray::{ArrayD, Axis};

use super::elementwise::{
    activation_kernel, activation_reference, broadcast_shapes, cast_to, from_i128, integer_range,
    integers_i128, load_broadcast,
};
use super::{expect_dtype_of, expect_float, kernel_unsupported, normalize_axis, param_error};
use crate::kernel::rows::elementwise_tiles;
use crate::prelude::*;

/// For each element of the output of shape `out` (row-major), the row-major index of the
/// element of a tensor of shape `src` that numpy broadcasting gives it.
fn source_indices(out: &[usize], src: &[usize]) -> Vec<usize> {
    let n: usize = out.iter().product();
    let offset = out.len() - src.len();
    let mut strides = vec![0usize; src.len()];
    let mut acc = 1;
    for axis in (0..src.len()).rev() {
        strides[axis] = if src[axis] == 1 { 0 } else { acc };
        acc *= src[axis];
    }
    let mut indices = Vec::with_capacity(n);
    let mut at = vec![0usize; out.len()];
    for _ in 0..n {
        indices.push(
            strides
                .iter()
                .enumerate()
                .map(|(axis, s)| at[offset + axis] * s)
                .sum(),
        );
        for axis in (0..out.len()).rev() {
            at[axis] += 1;
            if at[axis] < out[axis] {
                break;
            }
            at[axis] = 0;
        }
    }
    indices
}

/// A tensor of `shape` whose element `i` is element `pick(i)` of `sources[which]`, moved as
/// bytes; all sources share one dtype.
fn assemble(
    sources: &[&Tensor],
    shape: &Shape,
    mut pick: impl FnMut(usize) -> (usize, usize),
) -> Result<Tensor, OpError> {
    let dtype = sources[0].dtype();
    let size = dtype.size_bytes();
    let bytes: Vec<Vec<u8>> = sources.iter().map(|t| t.to_le_bytes()).collect();
    let mut out = Vec::with_capacity(shape.numel() * size);
    for i in 0..shape.numel() {
        let (which, at) = pick(i);
        out.extend_from_slice(&bytes[which][at * size..(at + 1) * size]);
    }
    Tensor::from_le_bytes(dtype, shape.clone(), &out).map_err(|e| OpError::invalid(e.to_string()))
}

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

    fn equal(&self, i: usize, other: &Keys, j: usize) -> bool {
        match (self, other) {
            (Keys::Int(a), Keys::Int(b)) => a[i] == b[j],
            (Keys::Float(a), Keys::Float(b)) => a[i] == b[j],
            _ => false,
        }
    }
}

/// The dtypes of max, min and equal: any but bool for max and min.
fn numeric(a: DType, b: DType) -> Result<DType, OpError> {
    if !(a.is_float() || a.is_integer()) {
        return Err(OpError::input(
            "a",
            format!("expected a float or an integer dtype, got {a}"),
        ));
    }
    expect_dtype_of("b", b, "a", a)?;
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

/// y = (a == b), element-wise with numpy broadcasting, as ONNX Equal: `a` and `b` share one
/// dtype (any); `y` is bool. Exact (integers compared as integers).
#[custom_op(name = "std.equal")]
pub mod equal {
    use super::*;

    #[infer_shape]
    fn infer_shape(a: &Shape, b: &Shape) -> Result<Shape, OpError> {
        broadcast_shapes(a, b)
    }

    #[infer_dtype]
    fn infer_dtype(a: DType, b: DType) -> Result<DType, OpError> {
        expect_dtype_of("b", b, "a", a)?;
        Ok(DType::Bool)
    }

    #[reference]
    fn reference(a: &Tensor, b: &Tensor) -> Result<Tensor, OpError> {
        let shape = broadcast_shapes(&a.shape(), &b.shape())?;
        let (ia, ib) = (
            source_indices(shape.dims(), a.dims()),
            source_indices(shape.dims(), b.dims()),
        );
        let (ka, kb) = (Keys::of(a)?, Keys::of(b)?);
        let values: Vec<bool> = (0..shape.numel())
            .map(|i| ka.equal(ia[i], &kb, ib[i]))
            .collect();
        Tensor::from_vec(shape, values).map_err(|e| OpError::invalid(e.to_string()))
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

/// y = the max of `x` over `axes` (negative count from the end; empty = every axis), as
/// ONNX ReduceMax. With `keepdims` the reduced axes stay with size 1, else they are
/// dropped. Any float, integer or bool dtype, which `y` keeps; exact. The max over no
/// elements is the dtype's lowest value (-inf for floats).
#[custom_op(name = "std.reduce_max", params(axes: Vec<i64> = [], keepdims: bool = true))]
pub mod reduce_max {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, p: &Params) -> Result<Shape, OpError> {
        let rank = x.rank();
        let mut dims = x.dims().to_vec();
        let axes = axes_of(&p.axes, rank)?;
        for &axis in &axes {
            dims[axis] = 1;
        }
        if !p.keepdims {
            dims = dims
                .into_iter()
                .enumerate()
                .filter(|(i, _)| !axes.contains(i))
                .map(|(_, d)| d)
                .collect();
        }
        Ok(Shape::from(dims))
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _p: &Params) -> Result<DType, OpError> {
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor, p: &Params) -> Result<Tensor, OpError> {
        let axes = axes_of(&p.axes, x.dims().len())?;
        let fold = |array: ArrayD<f64>, low: f64| -> ArrayD<f64> {
            let mut array = array;
            for &axis in &axes {
                array = array
                    .fold_axis(Axis(axis), low, |acc, &v| {
                        if acc.is_nan() || v.is_nan() {
                            f64::NAN
                        } else {
                            acc.max(v)
                        }
                    })
                    .insert_axis(Axis(axis));
            }
            array
        };
        let dtype = x.dtype();
        let shape = infer_shape(&x.shape(), p)?;
        if dtype.is_integer() {
            let mut array = integers_i128(x)?;
            for &axis in &axes {
                array = array
                    .fold_axis(Axis(axis), i128::MIN, |acc, &v| (*acc).max(v))
                    .insert_axis(Axis(axis));
            }
            let (low, _) = integer_range(dtype);
            let values = array.mapv(|v| v.max(low));
            let values = ArrayD::from_shape_vec(
                ndarray::IxDyn(shape.dims()),
                values.iter().copied().collect(),
            )
            .map_err(|e| OpError::invalid(e.to_string()))?;
            return Ok(from_i128(values, dtype));
        }
        let array = ArrayD::from_shape_vec(ndarray::IxDyn(x.dims()), x.to_f64_vec())
            .map_err(|e| OpError::invalid(e.to_string()))?;
        let low = match dtype {
            DType::Bool => 0.0,
            _ => f64::NEG_INFINITY,
        };
        let values: Vec<f64> = fold(array, low).iter().copied().collect();
        Ok(Tensor::from_vec(shape, values)
            .map_err(|e| OpError::invalid(e.to_string()))?
            .cast(dtype))
    }

    fn axes_of(axes: &[i64], rank: usize) -> Result<Vec<usize>, OpError> {
        let mut out: Vec<usize> = match axes.is_empty() {
            true => (0..rank).collect(),
            false => axes
                .iter()
                .map(|&a| normalize_axis(NAME, "axes", a, rank))
                .collect::<Result<_, _>>()?,
        };
        out.sort_unstable();
        if out.windows(2).any(|w| w[0] == w[1]) {
            return Err(param_error(
                NAME,
                "axes",
                format!("repeated axes in {axes:?}"),
            ));
        }
        Ok(out)
    }
}

/// y = `x` broadcast with `shape`, as ONNX Expand: the numpy broadcast of `x`'s shape and
/// `shape` (so a 1 in `shape` keeps `x`'s dim). Any dtype, which `y` keeps.
#[custom_op(name = "std.expand", params(shape: Vec<i64>))]
pub mod expand {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, p: &Params) -> Result<Shape, OpError> {
        let dims = p
            .shape
            .iter()
            .map(|&d| usize::try_from(d))
            .collect::<Result<Vec<usize>, _>>()
            .map_err(|_| param_error(NAME, "shape", format!("negative dims in {:?}", p.shape)))?;
        x.broadcast(&Shape::from(dims)).map_err(|_| {
            param_error(
                NAME,
                "shape",
                format!("{:?} does not broadcast with x of shape {x}", p.shape),
            )
        })
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _p: &Params) -> Result<DType, OpError> {
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor, p: &Params) -> Result<Tensor, OpError> {
        let shape = infer_shape(&x.shape(), p)?;
        let ix = source_indices(shape.dims(), x.dims());
        assemble(&[x], &shape, |i| (0, ix[i]))
    }
}

/// y = the upper (`upper`) or lower triangle of the last two axes of `x`, from diagonal `k`
/// (positive above the main diagonal), the rest 0, as ONNX Trilu. Rank >= 2; any dtype,
/// which `y` keeps.
#[custom_op(name = "std.trilu", params(upper: bool = true, k: i64 = 0))]
pub mod trilu {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, _p: &Params) -> Result<Shape, OpError> {
        x.expect_min_rank("x", 2)?;
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _p: &Params) -> Result<DType, OpError> {
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor, p: &Params) -> Result<Tensor, OpError> {
        let dims = x.dims();
        let (rows, cols) = (dims[dims.len() - 2], dims[dims.len() - 1]);
        let zero = Tensor::zeros([1], x.dtype());
        assemble(&[x, &zero], &x.shape(), |i| {
            let (row, col) = ((i / cols.max(1)) % rows.max(1), i % cols.max(1));
            let diagonal = col as i64 - row as i64;
            let keep = match p.upper {
                true => diagonal >= p.k,
                false => diagonal <= p.k,
            };
            match keep {
                true => (0, i),
                false => (1, 0),
            }
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

crate::register_sweep!(
    EXP_SWEEP,
    crate::sweep::SweepDef {
        op: exp::NAME,
        sizes: || crate::sweep::rows_cols(|r, c| vec![vec![r, c]]),
        location: crate::source_location!(),
    }
);
