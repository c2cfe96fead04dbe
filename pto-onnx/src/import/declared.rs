//! The types an ONNX graph declares for its inputs and outputs: their dtypes, their dims
//! (some symbolic, by name), the inputs a run gives, and an output's type once its op
//! inferred it.

use std::collections::HashSet;

use pto_op::Model;
use pto_op::dtype::DType;
use pto_op::model::{Dim, SymbolicValue};
use pto_op::op::TensorType;
use pto_op::shape::Shape;
use pto_op::tensor::Tensor;

use super::tensor::{MAX_DIM, SUPPORTED, element_type_name, tensor_from_onnx};
use crate::error::OnnxError;
use crate::proto::{GraphProto, ValueInfoProto};

/// The tensor that serialized ONNX test data (a `.pb` file of the ONNX test data) holds
/// for the graph input or output `info`: like [`tensor_from_onnx`], but a value `info`
/// declares of another type than a tensor (optional, sequence: its file holds an
/// `OptionalProto` or a `SequenceProto`) is refused by name, as import refuses it.
///
/// ```
/// use pto_onnx::proto::{TypeProto, ValueInfoProto};
/// // A sequence type: a `TypeProto` without its tensor alternative.
/// let info = ValueInfoProto {
///     name: "xs".into(),
///     r#type: Some(TypeProto { tensor_type: None }),
/// };
/// let e = pto_onnx::tensor_of_value(&[], &info).unwrap_err();
/// assert!(e.to_string().contains("optional and sequence types"), "{e}");
/// ```
///
/// # Errors
///
/// Those of [`tensor_from_onnx`], and a value that is not a tensor.
pub fn tensor_of_value(bytes: &[u8], info: &ValueInfoProto) -> Result<(String, Tensor), OnnxError> {
    if info
        .r#type
        .as_ref()
        .is_some_and(|t| t.tensor_type.is_none())
    {
        return Err(OnnxError::Value {
            value: info.name.clone(),
            problem: not_a_tensor(info),
        });
    }
    tensor_from_onnx(bytes)
}

/// Why the value `info` declares is not a tensor: it has no type, or another alternative of
/// `TypeProto` than a tensor (pto-op's proto reads only the tensor one).
fn not_a_tensor(info: &ValueInfoProto) -> String {
    match &info.r#type {
        None => "has no type; pto-op needs a tensor type".to_owned(),
        Some(_) => "is not a tensor but an optional, sequence, map or sparse tensor value: \
                    optional and sequence types are not supported; pto-op's values are dense \
                    tensors"
            .to_owned(),
    }
}

/// The dtype `info` declares.
pub(super) fn value_dtype(info: &ValueInfoProto) -> Result<DType, OnnxError> {
    let tensor = info
        .r#type
        .as_ref()
        .and_then(|t| t.tensor_type.as_ref())
        .ok_or_else(|| OnnxError::Value {
            value: info.name.clone(),
            problem: not_a_tensor(info),
        })?;
    DType::from_onnx_code(tensor.elem_type).ok_or_else(|| OnnxError::Value {
        value: info.name.clone(),
        problem: format!(
            "element type {} is not one of pto-op's dtypes ({SUPPORTED})",
            element_type_name(tensor.elem_type)
        ),
    })
}

/// The type `info` declares, its symbolic dims by name.
pub(super) fn declared_type(info: &ValueInfoProto) -> Result<SymbolicValue, OnnxError> {
    let dtype = value_dtype(info)?;
    let problem = |problem: String| OnnxError::Value {
        value: info.name.clone(),
        problem,
    };
    let shape = info
        .r#type
        .as_ref()
        .and_then(|t| t.tensor_type.as_ref())
        .and_then(|t| t.shape.as_ref())
        .ok_or_else(|| {
            problem("has no shape (not even a rank); pto-op needs one for an input".to_owned())
        })?;
    let mut dims = Vec::with_capacity(shape.dim.len());
    for (axis, dim) in shape.dim.iter().enumerate() {
        dims.push(match (dim.dim_value, &dim.dim_param) {
            (Some(size), _) => Dim::Size(
                usize::try_from(size)
                    .ok()
                    .filter(|&d| d as u64 <= MAX_DIM)
                    .ok_or_else(|| {
                        problem(format!("dimension {axis} is {size}, outside 0..={MAX_DIM}"))
                    })?,
            ),
            (None, Some(name)) if !name.is_empty() => Dim::Named(name.clone()),
            (None, _) => Dim::Unnamed,
        });
    }
    Ok(SymbolicValue {
        name: info.name.clone(),
        dtype,
        dims,
    })
}

/// The graph inputs a run gives (not initializers), as declared.
pub(crate) fn declared_inputs(graph: &GraphProto) -> Result<Vec<SymbolicValue>, OnnxError> {
    let initializers: HashSet<&str> = graph.initializer.iter().map(|i| i.name.as_str()).collect();
    graph
        .input
        .iter()
        .filter(|i| !initializers.contains(i.name.as_str()))
        .map(declared_type)
        .collect()
}

/// The graph outputs as declared; one declared without a type (or shape) takes the dtype
/// and rank of `probed`'s output, its dims unnamed.
pub(crate) fn declared_outputs(
    graph: &GraphProto,
    probed: &Model,
) -> Result<Vec<SymbolicValue>, OnnxError> {
    let g = &probed.graph;
    graph
        .output
        .iter()
        .zip(&g.outputs)
        .map(|(info, &id)| match declared_type(info) {
            Ok(value) => Ok(value),
            Err(_) => {
                let ty = &g.values[id].ty;
                Ok(SymbolicValue {
                    name: info.name.clone(),
                    dtype: ty.dtype,
                    dims: vec![Dim::Unnamed; ty.shape.rank()],
                })
            }
        })
        .collect()
}

/// The type of graph output `info` for the shape `inferred` its op gives: symbolic or unknown
/// dims take the inferred size; the static ones must be declared as inferred.
pub(super) fn output_type(
    info: &ValueInfoProto,
    inferred: &Shape,
) -> Result<TensorType, OnnxError> {
    let has_shape = info
        .r#type
        .as_ref()
        .and_then(|t| t.tensor_type.as_ref())
        .is_some_and(|t| t.shape.is_some());
    if !has_shape {
        return Ok(TensorType {
            shape: inferred.clone(),
            dtype: value_dtype(info)?,
        });
    }
    let declared = declared_type(info)?;
    let problem = |problem: String| OnnxError::Value {
        value: info.name.clone(),
        problem,
    };
    if declared.dims.len() != inferred.rank() {
        return Err(problem(format!(
            "is declared with rank {} ({declared}), but its op infers {inferred}",
            declared.dims.len()
        )));
    }
    let dims = declared
        .dims
        .iter()
        .zip(inferred.dims())
        .map(|(d, &size)| match d {
            Dim::Size(declared) => *declared,
            _ => size,
        })
        .collect::<Vec<_>>();
    Ok(TensorType {
        shape: Shape::new(dims),
        dtype: declared.dtype,
    })
}
