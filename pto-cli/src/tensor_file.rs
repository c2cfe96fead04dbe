//! Named tensors from a safetensors file: the inputs of `pto run --inputs FILE`.

use std::collections::BTreeMap;
use std::path::Path;

use pto_op::model::file::{self, SafetensorsError};
use pto_op::{DType, Tensor};

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
    /// The file is no valid safetensors file of tensors pto-op supports: a header length
    /// past the file or the limit, offsets out of range or overlapping, a tensor whose byte
    /// length does not fit its shape, a dtype pto-op lacks (each naming the tensor).
    #[error("{path}: {source}")]
    Invalid {
        /// The file.
        path: String,
        /// What is wrong, from the model loader's safetensors checks (boxed: it is large).
        #[source]
        source: Box<SafetensorsError>,
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

/// Every tensor of the safetensors file at `path`, by name, validated with the model
/// loader's checks ([`pto_op::model::file::read_safetensors`]).
///
/// # Errors
///
/// When the file cannot be read, or is no valid safetensors file of tensors pto-op supports
/// (naming the tensor and what is wrong). Never panics, whatever the bytes.
pub fn read_safetensors(path: &Path) -> Result<BTreeMap<String, Tensor>, TensorFileError> {
    let file = || path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| TensorFileError::Read {
        path: file(),
        source,
    })?;
    file::read_safetensors(&bytes).map_err(|source| TensorFileError::Invalid {
        path: file(),
        source: Box::new(source),
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
        DType::I16 => "<i2",
        DType::U16 => "<u2",
        DType::U32 => "<u4",
        DType::U64 => "<u8",
        DType::F64 => "<f8",
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
