//! Typed attribute values: how an op's params travel through graphs, model files and ONNX.

use core::fmt;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::OpError;

/// The type of a param, and of the attribute that carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttrType {
    /// `f32`
    F32,
    /// `f64`
    F64,
    /// `i32`
    I32,
    /// `i64`
    I64,
    /// `bool`
    Bool,
    /// `String`
    String,
    /// `Vec<i64>`
    I64s,
    /// `Vec<f32>`
    F32s,
}

impl AttrType {
    /// The Rust spelling of the type, as an author writes it in `params(...)`.
    pub const fn rust_name(self) -> &'static str {
        match self {
            AttrType::F32 => "f32",
            AttrType::F64 => "f64",
            AttrType::I32 => "i32",
            AttrType::I64 => "i64",
            AttrType::Bool => "bool",
            AttrType::String => "String",
            AttrType::I64s => "Vec<i64>",
            AttrType::F32s => "Vec<f32>",
        }
    }
}

impl fmt::Display for AttrType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.rust_name())
    }
}

/// One attribute value, typed.
///
/// ```
/// use pto_op::{AttrType, AttrValue};
/// let v = AttrValue::F32(0.5);
/// assert_eq!(v.ty(), AttrType::F32);
/// assert_eq!(serde_json::to_string(&v).unwrap(), r#"{"f32":0.5}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AttrValue {
    /// An `f32`.
    F32(f32),
    /// An `f64`.
    F64(f64),
    /// An `i32`.
    I32(i32),
    /// An `i64`.
    I64(i64),
    /// A `bool`.
    Bool(bool),
    /// A `String`.
    String(String),
    /// A `Vec<i64>`.
    I64s(Vec<i64>),
    /// A `Vec<f32>`.
    F32s(Vec<f32>),
}

impl AttrValue {
    /// The type of this value.
    pub fn ty(&self) -> AttrType {
        match self {
            AttrValue::F32(_) => AttrType::F32,
            AttrValue::F64(_) => AttrType::F64,
            AttrValue::I32(_) => AttrType::I32,
            AttrValue::I64(_) => AttrType::I64,
            AttrValue::Bool(_) => AttrType::Bool,
            AttrValue::String(_) => AttrType::String,
            AttrValue::I64s(_) => AttrType::I64s,
            AttrValue::F32s(_) => AttrType::F32s,
        }
    }
}

impl fmt::Display for AttrValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttrValue::F32(v) => write!(f, "{v:?}"),
            AttrValue::F64(v) => write!(f, "{v:?}"),
            AttrValue::I32(v) => write!(f, "{v}"),
            AttrValue::I64(v) => write!(f, "{v}"),
            AttrValue::Bool(v) => write!(f, "{v}"),
            AttrValue::String(v) => write!(f, "{v:?}"),
            AttrValue::I64s(v) => write!(f, "{v:?}"),
            AttrValue::F32s(v) => write!(f, "{v:?}"),
        }
    }
}

/// The attributes of one op call: param name to value, in name order.
pub type Attributes = BTreeMap<String, AttrValue>;

/// A Rust type that can be an op param.
///
/// Implemented for exactly the param types `#[custom_op]` accepts: f32, f64, i32, i64, bool,
/// String, `Vec<i64>` and `Vec<f32>`.
pub trait ParamValue: Sized + Clone {
    /// The attribute type that carries this param.
    const TYPE: AttrType;
    /// The value as an attribute.
    fn to_attr(&self) -> AttrValue;
    /// The value of an attribute of exactly this type, or `None` for any other type.
    fn from_attr(value: &AttrValue) -> Option<Self>;
}

macro_rules! param_value {
    ($($ty:ty => $variant:ident),* $(,)?) => {$(
        impl ParamValue for $ty {
            const TYPE: AttrType = AttrType::$variant;
            fn to_attr(&self) -> AttrValue {
                AttrValue::$variant(self.clone())
            }
            fn from_attr(value: &AttrValue) -> Option<Self> {
                match value {
                    AttrValue::$variant(v) => Some(v.clone()),
                    _ => None,
                }
            }
        }
    )*};
}

param_value! {
    f32 => F32,
    f64 => F64,
    i32 => I32,
    i64 => I64,
    bool => Bool,
    String => String,
    Vec<i64> => I64s,
    Vec<f32> => F32s,
}

