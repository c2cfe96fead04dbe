//! Executors: where an eager op call runs.

use crate::attr::Attributes;
use crate::error::OpError;
use crate::op::{OpDef, TensorType};
use crate::tensor::Tensor;

/// What a target will run for one op call, decided before the call (see
/// [`Executor::prepare`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lowering {
    /// The op's `#[reference]` function.
    Reference,
    /// The op's `#[kernel]`, traced into a program of `grid` block programs.
    Kernel {
        /// Block programs of the traced kernel.
        grid: usize,
    },
    /// The target runs kernels, but this op has none, or its kernel does not cover these
    /// inputs or params ([`OpError::Unsupported`]): the caller
    /// must run its reference elsewhere (on the CPU).
    NoKernel,
    /// The op has a kernel, but the target's lowering refuses this instance (a dtype the
    /// device cannot hold, a call path it lacks): the caller runs the reference elsewhere,
    /// as for [`Lowering::NoKernel`], and says why.
    Declined {
        /// The lowering's reason, as its error says it.
        reason: String,
    },
}

/// The time a target models for a call, where it models one (a simulator), rather than
/// the wall time the call took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimulatedTime {
    /// Simulated device cycles.
    pub cycles: u64,
    /// `cycles` at the device's clock.
    pub seconds: f64,
}

/// What one op call on a target gave: its outputs and, on targets that model time, the
/// time it modelled.
#[derive(Debug, Clone, PartialEq)]
pub struct Execution {
    /// One tensor per output of the op, in the op's output order.
    pub outputs: Vec<Tensor>,
    /// The modelled time of this call; `None` where only wall time means anything.
    pub simulated: Option<SimulatedTime>,
}

impl Execution {
    /// `outputs` of a call whose target models no time.
    pub fn untimed(outputs: Vec<Tensor>) -> Execution {
        Execution {
            outputs,
            simulated: None,
        }
    }
}

/// Runs one op call on some target. The generated `run(...)` of every op takes one, so the
/// target is chosen by the caller, never by the op's description.
///
/// `pto_backends::cpu::Cpu` runs the reference; other targets run the kernel.
pub trait Executor {
    /// The target's name, for messages (`cpu`, `sim`).
    fn target(&self) -> &str;

    /// Runs `op` on `inputs`: one tensor per output of the op, and the modelled time on
    /// targets that model it.
    fn execute(
        &self,
        op: &'static OpDef,
        inputs: &[&Tensor],
        attrs: &Attributes,
    ) -> Result<Execution, OpError>;

    /// Prepares calls of `op` on inputs of types `inputs` with `attrs`, before any runs:
    /// a kernel target traces (and keeps) the kernel here, so a graph compiler finds a
    /// kernel that does not trace at compile time, and runs pay for tracing once.
    ///
    /// The default runs the reference and prepares nothing.
    fn prepare(
        &self,
        op: &'static OpDef,
        inputs: &[TensorType],
        attrs: &Attributes,
    ) -> Result<Lowering, OpError> {
        op.infer(inputs, attrs)?;
        Ok(Lowering::Reference)
    }

    /// A fast path for calls of `op` on inputs of types `inputs` with `attrs`, prepared once
    /// by a graph compiler: a kernel that writes the outputs into buffers the runtime
    /// reuses (see [`crate::cpu`]). `None` (the default): calls go through
    /// [`execute`](Executor::execute).
    ///
    /// # Errors
    ///
    /// Params the fast path cannot read.
    fn prepare_cpu_kernel(
        &self,
        op: &'static OpDef,
        inputs: &[TensorType],
        attrs: &Attributes,
    ) -> Result<Option<Box<dyn crate::cpu::CpuKernel>>, OpError> {
        let _ = (op, inputs, attrs);
        Ok(None)
    }

    /// The device profile the target traces kernels for; `None` (the default): the target
    /// has none (the CPU reference), or its profile did not load. A kernel shipped with a
    /// model is traced again for it ([`crate::model::ShippedKernel::program_for`]).
    fn device_profile(&self) -> Option<&crate::DeviceProfile> {
        None
    }

    /// True when this target runs kernel programs, so that a kernel shipped with a model can
    /// replace an op's own ([`Executor::prepare_program`]); false (the default) for targets
    /// that run references, which need no kernel.
    fn runs_programs(&self) -> bool {
        false
    }

    /// Prepares calls of `op` on inputs of types `inputs` with `attrs` to run `program`, a
    /// kernel shipped with a model (see [`crate::model::ShippedKernel`]), in place of the
    /// op's own kernel. The caller has checked that `program` is a kernel of this instance.
    ///
    /// `None` (the default): this target runs no kernel programs (the CPU reference), and the
    /// caller prepares the op with [`Executor::prepare`].
    fn prepare_program(
        &self,
        op: &'static OpDef,
        inputs: &[TensorType],
        attrs: &Attributes,
        program: &crate::kernel::ValidProgram,
    ) -> Result<Option<Lowering>, OpError> {
        let _ = (op, inputs, attrs, program);
        Ok(None)
    }

    /// The target that runs the ops this one cannot ([`Lowering::NoKernel`]): a kernel
    /// target answers with the CPU reference. `None` (the default): this target runs every
    /// op it prepares.
    fn fallback(&self) -> Option<&dyn Executor> {
        None
    }
}
