//! Graphs of op calls, built by tracing: each op's generated `apply(...)` records a node.
//!
//! A [`Graph`] is the tracing handle; [`GraphDef`] is what it records, plain serializable
//! data (the graph part of a model file); [`Model`](crate::model::Model) adds the weights
//! and the schemas of the ops used.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use crate::attr::Attributes;
use crate::dtype::DType;
use crate::error::OpError;
use crate::op::{OpDef, TensorType};
use crate::schema::Fingerprint;
use crate::shape::Shape;
use crate::tensor::Tensor;

mod liveness;
mod validate;

pub use liveness::{LiveSpan, Liveness};
pub use validate::GraphError;

/// The index of a value in its graph.
pub type ValueId = usize;

/// Where a value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ValueKind {
    /// A graph input, given at every run.
    Input,
    /// A weight: a constant tensor stored with the model.
    Weight,
    /// An output of a node.
    Node,
}

/// One value (tensor) of a graph: its unique name and type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValueDef {
    /// Unique in the graph: inputs and weights by the name given, node outputs
    /// `n{node}.{output}` (`n3.y`).
    pub name: String,
    /// Shape and dtype.
    #[serde(flatten)]
    pub ty: TensorType,
    /// Where it comes from.
    pub kind: ValueKind,
}

/// One op call in a graph.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeDef {
    /// The node's name, where it has one (an imported ONNX node's); empty for a traced one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The op's name.
    pub op: String,
    /// The op description's version when traced.
    pub version: u32,
    /// The op's signature fingerprint when traced.
    pub fingerprint: Fingerprint,
    /// Input values, in the op's input order.
    pub inputs: Vec<ValueId>,
    /// Output values, in the op's output order.
    pub outputs: Vec<ValueId>,
    /// The call's params.
    pub attrs: Attributes,
}

/// A graph as data: values, nodes in a topological order, inputs, weights and outputs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GraphDef {
    /// Every value, by id.
    pub values: Vec<ValueDef>,
    /// Graph inputs, in the order a run takes them.
    pub inputs: Vec<ValueId>,
    /// Weights, in the order they were added.
    pub weights: Vec<ValueId>,
    /// Op calls, in trace order (a topological order).
    pub nodes: Vec<NodeDef>,
    /// Graph outputs, in the order a run returns them.
    pub outputs: Vec<ValueId>,
}

impl GraphDef {
    /// The value named `name`: a scan of the values, linear in their number. Nothing in
    /// the workspace calls it (tracing and import keep maps of their own); for many lookups,
    /// map the names once (`values` is public, so the graph keeps no index that could go
    /// stale).
    pub fn value_by_name(&self, name: &str) -> Option<ValueId> {
        self.values.iter().position(|v| v.name == name)
    }
}

#[derive(Debug, Default)]
struct Recording {
    def: GraphDef,
    weights: BTreeMap<String, Tensor>,
    /// Value ids by name (the first value of each name), so that name checks do not scan
    /// every value.
    names: HashMap<String, ValueId>,
}

/// A graph being traced. Cloning gives another handle to the same graph.
///
/// ```
/// use pto_op::{DType, Graph, Shape, Tensor};
/// let g = Graph::new();
/// let x = g.input("x", Shape::from([2, 8]), DType::F32);
/// let w = g.weight("w", Tensor::zeros([8], DType::F32)).unwrap();
/// g.output(&x);
/// let def = g.def();
/// assert_eq!((def.inputs.clone(), def.weights.clone(), def.outputs.clone()), (vec![x.id()], vec![w.id()], vec![x.id()]));
/// assert_eq!(def.values[w.id()].name, "w");
/// ```
#[derive(Debug, Clone, Default)]
pub struct Graph {
    data: Rc<RefCell<Recording>>,
}

impl Graph {
    /// An empty graph.
    pub fn new() -> Graph {
        Graph::default()
    }

    fn add_value(&self, name: String, ty: TensorType, kind: ValueKind) -> Value {
        let mut data = self.data.borrow_mut();
        let id = data.def.values.len();
        data.names.entry(name.clone()).or_insert(id);
        data.def.values.push(ValueDef {
            name,
            ty: ty.clone(),
            kind,
        });
        Value {
            graph: self.clone(),
            id,
            ty,
        }
    }

    /// Adds a graph input.
    pub fn input(&self, name: impl Into<String>, shape: Shape, dtype: DType) -> Value {
        let value = self.add_value(name.into(), TensorType { shape, dtype }, ValueKind::Input);
        self.data.borrow_mut().def.inputs.push(value.id);
        value
    }

