//! A model compiled for one target, and what it tells about its inputs and outputs.

use core::fmt;
use std::sync::Mutex;

use pto_op::{Executor, Model, OpDef, Tensor, ValueId};

use super::compiled_node::CompiledNode;
use super::{CompileReport, RunError, ValueInfo};
use crate::buffers::BufferPlan;

/// A model compiled for one target: compile once, [`run`](CompiledModel::run) many times.
///
/// Runs keep the activation buffers of the [`BufferPlan`] from one run to the next: nodes
/// on a fast CPU path write into them, so after the first run a run allocates only its
/// result (the graph outputs and the timings), not per node.
pub struct CompiledModel {
    pub(super) model: Model,
    pub(super) executor: Box<dyn Executor>,
    pub(super) nodes: Vec<CompiledNode>,
    pub(super) plan: BufferPlan,
    pub(super) report: CompileReport,
    /// The plan's buffers between runs (`None`: not allocated yet, or lent to a run).
    pub(super) buffers: Mutex<Vec<Option<Tensor>>>,
}

impl fmt::Debug for CompiledModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledModel")
            .field("model", &self.model.name)
            .field("target", &self.executor.target())
            .field("nodes", &self.nodes)
            .finish_non_exhaustive()
    }
}

impl CompiledModel {
    /// What the compiler decided.
    pub fn report(&self) -> &CompileReport {
        &self.report
    }

    /// The model compiled.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The buffer plan.
    pub fn plan(&self) -> &BufferPlan {
        &self.plan
    }

    /// The target's name.
    pub fn target(&self) -> &str {
        self.executor.target()
    }

    /// The graph inputs' names and types, in run order.
    pub fn inputs(&self) -> Vec<ValueInfo> {
        self.values(&self.model.graph.inputs)
    }

    /// The graph outputs' names and types, in the order runs return them.
    pub fn outputs(&self) -> Vec<ValueInfo> {
        self.values(&self.model.graph.outputs)
    }

    fn values(&self, ids: &[ValueId]) -> Vec<ValueInfo> {
        ids.iter()
            .filter_map(|&id| self.model.graph.values.get(id))
            .map(|v| ValueInfo {
                name: v.name.clone(),
                ty: v.ty.clone(),
            })
            .collect()
    }

    /// The op that produces each graph output (`None` for an output that is an input or a
    /// weight), in output order.
    pub fn output_producers(&self) -> Vec<Option<&'static OpDef>> {
        self.model
            .graph
            .outputs
            .iter()
            .map(|id| {
                self.model
                    .graph
                    .nodes
                    .iter()
                    .zip(&self.nodes)
                    .find(|(node, _)| node.outputs.contains(id))
                    .map(|(_, compiled)| compiled.op)
            })
            .collect()
    }

    /// Random inputs of the graph's input types: input `i` is
    /// `Tensor::random(shape, dtype, seed * 1000 + i)`.
    pub fn random_inputs(&self, seed: u64) -> Vec<Tensor> {
        self.inputs()
            .into_iter()
            .zip(0u64..)
            .map(|(input, index)| {
                let seed = seed.wrapping_mul(1000).wrapping_add(index);
                Tensor::random(input.ty.shape, input.ty.dtype, seed)
            })
            .collect()
    }

    /// Orders inputs given by name into run order.
    ///
    /// # Errors
    ///
    /// A name the graph lacks, or a graph input not given.
    pub fn order_inputs(
        &self,
        mut named: std::collections::BTreeMap<String, Tensor>,
    ) -> Result<Vec<Tensor>, RunError> {
        let inputs = self.inputs();
        let names = || {
            inputs
                .iter()
                .map(|i| format!("`{}`", i.name))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut ordered = Vec::with_capacity(inputs.len());
        for input in &inputs {
            let tensor = named
                .remove(&input.name)
                .ok_or_else(|| RunError::InputName {
                    model: self.model.name.clone(),
                    message: format!("input `{}` ({}) is not given", input.name, input.ty),
                    names: names(),
                })?;
            ordered.push(tensor);
        }
        if let Some(extra) = named.keys().next() {
            return Err(RunError::InputName {
                model: self.model.name.clone(),
                message: format!("no input is named `{extra}`"),
                names: names(),
            });
        }
        Ok(ordered)
    }
}
