//! Models whose inputs have symbolic dims (`batch`, `seq`), kept symbolic until they compile.
//!
//! An exporter writes a dynamic axis as a named dim (`input_ids: i64[batch, seq]`) or an
//! unnamed one (`?`). Importing such a model without binding its dims gives a
//! [`SymbolicModel`]: the ONNX graph as it was exported (its initializers' data held as
//! tensors), with the declared types of its inputs and outputs. It is saved and loaded like
//! any model (the model file's version 2, see [`file`](super::file)), and
//! [`SymbolicModel::bind`] gives the [`Model`] of one binding: the import runs then, with the
//! input shapes the binding gives, so the shape computations of the graph (`Shape`,
//! `Gather`, `Range`, the targets of `Reshape`) fold for those sizes and every op's own shape
//! and dtype rules (`#[infer_shape]`) check the result. The same symbolic model binds to any
//! number of shapes.
//!
//! Why the graph is kept as ONNX rather than as a graph of `std.*` ops with symbolic sizes:
//! the import folds shape computations into the params of the ops (a Reshape's target
//! `[batch, seq, 2, 16]`, a Slice's end `seq`), which are plain numbers; they are right for
//! one binding only, so the import itself is what runs again.
//!
//! ```
//! use pto_op::model::{Dim, LoadedModel};
//! use pto_op::onnx::ImportOptions;
//! # use pto_op::onnx::proto::*;
//! # use prost::Message;
//! # let value = |name: &str| ValueInfoProto {
//! #     name: name.to_owned(),
//! #     r#type: Some(TypeProto {
//! #         tensor_type: Some(TensorTypeProto {
//! #             elem_type: 1,
//! #             shape: Some(TensorShapeProto {
//! #                 dim: vec![
//! #                     Dimension { dim_value: None, dim_param: Some("batch".to_owned()) },
//! #                     Dimension { dim_value: Some(4), dim_param: None },
//! #                 ],
//! #             }),
//! #         }),
//! #     }),
//! # };
//! # let bytes = ModelProto {
//! #     ir_version: 8,
//! #     opset_import: vec![OperatorSetIdProto { domain: String::new(), version: 17 }],
//! #     graph: Some(GraphProto {
//! #         name: "relu".to_owned(),
//! #         node: vec![NodeProto {
//! #             op_type: "Relu".to_owned(),
//! #             input: vec!["x".to_owned()],
//! #             output: vec!["y".to_owned()],
//! #             ..Default::default()
//! #         }],
//! #         input: vec![value("x")],
//! #         output: vec![value("y")],
//! #         ..Default::default()
//! #     }),
//! #     ..Default::default()
//! # }
//! # .encode_to_vec();
//! // `x: f32[batch, 4]` -> relu -> `y: f32[batch, 4]`
//! let LoadedModel::Symbolic(model) = LoadedModel::from_onnx(&bytes)? else { panic!() };
//! assert_eq!(model.inputs[0].to_string(), "x f32[batch, 4]");
//! assert_eq!(model.dims(), vec!["batch".to_owned()]);
//! let two = model.bind(&ImportOptions::default().dim("batch", 2))?;
//! let five = model.bind(&ImportOptions::default().dim("batch", 5))?;
//! assert_eq!(two.graph.values[two.graph.outputs[0]].ty.to_string(), "f32[2, 4]");
//! assert_eq!(five.graph.values[five.graph.outputs[0]].ty.to_string(), "f32[5, 4]");
//! // Unbound, or bound to what the model does not have: errors that say how to bind.
//! let err = model.bind(&ImportOptions::default()).unwrap_err().to_string();
//! assert!(err.contains("`batch`") && err.contains("--shape batch="), "{err}");
//! let err = model.bind(&ImportOptions::default().dim("seq", 8)).unwrap_err().to_string();
//! assert!(err.contains("`seq`") && err.contains("its symbolic dims: batch"), "{err}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use core::fmt;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::dtype::DType;
use crate::onnx::{ImportOptions, OnnxError};
use crate::shape::Shape;
use crate::tensor::Tensor;

use super::Model;

/// One dim of a declared input or output type.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Dim {
    /// A static size.
    Size(usize),
    /// A symbolic size by name (`batch`): every dim of that name has the same size.
    Named(String),
    /// A symbolic size without a name (`?`): bound by its input's whole shape.
    Unnamed,
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Size(size) => write!(f, "{size}"),
            Dim::Named(name) => f.write_str(name),
            Dim::Unnamed => f.write_str("?"),
        }
    }
}

/// A graph input or output as the model declares it: name, dtype and dims, some symbolic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SymbolicValue {
    /// The value's name.
    pub name: String,
    /// Its element type.
    pub dtype: DType,
    /// Its dims, outermost first.
    pub dims: Vec<Dim>,
}

impl SymbolicValue {
    /// True when no dim is symbolic.
    pub fn is_static(&self) -> bool {
        self.dims.iter().all(|d| matches!(d, Dim::Size(_)))
    }

