//! The model file: one safetensors file that holds a whole [`Model`].
//!
//! The tensors of the file are the weights, by value name (f4e2m1 as safetensors' `F4`,
//! packed two to a byte, the first element in the low nibble; the 4- and 2-bit integers,
//! which safetensors lacks, are refused). Its `__metadata__` holds:
//!
//! | key              | value                                            |
//! |------------------|--------------------------------------------------|
//! | `format`         | `pto-model`                                      |
//! | `format_version` | `1`                                              |
//! | `name`           | the model's name                                 |
//! | `graph`          | the [`GraphDef`] as JSON                         |
//! | `schemas`        | the op schemas, op name -> [`OpSchema`], as JSON |
//! | `kernels`        | the shipped kernels ([`ShippedKernel`](super::ShippedKernel): key and text form), as JSON |
//!
//! A model whose inputs keep symbolic dims ([`SymbolicModel`], bound
//! when it compiles) is written with `format_version` `2`: its tensors are the ONNX
//! initializers, by name, and its `__metadata__` holds `format`, `format_version`, `name`,
//! `inputs` and `outputs` (the declared [`SymbolicValue`]s as JSON: a dim is a size, a name,
//! or `null` for an unnamed one) and `onnx` (the ONNX `ModelProto` without the initializers'
//! data, as hex). A file of version 1 (every model of static shapes, and every file written
//! before symbolic models) loads as it always did; [`LoadedModel::load`](super::LoadedModel)
//! reads either version, [`Model::load`] only version 1 and says how to bind a version 2
//! file's dims.
//!
//! Saving ships a kernel for every kernel instance of the graph
//! ([`Model::with_traced_kernels`]); a file without `kernels` (written before kernels were
//! shipped) loads with none.
//! Loading validates the structure of everything it reads (header, offsets, graph references,
//! weights against the graph) and never panics, whatever the bytes; whether the graph's ops
//! exist and match their schemas is for the graph compiler to check.

use core::fmt;
use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use safetensors::{Dtype, SafeTensors};
use serde::Deserialize;

use crate::attr::AttrValue;
use crate::dtype::DType;
use crate::graph::{GraphDef, GraphError, ValueDef, ValueId};
use crate::schema::OpSchema;
use crate::shape::Shape;
use crate::tensor::{Tensor, with_dtype};

use super::{LoadedModel, Model, SymbolicModel, SymbolicValue};

/// The `format` entry of every model file's `__metadata__`.
pub const FORMAT: &str = "pto-model";

/// The `format_version` of a model of static shapes: what this pto-op writes for a
/// [`Model`], and what every earlier pto-op wrote.
pub const FORMAT_VERSION: u32 = 1;

/// The `format_version` of a model with symbolic dims ([`SymbolicModel`]): a pto-op that
/// predates them refuses the file by its version.
pub const SYMBOLIC_FORMAT_VERSION: u32 = 2;

/// The name safetensors reserves for the metadata in the header: no weight may take it.
const METADATA_KEY: &str = "__metadata__";

/// The largest header safetensors accepts (100 MB); a file announcing more is not one.
const MAX_HEADER_BYTES: u64 = 100_000_000;

/// The length of the little-endian `u64` that starts every safetensors file.
const HEADER_LENGTH_BYTES: usize = 8;

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
        "{}weight `{weight}`: the graph says {expected}, but its tensor is {actual}",
        FilePrefix(file)
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
    #[error("{}weight `{weight}` of the graph has no tensor", FilePrefix(file))]
    MissingWeight {
        /// The model file, if there is one.
        file: Option<PathBuf>,
        /// The weight's value name.
        weight: String,
    },
    /// A tensor that is not a weight of the graph.
    #[error(
        "{}tensor `{tensor}` is not a weight of the graph; weights are {weights}",
        FilePrefix(file)
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
    /// The graph's structure is broken ([`GraphDef::validate`]): a value produced twice or
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
    fn in_file(mut self, path: &Path) -> ModelFileError {
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

    fn corrupt(message: impl Into<String>) -> ModelFileError {
        ModelFileError::Corrupt {
            file: None,
            message: message.into(),
        }
    }

    fn invalid_graph(problem: impl Into<String>) -> ModelFileError {
        ModelFileError::InvalidGraph {
            file: None,
            problem: problem.into(),
        }
    }
}

impl Model {
    /// The model as the bytes of a model file (see [the module docs](crate::model::file)).
    ///
    /// Checks first what loading checks, so a model that could not be loaded back is never
    /// written. The same model always gives the same bytes.
    ///
    /// ```
    /// use pto_op::{DType, Graph, Model, Shape, Tensor};
    /// let graph = Graph::new();
    /// let x = graph.input("x", Shape::from([2]), DType::F32);
    /// graph.weight("w", Tensor::zeros([2], DType::F16)).unwrap();
    /// graph.output(&x);
    /// let model = graph.to_model("tiny").unwrap();
    /// let bytes = model.to_bytes().unwrap();
    /// assert_eq!(Model::from_bytes(&bytes).unwrap(), model.with_traced_kernels());
    /// ```
    pub fn to_bytes(&self) -> Result<Vec<u8>, ModelFileError> {
        Ok(self.layout()?.into_bytes())
    }

    /// The layout of the model's file, after the checks of loading.
    fn layout(&self) -> Result<Layout<'_>, ModelFileError> {
        check_graph(&self.graph, &self.schemas)?;
        let weight_values = weight_values(&self.graph);
        for (name, tensor) in &self.weights {
            check_weight(&weight_values, name, Ok(tensor.dtype()), tensor.dims())?;
        }
        check_no_missing_weight(&weight_values, |name| self.weights.contains_key(name))?;

