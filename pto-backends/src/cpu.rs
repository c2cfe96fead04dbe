//! The CPU target: runs each op's reference implementation, or the op's fast CPU path where
//! it registers one ([`pto_op::cpu`]) and the graph compiler prepares it; and what fast
//! paths are written with.
//!
//! An op's `#[reference]` is the ground truth: plain, allocating, one thread. A graph run on
//! the CPU spends its time in a few ops (matrix products, softmax, norms, activations), so
//! an op may also register a fast path ([`pto_op::register_cpu_kernel!`]): at compile time
//! its `prepare` looks at the node's input types and params and either declines
//! (`Ok(None)`: the reference runs) or returns a [`CpuKernel`] that writes the node's
//! outputs into buffers the runtime owns and reuses from run to run (no allocation per
//! node). A fast path's results match the reference within the op's tolerance, which the
//! op's tests check ([`compare_with_reference`]).
//!
//! The description side (the [`CpuKernel`] trait, the registration, the lookup) is
//! pto-op's, so an operator crate and the `Executor` trait name it without this crate; the
//! execution side is here: the thread knob and the pieces work is split into
//! ([`set_threads`], [`for_each_piece`], [`for_each_chunk`], on worker threads kept for the
//! whole process), the f32 row kernels ([`rows`]), the matrix product ([`matmul`], on the
//! AVX-512 kernel or the `gemm` crate) and the standard ops' own fast paths, registered
//! from this module (`std_ops`, one file per op family).

use pto_op::__private::linkme;
use pto_op::cpu::CpuKernel;
use pto_op::target::TargetDef;
use pto_op::{Attributes, Execution, Executor, OpDef, OpError, Tensor, TensorType};

mod gemm_crate;
mod matmul;
#[cfg(target_arch = "x86_64")]
mod matmul_avx512;
mod operands;
mod pool;
mod reference_check;
pub mod rows;
mod std_ops;
mod threads;

pub use matmul::{Layout, MatmulKernel, matmul, matmul_on};
pub use operands::{BinaryF32, binary_f32, unary_f32};
pub use reference_check::compare_with_reference;
pub use threads::{
    PARALLEL_MIN_WORK, for_each_chunk, for_each_piece, rows_per_piece, set_threads, threads,
};

#[linkme::distributed_slice(pto_op::__private::TARGETS)]
#[linkme(crate = pto_op::__private::linkme)]
static CPU_TARGET: TargetDef = TargetDef {
    name: "cpu",
    description: "the CPU: each op's #[reference] function, or its fast CPU path",
    make: |_device| Box::new(Cpu),
    source: pto_op::source_location!(),
};

/// Runs ops on the CPU with their `#[reference]` functions, checked against their
/// descriptions: inputs must satisfy the shape and dtype rules, and the reference must
/// return what the rules say.
///
/// ```
/// use pto_backends::cpu::Cpu;
/// use pto_op::Executor;
/// assert_eq!(Cpu.target(), "cpu");
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Cpu;

impl Executor for Cpu {
    fn target(&self) -> &str {
        "cpu"
    }

    fn execute(
        &self,
        op: &'static OpDef,
        inputs: &[&Tensor],
        attrs: &Attributes,
    ) -> Result<Execution, OpError> {
        op.run_reference(inputs, attrs).map(Execution::untimed)
    }

    fn prepare_cpu_kernel(
        &self,
        op: &'static OpDef,
        inputs: &[TensorType],
        attrs: &Attributes,
    ) -> Result<Option<Box<dyn CpuKernel>>, OpError> {
        pto_op::cpu::prepare(op.name, inputs, attrs)
    }
}
