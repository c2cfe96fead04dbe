//! Pass 3, planning: the activation buffers of a run ([`BufferPlan`]), and the model
//! checked against the target's memory budget before anything is allocated.

use pto_op::Model;
use pto_op::budget::BudgetError;
use pto_op::target::TargetConfig;

use super::CompileError;
use crate::buffers::BufferPlan;

/// The buffer plan of `model`'s graph, once the model (weights and peak activations) is
/// known to fit `config`'s [`MemoryBudget`](pto_op::budget::MemoryBudget).
///
/// # Errors
///
/// [`CompileError::MemoryBudget`] for a model that needs more memory than the budget.
pub(super) fn plan(model: &Model, config: &TargetConfig) -> Result<BufferPlan, CompileError> {
    let plan = BufferPlan::of(&model.graph);
    // Before anything is allocated for a run.
    config
        .budget()
        .check(&model.name, &model.graph)
        .map_err(|e| CompileError::MemoryBudget(Box::new(e)))?;
    Ok(plan)
}

/// Checks the memory a run holds at its peak ([`BufferPlan::run`]: the inputs, the plan's
/// buffers once made, the nodes' own outputs), with the weights, against `config`'s budget:
/// the activations alone fitting is not enough.
///
/// # Errors
///
/// [`CompileError::MemoryBudget`] naming the run's peak and the node it is reached at.
pub(super) fn check_run_memory(
    model: &Model,
    config: &TargetConfig,
    plan: &BufferPlan,
) -> Result<(), CompileError> {
    let budget = config.budget();
    let total = plan.weight_bytes.saturating_add(plan.run.peak_bytes);
    if total <= budget.limit() {
        return Ok(());
    }
    let during = plan
        .run
        .peak_node
        .and_then(|n| model.graph.nodes.get(n).map(|node| (n, node)))
        .map_or(String::new(), |(n, node)| {
            format!(" during node {n} (`{}`)", node.op)
        });
    Err(CompileError::MemoryBudget(Box::new(BudgetError {
        model: model.name.clone(),
        what: format!(
            "a run holds {} at its peak{during} (its inputs, the activation buffers once \
             made, the nodes' own outputs) with {} of weights",
            crate::buffers::human_bytes(plan.run.peak_bytes),
            crate::buffers::human_bytes(plan.weight_bytes)
        ),
        budget,
    })))
}
