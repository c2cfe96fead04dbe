//! The fast paths of the element-wise std ops: arithmetic (`std.add`, `std.sub`,
//! `std.mul`, `std.div`) for the broadcasts models use, and the activations (`std.relu`,
//! `std.sigmoid`, `std.silu`, `std.gelu`).

use pto_op::cpu::{CpuKernel, PreparedCpuKernel};
use pto_op::ops::math::{gelu_erf, gelu_tanh};
use pto_op::ops::{GeluForm, add, div, gelu, mul, relu, sigmoid, silu, sub};
use pto_op::{Attributes, DType, OpError, OpParams, Tensor, TensorType};

use crate::cpu::{binary_f32, for_each_chunk, rows, unary_f32};

/// Elements per piece of an element-wise fast path: a piece is worth a thread.
const CHUNK: usize = 1 << 14;

/// One of the four arithmetic operations.
#[derive(Debug, Clone, Copy)]
enum Arith {
    Add,
    Sub,
    Mul,
    Div,
}

/// The fast path of a binary f32 op whose output has `a`'s shape and whose `b` repeats
/// along `a`'s leading axes (same shape, a scalar, or `a`'s trailing dims): the common
/// broadcasts of models. Other broadcasts and dtypes decline.
#[derive(Debug)]
struct ArithCpu {
    op: Arith,
    /// `b`'s element count: `b` repeats every `period` elements of `a`.
    period: usize,
}

fn prepare_arith(inputs: &[TensorType], op: Arith) -> PreparedCpuKernel {
    let [a, b] = inputs else {
        return Ok(None);
    };
    if a.dtype != DType::F32 || b.dtype != DType::F32 {
        return Ok(None);
    }
    let b_dims = b.shape.dims();
    let significant = &b_dims[b_dims.iter().take_while(|&&d| d == 1).count()..];
    let repeats = a.shape.dims().ends_with(significant)
        && a.shape.rank() >= b.shape.rank()
        && b.shape.numel() > 0;
    Ok(repeats.then(|| {
        Box::new(ArithCpu {
            op,
            period: b.shape.numel(),
        }) as Box<dyn CpuKernel>
    }))
}

impl CpuKernel for ArithCpu {
    fn run(&self, inputs: &[&Tensor], outputs: &mut [Tensor]) -> Result<(), OpError> {
        match self.op {
            Arith::Add => self.apply(inputs, outputs, |x, y| x + y),
            Arith::Sub => self.apply(inputs, outputs, |x, y| x - y),
            Arith::Mul => self.apply(inputs, outputs, |x, y| x * y),
            Arith::Div => self.apply(inputs, outputs, |x, y| x / y),
        }
    }
}

impl ArithCpu {
    fn apply(
        &self,
        inputs: &[&Tensor],
        outputs: &mut [Tensor],
        f: impl Fn(f32, f32) -> f32 + Sync,
    ) -> Result<(), OpError> {
        let (a, b, y) = binary_f32(inputs, outputs)?;
        let period = self.period;
        let chunk = if period == 1 {
            CHUNK
        } else {
            period * (CHUNK / period).max(1)
        };
        let work = y.len();
        for_each_chunk(y, chunk, work, |i, y| {
            let a = &a[i * chunk..i * chunk + y.len()];
            if period == 1 {
                let b = b[0];
                for (y, &a) in y.iter_mut().zip(a) {
                    *y = f(a, b);
                }
            } else {
                for (y, a) in y.chunks_mut(period).zip(a.chunks(period)) {
                    for ((y, &a), &b) in y.iter_mut().zip(a).zip(b) {
                        *y = f(a, b);
                    }
                }
            }
        });
        Ok(())
    }
}

