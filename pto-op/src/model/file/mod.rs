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
//! A model whose inputs keep symbolic dims (`pto_onnx::SymbolicModel`, bound
//! when it compiles) is written with `format_version` `2`: its tensors are the ONNX
//! initializers, by name, and its `__metadata__` holds `format`, `format_version`, `name`,
//! `inputs` and `outputs` (the declared [`SymbolicValue`]s as JSON: a dim is a size, a name,
//! or `null` for an unnamed one) and `onnx` (the ONNX `ModelProto` without the initializers'
//! data, as hex). A file of version 1 (every model of static shapes, and every file written
//! before symbolic models) loads as it always did; `pto_onnx::LoadedModel::load` reads
//! either version, [`Model::load`] only version 1 and says how to bind a version 2 file's
//! dims (read from its `inputs` entry: the ONNX graph is pto-onnx's to read).
//!
//! Saving ships a kernel for every kernel instance of the graph
//! ([`Model::with_traced_kernels`]); a file without `kernels` (written before kernels were
//! shipped) loads with none.
//! Loading validates the structure of everything it reads (header, offsets, graph references,
//! weights against the graph) and never panics, whatever the bytes; whether the graph's ops
//! exist and match their schemas is for the graph compiler to check.
//!
//! The parts: the errors ([`error`]), the safetensors container that both versions are
//! ([`safetensors`]: header, layout, reading and writing), the raw tensor data read in chunks
//! ([`tensor_data`]), the pto model format on top of it ([`mod@format`]: the `format` and
//! `format_version` entries), where a file's tensors are read from ([`source`]: its bytes, or
//! the file streamed), the checks of a graph and its weights ([`checks`]), and version 1
//! itself ([`version1`]: a [`Model`]). Version 2 is read and written by pto-onnx, on the same
//! container.
//!
//! [`Model`]: crate::model::Model
//! [`Model::load`]: crate::model::Model::load
//! [`Model::with_traced_kernels`]: crate::model::Model::with_traced_kernels
//! [`GraphDef`]: crate::graph::GraphDef
//! [`OpSchema`]: crate::schema::OpSchema
//! [`SymbolicValue`]: crate::model::SymbolicValue

pub mod checks;
pub mod error;
pub mod format;
pub mod safetensors;
pub mod source;
pub mod tensor_data;
pub mod version1;

pub use checks::{describe_tensor, list_names};
pub use error::ModelFileError;
pub use format::{FORMAT, FORMAT_VERSION, SYMBOLIC_FORMAT_VERSION, entry_json};
pub use safetensors::{
    Header, Layout, METADATA_KEY, SafetensorsError, TensorEntry, read_safetensors,
    safetensors_bytes,
};
pub use source::{BytesTensors, FileTensors, Streamed, TensorSource, open_streamed};
pub use tensor_data::read_tensor;
