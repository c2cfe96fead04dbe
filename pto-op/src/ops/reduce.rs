//! Reductions: softmax along an axis, sums, means and maxima over axes.

use ndarray::{ArrayD, Axis};

use super::axes::normalize_axis;
use super::checks::{expect_float, kernel_unsupported, param_error};
use super::elementwise::{from_i128, integer_range, integers_i128};
use crate::kernel::rows::{RowLive, row_tiles};
use crate::prelude::*;

/// y = exp(x - max(x)) / sum(exp(x - max(x))) along `axis` (negative counts from the end).
///
/// `x` has rank >= 1 and a float dtype, which `y` keeps; computed in f32. The kernel
/// handles the last axis only.
#[custom_op(name = "std.softmax", params(axis: i64 = -1))]
pub mod softmax {
    use super::*;

    /// What the kernel keeps in UB at its peak, on the simulator and in its Ascend C
    /// lowering: four tiles of the rows (the input queue,
    /// the exponentials, the quotients, the output queue). Its row tiles are sized for it
    /// ([`crate::kernel::rows::row_tiles`]).
    pub const LIVE: RowLive = RowLive {
        tiles: 4,
        params: 0,
    };

    #[infer_shape]
    fn infer_shape(x: &Shape, p: &Params) -> Result<Shape, OpError> {
        x.expect_min_rank("x", 1)?;
        normalize_axis(NAME, "axis", p.axis, x.rank())?;
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _p: &Params) -> Result<DType, OpError> {
        expect_float("x", x)
    }

    #[reference]
    fn reference(x: &Tensor, p: &Params) -> Result<Tensor, OpError> {
        // One pass per lane, in place: the same operations in the same order as
        // `e = exp(x - max); e / sum(e)` over whole arrays (`lane.sum()` is what
        // `sum_axis` runs per lane), without a temporary array per step.
        let mut y = x.to_f32_array();
        let axis = Axis(normalize_axis(NAME, "axis", p.axis, y.ndim())?);
        for mut lane in y.lanes_mut(axis) {
            let max = lane.fold(f32::NEG_INFINITY, |m, v| m.max(*v));
            lane.mapv_inplace(|v| (v - max).exp());
            let sum = lane.sum();
            lane.mapv_inplace(|v| v / sum);
        }
        Ok(Tensor::from_f32_array(y, x.dtype()))
    }

    #[kernel]
    fn kernel(k: &mut Kernel, x: &Global, y: &Global, p: &Params) -> Result<(), OpError> {
        let rank = x.shape().rank();
        if normalize_axis(NAME, "axis", p.axis, rank)? + 1 != rank {
            return Err(kernel_unsupported(
                NAME,
                "param `axis`",
                format!(
                    "the kernel takes the last axis (-1 or {}), got {}: transpose the axis to \
                     the end, or run on the cpu target",
                    rank - 1,
                    p.axis
                ),
            ));
        }
        let tiles = row_tiles(k, x, LIVE)?;
        let xt = k
            .load(x, tiles.offsets.clone(), &tiles.shape)?
            .cast(DType::F32);
        let e = (&xt - xt.max_axis(-1)).exp();
        k.store(y, tiles.offsets, &(&e / e.sum(-1)).cast(y.dtype()))
    }
}

/// The axes to reduce, normalized, sorted and distinct: `axes`, or every axis when empty.
fn reduced_axes(op: &str, axes: &[i64], rank: usize) -> Result<Vec<usize>, OpError> {
    if axes.is_empty() {
        return Ok((0..rank).collect());
    }
    let mut normalized = axes
        .iter()
        .map(|&axis| normalize_axis(op, "axes", axis, rank))
        .collect::<Result<Vec<usize>, OpError>>()?;
    normalized.sort_unstable();
    if normalized.windows(2).any(|pair| pair[0] == pair[1]) {
        return Err(param_error(
            op,
            "axes",
            format!("{axes:?} names an axis twice"),
        ));
    }
    Ok(normalized)
}

/// The shape after reducing `axes` of `x`: each kept with size 1, or dropped.
fn reduced_shape(op: &str, x: &Shape, axes: &[i64], keepdims: bool) -> Result<Shape, OpError> {
    let reduced = reduced_axes(op, axes, x.rank())?;
    let dims = x.dims().iter().enumerate().filter_map(|(axis, &dim)| {
        match (reduced.contains(&axis), keepdims) {
            (false, _) => Some(dim),
            (true, true) => Some(1),
            (true, false) => None,
        }
    });
    Ok(Shape::new(dims.collect::<Vec<_>>()))
}

