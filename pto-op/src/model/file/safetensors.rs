//! The safetensors container of the model file (both versions) and of `pto run --outputs
//! FILE.safetensors`: its header (the tensor list and `__metadata__`), checked before any
//! tensor is read; its layout; reading it ([`read_safetensors`]) and writing it ([`Layout`],
//! [`safetensors_bytes`]) without a copy of the tensors.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use safetensors::{Dtype, SafeTensors};
use serde::Deserialize;

use super::error::ModelFileError;
use crate::dtype::DType;
use crate::shape::Shape;
use crate::tensor::{Tensor, with_dtype};

/// The name safetensors reserves for the metadata in the header: no weight may take it.
pub const METADATA_KEY: &str = "__metadata__";

/// The largest header safetensors accepts (100 MB); a file announcing more is not one.
pub(crate) const MAX_HEADER_BYTES: u64 = 100_000_000;

/// The length of the little-endian `u64` that starts every safetensors file.
pub(crate) const HEADER_LENGTH_BYTES: usize = 8;

/// An error of the structure of a safetensors file: its header length, header, tensor
/// extents, layout, dtypes or bytes. What [`read_safetensors`] and the model loader check
/// before they read any tensor.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SafetensorsError {
    /// The file ends before what its header describes.
    #[error("truncated: {part} ends at byte {expected}, but the file has {actual} bytes")]
    Truncated {
        /// What is cut off: the header length, the header, or the tensor data.
        part: &'static str,
        /// The length the file needs.
        expected: usize,
        /// The length it has.
        actual: usize,
    },
    /// The header length in the first 8 bytes is larger than safetensors allows.
    #[error(
        "its first 8 bytes give a header length of {length} bytes, more than the {limit} a \
         safetensors file may have"
    )]
    HeaderTooLong {
        /// The header length the file gives.
        length: u64,
        /// The largest header safetensors reads.
        limit: u64,
    },
    /// The header is not the JSON of a safetensors header.
    #[error("the header is not valid: {source}")]
    Header {
        /// The JSON parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// A tensor's end offset is so large that no file could hold it.
    #[error("tensor `{tensor}` ends at data offset {end}, beyond any file")]
    OffsetBeyondAnyFile {
        /// The tensor.
        tensor: String,
        /// Its end offset in the data.
        end: usize,
    },
    /// A tensor's data offsets span another byte length than its dtype and shape take.
    #[error(
        "tensor `{tensor}`: {dtype}{shape} takes {takes}, but its data_offsets [{start}, {end}] span {spans}"
    )]
    ByteLength {
        /// The tensor.
        tensor: String,
        /// Its dtype, as safetensors names it.
        dtype: Dtype,
        /// Its shape.
        shape: Shape,
        /// The bytes the dtype and shape take, e.g. `64 bytes`.
        takes: String,
        /// The bytes the offsets span, e.g. `60 bytes`.
        spans: String,
        /// The start offset.
        start: usize,
        /// The end offset.
        end: usize,
    },
    /// The tensors overlap, leave gaps, or do not end where the file does (as `safetensors`
    /// checks).
    #[error("invalid tensor layout: {source}")]
    Layout {
        /// The error of `safetensors`, naming the tensor.
        #[source]
        source: safetensors::SafeTensorError,
    },
    /// A tensor of a dtype pto-op does not support.
    #[error(
        "tensor `{tensor}` has dtype {dtype}, which pto-op does not support (it reads every \
         safetensors dtype but F6_E2M3, F6_E3M2 and C64)"
    )]
    DType {
        /// The tensor.
        tensor: String,
        /// Its dtype, as safetensors names it.
        dtype: Dtype,
    },
    /// A tensor whose bytes do not make a tensor of its dtype and shape.
    #[error("tensor `{tensor}`: {source}")]
    Tensor {
        /// The tensor.
        tensor: String,
        /// The tensor's error.
        #[source]
        source: crate::tensor::TensorError,
    },
}

impl From<SafetensorsError> for ModelFileError {
    /// The model loader's error of a structural fault, with the messages it always had.
    fn from(e: SafetensorsError) -> ModelFileError {
        match e {
            SafetensorsError::Truncated {
                part,
                expected,
                actual,
            } => ModelFileError::Truncated {
                file: None,
                part,
                expected,
                actual,
            },
            SafetensorsError::HeaderTooLong { .. } => ModelFileError::NotAModelFile {
                file: None,
                reason: e.to_string(),
            },
            SafetensorsError::Layout { source } => ModelFileError::corrupt(source.to_string()),
            other => ModelFileError::corrupt(other.to_string()),
        }
    }
}

