//! ONNX tensors: an initializer's or a Constant's `TensorProto` as a tensor, the element
//! types pto-op reads, and the limits on dimensions and elements import accepts.

use prost::Message;
use pto_op::dtype::DType;
use pto_op::shape::Shape;
use pto_op::tensor::Tensor;

use crate::error::OnnxError;
use crate::proto::TensorProto;

/// The largest dimension import accepts: shape rules may multiply two dimensions.
pub(super) const MAX_DIM: u64 = 1 << 31;
/// The most elements import accepts in one value.
const MAX_ELEMENTS: u64 = 1 << 40;

/// The tensor a serialized ONNX `TensorProto` holds (the `.pb` files of the ONNX test data),
/// with its name.
///
/// ```
/// use prost::Message;
/// use pto_onnx::proto::TensorProto;
/// let proto = TensorProto {
///     name: "x".into(),
///     dims: vec![2],
///     data_type: 7,
///     int64_data: vec![3, -4],
///     ..Default::default()
/// };
/// let (name, tensor) = pto_onnx::tensor_from_onnx(&proto.encode_to_vec()).unwrap();
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

/// The ONNX element types pto-op reads, by their ONNX names.
pub(super) const SUPPORTED: &str = "float, float16, bfloat16, double, int32, int64, int16, int8, uint64, \
     uint32, uint16, uint8, bool, float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz, \
     float8e8m0, float4e2m1, int4, uint4, int2, uint2";

/// An ONNX `TensorProto.DataType` code by its ONNX name (`int8`), with the code for one
/// this version of ONNX does not name.
pub(super) fn element_type_name(code: i32) -> String {
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

/// Static dimensions within the import limits.
pub(super) fn dims(raw: impl IntoIterator<Item = Option<i64>>) -> Result<Shape, String> {
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

/// The tensor an initializer or a Constant holds.
pub(super) fn tensor_from_proto(proto: &TensorProto) -> Result<Tensor, String> {
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
