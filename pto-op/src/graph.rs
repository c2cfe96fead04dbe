//! Graphs of op calls, built by tracing: each op's generated `apply(...)` records a node.

use std::cell::RefCell;
use std::rc::Rc;

use crate::attr::Attributes;
use crate::dtype::DType;
use crate::error::OpError;
use crate::op::{OpDef, TensorType};
use crate::schema::Fingerprint;
use crate::shape::Shape;

/// The index of a value in its graph.
pub type ValueId = usize;

/// One op call in a graph.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// The op's name.
    pub op: &'static str,
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

/// Everything recorded in a graph.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GraphData {
    /// The type and name of every value, by id.
    pub values: Vec<(Option<String>, TensorType)>,
    /// Graph inputs.
    pub inputs: Vec<ValueId>,
    /// Op calls, in trace order (a topological order).
    pub nodes: Vec<Node>,
}

/// A graph being traced. Cloning gives another handle to the same graph.
///
/// ```
/// use pto_op::{DType, Graph, Shape};
/// let g = Graph::new();
/// let x = g.input("x", Shape::from([2, 8]), DType::F32);
/// assert_eq!(x.shape(), &Shape::from([2, 8]));
/// assert_eq!(g.data().inputs, vec![x.id()]);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Graph {
    data: Rc<RefCell<GraphData>>,
}

impl Graph {
    /// An empty graph.
    pub fn new() -> Graph {
        Graph::default()
    }

    /// Adds a graph input.
    pub fn input(&self, name: impl Into<String>, shape: Shape, dtype: DType) -> Value {
        let ty = TensorType { shape, dtype };
        let mut data = self.data.borrow_mut();
        let id = data.values.len();
        data.values.push((Some(name.into()), ty.clone()));
        data.inputs.push(id);
        Value {
            graph: self.clone(),
            id,
            ty,
        }
    }

    /// A snapshot of everything recorded so far.
    pub fn data(&self) -> GraphData {
        self.data.borrow().clone()
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
        let mut data = graph.data.borrow_mut();
        let first_out = data.values.len();
        let outputs: Vec<ValueId> = (first_out..first_out + out_types.len()).collect();
        data.values
            .extend(out_types.iter().map(|t| (None, t.clone())));
        data.nodes.push(Node {
            op: op.name,
            version: op.version,
            fingerprint: op.fingerprint(),
            inputs: inputs.iter().map(|v| v.id).collect(),
            outputs: outputs.clone(),
            attrs,
        });
        drop(data);
        Ok(outputs
            .into_iter()
            .zip(out_types)
            .map(|(id, ty)| Value {
                graph: graph.clone(),
                id,
                ty,
            })
            .collect())
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
