//! [`CliError`]: every failure of a verb, with the error it comes from as its source.

use pto_backends::compiler::{CompileError, RunError};
use pto_backends::parity::ParityError;
use pto_op::OpError;
use pto_op::models::ModelDef;

use crate::tensor_file::TensorFileError;

/// An error of the command line. Each variant keeps the error it comes from
/// ([`std::error::Error::source`]); its message is written once, here.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    /// The arguments do not parse (or ask for help or the version).
    #[error("{0}")]
    Usage(#[from] clap::Error),
    /// `PTO_CPU_THREADS` is not a number of threads.
    #[error("PTO_CPU_THREADS is the number of CPU threads, a positive integer; got `{value}`")]
    CpuThreads {
        /// The variable's value.
        value: String,
    },
    /// `PTO_WORK_BUDGET` is not a work budget.
    #[error(
        "PTO_WORK_BUDGET is the most instructions a kernel may execute over its grid, a \
         positive integer (underscores allowed: 100_000_000_000); got `{value}`"
    )]
    WorkBudget {
        /// The variable's value.
        value: String,
    },
    /// Two built-in models share a name.
    #[error(transparent)]
    DuplicateModel(#[from] Box<pto_op::registration::DuplicateRegistration>),
    /// A MODEL argument that is a directory.
    #[error(
        "`{path}` is a directory, not a model: give a model file in it or a built-in \
         model's name"
    )]
    ModelIsDirectory {
        /// The path given.
        path: String,
    },
    /// No model file or built-in model of that name.
    #[error("no model file `{name}` and no built-in model of that name; built-in models: {known}")]
    UnknownModel {
        /// The name asked for.
        name: String,
        /// The built-in models' names.
        known: String,
    },
    /// A built-in model's builder failed.
    #[error("building model `{name}`: {source}")]
    Build {
        /// The model.
        name: String,
        /// The builder's error.
        #[source]
        source: OpError,
    },
    /// A model file could not be read or written.
    #[error(transparent)]
    ModelFile(#[from] pto_op::model::ModelFileError),
    /// An ONNX file could not be read or written.
    #[error(transparent)]
    Onnx(#[from] pto_onnx::OnnxError),
    /// `pto import` of a file that is not ONNX.
    #[error("`{path}` is not an ONNX file (`.onnx`): `pto import` reads ONNX")]
    NotOnnx {
        /// The path given.
        path: String,
    },
    /// A model with symbolic dims where a verb needs them bound (fusing it, writing it as
    /// ONNX).
    #[error(
        "model `{model}` has symbolic dims ({dims}): {verb} needs them bound; give \
         `--shape {example}`"
    )]
    Unbound {
        /// The model.
        model: String,
        /// Its symbolic dims, comma-separated.
        dims: String,
        /// What needs them bound.
        verb: String,
        /// A binding of each, `batch=<size>,seq=<size>`.
        example: String,
    },
    /// Fusing a model's std-op patterns failed.
    #[error("fusing model `{model}`: {source}")]
    Fuse {
        /// The model.
        model: String,
        /// The fusion's error.
        #[source]
        source: OpError,
    },
    /// The registry of ops is broken (two ops share a name).
    #[error(transparent)]
    Registry(#[from] pto_op::RegistryError),
    /// Compiling failed.
    #[error(transparent)]
    Compile(#[from] CompileError),
    /// Running failed.
    #[error(transparent)]
    Run(#[from] RunError),
    /// Comparing failed.
    #[error(transparent)]
    Parity(#[from] ParityError),
    /// An input file could not be read.
    #[error(transparent)]
    Inputs(#[from] TensorFileError),
    /// A model's parity check found outputs that differ; the message is the report, which
    /// says which.
    #[error("{report}")]
    ParityFailed {
        /// The parity report, as text or JSON as asked.
        report: String,
    },
    /// `pto tune` was asked for an op it cannot tune, a malformed shape, or its search
    /// failed.
    #[error("pto tune {op}: {message}")]
    Tune {
        /// The op asked for.
        op: String,
        /// What is wrong.
        message: String,
    },
    /// A case of `pto fidelity` could not be traced or simulated.
    #[error("fidelity case `{case}`: {message}")]
    Fidelity {
        /// The case.
        case: String,
        /// What failed.
        message: String,
    },
    /// A device profile could not be loaded.
    #[error(transparent)]
    Device(#[from] pto_op::DeviceError),
    /// Estimating failed.
    #[error(transparent)]
    Estimate(#[from] pto_estimator::EstimateError),
    /// A package could not be written, checked or built.
    #[cfg(feature = "device")]
    #[error(transparent)]
    Package(#[from] pto_backends::ascendc::package::PackageError),
    /// A redeploy was refused; the package is as it was.
    #[cfg(feature = "device")]
    #[error("redeploy refused, nothing changed: {0}")]
    Redeploy(#[from] Box<pto_backends::ascendc::package::RedeployError>),
    /// No SoC of that name.
    #[cfg(feature = "device")]
    #[error("no SoC `{name}`; known: {known}")]
    UnknownSoc {
        /// The name asked for.
        name: String,
        /// The SoCs known.
        known: String,
    },
    /// A report could not be printed as JSON.
    #[error("printing JSON: {0}")]
    Json(#[from] serde_json::Error),
}

impl CliError {
    /// `verb` of the symbolic model `model` needs its dims bound.
    pub(crate) fn unbound(model: &pto_onnx::SymbolicModel, verb: &str) -> CliError {
        let dims = model.dims();
        CliError::Unbound {
            model: model.name.clone(),
            dims: if dims.is_empty() {
                "unnamed".to_owned()
            } else {
                dims.join(", ")
            },
            verb: verb.to_owned(),
            example: if dims.is_empty() {
                model
                    .inputs
                    .iter()
                    .find(|i| !i.is_static())
                    .map_or_else(String::new, |i| format!("{}=<dims>", i.name))
            } else {
                dims.iter()
                    .map(|d| format!("{d}=<size>"))
                    .collect::<Vec<_>>()
                    .join(",")
            },
        }
    }

    /// The failure of the built-in model `def`'s builder.
    pub(crate) fn build(def: &ModelDef, source: OpError) -> CliError {
        CliError::Build {
            name: def.name.to_owned(),
            source,
        }
    }
}