        let json = |entry, result: serde_json::Result<String>| {
            result.map_err(|e| ModelFileError::BadJson {
                file: None,
                entry,
                message: format!("cannot be written: {e}"),
            })
        };
        let metadata = BTreeMap::from([
            ("format", FORMAT.to_owned()),
            ("format_version", FORMAT_VERSION.to_string()),
            ("name", self.name.clone()),
            ("graph", json("graph", serde_json::to_string(&self.graph))?),
            (
                "schemas",
                json("schemas", serde_json::to_string(&self.schemas))?,
            ),
            (
                "kernels",
                json("kernels", serde_json::to_string(&self.traced_kernels()))?,
            ),
        ]);
        Layout::new(&metadata, &self.weights)
    }

    /// The model in the bytes of a model file, validated (see
    /// [the module docs](crate::model::file)).
    ///
    /// Never panics: any bytes give a model or an error that says what is wrong.
    ///
    /// ```
    /// use pto_op::Model;
    /// let err = Model::from_bytes(b"PK\x03\x04").unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     "model file: truncated: the 8-byte header length ends at byte 8, but the file has 4 bytes"
    /// );
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Model, ModelFileError> {
        read_model(bytes)
    }

    /// Saves the model to the model file `path`, atomically.
    ///
    /// Writes a temporary file next to `path`, flushes it to disk, then renames it over
    /// `path`: a reader sees the old file or the new one, never a part, and a save that fails
    /// leaves the old file as it was.
    ///
    /// The file is written as it is laid out: the header, then each weight's bytes streamed
    /// through a small buffer, so saving takes little memory beyond the model's own (the
    /// bytes are those of [`Model::to_bytes`]).
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), ModelFileError> {
        let path = path.as_ref();
        self.layout().map_err(|e| e.in_file(path))?.save(path)
    }

    /// Loads and validates the model file `path`; see [`Model::from_bytes`]. The header is
    /// read and checked first, then each weight straight from the file into its own tensor
    /// (through a 1 MiB buffer), so that loading takes about the weights' memory once, not
    /// the file's bytes and the tensors both. A file whose header or layout is not sound
    /// is read whole, for [`Model::from_bytes`]'s error.
    pub fn load(path: impl AsRef<Path>) -> Result<Model, ModelFileError> {
        let path = path.as_ref();
        match load_streamed(path).map_err(|e| e.in_file(path))? {
            Some(LoadedModel::Static(model)) => return Ok(model),
            Some(LoadedModel::Symbolic(model)) => {
                return Err(symbolic_error(&model).in_file(path));
            }
            None => {}
        }
        let bytes = fs::read(path).map_err(|source| ModelFileError::Io {
            file: path.to_owned(),
            operation: "read it".to_owned(),
            source,
        })?;
        Model::from_bytes(&bytes).map_err(|e| e.in_file(path))
    }
}

impl SymbolicModel {
    /// The model as the bytes of a model file of version 2 (see
    /// [the module docs](crate::model::file)). The same model always gives the same bytes.
    pub fn to_bytes(&self) -> Result<Vec<u8>, ModelFileError> {
        Ok(self.layout()?.into_bytes())
    }

    /// The layout of the model's file.
    fn layout(&self) -> Result<Layout<'_>, ModelFileError> {
        if self.weights.contains_key(METADATA_KEY) {
            return Err(ModelFileError::invalid_graph(format!(
                "initializer `{METADATA_KEY}` takes the name safetensors reserves for the \
                 metadata; rename it"
            )));
        }
        let json = |entry, result: serde_json::Result<String>| {
            result.map_err(|e| ModelFileError::BadJson {
                file: None,
                entry,
                message: format!("cannot be written: {e}"),
            })
        };
        let metadata = BTreeMap::from([
            ("format", FORMAT.to_owned()),
            ("format_version", SYMBOLIC_FORMAT_VERSION.to_string()),
            ("name", self.name.clone()),
            (
                "inputs",
                json("inputs", serde_json::to_string(&self.inputs))?,
            ),
            (
                "outputs",
                json("outputs", serde_json::to_string(&self.outputs))?,
            ),
            ("onnx", hex(&self.onnx)),
        ]);
        Layout::new(&metadata, &self.weights)
    }

    /// Saves the model to the model file `path`, atomically and streamed (as
    /// [`Model::save`]).
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), ModelFileError> {
        let path = path.as_ref();
        self.layout().map_err(|e| e.in_file(path))?.save(path)
    }
}

impl LoadedModel {
    /// The model in the bytes of a model file of either version, validated.
    ///
    /// Never panics: any bytes give a model or an error that says what is wrong.
    pub fn from_bytes(bytes: &[u8]) -> Result<LoadedModel, ModelFileError> {
        let (header_end, header) = read_header(bytes).map_err(ModelFileError::from)?;
        if check_version(&header.metadata)? == SYMBOLIC_FORMAT_VERSION {
            return Ok(LoadedModel::Symbolic(read_symbolic(
                bytes, header_end, &header,
            )?));
        }
        Ok(LoadedModel::Static(read_model(bytes)?))
    }

    /// Loads and validates the model file `path`, of either version, as [`Model::load`]
    /// does: the header first, then each weight straight from the file into its tensor, so
    /// that loading takes about the weights' memory once.
    pub fn load(path: impl AsRef<Path>) -> Result<LoadedModel, ModelFileError> {
        let path = path.as_ref();
        if let Some(model) = load_streamed(path).map_err(|e| e.in_file(path))? {
            return Ok(model);
        }
        let bytes = fs::read(path).map_err(|source| ModelFileError::Io {
            file: path.to_owned(),
            operation: "read it".to_owned(),
            source,
        })?;
        LoadedModel::from_bytes(&bytes).map_err(|e| e.in_file(path))
    }

    /// Saves the model to the model file `path`, atomically: version 1 for a model of static
    /// shapes, 2 for one with symbolic dims.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), ModelFileError> {
        match self {
            LoadedModel::Static(model) => model.save(path),
            LoadedModel::Symbolic(model) => model.save(path),
        }
    }
}

/// `bytes` as lowercase hex.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        text.push(DIGITS[usize::from(b >> 4)] as char);
        text.push(DIGITS[usize::from(b & 15)] as char);
    }
    text
}

