//! Ops that move elements without computing on them (transpose, reshape, concat, slice,
//! gather, expand, trilu), and dtype conversion. All of them take every dtype.

use ndarray::{ArrayD, Axis};

use super::assemble::{assemble, source_indices};
use super::axes::normalize_axis;
use super::axes::{SliceAxis, permutation, slice_ranges};
use super::checks::param_error;
use crate::prelude::*;
use crate::tensor::{Element, dispatch};

fn transpose_array<T: Element>(a: &ArrayD<T>, perm: &[usize]) -> Tensor {
    Tensor::from_array(a.clone().permuted_axes(perm.to_vec()))
}

/// y = x with its axes permuted: `y.shape[i] = x.shape[perm[i]]`, as ONNX Transpose.
/// `perm` is a permutation of `0..rank`; empty reverses the axes. Any dtype.
#[custom_op(name = "std.transpose", params(perm: Vec<i64>))]
pub mod transpose {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, p: &Params) -> Result<Shape, OpError> {
        let perm = permutation(NAME, &p.perm, x.rank())?;
        Ok(Shape::new(
            perm.iter().map(|&axis| x.dims()[axis]).collect::<Vec<_>>(),
        ))
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _p: &Params) -> Result<DType, OpError> {
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor, p: &Params) -> Result<Tensor, OpError> {
        let perm = permutation(NAME, &p.perm, x.dims().len())?;
        Ok(dispatch!(x.data(), a => transpose_array(a, &perm)))
    }
}

/// The output shape of ONNX Reshape of `x` to `shape`: a 0 in `shape` copies the dim of `x`
/// at its index, unless `allowzero` (then it is a dim of size 0).
fn reshaped(op: &str, x: &Shape, shape: &[i64], allowzero: bool) -> Result<Shape, OpError> {
    let bad = |problem: String| param_error(op, "shape", problem);
    let mut dims = Vec::with_capacity(shape.len());
    let mut inferred = None;
    for (i, &dim) in shape.iter().enumerate() {
        dims.push(match dim {
            -1 if inferred.is_some() => {
                return Err(bad(format!("{shape:?} has more than one -1")));
            }
            -1 => {
                inferred = Some(i);
                1
            }
            0 if allowzero => {
                if shape.contains(&-1) {
                    return Err(bad(format!(
                        "{shape:?} has both a 0 and a -1, which allowzero does not allow (no \
                         size for the -1 gives a shape of 0 elements a known count)"
                    )));
                }
                0
            }
            0 => *x.dims().get(i).ok_or_else(|| {
                bad(format!(
                    "{shape:?}: the 0 at index {i} copies a dim of x, but x of shape {x} has \
                     rank {}",
                    x.rank()
                ))
            })?,
            d if d < 0 => {
                return Err(bad(format!(
                    "{shape:?}: dims are >= 0, or -1 (inferred) once, got {d}"
                )));
            }
            d => d as usize,
        });
    }
    let known = Shape::new(dims.clone()).checked_numel().map_err(|_| {
        bad(format!(
            "{shape:?}: the dims' product does not fit in a usize"
        ))
    })?;
    if let Some(i) = inferred {
        if known == 0 || !x.numel().is_multiple_of(known) {
            return Err(bad(format!(
                "{shape:?}: no size for the -1 at index {i} gives the {} elements of x of \
                 shape {x}",
                x.numel()
            )));
        }
        dims[i] = x.numel() / known;
    }
    let out = Shape::new(dims);
    if out.checked_numel().ok() != Some(x.numel()) {
        return Err(bad(format!(
            "{shape:?} means shape {out} of {} elements, but x of shape {x} has {}",
            out.numel(),
            x.numel()
        )));
    }
    Ok(out)
}

/// y = x with another shape and the same elements in row-major order, as ONNX Reshape:
/// one dim of `shape` may be -1 (inferred from the element count), and a 0 copies the dim
/// of `x` at that index, unless `allowzero` (ONNX's `allowzero = 1`): then a 0 is a dim of
/// size 0, and `shape` may not hold both a 0 and a -1. The element count must not change.
/// Any dtype.
#[custom_op(name = "std.reshape", params(shape: Vec<i64>, allowzero: bool = false))]
pub mod reshape {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, p: &Params) -> Result<Shape, OpError> {
        reshaped(NAME, x, &p.shape, p.allowzero)
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _p: &Params) -> Result<DType, OpError> {
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor, p: &Params) -> Result<Tensor, OpError> {
        Ok(x.reshape(reshaped(NAME, &x.shape(), &p.shape, p.allowzero)?)?)
    }
}

