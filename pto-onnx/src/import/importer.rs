//! The importer's state while it imports one graph: the graph being traced, the ONNX names
//! of its values, the constants (initializers not yet used as data, Constant nodes, folded
//! values), and the calls every node handler makes (define a value, take an input as data
//! or as a constant, trace an op).

use std::collections::{HashMap, HashSet};

use pto_op::attr::{AttrValue, Attributes};
use pto_op::dtype::DType;
use pto_op::graph::{Graph, Value, ValueId};
use pto_op::op::OpDef;
use pto_op::ops;
use pto_op::registry;
use pto_op::tensor::Tensor;

use crate::error::OnnxError;
use crate::proto::NodeProto;

/// One graph being imported.
pub(super) struct Importer {
    /// The graph being traced.
    pub(super) graph: Graph,
    /// Values of the graph being built, by ONNX name.
    pub(super) values: HashMap<String, Value>,
    /// Constant tensors (initializers not yet used as data, Constant nodes), by name.
    pub(super) constants: HashMap<String, Tensor>,
    /// The opset the model imports of the default domain, if any.
    pub(super) default_opset: Option<i64>,
    /// Values that have taken an ONNX name.
    pub(super) named: HashSet<ValueId>,
    /// Copies of the small initializers that became weights (at most
    /// [`FOLD_ELEMENTS`](super::fold::FOLD_ELEMENTS) elements), by name: what a node folded
    /// at import reads of them (`fold.rs`).
    pub(super) small_weights: HashMap<String, Tensor>,
}

impl Importer {
    /// An importer of a model that imports `default_opset` of the default domain.
    pub(super) fn new(default_opset: Option<i64>) -> Importer {
        Importer {
            graph: Graph::new(),
            values: HashMap::new(),
            constants: HashMap::new(),
            default_opset,
            named: HashSet::new(),
            small_weights: HashMap::new(),
        }
    }

    /// Records constant `name`; a name already taken is refused, so a constant never
    /// replaces another. An initializer's tensor thus stays the file's until it moves,
    /// unchanged and under its name, into a weight ([`Importer::data_value`]): what
    /// `loaded.rs`'s `from_reader` relies on to take the tensors back after its probe.
    pub(super) fn new_constant(&mut self, name: &str, tensor: Tensor) -> Result<(), OnnxError> {
        if self.values.contains_key(name) || self.constants.contains_key(name) {
            return Err(OnnxError::Value {
                value: name.to_owned(),
                problem: "defined twice; ONNX values are assigned once".to_owned(),
            });
        }
        self.constants.insert(name.to_owned(), tensor);
        Ok(())
    }

    /// Records `value` under its ONNX name, which it takes in the graph too (so that a
    /// model's `logits` output stays `logits`).
    pub(super) fn define(&mut self, name: &str, value: Value) -> Result<(), OnnxError> {
        if name.is_empty() {
            return Err(OnnxError::Value {
                value: String::new(),
                problem: "a value defined with an empty name; ONNX names every value it defines"
                    .to_owned(),
            });
        }
        if self.values.contains_key(name) || self.constants.contains_key(name) {
            return Err(OnnxError::Value {
                value: name.to_owned(),
                problem: "defined twice; ONNX values are assigned once".to_owned(),
            });
        }
        // A value the importer made without an ONNX name (an intermediate of a node lowered
        // to several ops, named `n{k}.y` or `{output}.part{k}`) gives way to an ONNX name.
        if let Some(holder) = self.graph.value_named(name)
            && holder != value.id()
            && !self.named.contains(&holder)
        {
            let fresh = self.graph.fresh_name(&format!("{name}.part"));
            self.graph
                .rename(holder, &fresh)
                .map_err(|e| OnnxError::Value {
                    value: name.to_owned(),
                    problem: e.to_string(),
                })?;
        }
        // A value already named (an alias such as Identity's output) keeps its first name.
        if self.named.insert(value.id()) {
            self.graph
                .rename(value.id(), name)
                .map_err(|e| OnnxError::Value {
                    value: name.to_owned(),
                    problem: e.to_string(),
                })?;
        }
        self.values.insert(name.to_owned(), value);
        Ok(())
    }

    /// The value named `name` as a data input: a defined value, or a constant that becomes
    /// a weight at its first use.
    pub(super) fn data_value(&mut self, name: &str) -> Result<Value, OnnxError> {
        if let Some(value) = self.values.get(name) {
            return Ok(value.clone());
        }
        let Some(tensor) = self.constants.remove(name) else {
            // ONNX writes an omitted optional input as an empty name.
            let problem = if name.is_empty() {
                "the node leaves out an input the op needs"
            } else {
                "used before it is defined (nodes must be in a topological order)"
            };
            return Err(OnnxError::Value {
                value: name.to_owned(),
                problem: problem.to_owned(),
            });
        };
        let value = self
            .graph
            .weight(name, tensor)
            .map_err(|e| OnnxError::Value {
                value: name.to_owned(),
                problem: e.to_string(),
            })?;
        self.named.insert(value.id());
        self.values.insert(name.to_owned(), value.clone());
        Ok(value)
    }

