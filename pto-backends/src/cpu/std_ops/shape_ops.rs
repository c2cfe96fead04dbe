//! The fast paths of the std ops that move elements: `std.transpose`, `std.reshape`,
//! `std.concat` and `std.slice`, exact.

use ndarray::{Axis, IxDyn};
use pto_op::cpu::{CpuKernel, PreparedCpuKernel};
use pto_op::ops::axes::{SliceAxis, normalize_axis, permutation, slice_ranges};
use pto_op::ops::{concat, reshape, slice, transpose};
use pto_op::{Attributes, DType, OpError, OpParams, Tensor, TensorType};

/// How a fast path of a shape op moves f32 elements into its output buffer.
#[derive(Debug)]
enum Move {
    /// `y = x` with axes permuted.
    Transpose(Vec<usize>),
    /// `y = x` in another shape: the same elements in the same order.
    Reshape,
    /// `y = [a, b]` along an axis.
    Concat(usize),
    /// `y = x[ranges]`.
    Slice(Vec<SliceAxis>),
}

/// The fast path of the f32 shape ops: the elements copied (with ndarray's strided
/// assignment) into the output buffer, which the reference allocates instead. Exact.
#[derive(Debug)]
struct MoveCpu(Move);

impl CpuKernel for MoveCpu {
    fn run(&self, inputs: &[&Tensor], outputs: &mut [Tensor]) -> Result<(), OpError> {
        let [y] = outputs else {
            return Err(OpError::invalid(
                "a shape op fast path run without one output",
            ));
        };
        let mut y = y.view_mut::<f32>()?;
        match (&self.0, inputs) {
            (Move::Transpose(perm), [x]) if perm == &[1, 0] && y.is_standard_layout() => {
                if let ([rows, cols], Some(y)) = (x.dims(), y.as_slice_mut()) {
                    transpose_2d(x.as_slice::<f32>()?, *rows, *cols, y);
                }
            }
            (Move::Transpose(perm), [x]) => {
                y.assign(&x.view::<f32>()?.permuted_axes(IxDyn(perm)));
            }
            (Move::Reshape, [x]) => match y.as_slice_mut() {
                Some(y) => y.copy_from_slice(x.as_slice::<f32>()?),
                None => return Err(OpError::invalid("reshape into a non-contiguous buffer")),
            },
            (Move::Concat(axis), [a, b]) => {
                let split = a.dims()[*axis];
                let (mut first, mut second) = y.view_mut().split_at(Axis(*axis), split);
                first.assign(&a.view::<f32>()?);
                second.assign(&b.view::<f32>()?);
            }
            (Move::Slice(ranges), [x]) => {
                let mut view = x.view::<f32>()?;
                for r in ranges {
                    view.slice_axis_inplace(Axis(r.axis()), r.ndarray());
                }
                y.assign(&view);
            }
            _ => {
                return Err(OpError::invalid(
                    "a shape op fast path run with other inputs",
                ));
            }
        }
        Ok(())
    }
}

/// `y = x^T` for a row-major `rows` x `cols` matrix `x`, in 16 x 16 blocks (both sides
/// stay in cache).
fn transpose_2d(x: &[f32], rows: usize, cols: usize, y: &mut [f32]) {
    const BLOCK: usize = 16;
    for r0 in (0..rows).step_by(BLOCK) {
        for c0 in (0..cols).step_by(BLOCK) {
            for r in r0..(r0 + BLOCK).min(rows) {
                for c in c0..(c0 + BLOCK).min(cols) {
                    y[c * rows + r] = x[r * cols + c];
                }
            }
        }
    }
}

fn prepare_move(
    inputs: &[TensorType],
    how: impl FnOnce() -> Result<Move, OpError>,
) -> PreparedCpuKernel {
    if inputs.is_empty() || inputs.iter().any(|t| t.dtype != DType::F32) {
        return Ok(None);
    }
    Ok(Some(Box::new(MoveCpu(how()?))))
}

fn prepare_transpose(inputs: &[TensorType], attrs: &Attributes) -> PreparedCpuKernel {
    let p = transpose::Params::from_attributes(attrs)?;
    prepare_move(inputs, || {
        Ok(Move::Transpose(permutation(
            transpose::NAME,
            &p.perm,
            inputs[0].shape.rank(),
        )?))
    })
}

fn prepare_reshape(inputs: &[TensorType], _: &Attributes) -> PreparedCpuKernel {
    prepare_move(inputs, || Ok(Move::Reshape))
}

fn prepare_concat(inputs: &[TensorType], attrs: &Attributes) -> PreparedCpuKernel {
    let p = concat::Params::from_attributes(attrs)?;
    prepare_move(inputs, || {
        Ok(Move::Concat(normalize_axis(
            concat::NAME,
            "axis",
            p.axis,
            inputs[0].shape.rank(),
        )?))
    })
}

fn prepare_slice(inputs: &[TensorType], attrs: &Attributes) -> PreparedCpuKernel {
    let p = slice::Params::from_attributes(attrs)?;
    prepare_move(inputs, || {
        Ok(Move::Slice(slice_ranges(
            slice::NAME,
            &inputs[0].shape,
            &p.starts,
            &p.ends,
            &p.axes,
            &p.steps,
        )?))
    })
}

pto_op::register_cpu_kernel!(TRANSPOSE_CPU, transpose::NAME, prepare_transpose);
pto_op::register_cpu_kernel!(RESHAPE_CPU, reshape::NAME, prepare_reshape);
pto_op::register_cpu_kernel!(CONCAT_CPU, concat::NAME, prepare_concat);
pto_op::register_cpu_kernel!(SLICE_CPU, slice::NAME, prepare_slice);
