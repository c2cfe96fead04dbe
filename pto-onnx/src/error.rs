//! The error of ONNX export and import, and how its messages name a node.

use std::path::{Path, PathBuf};

use pto_op::error::OpError;
use pto_op::name::quoted;
use pto_op::registry::RegistryError;

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
    Write(#[from] pto_op::fs::WriteError),
    /// The model as a whole is not what pto-op can read or write.
    #[error("{0}")]
    Model(String),
    /// A node's operator has no pto-op op.
    #[error(
        "node {node}: no op for domain {}, op_type {}: {reason}",
        quoted(domain),
        quoted(op_type)
    )]
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
    #[error("node {node}: attribute {}: {problem}", quoted(attribute))]
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
    #[error("value {}: {problem}", quoted(value))]
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

impl OnnxError {
    /// [`OnnxError::Node`] of the node `label` names.
    pub(crate) fn node(label: &str, problem: String) -> OnnxError {
        OnnxError::Node {
            node: label.to_owned(),
            problem,
        }
    }

    /// The same error, naming the ONNX file `path` it comes from; an I/O error of that file
    /// names it already.
    pub(crate) fn in_file(self, path: &Path) -> OnnxError {
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
pub(crate) fn node_label(index: usize, name: &str, domain: &str, op_type: &str) -> String {
    let op = if domain.is_empty() || domain == "ai.onnx" {
        op_type.to_owned()
    } else {
        format!("{domain}.{op_type}")
    };
    // The names are the file's: escaped, as every name a message shows.
    let op = quoted(&op).to_string();
    let op = op.trim_matches('`');
    if name.is_empty() {
        format!("#{index} ({op})")
    } else {
        format!("#{index} {} ({op})", quoted(name))
    }
}