/// The bytes of hex `text`, or where it is not hex.
fn unhex(text: &str) -> Result<Vec<u8>, String> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    let raw = text.as_bytes();
    if !raw.len().is_multiple_of(2) {
        return Err(format!("{} hex digits, an odd count", raw.len()));
    }
    raw.chunks(2)
        .enumerate()
        .map(|(i, pair)| match (digit(pair[0]), digit(pair[1])) {
            (Some(high), Some(low)) => Ok(high << 4 | low),
            _ => Err(format!("character {} is not a hex digit", 2 * i)),
        })
        .collect()
}

/// The symbolic model of a version 2 file: its entries, its ONNX graph and the tensors of
/// its initializers, each checked against the initializer's declared dtype and dims.
fn read_symbolic(
    bytes: &[u8],
    header_end: usize,
    header: &RawHeader,
) -> Result<SymbolicModel, ModelFileError> {
    let entries = symbolic_entries(header)?;
    let tensors = check_tensors(bytes, header_end, header)?;
    symbolic_of(header, entries, |name, _, dtype| {
        let view = tensors
            .tensor(name)
            .map_err(|e| ModelFileError::corrupt(e.to_string()))?;
        Tensor::from_packed_le_bytes(dtype, view.shape(), view.data())
            .map_err(|e| ModelFileError::corrupt(format!("weight `{name}`: {e}")))
    })
}

/// The entries of a version 2 file's `__metadata__`, checked against each other: what
/// [`symbolic_of`] completes with the initializers' tensors.
struct SymbolicEntries {
    name: String,
    inputs: Vec<SymbolicValue>,
    outputs: Vec<SymbolicValue>,
    onnx: Vec<u8>,
    initializers: Vec<crate::onnx::proto::TensorProto>,
}

