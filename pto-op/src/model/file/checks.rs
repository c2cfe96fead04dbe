//! The checks of a model file's graph and weights, shared by writing and reading: the
//! graph's structure and what JSON can hold, each tensor against the weight it is, and the
//! helpers that describe a tensor or list names in the messages.

use std::collections::BTreeMap;

use safetensors::Dtype;

use super::error::ModelFileError;
use super::safetensors::METADATA_KEY;
use crate::attr::AttrValue;
use crate::dtype::DType;
use crate::graph::{GraphDef, GraphError, ValueDef};
use crate::schema::OpSchema;
use crate::shape::Shape;

/// The graph's weight values by name (after [`check_graph`], every id exists).
pub(crate) fn weight_values(graph: &GraphDef) -> BTreeMap<&str, &ValueDef> {
    graph
        .weights
        .iter()
        .filter_map(|&id| graph.values.get(id))
        .map(|value| (value.name.as_str(), value))
        .collect()
}

/// Checks that tensor `name` of dtype `dtype` and shape `shape` is a weight of the graph, of
/// the type the graph says; returns its dtype.
pub(crate) fn check_weight(
    weight_values: &BTreeMap<&str, &ValueDef>,
    name: &str,
    dtype: Result<DType, Dtype>,
    shape: &[usize],
) -> Result<DType, ModelFileError> {
    let Some(value) = weight_values.get(name) else {
        return Err(ModelFileError::ExtraWeight {
            file: None,
            tensor: name.to_owned(),
            weights: list_names(weight_values.keys().copied()),
        });
    };
    let expected = &value.ty;
    match dtype {
        Ok(dtype) if dtype == expected.dtype && shape == expected.shape.dims() => Ok(dtype),
        _ => Err(ModelFileError::WeightMismatch {
            file: None,
            weight: name.to_owned(),
            expected: describe_tensor(expected.dtype, expected.shape.dims()),
            actual: match dtype {
                Ok(dtype) => describe_tensor(dtype, shape),
                Err(other) => format!(
                    "{other}{}, a safetensors dtype pto-op does not support",
                    Shape::from(shape)
                ),
            },
        }),
    }
}

/// The first ten names, comma-separated, and how many more there are.
///
/// ```
/// use pto_op::model::file::list_names;
/// assert_eq!(list_names(["a", "b"].into_iter()), "a, b");
/// ```
pub fn list_names<'a>(names: impl ExactSizeIterator<Item = &'a str>) -> String {
    const SHOWN: usize = 10;
    let more = names.len().saturating_sub(SHOWN);
    let mut list = names.take(SHOWN).collect::<Vec<_>>().join(", ");
    if more > 0 {
        list.push_str(&format!(" and {more} more"));
    }
    list
}

/// Checks that every weight of the graph has a tensor.
pub(crate) fn check_no_missing_weight(
    weight_values: &BTreeMap<&str, &ValueDef>,
    has_tensor: impl Fn(&str) -> bool,
) -> Result<(), ModelFileError> {
    match weight_values.keys().find(|name| !has_tensor(name)) {
        Some(name) => Err(ModelFileError::MissingWeight {
            file: None,
            weight: (*name).to_owned(),
        }),
        None => Ok(()),
    }
}

/// Checks the graph: its structure ([`GraphDef::validate`]); no weight takes the name
/// safetensors reserves for the metadata; nodes use ops with a schema; float attributes are
/// finite (JSON has no NaN or infinity).
pub(crate) fn check_graph(
    graph: &GraphDef,
    schemas: &BTreeMap<String, OpSchema>,
) -> Result<(), ModelFileError> {
    graph.validate().map_err(|e| match e {
        GraphError::UnknownValue { place, id, count } => ModelFileError::UnknownValue {
            file: None,
            place,
            id,
            count,
        },
        source => ModelFileError::Graph { file: None, source },
    })?;
    if let Some(id) = graph
        .weights
        .iter()
        .copied()
        .find(|&id| graph.values.get(id).is_some_and(|v| v.name == METADATA_KEY))
    {
        return Err(ModelFileError::invalid_graph(format!(
            "weight value {id} is named `{METADATA_KEY}`, which safetensors reserves for the \
             metadata; rename the weight"
        )));
    }
    for (index, node) in graph.nodes.iter().enumerate() {
        let node_name = || format!("node {index} (`{}`)", node.op);
        if !schemas.contains_key(&node.op) {
            return Err(ModelFileError::invalid_graph(format!(
                "{} uses an op without a schema in the model",
                node_name()
            )));
        }
        for (attr, attr_value) in &node.attrs {
            let finite = match attr_value {
                AttrValue::F32(v) => v.is_finite(),
                AttrValue::F64(v) => v.is_finite(),
                AttrValue::F32s(vs) => vs.iter().all(|v| v.is_finite()),
                _ => true,
            };
            if !finite {
                return Err(ModelFileError::invalid_graph(format!(
                    "{} attribute `{attr}` = {attr_value} is not finite, and JSON cannot hold it",
                    node_name()
                )));
            }
        }
    }
    Ok(())
}

/// `f32[2, 8] (64 bytes)`, the byte count computed without overflow.
///
/// ```
/// use pto_op::DType;
/// use pto_op::model::file::describe_tensor;
/// assert_eq!(describe_tensor(DType::F32, &[2, 8]), "f32[2, 8] (64 bytes)");
/// ```
pub fn describe_tensor(dtype: DType, shape: &[usize]) -> String {
    let bytes = shape
        .iter()
        .try_fold(dtype.size_bytes(), |acc, &d| acc.checked_mul(d));
    let shape = Shape::from(shape);
    match bytes {
        Some(bytes) => format!("{dtype}{shape} ({bytes} bytes)"),
        None => format!("{dtype}{shape} (more bytes than memory can address)"),
    }
}
