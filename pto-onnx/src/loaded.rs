//! What a model file or an ONNX file holds: a [`Model`], or a model whose symbolic dims are
//! bound later ([`SymbolicModel`]); and an ONNX model read as it is, checked by importing it
//! once with every symbolic dim bound to 1.

use std::collections::BTreeMap;
use std::io::{Read, Seek};
use std::path::Path;

use prost::Message;
use pto_op::Model;
use pto_op::model::{Dim, SymbolicValue};
use pto_op::shape::Shape;

use crate::error::OnnxError;
use crate::import::{
    ImportOptions, bound_shapes, build, build_keeping_constants, declared_inputs, declared_outputs,
    read_source, symbolic_dims_text,
};
use crate::symbolic::SymbolicModel;

/// What a model file or an ONNX file holds: a model, or a model whose symbolic dims are
/// bound later ([`SymbolicModel::bind`]).
#[derive(Debug, Clone, PartialEq)]
pub enum LoadedModel {
    /// A model with static shapes, ready to compile.
    Static(Model),
    /// A model with symbolic dims.
    Symbolic(SymbolicModel),
}

impl LoadedModel {
    /// The model's name.
    pub fn name(&self) -> &str {
        match self {
            LoadedModel::Static(model) => &model.name,
            LoadedModel::Symbolic(model) => &model.name,
        }
    }

    /// The model for the bindings of `options`: a symbolic model bound
    /// ([`SymbolicModel::into_bound`], its weights moved, not copied); a static model as it
    /// is, when `options` agree with its input shapes.
    ///
    /// # Errors
    ///
    /// As [`SymbolicModel::bind`]; for a static model, a binding of a dim it does not have
    /// or of an input shape it does not have.
    pub fn bind(self, options: &ImportOptions) -> Result<Model, OnnxError> {
        match self {
            LoadedModel::Symbolic(model) => model.into_bound(options),
            LoadedModel::Static(model) => {
                if !options.shapes.is_empty() || !options.dims.is_empty() {
                    let g = &model.graph;
                    let inputs: Vec<SymbolicValue> = g
                        .inputs
                        .iter()
                        .map(|&id| {
                            let v = &g.values[id];
                            SymbolicValue::of_shape(v.name.clone(), v.ty.dtype, &v.ty.shape)
                        })
                        .collect();
                    bound_shapes(&inputs, options)?;
                }
                Ok(model)
            }
        }
    }
}

/// The model in the `len` bytes of `reader` (from its start) as it is: a [`Model`] when its
/// inputs are static, else a [`SymbolicModel`] (checked by importing it once with every
/// symbolic dim bound to 1). The file is read once: the probe import takes the
/// initializers' tensors and gives them back, unchanged, from its weights and its unused
/// constants.
pub(crate) fn from_reader<R: Read + Seek>(
    reader: &mut R,
    len: u64,
    dir: Option<&Path>,
) -> Result<LoadedModel, OnnxError> {
    let (mut proto, tensors) = read_source(reader, len, dir)?;
    let graph = proto
        .graph
        .as_ref()
        .ok_or_else(|| OnnxError::Model("the model has no graph".to_owned()))?;
    let inputs = declared_inputs(graph)?;
    if inputs.iter().all(SymbolicValue::is_static) {
        return Ok(LoadedModel::Static(build(
            &proto,
            tensors,
            &ImportOptions::default(),
        )?));
    }
    // The check: the graph imports for one binding (every dim 1, unnamed ones too).
    let mut probe = ImportOptions::default();
    for input in &inputs {
        let dims: Vec<usize> = input
            .dims
            .iter()
            .map(|d| match d {
                Dim::Size(size) => *size,
                Dim::Named(_) | Dim::Unnamed => 1,
            })
            .collect();
        probe.shapes.insert(input.name.clone(), Shape::new(dims));
    }
    // The probe takes the tensors and gives them back: memory holds the weights once, and
    // the file is read once.
    let (probed, mut unused) = build_keeping_constants(&proto, tensors, &probe).map_err(|e| {
        OnnxError::Model(format!(
            "the model has symbolic dims ({}); importing it with each bound to 1, to check \
             its graph before they are bound: {e}",
            symbolic_dims_text(&inputs)
        ))
    })?;
    let name = probed.name.clone();
    let outputs = declared_outputs(graph, &probed)?;
    let mut moved = probed.weights;
    // An initializer's tensor is a constant until it moves, unchanged and under its name,
    // into a weight; a constant is never replaced (`Importer::new_constant`).
    let tensors = graph
        .initializer
        .iter()
        .map(|init| {
            unused
                .remove(&init.name)
                .or_else(|| moved.remove(&init.name))
                .ok_or_else(|| OnnxError::Value {
                    value: init.name.clone(),
                    problem: "the initializer's tensor was neither a weight nor left unused by \
                              the import with every symbolic dim bound to 1"
                        .to_owned(),
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    drop((unused, moved));
    let mut weights = BTreeMap::new();
    if let Some(graph) = proto.graph.as_mut() {
        for (init, tensor) in graph.initializer.iter_mut().zip(tensors) {
            // The data lives in the tensor; the proto keeps the name, dtype and dims.
            init.raw_data = Vec::new();
            init.float_data = Vec::new();
            init.int32_data = Vec::new();
            init.int64_data = Vec::new();
            init.double_data = Vec::new();
            init.uint64_data = Vec::new();
            init.external_data = Vec::new();
            init.data_location = 0;
            weights.insert(init.name.clone(), tensor);
        }
    }
    Ok(LoadedModel::Symbolic(SymbolicModel {
        name,
        inputs,
        outputs,
        onnx: proto.encode_to_vec(),
        weights,
    }))
}
