//! The fast path of `std.softmax` over the last axis.

use pto_op::cpu::{CpuKernel, PreparedCpuKernel};
use pto_op::ops::axes::normalize_axis;
use pto_op::ops::softmax;
use pto_op::{Attributes, DType, OpError, OpParams, Tensor, TensorType};

use crate::cpu::{for_each_chunk, rows, rows_per_piece, unary_f32};

/// The fast path of an f32 `std.softmax` over the last axis: one pass per row
/// ([`rows::softmax`]), rows in pieces over threads. Other axes and dtypes
/// decline.
#[derive(Debug)]
struct SoftmaxCpu {
    row: usize,
}

fn prepare_softmax(inputs: &[TensorType], attrs: &Attributes) -> PreparedCpuKernel {
    let p = softmax::Params::from_attributes(attrs)?;
    let [x] = inputs else {
        return Ok(None);
    };
    let rank = x.shape.rank();
    if x.dtype != DType::F32
        || rank == 0
        || normalize_axis(softmax::NAME, "axis", p.axis, rank)? + 1 != rank
    {
        return Ok(None);
    }
    let row = x.shape.dims()[rank - 1];
    Ok((row > 0).then(|| Box::new(SoftmaxCpu { row }) as Box<dyn CpuKernel>))
}

impl CpuKernel for SoftmaxCpu {
    fn run(&self, inputs: &[&Tensor], outputs: &mut [Tensor]) -> Result<(), OpError> {
        let (x, y) = unary_f32(inputs, outputs)?;
        let row = self.row;
        let chunk = rows_per_piece(row) * row;
        let work = y.len() * 8;
        for_each_chunk(y, chunk, work, |i, y| {
            let x = &x[i * chunk..i * chunk + y.len()];
            y.copy_from_slice(x);
            y.chunks_mut(row).for_each(rows::softmax);
        });
        Ok(())
    }
}

pto_op::register_cpu_kernel!(SOFTMAX_CPU, softmax::NAME, prepare_softmax);