fn concat_arrays<T: Element>(a: &ArrayD<T>, b: &Tensor, axis: usize) -> Result<Tensor, OpError> {
    let b = b.view::<T>()?;
    let y = ndarray::concatenate(Axis(axis), &[a.view(), b])
        .map_err(|e| OpError::input("b", format!("cannot be concatenated to a: {e}")))?;
    Ok(Tensor::from_array(y))
}

/// y = a and b joined along `axis` (negative counts from the end), as ONNX Concat of two
/// inputs; chain concats for more. `a` and `b` have one rank and dtype, and equal dims
/// except along `axis`. Any dtype.
#[custom_op(name = "std.concat", params(axis: i64))]
pub mod concat {
    use super::*;

    #[infer_shape]
    fn infer_shape(a: &Shape, b: &Shape, p: &Params) -> Result<Shape, OpError> {
        a.expect_min_rank("a", 1)?;
        b.expect_rank("b", a.rank())?;
        let axis = normalize_axis(NAME, "axis", p.axis, a.rank())?;
        let agree = a
            .dims()
            .iter()
            .zip(b.dims())
            .enumerate()
            .all(|(i, (x, y))| i == axis || x == y);
        if !agree {
            return Err(OpError::input(
                "b",
                format!(
                    "shape {b} must equal a's {a} except along axis {axis}, where they are joined"
                ),
            ));
        }
        a.with_dim(axis as isize, a.dims()[axis] + b.dims()[axis])
    }

    #[infer_dtype]
    fn infer_dtype(a: DType, b: DType, _p: &Params) -> Result<DType, OpError> {
        super::super::checks::expect_dtype_of("b", b, "a", a)?;
        Ok(a)
    }

    #[reference]
    fn reference(a: &Tensor, b: &Tensor, p: &Params) -> Result<Tensor, OpError> {
        let axis = normalize_axis(NAME, "axis", p.axis, a.dims().len())?;
        dispatch!(a.data(), x => concat_arrays(x, b, axis))
    }
}

fn slice_array<T: Element>(a: &ArrayD<T>, ranges: &[SliceAxis]) -> Tensor {
    let mut view = a.view();
    for r in ranges {
        view.slice_axis_inplace(Axis(r.axis()), r.ndarray());
    }
    Tensor::from_array(view.to_owned())
}

/// y = `x[starts:ends:steps]` along `axes`, as ONNX Slice: negative starts and ends count
/// from the end; then, for a positive step, both are clamped to `[0, dim]` (so `i64::MAX`
/// means "to the end"), and for a negative step `starts` to `[0, dim - 1]` and `ends` to
/// `[-1, dim - 1]` (elements `start, start + step, ...` above `end`: `i64::MIN` means "to
/// the first element"). Empty `axes` means `0..len(starts)`, empty `steps` steps of 1.
/// `starts`, `ends` (and `axes`, `steps`, when given) have one value per sliced axis; an
/// axis is sliced once; steps are non-zero. Any dtype.
#[custom_op(
    name = "std.slice",
    params(starts: Vec<i64>, ends: Vec<i64>, axes: Vec<i64> = [], steps: Vec<i64> = [])
)]
pub mod slice {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, p: &Params) -> Result<Shape, OpError> {
        let mut dims = x.dims().to_vec();
        for r in slice_ranges(NAME, x, &p.starts, &p.ends, &p.axes, &p.steps)? {
            dims[r.axis()] = r.len();
        }
        Ok(Shape::new(dims))
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _p: &Params) -> Result<DType, OpError> {
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor, p: &Params) -> Result<Tensor, OpError> {
        let ranges = slice_ranges(NAME, &x.shape(), &p.starts, &p.ends, &p.axes, &p.steps)?;
        Ok(dispatch!(x.data(), a => slice_array(a, &ranges)))
    }
}

/// `data` gathered along `axis` at `indices` (already in range), in the output's shape.
fn gather_array<T: Element>(
    data: &ArrayD<T>,
    axis: usize,
    indices: &[usize],
    out: &Shape,
) -> Result<Tensor, OpError> {
    let picked = data.select(Axis(axis), indices);
    Ok(Tensor::from_array(picked).reshape(out.clone())?)
}

