//! ONNX bytes -> Model: the entry points of import. The model's bytes are read into its
//! proto and its initializers' tensors (the raw data read from its place, see `read.rs`),
//! then the graph is imported ([`Importer`]).

use std::collections::HashMap;
use std::io::{Cursor, Read, Seek, SeekFrom};
use std::path::Path;

use prost::Message;
use pto_op::Model;
use pto_op::dtype::DType;
use pto_op::shape::Shape;
use pto_op::tensor::Tensor;

use super::importer::Importer;
use super::options::ImportOptions;
use super::tensor::{SUPPORTED, dims, element_type_name, tensor_from_proto};
use crate::error::OnnxError;
use crate::format::KERNELS_KEY;
use crate::proto::{ModelProto, TensorProto};
use crate::read::{self, Extent, Skeleton};
use pto_op::model::file::read_tensor;

/// The model in ONNX protobuf `bytes`. See the [crate docs](crate) for the mapping.
///
/// Standard ONNX operators of the table become `std.*` ops (Concat of n inputs a balanced tree of
/// `std.concat`; constant inputs such as Reshape's shape are read from initializers or
/// Constant nodes); nodes of other domains are looked up in the registry as
/// `{domain}.{op_type}`. Output types are inferred again with each op's own rules, and a
/// declared graph output type must agree. Never panics: any input gives a model or an error.
///
/// Initializers whose data is in an external file are refused here (there is no directory
/// to find it in): [`Model::load_onnx`](crate::OnnxFile::load_onnx) reads them.
pub fn from_onnx(bytes: &[u8]) -> Result<Model, OnnxError> {
    from_onnx_with(bytes, &ImportOptions::default())
}

/// The model in ONNX protobuf `bytes`, as [`from_onnx`], with the symbolic dims of its
/// inputs bound by `options`: shape computations on them fold to constants at import, so
/// the model is static from there on.
///
/// ```
/// use pto_onnx::{ImportOptions, from_onnx_with};
/// # let bytes = pto_onnx::to_onnx(&{
/// #     let g = pto_op::Graph::new();
/// #     let x = g.input("x", pto_op::Shape::from([1, 4]), pto_op::DType::F32);
/// #     g.output(&pto_op::ops::relu::apply(&x, &Default::default()).unwrap());
/// #     g.to_model("m").unwrap()
/// # }).unwrap();
/// let model = from_onnx_with(&bytes, &ImportOptions::default().shape("x", [1, 4])).unwrap();
/// assert_eq!(model.graph.values[model.graph.inputs[0]].ty.shape.dims(), &[1, 4]);
/// ```
pub fn from_onnx_with(bytes: &[u8], options: &ImportOptions) -> Result<Model, OnnxError> {
    from_reader(&mut Cursor::new(bytes), bytes.len() as u64, None, options)
}

/// The model in the `len` bytes of `reader`; external data files are looked up in `dir`.
/// The initializers' raw data is read from its place into the tensors, not decoded into
/// the message first (see `read.rs`).
pub(crate) fn from_reader<R: Read + Seek>(
    reader: &mut R,
    len: u64,
    dir: Option<&Path>,
    options: &ImportOptions,
) -> Result<Model, OnnxError> {
    let (proto, tensors) = read_source(reader, len, dir)?;
    build(&proto, tensors, options)
}