/// The checked entries of the version 2 `header`.
fn symbolic_entries(header: &RawHeader) -> Result<SymbolicEntries, ModelFileError> {
    use prost::Message;
    let metadata = &header.metadata;
    let entry = |key: &'static str| {
        metadata.get(key).ok_or_else(|| ModelFileError::BadJson {
            file: None,
            entry: key,
            message: "missing".to_owned(),
        })
    };
    let bad = |entry, message: String| ModelFileError::BadJson {
        file: None,
        entry,
        message,
    };
    let name = entry("name")?.clone();
    let inputs: Vec<SymbolicValue> =
        serde_json::from_str(entry("inputs")?).map_err(|e| bad("inputs", e.to_string()))?;
    let outputs: Vec<SymbolicValue> =
        serde_json::from_str(entry("outputs")?).map_err(|e| bad("outputs", e.to_string()))?;
    let onnx = unhex(entry("onnx")?).map_err(|e| bad("onnx", e))?;
    let proto = crate::onnx::proto::ModelProto::decode(onnx.as_slice())
        .map_err(|e| bad("onnx", format!("not an ONNX model: {e}")))?;
    let graph = proto
        .graph
        .ok_or_else(|| bad("onnx", "the ONNX model has no graph".to_owned()))?;
    let declared = crate::onnx::import::declared_inputs(&graph)
        .map_err(|e| bad("onnx", format!("its inputs: {e}")))?;
    if declared != inputs {
        return Err(bad(
            "inputs",
            format!(
                "they are not the ONNX graph's inputs as declared ({})",
                declared
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    if outputs.len() != graph.output.len() {
        return Err(bad(
            "outputs",
            format!(
                "{} outputs, the ONNX graph has {}",
                outputs.len(),
                graph.output.len()
            ),
        ));
    }
    Ok(SymbolicEntries {
        name,
        inputs,
        outputs,
        onnx,
        initializers: graph.initializer,
    })
}

/// The symbolic model of a version 2 `header` and its checked `entries`, each tensor
/// checked against its initializer's declared dtype and dims and then given by `tensor`
/// (from the file's bytes, or read from the file).
fn symbolic_of(
    header: &RawHeader,
    entries: SymbolicEntries,
    mut tensor: impl FnMut(&str, &RawTensorInfo, DType) -> Result<Tensor, ModelFileError>,
) -> Result<SymbolicModel, ModelFileError> {
    let initializers = &entries.initializers[..];
    let mut weights = BTreeMap::new();
    for (name, info) in &header.tensors {
        let Some(init) = initializers.iter().find(|i| &i.name == name) else {
            return Err(ModelFileError::ExtraWeight {
                file: None,
                tensor: name.clone(),
                weights: list_names(initializers.iter().map(|i| i.name.as_str())),
            });
        };
        let declared_dims: Vec<usize> = init
            .dims
            .iter()
            .map(|&d| usize::try_from(d).unwrap_or(usize::MAX))
            .collect();
        let declared_dtype = DType::from_onnx_code(init.data_type);
        let dtype = pto_dtype(info.dtype);
        match (declared_dtype, dtype) {
            (Some(declared), Ok(actual)) if declared == actual && declared_dims == info.shape => {}
            _ => {
                return Err(ModelFileError::WeightMismatch {
                    file: None,
                    weight: name.clone(),
                    expected: match declared_dtype {
                        Some(d) => describe(d, &declared_dims),
                        None => format!("ONNX data type {}", init.data_type),
                    },
                    actual: match dtype {
                        Ok(d) => describe(d, &info.shape),
                        Err(other) => format!("{other}{}", Shape::from(info.shape.as_slice())),
                    },
                });
            }
        }
        let dtype = dtype.map_err(|d| ModelFileError::corrupt(format!("dtype {d}")))?;
        weights.insert(name.clone(), tensor(name, info, dtype)?);
    }
    if let Some(init) = initializers.iter().find(|i| !weights.contains_key(&i.name)) {
        return Err(ModelFileError::MissingWeight {
            file: None,
            weight: init.name.clone(),
        });
    }
    Ok(SymbolicModel {
        name: entries.name,
        inputs: entries.inputs,
        outputs: entries.outputs,
        onnx: entries.onnx,
        weights,
    })
}

/// The safetensors dtype of `dtype`; `None` for the 4- and 2-bit integers, which
/// safetensors lacks (i4, u4, i2, u2). f4e2m1 is `F4`, stored packed two to a byte (the
/// first element in the low nibble, as ONNX and PyTorch's `float4_e2m1fn_x2` pack it) where
/// pto-op's tensors take a byte per element.
fn safetensors_dtype(dtype: DType) -> Option<Dtype> {
    Some(match dtype {
        DType::F32 => Dtype::F32,
        DType::F16 => Dtype::F16,
        DType::BF16 => Dtype::BF16,
        DType::I32 => Dtype::I32,
        DType::I64 => Dtype::I64,
        DType::I8 => Dtype::I8,
        DType::U8 => Dtype::U8,
        DType::Bool => Dtype::BOOL,
        DType::I16 => Dtype::I16,
        DType::U16 => Dtype::U16,
        DType::U32 => Dtype::U32,
        DType::U64 => Dtype::U64,
        DType::F64 => Dtype::F64,
        DType::F8E4M3FN => Dtype::F8_E4M3,
        DType::F8E4M3FNUZ => Dtype::F8_E4M3FNUZ,
        DType::F8E5M2 => Dtype::F8_E5M2,
        DType::F8E5M2FNUZ => Dtype::F8_E5M2FNUZ,
        DType::F8E8M0 => Dtype::F8_E8M0,
        DType::F4E2M1 => Dtype::F4,
        DType::I4 | DType::U4 | DType::I2 | DType::U2 => return None,
    })
}

/// The pto dtype of a safetensors dtype, or the dtype itself when pto-op has none.
fn pto_dtype(dtype: Dtype) -> Result<DType, Dtype> {
    DType::ALL
        .into_iter()
        .find(|&d| safetensors_dtype(d) == Some(dtype))
        .ok_or(dtype)
}

/// `f32[2, 8] (64 bytes)`, the byte count computed without overflow.
fn describe(dtype: DType, shape: &[usize]) -> String {
    let bytes = shape
        .iter()
        .try_fold(dtype.size_bytes(), |acc, &d| acc.checked_mul(d));
    let shape = Shape::from(shape);
    match bytes {
        Some(bytes) => format!("{dtype}{shape} ({bytes} bytes)"),
        None => format!("{dtype}{shape} (more bytes than memory can address)"),
    }
}

/// The bytes of a safetensors file holding `tensors` by name (and an empty metadata
/// table), in the layout [`read_safetensors`] reads back: what `pto run --outputs
/// FILE.safetensors` writes, and what `safetensors` and `safetensors.numpy` load.
///
/// ```
/// use std::collections::BTreeMap;
/// use pto_op::Tensor;
/// use pto_op::model::file::{read_safetensors, safetensors_bytes};
/// let tensors = BTreeMap::from([("logits".to_owned(), Tensor::from_vec([2], vec![1.0f32, 2.0]).unwrap())]);
/// let bytes = safetensors_bytes(&tensors).unwrap();
/// assert_eq!(read_safetensors(&bytes).unwrap(), tensors);
/// ```
///
/// # Errors
///
/// [`ModelFileError::HeaderTooLarge`] when the names and shapes make a header over the
/// limit the reader accepts.
pub fn safetensors_bytes(tensors: &BTreeMap<String, Tensor>) -> Result<Vec<u8>, ModelFileError> {
    Ok(Layout::new(&BTreeMap::new(), tensors)?.into_bytes())
}

/// Bytes of tensor data converted and written at a time when a file is written: the
/// writer's memory beyond the tensors it writes.
const WRITE_CHUNK_BYTES: usize = 1 << 20;

/// A safetensors file laid out but not yet written: its header and its tensors, in file
/// order. Built by hand rather than with `safetensors::serialize`, whose `HashMap` metadata
/// comes out in a random order: the same model must give the same bytes. The layout is the
/// one `safetensors` reads: tensors by decreasing alignment then name, contiguous, and the
/// header padded with spaces to a multiple of 8 bytes.
///
/// Laying out checks everything that can fail but the writing itself, so a save that
/// starts writing only fails for the file's sake; [`Layout::write_to`] then streams the
/// header and each tensor's bytes, a chunk at a time, without a copy of the weights.
struct Layout<'a> {
    /// The JSON header, padded.
    header: Vec<u8>,
    /// The tensors in file order.
    tensors: Vec<&'a Tensor>,
    /// The bytes of the tensor data.
    data_bytes: usize,
}

impl<'a> Layout<'a> {
    /// The layout of a file of `weights` and `metadata`.
    fn new(
        metadata: &BTreeMap<&str, String>,
        weights: &'a BTreeMap<String, Tensor>,
    ) -> Result<Layout<'a>, ModelFileError> {
        let mut order: Vec<(&String, &Tensor)> = weights.iter().collect();
        order.sort_by(|(a_name, a), (b_name, b)| {
            let alignment = |t: &Tensor| t.dtype().size_bytes();
            alignment(b)
                .cmp(&alignment(a))
                .then_with(|| a_name.cmp(b_name))
        });

        let mut header = serde_json::Map::new();
        header.insert(METADATA_KEY.to_owned(), serde_json::json!(metadata));
        let mut data_bytes = 0usize;
        let mut tensors = Vec::with_capacity(order.len());
        for (name, tensor) in order {
            let dtype = safetensors_dtype(tensor.dtype()).ok_or_else(|| {
                ModelFileError::UnsupportedDType {
                    file: None,
                    tensor: name.clone(),
                    dtype: tensor.dtype(),
                }
            })?;
            let start = data_bytes;
            data_bytes += stored_bytes(name, tensor)?;
            header.insert(
                name.clone(),
                serde_json::json!({
                    "dtype": dtype,
                    "shape": tensor.dims(),
                    "data_offsets": [start, data_bytes],
                }),
            );
            tensors.push(tensor);
        }
        let mut header = serde_json::Value::Object(header).to_string().into_bytes();
        header.resize(header.len().next_multiple_of(HEADER_LENGTH_BYTES), b' ');
        if header.len() as u64 > MAX_HEADER_BYTES {
            return Err(ModelFileError::HeaderTooLarge {
                file: None,
                bytes: header.len(),
                limit: MAX_HEADER_BYTES,
            });
        }
        Ok(Layout {
            header,
            tensors,
            data_bytes,
        })
    }

    /// Writes the file to `out`: the header length, the header, then each tensor's bytes
    /// (little endian; f4e2m1 packed two to a byte, the first element in the low nibble),
    /// converted [`WRITE_CHUNK_BYTES`] at a time.
    fn write_to(&self, out: &mut impl io::Write) -> io::Result<()> {
        out.write_all(&(self.header.len() as u64).to_le_bytes())?;
        out.write_all(&self.header)?;
        let mut buffer = Vec::with_capacity(WRITE_CHUNK_BYTES.min(self.data_bytes));
        for tensor in &self.tensors {
            write_tensor(out, tensor, &mut buffer)?;
        }
        Ok(())
    }

    /// The file's bytes.
    fn into_bytes(self) -> Vec<u8> {
        let mut bytes =
            Vec::with_capacity(HEADER_LENGTH_BYTES + self.header.len() + self.data_bytes);
        // Writing to a `Vec` cannot fail; should it, the bytes are short and fail to load.
        let _ = self.write_to(&mut bytes);
        bytes
    }

    /// Writes the file to `path` atomically (temporary file, flush, rename), streaming
    /// through a buffer of [`WRITE_CHUNK_BYTES`].
    fn save(&self, path: &Path) -> Result<(), ModelFileError> {
        Ok(crate::fs::write_atomic_with(path, |file| {
            let mut out = io::BufWriter::with_capacity(WRITE_CHUNK_BYTES, file);
            self.write_to(&mut out)?;
            io::Write::flush(&mut out)
        })?)
    }
}

/// The bytes `tensor` takes in a safetensors file: f4e2m1 packed two to a byte (safetensors'
/// `F4`, which holds only whole bytes: an even number of elements).
fn stored_bytes(name: &str, tensor: &Tensor) -> Result<usize, ModelFileError> {
    let numel = tensor.numel();
    if tensor.dtype() == DType::F4E2M1 {
        if !numel.is_multiple_of(2) {
            return Err(ModelFileError::OddPackedCount {
                file: None,
                tensor: name.to_owned(),
                shape: tensor.shape(),
            });
        }
        return Ok(numel / 2);
    }
    Ok(numel * tensor.dtype().size_bytes())
}

/// Writes the stored bytes of `tensor` ([`stored_bytes`]) to `out`, converting a chunk at a
/// time in `buffer`.
fn write_tensor(out: &mut impl io::Write, tensor: &Tensor, buffer: &mut Vec<u8>) -> io::Result<()> {
    use crate::tensor::sealed::Sealed as _;
    let dtype = tensor.dtype();
    let size = dtype.size_bytes();
    let chunk = (WRITE_CHUNK_BYTES / size).max(2);
    with_dtype!(dtype, T => {
        let elements = tensor.as_slice::<T>().map_err(io::Error::other)?;
        for part in elements.chunks(chunk) {
            buffer.clear();
            part.iter().for_each(|x| x.write_le(buffer));
            if dtype == DType::F4E2M1 {
                // A byte per element in memory, two per byte in the file; `chunk` is even.
                let packed = buffer.len() / 2;
                for i in 0..packed {
                    buffer[i] = (buffer[2 * i] & 0x0f) | (buffer[2 * i + 1] << 4);
                }
                buffer.truncate(packed);
            }
            out.write_all(buffer)?;
        }
        Ok(())
    })
}

/// The safetensors header, read to find the metadata and to check each tensor's extent
/// before `safetensors` reads them: it adds the last offset to the header length without
/// checking, which overflows (a panic in debug builds) for offsets near `usize::MAX`, and
/// its size errors do not name the tensor.
#[derive(Deserialize)]
struct RawHeader {
    #[serde(rename = "__metadata__", default)]
    metadata: BTreeMap<String, String>,
    #[serde(flatten)]
    tensors: BTreeMap<String, RawTensorInfo>,
}

/// One tensor's entry in the header.
#[derive(Deserialize)]
struct RawTensorInfo {
    dtype: Dtype,
    shape: Vec<usize>,
    data_offsets: (usize, usize),
}

/// The model file's format version, 1 or 2, after its format.
fn check_version(metadata: &BTreeMap<String, String>) -> Result<u32, ModelFileError> {
    match metadata.get("format") {
        Some(format) if format == FORMAT => {}
        Some(other) => {
            return Err(ModelFileError::NotAModelFile {
                file: None,
                reason: format!("its `__metadata__.format` is `{other}`, not `{FORMAT}`"),
            });
        }
        None => {
            return Err(ModelFileError::NotAModelFile {
                file: None,
                reason: format!("a safetensors file without `__metadata__.format` = `{FORMAT}`"),
            });
        }
    }
    match metadata.get("format_version") {
        Some(version) if *version == FORMAT_VERSION.to_string() => Ok(FORMAT_VERSION),
        Some(version) if *version == SYMBOLIC_FORMAT_VERSION.to_string() => {
            Ok(SYMBOLIC_FORMAT_VERSION)
        }
        found => Err(ModelFileError::UnsupportedVersion {
            file: None,
            found: found.map_or("(none)", String::as_str).to_owned(),
            supported: SYMBOLIC_FORMAT_VERSION,
        }),
    }
}

fn read_model(bytes: &[u8]) -> Result<Model, ModelFileError> {
    let (header_end, header) = read_header(bytes).map_err(ModelFileError::from)?;
    let metadata = &header.metadata;
    if check_version(metadata)? == SYMBOLIC_FORMAT_VERSION {
        return Err(symbolic_error(&read_symbolic(bytes, header_end, &header)?));
    }

    let tensors = check_tensors(bytes, header_end, &header)?;
    model_of(&header, |name, _, dtype| {
        let view = tensors
            .tensor(name)
            .map_err(|e| ModelFileError::corrupt(e.to_string()))?;
        Tensor::from_packed_le_bytes(dtype, view.shape(), view.data())
            .map_err(|e| ModelFileError::corrupt(format!("weight `{name}`: {e}")))
    })
}

/// The error of a model with symbolic dims where one of static shapes is needed.
fn symbolic_error(symbolic: &SymbolicModel) -> ModelFileError {
    let dims = symbolic.dims();
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

/// The version-1 model of a checked `header`, each weight's tensor of its checked dtype
/// given by `tensor` (from the file's bytes, or read from the file).
fn model_of(
    header: &RawHeader,
    mut tensor: impl FnMut(&str, &RawTensorInfo, DType) -> Result<Tensor, ModelFileError>,
) -> Result<Model, ModelFileError> {
    let metadata = &header.metadata;

    let entry = |key: &'static str| {
        metadata.get(key).ok_or_else(|| ModelFileError::BadJson {
            file: None,
            entry: key,
            message: "missing".to_owned(),
        })
    };
    let name = metadata
        .get("name")
        .ok_or_else(|| ModelFileError::corrupt("`__metadata__` has no `name` entry"))?
        .clone();
    let bad_json = |entry, e: serde_json::Error| ModelFileError::BadJson {
        file: None,
        entry,
        message: e.to_string(),
    };
    let graph: GraphDef =
        serde_json::from_str(entry("graph")?).map_err(|e| bad_json("graph", e))?;
    let schemas: BTreeMap<String, OpSchema> =
        serde_json::from_str(entry("schemas")?).map_err(|e| bad_json("schemas", e))?;
    check_graph(&graph, &schemas)?;
    let kernels: Vec<super::ShippedKernel> = match metadata.get("kernels") {
        Some(text) => serde_json::from_str(text).map_err(|e| bad_json("kernels", e))?,
        None => Vec::new(),
    };

    let weight_values = weight_values(&graph);
    let mut weights = BTreeMap::new();
    for (name, info) in &header.tensors {
        let dtype = check_weight(&weight_values, name, pto_dtype(info.dtype), &info.shape)?;
        weights.insert(name.clone(), tensor(name, info, dtype)?);
    }
    check_no_missing_weight(&weight_values, |name| weights.contains_key(name))?;

    let model = Model {
        name,
        graph,
        weights,
        schemas,
        kernels,
    };
    model
        .check_pow_exponents()
        .map_err(|e| ModelFileError::invalid_graph(e.to_string()))?;
    Ok(model)
}

/// The model file at `path`, of either version, its weights read straight from the file
/// into their tensors; `None` when the file's header or layout is not that of a sound
/// model file (the caller then reads it whole, for [`read_model`]'s or
/// [`LoadedModel::from_bytes`]'s error).
fn load_streamed(path: &Path) -> Result<Option<LoadedModel>, ModelFileError> {
    use std::io::{Read, Seek, SeekFrom};
    let io_error = |source| ModelFileError::Io {
        file: path.to_owned(),
        operation: "read it".to_owned(),
        source,
    };
    let mut file = fs::File::open(path).map_err(io_error)?;
    let file_length = file.metadata().map_err(io_error)?.len();
    let mut length = [0u8; HEADER_LENGTH_BYTES];
    if file_length < HEADER_LENGTH_BYTES as u64 {
        return Ok(None);
    }
    file.read_exact(&mut length).map_err(io_error)?;
    let header_length = u64::from_le_bytes(length);
    let Some(header_end) = usize::try_from(header_length)
        .ok()
        .filter(|_| header_length <= MAX_HEADER_BYTES)
        .and_then(|n| n.checked_add(HEADER_LENGTH_BYTES))
        .filter(|&end| end as u64 <= file_length)
    else {
        return Ok(None);
    };
    let mut head = vec![0u8; header_end];
    head[..HEADER_LENGTH_BYTES].copy_from_slice(&length);
    file.read_exact(&mut head[HEADER_LENGTH_BYTES..])
        .map_err(io_error)?;
    let Ok((_, header)) = read_header(&head) else {
        return Ok(None);
    };
    drop(head);
    let version = check_version(&header.metadata).ok();
    if version.is_none() || !layout_holds(&header, file_length - header_end as u64) {
        return Ok(None);
    }
    let read = |name: &str, info: &RawTensorInfo, dtype| {
        let (start, end) = info.data_offsets;
        file.seek(SeekFrom::Start(header_end as u64 + start as u64))
            .map_err(io_error)?;
        crate::onnx::read::read_tensor(
            &mut file,
            dtype,
            Shape::from(info.shape.as_slice()),
            (end - start) as u64,
        )
        .map_err(|e| ModelFileError::corrupt(format!("weight `{name}`: {e}")))
    };
    if version == Some(SYMBOLIC_FORMAT_VERSION) {
        let entries = symbolic_entries(&header)?;
        return symbolic_of(&header, entries, read).map(|m| Some(LoadedModel::Symbolic(m)));
    }
    model_of(&header, read).map(|m| Some(LoadedModel::Static(m)))
}

/// Whether the tensors of `header` lie as `safetensors` requires of a file with
/// `data_length` bytes after its header: one after the other from offset 0, each of its
/// dtype and shape's length, the last ending at the end of the file.
fn layout_holds(header: &RawHeader, data_length: u64) -> bool {
    let mut extents: Vec<&RawTensorInfo> = header.tensors.values().collect();
    extents.sort_unstable_by_key(|info| info.data_offsets);
    let mut at = 0usize;
    for info in extents {
        let (start, end) = info.data_offsets;
        let bits = info
            .shape
            .iter()
            .try_fold(info.dtype.bitsize(), |acc, &d| acc.checked_mul(d));
        if start != at
            || end < start
            || bits.filter(|b| b % 8 == 0).map(|b| b / 8) != Some(end - start)
        {
            return false;
        }
        at = end;
    }
    u64::try_from(at).ok() == Some(data_length)
}

/// An error of the structure of a safetensors file: its header length, header, tensor
/// extents, layout, dtypes or bytes. What [`read_safetensors`] and the model loader check
/// before they read any tensor.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SafetensorsError {
    /// The file ends before what its header describes.
    #[error("truncated: {part} ends at byte {expected}, but the file has {actual} bytes")]
    Truncated {
        /// What is cut off: the header length, the header, or the tensor data.
        part: &'static str,
        /// The length the file needs.
        expected: usize,
        /// The length it has.
        actual: usize,
    },
    /// The header length in the first 8 bytes is larger than safetensors allows.
    #[error(
        "its first 8 bytes give a header length of {length} bytes, more than the {limit} a \
         safetensors file may have"
    )]
    HeaderTooLong {
        /// The header length the file gives.
        length: u64,
        /// The largest header safetensors reads.
        limit: u64,
    },
    /// The header is not the JSON of a safetensors header.
    #[error("the header is not valid: {source}")]
    Header {
        /// The JSON parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// A tensor's end offset is so large that no file could hold it.
    #[error("tensor `{tensor}` ends at data offset {end}, beyond any file")]
    OffsetBeyondAnyFile {
        /// The tensor.
        tensor: String,
        /// Its end offset in the data.
        end: usize,
    },
    /// A tensor's data offsets span another byte length than its dtype and shape take.
    #[error(
        "tensor `{tensor}`: {dtype}{shape} takes {takes}, but its data_offsets [{start}, {end}] span {spans}"
    )]
    ByteLength {
        /// The tensor.
        tensor: String,
        /// Its dtype, as safetensors names it.
        dtype: Dtype,
        /// Its shape.
        shape: Shape,
        /// The bytes the dtype and shape take, e.g. `64 bytes`.
        takes: String,
        /// The bytes the offsets span, e.g. `60 bytes`.
        spans: String,
        /// The start offset.
        start: usize,
        /// The end offset.
        end: usize,
    },
    /// The tensors overlap, leave gaps, or do not end where the file does (as `safetensors`
    /// checks).
    #[error("invalid tensor layout: {source}")]
    Layout {
        /// The error of `safetensors`, naming the tensor.
        #[source]
        source: safetensors::SafeTensorError,
    },
    /// A tensor of a dtype pto-op does not support.
    #[error(
        "tensor `{tensor}` has dtype {dtype}, which pto-op does not support (it reads every \
         safetensors dtype but F6_E2M3, F6_E3M2 and C64)"
    )]
    DType {
        /// The tensor.
        tensor: String,
        /// Its dtype, as safetensors names it.
        dtype: Dtype,
    },
    /// A tensor whose bytes do not make a tensor of its dtype and shape.
    #[error("tensor `{tensor}`: {source}")]
    Tensor {
        /// The tensor.
        tensor: String,
        /// The tensor's error.
        #[source]
        source: crate::tensor::TensorError,
    },
}