    /// The value of a static type.
    pub fn of_shape(name: impl Into<String>, dtype: DType, shape: &Shape) -> SymbolicValue {
        SymbolicValue {
            name: name.into(),
            dtype,
            dims: shape.dims().iter().map(|&d| Dim::Size(d)).collect(),
        }
    }
}

impl fmt::Display for SymbolicValue {
    /// `input_ids i64[batch, seq]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}[", self.name, self.dtype)?;
        for (i, dim) in self.dims.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{dim}")?;
        }
        f.write_str("]")
    }
}

/// A model imported from ONNX with its symbolic dims unbound; see the
/// [module docs](self).
#[derive(Debug, Clone, PartialEq)]
pub struct SymbolicModel {
    /// The model's name.
    pub name: String,
    /// The graph inputs (those a run gives), as declared.
    pub inputs: Vec<SymbolicValue>,
    /// The graph outputs, as declared (an output declared without a type: its dtype and rank
    /// as the import infers them, each dim `?`).
    pub outputs: Vec<SymbolicValue>,
    /// The ONNX `ModelProto` (protobuf bytes) with the initializers' data taken out: their
    /// names, dtypes and dims stay, their data is in `weights`.
    pub onnx: Vec<u8>,
    /// The initializers' tensors, by initializer name.
    pub weights: BTreeMap<String, Tensor>,
}

impl SymbolicModel {
    /// The names of the symbolic dims of the inputs, in order of first appearance (unnamed
    /// dims, bound by their input's shape, are not listed).
    pub fn dims(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for input in &self.inputs {
            for dim in &input.dims {
                if let Dim::Named(name) = dim
                    && !names.contains(name)
                {
                    names.push(name.clone());
                }
            }
        }
        names
    }

    /// The model for the dims `options` binds ([`ImportOptions::dim`], or an input's whole
    /// shape with [`ImportOptions::shape`]): the import runs with those input shapes.
    ///
    /// # Errors
    ///
    /// A dim left unbound (naming the dim and its input, and how to bind it); a size that
    /// conflicts with a static dim or with another binding of the same dim (naming both); a
    /// name that is neither an input nor a symbolic dim of the model (listing its dims); an
    /// output whose declared symbolic dim does not get the size bound to that name; any
    /// error of the import itself for these shapes.
    pub fn bind(&self, options: &ImportOptions) -> Result<Model, OnnxError> {
        let model = crate::onnx::import::bind_symbolic(
            &self.onnx,
            |name| self.weights.get(name).cloned(),
            options,
        )?;
        check_outputs(&self.inputs, &self.outputs, &model, options)?;
        Ok(model)
    }

    /// [`bind`](SymbolicModel::bind), moving the weights into the model instead of copying
    /// them: memory holds them once (what the command line does with a model it has just
    /// loaded).
    ///
    /// # Errors
    ///
    /// As [`bind`](SymbolicModel::bind).
    pub fn into_bound(self, options: &ImportOptions) -> Result<Model, OnnxError> {
        // The checks of the bindings first, so that an error leaves nothing half moved.
        crate::onnx::import::bound_shapes(&self.inputs, options)?;
        let SymbolicModel {
            inputs,
            outputs,
            onnx,
            mut weights,
            ..
        } = self;
        let model = crate::onnx::import::bind_symbolic(&onnx, |n| weights.remove(n), options)?;
        check_outputs(&inputs, &outputs, &model, options)?;
        Ok(model)
    }
}

/// Each dim of `outputs` declared with the name of a dim of `inputs` has the size `options`
/// bind to it in `model`.
fn check_outputs(
    inputs: &[SymbolicValue],
    outputs: &[SymbolicValue],
    model: &Model,
    options: &ImportOptions,
) -> Result<(), OnnxError> {
    let shapes = crate::onnx::import::bound_shapes(inputs, options)?;
    let mut sizes: BTreeMap<&str, usize> = BTreeMap::new();
    for input in inputs {
        if let Some(shape) = shapes.get(&input.name) {
            for (dim, &size) in input.dims.iter().zip(shape.dims()) {
                if let Dim::Named(name) = dim {
                    sizes.insert(name, size);
                }
            }
        }
    }
    let graph = &model.graph;
    for (declared, &id) in outputs.iter().zip(&graph.outputs) {
        let actual = &graph.values[id].ty.shape;
        for (axis, (dim, &size)) in declared.dims.iter().zip(actual.dims()).enumerate() {
            if let Dim::Named(name) = dim
                && let Some(&bound) = sizes.get(name.as_str())
                && bound != size
            {
                return Err(OnnxError::Value {
                    value: declared.name.clone(),
                    problem: format!(
                        "the output is declared {declared}, so its dimension {axis} is \
                             `{name}` = {bound}, but its op infers {actual}"
                    ),
                });
            }
        }
    }
    Ok(())
}

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
                    crate::onnx::import::bound_shapes(&inputs, options)?;
                }
                Ok(model)
            }
        }
    }
}