    /// Adds a weight: a constant tensor stored with the model. Names are unique.
    pub fn weight(&self, name: impl Into<String>, tensor: Tensor) -> Result<Value, OpError> {
        let name = name.into();
        if self.data.borrow().names.contains_key(&name) {
            return Err(OpError::invalid(format!(
                "the graph already has a value named `{name}`; weight names are unique"
            )));
        }
        let ty = TensorType {
            shape: tensor.shape(),
            dtype: tensor.dtype(),
        };
        let value = self.add_value(name.clone(), ty, ValueKind::Weight);
        let mut data = self.data.borrow_mut();
        data.def.weights.push(value.id);
        data.weights.insert(name, tensor);
        Ok(value)
    }

    /// Declares a weight by its type only, without data: for graphs that are estimated, not
    /// run (a 7B model's 13 GB of weights need not exist to estimate it). [`Graph::def`]
    /// has it as a weight; [`Graph::to_model`] fails, naming it, since it has no data.
    pub fn declare_weight(
        &self,
        name: impl Into<String>,
        shape: Shape,
        dtype: DType,
    ) -> Result<Value, OpError> {
        let name = name.into();
        if self.data.borrow().names.contains_key(&name) {
            return Err(OpError::invalid(format!(
                "the graph already has a value named `{name}`; weight names are unique"
            )));
        }
        let value = self.add_value(name, TensorType { shape, dtype }, ValueKind::Weight);
        self.data.borrow_mut().def.weights.push(value.id);
        Ok(value)
    }

    /// Marks `value` as a graph output (in call order). A node's output keeps the name the
    /// trace gave it, `n{node}.{output}` (`n4.values`); [`Graph::output_named`] names it.
    pub fn output(&self, value: &Value) {
        self.data.borrow_mut().def.outputs.push(value.id);
    }

    /// Marks `value` as a graph output named `name`: the name `pto run`, `--outputs`
    /// files, parity reports and an exported ONNX model give it.
    ///
    /// ```
    /// use pto_op::ops::add;
    /// use pto_op::{DType, Graph, Shape};
    /// let graph = Graph::new();
    /// let x = graph.input("x", Shape::from([4]), DType::F32);
    /// let y = add::apply(&x, &x, &add::Params {})?;
    /// graph.output_named("doubled", &y)?;
    /// let def = graph.def();
    /// assert_eq!(def.values[def.outputs[0]].name, "doubled");
    /// // An input keeps its name, and names are unique.
    /// assert!(graph.output_named("z", &x).is_err());
    /// assert!(graph.output_named("x", &y).is_err());
    /// # Ok::<(), pto_op::OpError>(())
    /// ```
    ///
    /// # Errors
    ///
    /// When another value has that name, or `value` is a graph input or a weight (which
    /// keep their own names: an input named twice would change what a run is given).
    pub fn output_named(&self, name: &str, value: &Value) -> Result<(), OpError> {
        if let Some(kind @ (ValueKind::Input | ValueKind::Weight)) = self.kind(value.id) {
            let old = self.data.borrow().def.values[value.id].name.clone();
            return Err(OpError::invalid(format!(
                "cannot name output `{old}` `{name}`: it is a graph {}, which keeps its name; \
                 mark it with `Graph::output`",
                match kind {
                    ValueKind::Input => "input",
                    _ => "weight",
                }
            )));
        }
        self.rename(value.id, name)?;
        self.output(value);
        Ok(())
    }

    /// A snapshot of the graph recorded so far.
    pub fn def(&self) -> GraphDef {
        self.data.borrow().def.clone()
    }

    /// The recorded graph and its weights, copied (for [`Graph::to_model`]).
    pub(crate) fn parts(&self) -> (GraphDef, BTreeMap<String, Tensor>) {
        let data = self.data.borrow();
        (data.def.clone(), data.weights.clone())
    }

    /// The recorded graph and its weights, moved out when this is the graph's last handle
    /// (no [`Value`] of it is left), else copied (for [`Graph::into_model`]).
    pub(crate) fn into_parts(self) -> (GraphDef, BTreeMap<String, Tensor>) {
        match Rc::try_unwrap(self.data) {
            Ok(cell) => {
                let data = cell.into_inner();
                (data.def, data.weights)
            }
            Err(data) => Graph { data }.parts(),
        }
    }

