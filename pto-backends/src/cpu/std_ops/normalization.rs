//! The fast paths of the normalizations over the last axis: `std.rms_norm` and
//! `std.layer_norm`.

use pto_op::cpu::{CpuKernel, PreparedCpuKernel};
use pto_op::ops::{layer_norm, rms_norm};
use pto_op::{Attributes, DType, OpError, OpParams, Tensor, TensorType};

use crate::cpu::{for_each_chunk, rows, rows_per_piece};

/// The fast path of f32 `std.rms_norm` and `std.layer_norm`: one pass per row
/// ([`rows`]), rows in pieces over threads.
#[derive(Debug)]
struct NormCpu {
    row: usize,
    eps: f32,
    /// Layer norm (subtracts the mean, adds `beta`), else RMS norm.
    layer: bool,
}

fn prepare_norm(inputs: &[TensorType], eps: f32, layer: bool) -> PreparedCpuKernel {
    let Some(x) = inputs.first() else {
        return Ok(None);
    };
    let row = x.shape.dims().last().copied().unwrap_or(0);
    let all_f32 = inputs.iter().all(|t| t.dtype == DType::F32);
    let params_fit = inputs[1..].iter().all(|t| t.shape.dims() == [row]);
    Ok((all_f32 && params_fit && row > 0)
        .then(|| Box::new(NormCpu { row, eps, layer }) as Box<dyn CpuKernel>))
}

fn prepare_rms_norm(inputs: &[TensorType], attrs: &Attributes) -> PreparedCpuKernel {
    let p = rms_norm::Params::from_attributes(attrs)?;
    prepare_norm(inputs, p.eps, false)
}

fn prepare_layer_norm(inputs: &[TensorType], attrs: &Attributes) -> PreparedCpuKernel {
    let p = layer_norm::Params::from_attributes(attrs)?;
    prepare_norm(inputs, p.eps, true)
}

impl CpuKernel for NormCpu {
    fn run(&self, inputs: &[&Tensor], outputs: &mut [Tensor]) -> Result<(), OpError> {
        let (x, params, y) = match (inputs, outputs) {
            ([x, params @ ..], [y]) => (x.as_slice::<f32>()?, params, y.as_slice_mut::<f32>()?),
            _ => {
                return Err(OpError::invalid(
                    "a norm fast path run without its input or output",
                ));
            }
        };
        let gamma = params
            .first()
            .ok_or_else(|| OpError::input("gamma", "missing"))?
            .as_slice::<f32>()?;
        let beta = match params.get(1) {
            Some(beta) => beta.as_slice::<f32>()?,
            None => &[],
        };
        let (row, eps, layer) = (self.row, self.eps, self.layer);
        let chunk = rows_per_piece(row) * row;
        let work = y.len() * 4;
        for_each_chunk(y, chunk, work, |i, y| {
            let x = &x[i * chunk..i * chunk + y.len()];
            for (y, x) in y.chunks_mut(row).zip(x.chunks(row)) {
                if layer {
                    rows::layer_norm(x, gamma, beta, eps, y);
                } else {
                    rows::rms_norm(x, gamma, eps, y);
                }
            }
        });
        Ok(())
    }
}

pto_op::register_cpu_kernel!(RMS_NORM_CPU, rms_norm::NAME, prepare_rms_norm);
pto_op::register_cpu_kernel!(LAYER_NORM_CPU, layer_norm::NAME, prepare_layer_norm);
