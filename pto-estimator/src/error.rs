//! Errors of the estimator.

use std::path::PathBuf;

use pto_op::registration::DuplicateRegistration;
use pto_op::{OpError, RegistryError};

/// An error of choosing or running a performance model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EstimateError {
    /// Two registrations claim the same op, device, level and kind, and not exactly one of
    /// them is marked `override`.
    #[error(transparent)]
    Duplicate(Box<DuplicateRegistration>),
    /// The op registry is broken (two ops share a name) or an op is unknown.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// Two shape sweeps are registered for one op.
    #[error(transparent)]
    Sweep(Box<pto_op::registration::DuplicateRegistration>),
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
    /// An estimate that is not a finite time: a direct estimator or a calibration gave
    /// infinity, NaN or a negative time, or the times of a model add up beyond `f64`.
    #[error(
        "op `{op}` on `{device}`: the estimate is {seconds} seconds, not a finite time ({what})"
    )]
    NotFinite {
        /// The op (or the model, for its total).
        op: String,
        /// The device profile's name.
        device: String,
        /// The estimate.
        seconds: f64,
        /// Where it came from.
        what: String,
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
    /// A file could not be read.
    #[error("reading {}: {source}", file.display())]
    Read {
        /// The file.
        file: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A model config (`config.json`) that cannot be estimated.
    #[error("model config {config}: {message}")]
    Config {
        /// The config file.
        config: String,
        /// What is wrong, and what to do.
        message: String,
    },
    /// A serving workload (phase, batch, lengths, parallelism) that does not fit the model
    /// or the devices.
    #[error("{model}: {message}")]
    Workload {
        /// The model.
        model: String,
        /// What is wrong, and what to do.
        message: String,
    },
}
