//! The fast path of `std.matmul`: [`matmul`] into the output buffer.

use pto_op::cpu::{CpuKernel, PreparedCpuKernel};
use pto_op::{Attributes, DType, OpError, Tensor, TensorType};

use crate::cpu::{Layout, binary_f32, matmul};

/// The fast path of an f32 `std.matmul`: the product written straight into the output
/// buffer, in pieces of 256 output columns over threads ([`matmul`]: each piece reads its
/// own columns of `b`, so threads share the reading of the weights).
#[derive(Debug)]
struct MatmulCpu {
    rows: usize,
    depth: usize,
    n: usize,
}

fn prepare_matmul(inputs: &[TensorType], _: &Attributes) -> PreparedCpuKernel {
    let [a, b] = inputs else {
        return Ok(None);
    };
    if a.dtype != DType::F32 || b.dtype != DType::F32 || b.shape.rank() != 2 {
        return Ok(None);
    }
    let Some((&depth, leading)) = a.shape.dims().split_last() else {
        return Ok(None);
    };
    Ok(Some(Box::new(MatmulCpu {
        rows: leading.iter().product(),
        depth,
        n: b.shape.dims()[1],
    })))
}

impl CpuKernel for MatmulCpu {
    fn run(&self, inputs: &[&Tensor], outputs: &mut [Tensor]) -> Result<(), OpError> {
        let (a, b, y) = binary_f32(inputs, outputs)?;
        matmul(a, b, Layout::RowMajor, (self.rows, self.depth, self.n), y)
    }
}

pto_op::register_cpu_kernel!(MATMUL_CPU, pto_op::ops::matmul::NAME, prepare_matmul);
