//! The CPU target: runs each op's reference implementation, or the op's fast CPU path
//! ([`pto_op::cpu`]) where it registers one and the graph compiler prepares it.

use pto_op::__private::linkme;
use pto_op::cpu::CpuKernel;
use pto_op::target::TargetDef;
use pto_op::{Attributes, Execution, Executor, OpDef, OpError, Tensor, TensorType};

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
