//! Models whose inputs have symbolic dims (`batch`, `seq`), kept symbolic until they
//! compile: [`SymbolicModel`], bound for one binding of its dims at a time.

use std::collections::BTreeMap;

use pto_op::Model;
use pto_op::model::{Dim, SymbolicValue, named_dims};
use pto_op::tensor::Tensor;

use crate::error::OnnxError;
use crate::import::{ImportOptions, bind_symbolic, bound_shapes};

/// A model imported from ONNX whose inputs keep their symbolic dims (`batch`, `seq`) until
/// it compiles.
///
/// An exporter writes a dynamic axis as a named dim (`input_ids: i64[batch, seq]`) or an
/// unnamed one (`?`). Importing such a model without binding its dims gives a
/// [`SymbolicModel`]: the ONNX graph as it was exported (its initializers' data held as
/// tensors), with the declared types of its inputs and outputs. It is saved and loaded like
/// any model ([`SymbolicModel::save`]: the model file's version 2), and
/// [`SymbolicModel::bind`] gives the [`Model`] of one binding: the import runs then, with the
/// input shapes the binding gives, so the shape computations of the graph (`Shape`,
/// `Gather`, `Range`, the targets of `Reshape`) fold for those sizes and every op's own shape
/// and dtype rules (`#[infer_shape]`) check the result. The same symbolic model binds to any
/// number of shapes.
///
/// Why the graph is kept as ONNX rather than as a graph of `std.*` ops with symbolic sizes:
/// the import folds shape computations into the params of the ops (a Reshape's target
/// `[batch, seq, 2, 16]`, a Slice's end `seq`), which are plain numbers; they are right for
/// one binding only, so the import itself is what runs again.
///
/// ```
/// use pto_onnx::{ImportOptions, LoadedModel};
/// # use pto_onnx::proto::*;
/// # use prost::Message;
/// # let value = |name: &str| ValueInfoProto {
/// #     name: name.to_owned(),
/// #     r#type: Some(TypeProto {
/// #         tensor_type: Some(TensorTypeProto {
/// #             elem_type: 1,
/// #             shape: Some(TensorShapeProto {
/// #                 dim: vec![
/// #                     Dimension { dim_value: None, dim_param: Some("batch".to_owned()) },
/// #                     Dimension { dim_value: Some(4), dim_param: None },
/// #                 ],
/// #             }),
/// #         }),
/// #     }),
/// # };
/// # let bytes = ModelProto {
/// #     ir_version: 8,
/// #     opset_import: vec![OperatorSetIdProto { domain: String::new(), version: 17 }],
/// #     graph: Some(GraphProto {
/// #         name: "relu".to_owned(),
/// #         node: vec![NodeProto {
/// #             op_type: "Relu".to_owned(),
/// #             input: vec!["x".to_owned()],
/// #             output: vec!["y".to_owned()],
/// #             ..Default::default()
/// #         }],
/// #         input: vec![value("x")],
/// #         output: vec![value("y")],
/// #         ..Default::default()
/// #     }),
/// #     ..Default::default()
/// # }
/// # .encode_to_vec();
/// // `x: f32[batch, 4]` -> relu -> `y: f32[batch, 4]`
/// let LoadedModel::Symbolic(model) = LoadedModel::from_onnx(&bytes)? else { panic!() };
/// assert_eq!(model.inputs[0].to_string(), "x f32[batch, 4]");
/// assert_eq!(model.dims(), vec!["batch".to_owned()]);
/// let two = model.bind(&ImportOptions::default().dim("batch", 2))?;
/// let five = model.bind(&ImportOptions::default().dim("batch", 5))?;
/// assert_eq!(two.graph.values[two.graph.outputs[0]].ty.to_string(), "f32[2, 4]");
/// assert_eq!(five.graph.values[five.graph.outputs[0]].ty.to_string(), "f32[5, 4]");
/// // Unbound, or bound to what the model does not have: errors that say how to bind.
/// let err = model.bind(&ImportOptions::default()).unwrap_err().to_string();
/// assert!(err.contains("`batch`") && err.contains("--shape batch="), "{err}");
/// let err = model.bind(&ImportOptions::default().dim("seq", 8)).unwrap_err().to_string();
/// assert!(err.contains("`seq`") && err.contains("its symbolic dims: batch"), "{err}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
        named_dims(&self.inputs)
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
        let model = bind_symbolic(&self.onnx, |name| self.weights.get(name).cloned(), options)?;
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
        bound_shapes(&self.inputs, options)?;
        let SymbolicModel {
            inputs,
            outputs,
            onnx,
            mut weights,
            ..
        } = self;
        let model = bind_symbolic(&onnx, |n| weights.remove(n), options)?;
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
    let shapes = bound_shapes(inputs, options)?;
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