impl From<SafetensorsError> for ModelFileError {
    /// The model loader's error of a structural fault, with the messages it always had.
    fn from(e: SafetensorsError) -> ModelFileError {
        match e {
            SafetensorsError::Truncated {
                part,
                expected,
                actual,
            } => ModelFileError::Truncated {
                file: None,
                part,
                expected,
                actual,
            },
            SafetensorsError::HeaderTooLong { .. } => ModelFileError::NotAModelFile {
                file: None,
                reason: e.to_string(),
            },
            SafetensorsError::Layout { source } => ModelFileError::corrupt(source.to_string()),
            other => ModelFileError::corrupt(other.to_string()),
        }
    }
}

/// Every tensor of the safetensors file `bytes`, by name, validated as the model loader
/// validates its weights: the header length against the limit and the file, the header's
/// JSON, each tensor's offsets and byte length against its dtype and shape (in checked
/// arithmetic), the layout, and the dtypes against pto-op's. Nothing is allocated from a
/// size in the file before it is checked against the file's length.
///
/// Never panics: any bytes give the tensors or an error naming the tensor at fault.
///
/// ```
/// use pto_op::model::file::read_safetensors;
/// let err = read_safetensors(b"\xff\xff\xff\xff\xff\xff\xff\xff").unwrap_err();
/// assert!(err.to_string().contains("header length of 18446744073709551615 bytes"));
/// ```
///
/// # Errors
///
/// A [`SafetensorsError`] saying what is wrong, and with which tensor.
pub fn read_safetensors(bytes: &[u8]) -> Result<BTreeMap<String, Tensor>, SafetensorsError> {
    let (header_end, header) = read_header(bytes)?;
    let tensors = check_tensors(bytes, header_end, &header)?;
    header
        .tensors
        .keys()
        .map(|name| {
            let view = tensors
                .tensor(name)
                .map_err(|source| SafetensorsError::Layout { source })?;
            let dtype = pto_dtype(view.dtype()).map_err(|dtype| SafetensorsError::DType {
                tensor: name.clone(),
                dtype,
            })?;
            let tensor = Tensor::from_packed_le_bytes(dtype, view.shape(), view.data()).map_err(
                |source| SafetensorsError::Tensor {
                    tensor: name.clone(),
                    source,
                },
            )?;
            Ok((name.clone(), tensor))
        })
        .collect()
}

