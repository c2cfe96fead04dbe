//! Named tensors from a safetensors file: the inputs of `pto run --inputs FILE`.

use std::collections::BTreeMap;
use std::path::Path;

use pto_op::{DType, Tensor};
use safetensors::{Dtype, SafeTensors};

/// An error of reading a tensor file.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct TensorFileError {
    /// The file.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

/// Every tensor of the safetensors file at `path`, by name.
///
/// # Errors
///
/// When the file cannot be read or parsed, or holds a tensor of a dtype pto-op lacks
/// (named, with its dtype).
pub fn read_safetensors(path: &Path) -> Result<BTreeMap<String, Tensor>, TensorFileError> {
    let error = |message: String| TensorFileError {
        path: path.display().to_string(),
        message,
    };
    let bytes = std::fs::read(path).map_err(|e| error(e.to_string()))?;
    let file = SafeTensors::deserialize(&bytes)
        .map_err(|e| error(format!("not a safetensors file: {e}")))?;
    file.tensors()
        .into_iter()
        .map(|(name, view)| {
            let dtype = dtype_of(view.dtype()).ok_or_else(|| {
                error(format!(
                    "tensor `{name}` has dtype {:?}, which pto-op does not support \
                     (f32, f16, bf16, i32, i64, i8, u8, bool)",
                    view.dtype()
                ))
            })?;
            let tensor = Tensor::from_le_bytes(dtype, view.shape().to_vec(), view.data())
                .map_err(|e| error(format!("tensor `{name}`: {e}")))?;
            Ok((name, tensor))
        })
        .collect()
}

fn dtype_of(dtype: Dtype) -> Option<DType> {
    Some(match dtype {
        Dtype::F32 => DType::F32,
        Dtype::F16 => DType::F16,
        Dtype::BF16 => DType::BF16,
        Dtype::I32 => DType::I32,
        Dtype::I64 => DType::I64,
        Dtype::I8 => DType::I8,
        Dtype::U8 => DType::U8,
        Dtype::BOOL => DType::Bool,
        _ => return None,
    })
}

/// The `.npy` (format 1.0) bytes of `tensor`: a header naming its little-endian dtype and
/// shape, then its data in row-major order. What Python tools (numpy, onnxruntime scripts)
/// read.
///
/// # Errors
///
/// For bf16, which numpy has no dtype for.
///
/// ```
/// use pto_op::{DType, Tensor};
/// let bytes = pto_backends::tensor_file::npy_bytes(&Tensor::zeros([2, 3], DType::F32)).unwrap();
/// assert!(bytes.starts_with(b"\x93NUMPY\x01\x00"));
/// assert_eq!((bytes.len() - 24) % 64, 0); // header padded to 64 bytes, then 24 data bytes
/// ```
pub fn npy_bytes(tensor: &Tensor) -> Result<Vec<u8>, TensorFileError> {
    let descr = match tensor.dtype() {
        DType::F32 => "<f4",
        DType::F16 => "<f2",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
        DType::I8 => "|i1",
        DType::U8 => "|u1",
        DType::Bool => "|b1",
        DType::BF16 => {
            return Err(TensorFileError {
                path: "(npy)".to_owned(),
                message: "numpy has no bf16 dtype: cast the tensor to f32 first".to_owned(),
            });
        }
    };
    let shape = match tensor.dims() {
        [] => "()".to_owned(),
        [d] => format!("({d},)"),
        dims => {
            let dims: Vec<String> = dims.iter().map(ToString::to_string).collect();
            format!("({})", dims.join(", "))
        }
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    // Magic (6) + version (2) + header length (2) + header + newline, padded to 64 bytes.
    let unpadded = 10 + header.len() + 1;
    header.push_str(&" ".repeat(unpadded.next_multiple_of(64) - unpadded));
    header.push('\n');
    let length = u16::try_from(header.len()).map_err(|_| TensorFileError {
        path: "(npy)".to_owned(),
        message: format!("a header of {} bytes does not fit format 1.0", header.len()),
    })?;
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend(length.to_le_bytes());
    bytes.extend(header.as_bytes());
    bytes.extend(tensor.to_le_bytes());
    Ok(bytes)
}
