//! Pass 4, lowering: every node prepared on the target (kernels traced once per instance,
//! shipped kernels checked and prepared), or sent to the target's fallback.

use std::collections::{BTreeSet, HashMap};

use pto_op::model::Staleness;
use pto_op::{Executor, Lowering, Model, OpDef, OpError, TensorType};

use super::{CompileError, KernelSource, NodeRuns, NodeTypes};

/// What [`lower`] decided for the whole graph.
#[derive(Debug, Clone, PartialEq)]
pub struct Lowered {
    /// What runs each node, in node order.
    pub runs: Vec<NodeRuns>,
    /// Distinct kernels traced: one per (op, input types, params).
    pub kernels: usize,
    /// Distinct shipped kernels that run.
    pub shipped: usize,
    /// Of those, the edited ones.
    pub edited: usize,
    /// Of those, the stale ones (the linked op's kernel changed since they were shipped).
    pub stale: usize,
    /// Ops that run on the target's fallback, by name, each once.
    pub fallbacks: Vec<String>,
    /// Per node, in node order: why the target's lowering refused the op's kernel, for a
    /// node on the fallback although its op has a kernel ([`Lowering::Declined`]).
    pub declined: Vec<Option<String>>,
}

/// Pass 4: prepares every node on `executor` (tracing and caching kernels); an op the
/// target has no kernel for runs on the target's [`Executor::fallback`]. On a target that
/// runs kernel programs (`sim`, `ascendc-host`), a node matched by a kernel shipped with the
/// model (op, input types, full params; see [`pto_op::model::ShippedKernel`]) runs that
/// kernel, and the report says `kernel: shipped`, `kernel: shipped (edited)` (its text is
/// not the one traced) or `kernel: shipped (stale: the op's kernel changed since export)`
/// (the linked op now traces to another text than it did when the kernel was shipped,
/// [`pto_op::model::ShippedKernel::staleness`]). A model without shipped kernels
/// (`model.kernels` cleared: `--kernels linked` on the command line) runs the linked ops'.
///
/// # Errors
///
/// [`CompileError::Lower`] for a node the target cannot prepare (a kernel that does not
/// trace or fit), [`CompileError::ShippedKernel`] for a matching shipped kernel that is
/// refused (its op's fingerprint changed, its text does not parse or fit the node),
/// [`CompileError::NoFallback`] for an op without a kernel on a target without a fallback.
pub fn lower(
    model: &Model,
    executor: &dyn Executor,
    ops: &[&'static OpDef],
    types: &[NodeTypes],
) -> Result<Lowered, CompileError> {
    let mut kernels = BTreeSet::new();
    let mut shipped = BTreeSet::new();
    let mut edited = BTreeSet::new();
    let mut stale = BTreeSet::new();
    let mut fallbacks = BTreeSet::new();
    let mut runs = Vec::with_capacity(ops.len());
    let mut declined = Vec::with_capacity(ops.len());
    // A shipped kernel is checked, traced for the device and prepared once per instance.
    let mut prepared_shipped: HashMap<String, Option<(Lowering, KernelSource)>> = HashMap::new();
    for (index, ((node, op), types)) in model.graph.nodes.iter().zip(ops).zip(types).enumerate() {
        let input_types = types.input_types();
        let lower_error = |source: OpError| CompileError::Lower {
            model: model.name.clone(),
            node: index,
            node_name: node.name.clone(),
            target: executor.target().to_owned(),
            source: Box::new(source),
        };
        let key = format!("{}{:?}{:?}", op.name, input_types, node.attrs);
        let shipped_here = match prepared_shipped.get(&key) {
            Some(prepared) => prepared.clone(),
            None => {
                let prepared =
                    prepare_shipped(model, index, executor, op, &input_types, &node.attrs)?;
                prepared_shipped.insert(key.clone(), prepared.clone());
                prepared
            }
        };
        let (lowering, kernel) = match shipped_here {
            Some((lowering, source)) => (lowering, Some(source)),
            None => (
                executor
                    .prepare(op, &input_types, &node.attrs)
                    .map_err(lower_error)?,
                None,
            ),
        };
        declined.push(match &lowering {
            Lowering::Declined { reason } => Some(reason.clone()),
            _ => None,
        });
        runs.push(match lowering {
            Lowering::Reference => NodeRuns::Reference,
            Lowering::Kernel { grid } => {
                let source = match kernel {
                    None => {
                        kernels.insert(key);
                        KernelSource::Traced
                    }
                    Some(source) => {
                        if source.edited() {
                            edited.insert(key.clone());
                        }
                        if source.stale() {
                            stale.insert(key.clone());
                        }
                        shipped.insert(key);
                        source
                    }
                };
                NodeRuns::Kernel { grid, source }
            }
            Lowering::NoKernel | Lowering::Declined { .. } if executor.fallback().is_some() => {
                fallbacks.insert(op.name.to_owned());
                NodeRuns::Fallback
            }
            Lowering::NoKernel | Lowering::Declined { .. } => {
                return Err(CompileError::NoFallback {
                    model: model.name.clone(),
                    node: index,
                    node_name: node.name.clone(),
                    op: op.name.to_owned(),
                    target: executor.target().to_owned(),
                });
            }
        });
    }
    Ok(Lowered {
        runs,
        kernels: kernels.len(),
        shipped: shipped.len(),
        edited: edited.len(),
        stale: stale.len(),
        fallbacks: fallbacks.into_iter().collect(),
        declined,
    })
}

/// Node `index` on a shipped kernel of `model`, when one matches it and `executor` runs
/// kernel programs: the kernel checked against the linked op (fingerprint, text, instance)
/// and prepared on the target, with what the report says of it (edited, stale). `None`: no
/// shipped kernel matches, or the target runs none.
fn prepare_shipped(
    model: &Model,
    index: usize,
    executor: &dyn Executor,
    op: &'static OpDef,
    inputs: &[TensorType],
    attrs: &pto_op::Attributes,
) -> Result<Option<(Lowering, KernelSource)>, CompileError> {
    if op.kernel.is_none() || !executor.runs_programs() {
        return Ok(None);
    }
    let Ok(params) = op.full_params(attrs) else {
        return Ok(None);
    };
    let Some(kernel) = model.shipped_kernel(op.name, inputs, &params) else {
        return Ok(None);
    };
    let program = kernel
        .program_for(op, executor.device_profile())
        .map_err(|source| CompileError::ShippedKernel {
            model: model.name.clone(),
            node: index,
            source: Box::new(source),
        })?;
    let lowering = executor
        .prepare_program(op, inputs, attrs, &program)
        .map_err(|source| CompileError::Lower {
            model: model.name.clone(),
            node: index,
            node_name: model
                .graph
                .nodes
                .get(index)
                .map_or_else(String::new, |n| n.name.clone()),
            target: executor.target().to_owned(),
            source: Box::new(source),
        })?;
    let stale = kernel.staleness(op, executor.device_profile()) == Staleness::Stale;
    let source = KernelSource::shipped(kernel.edited(), stale);
    Ok(lowering.map(|lowering| (lowering, source)))
}