/// The end of the header in `bytes` and the header, its length checked against the limit
/// and the file before it is read.
fn read_header(bytes: &[u8]) -> Result<(usize, RawHeader), SafetensorsError> {
    let truncated = |part, expected| SafetensorsError::Truncated {
        part,
        expected,
        actual: bytes.len(),
    };
    let length_bytes: [u8; HEADER_LENGTH_BYTES] = bytes
        .get(..HEADER_LENGTH_BYTES)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| truncated("the 8-byte header length", HEADER_LENGTH_BYTES))?;
    let header_length = u64::from_le_bytes(length_bytes);
    let header_end = usize::try_from(header_length)
        .ok()
        .filter(|_| header_length <= MAX_HEADER_BYTES)
        .and_then(|n| n.checked_add(HEADER_LENGTH_BYTES))
        .ok_or(SafetensorsError::HeaderTooLong {
            length: header_length,
            limit: MAX_HEADER_BYTES,
        })?;
    let header_bytes = bytes
        .get(HEADER_LENGTH_BYTES..header_end)
        .ok_or_else(|| truncated("the header", header_end))?;
    let header: RawHeader = serde_json::from_slice(header_bytes)
        .map_err(|source| SafetensorsError::Header { source })?;
    Ok((header_end, header))
}

/// Checks each tensor's extent in `bytes` (checked arithmetic, named tensors), then lets
/// `safetensors` check the layout.
fn check_tensors<'a>(
    bytes: &'a [u8],
    header_end: usize,
    header: &RawHeader,
) -> Result<SafeTensors<'a>, SafetensorsError> {
    let data_length = bytes.len().saturating_sub(header_end);
    if let Some((name, info)) = header
        .tensors
        .iter()
        .max_by_key(|(_, info)| info.data_offsets.1)
        .filter(|(_, info)| info.data_offsets.1 > data_length)
    {
        return Err(match header_end.checked_add(info.data_offsets.1) {
            Some(end) => SafetensorsError::Truncated {
                part: "the tensor data",
                expected: end,
                actual: bytes.len(),
            },
            None => SafetensorsError::OffsetBeyondAnyFile {
                tensor: name.clone(),
                end: info.data_offsets.1,
            },
        });
    }
    for (name, info) in &header.tensors {
        let (start, end) = info.data_offsets;
        let size_bits = info
            .shape
            .iter()
            .try_fold(info.dtype.bitsize(), |acc, &d| acc.checked_mul(d));
        let size = size_bits.filter(|bits| bits % 8 == 0).map(|bits| bits / 8);
        if end.checked_sub(start) != size {
            return Err(SafetensorsError::ByteLength {
                tensor: name.clone(),
                dtype: info.dtype,
                shape: Shape::from(info.shape.as_slice()),
                takes: match (size, size_bits) {
                    (Some(n), _) => format!("{n} bytes"),
                    (None, Some(_)) => "no whole number of bytes".to_owned(),
                    (None, None) => "more bytes than memory can address".to_owned(),
                },
                spans: end
                    .checked_sub(start)
                    .map_or("a negative length".to_owned(), |n| format!("{n} bytes")),
                start,
                end,
            });
        }
    }
    SafeTensors::deserialize(bytes).map_err(|source| SafetensorsError::Layout { source })
}

