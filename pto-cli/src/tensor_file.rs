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
    /// The outputs could not be written.
    #[error("{0}")]
    Write(#[from] pto_op::fs::WriteError),
    /// The outputs could not be laid out as a safetensors file.
    #[error("{path}: {source}")]
    Layout {
        /// The file.
        path: String,
        /// What is wrong.
        #[source]
        source: Box<pto_op::ModelFileError>,
    },
    /// The directory of `.npy` files cannot be made.
    #[error("{path}: cannot create the directory: {source}")]
    Directory {
        /// The directory.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Two outputs of different names would be written to the same `.npy` file.
    #[error(
        "outputs `{first}` and `{second}` would both be written to `{file}`: their names differ \
         only in characters a file name cannot hold; write a .safetensors file instead"
    )]
    FileNameClash {
        /// The first output's name.
        first: String,
        /// The second output's name.
        second: String,
        /// The file both map to.
        file: String,
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
    let bytes = pto_op::fs::read_regular(path, pto_op::fs::FileKind::Tensors).map_err(|e| {
        TensorFileError::Read {
            path: file(),
            source: e.into_io(),
        }
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
/// For bf16 and the 8-, 4- and 2-bit dtypes, which numpy has no dtype for.
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
        // numpy has no bf16 and no 8-, 4- or 2-bit float or integer dtypes (ml_dtypes adds
        // them, but a `.npy` file cannot name them).
        dtype @ (DType::BF16
        | DType::F8E4M3FN
        | DType::F8E4M3FNUZ
        | DType::F8E5M2
        | DType::F8E5M2FNUZ
        | DType::F8E8M0
        | DType::F4E2M1
        | DType::I4
        | DType::U4
        | DType::I2
        | DType::U2) => return Err(TensorFileError::NpyDType { dtype }),
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

/// Writes named tensors (a run's outputs, by the model's output names) to `path`: one
/// safetensors file when `path` ends in `.safetensors`, else a directory (created if needed)
/// of one `NAME.npy` file per tensor, each written atomically. A name repeated (an output
/// listed twice) is written once. Returns what was written, for the report.
///
/// In `.npy` file names, characters other than ASCII letters, digits, `.`, `-` and `_`
/// become `_` (a name such as `a/b` or `..` cannot leave the directory).
///
/// # Errors
///
/// A file that cannot be written, a bf16 tensor in a `.npy` directory (numpy has no
/// bf16), two names that map to one file name.
pub fn write_tensors(path: &Path, tensors: &[(String, Tensor)]) -> Result<String, TensorFileError> {
    let mut named = BTreeMap::new();
    for (name, tensor) in tensors {
        named.entry(name.clone()).or_insert_with(|| tensor.clone());
    }
    let is_safetensors = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("safetensors"));
    if is_safetensors {
        let bytes = file::safetensors_bytes(&named).map_err(|source| TensorFileError::Layout {
            path: path.display().to_string(),
            source: Box::new(source),
        })?;
        pto_op::fs::write_atomic(path, &bytes)?;
        return Ok(format!(
            "{} output(s) to {} (safetensors)",
            named.len(),
            path.display()
        ));
    }
    let mut files: BTreeMap<String, &str> = BTreeMap::new();
    let mut contents = Vec::with_capacity(named.len());
    for (name, tensor) in &named {
        let file = npy_file_name(name);
        if let Some(first) = files.insert(file.clone(), name) {
            return Err(TensorFileError::FileNameClash {
                first: first.to_owned(),
                second: name.clone(),
                file,
            });
        }
        contents.push((file, npy_bytes(tensor)?));
    }
    std::fs::create_dir_all(path).map_err(|source| TensorFileError::Directory {
        path: path.display().to_string(),
        source,
    })?;
    for (file, bytes) in &contents {
        pto_op::fs::write_atomic(path.join(file), bytes)?;
    }
    Ok(format!(
        "{} output(s) to {} (one .npy per output)",
        named.len(),
        path.display()
    ))
}

/// The `.npy` file name of an output named `name`: `name.npy`, with characters other than
/// ASCII letters, digits, `.`, `-` and `_` replaced by `_`, and a name of dots only
/// (`.`, `..`) prefixed by `_`.
fn npy_file_name(name: &str) -> String {
    let mut stem: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if stem.is_empty() || stem.chars().all(|c| c == '.') {
        stem.insert(0, '_');
    }
    format!("{stem}.npy")
}

#[cfg(test)]
mod tests {
    use super::npy_file_name;

    #[test]
    fn npy_file_names_stay_in_the_directory() {
        assert_eq!(npy_file_name("logits"), "logits.npy");
        assert_eq!(npy_file_name("n1.y"), "n1.y.npy");
        assert_eq!(npy_file_name("../etc/passwd"), ".._etc_passwd.npy");
        assert_eq!(npy_file_name(".."), "_...npy");
        assert_eq!(npy_file_name(""), "_.npy");
        assert_eq!(npy_file_name("a/b c"), "a_b_c.npy");
    }
}
