//! Fast CPU paths of the example ops that dominate the example decoders (attention,
//! softmax, RMS norm, GELU), registered with [`pto_op::register_cpu_kernel!`] beside the
//! ops: f32 only (other dtypes run the reference), each within its op's tolerance of the
//! reference (`tests/cpu_fast_paths.rs`). The kernel trait is pto-op's ([`pto_op::cpu`]);
//! what they are written with (threads, row kernels, the matrix product) is the cpu
//! target's ([`pto_backends::cpu`]).

use std::sync::Mutex;

use pto_backends::cpu::{self, rows};
use pto_op::cpu::{CpuKernel, PreparedCpuKernel};
use pto_op::{Attributes, DType, OpError, OpParams, Tensor, TensorType};

use crate::{flash_attention as attention, gelu_affine, rms_norm, softmax};

/// Elements per piece of a row-wise job.
fn rows_chunk(row: usize) -> usize {
    cpu::rows_per_piece(row) * row
}

/// demo.softmax on f32: [`rows::softmax`] per row.
#[derive(Debug)]
struct SoftmaxCpu {
    row: usize,
}

fn prepare_softmax(inputs: &[TensorType], _: &Attributes) -> PreparedCpuKernel {
    Ok(match inputs {
        [x] if x.dtype == DType::F32 => x
            .shape
            .dims()
            .last()
            .filter(|&&row| row > 0)
            .map(|&row| Box::new(SoftmaxCpu { row }) as Box<dyn CpuKernel>),
        _ => None,
    })
}

impl CpuKernel for SoftmaxCpu {
    fn run(&self, inputs: &[&Tensor], outputs: &mut [Tensor]) -> Result<(), OpError> {
        let (x, y) = cpu::unary_f32(inputs, outputs)?;
        let (row, chunk) = (self.row, rows_chunk(self.row));
        let work = y.len() * 8;
        cpu::for_each_chunk(y, chunk, work, |i, y| {
            y.copy_from_slice(&x[i * chunk..i * chunk + y.len()]);
            y.chunks_mut(row).for_each(rows::softmax);
        });
        Ok(())
    }
}

/// demo.rms_norm on f32: [`rows::rms_norm`] per row.
#[derive(Debug)]
struct RmsNormCpu {
    row: usize,
    eps: f32,
}

fn prepare_rms_norm(inputs: &[TensorType], attrs: &Attributes) -> PreparedCpuKernel {
    let p = rms_norm::Params::from_attributes(attrs)?;
    Ok(match inputs {
        [x, gamma] if x.dtype == DType::F32 && gamma.dtype == DType::F32 => {
            let row = x.shape.dims().last().copied().unwrap_or(0);
            (row > 0 && gamma.shape.dims() == [row])
                .then(|| Box::new(RmsNormCpu { row, eps: p.eps }) as Box<dyn CpuKernel>)
        }
        _ => None,
    })
}

impl CpuKernel for RmsNormCpu {
    fn run(&self, inputs: &[&Tensor], outputs: &mut [Tensor]) -> Result<(), OpError> {
        let (x, gamma, y) = cpu::binary_f32(inputs, outputs)?;
        let (row, chunk, eps) = (self.row, rows_chunk(self.row), self.eps);
        let work = y.len() * 4;
        cpu::for_each_chunk(y, chunk, work, |i, y| {
            let x = &x[i * chunk..i * chunk + y.len()];
            for (y, x) in y.chunks_mut(row).zip(x.chunks(row)) {
                rows::rms_norm(x, gamma, eps, y);
            }
        });
        Ok(())
    }
}

/// demo.gelu_affine on f32: `gelu_tanh(x * scale + bias)` per element.
#[derive(Debug)]
struct GeluAffineCpu {
    scale: f32,
    bias: f32,
}

fn prepare_gelu_affine(inputs: &[TensorType], attrs: &Attributes) -> PreparedCpuKernel {
    let p = gelu_affine::Params::from_attributes(attrs)?;
    Ok(matches!(inputs, [x] if x.dtype == DType::F32).then(|| {
        Box::new(GeluAffineCpu {
            scale: p.scale,
            bias: p.bias,
        }) as Box<dyn CpuKernel>
    }))
}

