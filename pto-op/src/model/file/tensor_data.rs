//! Tensor data in files: the little-endian bytes of a tensor read straight into its array,
//! in chunks, so that memory holds the tensor once (the model file's weights, and the
//! initializers of an ONNX file, are read so).

use std::io::Read;

use crate::dtype::DType;
use crate::shape::Shape;
use crate::tensor::sealed::Sealed as _;
use crate::tensor::{Tensor, with_dtype};

/// Bytes read at a time when a tensor is read from its place.
const CHUNK_BYTES: usize = 1 << 20;

/// A `dtype` tensor of `shape` from the `len` bytes at `reader`'s position (little-endian,
/// row-major), read in chunks straight into the tensor's array.
///
/// # Errors
///
/// A length that is not the tensor's, a read that fails, or a bool element that is neither
/// 0 nor 1; the message says which.
pub fn read_tensor<R: Read>(
    reader: &mut R,
    dtype: DType,
    shape: Shape,
    len: u64,
) -> Result<Tensor, String> {
    if dtype.bits() < 8 {
        // The 4- and 2-bit dtypes are packed in ONNX: read whole, then unpacked to a byte
        // per element.
        let expected = shape.numel().div_ceil(8 / dtype.bits());
        if u64::try_from(expected).ok() != Some(len) {
            return Err(format!(
                "a {dtype} tensor of shape {shape} takes {expected} packed bytes, the data has \
                 {len}"
            ));
        }
        let mut bytes = vec![0u8; expected];
        reader
            .read_exact(&mut bytes)
            .map_err(|e| format!("reading its data: {e}"))?;
        return Tensor::from_packed_le_bytes(dtype, shape, &bytes).map_err(|e| e.to_string());
    }
    let size = dtype.size_bytes();
    let expected = shape.numel().checked_mul(size);
    if expected.and_then(|e| u64::try_from(e).ok()) != Some(len) {
        return Err(format!(
            "a {dtype} tensor of shape {shape} takes {} bytes, the data has {len}",
            expected.map_or_else(|| "more".to_owned(), |e| e.to_string())
        ));
    }
    let numel = shape.numel();
    let chunk = CHUNK_BYTES / size * size;
    with_dtype!(dtype, T => {
        let mut values: Vec<T> = Vec::with_capacity(numel);
        let mut buffer = vec![0u8; chunk.min(numel * size)];
        let mut left = numel * size;
        while left > 0 {
            let part = &mut buffer[..chunk.min(left)];
            reader
                .read_exact(part)
                .map_err(|e| format!("reading its data: {e}"))?;
            for bytes in part.chunks_exact(size) {
                let Some(value) = T::read_le(bytes) else {
                    return Err(format!(
                        "element {} is the byte {}, but bool elements must be 0 or 1",
                        values.len(),
                        bytes[0]
                    ));
                };
                values.push(value);
            }
            left -= part.len();
        }
        Tensor::from_vec(shape, values).map_err(|e| e.to_string())
    })
}
