//! `OpSchema`: the serialized description of an op, and its fingerprint.

use core::fmt;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::attr::{AttrType, AttrValue};
use crate::dtype::DType;
use crate::op::OpDef;
use crate::tolerance::Tolerance;

/// A hash of an op's signature: its name, input and output names, and param names and types,
/// in order.
///
/// A model records the fingerprint of every op it uses; an op whose signature changed since
/// (a param renamed or retyped, an input added) has a different fingerprint, so the model
/// refuses to run against it. Docs, defaults and implementations are not part of the
/// signature: changing them keeps models compatible.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct Fingerprint(pub u64);

impl Fingerprint {
    /// The fingerprint of `op`'s signature.
    pub fn of(op: &OpDef) -> Fingerprint {
        Fingerprint::of_signature(&signature_text(op))
    }

    /// The fingerprint of a canonical signature text (64-bit FNV-1a, stable across builds
    /// and platforms, unlike `std`'s hasher).
    pub fn of_signature(text: &str) -> Fingerprint {
        const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
        const PRIME: u64 = 0x0000_0100_0000_01b3;
        let hash = text
            .bytes()
            .fold(OFFSET, |h, b| (h ^ u64::from(b)).wrapping_mul(PRIME));
        Fingerprint(hash)
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl From<Fingerprint> for String {
    fn from(f: Fingerprint) -> String {
        f.to_string()
    }
}

impl TryFrom<String> for Fingerprint {
    type Error = String;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        if s.len() != 16 {
            return Err(format!("a fingerprint is 16 hex digits, got `{s}`"));
        }
        u64::from_str_radix(&s, 16)
            .map(Fingerprint)
            .map_err(|_| format!("a fingerprint is 16 hex digits, got `{s}`"))
    }
}

/// The canonical text a fingerprint hashes, e.g.
/// `demo.rms_norm(x, gamma) -> (y) params(eps: f32)`; an optional input is written `bias?`
/// (so making an input optional changes the fingerprint, and an op without optional inputs
/// keeps the fingerprint it always had).
pub fn signature_text(op: &OpDef) -> String {
    let params: Vec<String> = op
        .params
        .iter()
        .map(|p| format!("{}: {}", p.name, p.ty))
        .collect();
    format!(
        "{}({}) -> ({}) params({})",
        op.name,
        op.input_list(),
        op.outputs.join(", "),
        params.join(", ")
    )
}

/// One input or output of an op.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorSchema {
    /// Its name, from the description.
    pub name: String,
    /// An optional input (`Option<&Shape>` in the description): a call may leave it out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
}

impl TensorSchema {
    /// A required input, or an output, named `name`.
    pub fn named(name: impl Into<String>) -> TensorSchema {
        TensorSchema {
            name: name.into(),
            optional: false,
        }
    }
}

/// One param of an op.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParamSchema {
    /// Its name.
    pub name: String,
    /// Its type.
    #[serde(rename = "type")]
    pub ty: AttrType,
    /// Its default, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<AttrValue>,
}

/// What an op implements besides its required functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Implementations {
    /// Has a `#[kernel]` (runs on the simulator and on device).
    pub kernel: bool,
    /// Has a direct `#[estimator]`.
    pub estimator: bool,
    /// Has `#[properties]` for the roofline.
    pub properties: bool,
}

/// The serializable description of an op: what model files, the `pto ops --json` listing and
/// other tools read.
///
/// ```
/// # use pto_op::OpSchema;
/// let json = r#"{"name":"a.b","version":1,"doc":"","inputs":[{"name":"x"}],
///   "outputs":[{"name":"y"}],"params":[],"implements":{"kernel":false,"estimator":false,
///   "properties":false},"fingerprint":"00000000000000ff"}"#;
/// let schema: OpSchema = serde_json::from_str(json).unwrap();
/// assert_eq!(schema.fingerprint.0, 255);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpSchema {
    /// The op's name.
    pub name: String,
    /// The description's version.
    pub version: u32,
    /// The module's doc comment.
    pub doc: String,
    /// Inputs, in order.
    pub inputs: Vec<TensorSchema>,
    /// Outputs, in order.
    pub outputs: Vec<TensorSchema>,
    /// Params, in order.
    pub params: Vec<ParamSchema>,
    /// Optional functions the op provides.
    pub implements: Implementations,
    /// Tolerances the op declares for its kernel's outputs, by dtype (absent when none are
    /// declared: the defaults apply).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tolerances: BTreeMap<DType, Tolerance>,
    /// The fingerprint of the signature.
    pub fingerprint: Fingerprint,
}

impl OpDef {
    /// The serializable schema of this op.
    pub fn schema(&self) -> OpSchema {
        OpSchema::of(self)
    }

    /// The fingerprint of this op's signature (see [`Fingerprint`]).
    pub fn fingerprint(&self) -> Fingerprint {
        Fingerprint::of(self)
    }
}

impl OpSchema {
    /// The schema of `op`.
    pub fn of(op: &OpDef) -> OpSchema {
        let tensors = |names: &[&str], required: usize| {
            names
                .iter()
                .enumerate()
                .map(|(i, n)| TensorSchema {
                    name: (*n).to_owned(),
                    optional: i >= required,
                })
                .collect()
        };
        OpSchema {
            name: op.name.to_owned(),
            version: op.version,
            doc: op.doc.to_owned(),
            inputs: tensors(op.inputs, op.required_inputs),
            outputs: tensors(op.outputs, op.outputs.len()),
            params: op
                .params
                .iter()
                .map(|p| ParamSchema {
                    name: p.name.to_owned(),
                    ty: p.ty,
                    default: p.default.map(|f| f()),
                })
                .collect(),
            implements: Implementations {
                kernel: op.kernel.is_some(),
                estimator: op.estimator.is_some(),
                properties: op.properties.is_some(),
            },
            tolerances: op.tolerances.iter().copied().collect(),
            fingerprint: op.fingerprint(),
        }
    }

    /// The schema as pretty JSON, fields in a stable order.
    pub fn to_json_pretty(&self) -> String {
        serde_json::to_string_pretty(self).expect("an OpSchema holds only JSON-representable data")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_is_fnv1a_and_round_trips_as_hex() {
        // Known FNV-1a 64 vector: "a" -> af63dc4c8601ec8c.
        assert_eq!(
            Fingerprint::of_signature("a").to_string(),
            "af63dc4c8601ec8c"
        );
        let f = Fingerprint::of_signature("demo.op(x) -> (y) params()");
        let json = serde_json::to_string(&f).unwrap();
        assert_eq!(serde_json::from_str::<Fingerprint>(&json).unwrap(), f);
        assert!(serde_json::from_str::<Fingerprint>("\"xyz\"").is_err());
    }
}