impl CpuKernel for GeluAffineCpu {
    fn run(&self, inputs: &[&Tensor], outputs: &mut [Tensor]) -> Result<(), OpError> {
        let (x, y) = cpu::unary_f32(inputs, outputs)?;
        let (scale, bias) = (self.scale, self.bias);
        const CHUNK: usize = 1 << 14;
        let work = y.len() * 8;
        cpu::for_each_chunk(y, CHUNK, work, |i, y| {
            let x = &x[i * CHUNK..i * CHUNK + y.len()];
            for (y, &x) in y.iter_mut().zip(x) {
                *y = pto_op::ops::math::gelu_tanh(x * scale + bias);
            }
        });
        Ok(())
    }
}

/// demo.attention on f32: `softmax(q k^T * scale [+ causal mask]) v` with two GEMMs
/// ([`cpu::matmul`]) and [`rows::softmax`], the scores in a buffer the kernel keeps from
/// run to run.
#[derive(Debug)]
struct AttentionCpu {
    queries: usize,
    keys: usize,
    depth: usize,
    value_depth: usize,
    scale: f32,
    causal: bool,
    scores: Mutex<Vec<f32>>,
}

fn prepare_attention(inputs: &[TensorType], attrs: &Attributes) -> PreparedCpuKernel {
    let p = attention::Params::from_attributes(attrs)?;
    let [q, k, v] = inputs else {
        return Ok(None);
    };
    if inputs.iter().any(|t| t.dtype != DType::F32) {
        return Ok(None);
    }
    let (&[queries, depth], &[keys, _], &[_, value_depth]) =
        (q.shape.dims(), k.shape.dims(), v.shape.dims())
    else {
        return Ok(None);
    };
    Ok(Some(Box::new(AttentionCpu {
        queries,
        keys,
        depth,
        value_depth,
        scale: attention::effective_scale(&p, depth),
        causal: p.causal,
        scores: Mutex::new(Vec::new()),
    })))
}

impl CpuKernel for AttentionCpu {
    fn run(&self, inputs: &[&Tensor], outputs: &mut [Tensor]) -> Result<(), OpError> {
        let ([q, k, v], [y]) = (inputs, outputs) else {
            return Err(OpError::invalid(
                "the demo.attention fast path takes q, k, v and gives y",
            ));
        };
        let (q, k, v) = (
            q.as_slice::<f32>()?,
            k.as_slice::<f32>()?,
            v.as_slice::<f32>()?,
        );
        let y = y.as_slice_mut::<f32>()?;
        let (sq, sk) = (self.queries, self.keys);
        let mut scores = self
            .scores
            .lock()
            .map_err(|_| OpError::invalid("a demo.attention run panicked on this kernel"))?;
        scores.resize(sq * sk, 0.0);
        cpu::matmul(
            q,
            k,
            cpu::Layout::Transposed,
            (sq, self.depth, sk),
            &mut scores,
        )?;
        let (scale, causal) = (self.scale, self.causal);
        let work = sq * sk * 8;
        cpu::for_each_chunk(&mut scores, rows_chunk(sk), work, |i, chunk| {
            let first = i * rows_chunk(sk) / sk;
            for (r, row) in chunk.chunks_mut(sk).enumerate() {
                for (j, s) in row.iter_mut().enumerate() {
                    *s = if causal && j > first + r {
                        f32::NEG_INFINITY
                    } else {
                        *s * scale
                    };
                }
                rows::softmax(row);
            }
        });
        cpu::matmul(
            &scores,
            v,
            cpu::Layout::RowMajor,
            (sq, sk, self.value_depth),
            y,
        )
    }
}

pto_op::register_cpu_kernel!(SOFTMAX_CPU, softmax::NAME, prepare_softmax);
pto_op::register_cpu_kernel!(RMS_NORM_CPU, rms_norm::NAME, prepare_rms_norm);
pto_op::register_cpu_kernel!(GELU_AFFINE_CPU, gelu_affine::NAME, prepare_gelu_affine);
pto_op::register_cpu_kernel!(ATTENTION_CPU, attention::NAME, prepare_attention);
