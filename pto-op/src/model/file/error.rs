//! The errors of the model file: [`ModelFileError`], each naming the file when there is one.

use core::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::dtype::DType;
use crate::graph::{GraphError, ValueId};
use crate::name::quoted;
use crate::shape::Shape;

/// An error of writing, reading or validating a model file.
///
/// Every message names the file (when there is one) and the item at fault, with the expected
/// and the actual value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModelFileError {
    /// Reading or writing the file failed.
    #[error("model file `{}`: cannot {operation}: {source}", file.display())]
    Io {
        /// The model file.
        file: PathBuf,
        /// What was being done, e.g. `read it`.
        operation: String,
        /// The error of the operating system.
        source: io::Error,
    },
    /// Saving the file failed; the file is as it was.
    #[error("model file: {0}")]
    Write(#[from] crate::fs::WriteError),
    /// The bytes are not a safetensors file, or one that does not hold a pto model.
    #[error("{}not a pto model file: {reason}", FilePrefix(file))]
    NotAModelFile {
        /// The model file, if the bytes came from one.
        file: Option<PathBuf>,
        /// Why not.
        reason: String,
    },
    /// The file is a pto model of another format version.
    #[error(
        "{}format version `{found}` is not supported: this pto-op reads versions 1 and \
         {supported} (a model with symbolic dims); load the file with the pto-op that wrote \
         it, or rebuild the model and save it with this one",
        FilePrefix(file)
    )]
    UnsupportedVersion {
        /// The model file, if the bytes came from one.
        file: Option<PathBuf>,
        /// The `format_version` in the file.
        found: String,
        /// The newest version this pto-op reads.
        supported: u32,
    },
    /// A model with symbolic dims, read where a model of static shapes is needed.
    #[error(
        "{}the model has symbolic dims ({dims}), bound when it compiles: `--shape \
         {example}` on the command line, `LoadedModel::load(..)?.bind(..)` in the API",
        FilePrefix(file)
    )]
    Symbolic {
        /// The model file, if the bytes came from one.
        file: Option<PathBuf>,
        /// The names of the symbolic dims, comma-separated.
        dims: String,
        /// A binding of each, `batch=<size>,seq=<size>`.
        example: String,
    },
    /// The file ends before what its header describes.
    #[error(
        "{}truncated: {part} ends at byte {expected}, but the file has {actual} bytes",
        FilePrefix(file)
    )]
    Truncated {
        /// The model file, if the bytes came from one.
        file: Option<PathBuf>,
        /// What is cut off: the header length, the header, or the tensor data.
        part: &'static str,
        /// The length the file needs.
        expected: usize,
        /// The length it has.
        actual: usize,
    },
    /// The safetensors structure is broken: header, offsets or tensor bytes.
    #[error("{}corrupt safetensors data: {message}", FilePrefix(file))]
    Corrupt {
        /// The model file, if the bytes came from one.
        file: Option<PathBuf>,
        /// What is broken.
        message: String,
    },
    /// The `graph` or `schemas` metadata entry is missing or is not valid JSON of its type.
    #[error("{}the `{entry}` entry of `__metadata__`: {message}", FilePrefix(file))]
    BadJson {
        /// The model file, if the bytes came from one.
        file: Option<PathBuf>,
        /// `graph` or `schemas`.
        entry: &'static str,
        /// What is wrong, with serde's message.
        message: String,
    },
    /// A weight's tensor has another dtype, shape or size than the graph says.
    #[error(
        "{}weight {}: the graph says {expected}, but its tensor is {actual}",
        FilePrefix(file),
        quoted(weight)
    )]
    WeightMismatch {
        /// The model file, if there is one.
        file: Option<PathBuf>,
        /// The weight's value name.
        weight: String,
        /// The dtype, shape and size in the graph.
        expected: String,
        /// The dtype, shape and size of the tensor.
        actual: String,
    },
    /// A weight of the graph has no tensor.
    #[error(
        "{}weight {} of the graph has no tensor",
        FilePrefix(file),
        quoted(weight)
    )]
    MissingWeight {
        /// The model file, if there is one.
        file: Option<PathBuf>,
        /// The weight's value name.
        weight: String,
    },
    /// A tensor that is not a weight of the graph.
    #[error(
        "{}tensor {} is not a weight of the graph; weights are {weights}",
        FilePrefix(file),
        quoted(tensor)
    )]
    ExtraWeight {
        /// The model file, if there is one.
        file: Option<PathBuf>,
        /// The tensor's name.
        tensor: String,
        /// The graph's weight names, comma-separated (the first ten).
        weights: String,
    },
    /// The graph refers to a value id it does not have.
    #[error(
        "{}{place} refers to value {id}, but the graph has {count} values (ids 0..{count})",
        FilePrefix(file)
    )]
    UnknownValue {
        /// The model file, if there is one.
        file: Option<PathBuf>,
        /// Where the reference is, e.g. `node 2 (`demo.rms_norm`) input 1`.
        place: String,
        /// The id it refers to.
        id: ValueId,
        /// The number of values.
        count: usize,
    },
    /// The header (graph, schemas and tensor list) is larger than safetensors allows.
    #[error(
        "{}the header (graph, schemas and tensor list) would take {bytes} bytes, more than \
         the {limit} safetensors allows; split the model",
        FilePrefix(file)
    )]
    HeaderTooLarge {
        /// The model file, if there is one.
        file: Option<PathBuf>,
        /// The header's size.
        bytes: usize,
        /// The largest header safetensors reads.
        limit: u64,
    },
    /// The graph's structure is broken
    /// ([`GraphDef::validate`](crate::graph::GraphDef::validate)): a value produced twice or
    /// read before it is produced, a kind that does not fit its use, a duplicate name.
    #[error("{}invalid graph: {source}", FilePrefix(file))]
    Graph {
        /// The model file, if there is one.
        file: Option<PathBuf>,
        /// The fault.
        source: GraphError,
    },
    /// A tensor's dtype has no safetensors dtype: the 4- and 2-bit integers (i4, u4, i2,
    /// u2). The 8-bit floats are stored as safetensors' `F8_*` dtypes, f4e2m1 as `F4`.
    #[error(
        "{}tensor `{tensor}` is {dtype}, which safetensors has no dtype for: model files and \
         safetensors outputs hold every dtype but i4, u4, i2 and u2; cast it (e.g. to i8 or \
         f16) first",
        FilePrefix(file)
    )]
    UnsupportedDType {
        /// The model file, if there is one.
        file: Option<PathBuf>,
        /// The tensor's name.
        tensor: String,
        /// Its dtype.
        dtype: DType,
    },
    /// An f4e2m1 tensor of an odd number of elements: safetensors' `F4` packs two to a byte
    /// and holds only whole bytes.
    #[error(
        "{}tensor `{tensor}` is f4e2m1{shape}, an odd number of elements: safetensors packs \
         f4e2m1 two to a byte (`F4`) and holds only whole bytes; pad it to an even number of \
         elements, or cast it (e.g. to f8e4m3fn or f16) first",
        FilePrefix(file)
    )]
    OddPackedCount {
        /// The model file, if there is one.
        file: Option<PathBuf>,
        /// The tensor's name.
        tensor: String,
        /// Its shape.
        shape: Shape,
    },
    /// The graph cannot be stored in a model file: a weight with the reserved metadata name,
    /// an op without schema, an attribute JSON cannot hold.
    #[error("{}invalid graph: {problem}", FilePrefix(file))]
    InvalidGraph {
        /// The model file, if there is one.
        file: Option<PathBuf>,
        /// What is wrong, naming the node or value.
        problem: String,
    },
}

