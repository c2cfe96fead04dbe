//! Executors: where an eager op call runs.

use crate::attr::Attributes;
use crate::error::OpError;
use crate::op::OpDef;
use crate::tensor::Tensor;

/// Runs one op call on some target. The generated `run(...)` of every op takes one, so the
/// target is chosen by the caller, never by the op's description.
///
/// `pto_backends::cpu::Cpu` runs the reference; other targets run the kernel.
pub trait Executor {
    /// The target's name, for messages (`cpu`, `sim`).
    fn target(&self) -> &str;

    /// Runs `op` on `inputs`; returns one tensor per output of the op.
    fn execute(
        &self,
        op: &'static OpDef,
        inputs: &[&Tensor],
        attrs: &Attributes,
    ) -> Result<Vec<Tensor>, OpError>;
}
