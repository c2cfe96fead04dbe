//! A model's shipped kernels: the one for a call, and the model with every instance's kernel
//! traced (what a save and an export write).

use std::collections::BTreeSet;

use super::Model;
use super::kernels::ShippedKernel;
use crate::attr::Attributes;
use crate::op::TensorType;

impl Model {
    /// The shipped kernel for a call of `op` on `inputs` with full params `params`, if the
    /// model has one.
    pub fn shipped_kernel(
        &self,
        op: &str,
        inputs: &[TensorType],
        params: &Attributes,
    ) -> Option<&ShippedKernel> {
        self.kernels.iter().find(|k| k.is_for(op, inputs, params))
    }

    /// This model with a shipped kernel for each of its kernel instances: the ones it has
    /// (edited or not), then the linked op's kernel traced for every other instance, in node
    /// order. What an export writes. Instances of ops that are not linked, have no kernel or
    /// whose kernel does not trace for the instance ship nothing (compiling for a kernel
    /// target reports the trace error).
    #[must_use]
    pub fn with_traced_kernels(&self) -> Model {
        let mut model = self.clone();
        model.kernels = self.traced_kernels();
        model
    }

    /// The kernels of [`with_traced_kernels`](Model::with_traced_kernels), without a copy
    /// of the model (and of its weights): what a save and an export write.
    pub fn traced_kernels(&self) -> Vec<ShippedKernel> {
        let mut kernels = self.kernels.clone();
        let mut seen: BTreeSet<String> = BTreeSet::new();
        for node in &self.graph.nodes {
            let Ok(def) = crate::registry::find(&node.op) else {
                continue;
            };
            if def.kernel.is_none() {
                continue;
            }
            let Some(inputs) = node
                .inputs
                .iter()
                .map(|&id| self.graph.values.get(id).map(|v| v.ty.clone()))
                .collect::<Option<Vec<_>>>()
            else {
                continue;
            };
            let Ok(params) = def.full_params(&node.attrs) else {
                continue;
            };
            if kernels.iter().any(|k| k.is_for(&node.op, &inputs, &params)) {
                continue;
            }
            let key = format!("{}{inputs:?}{params:?}", node.op);
            if !seen.insert(key) {
                continue;
            }
            if let Ok(kernel) = ShippedKernel::trace(def, &inputs, &params) {
                kernels.push(kernel);
            }
        }
        kernels
    }
}
