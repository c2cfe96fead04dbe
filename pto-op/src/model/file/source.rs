//! Where a model file's tensors are read from: its bytes in memory ([`BytesTensors`], checked
//! by `safetensors`), or the file itself ([`FileTensors`], each weight read straight into its
//! tensor, so that loading takes about the weights' memory once). The readers of both
//! versions take a [`TensorSource`].

use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use safetensors::SafeTensors;

use super::error::ModelFileError;
use super::safetensors::{
    HEADER_LENGTH_BYTES, Header, MAX_HEADER_BYTES, TensorEntry, check_tensors, layout_holds,
};
use super::tensor_data::read_tensor;
use crate::dtype::DType;
use crate::fs::{FileKind, RegularFile, open_regular};
use crate::shape::Shape;
use crate::tensor::Tensor;

/// Where the tensors of a model file with a checked header come from.
pub trait TensorSource {
    /// The tensor `name` of the header's `entry`, of its checked dtype `dtype`.
    ///
    /// # Errors
    ///
    /// [`ModelFileError::Corrupt`] naming the weight when its bytes do not make the tensor,
    /// [`ModelFileError::Io`] when the file cannot be read.
    fn tensor(
        &mut self,
        name: &str,
        entry: &TensorEntry,
        dtype: DType,
    ) -> Result<Tensor, ModelFileError>;
}

/// The tensors of a model file's bytes, their extents and layout checked.
#[derive(Debug)]
pub struct BytesTensors<'a>(SafeTensors<'a>);

impl<'a> BytesTensors<'a> {
    /// The tensors of the file `bytes`, whose header (ending at `header_end`) is `header`:
    /// each tensor's extent checked (in checked arithmetic, naming the tensor), then the
    /// layout by `safetensors`.
    ///
    /// # Errors
    ///
    /// The structural fault, as [`ModelFileError::Truncated`] or
    /// [`ModelFileError::Corrupt`].
    pub fn new(
        bytes: &'a [u8],
        header_end: usize,
        header: &Header,
    ) -> Result<BytesTensors<'a>, ModelFileError> {
        Ok(BytesTensors(check_tensors(bytes, header_end, header)?))
    }
}

impl TensorSource for BytesTensors<'_> {
    fn tensor(
        &mut self,
        name: &str,
        _entry: &TensorEntry,
        dtype: DType,
    ) -> Result<Tensor, ModelFileError> {
        let view = self
            .0
            .tensor(name)
            .map_err(|e| ModelFileError::corrupt(e.to_string()))?;
        Tensor::from_packed_le_bytes(dtype, view.shape(), view.data())
            .map_err(|e| ModelFileError::corrupt(format!("weight `{name}`: {e}")))
    }
}

/// The tensors of a model file read from the file, each when it is asked for.
#[derive(Debug)]
pub struct FileTensors {
    file: fs::File,
    path: PathBuf,
    header_end: u64,
}

impl FileTensors {
    fn io_error(&self, source: std::io::Error) -> ModelFileError {
        read_error(&self.path, source)
    }
}

impl TensorSource for FileTensors {
    fn tensor(
        &mut self,
        name: &str,
        entry: &TensorEntry,
        dtype: DType,
    ) -> Result<Tensor, ModelFileError> {
        let (start, end) = entry.data_offsets();
        self.file
            .seek(SeekFrom::Start(self.header_end + start as u64))
            .map_err(|e| self.io_error(e))?;
        read_tensor(
            &mut self.file,
            dtype,
            Shape::from(entry.shape()),
            (end - start) as u64,
        )
        .map_err(|e| ModelFileError::corrupt(format!("weight `{name}`: {e}")))
    }
}

/// A model file opened to be read straight from the file: its checked header, its version,
/// and its tensors still in the file.
#[derive(Debug)]
pub struct Streamed {
    /// The header, its layout checked against the file's length.
    pub header: Header,
    /// The format version, 1 or 2.
    pub version: u32,
    /// The tensors, read from the file when asked for.
    pub tensors: FileTensors,
}

/// The model file at `path` opened to read its weights straight from the file into their
/// tensors; `None` when the file's header or layout is not that of a sound model file (the
/// caller then reads it whole, for the error its bytes give).
///
/// # Errors
///
/// [`ModelFileError::Io`] when the file cannot be read.
pub fn open_streamed(path: &Path) -> Result<Option<Streamed>, ModelFileError> {
    let io_error = |source| read_error(path, source);
    let RegularFile {
        mut file,
        len: file_length,
    } = open_regular(path, FileKind::ModelFile).map_err(|e| io_error(e.into_io()))?;
    let mut length = [0u8; HEADER_LENGTH_BYTES];
    if file_length < HEADER_LENGTH_BYTES as u64 {
        return Ok(None);
    }
    file.read_exact(&mut length).map_err(io_error)?;
    let header_length = u64::from_le_bytes(length);
    let Some(header_end) = usize::try_from(header_length)
        .ok()
        .filter(|_| header_length <= MAX_HEADER_BYTES)
        .and_then(|n| n.checked_add(HEADER_LENGTH_BYTES))
        .filter(|&end| end as u64 <= file_length)
    else {
        return Ok(None);
    };
    let mut head = vec![0u8; header_end];
    head[..HEADER_LENGTH_BYTES].copy_from_slice(&length);
    file.read_exact(&mut head[HEADER_LENGTH_BYTES..])
        .map_err(io_error)?;
    let Ok((_, header)) = Header::read(&head) else {
        return Ok(None);
    };
    drop(head);
    let version = header.version().ok();
    let Some(version) = version.filter(|_| layout_holds(&header, file_length - header_end as u64))
    else {
        return Ok(None);
    };
    Ok(Some(Streamed {
        header,
        version,
        tensors: FileTensors {
            file,
            path: path.to_owned(),
            header_end: header_end as u64,
        },
    }))
}

/// The error of reading the model file `path`.
pub(crate) fn read_error(path: &Path, source: std::io::Error) -> ModelFileError {
    ModelFileError::Io {
        file: path.to_owned(),
        operation: "read it".to_owned(),
        source,
    }
}