/// `model file `path`: ` or `model file: `.
struct FilePrefix<'a>(&'a Option<PathBuf>);

impl fmt::Display for FilePrefix<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(path) => write!(f, "model file `{}`: ", path.display()),
            None => f.write_str("model file: "),
        }
    }
}

impl ModelFileError {
    /// The same error, naming `path` as the file.
    pub fn in_file(mut self, path: &Path) -> ModelFileError {
        use ModelFileError as E;
        match &mut self {
            E::Io { .. } | E::Write(_) => {}
            E::NotAModelFile { file, .. }
            | E::UnsupportedVersion { file, .. }
            | E::Symbolic { file, .. }
            | E::Truncated { file, .. }
            | E::Corrupt { file, .. }
            | E::BadJson { file, .. }
            | E::WeightMismatch { file, .. }
            | E::MissingWeight { file, .. }
            | E::ExtraWeight { file, .. }
            | E::UnknownValue { file, .. }
            | E::HeaderTooLarge { file, .. }
            | E::InvalidGraph { file, .. }
            | E::UnsupportedDType { file, .. }
            | E::OddPackedCount { file, .. }
            | E::Graph { file, .. } => *file = Some(path.to_owned()),
        }
        self
    }

    /// [`ModelFileError::Corrupt`], without a file yet.
    pub fn corrupt(message: impl Into<String>) -> ModelFileError {
        ModelFileError::Corrupt {
            file: None,
            message: message.into(),
        }
    }

    /// [`ModelFileError::InvalidGraph`], without a file yet.
    pub fn invalid_graph(problem: impl Into<String>) -> ModelFileError {
        ModelFileError::InvalidGraph {
            file: None,
            problem: problem.into(),
        }
    }

    /// [`ModelFileError::Symbolic`] of a model with the symbolic dims `dims` (by name, in
    /// order of first appearance), without a file yet.
    pub(crate) fn symbolic(dims: &[String]) -> ModelFileError {
        ModelFileError::Symbolic {
            file: None,
            dims: dims.join(", "),
            example: dims
                .iter()
                .map(|d| format!("{d}=<size>"))
                .collect::<Vec<_>>()
                .join(","),
        }
    }
}
