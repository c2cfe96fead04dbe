//! Compatibility of a model with the ops linked into the program: how an op's signature
//! changed between the schema a model recorded and the op that is linked now.

use core::fmt;

use pto_op::schema::{OpSchema, TensorSchema};

/// One difference between the schema a model recorded (old) and the linked op's (new).
///
/// ```
/// use pto_backends::compat::SchemaChange;
/// use pto_op::AttrType;
/// let change = SchemaChange::ParamRetyped { name: "eps".into(), was: AttrType::F32, now: AttrType::F64 };
/// assert_eq!(change.to_string(), "param `eps` was f32, is now f64");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum SchemaChange {
    /// The description's version changed.
    Version {
        /// The recorded version.
        was: u32,
        /// The linked version.
        now: u32,
    },
    /// A param exists now that the model did not know.
    ParamAdded {
        /// Its name.
        name: String,
        /// Its type.
        ty: pto_op::AttrType,
    },
    /// A param the model knew is gone.
    ParamRemoved {
        /// Its name.
        name: String,
        /// Its recorded type.
        ty: pto_op::AttrType,
    },
    /// A param changed type.
    ParamRetyped {
        /// Its name.
        name: String,
        /// The recorded type.
        was: pto_op::AttrType,
        /// The linked type.
        now: pto_op::AttrType,
    },
    /// An input or output at one position has another name.
    Renamed {
        /// `input` or `output`.
        kind: &'static str,
        /// Its position.
        index: usize,
        /// The recorded name.
        was: String,
        /// The linked name.
        now: String,
    },
    /// An input or output exists now that the model did not have.
    Added {
        /// `input` or `output`.
        kind: &'static str,
        /// Its name.
        name: String,
    },
    /// An input or output the model had is gone.
    Removed {
        /// `input` or `output`.
        kind: &'static str,
        /// Its name.
        name: String,
    },
}

impl fmt::Display for SchemaChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchemaChange::Version { was, now } => write!(f, "version was {was}, is now {now}"),
            SchemaChange::ParamAdded { name, ty } => write!(f, "param `{name}: {ty}` was added"),
            SchemaChange::ParamRemoved { name, ty } => {
                write!(f, "param `{name}: {ty}` was removed")
            }
            SchemaChange::ParamRetyped { name, was, now } => {
                write!(f, "param `{name}` was {was}, is now {now}")
            }
            SchemaChange::Renamed {
                kind,
                index,
                was,
                now,
            } => write!(f, "{kind} {index} was `{was}`, is now `{now}`"),
            SchemaChange::Added { kind, name } => write!(f, "{kind} `{name}` was added"),
            SchemaChange::Removed { kind, name } => write!(f, "{kind} `{name}` was removed"),
        }
    }
}

/// Every difference in signature from `recorded` (what a model holds) to `linked` (what
/// the program has now), in a stable order: version, inputs, outputs, params. Docs,
/// defaults, tolerances and which optional functions exist are not part of a signature.
///
/// ```
/// use pto_backends::compat::schema_changes;
/// use pto_op::schema::{OpSchema, TensorSchema};
/// let old: OpSchema = serde_json::from_str(r#"{"name":"a.b","version":1,"doc":"",
///   "inputs":[{"name":"x"}],"outputs":[{"name":"y"}],"params":[],
///   "implements":{"kernel":false,"estimator":false,"properties":false},
///   "fingerprint":"00000000000000ff"}"#).unwrap();
/// let mut new = old.clone();
/// new.inputs.push(TensorSchema::named("mask"));
/// let changes: Vec<String> = schema_changes(&old, &new).iter().map(|c| c.to_string()).collect();
/// assert_eq!(changes, ["input `mask` was added"]);
/// ```
pub fn schema_changes(recorded: &OpSchema, linked: &OpSchema) -> Vec<SchemaChange> {
    let mut changes = Vec::new();
    if recorded.version != linked.version {
        changes.push(SchemaChange::Version {
            was: recorded.version,
            now: linked.version,
        });
    }
    tensor_changes("input", &recorded.inputs, &linked.inputs, &mut changes);
    tensor_changes("output", &recorded.outputs, &linked.outputs, &mut changes);
    for old in &recorded.params {
        match linked.params.iter().find(|p| p.name == old.name) {
            None => changes.push(SchemaChange::ParamRemoved {
                name: old.name.clone(),
                ty: old.ty,
            }),
            Some(new) if new.ty != old.ty => changes.push(SchemaChange::ParamRetyped {
                name: old.name.clone(),
                was: old.ty,
                now: new.ty,
            }),
            Some(_) => {}
        }
    }
    for new in &linked.params {
        if !recorded.params.iter().any(|p| p.name == new.name) {
            changes.push(SchemaChange::ParamAdded {
                name: new.name.clone(),
                ty: new.ty,
            });
        }
    }
    changes
}

/// Inputs and outputs are positional: a different name at one position is a rename, extra
/// positions are additions or removals.
fn tensor_changes(
    kind: &'static str,
    recorded: &[TensorSchema],
    linked: &[TensorSchema],
    changes: &mut Vec<SchemaChange>,
) {
    for (index, (old, new)) in recorded.iter().zip(linked).enumerate() {
        if old.name != new.name {
            changes.push(SchemaChange::Renamed {
                kind,
                index,
                was: old.name.clone(),
                now: new.name.clone(),
            });
        }
    }
    for old in recorded.iter().skip(linked.len()) {
        changes.push(SchemaChange::Removed {
            kind,
            name: old.name.clone(),
        });
    }
    for new in linked.iter().skip(recorded.len()) {
        changes.push(SchemaChange::Added {
            kind,
            name: new.name.clone(),
        });
    }
}
