//! Models: a graph, its weights, and the schemas of the ops it uses.
//!
//! This is the in-memory form; the model file (save/load, [`mod@file`]) reads and writes it, and
//! so do ONNX export and import (the crate pto-onnx, which also holds the models whose dims
//! stay symbolic; their inputs' declared types are [`declared`]'s).

use std::collections::BTreeMap;

use crate::error::OpError;
use crate::graph::{Graph, GraphDef, ValueKind};
use crate::registry;
use crate::schema::OpSchema;
use crate::tensor::Tensor;

pub mod declared;
pub mod file;
pub mod kernels;
mod shipped;

pub use declared::{Dim, SymbolicValue, named_dims};
pub use file::ModelFileError;
pub use kernels::{ShippedKernel, ShippedKernelError, Staleness};

/// A traced or loaded model.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    /// The model's name.
    pub name: String,
    /// The graph.
    pub graph: GraphDef,
    /// The weights, by value name.
    pub weights: BTreeMap<String, Tensor>,
    /// The schema of every op the graph uses, as it was when the model was built: what a
    /// later compile compares against the ops it links.
    pub schemas: BTreeMap<String, OpSchema>,
    /// The kernels shipped with the model, in their text form (see [`kernels`]): empty for
    /// a freshly traced model, whose exports trace them ([`Model::with_traced_kernels`]);
    /// a loaded model runs these where they match a node.
    pub kernels: Vec<ShippedKernel>,
}

impl Graph {
    /// The recorded graph as a model: graph, weights, and the schemas of every op used.
    pub fn to_model(&self, name: impl Into<String>) -> Result<Model, OpError> {
        let (def, weights) = self.parts();
        Model::new(name.into(), def, weights)
    }

    /// [`to_model`](Graph::to_model), moving the weights into the model instead of copying
    /// them when this is the graph's last handle (no [`Value`](crate::graph::Value) of it is
    /// left): how an importer hands over gigabytes of weights without holding them twice.
    pub fn into_model(self, name: impl Into<String>) -> Result<Model, OpError> {
        let (def, weights) = self.into_parts();
        Model::new(name.into(), def, weights)
    }
}

impl Model {
    /// A model of `graph` and `weights`, with the schemas of the ops it uses taken from the
    /// registry. Checks that every weight value has a tensor of its type, and back.
    pub fn new(
        name: String,
        graph: GraphDef,
        weights: BTreeMap<String, Tensor>,
    ) -> Result<Model, OpError> {
        let mut schemas = BTreeMap::new();
        for node in &graph.nodes {
            if !schemas.contains_key(&node.op) {
                let def = registry::find(&node.op).map_err(|e| OpError::invalid(e.to_string()))?;
                schemas.insert(node.op.clone(), def.schema());
            }
        }
        let model = Model {
            name,
            graph,
            weights,
            schemas,
            kernels: Vec::new(),
        };
        model.check_weights()?;
        Ok(model)
    }

    /// Checks that the weights are exactly the graph's weight values, with their types.
    pub fn check_weights(&self) -> Result<(), OpError> {
        for &id in &self.graph.weights {
            let Some(value) = self.graph.values.get(id) else {
                return Err(OpError::invalid(format!(
                    "weight value {id} does not exist"
                )));
            };
            if value.kind != ValueKind::Weight {
                return Err(OpError::invalid(format!(
                    "value `{}` is listed as a weight but is not one",
                    value.name
                )));
            }
            let Some(tensor) = self.weights.get(&value.name) else {
                return Err(OpError::invalid(format!(
                    "weight `{}` has no data",
                    value.name
                )));
            };
            if tensor.shape() != value.ty.shape || tensor.dtype() != value.ty.dtype {
                return Err(OpError::invalid(format!(
                    "weight `{}`: the graph says {}, the data is {}{}",
                    value.name,
                    value.ty,
                    tensor.dtype(),
                    tensor.shape()
                )));
            }
        }
        // A set of the weight values' names: one lookup per tensor, not a scan.
        let names: std::collections::HashSet<&str> = self
            .graph
            .weights
            .iter()
            .filter_map(|&id| self.graph.values.get(id))
            .map(|v| v.name.as_str())
            .collect();
        if let Some(extra) = self
            .weights
            .keys()
            .find(|name| !names.contains(name.as_str()))
        {
            return Err(OpError::invalid(format!(
                "weight data `{extra}` belongs to no weight of the graph"
            )));
        }
        Ok(())
    }