/// The generated `Params` struct of an op: typed params, convertible to and from attributes.
///
/// `#[custom_op]` implements this for every op; conversions name the op and the param when
/// an attribute is missing, unknown or of the wrong type.
pub trait OpParams: Sized {
    /// The name of the op these params belong to.
    const OP: &'static str;
    /// Reads typed params from attributes; absent params take their declared defaults.
    fn from_attributes(attrs: &Attributes) -> Result<Self, OpError>;
    /// Every param as an attribute, defaults included.
    fn to_attributes(&self) -> Attributes;
}

/// Reads param `name` of op `op` from `attrs`, with `default` when absent.
///
/// Used by generated code; exposed so hand-written params structs behave the same.
pub fn read_param<T: ParamValue>(
    op: &str,
    attrs: &Attributes,
    name: &str,
    default: Option<fn() -> T>,
) -> Result<T, OpError> {
    match (attrs.get(name), default) {
        (Some(value), _) => T::from_attr(value).ok_or_else(|| OpError::Param {
            op: op.to_owned(),
            param: name.to_owned(),
            problem: format!(
                "expected a value of type {}, got {} value {value}",
                T::TYPE,
                value.ty()
            ),
        }),
        (None, Some(default)) => Ok(default()),
        (None, None) => Err(OpError::Param {
            op: op.to_owned(),
            param: name.to_owned(),
            problem: format!(
                "missing: it has no default, so every call must set a value of type {}",
                T::TYPE
            ),
        }),
    }
}

/// Fails on the first attribute of `attrs` that is not one of `known`.
pub fn reject_unknown_params(op: &str, attrs: &Attributes, known: &[&str]) -> Result<(), OpError> {
    match attrs.keys().find(|k| !known.contains(&k.as_str())) {
        None => Ok(()),
        Some(unknown) => Err(OpError::Param {
            op: op.to_owned(),
            param: unknown.clone(),
            problem: if known.is_empty() {
                "unknown param: this op takes no params".to_owned()
            } else {
                format!("unknown param: this op's params are {}", known.join(", "))
            },
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(pairs: &[(&str, AttrValue)]) -> Attributes {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect()
    }

    #[test]
    fn read_param_uses_value_then_default_then_fails() {
        let a = attrs(&[("eps", AttrValue::F32(0.5))]);
        assert_eq!(read_param::<f32>("o", &a, "eps", Some(|| 1.0)), Ok(0.5));
        assert_eq!(read_param::<f32>("o", &a, "k", Some(|| 1.0)), Ok(1.0));
        let missing = read_param::<i64>("demo.op", &a, "k", None).unwrap_err();
        assert_eq!(
            missing.to_string(),
            "op `demo.op`: param `k`: missing: it has no default, so every call must set a \
             value of type i64"
        );
    }

    #[test]
    fn wrong_type_names_both_types() {
        let a = attrs(&[("eps", AttrValue::I64(3))]);
        let e = read_param::<f32>("demo.op", &a, "eps", None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "op `demo.op`: param `eps`: expected a value of type f32, got i64 value 3"
        );
    }

    #[test]
    fn unknown_params_are_named_with_the_known_ones() {
        let a = attrs(&[("epsilon", AttrValue::F32(0.5))]);
        let e = reject_unknown_params("demo.op", &a, &["eps", "scale"]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "op `demo.op`: param `epsilon`: unknown param: this op's params are eps, scale"
        );
        assert!(reject_unknown_params("demo.op", &Attributes::new(), &[]).is_ok());
    }

    #[test]
    fn every_param_type_round_trips_through_its_attribute() {
        assert_eq!(f64::from_attr(&2.5f64.to_attr()), Some(2.5));
        assert_eq!(i32::from_attr(&(-3i32).to_attr()), Some(-3));
        assert_eq!(bool::from_attr(&true.to_attr()), Some(true));
        assert_eq!(
            String::from_attr(&"a".to_owned().to_attr()),
            Some("a".to_owned())
        );
        assert_eq!(
            Vec::<i64>::from_attr(&vec![1i64, 2].to_attr()),
            Some(vec![1, 2])
        );
        assert_eq!(
            Vec::<f32>::from_attr(&vec![0.5f32].to_attr()),
            Some(vec![0.5])
        );
        assert_eq!(i64::from_attr(&AttrValue::I32(1)), None);
    }
}
