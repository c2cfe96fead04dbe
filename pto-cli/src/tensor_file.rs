//! Named tensors from a safetensors file: the inputs of `pto run --inputs FILE`.

use std::collections::BTreeMap;
use std::path::Path;

use pto_op::{DType, Tensor, TensorError};
use safetensors::{Dtype, SafeTensors};

/// An error of reading a tensor file or writing tensor bytes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TensorFileError {
    /// The file cannot be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is no safetensors file.
    #[error("{path}: not a safetensors file: {source}")]
    Parse {
        /// The file.
        path: String,
        /// The parser's error.
        #[source]
        source: safetensors::SafeTensorError,
    },
    /// A tensor of a dtype pto-op lacks.
    #[error(
        "{path}: tensor `{tensor}` has dtype {dtype}, which pto-op does not support \
         (f32, f16, bf16, i32, i64, i8, u8, bool)"
    )]
    DType {
        /// The file.
        path: String,
        /// The tensor.
        tensor: String,
        /// Its dtype, as safetensors names it.
        dtype: String,
    },
    /// A tensor whose bytes do not fit its shape and dtype.
    #[error("{path}: tensor `{tensor}`: {source}")]
    Tensor {
        /// The file.
        path: String,
        /// The tensor.
        tensor: String,
        /// The tensor's error.
        #[source]
        source: TensorError,
    },
    /// A dtype the `.npy` format has no code for.
    #[error("(npy): numpy has no {dtype} dtype: cast the tensor to f32 first")]
    NpyDType {
        /// The dtype.
        dtype: DType,
    },
    /// A `.npy` header too long for format 1.0.
    #[error("(npy): a header of {bytes} bytes does not fit format 1.0")]
    NpyHeader {
        /// The header's length.
        bytes: usize,
    },
}

/// Every tensor of the safetensors file at `path`, by name.
///
/// # Errors
///
/// When the file cannot be read or parsed, or holds a tensor of a dtype pto-op lacks
/// (named, with its dtype).
pub fn read_safetensors(path: &Path) -> Result<BTreeMap<String, Tensor>, TensorFileError> {
    let file = || path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| TensorFileError::Read {
        path: file(),
        source,
    })?;
    let tensors = SafeTensors::deserialize(&bytes).map_err(|source| TensorFileError::Parse {
        path: file(),
        source,
    })?;
    tensors
        .tensors()
        .into_iter()
        .map(|(name, view)| {
            let dtype = dtype_of(view.dtype()).ok_or_else(|| TensorFileError::DType {
                path: file(),
                tensor: name.clone(),
                dtype: format!("{:?}", view.dtype()),
            })?;
            let tensor = Tensor::from_le_bytes(dtype, view.shape().to_vec(), view.data()).map_err(
                |source| TensorFileError::Tensor {
                    path: file(),
                    tensor: name.clone(),
                    source,
                },
            )?;
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
/// use pto_op::{DType, Tensor, TensorError};
/// let bytes = pto_cli::tensor_file::npy_bytes(&Tensor::zeros([2, 3], DType::F32)).unwrap();
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
        DType::BF16 => return Err(TensorFileError::NpyDType { dtype: DType::BF16 }),
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
    let length = u16::try_from(header.len()).map_err(|_| TensorFileError::NpyHeader {
        bytes: header.len(),
    })?;
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend(length.to_le_bytes());
    bytes.extend(header.as_bytes());
    bytes.extend(tensor.to_le_bytes());
    Ok(bytes)
}