/// y = data indexed along `axis` by every element of `indices`, as ONNX Gather:
/// `y.shape = data.shape[..axis] + indices.shape + data.shape[axis + 1..]`. An embedding
/// lookup is `data [vocab, d]`, `indices` of any shape, `axis = 0`, giving `[.., d]`.
///
/// `data` has any dtype, which `y` keeps; `indices` are i32 or i64, negative ones counting
/// from the end of the axis. An index out of `-size..size` is an error naming it.
#[custom_op(name = "std.gather", params(axis: i64 = 0))]
pub mod gather {
    use super::*;

    #[infer_shape]
    fn infer_shape(data: &Shape, indices: &Shape, p: &Params) -> Result<Shape, OpError> {
        data.expect_min_rank("data", 1)?;
        let axis = normalize_axis(NAME, "axis", p.axis, data.rank())?;
        let mut dims = data.dims()[..axis].to_vec();
        dims.extend(indices.dims());
        dims.extend(&data.dims()[axis + 1..]);
        Ok(Shape::new(dims))
    }

    #[infer_dtype]
    fn infer_dtype(data: DType, indices: DType, _p: &Params) -> Result<DType, OpError> {
        if !matches!(indices, DType::I32 | DType::I64) {
            return Err(OpError::input(
                "indices",
                format!("expected i32 or i64, got {indices}"),
            ));
        }
        Ok(data)
    }

    #[reference]
    fn reference(data: &Tensor, indices: &Tensor, p: &Params) -> Result<Tensor, OpError> {
        let axis = normalize_axis(NAME, "axis", p.axis, data.dims().len())?;
        let size = data.dims()[axis];
        let positions = indices
            .cast(DType::I64)
            .to_vec::<i64>()?
            .into_iter()
            .enumerate()
            .map(|(flat, index)| {
                let position = if index < 0 {
                    index + size as i64
                } else {
                    index
                };
                usize::try_from(position)
                    .ok()
                    .filter(|&position| position < size)
                    .ok_or_else(|| {
                        OpError::input(
                            "indices",
                            format!(
                                "index {index} (element {flat}) is out of range for axis \
                                 {axis} of data of shape {}: expected {} ..= {}",
                                data.shape(),
                                -(size as i64),
                                size as i64 - 1
                            ),
                        )
                    })
            })
            .collect::<Result<Vec<usize>, OpError>>()?;
        let mut out = data.dims()[..axis].to_vec();
        out.extend(indices.dims());
        out.extend(&data.dims()[axis + 1..]);
        dispatch!(data.data(), a => gather_array(a, axis, &positions, &Shape::new(out)))
    }
}

/// The dtype a `to` param names.
fn target_dtype(op: &str, to: &str) -> Result<DType, OpError> {
    to.parse::<DType>()
        .map_err(|e| param_error(op, "to", e.to_string()))
}

/// y = x converted to the dtype named by `to` (any dtype name: `f32`, `i8`, `f8e4m3fn`,
/// `i4`, ...), element by element like ONNX `Cast` (opset 25) and [`Tensor::cast_with`]:
/// floats round to nearest-even, floats to integers truncate toward zero and saturate
/// (NaN gives 0), integers to narrower integers (the 4- and 2-bit ones too) keep the low
/// bits, anything to bool is `!= 0`. `saturate` (default true) says what overflow and
/// infinity become in the 8-bit floats (± the max finite value, else infinity or NaN);
/// `round_mode` (`up`, the default, `down` or `nearest`) how values round to f8e8m0. See
/// [`crate::lowp`]. Any dtype.
#[custom_op(
    name = "std.cast",
    params(to: String, saturate: bool = true, round_mode: String = "up")
)]
pub mod cast {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, p: &Params) -> Result<Shape, OpError> {
        target_dtype(NAME, &p.to)?;
        round_mode(&p.round_mode)?;
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(_x: DType, p: &Params) -> Result<DType, OpError> {
        target_dtype(NAME, &p.to)
    }

    #[reference]
    fn reference(x: &Tensor, p: &Params) -> Result<Tensor, OpError> {
        Ok(x.cast_with(
            target_dtype(NAME, &p.to)?,
            p.saturate,
            round_mode(&p.round_mode)?,
        ))
    }

    /// The rounding mode `round_mode` names.
    fn round_mode(name: &str) -> Result<crate::lowp::RoundMode, OpError> {
        crate::lowp::RoundMode::from_name(name).ok_or_else(|| {
            param_error(
                NAME,
                "round_mode",
                format!("expected `up`, `down` or `nearest`, got `{name}`"),
            )
        })
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