/// Folds `array` over `axes` (sorted) with `add` from `zero`, keeping each with size 1,
/// then drops them unless `keepdims`.
fn sum_axes<T: Clone>(
    mut array: ArrayD<T>,
    axes: &[usize],
    keepdims: bool,
    zero: T,
    add: impl Fn(&T, &T) -> T,
) -> ArrayD<T> {
    for &axis in axes {
        array = array
            .fold_axis(Axis(axis), zero.clone(), |acc, v| add(acc, v))
            .insert_axis(Axis(axis));
    }
    if !keepdims {
        for &axis in axes.iter().rev() {
            array = array.remove_axis(Axis(axis));
        }
    }
    array
}

/// The element count of the reduced `axes` of `x`.
fn reduced_count(x: &Tensor, axes: &[usize]) -> usize {
    axes.iter().map(|&axis| x.dims()[axis]).product()
}

/// The dtypes `std.reduce_sum` takes: floats, i32, i64.
fn summable(x: DType) -> Result<DType, OpError> {
    if x.is_float() || matches!(x, DType::I32 | DType::I64) {
        Ok(x)
    } else {
        Err(OpError::input(
            "x",
            format!("expected f32, f16, bf16, i32 or i64, got {x}"),
        ))
    }
}

/// y = the sum of `x` over `axes` (negative count from the end; empty = every axis), as
/// ONNX ReduceSum. With `keepdims` the reduced axes stay with size 1, else they are
/// dropped.
///
/// Floats (summed in f32), i32 and i64 (summed exactly; a sum out of the dtype's range is
/// an error); `y` keeps the dtype.
#[custom_op(name = "std.reduce_sum", params(axes: Vec<i64> = [], keepdims: bool = true))]
pub mod reduce_sum {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, p: &Params) -> Result<Shape, OpError> {
        reduced_shape(NAME, x, &p.axes, p.keepdims)
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _p: &Params) -> Result<DType, OpError> {
        summable(x)
    }

    #[reference]
    fn reference(x: &Tensor, p: &Params) -> Result<Tensor, OpError> {
        let axes = reduced_axes(NAME, &p.axes, x.dims().len())?;
        if x.dtype().is_float() {
            let y = sum_axes(x.to_f32_array(), &axes, p.keepdims, 0.0, |a, b| a + b);
            return Ok(Tensor::from_f32_array(y, x.dtype()));
        }
        let fits = |v: i64| x.dtype() == DType::I64 || i32::try_from(v).is_ok();
        let sums = sum_axes(
            x.cast(DType::I64).into_array::<i64>()?.mapv(Some),
            &axes,
            p.keepdims,
            Some(0),
            |a, b| a.zip(*b).and_then(|(a, b)| a.checked_add(b)),
        );
        let y = sums.mapv(|v| v.filter(|&v| fits(v)));
        if y.iter().any(Option::is_none) {
            return Err(OpError::input(
                "x",
                format!("a sum overflows {}", x.dtype()),
            ));
        }
        Ok(Tensor::from_array(y.mapv(|v| v.unwrap_or_default())).cast(x.dtype()))
    }
}

/// y = the mean of `x` over `axes` (negative count from the end; empty = every axis), as
/// ONNX ReduceMean. With `keepdims` the reduced axes stay with size 1, else they are
/// dropped.
///
/// Float dtypes, which `y` keeps; computed in f32. The mean over no elements is NaN.
#[custom_op(name = "std.reduce_mean", params(axes: Vec<i64> = [], keepdims: bool = true))]
pub mod reduce_mean {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, p: &Params) -> Result<Shape, OpError> {
        reduced_shape(NAME, x, &p.axes, p.keepdims)
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _p: &Params) -> Result<DType, OpError> {
        expect_float("x", x)
    }

    #[reference]
    fn reference(x: &Tensor, p: &Params) -> Result<Tensor, OpError> {
        let axes = reduced_axes(NAME, &p.axes, x.dims().len())?;
        let count = reduced_count(x, &axes) as f32;
        let sums = sum_axes(x.to_f32_array(), &axes, p.keepdims, 0.0, |a, b| a + b);
        Ok(Tensor::from_f32_array(sums / count, x.dtype()))
    }
}

crate::register_sweep!(
    SOFTMAX_SWEEP,
    crate::sweep::SweepDef {
        op: softmax::NAME,
        sizes: || crate::sweep::rows_cols(|r, c| vec![vec![r, c]]),
        location: crate::source_location!(),
    }
);

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
