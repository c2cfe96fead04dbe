//! Errors of the estimator.

use std::path::PathBuf;

use pto_op::{Level, OpError, RegistryError, SourceLocation};

use crate::chain::Kind;

/// An error of choosing or running a performance model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EstimateError {
    /// Two registrations claim the same op, device, level and kind, and not exactly one of
    /// them is marked `override`.
    #[error(transparent)]
    Duplicate(Box<Conflict>),
    /// The op registry is broken (two ops share a name) or an op is unknown.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// An op's shape rules reject a node of a model.
    #[error("node {node} (`{op}`): {source}")]
    Node {
        /// The node's index.
        node: usize,
        /// Its op.
        op: String,
        /// The op's error.
        source: OpError,
    },
    /// A model refers to a value it does not have.
    #[error("model `{model}`: {message}")]
    Model {
        /// The model.
        model: String,
        /// What is wrong.
        message: String,
    },
    /// A file could not be written; it is as it was.
    #[error(transparent)]
    Write(#[from] pto_op::fs::WriteError),
    /// A file's contents could not be made.
    #[error("writing {}: {source}", file.display())]
    Io {
        /// The file.
        file: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// Two registrations of one op, device, level and kind, neither of which wins.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "op `{op}` has two {level} {kind} registrations for {}: one in {first}, one in {second}; {}",
    device_words(device.as_deref()),
    if *both_override {
        "both are marked `override`, so neither wins: remove `override` from one"
    } else {
        "mark the one that should win `override`, or remove the other"
    }
)]
pub struct Conflict {
    /// The op.
    pub op: String,
    /// The device; `None` for every device.
    pub device: Option<String>,
    /// The level both are at.
    pub level: Level,
    /// Estimator or properties.
    pub kind: Kind,
    /// Where one is written (the first in source order).
    pub first: SourceLocation,
    /// Where the other is written.
    pub second: SourceLocation,
    /// Whether both are marked `override`.
    pub both_override: bool,
}

fn device_words(device: Option<&str>) -> String {
    match device {
        Some(device) => format!("device `{device}`"),
        None => "every device".to_owned(),
    }
}
