//! Version 2 of the model file: a [`SymbolicModel`] (the ONNX `ModelProto` without its
//! initializers' data, as hex, and its declared inputs and outputs as JSON entries; the
//! initializers' tensors as the file's tensors), written and read on the container pto-op
//! reads and writes ([`pto_op::model::file`]); and a [`LoadedModel`] of either version.

use std::collections::BTreeMap;
use std::path::Path;

use prost::Message;
use pto_op::Model;
use pto_op::dtype::DType;
use pto_op::fs::{FileKind, read_regular};
use pto_op::model::SymbolicValue;
use pto_op::model::file::{
    BytesTensors, FORMAT, Header, Layout, METADATA_KEY, ModelFileError, SYMBOLIC_FORMAT_VERSION,
    Streamed, TensorSource, describe_tensor, entry_json, list_names, open_streamed,
};
use pto_op::shape::Shape;

use crate::import::declared_inputs;
use crate::loaded::LoadedModel;
use crate::proto::{ModelProto, TensorProto};
use crate::symbolic::SymbolicModel;

impl SymbolicModel {
    /// The model as the bytes of a model file of version 2 (see
    /// [the model file's docs](pto_op::model::file)). The same model always gives the same
    /// bytes.
    ///
    /// # Errors
    ///
    /// An initializer that takes the name safetensors reserves, a weight safetensors cannot
    /// hold, or a header over its limit.
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
        let metadata = BTreeMap::from([
            ("format", FORMAT.to_owned()),
            ("format_version", SYMBOLIC_FORMAT_VERSION.to_string()),
            ("name", self.name.clone()),
            ("inputs", entry_json("inputs", &self.inputs)?),
            ("outputs", entry_json("outputs", &self.outputs)?),
            ("onnx", hex(&self.onnx)),
        ]);
        Layout::new(&metadata, &self.weights)
    }

    /// Saves the model to the model file `path`, atomically and streamed (as
    /// [`Model::save`]).
    ///
    /// # Errors
    ///
    /// As [`SymbolicModel::to_bytes`], and the file's error, naming it.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), ModelFileError> {
        let path = path.as_ref();
        self.layout().map_err(|e| e.in_file(path))?.save(path)
    }
}

impl LoadedModel {
    /// The model in the bytes of a model file of either version, validated.
    ///
    /// Never panics: any bytes give a model or an error that says what is wrong.
    ///
    /// # Errors
    ///
    /// As [`Model::from_bytes`] for version 1; for version 2, an entry missing, not valid
    /// JSON or hex, or not the ONNX graph's, and a tensor that does not match its
    /// initializer.
    pub fn from_bytes(bytes: &[u8]) -> Result<LoadedModel, ModelFileError> {
        let (header_end, header) = Header::read(bytes).map_err(ModelFileError::from)?;
        if header.version()? == SYMBOLIC_FORMAT_VERSION {
            return Ok(LoadedModel::Symbolic(read_symbolic(
                bytes, header_end, &header,
            )?));
        }
        Ok(LoadedModel::Static(Model::from_bytes(bytes)?))
    }

    /// Loads and validates the model file `path`, of either version, as [`Model::load`]
    /// does: the header first, then each weight straight from the file into its tensor, so
    /// that loading takes about the weights' memory once.
    ///
    /// # Errors
    ///
    /// As [`LoadedModel::from_bytes`], naming the file, and the file's error.
    pub fn load(path: impl AsRef<Path>) -> Result<LoadedModel, ModelFileError> {
        let path = path.as_ref();
        if let Some(model) = load_streamed(path).map_err(|e| e.in_file(path))? {
            return Ok(model);
        }
        let bytes = read_regular(path, FileKind::ModelFile).map_err(|e| ModelFileError::Io {
            file: path.to_owned(),
            operation: "read it".to_owned(),
            source: e.into_io(),
        })?;
        LoadedModel::from_bytes(&bytes).map_err(|e| e.in_file(path))
    }

    /// Saves the model to the model file `path`, atomically: version 1 for a model of static
    /// shapes, 2 for one with symbolic dims.
    ///
    /// # Errors
    ///
    /// As [`Model::save`] and [`SymbolicModel::save`].
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
    header: &Header,
) -> Result<SymbolicModel, ModelFileError> {
    let entries = symbolic_entries(header)?;
    let mut tensors = BytesTensors::new(bytes, header_end, header)?;
    symbolic_of(header, entries, &mut tensors)
}

/// The model file at `path`, of either version, its weights read straight from the file
/// into their tensors; `None` when the file's header or layout is not that of a sound
/// model file (the caller then reads it whole, for [`LoadedModel::from_bytes`]'s error).
fn load_streamed(path: &Path) -> Result<Option<LoadedModel>, ModelFileError> {
    let Some(Streamed {
        header,
        version,
        mut tensors,
    }) = open_streamed(path)?
    else {
        return Ok(None);
    };
    if version == SYMBOLIC_FORMAT_VERSION {
        let entries = symbolic_entries(&header)?;
        return symbolic_of(&header, entries, &mut tensors).map(|m| Some(LoadedModel::Symbolic(m)));
    }
    Model::from_header(&header, &mut tensors).map(|m| Some(LoadedModel::Static(m)))
}

/// The entries of a version 2 file's `__metadata__`, checked against each other: what
/// [`symbolic_of`] completes with the initializers' tensors.
struct SymbolicEntries {
    name: String,
    inputs: Vec<SymbolicValue>,
    outputs: Vec<SymbolicValue>,
    onnx: Vec<u8>,
    initializers: Vec<TensorProto>,
}

/// The checked entries of the version 2 `header`.
fn symbolic_entries(header: &Header) -> Result<SymbolicEntries, ModelFileError> {
    let entry = |key: &'static str| header.entry(key);
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
    let proto = ModelProto::decode(onnx.as_slice())
        .map_err(|e| bad("onnx", format!("not an ONNX model: {e}")))?;
    let graph = proto
        .graph
        .ok_or_else(|| bad("onnx", "the ONNX model has no graph".to_owned()))?;
    let declared = declared_inputs(&graph).map_err(|e| bad("onnx", format!("its inputs: {e}")))?;
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
/// checked against its initializer's declared dtype and dims and then read from `tensors`
/// (the file's bytes, or the file).
fn symbolic_of(
    header: &Header,
    entries: SymbolicEntries,
    tensors: &mut impl TensorSource,
) -> Result<SymbolicModel, ModelFileError> {
    let initializers = &entries.initializers[..];
    let mut weights = BTreeMap::new();
    for (name, info) in header.tensors() {
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
        let dtype = info.dtype();
        match (declared_dtype, dtype) {
            (Some(declared), Ok(actual)) if declared == actual && declared_dims == info.shape() => {
            }
            _ => {
                return Err(ModelFileError::WeightMismatch {
                    file: None,
                    weight: name.clone(),
                    expected: match declared_dtype {
                        Some(d) => describe_tensor(d, &declared_dims),
                        None => format!("ONNX data type {}", init.data_type),
                    },
                    actual: match dtype {
                        Ok(d) => describe_tensor(d, info.shape()),
                        Err(other) => format!("{other}{}", Shape::from(info.shape())),
                    },
                });
            }
        }
        let dtype = dtype.map_err(|d| ModelFileError::corrupt(format!("dtype {d}")))?;
        weights.insert(name.clone(), tensors.tensor(name, info, dtype)?);
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