/// The graph's weight values by name (after [`check_graph`], every id exists).
fn weight_values(graph: &GraphDef) -> BTreeMap<&str, &ValueDef> {
    graph
        .weights
        .iter()
        .filter_map(|&id| graph.values.get(id))
        .map(|value| (value.name.as_str(), value))
        .collect()
}

/// Checks that tensor `name` of dtype `dtype` and shape `shape` is a weight of the graph, of
/// the type the graph says; returns its dtype.
fn check_weight(
    weight_values: &BTreeMap<&str, &ValueDef>,
    name: &str,
    dtype: Result<DType, Dtype>,
    shape: &[usize],
) -> Result<DType, ModelFileError> {
    let Some(value) = weight_values.get(name) else {
        return Err(ModelFileError::ExtraWeight {
            file: None,
            tensor: name.to_owned(),
            weights: list_names(weight_values.keys().copied()),
        });
    };
    let expected = &value.ty;
    match dtype {
        Ok(dtype) if dtype == expected.dtype && shape == expected.shape.dims() => Ok(dtype),
        _ => Err(ModelFileError::WeightMismatch {
            file: None,
            weight: name.to_owned(),
            expected: describe(expected.dtype, expected.shape.dims()),
            actual: match dtype {
                Ok(dtype) => describe(dtype, shape),
                Err(other) => format!(
                    "{other}{}, a safetensors dtype pto-op does not support",
                    Shape::from(shape)
                ),
            },
        }),
    }
}