/// The model of `symbolic` for the bindings of `options`: the import of its ONNX graph with
/// its initializers' tensors.
/// `tensor` gives each initializer's tensor by name: a copy, or the tensor itself when the
/// symbolic model is used up.
pub(crate) fn bind_symbolic(
    onnx: &[u8],
    mut tensor: impl FnMut(&str) -> Option<Tensor>,
    options: &ImportOptions,
) -> Result<Model, OnnxError> {
    let proto = ModelProto::decode(onnx)?;
    let graph = proto
        .graph
        .as_ref()
        .ok_or_else(|| OnnxError::Model("the model has no graph".to_owned()))?;
    let tensors = graph
        .initializer
        .iter()
        .map(|init| {
            tensor(&init.name).ok_or_else(|| OnnxError::Value {
                value: init.name.clone(),
                problem: "the initializer has no tensor in the symbolic model".to_owned(),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    build(&proto, tensors, options)
}

/// The ONNX model in the `len` bytes of `reader`, and its initializers' tensors in order.
pub(crate) fn read_source<R: Read + Seek>(
    reader: &mut R,
    len: u64,
    dir: Option<&Path>,
) -> Result<(ModelProto, Vec<Tensor>), OnnxError> {
    let Skeleton { model: proto, raw } = read::skeleton(reader, len)?;
    let graph = proto
        .graph
        .as_ref()
        .ok_or_else(|| OnnxError::Model("the model has no graph".to_owned()))?;
    let mut tensors = Vec::with_capacity(graph.initializer.len());
    for (index, init) in graph.initializer.iter().enumerate() {
        let extent = raw.get(index).copied().flatten();
        let tensor =
            initializer_tensor(init, extent, reader, dir).map_err(|problem| OnnxError::Value {
                value: init.name.clone(),
                problem,
            })?;
        tensors.push(tensor);
    }
    Ok((proto, tensors))
}

/// The model of `proto`, whose initializers' tensors are `tensors` (in order), imported with
/// `options`.
pub(crate) fn build(
    proto: &ModelProto,
    tensors: Vec<Tensor>,
    options: &ImportOptions,
) -> Result<Model, OnnxError> {
    Ok(build_keeping_constants(proto, tensors, options)?.0)
}

/// [`build`], and the constants the import left unused, by name (initializers that never
/// became a weight among them).
pub(crate) fn build_keeping_constants(
    proto: &ModelProto,
    tensors: Vec<Tensor>,
    options: &ImportOptions,
) -> Result<(Model, HashMap<String, Tensor>), OnnxError> {
    let graph = proto
        .graph
        .as_ref()
        .ok_or_else(|| OnnxError::Model("the model has no graph".to_owned()))?;
    let mut default_opset = None;
    for opset in &proto.opset_import {
        if opset.domain.is_empty() || opset.domain == "ai.onnx" {
            default_opset = Some(opset.version);
        }
    }
    let mut importer = Importer::new(default_opset);
    importer.import(graph, tensors, options)?;
    let name = if graph.name.is_empty() {
        "model".to_owned()
    } else {
        graph.name.clone()
    };
    // The last handles of the graph go first, so that the weights move into the model.
    let Importer {
        graph: traced,
        values,
        constants,
        ..
    } = importer;
    drop(values);
    let mut model = traced
        .into_model(name)
        .map_err(|e| OnnxError::Model(e.to_string()))?;
    // An integer initializer exponent of Pow, cast to the float base's dtype by a node.
    model
        .check_pow_exponents()
        .map_err(|e| OnnxError::Model(e.to_string()))?;
    if let Some(kernels) = proto.metadata_props.iter().find(|e| e.key == KERNELS_KEY) {
        model.kernels = serde_json::from_str(&kernels.value)
            .map_err(|e| OnnxError::Model(format!("the `{KERNELS_KEY}` metadata entry: {e}")))?;
    }
    Ok((model, constants))
}

/// The tensor of an initializer: from its raw data at `extent` in `reader`, from its
/// external-data file, or from its typed fields.
fn initializer_tensor<R: Read + Seek>(
    init: &TensorProto,
    extent: Option<Extent>,
    reader: &mut R,
    dir: Option<&Path>,
) -> Result<Tensor, String> {
    let typed = || -> Result<(DType, Shape), String> {
        let dtype = DType::from_onnx_code(init.data_type).ok_or_else(|| {
            format!(
                "data type {} is not one of pto-op's dtypes ({SUPPORTED})",
                element_type_name(init.data_type)
            )
        })?;
        Ok((dtype, dims(init.dims.iter().map(|&d| Some(d)))?))
    };
    if init.data_location == 1 {
        let (dtype, shape) = typed()?;
        return read::read_external(init, dtype, shape, dir);
    }
    match extent {
        Some(extent) if extent.len > 0 => {
            let (dtype, shape) = typed()?;
            reader
                .seek(SeekFrom::Start(extent.offset))
                .map_err(|e| format!("reading its data: {e}"))?;
            read_tensor(reader, dtype, shape, extent.len)
        }
        _ => tensor_from_proto(init),
    }
}
