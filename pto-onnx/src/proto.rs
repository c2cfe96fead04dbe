//! The ONNX protobuf messages that export and import use, written by hand with the official
//! field numbers of `onnx.proto` (no protoc, no build script). Only the fields pto-op reads or
//! writes are declared; a decoder skips the others.
//!
//! Scalar attribute values (`f`, `i`, `s`) and dimensions are `optional` so that a zero is
//! still written: ONNX's checker counts the value fields that are present.

/// A whole model file: `ModelProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelProto {
    /// The IR version the file follows.
    #[prost(int64, tag = "1")]
    pub ir_version: i64,
    /// One opset per domain the graph uses.
    #[prost(message, repeated, tag = "8")]
    pub opset_import: Vec<OperatorSetIdProto>,
    /// The tool that wrote the file.
    #[prost(string, tag = "2")]
    pub producer_name: String,
    /// That tool's version.
    #[prost(string, tag = "3")]
    pub producer_version: String,
    /// Free text.
    #[prost(string, tag = "6")]
    pub doc_string: String,
    /// The graph.
    #[prost(message, optional, tag = "7")]
    pub graph: Option<GraphProto>,
    /// Named metadata.
    #[prost(message, repeated, tag = "14")]
    pub metadata_props: Vec<StringStringEntryProto>,
}

/// `OperatorSetIdProto`: a domain and the opset version the model uses from it.
#[derive(Clone, PartialEq, prost::Message)]
pub struct OperatorSetIdProto {
    /// The domain; empty for the default ONNX domain.
    #[prost(string, tag = "1")]
    pub domain: String,
    /// The opset version.
    #[prost(int64, tag = "2")]
    pub version: i64,
}

/// `StringStringEntryProto`: one metadata entry.
#[derive(Clone, PartialEq, prost::Message)]
pub struct StringStringEntryProto {
    /// The key.
    #[prost(string, tag = "1")]
    pub key: String,
    /// The value.
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `GraphProto`: nodes in a topological order, inputs, outputs and initializers.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GraphProto {
    /// The nodes.
    #[prost(message, repeated, tag = "1")]
    pub node: Vec<NodeProto>,
    /// The graph's name.
    #[prost(string, tag = "2")]
    pub name: String,
    /// Constant tensors (weights).
    #[prost(message, repeated, tag = "5")]
    pub initializer: Vec<TensorProto>,
    /// Free text.
    #[prost(string, tag = "10")]
    pub doc_string: String,
    /// Graph inputs.
    #[prost(message, repeated, tag = "11")]
    pub input: Vec<ValueInfoProto>,
    /// Graph outputs.
    #[prost(message, repeated, tag = "12")]
    pub output: Vec<ValueInfoProto>,
    /// Types of intermediate values.
    #[prost(message, repeated, tag = "13")]
    pub value_info: Vec<ValueInfoProto>,
}

/// `NodeProto`: one operator call.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NodeProto {
    /// Input value names; an empty name is an omitted optional input.
    #[prost(string, repeated, tag = "1")]
    pub input: Vec<String>,
    /// Output value names.
    #[prost(string, repeated, tag = "2")]
    pub output: Vec<String>,
    /// The node's name (optional in ONNX).
    #[prost(string, tag = "3")]
    pub name: String,
    /// The operator's name in its domain.
    #[prost(string, tag = "4")]
    pub op_type: String,
    /// The operator's domain; empty for the default ONNX domain.
    #[prost(string, tag = "7")]
    pub domain: String,
    /// Attributes.
    #[prost(message, repeated, tag = "5")]
    pub attribute: Vec<AttributeProto>,
    /// Free text.
    #[prost(string, tag = "6")]
    pub doc_string: String,
    /// Named metadata (IR version 10 and later).
    #[prost(message, repeated, tag = "9")]
    pub metadata_props: Vec<StringStringEntryProto>,
}

/// `AttributeProto.AttributeType`: which value field of an attribute holds its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum AttributeType {
    /// No type recorded.
    Undefined = 0,
    /// `f`
    Float = 1,
    /// `i`
    Int = 2,
    /// `s`
    String = 3,
    /// `t`
    Tensor = 4,
    /// `g` (not supported by pto-op).
    Graph = 5,
    /// `floats`
    Floats = 6,
    /// `ints`
    Ints = 7,
    /// `strings` (not supported by pto-op).
    Strings = 8,
}