/// Every tensor of the safetensors file `bytes`, by name, validated as the model loader
/// validates its weights: the header length against the limit and the file, the header's
/// JSON, each tensor's offsets and byte length against its dtype and shape (in checked
/// arithmetic), the layout, and the dtypes against pto-op's. Nothing is allocated from a
/// size in the file before it is checked against the file's length.
///
/// Never panics: any bytes give the tensors or an error naming the tensor at fault.
///
/// ```
/// use pto_op::model::file::read_safetensors;
/// let err = read_safetensors(b"\xff\xff\xff\xff\xff\xff\xff\xff").unwrap_err();
/// assert!(err.to_string().contains("header length of 18446744073709551615 bytes"));
/// ```
///
/// # Errors
///
/// A [`SafetensorsError`] saying what is wrong, and with which tensor.
pub fn read_safetensors(bytes: &[u8]) -> Result<BTreeMap<String, Tensor>, SafetensorsError> {
    let (header_end, header) = Header::read(bytes)?;
    let tensors = check_tensors(bytes, header_end, &header)?;
    header
        .tensors
        .keys()
        .map(|name| {
            let view = tensors
                .tensor(name)
                .map_err(|source| SafetensorsError::Layout { source })?;
            let dtype = pto_dtype(view.dtype()).map_err(|dtype| SafetensorsError::DType {
                tensor: name.clone(),
                dtype,
            })?;
            let tensor = Tensor::from_packed_le_bytes(dtype, view.shape(), view.data()).map_err(
                |source| SafetensorsError::Tensor {
                    tensor: name.clone(),
                    source,
                },
            )?;
            Ok((name.clone(), tensor))
        })
        .collect()
}

/// Checks each tensor's extent in `bytes` (checked arithmetic, named tensors), then lets
/// `safetensors` check the layout.
pub(crate) fn check_tensors<'a>(
    bytes: &'a [u8],
    header_end: usize,
    header: &Header,
) -> Result<SafeTensors<'a>, SafetensorsError> {
    let data_length = bytes.len().saturating_sub(header_end);
    if let Some((name, info)) = header
        .tensors
        .iter()
        .max_by_key(|(_, info)| info.data_offsets.1)
        .filter(|(_, info)| info.data_offsets.1 > data_length)
    {
        return Err(match header_end.checked_add(info.data_offsets.1) {
            Some(end) => SafetensorsError::Truncated {
                part: "the tensor data",
                expected: end,
                actual: bytes.len(),
            },
            None => SafetensorsError::OffsetBeyondAnyFile {
                tensor: name.clone(),
                end: info.data_offsets.1,
            },
        });
    }
    for (name, info) in &header.tensors {
        let (start, end) = info.data_offsets;
        let size_bits = info
            .shape
            .iter()
            .try_fold(info.dtype.bitsize(), |acc, &d| acc.checked_mul(d));
        let size = size_bits.filter(|bits| bits % 8 == 0).map(|bits| bits / 8);
        if end.checked_sub(start) != size {
            return Err(SafetensorsError::ByteLength {
                tensor: name.clone(),
                dtype: info.dtype,
                shape: Shape::from(info.shape.as_slice()),
                takes: match (size, size_bits) {
                    (Some(n), _) => format!("{n} bytes"),
                    (None, Some(_)) => "no whole number of bytes".to_owned(),
                    (None, None) => "more bytes than memory can address".to_owned(),
                },
                spans: end
                    .checked_sub(start)
                    .map_or("a negative length".to_owned(), |n| format!("{n} bytes")),
                start,
                end,
            });
        }
    }
    SafeTensors::deserialize(bytes).map_err(|source| SafetensorsError::Layout { source })
}

