//! Models: a graph, its weights, and the schemas of the ops it uses.
//!
//! This is the in-memory form; the model file (save/load) and ONNX export and import read
//! and write it.

use std::collections::BTreeMap;

use crate::error::OpError;
use crate::graph::{GraphDef, ValueKind};
use crate::registry;
use crate::schema::OpSchema;
use crate::tensor::Tensor;

pub mod file;
pub mod kernels;
pub mod symbolic;

pub use file::ModelFileError;
pub use kernels::{ShippedKernel, ShippedKernelError};
pub use symbolic::{Dim, LoadedModel, SymbolicModel, SymbolicValue};

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

    /// Bytes of all weights.
    pub fn weight_bytes(&self) -> u64 {
        self.weights
            .values()
            .map(|t| (t.numel() as u64).saturating_mul(t.dtype().size_bytes() as u64))
            .fold(0, u64::saturating_add)
    }
}