    /// The values of a node's inputs `names` for a call of `def`: an empty name (ONNX's
    /// absent optional input) ends the list where only optional inputs of `def` follow, and
    /// is refused, naming the input and `op_type`, anywhere else.
    pub(super) fn inputs(
        &mut self,
        names: &[String],
        def: &OpDef,
        op_type: &str,
        label: &str,
    ) -> Result<Vec<Value>, OnnxError> {
        let node_error = |problem: String| OnnxError::Node {
            node: label.to_owned(),
            problem,
        };
        // ONNX leaves out an optional input with an empty name, or by ending the list early.
        let given = names
            .iter()
            .rposition(|n| !n.is_empty())
            .map_or(0, |i| i + 1);
        let absent = names.iter().position(String::is_empty);
        if let Some(gap) = absent.filter(|&i| i < given || !def.is_optional_input(i)) {
            let input = def.inputs.get(gap).copied().unwrap_or("?");
            return Err(node_error(match def.is_optional_input(gap) {
                true => format!(
                    "`{}` leaves out optional input `{input}` (an empty name) but gives an \
                     input after it; pto-op represents only a trailing run of left-out \
                     optional inputs",
                    def.name
                ),
                false => format!(
                    "input {gap} has an empty name (an absent optional input), which \
                     `{op_type}` does not take: `{}` input `{input}` is required",
                    def.name
                ),
            }));
        }
        let names = &names[..given];
        def.check_input_count(names.len()).map_err(|_| {
            node_error(format!(
                "`{}` takes {} input(s) ({}), the node has {}",
                def.name,
                def.input_count_text(),
                def.input_list(),
                names.len()
            ))
        })?;
        names.iter().map(|n| self.data_value(n)).collect()
    }

    /// Records a call of `def` and names its outputs `outputs` (trailing empty names are
    /// omitted optional outputs).
    pub(super) fn call(
        &mut self,
        def: &'static OpDef,
        inputs: &[Value],
        attrs: Attributes,
        outputs: &[String],
        label: &str,
    ) -> Result<(), OnnxError> {
        let results = self.trace(def, inputs, attrs, label)?;
        if outputs.len() < results.len() || outputs[results.len()..].iter().any(|n| !n.is_empty()) {
            return Err(OnnxError::Node {
                node: label.to_owned(),
                problem: format!(
                    "`{}` has {} output(s) ({}), the node names {}",
                    def.name,
                    results.len(),
                    def.outputs.join(", "),
                    outputs.len()
                ),
            });
        }
        for (name, value) in outputs.iter().zip(results) {
            self.define(name, value)?;
        }
        Ok(())
    }

    pub(super) fn trace(
        &self,
        def: &'static OpDef,
        inputs: &[Value],
        attrs: Attributes,
        label: &str,
    ) -> Result<Vec<Value>, OnnxError> {
        let refs: Vec<&Value> = inputs.iter().collect();
        Graph::trace(def, &refs, attrs).map_err(|source| OnnxError::Op {
            node: label.to_owned(),
            source,
        })
    }

    /// One call of `op` with `inputs` and `attrs`, its single output.
    pub(super) fn one(
        &self,
        op: &str,
        inputs: &[Value],
        attrs: Attributes,
        label: &str,
    ) -> Result<Value, OnnxError> {
        let def = registry::find(op).map_err(|e| OnnxError::node(label, e.to_string()))?;
        let outputs = self.trace(def, inputs, attrs, label)?;
        outputs
            .into_iter()
            .next()
            .ok_or_else(|| OnnxError::node(label, format!("`{op}` has no output")))
    }

    /// `x` reshaped to `dims` (`x` itself when it has them).
    pub(super) fn reshape(
        &self,
        x: &Value,
        dims: &[usize],
        label: &str,
    ) -> Result<Value, OnnxError> {
        if x.shape().dims() == dims {
            return Ok(x.clone());
        }
        let mut attrs = Attributes::new();
        attrs.insert("shape".into(), AttrValue::I64s(shape_i64(dims)));
        self.one(ops::reshape::NAME, std::slice::from_ref(x), attrs, label)
    }

    /// The constant input `index` as a list of i64, or an error naming it.
    pub(super) fn constant_ints(
        &self,
        node: &NodeProto,
        index: usize,
        label: &str,
    ) -> Result<Vec<i64>, OnnxError> {
        let name = node
            .input
            .get(index)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| {
                OnnxError::node(label, format!("{} needs input #{index}", node.op_type))
            })?;
        let tensor = self.constants.get(name).ok_or_else(|| {
            OnnxError::node(
                label,
                format!(
                    "input #{index} `{name}` of {} must be a constant (an initializer, a \
                     Constant node, or computed from those and static shapes)",
                    node.op_type
                ),
            )
        })?;
        tensor
            .cast(DType::I64)
            .to_vec::<i64>()
            .map_err(|e| OnnxError::Value {
                value: name.clone(),
                problem: e.to_string(),
            })
    }

    /// True when every input of `node` is a constant (omitted ones aside), and it has one.
    pub(super) fn all_constant(&self, node: &NodeProto) -> bool {
        !node.input.is_empty()
            && node
                .input
                .iter()
                .all(|n| n.is_empty() || self.constants.contains_key(n))
    }

    /// Records `folded`, the value of `node` computed at import, as the constant of its one
    /// output.
    pub(super) fn define_folded(
        &mut self,
        node: &NodeProto,
        label: &str,
        folded: Tensor,
    ) -> Result<(), OnnxError> {
        let [output] = node.output.as_slice() else {
            return Err(OnnxError::node(
                label,
                format!(
                    "{} has one output, the node names {}",
                    node.op_type,
                    node.output.len()
                ),
            ));
        };
        self.new_constant(output, folded)
    }
}

/// `dims` as ONNX writes a shape.
pub(super) fn shape_i64(dims: &[usize]) -> Vec<i64> {
    dims.iter().map(|&d| d as i64).collect()
}

/// The 1-D i64 tensor of `values`.
pub(super) fn i64_tensor(values: Vec<i64>) -> Tensor {
    let n = values.len();
    Tensor::from_vec([n], values).expect("a 1-D tensor of its own length")
}