/// Whether the tensors of `header` lie as `safetensors` requires of a file with
/// `data_length` bytes after its header: one after the other from offset 0, each of its
/// dtype and shape's length, the last ending at the end of the file.
pub(crate) fn layout_holds(header: &Header, data_length: u64) -> bool {
    let mut extents: Vec<&TensorEntry> = header.tensors.values().collect();
    extents.sort_unstable_by_key(|info| info.data_offsets);
    let mut at = 0usize;
    for info in extents {
        let (start, end) = info.data_offsets;
        let bits = info
            .shape
            .iter()
            .try_fold(info.dtype.bitsize(), |acc, &d| acc.checked_mul(d));
        if start != at
            || end < start
            || bits.filter(|b| b % 8 == 0).map(|b| b / 8) != Some(end - start)
        {
            return false;
        }
        at = end;
    }
    u64::try_from(at).ok() == Some(data_length)
}

/// The safetensors header, read to find the metadata and to check each tensor's extent
/// before `safetensors` reads them: it adds the last offset to the header length without
/// checking, which overflows (a panic in debug builds) for offsets near `usize::MAX`, and
/// its size errors do not name the tensor.
#[derive(Debug, Deserialize)]
pub struct Header {
    #[serde(rename = "__metadata__", default)]
    metadata: BTreeMap<String, String>,
    #[serde(flatten)]
    tensors: BTreeMap<String, TensorEntry>,
}

impl Header {
    /// The end of the header in `bytes` and the header, its length checked against the limit
    /// and the file before it is read.
    ///
    /// # Errors
    ///
    /// A header length over the limit or past the end of `bytes`, or a header that is not
    /// the JSON of a safetensors header.
    pub fn read(bytes: &[u8]) -> Result<(usize, Header), SafetensorsError> {
        let truncated = |part, expected| SafetensorsError::Truncated {
            part,
            expected,
            actual: bytes.len(),
        };
        let length_bytes: [u8; HEADER_LENGTH_BYTES] = bytes
            .get(..HEADER_LENGTH_BYTES)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| truncated("the 8-byte header length", HEADER_LENGTH_BYTES))?;
        let header_length = u64::from_le_bytes(length_bytes);
        let header_end = usize::try_from(header_length)
            .ok()
            .filter(|_| header_length <= MAX_HEADER_BYTES)
            .and_then(|n| n.checked_add(HEADER_LENGTH_BYTES))
            .ok_or(SafetensorsError::HeaderTooLong {
                length: header_length,
                limit: MAX_HEADER_BYTES,
            })?;
        let header_bytes = bytes
            .get(HEADER_LENGTH_BYTES..header_end)
            .ok_or_else(|| truncated("the header", header_end))?;
        let header: Header = serde_json::from_slice(header_bytes)
            .map_err(|source| SafetensorsError::Header { source })?;
        Ok((header_end, header))
    }

    /// The `__metadata__` entries.
    pub fn metadata(&self) -> &BTreeMap<String, String> {
        &self.metadata
    }

    /// The tensors, by name.
    pub fn tensors(&self) -> &BTreeMap<String, TensorEntry> {
        &self.tensors
    }
}

/// One tensor's entry in the header.
#[derive(Debug, Deserialize)]
pub struct TensorEntry {
    dtype: Dtype,
    shape: Vec<usize>,
    data_offsets: (usize, usize),
}

impl TensorEntry {
    /// The tensor's pto dtype, or its safetensors dtype when pto-op has none.
    pub fn dtype(&self) -> Result<DType, Dtype> {
        pto_dtype(self.dtype)
    }

    /// The tensor's dims, outermost first.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Where the tensor's bytes are, from the end of the header: `[start, end)`.
    pub fn data_offsets(&self) -> (usize, usize) {
        self.data_offsets
    }
}

/// The safetensors dtype of `dtype`; `None` for the 4- and 2-bit integers, which
/// safetensors lacks (i4, u4, i2, u2). f4e2m1 is `F4`, stored packed two to a byte (the
/// first element in the low nibble, as ONNX and PyTorch's `float4_e2m1fn_x2` pack it) where
/// pto-op's tensors take a byte per element.
fn safetensors_dtype(dtype: DType) -> Option<Dtype> {
    Some(match dtype {
        DType::F32 => Dtype::F32,
        DType::F16 => Dtype::F16,
        DType::BF16 => Dtype::BF16,
        DType::I32 => Dtype::I32,
        DType::I64 => Dtype::I64,
        DType::I8 => Dtype::I8,
        DType::U8 => Dtype::U8,
        DType::Bool => Dtype::BOOL,
        DType::I16 => Dtype::I16,
        DType::U16 => Dtype::U16,
        DType::U32 => Dtype::U32,
        DType::U64 => Dtype::U64,
        DType::F64 => Dtype::F64,
        DType::F8E4M3FN => Dtype::F8_E4M3,
        DType::F8E4M3FNUZ => Dtype::F8_E4M3FNUZ,
        DType::F8E5M2 => Dtype::F8_E5M2,
        DType::F8E5M2FNUZ => Dtype::F8_E5M2FNUZ,
        DType::F8E8M0 => Dtype::F8_E8M0,
        DType::F4E2M1 => Dtype::F4,
        DType::I4 | DType::U4 | DType::I2 | DType::U2 => return None,
    })
}

