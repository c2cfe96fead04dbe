//! Pass 3, planning: the activation buffers of a run ([`BufferPlan`]), and the model
//! checked against the target's memory budget before anything is allocated.

use pto_op::Model;
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