    /// Checks the integer exponents of `std.pow` that are weights cast to a float base's
    /// dtype (a `std.cast` node of an integer weight, as the ONNX import writes a Pow whose
    /// exponent is an integer initializer): every element must be exact in the base's dtype
    /// (every integer of magnitude up to 2^24 is in f32, up to 2048 in f16, up to 256 in
    /// bf16), so that the power is that of the integer, as ONNX Runtime computes it. The
    /// import refuses such a constant exponent the same way; the model loaders and the graph
    /// compiler run this check.
    ///
    /// ```
    /// use pto_op::ops::{cast, pow};
    /// use pto_op::{DType, Graph, Shape, Tensor};
    ///
    /// let g = Graph::new();
    /// let x = g.input("x", Shape::from([2]), DType::F16);
    /// let e = g.weight("e", Tensor::from_vec([2], vec![2i64, 2049]).unwrap()).unwrap();
    /// let to = cast::Params { to: "f16".to_owned(), saturate: true, round_mode: "up".into() };
    /// let e = cast::apply(&e, &to).unwrap();
    /// let y = pow::apply(&x, &e, &Default::default()).unwrap();
    /// g.output(&y);
    /// let model = g.to_model("m").unwrap();
    /// assert_eq!(
    ///     model.check_pow_exponents().unwrap_err().to_string(),
    ///     "op `std.pow`: input `b`: node 1: the exponent is the i64 weight `e` cast to f16, \
    ///      and its element 1, 2049, is not exact in f16 (it would be 2048); cast the base to \
    ///      f32 or f64 first"
    /// );
    /// ```
    ///
    /// # Errors
    ///
    /// [`OpError::Invalid`] naming the op, the input `b`, the node, the weight and the
    /// first inexact element with its value and what it would become.
    pub fn check_pow_exponents(&self) -> Result<(), OpError> {
        let graph = &self.graph;
        // The `std.cast` node of each value it produces: (node index, its input).
        let casts: std::collections::HashMap<usize, usize> = graph
            .nodes
            .iter()
            .filter(|n| n.op == crate::ops::cast::NAME)
            .filter_map(|n| Some((*n.outputs.first()?, *n.inputs.first()?)))
            .collect();
        for (index, node) in graph.nodes.iter().enumerate() {
            if node.op != crate::ops::pow::NAME {
                continue;
            }
            let Some(&b) = node.inputs.get(1) else {
                continue;
            };
            let Some(weight) = casts.get(&b).and_then(|&id| graph.values.get(id)) else {
                continue;
            };
            let (Some(cast), Some(tensor)) = (graph.values.get(b), self.weights.get(&weight.name))
            else {
                continue;
            };
            let to = cast.ty.dtype;
            if weight.kind != ValueKind::Weight || !tensor.dtype().is_integer() || !to.is_float() {
                continue;
            }
            if let Some((element, wanted, got)) = first_inexact(tensor, to) {
                return Err(OpError::Invalid {
                    op: Some(node.op.clone()),
                    input: Some("b".to_owned()),
                    message: format!(
                        "node {index}{}: the exponent is the {} weight `{}` cast to {to}, and \
                         its element {element}, {wanted}, is not exact in {to} (it would be \
                         {got}); cast the base to f32 or f64 first",
                        if node.name.is_empty() {
                            String::new()
                        } else {
                            format!(" (`{}`)", node.name)
                        },
                        tensor.dtype(),
                        weight.name,
                    ),
                });
            }
        }
        Ok(())
    }

    /// Bytes of all weights.
    pub fn weight_bytes(&self) -> u64 {
        self.weights
            .values()
            .map(|t| (t.numel() as u64).saturating_mul(t.dtype().size_bytes() as u64))
            .fold(0, u64::saturating_add)
    }
}

/// The first element of the integer tensor `integer` that `dtype` cannot hold exactly: its
/// index, its value and the value it would become (compared as i128: exact for every i64 and
/// u64). What [`Model::check_pow_exponents`] checks, and the ONNX import of a Pow whose
/// exponent is an integer constant.
///
/// ```
/// use pto_op::{DType, Tensor};
/// let exponents = Tensor::from_vec([3], vec![2i64, 3, 2049]).unwrap();
/// let (index, value, becomes) = pto_op::model::first_inexact(&exponents, DType::F16).unwrap();
/// assert_eq!((index, value, becomes.as_str()), (2, 2049, "2048"));
/// ```
pub fn first_inexact(integer: &Tensor, dtype: crate::DType) -> Option<(usize, i128, String)> {
    let cast = integer.cast(dtype);
    let wanted = integer_values(integer);
    let back = integer_values(&cast.cast(integer.dtype()));
    let (index, value) = wanted
        .into_iter()
        .zip(back)
        .enumerate()
        .find(|(_, (wanted, got))| wanted != got)
        .map(|(index, (wanted, _))| (index, wanted))?;
    let got = cast.to_f64_vec()[index].to_string();
    Some((index, value, got))
}

/// The elements of an integer tensor, as i128.
fn integer_values(t: &Tensor) -> Vec<i128> {
    use crate::DType;
    match t.dtype() {
        DType::U64 => t
            .to_vec::<u64>()
            .map(|v| v.into_iter().map(i128::from).collect()),
        DType::I64 => t
            .to_vec::<i64>()
            .map(|v| v.into_iter().map(i128::from).collect()),
        _ => t
            .cast(DType::I64)
            .to_vec::<i64>()
            .map(|v| v.into_iter().map(i128::from).collect()),
    }
    .unwrap_or_default()
}