/// The pto dtype of a safetensors dtype, or the dtype itself when pto-op has none.
fn pto_dtype(dtype: Dtype) -> Result<DType, Dtype> {
    DType::ALL
        .into_iter()
        .find(|&d| safetensors_dtype(d) == Some(dtype))
        .ok_or(dtype)
}

/// The bytes of a safetensors file holding `tensors` by name (and an empty metadata
/// table), in the layout [`read_safetensors`] reads back: what `pto run --outputs
/// FILE.safetensors` writes, and what `safetensors` and `safetensors.numpy` load.
///
/// ```
/// use std::collections::BTreeMap;
/// use pto_op::Tensor;
/// use pto_op::model::file::{read_safetensors, safetensors_bytes};
/// let tensors = BTreeMap::from([("logits".to_owned(), Tensor::from_vec([2], vec![1.0f32, 2.0]).unwrap())]);
/// let bytes = safetensors_bytes(&tensors).unwrap();
/// assert_eq!(read_safetensors(&bytes).unwrap(), tensors);
/// ```
///
/// # Errors
///
/// [`ModelFileError::HeaderTooLarge`] when the names and shapes make a header over the
/// limit the reader accepts.
pub fn safetensors_bytes(tensors: &BTreeMap<String, Tensor>) -> Result<Vec<u8>, ModelFileError> {
    Ok(Layout::new(&BTreeMap::new(), tensors)?.into_bytes())
}

/// Bytes of tensor data converted and written at a time when a file is written: the
/// writer's memory beyond the tensors it writes.
const WRITE_CHUNK_BYTES: usize = 1 << 20;

/// A safetensors file laid out but not yet written: its header and its tensors, in file
/// order. Built by hand rather than with `safetensors::serialize`, whose `HashMap` metadata
/// comes out in a random order: the same model must give the same bytes. The layout is the
/// one `safetensors` reads: tensors by decreasing alignment then name, contiguous, and the
/// header padded with spaces to a multiple of 8 bytes.
///
/// Laying out checks everything that can fail but the writing itself, so a save that
/// starts writing only fails for the file's sake; writing then streams the header and each
/// tensor's bytes, a chunk at a time, without a copy of the weights.
#[derive(Debug)]
pub struct Layout<'a> {
    /// The JSON header, padded.
    header: Vec<u8>,
    /// The tensors in file order.
    tensors: Vec<&'a Tensor>,
    /// The bytes of the tensor data.
    data_bytes: usize,
}

impl<'a> Layout<'a> {
    /// The layout of a file of `weights` and `metadata`.
    ///
    /// # Errors
    ///
    /// A tensor of a dtype safetensors lacks, an f4e2m1 tensor of an odd number of
    /// elements, or a header over the limit safetensors reads.
    pub fn new(
        metadata: &BTreeMap<&str, String>,
        weights: &'a BTreeMap<String, Tensor>,
    ) -> Result<Layout<'a>, ModelFileError> {
        let mut order: Vec<(&String, &Tensor)> = weights.iter().collect();
        order.sort_by(|(a_name, a), (b_name, b)| {
            let alignment = |t: &Tensor| t.dtype().size_bytes();
            alignment(b)
                .cmp(&alignment(a))
                .then_with(|| a_name.cmp(b_name))
        });