/// The first ten names, comma-separated, and how many more there are.
fn list_names<'a>(names: impl ExactSizeIterator<Item = &'a str>) -> String {
    const SHOWN: usize = 10;
    let more = names.len().saturating_sub(SHOWN);
    let mut list = names.take(SHOWN).collect::<Vec<_>>().join(", ");
    if more > 0 {
        list.push_str(&format!(" and {more} more"));
    }
    list
}

/// Checks that every weight of the graph has a tensor.
fn check_no_missing_weight(
    weight_values: &BTreeMap<&str, &ValueDef>,
    has_tensor: impl Fn(&str) -> bool,
) -> Result<(), ModelFileError> {
    match weight_values.keys().find(|name| !has_tensor(name)) {
        Some(name) => Err(ModelFileError::MissingWeight {
            file: None,
            weight: (*name).to_owned(),
        }),
        None => Ok(()),
    }
}

/// Checks the graph: its structure ([`GraphDef::validate`]); no weight takes the name
/// safetensors reserves for the metadata; nodes use ops with a schema; float attributes are
/// finite (JSON has no NaN or infinity).
fn check_graph(
    graph: &GraphDef,
    schemas: &BTreeMap<String, OpSchema>,
) -> Result<(), ModelFileError> {
    graph.validate().map_err(|e| match e {
        GraphError::UnknownValue { place, id, count } => ModelFileError::UnknownValue {
            file: None,
            place,
            id,
            count,
        },
        source => ModelFileError::Graph { file: None, source },
    })?;
    if let Some(id) = graph
        .weights
        .iter()
        .copied()
        .find(|&id| graph.values.get(id).is_some_and(|v| v.name == METADATA_KEY))
    {
        return Err(ModelFileError::invalid_graph(format!(
            "weight value {id} is named `{METADATA_KEY}`, which safetensors reserves for the \
             metadata; rename the weight"
        )));
    }
    for (index, node) in graph.nodes.iter().enumerate() {
        let node_name = || format!("node {index} (`{}`)", node.op);
        if !schemas.contains_key(&node.op) {
            return Err(ModelFileError::invalid_graph(format!(
                "{} uses an op without a schema in the model",
                node_name()
            )));
        }
        for (attr, attr_value) in &node.attrs {
            let finite = match attr_value {
                AttrValue::F32(v) => v.is_finite(),
                AttrValue::F64(v) => v.is_finite(),
                AttrValue::F32s(vs) => vs.iter().all(|v| v.is_finite()),
                _ => true,
            };
            if !finite {
                return Err(ModelFileError::invalid_graph(format!(
                    "{} attribute `{attr}` = {attr_value} is not finite, and JSON cannot hold it",
                    node_name()
                )));
            }
        }
    }
    Ok(())
}
