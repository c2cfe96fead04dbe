//! Fast CPU paths, as an op describes them: the kernel an op registers for the `cpu`
//! target beside its reference, and the lookup the target prepares it with.
//!
//! An op's `#[reference]` is the ground truth: plain, allocating, one thread. An op may
//! also register a [`CpuKernelDef`] with [`register_cpu_kernel!`](crate::register_cpu_kernel): at compile
//! time its `prepare` looks at the node's input types and params and either declines
//! (`Ok(None)`: the reference runs) or returns a [`CpuKernel`] that writes the node's
//! outputs into buffers the runtime owns and reuses from run to run (no allocation per
//! node). A fast path's results match the reference within the op's tolerance, which the
//! op's parity tests check.
//!
//! This is the description side, which [`Executor::prepare_cpu_kernel`](crate::Executor::prepare_cpu_kernel)
//! names. The execution side is `pto_backends::cpu`: the `cpu` target that runs the
//! kernels, the threads and pieces they split work into, the row kernels and the matrix
//! product they are written with, the standard ops' own fast paths, and
//! `compare_with_reference` for an op's tests.

use core::fmt;

use crate::attr::Attributes;
use crate::error::OpError;
use crate::op::{SourceLocation, TensorType};
use crate::tensor::Tensor;

/// A prepared fast path of one node: its input types and params were accepted at compile
/// time, so a run only computes.
pub trait CpuKernel: fmt::Debug + Send + Sync {
    /// Writes the node's outputs into `outputs`: tensors of the node's output types whose
    /// elements are unspecified (reused buffers). Every element must be written.
    ///
    /// # Errors
    ///
    /// Inputs that do not have the types the kernel was prepared for, or a value error of
    /// the op (as its reference would report it).
    fn run(&self, inputs: &[&Tensor], outputs: &mut [Tensor]) -> Result<(), OpError>;
}

/// What preparing a fast path gives: a kernel, or `None` to decline (the reference runs).
pub type PreparedCpuKernel = Result<Option<Box<dyn CpuKernel>>, OpError>;

/// Prepares a fast path for a node of the op from its input types and params.
pub type PrepareCpuKernelFn = fn(inputs: &[TensorType], attrs: &Attributes) -> PreparedCpuKernel;

/// A fast CPU path of one op, registered with [`register_cpu_kernel!`](crate::register_cpu_kernel).
#[derive(Debug)]
pub struct CpuKernelDef {
    /// The op's name.
    pub op: &'static str,
    /// Accepts or declines a node, by its input types and params.
    pub prepare: PrepareCpuKernelFn,
    /// Where it is registered.
    pub source: SourceLocation,
}

#[doc(hidden)]
#[linkme::distributed_slice]
pub static CPU_KERNELS: [CpuKernelDef];

/// Registers a fast CPU path (one per op): `register_cpu_kernel!(STATIC_NAME, op_name,
/// prepare)` with `prepare` a [`PrepareCpuKernelFn`].
///
/// ```ignore
/// pto_op::register_cpu_kernel!(MY_OP_CPU, my_op::NAME, prepare_my_op);
/// ```
#[macro_export]
macro_rules! register_cpu_kernel {
    ($static_name:ident, $op:expr, $prepare:expr) => {
        #[$crate::__private::linkme::distributed_slice($crate::__private::CPU_KERNELS)]
        #[linkme(crate = $crate::__private::linkme)]
        static $static_name: $crate::cpu::CpuKernelDef = $crate::cpu::CpuKernelDef {
            op: $op,
            prepare: $prepare,
            source: $crate::source_location!(),
        };
    };
}

/// The fast path of `op` for a node with `inputs` and `attrs`, if one is registered and
/// accepts it.
///
/// # Errors
///
/// Two fast paths registered for one op (naming both places), or params the fast path
/// cannot read.
pub fn prepare(op: &str, inputs: &[TensorType], attrs: &Attributes) -> PreparedCpuKernel {
    let mut found = CPU_KERNELS.iter().filter(|def| def.op == op);
    let Some(def) = found.next() else {
        return Ok(None);
    };
    if let Some(other) = found.next() {
        return Err(OpError::Unsupported {
            op: op.to_owned(),
            message: format!(
                "two CPU fast paths are registered for the op, at {} and at {}: link one",
                def.source, other.source
            ),
        });
    }
    (def.prepare)(inputs, attrs)
}