fn prepare_add(inputs: &[TensorType], _: &Attributes) -> PreparedCpuKernel {
    prepare_arith(inputs, Arith::Add)
}
fn prepare_sub(inputs: &[TensorType], _: &Attributes) -> PreparedCpuKernel {
    prepare_arith(inputs, Arith::Sub)
}
fn prepare_mul(inputs: &[TensorType], _: &Attributes) -> PreparedCpuKernel {
    prepare_arith(inputs, Arith::Mul)
}
fn prepare_div(inputs: &[TensorType], _: &Attributes) -> PreparedCpuKernel {
    prepare_arith(inputs, Arith::Div)
}

/// The activations with an f32 fast path.
#[derive(Debug, Clone, Copy)]
enum Activation {
    Relu,
    Sigmoid,
    Silu,
    GeluErf,
    GeluTanh,
}

/// The fast path of an f32 activation: [`rows::exp`] for the exponentials,
/// in pieces over threads.
#[derive(Debug)]
struct ActivationCpu(Activation);

impl CpuKernel for ActivationCpu {
    fn run(&self, inputs: &[&Tensor], outputs: &mut [Tensor]) -> Result<(), OpError> {
        match self.0 {
            Activation::Relu => map_f32(inputs, outputs, |v| if v < 0.0 { 0.0 } else { v }),
            Activation::Sigmoid => map_f32(inputs, outputs, rows::sigmoid),
            Activation::Silu => map_f32(inputs, outputs, rows::silu),
            Activation::GeluErf => map_f32(inputs, outputs, gelu_erf),
            Activation::GeluTanh => map_f32(inputs, outputs, gelu_tanh),
        }
    }
}

fn map_f32(
    inputs: &[&Tensor],
    outputs: &mut [Tensor],
    f: impl Fn(f32) -> f32 + Sync,
) -> Result<(), OpError> {
    let (x, y) = unary_f32(inputs, outputs)?;
    let work = y.len();
    for_each_chunk(y, CHUNK, work, |i, y| {
        let x = &x[i * CHUNK..i * CHUNK + y.len()];
        for (y, &x) in y.iter_mut().zip(x) {
            *y = f(x);
        }
    });
    Ok(())
}

fn prepare_activation(inputs: &[TensorType], activation: Activation) -> PreparedCpuKernel {
    Ok(matches!(inputs, [x] if x.dtype == DType::F32)
        .then(|| Box::new(ActivationCpu(activation)) as Box<dyn CpuKernel>))
}

fn prepare_relu(inputs: &[TensorType], _: &Attributes) -> PreparedCpuKernel {
    prepare_activation(inputs, Activation::Relu)
}
fn prepare_sigmoid(inputs: &[TensorType], _: &Attributes) -> PreparedCpuKernel {
    prepare_activation(inputs, Activation::Sigmoid)
}
fn prepare_silu(inputs: &[TensorType], _: &Attributes) -> PreparedCpuKernel {
    prepare_activation(inputs, Activation::Silu)
}
fn prepare_gelu(inputs: &[TensorType], attrs: &Attributes) -> PreparedCpuKernel {
    let p = gelu::Params::from_attributes(attrs)?;
    match GeluForm::parse(&p.approximate)? {
        GeluForm::Erf => prepare_activation(inputs, Activation::GeluErf),
        GeluForm::Tanh => prepare_activation(inputs, Activation::GeluTanh),
    }
}

pto_op::register_cpu_kernel!(ADD_CPU, add::NAME, prepare_add);
pto_op::register_cpu_kernel!(SUB_CPU, sub::NAME, prepare_sub);
pto_op::register_cpu_kernel!(MUL_CPU, mul::NAME, prepare_mul);
pto_op::register_cpu_kernel!(DIV_CPU, div::NAME, prepare_div);
pto_op::register_cpu_kernel!(RELU_CPU, relu::NAME, prepare_relu);
pto_op::register_cpu_kernel!(SIGMOID_CPU, sigmoid::NAME, prepare_sigmoid);
pto_op::register_cpu_kernel!(SILU_CPU, silu::NAME, prepare_silu);
pto_op::register_cpu_kernel!(GELU_CPU, gelu::NAME, prepare_gelu);
