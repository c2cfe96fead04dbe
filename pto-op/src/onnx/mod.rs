//! ONNX export and import of a [`Model`].
//!
//! - Standard ops (`std.*`) become ONNX operators of the default domain, by one table in
//!   `standard.rs` that both directions read (`std.silu` has no ONNX operator and is written
//!   as Sigmoid then Mul, so it imports as `std.sigmoid` and `std.mul`).
//! - Every other op is a node of its own domain: the op name up to its last dot
//!   (`demo.rms_norm` is op_type `rms_norm` of domain `demo`), with one opset import per
//!   domain whose version is the highest version of that domain's ops in the model. The
//!   node's `metadata_props` hold the op's own version and schema fingerprint
//!   (`pto.version`, `pto.fingerprint`); import refuses a node whose fingerprint differs
//!   from the linked op's.
//! - Params are typed attributes: f32 -> FLOAT, i32 and i64 -> INT, bool -> INT 0 or 1,
//!   String -> STRING, `Vec<i64>` -> INTS, `Vec<f32>` -> FLOATS. ONNX attributes have no
//!   double, and FLOAT would round an f64, so an f64 param is a TENSOR attribute holding a
//!   DOUBLE scalar (exact). Import reads each attribute with the type the op's schema gives
//!   its param.
//! - Weights are initializers (raw little-endian data); graph inputs and outputs carry
//!   their element type and static shape.
//! - The shipped kernels ([`ShippedKernel`](crate::model::ShippedKernel): key and text form,
//!   one per kernel instance, see [`Model::with_traced_kernels`]) are the model's
//!   `metadata_props` entry `pto.kernels`, as JSON; import reads them back.
//!
//! ```
//! use pto_op::prelude::*;
//!
//! /// y = x * scale
//! #[custom_op(name = "doc.onnx_scale", params(scale: f32 = 2.0))]
//! pub mod scale {
//!     use super::*;
//!     #[infer_shape]
//!     fn infer_shape(x: &Shape, _p: &Params) -> Result<Shape, OpError> { Ok(x.clone()) }
//!     #[infer_dtype]
//!     fn infer_dtype(x: DType, _p: &Params) -> Result<DType, OpError> { Ok(x) }
//!     #[reference]
//!     fn reference(x: &Tensor, p: &Params) -> Result<Tensor, OpError> {
//!         Ok(Tensor::from_array(x.view::<f32>()?.mapv(|v| v * p.scale)))
//!     }
//! }
//!
//! fn main() {
//!     let g = Graph::new();
//!     let x = g.input("x", Shape::from([2, 3]), DType::F32);
//!     let y = scale::apply(&x, &scale::Params { scale: 0.5 }).unwrap();
//!     g.output(&y);
//!     let model = g.to_model("scaled").unwrap();
//!     let bytes = pto_op::onnx::to_onnx(&model).unwrap();
//!     assert_eq!(pto_op::onnx::from_onnx(&bytes).unwrap(), model);
//! }
//! ```

mod export;
pub(crate) mod import;
pub mod proto;
pub(crate) mod read;
mod standard;

use std::fs;
use std::path::{Path, PathBuf};

pub use export::{ONNX_RUNTIME_MAX_OPSET, file_runtime_warning, runtime_warning, to_onnx};
pub use import::{
    ImportOptions, from_onnx, from_onnx_with, param_inputs, tensor_from_onnx, tensor_of_value,
};

/// The ONNX operators of the default domain that import reads (besides `Constant`), sorted.
///
/// ```
/// let types = pto_op::onnx::imported_op_types();
/// assert!(types.contains(&"MatMul"));
/// assert!(types.contains(&"Constant"));
/// ```
pub fn imported_op_types() -> Vec<&'static str> {
    let mut types: Vec<&'static str> = standard::STANDARD_OPS
        .iter()
        .filter_map(|s| match s.lowering {
            standard::Lowering::Node { op_type, .. } => Some(op_type),
            standard::Lowering::SigmoidTimesInput => None,
        })
        .chain(import::EXTRA_OP_TYPES.iter().copied())
        .collect();
    types.sort_unstable();
    types.dedup();
    types
}

