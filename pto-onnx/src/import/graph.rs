//! Importing one ONNX graph: its initializers as constants, its inputs (their shapes bound),
//! the initializers used as data as weights, each node by its domain (a custom op, or the
//! table of ONNX op handlers), and its outputs checked against their declared types.

use std::collections::HashSet;

use pto_op::attr::{AttrValue, Attributes};
use pto_op::graph::ValueKind;
use pto_op::model::SymbolicValue;
use pto_op::op::TensorType;
use pto_op::ops;
use pto_op::tensor::Tensor;

use super::binding::bound_shapes;
use super::declared::{declared_type, output_type, value_dtype};
use super::fold::FOLD_ELEMENTS;
use super::importer::{Importer, shape_i64};
use super::options::ImportOptions;
use super::std_op::{NO_STANDARD_OP, unknown};
use super::table::{self, param_inputs};
use super::tensor::dims;
use crate::error::{OnnxError, node_label};
use crate::proto::{GraphProto, NodeProto};

impl Importer {
    /// Imports `graph`, whose initializers' tensors are `tensors`, in order.
    pub(super) fn import(
        &mut self,
        graph: &GraphProto,
        tensors: Vec<Tensor>,
        options: &ImportOptions,
    ) -> Result<(), OnnxError> {
        for (init, tensor) in graph.initializer.iter().zip(tensors) {
            if self.constants.insert(init.name.clone(), tensor).is_some() {
                return Err(OnnxError::Value {
                    value: init.name.clone(),
                    problem: "two initializers have this name".to_owned(),
                });
            }
        }
        let declared: Vec<SymbolicValue> = graph
            .input
            .iter()
            .filter(|input| !self.constants.contains_key(&input.name))
            .map(declared_type)
            .collect::<Result<_, _>>()?;
        // An input bound to a constant binds its dims with the constant's shape.
        let mut binding = options.clone();
        for (name, value) in &options.constants {
            binding
                .shapes
                .entry(name.clone())
                .or_insert_with(|| value.shape());
        }
        let shapes = bound_shapes(&declared, &binding)?;
        for input in &graph.input {
            // Before IR 4, initializers were also listed as inputs.
            if self.constants.contains_key(&input.name) {
                continue;
            }
            let Some(shape) = shapes.get(&input.name).cloned() else {
                continue;
            };
            let ty = TensorType {
                shape: dims(shape.dims().iter().map(|&d| i64::try_from(d).ok())).map_err(
                    |problem| OnnxError::Value {
                        value: input.name.clone(),
                        problem,
                    },
                )?,
                dtype: value_dtype(input)?,
            };
            if let Some(value) = options.constants.get(&input.name) {
                // A value of another dtype is cast to the declared one where that loses
                // nothing (`--constant axes=[0,1]` is i64 for an i32 input).
                let cast = value.cast(ty.dtype);
                let value = match value.shape() == ty.shape && cast.cast(value.dtype()) == *value {
                    true => &cast,
                    false => value,
                };
                if value.tensor_type() != ty {
                    return Err(OnnxError::Value {
                        value: input.name.clone(),
                        problem: format!(
                            "the input is declared {ty}, but the value bound to it is {}",
                            value.tensor_type()
                        ),
                    });
                }
                self.constants.insert(input.name.clone(), value.clone());
                continue;
            }
            let value = self.graph.input(input.name.clone(), ty.shape, ty.dtype);
            self.define(&input.name, value)?;
        }
        // Weights in initializer order, before the nodes, as a traced model has them.
        let data_uses = data_uses(graph);
        let bound = graph
            .input
            .iter()
            .map(|i| &i.name)
            .filter(|n| options.constants.contains_key(n.as_str()));
        for name in graph.initializer.iter().map(|i| &i.name).chain(bound) {
            if data_uses.contains(name.as_str()) && !self.values.contains_key(name) {
                if let Some(tensor) = self.constants.get(name)
                    && tensor.shape().numel() <= FOLD_ELEMENTS
                {
                    self.small_weights.insert(name.clone(), tensor.clone());
                }
                self.data_value(name)?;
            }
        }
        for (index, node) in graph.node.iter().enumerate() {
            let first = self.graph.node_count();
            self.node(index, node)?;
            // `n{index}` is the name export gives a node that has none: not a name.
            if !node.name.is_empty() && node.name != format!("n{index}") {
                for traced in first..self.graph.node_count() {
                    self.graph.name_node(traced, &node.name);
                }
            }
        }
        for output in &graph.output {
            if !self.values.contains_key(&output.name) && !self.constants.contains_key(&output.name)
            {
                return Err(OnnxError::Value {
                    value: output.name.clone(),
                    problem: "a graph output that no node produces, and no graph input or \
                              initializer"
                        .to_owned(),
                });
            }
            let value = self.data_value(&output.name)?;
            if output.r#type.is_some() {
                // Symbolic dims of an output take the size the ops infer.
                let declared = output_type(output, value.shape())?;
                if &declared != value.ty() {
                    return Err(OnnxError::Value {
                        value: output.name.clone(),
                        problem: format!(
                            "the graph output is declared {declared}, but its op infers {}",
                            value.ty()
                        ),
                    });
                }
            }
            // An output that is a graph input or a weight under another name (Identity of
            // it, a Concat or Max of it alone) is a copy of it, so that it keeps its own
            // name: a value has one name.
            let value = match self.graph.kind(value.id()) {
                Some(ValueKind::Input | ValueKind::Weight)
                    if self.graph.value_named(&output.name) != Some(value.id()) =>
                {
                    let attrs = Attributes::from([(
                        "shape".to_owned(),
                        AttrValue::I64s(shape_i64(value.shape().dims())),
                    )]);
                    let label = format!("graph output `{}`", output.name);
                    self.one(ops::reshape::NAME, &[value], attrs, &label)?
                }
                _ => value,
            };
            // An output that aliases a node's value (through Identity) names it: the model's
            // `logits` stays `logits`.
            if self.graph.kind(value.id()) == Some(ValueKind::Node) {
                self.graph
                    .rename(value.id(), &output.name)
                    .map_err(|e| OnnxError::Value {
                        value: output.name.clone(),
                        problem: e.to_string(),
                    })?;
            }
            self.graph.output(&value);
        }
        Ok(())
    }

    /// Imports node `index`: a custom op by its domain, an ONNX operator by its line of the
    /// table of handlers.
    fn node(&mut self, index: usize, node: &NodeProto) -> Result<(), OnnxError> {
        let label = node_label(index, &node.name, &node.domain, &node.op_type);
        let default_domain = node.domain.is_empty() || node.domain == "ai.onnx";
        if !default_domain {
            return self.custom(node, &label);
        }
        match table::find(&node.op_type) {
            Some(op) => {
                if self.fold(node, &label, op.handler)? {
                    return Ok(());
                }
                (op.handler)(self, node, &label)
            }
            None => Err(unknown(node, &label, NO_STANDARD_OP.to_owned())),
        }
    }
}

/// Names used as data (not as constant params) by a node or as an output.
fn data_uses(graph: &GraphProto) -> HashSet<&str> {
    let mut uses: HashSet<&str> = graph.output.iter().map(|o| o.name.as_str()).collect();
    for node in &graph.node {
        let params = match node.domain.as_str() {
            "" | "ai.onnx" => param_inputs(&node.op_type),
            _ => Vec::new(),
        };
        uses.extend(
            node.input
                .iter()
                .enumerate()
                .filter(|(i, _)| !params.contains(i))
                .map(|(_, n)| n.as_str()),
        );
    }
    uses
}
