//! ONNX bytes -> Model.

use std::collections::{BTreeMap, HashMap, HashSet};

use std::io::{Cursor, Read, Seek, SeekFrom};

use prost::Message;
use std::path::Path;

use super::proto::{
    AttributeProto, AttributeType, GraphProto, NodeProto, TensorProto, ValueInfoProto, data_type,
};
use super::read::{self, Extent, Skeleton};
use super::standard::{self, Lowering, ParamForm, StandardOp};
use super::{FINGERPRINT_KEY, KERNELS_KEY, OnnxError, node_label};
use crate::attr::{AttrType, AttrValue, Attributes};
use crate::dtype::DType;
use crate::graph::{Graph, Value, ValueId, ValueKind};
use crate::model::Model;
use crate::model::symbolic::{Dim, LoadedModel, SymbolicModel, SymbolicValue};
use crate::op::{OpDef, TensorType};
use crate::registry;
use crate::shape::Shape;
use crate::tensor::Tensor;

mod extra;
mod lower;

/// The largest dimension import accepts: shape rules may multiply two dimensions.
const MAX_DIM: u64 = 1 << 31;
/// The most elements import accepts in one value.
const MAX_ELEMENTS: u64 = 1 << 40;

/// ONNX operators of the default domain that import reads without an entry of the table of
/// standard ops (see `import/lower.rs` and `import/extra.rs`).
pub(crate) const EXTRA_OP_TYPES: &[&str] = &[
    "CastLike",
    "Constant",
    "ConstantOfShape",
    "Dropout",
    "Flatten",
    "Gemm",
    "Identity",
    "Range",
    "Shape",
    "Split",
    "Squeeze",
    "Unsqueeze",
];

/// The tensor a serialized ONNX `TensorProto` holds (the `.pb` files of the ONNX test data),
/// with its name.
///
/// ```
/// use prost::Message;
/// use pto_op::onnx::proto::TensorProto;
/// let proto = TensorProto {
///     name: "x".into(),
///     dims: vec![2],
///     data_type: 7,
///     int64_data: vec![3, -4],
///     ..Default::default()
/// };
/// let (name, tensor) = pto_op::onnx::tensor_from_onnx(&proto.encode_to_vec()).unwrap();
/// assert_eq!(name, "x");
/// assert_eq!(tensor.to_vec::<i64>().unwrap(), vec![3, -4]);
/// ```
///
/// # Errors
///
/// Bytes that are not a `TensorProto`, or a tensor pto-op cannot hold (its element type,
/// external data, a size that does not match its shape).
pub fn tensor_from_onnx(bytes: &[u8]) -> Result<(String, Tensor), OnnxError> {
    let proto = TensorProto::decode(bytes)?;
    let tensor = tensor_from_proto(&proto).map_err(|problem| OnnxError::Value {
        value: proto.name.clone(),
        problem,
    })?;
    Ok((proto.name, tensor))
}

/// The tensor that serialized ONNX test data (a `.pb` file of the ONNX test data) holds
/// for the graph input or output `info`: like [`tensor_from_onnx`], but a value `info`
/// declares of another type than a tensor (optional, sequence: its file holds an
/// `OptionalProto` or a `SequenceProto`) is refused by name, as import refuses it.
///
/// ```
/// use pto_op::onnx::proto::{TypeProto, ValueInfoProto};
/// // A sequence type: a `TypeProto` without its tensor alternative.
/// let info = ValueInfoProto {
///     name: "xs".into(),
///     r#type: Some(TypeProto { tensor_type: None }),
/// };
/// let e = pto_op::onnx::tensor_of_value(&[], &info).unwrap_err();
/// assert!(e.to_string().contains("optional and sequence types"), "{e}");
/// ```
///
/// # Errors
///
/// Those of [`tensor_from_onnx`], and a value that is not a tensor.
pub fn tensor_of_value(bytes: &[u8], info: &ValueInfoProto) -> Result<(String, Tensor), OnnxError> {
    if info
        .r#type
        .as_ref()
        .is_some_and(|t| t.tensor_type.is_none())
    {
        return Err(OnnxError::Value {
            value: info.name.clone(),
            problem: not_a_tensor(info),
        });
    }
    tensor_from_onnx(bytes)
}

/// The model in ONNX protobuf `bytes`. See the [module docs](super) for the mapping.
///
/// Standard ONNX operators of the table become `std.*` ops (Concat of n inputs a balanced tree of
/// `std.concat`; constant inputs such as Reshape's shape are read from initializers or
/// Constant nodes); nodes of other domains are looked up in the registry as
/// `{domain}.{op_type}`. Output types are inferred again with each op's own rules, and a
/// declared graph output type must agree. Never panics: any input gives a model or an error.
///
/// Initializers whose data is in an external file are refused here (there is no directory
/// to find it in): [`Model::load_onnx`] reads them.
pub fn from_onnx(bytes: &[u8]) -> Result<Model, OnnxError> {
    from_onnx_with(bytes, &ImportOptions::default())
}

/// How [`from_onnx_with`] imports a model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportOptions {
    /// The shapes of graph inputs, by input name: they bind the inputs' symbolic dims
    /// (`batch`, `seq`; exporters write them for dynamic axes), which import needs static.
    /// The static dims of a bound input must agree; an input not named keeps its declared
    /// shape, and a symbolic dim left unbound is an error naming the input and the dim.
    /// A name that is no input but a symbolic dim, with a shape of one size (`seq` =
    /// `[128]`), binds that dim as [`dims`](ImportOptions::dims) does (what `--shape
    /// seq=128` gives).
    pub shapes: BTreeMap<String, Shape>,
    /// The sizes of symbolic dims, by dim name (`batch` = 1, `seq` = 128): every input dim
    /// of that name takes the size. A size that conflicts with an input shape of `shapes`
    /// is an error naming both; a name the model has no dim of is an error listing its dims.
    pub dims: BTreeMap<String, usize>,
    /// The values of graph inputs fixed at import, by input name: each is read as if it were
    /// an initializer of that name, so the params it feeds (Reshape's shape, Slice's starts,
    /// the axes of a reduction: inputs in ONNX, params here) are known. A bound input is no
    /// longer an input of the imported model; its value must have the declared type.
    pub constants: BTreeMap<String, Tensor>,
}

impl ImportOptions {
    /// Fixes the value of input `name` to `value`.
    pub fn constant(mut self, name: impl Into<String>, value: Tensor) -> ImportOptions {
        self.constants.insert(name.into(), value);
        self
    }

    /// Binds input `name` to `shape`.
    pub fn shape(mut self, name: impl Into<String>, shape: impl Into<Shape>) -> ImportOptions {
        self.shapes.insert(name.into(), shape.into());
        self
    }

    /// Binds the symbolic dim `name` (every input dim of that name) to `size`.
    pub fn dim(mut self, name: impl Into<String>, size: usize) -> ImportOptions {
        self.dims.insert(name.into(), size);
        self
    }

    /// True when the options bind nothing (no shape, dim or constant).
    pub fn is_empty(&self) -> bool {
        self.shapes.is_empty() && self.dims.is_empty() && self.constants.is_empty()
    }
}

/// The model in ONNX protobuf `bytes`, as [`from_onnx`], with the symbolic dims of its
/// inputs bound by `options`: shape computations on them fold to constants at import, so
/// the model is static from there on.
///
/// ```
/// use pto_op::onnx::{ImportOptions, from_onnx_with};
/// # let bytes = pto_op::onnx::to_onnx(&{
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
pub(super) fn from_reader<R: Read + Seek>(
    reader: &mut R,
    len: u64,
    dir: Option<&Path>,
    options: &ImportOptions,
) -> Result<Model, OnnxError> {
    let (proto, tensors) = read_source(reader, len, dir)?;
    build(&proto, tensors, options)
}