use crate::error::OpError;
use crate::model::Model;
use crate::registry::RegistryError;

/// The IR version written: the highest that both the `onnx` checker and ONNX Runtime 1.23
/// accept (ONNX Runtime refuses 12), and the one of opset 23.
pub const IR_VERSION: i64 = 11;

/// The `producer_name` written.
pub const PRODUCER: &str = "pto-op";

/// Metadata key of a custom node: the op description's version.
pub const VERSION_KEY: &str = "pto.version";

/// Metadata key of a custom node: the op's schema fingerprint.
pub const FINGERPRINT_KEY: &str = "pto.fingerprint";

/// Metadata key of the model: the shipped kernels, as JSON.
pub const KERNELS_KEY: &str = "pto.kernels";

/// An error of ONNX export or import. Messages name the node (by name, or `#index`), the
/// attribute or the value, and what was expected against what was found.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OnnxError {
    /// The bytes are not a protobuf `ModelProto`.
    #[error("the bytes are not an ONNX model: {0}")]
    Decode(#[from] prost::DecodeError),
    /// Reading or writing a file failed.
    #[error("`{}`: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// An error of reading the ONNX file `path` (its bytes, its graph, a node or a value of
    /// it), naming the file.
    #[error("ONNX file `{}`: {source}", path.display())]
    File {
        /// The ONNX file.
        path: PathBuf,
        /// What is wrong with it.
        #[source]
        source: Box<OnnxError>,
    },
    /// Writing the ONNX file failed; the file is as it was.
    #[error("saving the ONNX model: {0}")]
    Write(#[from] crate::fs::WriteError),
    /// The model as a whole is not what pto-op can read or write.
    #[error("{0}")]
    Model(String),
    /// A node's operator has no pto-op op.
    #[error("node {node}: no op for domain `{domain}`, op_type `{op_type}`: {reason}")]
    UnknownOp {
        /// The node, by name or `#index`.
        node: String,
        /// Its domain (`""` is the default ONNX domain).
        domain: String,
        /// Its operator.
        op_type: String,
        /// Why, and what exists instead.
        reason: String,
    },
    /// An attribute is missing, unknown, or not of the type its param needs.
    #[error("node {node}: attribute `{attribute}`: {problem}")]
    Attribute {
        /// The node, by name or `#index`.
        node: String,
        /// The attribute's name.
        attribute: String,
        /// Expected against found.
        problem: String,
    },
    /// A node is malformed: its inputs or outputs, metadata or version.
    #[error("node {node}: {problem}")]
    Node {
        /// The node, by name or `#index`.
        node: String,
        /// What is wrong.
        problem: String,
    },
    /// A node's op refused its inputs (its own shape and dtype rules).
    #[error("node {node}: {source}")]
    Op {
        /// The node, by name or `#index`.
        node: String,
        /// The op's error.
        source: OpError,
    },
    /// A value (input, output, initializer, constant) has a type or data pto-op cannot use.
    #[error("value `{value}`: {problem}")]
    Value {
        /// The value's name.
        value: String,
        /// What is wrong.
        problem: String,
    },
    /// The registry could not be built (two ops share a name).
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

impl Model {
    /// Writes the model as an ONNX file (see [`to_onnx`]), atomically: into a temporary file
    /// beside `path`, then renamed over it.
    pub fn save_onnx(&self, path: impl AsRef<Path>) -> Result<(), OnnxError> {
        Ok(crate::fs::write_atomic(path, &to_onnx(self)?)?)
    }

    /// Reads an ONNX file (see [`from_onnx`]), and the external-data files its
    /// initializers name (relative paths inside the file's directory).
    ///
    /// The weights are read from the file straight into their tensors, in chunks: memory
    /// holds them once (a 541 MB model imports in about 1.05 times its weights, where
    /// reading the file, decoding it and building the tensors held them four times).
    pub fn load_onnx(path: impl AsRef<Path>) -> Result<Model, OnnxError> {
        Model::load_onnx_with(path, &ImportOptions::default())
    }

    /// Reads an ONNX file with `options` (see [`from_onnx_with`]): symbolic dims bound.
    /// To keep them symbolic instead, [`LoadedModel::load_onnx`](crate::model::LoadedModel::load_onnx).
    pub fn load_onnx_with(
        path: impl AsRef<Path>,
        options: &ImportOptions,
    ) -> Result<Model, OnnxError> {
        let path = path.as_ref();
        let (file, len, dir) = open_onnx(path)?;
        import::from_reader(&mut std::io::BufReader::new(file), len, dir, options)
            .map_err(|e| e.in_file(path))
    }
}

impl crate::model::LoadedModel {
    /// Reads an ONNX file as it is: a [`Model`] when its inputs are static, else a
    /// [`SymbolicModel`](crate::model::SymbolicModel) whose symbolic dims (`batch`, `seq`)
    /// are bound later ([`SymbolicModel::bind`](crate::model::SymbolicModel::bind)). The
    /// symbolic model is checked by importing it once with every symbolic dim bound to 1.
    ///
    /// # Errors
    ///
    /// As [`Model::load_onnx`], and an error of that check.
    pub fn load_onnx(path: impl AsRef<Path>) -> Result<crate::model::LoadedModel, OnnxError> {
        let path = path.as_ref();
        let (file, len, dir) = open_onnx(path)?;
        import::loaded_from_reader(&mut std::io::BufReader::new(file), len, dir)
            .map_err(|e| e.in_file(path))
    }

    /// The model in ONNX protobuf `bytes`, as [`LoadedModel::load_onnx`](crate::model::LoadedModel::load_onnx) reads a file.
    ///
    /// # Errors
    ///
    /// As [`LoadedModel::load_onnx`](crate::model::LoadedModel::load_onnx).
    pub fn from_onnx(bytes: &[u8]) -> Result<crate::model::LoadedModel, OnnxError> {
        import::loaded_from_reader(&mut std::io::Cursor::new(bytes), bytes.len() as u64, None)
    }
}

/// The ONNX file `path` opened, its length, and the directory its external data is read
/// from; a directory is refused here, by name, rather than failing at its first byte.
fn open_onnx(path: &Path) -> Result<(fs::File, u64, Option<&Path>), OnnxError> {
    let io = |source| OnnxError::Io {
        path: path.to_owned(),
        source,
    };
    let file = fs::File::open(path).map_err(io)?;
    let metadata = file.metadata().map_err(io)?;
    if metadata.is_dir() {
        return Err(io(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            "a directory, not an ONNX file",
        )));
    }
    let dir = path.parent().map(|d| {
        if d.as_os_str().is_empty() {
            Path::new(".")
        } else {
            d
        }
    });
    Ok((file, metadata.len(), dir))
}

impl OnnxError {
    /// The same error, naming the ONNX file `path` it comes from; an I/O error of that file
    /// names it already.
    fn in_file(self, path: &Path) -> OnnxError {
        match self {
            OnnxError::Io { path: ref p, .. } if p == path => self,
            already @ OnnxError::File { .. } => already,
            other => OnnxError::File {
                path: path.to_owned(),
                source: Box::new(other),
            },
        }
    }

    /// The error itself, or for [`OnnxError::File`] the error of the file's content it
    /// wraps.
    pub fn content(&self) -> &OnnxError {
        match self {
            OnnxError::File { source, .. } => source.content(),
            other => other,
        }
    }
}

/// How messages name node `index` of ONNX operator `op_type` in `domain`: by its name when
/// it has one, and its operator (`#3 `proj` (MatMul)`, `#1 (demo.rms_norm)`).
fn node_label(index: usize, name: &str, domain: &str, op_type: &str) -> String {
    let op = if domain.is_empty() || domain == "ai.onnx" {
        op_type.to_owned()
    } else {
        format!("{domain}.{op_type}")
    };
    if name.is_empty() {
        format!("#{index} ({op})")
    } else {
        format!("#{index} `{name}` ({op})")
    }
}