    /// Renames value `id` to `name` (an imported model's own value names).
    ///
    /// # Errors
    ///
    /// When another value has that name, or there is no value `id`.
    pub fn rename(&self, id: ValueId, name: &str) -> Result<(), OpError> {
        let mut data = self.data.borrow_mut();
        match data.names.get(name) {
            Some(&other) if other == id => return Ok(()),
            Some(&other) => {
                return Err(OpError::invalid(format!(
                    "cannot name value {id} `{name}`: value {other} has that name"
                )));
            }
            None => {}
        }
        let old = match data.def.values.get_mut(id) {
            Some(value) => std::mem::replace(&mut value.name, name.to_owned()),
            None => return Err(OpError::invalid(format!("there is no value {id}"))),
        };
        if data.names.get(&old) == Some(&id) {
            data.names.remove(&old);
        }
        data.names.insert(name.to_owned(), id);
        Ok(())
    }

    /// The kind of value `id`.
    pub fn kind(&self, id: ValueId) -> Option<ValueKind> {
        self.data.borrow().def.values.get(id).map(|v| v.kind)
    }

    /// The value named `name`, if any.
    pub fn value_named(&self, name: &str) -> Option<ValueId> {
        self.data.borrow().names.get(name).copied()
    }

    /// `base`, or `base_1`, `base_2`, ... : the first no value has.
    pub fn fresh_name(&self, base: &str) -> String {
        let data = self.data.borrow();
        let mut name = base.to_owned();
        let mut suffix = 0;
        while data.names.contains_key(&name) {
            suffix += 1;
            name = format!("{base}_{suffix}");
        }
        name
    }

    /// Names node `index` (an imported node's own name).
    pub fn name_node(&self, index: usize, name: &str) {
        if let Some(node) = self.data.borrow_mut().def.nodes.get_mut(index) {
            node.name = name.to_owned();
        }
    }

    /// The number of nodes recorded so far.
    pub fn node_count(&self) -> usize {
        self.data.borrow().def.nodes.len()
    }

    /// Records a call of `op` on `inputs`, running the op's shape and dtype rules first: a
    /// call that breaks them fails here, while the model is traced, naming the op.
    pub fn trace(
        op: &'static OpDef,
        inputs: &[&Value],
        attrs: Attributes,
    ) -> Result<Vec<Value>, OpError> {
        op.check_input_count(inputs.len())?;
        let Some(first) = inputs.first() else {
            return Err(OpError::Unsupported {
                op: op.name.to_owned(),
                message: "an op without inputs cannot be traced: there is no graph to record it in"
                    .to_owned(),
            });
        };
        let graph = first.graph.clone();
        for (name, value) in op.inputs.iter().zip(inputs) {
            if !Rc::ptr_eq(&graph.data, &value.graph.data) {
                return Err(
                    OpError::input(*name, "belongs to another graph than the first input")
                        .with_op(op.name),
                );
            }
        }
        let types: Vec<TensorType> = inputs.iter().map(|v| v.ty.clone()).collect();
        let out_types = op.infer(&types, &attrs)?;
        // Every value's size is checked once here, so that the element counts and byte
        // sizes computed from it later (buffer plans, estimates, runs) cannot overflow.
        for (name, ty) in op.outputs.iter().zip(&out_types) {
            if let Err(problem) = ty.shape.check_size(ty.dtype) {
                return Err(OpError::invalid(format!(
                    "output `{name}` would be {}{}, {problem}",
                    ty.dtype, ty.shape
                ))
                .with_op(op.name));
            }
        }
        let node_index = graph.data.borrow().def.nodes.len();
        let outputs: Vec<Value> = op
            .outputs
            .iter()
            .zip(out_types)
            .map(|(name, ty)| graph.add_value(format!("n{node_index}.{name}"), ty, ValueKind::Node))
            .collect();
        graph.data.borrow_mut().def.nodes.push(NodeDef {
            name: String::new(),
            op: op.name.to_owned(),
            version: op.version,
            fingerprint: op.fingerprint(),
            inputs: inputs.iter().map(|v| v.id).collect(),
            outputs: outputs.iter().map(|v| v.id).collect(),
            attrs,
        });
        Ok(outputs)
    }
}

/// A symbolic tensor in a graph being traced.
#[derive(Debug, Clone)]
pub struct Value {
    graph: Graph,
    id: ValueId,
    ty: TensorType,
}

impl Value {
    /// Its id in its graph.
    pub fn id(&self) -> ValueId {
        self.id
    }

    /// Its shape.
    pub fn shape(&self) -> &Shape {
        &self.ty.shape
    }

    /// Its element type.
    pub fn dtype(&self) -> DType {
        self.ty.dtype
    }

    /// Its shape and dtype.
    pub fn ty(&self) -> &TensorType {
        &self.ty
    }

    /// The graph it belongs to.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }
}