/// `AttributeProto`: one named, typed attribute of a node.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AttributeProto {
    /// The attribute's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Which value field is used.
    #[prost(enumeration = "AttributeType", tag = "20")]
    pub r#type: i32,
    /// A float.
    #[prost(float, optional, tag = "2")]
    pub f: Option<f32>,
    /// An integer.
    #[prost(int64, optional, tag = "3")]
    pub i: Option<i64>,
    /// A string (bytes, UTF-8 by convention).
    #[prost(bytes = "vec", optional, tag = "4")]
    pub s: Option<Vec<u8>>,
    /// A tensor.
    #[prost(message, optional, tag = "5")]
    pub t: Option<TensorProto>,
    /// Floats.
    #[prost(float, repeated, tag = "7")]
    pub floats: Vec<f32>,
    /// Integers.
    #[prost(int64, repeated, tag = "8")]
    pub ints: Vec<i64>,
}

/// `TensorProto.DataType` codes that are not pto-op dtypes but appear in files it writes or
/// reads (the others are [`DType::onnx_code`](pto_op::DType::onnx_code)).
pub mod data_type {
    /// `DOUBLE`: how an `f64` param travels (a scalar tensor attribute).
    pub const DOUBLE: i32 = 11;
}

/// `TensorProto`: a constant tensor, as an initializer or an attribute.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorProto {
    /// Dimensions, outermost first.
    #[prost(int64, repeated, tag = "1")]
    pub dims: Vec<i64>,
    /// The element type, a `TensorProto.DataType` code.
    #[prost(int32, tag = "2")]
    pub data_type: i32,
    /// Elements of a FLOAT tensor (when `raw_data` is empty).
    #[prost(float, repeated, tag = "4")]
    pub float_data: Vec<f32>,
    /// Elements of INT32, INT16, INT8, UINT16, UINT8, BOOL, FLOAT16 and BFLOAT16 tensors, one
    /// per `int32` (16-bit floats as their bits).
    #[prost(int32, repeated, tag = "5")]
    pub int32_data: Vec<i32>,
    /// Elements of an INT64 tensor.
    #[prost(int64, repeated, tag = "7")]
    pub int64_data: Vec<i64>,
    /// The tensor's name (initializers: the value it defines).
    #[prost(string, tag = "8")]
    pub name: String,
    /// Elements as little-endian bytes, row-major.
    #[prost(bytes = "vec", tag = "9")]
    pub raw_data: Vec<u8>,
    /// Elements of a DOUBLE tensor.
    #[prost(double, repeated, tag = "10")]
    pub double_data: Vec<f64>,
    /// Elements of UINT32 and UINT64 tensors.
    #[prost(uint64, repeated, tag = "11")]
    pub uint64_data: Vec<u64>,
    /// Where an external tensor's data is: `location` (a file beside the model), `offset`
    /// and `length` in bytes.
    #[prost(message, repeated, tag = "13")]
    pub external_data: Vec<StringStringEntryProto>,
    /// 1 (`EXTERNAL`) when the data lives in an external file, named by `external_data`.
    #[prost(int32, tag = "14")]
    pub data_location: i32,
}

/// `ValueInfoProto`: a value's name and type.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueInfoProto {
    /// The value's name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its type.
    #[prost(message, optional, tag = "2")]
    pub r#type: Option<TypeProto>,
}

/// `TypeProto`, with only its tensor alternative.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TypeProto {
    /// `tensor_type` of the `value` oneof.
    #[prost(message, optional, tag = "1")]
    pub tensor_type: Option<TensorTypeProto>,
}

/// `TypeProto.Tensor`: element type and shape.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorTypeProto {
    /// A `TensorProto.DataType` code.
    #[prost(int32, tag = "1")]
    pub elem_type: i32,
    /// The shape; absent means unknown rank.
    #[prost(message, optional, tag = "2")]
    pub shape: Option<TensorShapeProto>,
}

/// `TensorShapeProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorShapeProto {
    /// The dimensions, outermost first.
    #[prost(message, repeated, tag = "1")]
    pub dim: Vec<Dimension>,
}

/// `TensorShapeProto.Dimension`: a size or a symbolic name.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Dimension {
    /// A known size.
    #[prost(int64, optional, tag = "1")]
    pub dim_value: Option<i64>,
    /// A symbolic size (pto-op needs static shapes, so import refuses it).
    #[prost(string, optional, tag = "2")]
    pub dim_param: Option<String>,
}
