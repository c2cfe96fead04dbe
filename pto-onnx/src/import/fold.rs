//! Folding at import: a node of the default domain whose every input is a constant (an
//! initializer, a Constant node, or a value folded before it) is imported on its own into a
//! scratch graph by its usual handler, that graph is computed with the references of the
//! std ops it traced, and the node's outputs become constants. So the shape arithmetic
//! torch writes for dynamic shapes (`Shape -> Gather -> Unsqueeze -> Concat -> Reshape`,
//! `Expand(x, Where(Equal(shape, -1), 1, shape))`, `Range` over a dim) reaches the params
//! it feeds as numbers once every dim is known: the ONNX reference semantics of each op is
//! its std op's reference, the one every target is checked against.
//!
//! A node's inputs are known at import when each is a constant, or a small i64, i32 or bool
//! initializer (at most [`FOLD_ELEMENTS`] elements) the file also uses as data: such one is a
//! weight of the graph from the start (in initializer order, as a traced model has them),
//! and a folded node reads the importer's copy of it; the weight stays.

use std::collections::HashMap;

use pto_op::dtype::DType;
use pto_op::graph::ValueKind;
use pto_op::registry;
use pto_op::tensor::Tensor;

use super::importer::Importer;
use super::table::Handler;
use crate::error::OnnxError;
use crate::proto::NodeProto;

/// The most input elements a node folded at import reads.
pub(super) const FOLD_ELEMENTS: usize = 1 << 16;

impl Importer {
    /// Folds `node` when every input is known at import: its outputs become constants. `Ok(false)` when it is not folded (imported as usual then).
    pub(super) fn fold(
        &mut self,
        node: &NodeProto,
        label: &str,
        handler: Handler,
    ) -> Result<bool, OnnxError> {
        let given: Vec<&String> = node.input.iter().filter(|n| !n.is_empty()).collect();
        let known: Option<Vec<&Tensor>> = given.iter().map(|n| self.known(n)).collect();
        let Some(known) = known else {
            return Ok(false);
        };
        if known.is_empty() {
            return Ok(false);
        }
        let mut scratch = Importer::new(self.default_opset);
        for (name, tensor) in given.iter().zip(known) {
            scratch.constants.insert((*name).clone(), tensor.clone());
        }
        handler(&mut scratch, node, label)?;
        let computed = scratch.compute(label)?;
        for output in node.output.iter().filter(|o| !o.is_empty()) {
            let tensor = match scratch.constants.remove(output) {
                Some(tensor) => tensor,
                None => scratch
                    .values
                    .get(output)
                    .and_then(|value| computed.get(&value.id()))
                    .cloned()
                    .ok_or_else(|| {
                        OnnxError::node(
                            label,
                            format!("internal error: folding computed no value for `{output}`"),
                        )
                    })?,
            };
            self.new_constant(output, tensor)?;
        }
        Ok(true)
    }

    /// The tensor of `name` when it is known at import: a constant, or a small i64, i32 or
    /// bool initializer that became a weight (the dtypes of shape arithmetic and masks: a
    /// float or quantised weight is data, and a node of them stays a node).
    fn known(&self, name: &str) -> Option<&Tensor> {
        self.constants.get(name).or_else(|| {
            let value = self.values.get(name)?;
            let is_weight = self.graph.kind(value.id()) == Some(ValueKind::Weight);
            let tensor = self.small_weights.get(name)?;
            let shape_arithmetic = matches!(tensor.dtype(), DType::I64 | DType::I32 | DType::Bool);
            (is_weight && shape_arithmetic).then_some(tensor)
        })
    }

    /// Every value of this (scratch) importer's graph, computed: its weights, then each
    /// node's outputs by its op's reference.
    fn compute(&self, label: &str) -> Result<HashMap<usize, Tensor>, OnnxError> {
        let model = self
            .graph
            .to_model("fold")
            .map_err(|e| OnnxError::node(label, e.to_string()))?;
        let graph = &model.graph;
        let mut values: HashMap<usize, Tensor> = HashMap::new();
        for &id in &graph.weights {
            if let Some(tensor) = model.weights.get(&graph.values[id].name) {
                values.insert(id, tensor.clone());
            }
        }
        for node in &graph.nodes {
            let def =
                registry::find(&node.op).map_err(|e| OnnxError::node(label, e.to_string()))?;
            let inputs: Vec<&Tensor> = node
                .inputs
                .iter()
                .map(|id| {
                    values.get(id).ok_or_else(|| {
                        OnnxError::node(
                            label,
                            "internal error: folding met an unknown value".into(),
                        )
                    })
                })
                .collect::<Result<_, _>>()?;
            let outputs =
                def.run_reference(&inputs, &node.attrs)
                    .map_err(|source| OnnxError::Op {
                        node: label.to_owned(),
                        source,
                    })?;
            values.extend(node.outputs.iter().copied().zip(outputs));
        }
        Ok(values)
    }
}
