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