/// The model in the `len` bytes of `reader` (from its start) as it is: a [`Model`] when its
/// inputs are static, else a [`SymbolicModel`] (checked by importing it once with every
/// symbolic dim bound to 1). The file is read once: the probe import takes the
/// initializers' tensors and gives them back, unchanged, from its weights and its unused
/// constants.
pub(super) fn loaded_from_reader<R: Read + Seek>(
    reader: &mut R,
    len: u64,
    dir: Option<&Path>,
) -> Result<LoadedModel, OnnxError> {
    let (mut proto, tensors) = read_source(reader, len, dir)?;
    let graph = proto
        .graph
        .as_ref()
        .ok_or_else(|| OnnxError::Model("the model has no graph".to_owned()))?;
    let inputs = declared_inputs(graph)?;
    if inputs.iter().all(SymbolicValue::is_static) {
        return Ok(LoadedModel::Static(build(
            &proto,
            tensors,
            &ImportOptions::default(),
        )?));
    }
    // The check: the graph imports for one binding (every dim 1, unnamed ones too).
    let mut probe = ImportOptions::default();
    for input in &inputs {
        let dims: Vec<usize> = input
            .dims
            .iter()
            .map(|d| match d {
                Dim::Size(size) => *size,
                Dim::Named(_) | Dim::Unnamed => 1,
            })
            .collect();
        probe.shapes.insert(input.name.clone(), Shape::new(dims));
    }
    // The probe takes the tensors and gives them back: memory holds the weights once, and
    // the file is read once.
    let (probed, mut unused) = build_keeping_constants(&proto, tensors, &probe).map_err(|e| {
        OnnxError::Model(format!(
            "the model has symbolic dims ({}); importing it with each bound to 1, to check \
             its graph before they are bound: {e}",
            symbolic_dims_text(&inputs)
        ))
    })?;
    let name = probed.name.clone();
    let outputs = declared_outputs(graph, &probed)?;
    let mut moved = probed.weights;
    // An initializer's tensor is a constant until it moves, unchanged and under its name,
    // into a weight; a constant is never replaced (`Importer::new_constant`).
    let tensors = graph
        .initializer
        .iter()
        .map(|init| {
            unused
                .remove(&init.name)
                .or_else(|| moved.remove(&init.name))
                .ok_or_else(|| OnnxError::Value {
                    value: init.name.clone(),
                    problem: "the initializer's tensor was neither a weight nor left unused by \
                              the import with every symbolic dim bound to 1"
                        .to_owned(),
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    drop((unused, moved));
    let mut weights = BTreeMap::new();
    if let Some(graph) = proto.graph.as_mut() {
        for (init, tensor) in graph.initializer.iter_mut().zip(tensors) {
            // The data lives in the tensor; the proto keeps the name, dtype and dims.
            init.raw_data = Vec::new();
            init.float_data = Vec::new();
            init.int32_data = Vec::new();
            init.int64_data = Vec::new();
            init.double_data = Vec::new();
            init.uint64_data = Vec::new();
            init.external_data = Vec::new();
            init.data_location = 0;
            weights.insert(init.name.clone(), tensor);
        }
    }
    Ok(LoadedModel::Symbolic(SymbolicModel {
        name,
        inputs,
        outputs,
        onnx: proto.encode_to_vec(),
        weights,
    }))
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
    let proto = super::proto::ModelProto::decode(onnx)?;
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
fn read_source<R: Read + Seek>(
    reader: &mut R,
    len: u64,
    dir: Option<&Path>,
) -> Result<(super::proto::ModelProto, Vec<Tensor>), OnnxError> {
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
fn build(
    proto: &super::proto::ModelProto,
    tensors: Vec<Tensor>,
    options: &ImportOptions,
) -> Result<Model, OnnxError> {
    Ok(build_keeping_constants(proto, tensors, options)?.0)
}

/// [`build`], and the constants the import left unused, by name (initializers that never
/// became a weight among them).
fn build_keeping_constants(
    proto: &super::proto::ModelProto,
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
    let mut importer = Importer {
        graph: Graph::new(),
        values: HashMap::new(),
        constants: HashMap::new(),
        default_opset,
        named: HashSet::new(),
    };
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
            read::read_tensor(reader, dtype, shape, extent.len)
        }
        _ => tensor_from_proto(init),
    }
}

struct Importer {
    graph: Graph,
    /// Values of the graph being built, by ONNX name.
    values: HashMap<String, Value>,
    /// Constant tensors (initializers not yet used as data, Constant nodes), by name.
    constants: HashMap<String, Tensor>,
    default_opset: Option<i64>,
    /// Values that have taken an ONNX name.
    named: HashSet<ValueId>,
}

impl Importer {
    /// Imports `graph`, whose initializers' tensors are `tensors`, in order.
    fn import(
        &mut self,
        graph: &GraphProto,
        tensors: Vec<Tensor>,
        options: &ImportOptions,
    ) -> Result<(), OnnxError> {
        for (init, tensor) in graph.initializer.iter().zip(tensors) {
            if self.constants.insert(init.name.clone(), tensor).is_some() {
                return Err(OnnxError::Value {
                    value: init.name.clone(),
                    problem: "two initializers have this name".to_owned(),
                });
            }
        }
        let declared: Vec<SymbolicValue> = graph
            .input
            .iter()
            .filter(|input| !self.constants.contains_key(&input.name))
            .map(declared_type)
            .collect::<Result<_, _>>()?;
        // An input bound to a constant binds its dims with the constant's shape.
        let mut binding = options.clone();
        for (name, value) in &options.constants {
            binding
                .shapes
                .entry(name.clone())
                .or_insert_with(|| value.shape());
        }
        let shapes = bound_shapes(&declared, &binding)?;
        for input in &graph.input {
            // Before IR 4, initializers were also listed as inputs.
            if self.constants.contains_key(&input.name) {
                continue;
            }
            let Some(shape) = shapes.get(&input.name).cloned() else {
                continue;
            };
            let ty = TensorType {
                shape: dims(shape.dims().iter().map(|&d| i64::try_from(d).ok())).map_err(
                    |problem| OnnxError::Value {
                        value: input.name.clone(),
                        problem,
                    },
                )?,
                dtype: value_dtype(input)?,
            };
            if let Some(value) = options.constants.get(&input.name) {
                if value.tensor_type() != ty {
                    return Err(OnnxError::Value {
                        value: input.name.clone(),
                        problem: format!(
                            "the input is declared {ty}, but the value bound to it is {}",
                            value.tensor_type()
                        ),
                    });
                }
                self.constants.insert(input.name.clone(), value.clone());
                continue;
            }
            let value = self.graph.input(input.name.clone(), ty.shape, ty.dtype);
            self.define(&input.name, value)?;
        }
        // Weights in initializer order, before the nodes, as a traced model has them.
        let data_uses = data_uses(graph);
        let bound = graph
            .input
            .iter()
            .map(|i| &i.name)
            .filter(|n| options.constants.contains_key(n.as_str()));
        for name in graph.initializer.iter().map(|i| &i.name).chain(bound) {
            if data_uses.contains(name.as_str()) && !self.values.contains_key(name) {
                self.data_value(name)?;
            }
        }
        for (index, node) in graph.node.iter().enumerate() {
            let first = self.graph.node_count();
            self.node(index, node)?;
            // `n{index}` is the name export gives a node that has none: not a name.
            if !node.name.is_empty() && node.name != format!("n{index}") {
                for traced in first..self.graph.node_count() {
                    self.graph.name_node(traced, &node.name);
                }
            }
        }
        for output in &graph.output {
            let value = self.data_value(&output.name)?;
            if output.r#type.is_some() {
                // Symbolic dims of an output take the size the ops infer.
                let declared = output_type(output, value.shape())?;
                if &declared != value.ty() {
                    return Err(OnnxError::Value {
                        value: output.name.clone(),
                        problem: format!(
                            "the graph output is declared {declared}, but its op infers {}",
                            value.ty()
                        ),
                    });
                }
            }
            // An output that aliases a node's value (through Identity) names it: the model's
            // `logits` stays `logits`.
            if self.graph.kind(value.id()) == Some(ValueKind::Node) {
                self.graph
                    .rename(value.id(), &output.name)
                    .map_err(|e| OnnxError::Value {
                        value: output.name.clone(),
                        problem: e.to_string(),
                    })?;
            }
            self.graph.output(&value);
        }
        Ok(())
    }

    /// Records constant `name`; a name already taken is refused, so a constant never
    /// replaces another. An initializer's tensor thus stays the file's until it moves,
    /// unchanged and under its name, into a weight ([`Importer::data_value`]): what
    /// [`loaded_from_reader`] relies on to take the tensors back after its probe.
    fn new_constant(&mut self, name: &str, tensor: Tensor) -> Result<(), OnnxError> {
        if self.values.contains_key(name) || self.constants.contains_key(name) {
            return Err(OnnxError::Value {
                value: name.to_owned(),
                problem: "defined twice; ONNX values are assigned once".to_owned(),
            });
        }
        self.constants.insert(name.to_owned(), tensor);
        Ok(())
    }

    /// Records `value` under its ONNX name, which it takes in the graph too (so that a
    /// model's `logits` output stays `logits`).
    fn define(&mut self, name: &str, value: Value) -> Result<(), OnnxError> {
        if name.is_empty() || self.values.contains_key(name) || self.constants.contains_key(name) {
            return Err(OnnxError::Value {
                value: name.to_owned(),
                problem: "defined twice (or with an empty name); ONNX values are assigned once"
                    .to_owned(),
            });
        }
        // A value the importer made without an ONNX name (an intermediate of a node lowered
        // to several ops, named `n{k}.y` or `{output}.part{k}`) gives way to an ONNX name.
        if let Some(holder) = self.graph.value_named(name)
            && holder != value.id()
            && !self.named.contains(&holder)
        {
            let fresh = self.graph.fresh_name(&format!("{name}.part"));
            self.graph
                .rename(holder, &fresh)
                .map_err(|e| OnnxError::Value {
                    value: name.to_owned(),
                    problem: e.to_string(),
                })?;
        }
        // A value already named (an alias such as Identity's output) keeps its first name.
        if self.named.insert(value.id()) {
            self.graph
                .rename(value.id(), name)
                .map_err(|e| OnnxError::Value {
                    value: name.to_owned(),
                    problem: e.to_string(),
                })?;
        }
        self.values.insert(name.to_owned(), value);
        Ok(())
    }

    /// The value named `name` as a data input: a defined value, or a constant that becomes
    /// a weight at its first use.
    fn data_value(&mut self, name: &str) -> Result<Value, OnnxError> {
        if let Some(value) = self.values.get(name) {
            return Ok(value.clone());
        }
        let Some(tensor) = self.constants.remove(name) else {
            return Err(OnnxError::Value {
                value: name.to_owned(),
                problem: "used before it is defined (nodes must be in a topological order)"
                    .to_owned(),
            });
        };
        let value = self
            .graph
            .weight(name, tensor)
            .map_err(|e| OnnxError::Value {
                value: name.to_owned(),
                problem: e.to_string(),
            })?;
        self.named.insert(value.id());
        self.values.insert(name.to_owned(), value.clone());
        Ok(value)
    }

    fn node(&mut self, index: usize, node: &NodeProto) -> Result<(), OnnxError> {
        let label = node_label(index, &node.name, &node.domain, &node.op_type);
        let default_domain = node.domain.is_empty() || node.domain == "ai.onnx";
        if default_domain && node.op_type == "Constant" {
            return self.constant(node, &label);
        }
        if default_domain {
            return match self.lower(node, &label)? {
                Some(node) => self.standard(&node, &label),
                None => Ok(()),
            };
        }
        let name = format!("{}.{}", node.domain, node.op_type);
        let def = registry::find(&name).map_err(|e| unknown(node, &label, e.to_string()))?;
        if let Some(recorded) = node
            .metadata_props
            .iter()
            .find(|e| e.key == FINGERPRINT_KEY)
            && recorded.value != def.fingerprint().to_string()
        {
            return Err(OnnxError::Node {
                node: label,
                problem: format!(
                    "exported against `{name}` with schema fingerprint {}, but the linked op has \
                     fingerprint {}: its signature changed since; export the model again",
                    recorded.value,
                    def.fingerprint()
                ),
            });
        }
        let mut attrs = Attributes::new();
        for attr in &node.attribute {
            let param = def
                .params
                .iter()
                .find(|p| p.name == attr.name)
                .ok_or_else(|| OnnxError::Attribute {
                    node: label.clone(),
                    attribute: attr.name.clone(),
                    problem: format!(
                        "`{name}` has no param of this name (its params: {})",
                        def.params
                            .iter()
                            .map(|p| p.name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                })?;
            let value = param_value(attr, param.ty).map_err(|problem| OnnxError::Attribute {
                node: label.clone(),
                attribute: attr.name.clone(),
                problem,
            })?;
            attrs.insert(attr.name.clone(), value);
        }
        check_required(def, &attrs, &label)?;
        let inputs = self.inputs(&node.input, def, &label)?;
        self.call(def, &inputs, attrs, &node.output, &label)
    }

    fn inputs(
        &mut self,
        names: &[String],
        def: &OpDef,
        label: &str,
    ) -> Result<Vec<Value>, OnnxError> {
        if names.len() != def.inputs.len() {
            return Err(OnnxError::Node {
                node: label.to_owned(),
                problem: format!(
                    "`{}` takes {} input(s) ({}), the node has {}",
                    def.name,
                    def.inputs.len(),
                    def.inputs.join(", "),
                    names.len()
                ),
            });
        }
        names.iter().map(|n| self.data_value(n)).collect()
    }

    /// Records a call of `def` and names its outputs `outputs` (trailing empty names are
    /// omitted optional outputs).
    fn call(
        &mut self,
        def: &'static OpDef,
        inputs: &[Value],
        attrs: Attributes,
        outputs: &[String],
        label: &str,
    ) -> Result<(), OnnxError> {
        let results = self.trace(def, inputs, attrs, label)?;
        if outputs.len() < results.len() || outputs[results.len()..].iter().any(|n| !n.is_empty()) {
            return Err(OnnxError::Node {
                node: label.to_owned(),
                problem: format!(
                    "`{}` has {} output(s) ({}), the node names {}",
                    def.name,
                    results.len(),
                    def.outputs.join(", "),
                    outputs.len()
                ),
            });
        }
        for (name, value) in outputs.iter().zip(results) {
            self.define(name, value)?;
        }
        Ok(())
    }

    fn trace(
        &self,
        def: &'static OpDef,
        inputs: &[Value],
        attrs: Attributes,
        label: &str,
    ) -> Result<Vec<Value>, OnnxError> {
        let refs: Vec<&Value> = inputs.iter().collect();
        Graph::trace(def, &refs, attrs).map_err(|source| OnnxError::Op {
            node: label.to_owned(),
            source,
        })
    }

    fn constant(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        let [output] = node.output.as_slice() else {
            return Err(OnnxError::Node {
                node: label.to_owned(),
                problem: format!("a Constant has one output, this one {}", node.output.len()),
            });
        };
        let [attr] = node.attribute.as_slice() else {
            return Err(OnnxError::Node {
                node: label.to_owned(),
                problem: format!(
                    "a Constant has one attribute, this one {}",
                    node.attribute.len()
                ),
            });
        };
        let tensor = match attr.name.as_str() {
            "value" => attr
                .t
                .as_ref()
                .ok_or_else(|| "holds no tensor".to_owned())
                .and_then(tensor_from_proto),
            "value_int" => {
                param_value(attr, AttrType::I64).map(|_| Tensor::scalar(attr.i.unwrap_or(0)))
            }
            "value_ints" => param_value(attr, AttrType::I64s).and_then(|_| {
                Tensor::from_vec([attr.ints.len()], attr.ints.clone()).map_err(|e| e.to_string())
            }),
            "value_float" => {
                param_value(attr, AttrType::F32).map(|_| Tensor::scalar(attr.f.unwrap_or(0.0)))
            }
            "value_floats" => param_value(attr, AttrType::F32s).and_then(|_| {
                Tensor::from_vec([attr.floats.len()], attr.floats.clone())
                    .map_err(|e| e.to_string())
            }),
            _ => Err(
                "pto-op reads Constant's value, value_int(s) and value_float(s) only".to_owned(),
            ),
        }
        .map_err(|problem| OnnxError::Attribute {
            node: label.to_owned(),
            attribute: attr.name.clone(),
            problem,
        })?;
        if self.values.contains_key(output) || self.constants.contains_key(output) {
            return Err(OnnxError::Value {
                value: output.clone(),
                problem: "defined twice; ONNX values are assigned once".to_owned(),
            });
        }
        self.constants.insert(output.clone(), tensor);
        Ok(())
    }

    fn standard(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        let entry = standard::by_op_type(&node.op_type).ok_or_else(|| {
            unknown(
                node,
                label,
                "this ONNX operator has no pto-op standard op".to_owned(),
            )
        })?;
        let Lowering::Node {
            opset,
            params: maps,
            fixed,
            variadic,
            ..
        } = entry.lowering
        else {
            return Err(unknown(node, label, "not an importable form".to_owned()));
        };
        let opset = standard::import_opset(&node.op_type).unwrap_or(opset);
        match self.default_opset {
            Some(version) if version >= opset => {}
            declared => {
                return Err(OnnxError::Node {
                    node: label.to_owned(),
                    problem: format!(
                        "{} is imported in its form of opset {opset}, but the model imports \
                         opset {} of the default domain: export the model with opset {opset} \
                         or later",
                        node.op_type,
                        declared.map_or_else(|| "none".to_owned(), |v| v.to_string())
                    ),
                });
            }
        }
        let def = registry::find(entry.op).map_err(|e| unknown(node, label, e.to_string()))?;
        let attrs = self.standard_params(node, entry, def, label)?;
        for attr in &node.attribute {
            if maps.iter().any(|m| matches!(m.form, ParamForm::Attr(n) | ParamForm::AttrSince { name: n, .. } | ParamForm::IntsOrAbsent(n) | ParamForm::DTypeCode(n) if n == attr.name)) {
                continue;
            }
            let Some(&(_, wanted)) = fixed.iter().find(|(n, _)| *n == attr.name) else {
                return Err(OnnxError::Attribute {
                    node: label.to_owned(),
                    attribute: attr.name.clone(),
                    problem: format!("not supported by pto-op's `{}`", entry.op),
                });
            };
            let actual =
                param_value(attr, AttrType::I64).map_err(|problem| OnnxError::Attribute {
                    node: label.to_owned(),
                    attribute: attr.name.clone(),
                    problem,
                })?;
            if actual != AttrValue::I64(wanted) {
                return Err(OnnxError::Attribute {
                    node: label.to_owned(),
                    attribute: attr.name.clone(),
                    problem: format!(
                        "pto-op's `{}` needs {wanted}, the node has {actual}",
                        entry.op
                    ),
                });
            }
        }
        let param_inputs: Vec<usize> = maps
            .iter()
            .filter_map(|m| match m.form {
                ParamForm::Input { index, .. } => Some(index),
                _ => None,
            })
            .collect();
        if let Some(extra) = (0..node.input.len()).find(|&i| {
            i >= def.inputs.len()
                && !variadic
                && !param_inputs.contains(&i)
                && !node.input[i].is_empty()
        }) {
            return Err(OnnxError::Node {
                node: label.to_owned(),
                problem: format!(
                    "input #{extra} `{}` of {} is not supported by pto-op's `{}`",
                    node.input[extra], node.op_type, entry.op
                ),
            });
        }
        if variadic {
            return self.chain(def, node, attrs, label);
        }
        let data = node.input.get(..def.inputs.len()).unwrap_or(&node.input);
        let inputs = self.inputs(data, def, label)?;
        self.call(def, &inputs, attrs, &node.output, label)
    }

    /// `op(op(a, b), op(c, d))` for a node with inputs a, b, c, d: a balanced tree of the
    /// binary op, in input order (for an associative op such as concat, the same value as
    /// the chain `op(op(op(a, b), c), d)`). A tree, because a chain of `n` concats copies
    /// `O(n^2)` elements, the tree `O(n log n)`: a Concat of 16k inputs runs in the time of
    /// its log2 levels, not of 16k ever longer copies.
    fn chain(
        &mut self,
        def: &'static OpDef,
        node: &NodeProto,
        attrs: Attributes,
        label: &str,
    ) -> Result<(), OnnxError> {
        let mut level = node
            .input
            .iter()
            .map(|n| self.data_value(n))
            .collect::<Result<Vec<_>, _>>()?;
        if level.len() < 2 {
            return Err(OnnxError::Node {
                node: label.to_owned(),
                problem: format!(
                    "{} needs at least 2 inputs, the node has {}",
                    node.op_type,
                    level.len()
                ),
            });
        }
        let [output] = node.output.as_slice() else {
            return Err(OnnxError::Node {
                node: label.to_owned(),
                problem: format!(
                    "{} has one output, the node names {}",
                    node.op_type,
                    node.output.len()
                ),
            });
        };
        let mut made = 0;
        while level.len() > 1 {
            let last_level = level.len() == 2;
            let mut next = Vec::with_capacity(level.len().div_ceil(2));
            for pair in level.chunks(2) {
                let [a, b] = pair else {
                    next.extend(pair.iter().cloned());
                    continue;
                };
                let outputs = self.trace(def, &[a.clone(), b.clone()], attrs.clone(), label)?;
                let [result] =
                    <[Value; 1]>::try_from(outputs).map_err(|outputs| OnnxError::Node {
                        node: label.to_owned(),
                        problem: format!(
                            "`{}` has {} outputs, a chain needs 1",
                            def.name,
                            outputs.len()
                        ),
                    })?;
                if last_level {
                    self.define(output, result.clone())?;
                } else {
                    // An intermediate value of the tree, named after the node's output.
                    let name = self.graph.fresh_name(&format!("{output}.part{made}"));
                    self.graph
                        .rename(result.id(), &name)
                        .map_err(|source| OnnxError::Op {
                            node: label.to_owned(),
                            source,
                        })?;
                }
                made += 1;
                next.push(result);
            }
            level = next;
        }
        Ok(())
    }

    fn standard_params(
        &self,
        node: &NodeProto,
        entry: &StandardOp,
        def: &OpDef,
        label: &str,
    ) -> Result<Attributes, OnnxError> {
        let Lowering::Node { params: maps, .. } = entry.lowering else {
            return Ok(Attributes::new());
        };
        let mut attrs = Attributes::new();
        for map in maps {
            let Some(param) = def.params.iter().find(|p| p.name == map.param) else {
                return Err(OnnxError::Node {
                    node: label.to_owned(),
                    problem: format!(
                        "the linked `{}` has no param `{}`; the table of standard ops does not match it",
                        def.name, map.param
                    ),
                });
            };
            let attribute_error = |attribute: &str, problem: String| OnnxError::Attribute {
                node: label.to_owned(),
                attribute: attribute.to_owned(),
                problem,
            };
            let value = match map.form {
                // Absent: the default, which is what the operator does without it (tracing
                // records every param, so a round trip gives the same node).
                ParamForm::AttrSince { name, .. } => {
                    Some(match node.attribute.iter().find(|a| a.name == name) {
                        Some(a) => {
                            param_value(a, param.ty).map_err(|p| attribute_error(name, p))?
                        }
                        None => match param.default {
                            Some(default) => default(),
                            None => {
                                return Err(attribute_error(
                                    name,
                                    format!("missing, and `{}` has no default", def.name),
                                ));
                            }
                        },
                    })
                }
                ParamForm::Attr(name) => node
                    .attribute
                    .iter()
                    .find(|a| a.name == name)
                    .map(|a| param_value(a, param.ty).map_err(|p| attribute_error(name, p)))
                    .transpose()?,
                ParamForm::IntsOrAbsent(name) => {
                    Some(match node.attribute.iter().find(|a| a.name == name) {
                        Some(a) => {
                            param_value(a, param.ty).map_err(|p| attribute_error(name, p))?
                        }
                        None => AttrValue::I64s(Vec::new()),
                    })
                }
                ParamForm::DTypeCode(name) => node
                    .attribute
                    .iter()
                    .find(|a| a.name == name)
                    .map(|a| {
                        let AttrValue::I64(code) =
                            param_value(a, AttrType::I64).map_err(|p| attribute_error(name, p))?
                        else {
                            return Err(attribute_error(name, "expected an INT".to_owned()));
                        };
                        i32::try_from(code)
                            .ok()
                            .and_then(DType::from_onnx_code)
                            .map(|d| AttrValue::String(d.name().to_owned()))
                            .ok_or_else(|| {
                                attribute_error(
                                    name,
                                    format!("data type {code} is not one of pto-op's dtypes"),
                                )
                            })
                    })
                    .transpose()?,
                ParamForm::Input { index, omit_empty } => {
                    match node.input.get(index).filter(|n| !n.is_empty()) {
                        // An omitted input is what export writes for an empty list: read it
                        // back as one, as tracing records every param.
                        None if omit_empty => Some(AttrValue::I64s(Vec::new())),
                        None => None,
                        Some(name) => {
                            let tensor = self.constants.get(name).ok_or_else(|| OnnxError::Node {
                            node: label.to_owned(),
                            problem: format!(
                                "input #{index} `{name}` ({}) must be a constant: an initializer or a Constant node",
                                map.param
                            ),
                        })?;
                            let list = tensor.to_vec::<i64>().map_err(|e| OnnxError::Value {
                                value: name.clone(),
                                problem: format!(
                                    "{} of node {label} must be int64: {e}",
                                    map.param
                                ),
                            })?;
                            if param.ty == AttrType::I64 {
                                // A scalar param (Trilu's k): one value.
                                let [value] = list.as_slice() else {
                                    return Err(OnnxError::Value {
                                        value: name.clone(),
                                        problem: format!(
                                            "{} must hold one value, got shape {}",
                                            map.param,
                                            tensor.shape()
                                        ),
                                    });
                                };
                                Some(AttrValue::I64(*value))
                            } else if tensor.shape().rank() > 1 {
                                return Err(OnnxError::Value {
                                    value: name.clone(),
                                    problem: format!(
                                        "{} of node {label} must be 1-D, got shape {}",
                                        map.param,
                                        tensor.shape()
                                    ),
                                });
                            } else {
                                Some(AttrValue::I64s(list))
                            }
                        }
                    }
                }
            };
            if let Some(value) = value {
                attrs.insert(map.param.to_owned(), value);
            }
        }
        check_required(def, &attrs, label)?;
        Ok(attrs)
    }
}

/// Inputs of nodes that `import/lower.rs` and `import/extra.rs` read as constants (params),
/// by operator.
const LOWERED_PARAM_INPUTS: &[(&str, &[usize])] = &[
    ("ConstantOfShape", &[0]),
    ("Dropout", &[1, 2]),
    ("Range", &[0, 1, 2]),
    ("Split", &[1]),
    ("Squeeze", &[1]),
    ("Unsqueeze", &[1]),
];

/// The positions of the inputs of ONNX operator `op_type` (default domain) that import reads
/// as constants, because they are params of the op it becomes (Reshape's shape, Slice's
/// starts, ends, axes and steps, the axes of a reduction, ...). A model whose such input is
/// a graph input imports with its value bound ([`ImportOptions::constants`]).
///
/// ```
/// assert_eq!(pto_op::onnx::param_inputs("Reshape"), vec![1]);
/// assert_eq!(pto_op::onnx::param_inputs("Slice"), vec![1, 2, 3, 4]);
/// assert!(pto_op::onnx::param_inputs("Add").is_empty());
/// ```
pub fn param_inputs(op_type: &str) -> Vec<usize> {
    let mut positions: Vec<usize> = match standard::by_op_type(op_type).map(|s| s.lowering) {
        Some(Lowering::Node { params, .. }) => params
            .iter()
            .filter_map(|m| match m.form {
                ParamForm::Input { index, .. } => Some(index),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    if let Some((_, lowered)) = LOWERED_PARAM_INPUTS.iter().find(|(t, _)| *t == op_type) {
        positions.extend(lowered.iter());
    }
    positions.sort_unstable();
    positions.dedup();
    positions
}

/// Names used as data (not as constant params) by a node or as an output.
fn data_uses(graph: &GraphProto) -> HashSet<&str> {
    let mut uses: HashSet<&str> = graph.output.iter().map(|o| o.name.as_str()).collect();
    for node in &graph.node {
        let params = match node.domain.as_str() {
            "" | "ai.onnx" => param_inputs(&node.op_type),
            _ => Vec::new(),
        };
        uses.extend(
            node.input
                .iter()
                .enumerate()
                .filter(|(i, _)| !params.contains(i))
                .map(|(_, n)| n.as_str()),
        );
    }
    uses
}

fn unknown(node: &NodeProto, label: &str, reason: String) -> OnnxError {
    OnnxError::UnknownOp {
        node: label.to_owned(),
        domain: node.domain.clone(),
        op_type: node.op_type.clone(),
        reason,
    }
}

/// Fails on the first param of `def` without a default that `attrs` lacks.
fn check_required(def: &OpDef, attrs: &Attributes, label: &str) -> Result<(), OnnxError> {
    match def
        .params
        .iter()
        .find(|p| p.default.is_none() && !attrs.contains_key(p.name))
    {
        None => Ok(()),
        Some(p) => Err(OnnxError::Attribute {
            node: label.to_owned(),
            attribute: p.name.to_owned(),
            problem: format!("missing: `{}` needs a value of type {}", def.name, p.ty),
        }),
    }
}

/// The ONNX element types pto-op reads, by their ONNX names.
const SUPPORTED: &str = "float, float16, bfloat16, double, int32, int64, int16, int8, uint64, \
     uint32, uint16, uint8, bool, float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz, \
     float8e8m0, float4e2m1, int4, uint4, int2, uint2";

/// An ONNX `TensorProto.DataType` code by its ONNX name (`int8`), with the code for one
/// this version of ONNX does not name.
fn element_type_name(code: i32) -> String {
    const NAMES: [&str; 27] = [
        "undefined",
        "float",
        "uint8",
        "int8",
        "uint16",
        "int16",
        "int32",
        "int64",
        "string",
        "bool",
        "float16",
        "double",
        "uint32",
        "uint64",
        "complex64",
        "complex128",
        "bfloat16",
        "float8e4m3fn",
        "float8e4m3fnuz",
        "float8e5m2",
        "float8e5m2fnuz",
        "uint4",
        "int4",
        "float4e2m1",
        "float8e8m0",
        "uint2",
        "int2",
    ];
    match usize::try_from(code).ok().and_then(|i| NAMES.get(i)) {
        Some(name) => (*name).to_owned(),
        None => format!("code {code} (unknown to pto-op)"),
    }
}

fn type_name(code: i32) -> String {
    AttributeType::try_from(code).map_or_else(
        |_| format!("type code {code}"),
        |t| format!("{t:?}").to_uppercase(),
    )
}

/// The param of type `ty` that `attr` carries, or what is wrong.
fn param_value(attr: &AttributeProto, ty: AttrType) -> Result<AttrValue, String> {
    let expected = match ty {
        AttrType::F32 => AttributeType::Float,
        AttrType::F64 => AttributeType::Tensor,
        AttrType::I32 | AttrType::I64 | AttrType::Bool => AttributeType::Int,
        AttrType::String => AttributeType::String,
        AttrType::I64s => AttributeType::Ints,
        AttrType::F32s => AttributeType::Floats,
    };
    let actual = attr.r#type;
    // An f64 written by another tool as a FLOAT is widened: exact for what FLOAT can hold.
    let widen_f64 = ty == AttrType::F64 && actual == i32::from(AttributeType::Float);
    if actual != i32::from(expected) && !widen_f64 {
        return Err(format!(
            "expected a {} attribute (for a param of type {ty}), got {}",
            type_name(expected.into()),
            type_name(actual)
        ));
    }
    let int = attr.i.unwrap_or(0);
    Ok(match ty {
        AttrType::F32 => AttrValue::F32(attr.f.unwrap_or(0.0)),
        AttrType::F64 if widen_f64 => AttrValue::F64(f64::from(attr.f.unwrap_or(0.0))),
        AttrType::F64 => AttrValue::F64(double_scalar(attr.t.as_ref())?),
        AttrType::I32 => AttrValue::I32(
            i32::try_from(int).map_err(|_| format!("{int} does not fit the param's type i32"))?,
        ),
        AttrType::I64 => AttrValue::I64(int),
        AttrType::Bool => match int {
            0 => AttrValue::Bool(false),
            1 => AttrValue::Bool(true),
            _ => return Err(format!("a bool param is INT 0 or 1, got {int}")),
        },
        AttrType::String => AttrValue::String(
            String::from_utf8(attr.s.clone().unwrap_or_default())
                .map_err(|_| "the STRING is not UTF-8".to_owned())?,
        ),
        AttrType::I64s => AttrValue::I64s(attr.ints.clone()),
        AttrType::F32s => AttrValue::F32s(attr.floats.clone()),
    })
}

/// The value of a TENSOR attribute holding one DOUBLE.
fn double_scalar(tensor: Option<&TensorProto>) -> Result<f64, String> {
    let tensor = tensor.ok_or_else(|| "the TENSOR attribute holds no tensor".to_owned())?;
    if tensor.data_type != data_type::DOUBLE || tensor.dims.iter().any(|&d| d != 1) {
        return Err(format!(
            "an f64 param is a TENSOR of one DOUBLE, got {} of dims {:?}",
            element_type_name(tensor.data_type),
            tensor.dims
        ));
    }
    match (tensor.raw_data.as_slice(), tensor.double_data.as_slice()) {
        (raw, _) if raw.len() == 8 => {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(raw);
            Ok(f64::from_le_bytes(bytes))
        }
        ([], [value]) => Ok(*value),
        _ => Err("an f64 param is a TENSOR of exactly one DOUBLE".to_owned()),
    }
}

/// Static dimensions within the import limits.
fn dims(raw: impl IntoIterator<Item = Option<i64>>) -> Result<Shape, String> {
    let mut dims = Vec::new();
    let mut elements: u64 = 1;
    for (axis, dim) in raw.into_iter().enumerate() {
        let dim = dim.ok_or_else(|| {
            format!("dimension {axis} is symbolic or unknown; pto-op needs static shapes")
        })?;
        let size = u64::try_from(dim)
            .ok()
            .filter(|&d| d <= MAX_DIM)
            .ok_or_else(|| format!("dimension {axis} is {dim}, outside 0..={MAX_DIM}"))?;
        elements = elements
            .checked_mul(size)
            .filter(|&e| e <= MAX_ELEMENTS)
            .ok_or_else(|| format!("more than {MAX_ELEMENTS} elements"))?;
        dims.push(usize::try_from(size).map_err(|_| format!("dimension {axis} does not fit"))?);
    }
    Ok(Shape::new(dims))
}

/// Why the value `info` declares is not a tensor: it has no type, or another alternative of
/// `TypeProto` than a tensor (pto-op's proto reads only the tensor one).
fn not_a_tensor(info: &ValueInfoProto) -> String {
    match &info.r#type {
        None => "has no type; pto-op needs a tensor type".to_owned(),
        Some(_) => "is not a tensor but an optional, sequence, map or sparse tensor value: \
                    optional and sequence types are not supported; pto-op's values are dense \
                    tensors"
            .to_owned(),
    }
}

/// The dtype `info` declares.
fn value_dtype(info: &ValueInfoProto) -> Result<DType, OnnxError> {
    let tensor = info
        .r#type
        .as_ref()
        .and_then(|t| t.tensor_type.as_ref())
        .ok_or_else(|| OnnxError::Value {
            value: info.name.clone(),
            problem: not_a_tensor(info),
        })?;
    DType::from_onnx_code(tensor.elem_type).ok_or_else(|| OnnxError::Value {
        value: info.name.clone(),
        problem: format!(
            "element type {} is not one of pto-op's dtypes ({SUPPORTED})",
            element_type_name(tensor.elem_type)
        ),
    })
}

/// The type `info` declares, its symbolic dims by name.
fn declared_type(info: &ValueInfoProto) -> Result<SymbolicValue, OnnxError> {
    let dtype = value_dtype(info)?;
    let problem = |problem: String| OnnxError::Value {
        value: info.name.clone(),
        problem,
    };
    let shape = info
        .r#type
        .as_ref()
        .and_then(|t| t.tensor_type.as_ref())
        .and_then(|t| t.shape.as_ref())
        .ok_or_else(|| {
            problem("has no shape (not even a rank); pto-op needs one for an input".to_owned())
        })?;
    let mut dims = Vec::with_capacity(shape.dim.len());
    for (axis, dim) in shape.dim.iter().enumerate() {
        dims.push(match (dim.dim_value, &dim.dim_param) {
            (Some(size), _) => Dim::Size(
                usize::try_from(size)
                    .ok()
                    .filter(|&d| d as u64 <= MAX_DIM)
                    .ok_or_else(|| {
                        problem(format!("dimension {axis} is {size}, outside 0..={MAX_DIM}"))
                    })?,
            ),
            (None, Some(name)) if !name.is_empty() => Dim::Named(name.clone()),
            (None, _) => Dim::Unnamed,
        });
    }
    Ok(SymbolicValue {
        name: info.name.clone(),
        dtype,
        dims,
    })
}

/// The graph inputs a run gives (not initializers), as declared.
pub(crate) fn declared_inputs(graph: &GraphProto) -> Result<Vec<SymbolicValue>, OnnxError> {
    let initializers: HashSet<&str> = graph.initializer.iter().map(|i| i.name.as_str()).collect();
    graph
        .input
        .iter()
        .filter(|i| !initializers.contains(i.name.as_str()))
        .map(declared_type)
        .collect()
}

/// The graph outputs as declared; one declared without a type (or shape) takes the dtype
/// and rank of `probed`'s output, its dims unnamed.
fn declared_outputs(graph: &GraphProto, probed: &Model) -> Result<Vec<SymbolicValue>, OnnxError> {
    let g = &probed.graph;
    graph
        .output
        .iter()
        .zip(&g.outputs)
        .map(|(info, &id)| match declared_type(info) {
            Ok(value) => Ok(value),
            Err(_) => {
                let ty = &g.values[id].ty;
                Ok(SymbolicValue {
                    name: info.name.clone(),
                    dtype: ty.dtype,
                    dims: vec![Dim::Unnamed; ty.shape.rank()],
                })
            }
        })
        .collect()
}

/// `batch, seq` (and `? of x` for an unnamed dim of input `x`).
fn symbolic_dims_text(inputs: &[SymbolicValue]) -> String {
    let mut names: Vec<String> = Vec::new();
    for input in inputs {
        for (axis, dim) in input.dims.iter().enumerate() {
            let text = match dim {
                Dim::Size(_) => continue,
                Dim::Named(name) => name.clone(),
                Dim::Unnamed => format!("dimension {axis} of `{}` (unnamed)", input.name),
            };
            if !names.contains(&text) {
                names.push(text);
            }
        }
    }
    if names.is_empty() {
        "none, every dim is static".to_owned()
    } else {
        names.join(", ")
    }
}

/// `ImportOptions::shape` on the command line: `--shape x=<batch>x8`.
fn shape_hint(input: &SymbolicValue) -> String {
    let dims: Vec<String> = input
        .dims
        .iter()
        .enumerate()
        .map(|(axis, d)| match d {
            Dim::Size(size) => size.to_string(),
            Dim::Named(name) => format!("<{name}>"),
            Dim::Unnamed => format!("<d{axis}>"),
        })
        .collect();
    format!("--shape {}={}", input.name, dims.join("x"))
}

/// The shape of every input of `inputs` for the bindings of `options` (input shapes, and
/// dims by name): the one place where bindings are checked, at import and when a symbolic
/// model is bound.
pub(crate) fn bound_shapes(
    inputs: &[SymbolicValue],
    options: &ImportOptions,
) -> Result<BTreeMap<String, Shape>, OnnxError> {
    let value_error = |value: &str, problem: String| OnnxError::Value {
        value: value.to_owned(),
        problem,
    };
    let mut dim_names: Vec<&str> = Vec::new();
    for input in inputs {
        for dim in &input.dims {
            if let Dim::Named(name) = dim
                && !dim_names.contains(&name.as_str())
            {
                dim_names.push(name);
            }
        }
    }
    // Each bound dim: its size, and what bound it (for the message of a conflict).
    let mut sizes: BTreeMap<&str, (usize, String)> = BTreeMap::new();
    let mut bind = |name: &str, size: usize, by: String| -> Result<(), String> {
        match dim_names.iter().find(|n| **n == name) {
            None => Err("is no symbolic dim of the model".to_owned()),
            Some(&name) => match sizes.get(name) {
                Some((bound, first)) if *bound != size => Err(format!(
                    "the symbolic dim `{name}` is {size} by {by}, but {bound} by {first}"
                )),
                Some(_) => Ok(()),
                None => {
                    sizes.insert(name, (size, by));
                    Ok(())
                }
            },
        }
    };
    let mut given: BTreeMap<&str, &Shape> = BTreeMap::new();
    let mut by_dim: Vec<(&str, usize, String)> = Vec::new();
    for (name, shape) in &options.shapes {
        if let Some(input) = inputs.iter().find(|i| &i.name == name) {
            if input.dims.len() != shape.rank() {
                return Err(value_error(
                    name,
                    format!(
                        "is declared with rank {} ({input}), the shape given for it is {shape} \
                         (rank {})",
                        input.dims.len(),
                        shape.rank()
                    ),
                ));
            }
            for (axis, (dim, &size)) in input.dims.iter().zip(shape.dims()).enumerate() {
                match dim {
                    Dim::Size(declared) if *declared != size => {
                        return Err(value_error(
                            name,
                            format!(
                                "dimension {axis} is declared {declared} ({input}), the shape \
                                 given for it is {shape}"
                            ),
                        ));
                    }
                    Dim::Named(dim) => {
                        bind(
                            dim,
                            size,
                            format!("the shape {shape} given for input `{name}`"),
                        )
                        .map_err(|problem| value_error(name, problem))?;
                    }
                    _ => {}
                }
            }
            given.insert(name, shape);
        } else if dim_names.contains(&name.as_str()) {
            let [size] = shape.dims() else {
                return Err(value_error(
                    name,
                    format!(
                        "is a symbolic dim of the model, not an input: bind it to one size \
                         (`--shape {name}=128`), not to {shape}"
                    ),
                ));
            };
            by_dim.push((name, *size, format!("`--shape {name}={size}`")));
        } else {
            return Err(unknown_name(name, inputs));
        }
    }
    for (name, &size) in &options.dims {
        if given.contains_key(name.as_str()) {
            return Err(value_error(
                name,
                "is an input, not a symbolic dim: bind its shape (`ImportOptions::shape`)"
                    .to_owned(),
            ));
        }
        by_dim.push((
            name,
            size,
            format!("`ImportOptions::dim(\"{name}\", {size})`"),
        ));
    }
    for (name, size, by) in by_dim {
        bind(name, size, by).map_err(|problem| {
            if dim_names.contains(&name) {
                value_error(name, problem)
            } else {
                unknown_name(name, inputs)
            }
        })?;
    }
    let mut shapes = BTreeMap::new();
    let mut unbound: Vec<(&SymbolicValue, Vec<String>)> = Vec::new();
    for input in inputs {
        if let Some(shape) = given.get(input.name.as_str()) {
            shapes.insert(input.name.clone(), (*shape).clone());
            continue;
        }
        let mut dims = Vec::with_capacity(input.dims.len());
        let mut missing = Vec::new();
        for (axis, dim) in input.dims.iter().enumerate() {
            match dim {
                Dim::Size(size) => dims.push(*size),
                Dim::Named(name) => match sizes.get(name.as_str()) {
                    Some((size, _)) => dims.push(*size),
                    None => missing.push(format!("dimension {axis} (`{name}`)")),
                },
                Dim::Unnamed => missing.push(format!("dimension {axis} (unnamed)")),
            }
        }
        if missing.is_empty() {
            shapes.insert(input.name.clone(), Shape::new(dims));
        } else {
            unbound.push((input, missing));
        }
    }
    if let Some((first, missing)) = unbound.first() {
        let unbound_names: Vec<&str> = dim_names
            .iter()
            .copied()
            .filter(|n| !sizes.contains_key(n))
            .collect();
        let mut how = Vec::new();
        if !unbound_names.is_empty() {
            let list: Vec<String> = unbound_names
                .iter()
                .map(|n| format!("{n}=<size>"))
                .collect();
            how.push(format!(
                "bind the dims by name with `--shape {}` on the command line \
                 (`ImportOptions::dim` in the API)",
                list.join(",")
            ));
        }
        how.push(format!(
            "give the input's shape with `{}` (`ImportOptions::shape`)",
            shape_hint(first)
        ));
        let symbolic = |missing: &[String]| match missing {
            [one] => format!("{one} is symbolic and not bound"),
            more => format!("{} are symbolic and not bound", more.join(", ")),
        };
        let mut problem = symbolic(missing);
        for (other, missing) in &unbound[1..] {
            problem.push_str(&format!("; input `{}`: {}", other.name, symbolic(missing)));
        }
        problem.push_str(&format!(": {}", how.join(", or ")));
        return Err(value_error(&first.name, problem));
    }
    Ok(shapes)
}

/// The error of a binding that names neither an input nor a symbolic dim.
fn unknown_name(name: &str, inputs: &[SymbolicValue]) -> OnnxError {
    let names: Vec<&str> = inputs.iter().map(|i| i.name.as_str()).collect();
    OnnxError::Value {
        value: name.to_owned(),
        problem: format!(
            "is bound, but it is neither an input nor a symbolic dim of the model: its inputs \
             are {}; its symbolic dims: {}",
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            },
            symbolic_dims_text(inputs)
        ),
    }
}

/// The type of graph output `info` for the shape `inferred` its op gives: symbolic or unknown
/// dims take the inferred size; the static ones must be declared as inferred.
fn output_type(info: &ValueInfoProto, inferred: &Shape) -> Result<TensorType, OnnxError> {
    let has_shape = info
        .r#type
        .as_ref()
        .and_then(|t| t.tensor_type.as_ref())
        .is_some_and(|t| t.shape.is_some());
    if !has_shape {
        return Ok(TensorType {
            shape: inferred.clone(),
            dtype: value_dtype(info)?,
        });
    }
    let declared = declared_type(info)?;
    let problem = |problem: String| OnnxError::Value {
        value: info.name.clone(),
        problem,
    };
    if declared.dims.len() != inferred.rank() {
        return Err(problem(format!(
            "is declared with rank {} ({declared}), but its op infers {inferred}",
            declared.dims.len()
        )));
    }
    let dims = declared
        .dims
        .iter()
        .zip(inferred.dims())
        .map(|(d, &size)| match d {
            Dim::Size(declared) => *declared,
            _ => size,
        })
        .collect::<Vec<_>>();
    Ok(TensorType {
        shape: Shape::new(dims),
        dtype: declared.dtype,
    })
}

/// The tensor an initializer or a Constant holds.
fn tensor_from_proto(proto: &TensorProto) -> Result<Tensor, String> {
    if proto.data_location == 1 {
        return Err(
            "its data is external, which pto-op reads for initializers only (not in a \
             Constant)"
                .to_owned(),
        );
    }
    let dtype = DType::from_onnx_code(proto.data_type).ok_or_else(|| {
        format!(
            "data type {} is not one of pto-op's dtypes ({SUPPORTED})",
            element_type_name(proto.data_type)
        )
    })?;
    let shape = dims(proto.dims.iter().map(|&d| Some(d)))?;
    let typed_len = match dtype {
        DType::F32 => proto.float_data.len(),
        DType::I64 => proto.int64_data.len(),
        DType::F64 => proto.double_data.len(),
        DType::U32 | DType::U64 => proto.uint64_data.len(),
        _ => proto.int32_data.len(),
    };
    if !proto.raw_data.is_empty() || typed_len == 0 {
        return Tensor::from_packed_le_bytes(dtype, shape, &proto.raw_data)
            .map_err(|e| e.to_string());
    }
    if dtype.bits() < 8 {
        // The 4- and 2-bit dtypes: each int32_data entry is one packed byte.
        let bytes = proto
            .int32_data
            .iter()
            .map(|&v| {
                u8::try_from(v).map_err(|_| {
                    format!("int32_data value {v} is not a byte of packed {dtype} elements")
                })
            })
            .collect::<Result<Vec<u8>, String>>()?;
        return Tensor::from_packed_le_bytes(dtype, shape, &bytes).map_err(|e| e.to_string());
    }
    if typed_len != shape.numel() {
        return Err(format!(
            "shape {shape} holds {} elements, the data has {typed_len}",
            shape.numel()
        ));
    }
    let mut bytes = Vec::with_capacity(typed_len * dtype.size_bytes());
    match dtype {
        DType::F32 => proto
            .float_data
            .iter()
            .for_each(|v| bytes.extend(v.to_le_bytes())),
        DType::I64 => proto
            .int64_data
            .iter()
            .for_each(|v| bytes.extend(v.to_le_bytes())),
        DType::F64 => proto
            .double_data
            .iter()
            .for_each(|v| bytes.extend(v.to_le_bytes())),
        DType::U64 => proto
            .uint64_data
            .iter()
            .for_each(|v| bytes.extend(v.to_le_bytes())),
        DType::U32 => {
            for &v in &proto.uint64_data {
                let v = u32::try_from(v)
                    .map_err(|_| format!("uint64_data value {v} does not fit a u32 element"))?;
                bytes.extend(v.to_le_bytes());
            }
        }
        _ => {
            for &v in &proto.int32_data {
                // Each type's own range: int8 is signed, uint8 and bool unsigned, and the
                // 16-bit floats are their bits as an unsigned 16-bit integer.
                let fits = match dtype {
                    DType::I8 => i8::try_from(v).is_ok(),
                    DType::U8 => u8::try_from(v).is_ok(),
                    DType::I16 => i16::try_from(v).is_ok(),
                    DType::U16 => u16::try_from(v).is_ok(),
                    DType::Bool => v == 0 || v == 1,
                    DType::F16 | DType::BF16 => u16::try_from(v).is_ok(),
                    // The 8-bit floats: their bit pattern.
                    DType::F8E4M3FN
                    | DType::F8E4M3FNUZ
                    | DType::F8E5M2
                    | DType::F8E5M2FNUZ
                    | DType::F8E8M0 => u8::try_from(v).is_ok(),
                    _ => true,
                };
                if !fits {
                    return Err(format!(
                        "int32_data value {v} does not fit a {dtype} element"
                    ));
                }
                bytes.extend(&v.to_le_bytes()[..dtype.size_bytes()]);
            }
        }
    }
    Tensor::from_le_bytes(dtype, shape, &bytes).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use std::io::{Cursor, Read, Seek, SeekFrom};

    use super::super::proto::{
        AttributeProto, AttributeType, Dimension, GraphProto, ModelProto, NodeProto,
        OperatorSetIdProto, TensorProto, TensorShapeProto, TensorTypeProto, TypeProto,
        ValueInfoProto,
    };
    use super::*;

    /// A reader that counts the bytes read through it.
    struct Counting<R> {
        inner: R,
        read: u64,
    }

    impl<R: Read> Read for Counting<R> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.inner.read(buf)?;
            self.read += n as u64;
            Ok(n)
        }
    }

    impl<R: Seek> Seek for Counting<R> {
        fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
            self.inner.seek(pos)
        }
    }

    fn value(name: &str, dims: &[Option<i64>]) -> ValueInfoProto {
        ValueInfoProto {
            name: name.to_owned(),
            r#type: Some(TypeProto {
                tensor_type: Some(TensorTypeProto {
                    elem_type: 1,
                    shape: Some(TensorShapeProto {
                        dim: dims
                            .iter()
                            .map(|d| Dimension {
                                dim_value: *d,
                                dim_param: d.is_none().then(|| "batch".to_owned()),
                            })
                            .collect(),
                    }),
                }),
            }),
        }
    }

    fn initializer(name: &str, tensor: &Tensor) -> TensorProto {
        TensorProto {
            name: name.to_owned(),
            dims: tensor.dims().iter().map(|&d| d as i64).collect(),
            data_type: tensor.dtype().onnx_code(),
            raw_data: tensor.to_le_bytes(),
            ..Default::default()
        }
    }

    #[test]
    fn a_symbolic_model_is_read_once_and_keeps_every_initializer() {
        // `x: f32[batch, 64] @ w: f32[64, 4096]` (1 MiB), then a Reshape whose target is an
        // initializer the import folds, and an initializer no node uses.
        let w = Tensor::random([64, 4096], DType::F32, 3);
        let target = Tensor::from_vec([2], vec![-1i64, 4096]).unwrap();
        let spare = Tensor::random([3, 5], DType::F16, 4);
        let node = |op: &str, inputs: &[&str], output: &str| NodeProto {
            op_type: op.to_owned(),
            input: inputs.iter().map(|&n| n.to_owned()).collect(),
            output: vec![output.to_owned()],
            ..Default::default()
        };
        let bytes = ModelProto {
            ir_version: 8,
            opset_import: vec![OperatorSetIdProto {
                domain: String::new(),
                version: 17,
            }],
            graph: Some(GraphProto {
                name: "read_once".to_owned(),
                node: vec![
                    node("MatMul", &["x", "w"], "p"),
                    node("Reshape", &["p", "target"], "y"),
                ],
                initializer: vec![
                    initializer("w", &w),
                    initializer("target", &target),
                    initializer("spare", &spare),
                ],
                input: vec![value("x", &[None, Some(64)])],
                output: vec![value("y", &[None, Some(4096)])],
                ..Default::default()
            }),
            ..Default::default()
        }
        .encode_to_vec();
        let mut reader = Counting {
            inner: Cursor::new(bytes.as_slice()),
            read: 0,
        };
        let loaded = loaded_from_reader(&mut reader, bytes.len() as u64, None).unwrap();
        // Each byte once (the skeleton reads the small fields byte by byte, the weights in
        // chunks): reading the file again for the weights read it twice.
        assert_eq!(reader.read, bytes.len() as u64);
        let LoadedModel::Symbolic(model) = loaded else {
            panic!("x has a symbolic dim")
        };
        assert_eq!(model.weights.len(), 3);
        assert_eq!(model.weights["w"], w);
        assert_eq!(model.weights["target"], target);
        assert_eq!(model.weights["spare"], spare);
        let bound = model
            .bind(&ImportOptions::default().dim("batch", 2))
            .unwrap();
        assert_eq!(bound.weights["w"], w);
    }

    #[test]
    fn a_constant_never_replaces_an_initializer() {
        // An Identity of a Constant node whose output takes the name of an initializer that
        // a Reshape reads as its target: refused, not a silent replacement of the
        // initializer's tensor.
        let square = Tensor::from_vec([2], vec![2i64, 2]).unwrap();
        let flat = Tensor::from_vec([1], vec![4i64]).unwrap();
        let node = |op: &str, inputs: &[&str], output: &str| NodeProto {
            op_type: op.to_owned(),
            input: inputs.iter().map(|&n| n.to_owned()).collect(),
            output: vec![output.to_owned()],
            ..Default::default()
        };
        let bytes = ModelProto {
            ir_version: 8,
            opset_import: vec![OperatorSetIdProto {
                domain: String::new(),
                version: 17,
            }],
            graph: Some(GraphProto {
                name: "twice".to_owned(),
                node: vec![
                    NodeProto {
                        attribute: vec![AttributeProto {
                            name: "value".to_owned(),
                            r#type: AttributeType::Tensor as i32,
                            t: Some(initializer("", &square)),
                            ..Default::default()
                        }],
                        ..node("Constant", &[], "square")
                    },
                    node("Identity", &["square"], "flat"),
                    node("Reshape", &["x", "flat"], "y"),
                ],
                initializer: vec![initializer("flat", &flat)],
                input: vec![value("x", &[Some(4)])],
                output: vec![ValueInfoProto {
                    name: "y".to_owned(),
                    r#type: None,
                }],
                ..Default::default()
            }),
            ..Default::default()
        }
        .encode_to_vec();
        let err = from_onnx(&bytes).unwrap_err().to_string();
        assert!(
            err.contains("`flat`") && err.contains("defined twice"),
            "{err}"
        );
    }
}
