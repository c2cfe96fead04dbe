//! Version 1 of the model file: a [`Model`] of static shapes (its graph, op schemas and
//! shipped kernels as JSON entries, its weights as the tensors), written and read; a file of
//! version 2 read where a [`Model`] is needed is refused, naming its symbolic dims.

use std::collections::BTreeMap;
use std::path::Path;

use super::checks::{check_graph, check_no_missing_weight, check_weight, weight_values};
use super::error::ModelFileError;
use super::format::{FORMAT, FORMAT_VERSION, SYMBOLIC_FORMAT_VERSION, entry_json};
use super::safetensors::{Header, Layout};
use super::source::{BytesTensors, TensorSource, open_streamed, read_error};
use crate::fs::{FileKind, read_regular};
use crate::graph::GraphDef;
use crate::model::declared::{SymbolicValue, named_dims};
use crate::model::{Model, ShippedKernel};
use crate::schema::OpSchema;

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

        let metadata = BTreeMap::from([
            ("format", FORMAT.to_owned()),
            ("format_version", FORMAT_VERSION.to_string()),
            ("name", self.name.clone()),
            ("graph", entry_json("graph", &self.graph)?),
            ("schemas", entry_json("schemas", &self.schemas)?),
            ("kernels", entry_json("kernels", &self.traced_kernels())?),
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
        match open_streamed(path).map_err(|e| e.in_file(path))? {
            Some(streamed) if streamed.version == SYMBOLIC_FORMAT_VERSION => {
                let dims = symbolic_dims(&streamed.header).map_err(|e| e.in_file(path))?;
                return Err(ModelFileError::symbolic(&dims).in_file(path));
            }
            Some(mut streamed) => {
                return Model::from_header(&streamed.header, &mut streamed.tensors)
                    .map_err(|e| e.in_file(path));
            }
            None => {}
        }
        let bytes =
            read_regular(path, FileKind::ModelFile).map_err(|e| read_error(path, e.into_io()))?;
        Model::from_bytes(&bytes).map_err(|e| e.in_file(path))
    }

    /// The model of a version 1 file's checked `header`, each weight's tensor read from
    /// `tensors` (the file's bytes, or the file): what [`Model::from_bytes`] and
    /// [`Model::load`] read once they have the header.
    ///
    /// # Errors
    ///
    /// An entry missing or not valid JSON of its type, a graph that breaks a check of
    /// loading, a weight that does not match the graph, or a tensor that cannot be read.
    pub fn from_header(
        header: &Header,
        tensors: &mut impl TensorSource,
    ) -> Result<Model, ModelFileError> {
        let metadata = header.metadata();
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
            serde_json::from_str(header.entry("graph")?).map_err(|e| bad_json("graph", e))?;
        let schemas: BTreeMap<String, OpSchema> =
            serde_json::from_str(header.entry("schemas")?).map_err(|e| bad_json("schemas", e))?;
        check_graph(&graph, &schemas)?;
        let kernels: Vec<ShippedKernel> = match metadata.get("kernels") {
            Some(text) => serde_json::from_str(text).map_err(|e| bad_json("kernels", e))?,
            None => Vec::new(),
        };

        let weight_values = weight_values(&graph);
        let mut weights = BTreeMap::new();
        for (name, entry) in header.tensors() {
            let dtype = check_weight(&weight_values, name, entry.dtype(), entry.shape())?;
            weights.insert(name.clone(), tensors.tensor(name, entry, dtype)?);
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
}

fn read_model(bytes: &[u8]) -> Result<Model, ModelFileError> {
    let (header_end, header) = Header::read(bytes).map_err(ModelFileError::from)?;
    if header.version()? == SYMBOLIC_FORMAT_VERSION {
        // Its dims, then its structure checked as the version 2 reader checks it.
        let dims = symbolic_dims(&header)?;
        BytesTensors::new(bytes, header_end, &header)?;
        return Err(ModelFileError::symbolic(&dims));
    }
    let mut tensors = BytesTensors::new(bytes, header_end, &header)?;
    Model::from_header(&header, &mut tensors)
}

/// The symbolic dims of a version 2 file (a model with symbolic dims), where one of static
/// shapes is needed: the dims its `inputs` entry declares, read without the ONNX graph,
/// which is pto-onnx's to read (`pto_onnx::LoadedModel` loads the file).
fn symbolic_dims(header: &Header) -> Result<Vec<String>, ModelFileError> {
    let inputs: Vec<SymbolicValue> =
        serde_json::from_str(header.entry("inputs")?).map_err(|e| ModelFileError::BadJson {
            file: None,
            entry: "inputs",
            message: e.to_string(),
        })?;
    Ok(named_dims(&inputs))
}