        let mut header = serde_json::Map::new();
        header.insert(METADATA_KEY.to_owned(), serde_json::json!(metadata));
        let mut data_bytes = 0usize;
        let mut tensors = Vec::with_capacity(order.len());
        for (name, tensor) in order {
            let dtype = safetensors_dtype(tensor.dtype()).ok_or_else(|| {
                ModelFileError::UnsupportedDType {
                    file: None,
                    tensor: name.clone(),
                    dtype: tensor.dtype(),
                }
            })?;
            let start = data_bytes;
            data_bytes += stored_bytes(name, tensor)?;
            header.insert(
                name.clone(),
                serde_json::json!({
                    "dtype": dtype,
                    "shape": tensor.dims(),
                    "data_offsets": [start, data_bytes],
                }),
            );
            tensors.push(tensor);
        }
        let mut header = serde_json::Value::Object(header).to_string().into_bytes();
        header.resize(header.len().next_multiple_of(HEADER_LENGTH_BYTES), b' ');
        if header.len() as u64 > MAX_HEADER_BYTES {
            return Err(ModelFileError::HeaderTooLarge {
                file: None,
                bytes: header.len(),
                limit: MAX_HEADER_BYTES,
            });
        }
        Ok(Layout {
            header,
            tensors,
            data_bytes,
        })
    }

    /// Writes the file to `out`: the header length, the header, then each tensor's bytes
    /// (little endian; f4e2m1 packed two to a byte, the first element in the low nibble),
    /// converted [`WRITE_CHUNK_BYTES`] at a time.
    fn write_to(&self, out: &mut impl io::Write) -> io::Result<()> {
        out.write_all(&(self.header.len() as u64).to_le_bytes())?;
        out.write_all(&self.header)?;
        let mut buffer = Vec::with_capacity(WRITE_CHUNK_BYTES.min(self.data_bytes));
        for tensor in &self.tensors {
            write_tensor(out, tensor, &mut buffer)?;
        }
        Ok(())
    }

    /// The file's bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        let mut bytes =
            Vec::with_capacity(HEADER_LENGTH_BYTES + self.header.len() + self.data_bytes);
        // Writing to a `Vec` cannot fail; should it, the bytes are short and fail to load.
        let _ = self.write_to(&mut bytes);
        bytes
    }

    /// Writes the file to `path` atomically (temporary file, flush, rename), streaming
    /// through a buffer of 1 MiB.
    ///
    /// # Errors
    ///
    /// [`ModelFileError::Write`] when the file cannot be written; the file is as it was.
    pub fn save(&self, path: &Path) -> Result<(), ModelFileError> {
        Ok(crate::fs::write_atomic_with(path, |file| {
            let mut out = io::BufWriter::with_capacity(WRITE_CHUNK_BYTES, file);
            self.write_to(&mut out)?;
            io::Write::flush(&mut out)
        })?)
    }
}

/// The bytes `tensor` takes in a safetensors file: f4e2m1 packed two to a byte (safetensors'
/// `F4`, which holds only whole bytes: an even number of elements).
fn stored_bytes(name: &str, tensor: &Tensor) -> Result<usize, ModelFileError> {
    let numel = tensor.numel();
    if tensor.dtype() == DType::F4E2M1 {
        if !numel.is_multiple_of(2) {
            return Err(ModelFileError::OddPackedCount {
                file: None,
                tensor: name.to_owned(),
                shape: tensor.shape(),
            });
        }
        return Ok(numel / 2);
    }
    Ok(numel * tensor.dtype().size_bytes())
}

/// Writes the stored bytes of `tensor` ([`stored_bytes`]) to `out`, converting a chunk at a
/// time in `buffer`.
fn write_tensor(out: &mut impl io::Write, tensor: &Tensor, buffer: &mut Vec<u8>) -> io::Result<()> {
    use crate::tensor::sealed::Sealed as _;
    let dtype = tensor.dtype();
    let size = dtype.size_bytes();
    let chunk = (WRITE_CHUNK_BYTES / size).max(2);
    with_dtype!(dtype, T => {
        let elements = tensor.as_slice::<T>().map_err(io::Error::other)?;
        for part in elements.chunks(chunk) {
            buffer.clear();
            part.iter().for_each(|x| x.write_le(buffer));
            if dtype == DType::F4E2M1 {
                // A byte per element in memory, two per byte in the file; `chunk` is even.
                let packed = buffer.len() / 2;
                for i in 0..packed {
                    buffer[i] = (buffer[2 * i] & 0x0f) | (buffer[2 * i + 1] << 4);
                }
                buffer.truncate(packed);
            }
            out.write_all(buffer)?;
        }
        Ok(())
    })
}
