//! ONNX attributes read as params: each attribute with the type its param needs, the
//! params a node must give, and the attributes the lowered operators read.

use pto_op::attr::{AttrType, AttrValue, Attributes};
use pto_op::op::OpDef;

use super::tensor::element_type_name;
use crate::error::OnnxError;
use crate::proto::{AttributeProto, AttributeType, NodeProto, TensorProto, data_type};

/// The param of type `ty` that `attr` carries, or what is wrong.
pub(super) fn param_value(attr: &AttributeProto, ty: AttrType) -> Result<AttrValue, String> {
    let expected = match ty {
        AttrType::F32 => AttributeType::Float,
        AttrType::F64 => AttributeType::Tensor,
        AttrType::I32 | AttrType::I64 | AttrType::Bool => AttributeType::Int,
        AttrType::String => AttributeType::String,
        AttrType::I64s => AttributeType::Ints,
        AttrType::F32s => AttributeType::Floats,
    };
    let actual = attr.r#type;
    // An f64 written by another tool as a FLOAT is widened: exact for what FLOAT can hold.
    let widen_f64 = ty == AttrType::F64 && actual == i32::from(AttributeType::Float);
    if actual != i32::from(expected) && !widen_f64 {
        return Err(format!(
            "expected a {} attribute (for a param of type {ty}), got {}",
            type_name(expected.into()),
            type_name(actual)
        ));
    }
    let int = attr.i.unwrap_or(0);
    Ok(match ty {
        AttrType::F32 => AttrValue::F32(attr.f.unwrap_or(0.0)),
        AttrType::F64 if widen_f64 => AttrValue::F64(f64::from(attr.f.unwrap_or(0.0))),
        AttrType::F64 => AttrValue::F64(double_scalar(attr.t.as_ref())?),
        AttrType::I32 => AttrValue::I32(
            i32::try_from(int).map_err(|_| format!("{int} does not fit the param's type i32"))?,
        ),
        AttrType::I64 => AttrValue::I64(int),
        AttrType::Bool => match int {
            0 => AttrValue::Bool(false),
            1 => AttrValue::Bool(true),
            _ => return Err(format!("a bool param is INT 0 or 1, got {int}")),
        },
        AttrType::String => AttrValue::String(
            String::from_utf8(attr.s.clone().unwrap_or_default())
                .map_err(|_| "the STRING is not UTF-8".to_owned())?,
        ),
        AttrType::I64s => AttrValue::I64s(attr.ints.clone()),
        AttrType::F32s => AttrValue::F32s(attr.floats.clone()),
    })
}

fn type_name(code: i32) -> String {
    AttributeType::try_from(code).map_or_else(
        |_| format!("type code {code}"),
        |t| format!("{t:?}").to_uppercase(),
    )
}

/// The value of a TENSOR attribute holding one DOUBLE.
fn double_scalar(tensor: Option<&TensorProto>) -> Result<f64, String> {
    let tensor = tensor.ok_or_else(|| "the TENSOR attribute holds no tensor".to_owned())?;
    if tensor.data_type != data_type::DOUBLE || tensor.dims.iter().any(|&d| d != 1) {
        return Err(format!(
            "an f64 param is a TENSOR of one DOUBLE, got {} of dims {:?}",
            element_type_name(tensor.data_type),
            tensor.dims
        ));
    }
    match (tensor.raw_data.as_slice(), tensor.double_data.as_slice()) {
        (raw, _) if raw.len() == 8 => {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(raw);
            Ok(f64::from_le_bytes(bytes))
        }
        ([], [value]) => Ok(*value),
        _ => Err("an f64 param is a TENSOR of exactly one DOUBLE".to_owned()),
    }
}

/// Fails on the first param of `def` without a default that `attrs` lacks.
pub(super) fn check_required(
    def: &OpDef,
    attrs: &Attributes,
    label: &str,
) -> Result<(), OnnxError> {
    match def
        .params
        .iter()
        .find(|p| p.default.is_none() && !attrs.contains_key(p.name))
    {
        None => Ok(()),
        Some(p) => Err(OnnxError::Attribute {
            node: label.to_owned(),
            attribute: p.name.to_owned(),
            problem: format!("missing: `{}` needs a value of type {}", def.name, p.ty),
        }),
    }
}

/// The attribute `name` of `node` read as a param of type `ty`, if present.
pub(super) fn attribute(
    node: &NodeProto,
    name: &str,
    ty: AttrType,
    label: &str,
) -> Result<Option<AttrValue>, OnnxError> {
    node.attribute
        .iter()
        .find(|a| a.name == name)
        .map(|a| {
            param_value(a, ty).map_err(|problem| OnnxError::Attribute {
                node: label.to_owned(),
                attribute: name.to_owned(),
                problem,
            })
        })
        .transpose()
}

pub(super) fn attr_i64(
    node: &NodeProto,
    name: &str,
    default: i64,
    label: &str,
) -> Result<i64, OnnxError> {
    match node.attribute.iter().find(|a| a.name == name) {
        None => Ok(default),
        Some(a) => match param_value(a, AttrType::I64) {
            Ok(AttrValue::I64(v)) => Ok(v),
            Ok(_) => Ok(default),
            Err(problem) => Err(OnnxError::Attribute {
                node: label.to_owned(),
                attribute: name.to_owned(),
                problem,
            }),
        },
    }
}

pub(super) fn attr_ints(node: &NodeProto, name: &str) -> Option<Vec<i64>> {
    node.attribute
        .iter()
        .find(|a| a.name == name)
        .map(|a| a.ints.clone())
}
