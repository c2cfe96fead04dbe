//! One node of a compiled model: its op, what runs it, and its fast CPU path, prepared at
//! compile time for the nodes that run on the CPU.

use pto_op::cpu::CpuKernel;
use pto_op::{Executor, Model, OpDef};

use super::{CompileError, NodeRuns, NodeTypes};

/// One node, ready to run.
#[derive(Debug)]
pub(super) struct CompiledNode {
    pub(super) op: &'static OpDef,
    pub(super) runs: NodeRuns,
    /// The op's fast CPU path for this node, when it runs on the CPU and has one.
    pub(super) fast: Option<Box<dyn CpuKernel>>,
}

/// The fast CPU path of every node that runs on the CPU (the target's, or its fallback's)
/// and whose op has one that accepts the node.
pub(super) fn prepare_cpu_kernels(
    model: &Model,
    executor: &dyn Executor,
    ops: &[&'static OpDef],
    types: &[NodeTypes],
    runs: &[NodeRuns],
) -> Result<Vec<Option<Box<dyn CpuKernel>>>, CompileError> {
    let mut fast = Vec::with_capacity(ops.len());
    for (index, ((node, op), (types, runs))) in model
        .graph
        .nodes
        .iter()
        .zip(ops)
        .zip(types.iter().zip(runs))
        .enumerate()
    {
        let on = match runs {
            NodeRuns::Reference => Some(executor),
            NodeRuns::Fallback => executor.fallback(),
            NodeRuns::Kernel { .. } => None,
        };
        let kernel = match on {
            Some(on) => on
                .prepare_cpu_kernel(op, &types.input_types(), &node.attrs)
                .map_err(|source| CompileError::Lower {
                    model: model.name.clone(),
                    node: index,
                    node_name: node.name.clone(),
                    target: on.target().to_owned(),
                    source: Box::new(source),
                })?,
            None => None,
        };
        fast.push(kernel);
    }
    Ok(fast)
}
