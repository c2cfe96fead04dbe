//! ONNX files on disk: a [`Model`] written as one ([`OnnxFile::save_onnx`]) and read from one
//! with its external-data files ([`OnnxFile::load_onnx`]), and a [`LoadedModel`] read from
//! one as it is, its symbolic dims kept.

use std::fs;
use std::path::Path;

use pto_op::Model;
use pto_op::fs::{FileKind, RegularFile, open_regular};

use crate::error::OnnxError;
use crate::export::to_onnx;
use crate::import::{ImportOptions, from_reader};
use crate::loaded::{self, LoadedModel};

/// A [`Model`] written to and read from ONNX files (`use pto_onnx::OnnxFile;` for
/// `model.save_onnx(path)` and `Model::load_onnx(path)`).
///
/// ```
/// use pto_onnx::OnnxFile;
/// use pto_op::{DType, Graph, Model, Shape};
///
/// let g = Graph::new();
/// let x = g.input("x", Shape::from([2, 3]), DType::F32);
/// g.output(&pto_op::ops::relu::apply(&x, &Default::default()).unwrap());
/// let model = g.to_model("relu").unwrap();
/// let path = std::env::temp_dir().join(format!("pto-onnx-doc-{}.onnx", std::process::id()));
/// model.save_onnx(&path).unwrap();
/// assert_eq!(Model::load_onnx(&path).unwrap(), model.with_traced_kernels());
/// std::fs::remove_file(&path).unwrap();
/// ```
pub trait OnnxFile: Sized {
    /// Writes the model as an ONNX file (see [`to_onnx`]), atomically: into a temporary file
    /// beside `path`, then renamed over it.
    ///
    /// # Errors
    ///
    /// As [`to_onnx`], and [`OnnxError::Write`] when the file cannot be written.
    fn save_onnx(&self, path: impl AsRef<Path>) -> Result<(), OnnxError>;

    /// Reads an ONNX file (see [`from_onnx`](crate::from_onnx)), and the external-data
    /// files its initializers name (relative paths inside the file's directory).
    ///
    /// The weights are read from the file straight into their tensors, in chunks: memory
    /// holds them once (a 541 MB model imports in about 1.05 times its weights, where
    /// reading the file, decoding it and building the tensors held them four times).
    ///
    /// # Errors
    ///
    /// As [`from_onnx`](crate::from_onnx), naming the file.
    fn load_onnx(path: impl AsRef<Path>) -> Result<Self, OnnxError> {
        Self::load_onnx_with(path, &ImportOptions::default())
    }

    /// Reads an ONNX file with `options` (see [`from_onnx_with`](crate::from_onnx_with)):
    /// symbolic dims bound. To keep them symbolic instead,
    /// [`LoadedModel::load_onnx`](crate::LoadedModel::load_onnx).
    ///
    /// # Errors
    ///
    /// As [`from_onnx_with`](crate::from_onnx_with), naming the file.
    fn load_onnx_with(path: impl AsRef<Path>, options: &ImportOptions) -> Result<Self, OnnxError>;
}

impl OnnxFile for Model {
    fn save_onnx(&self, path: impl AsRef<Path>) -> Result<(), OnnxError> {
        Ok(pto_op::fs::write_atomic(path, &to_onnx(self)?)?)
    }

    fn load_onnx_with(path: impl AsRef<Path>, options: &ImportOptions) -> Result<Model, OnnxError> {
        let path = path.as_ref();
        let (file, len, dir) = open_onnx(path)?;
        from_reader(&mut std::io::BufReader::new(file), len, dir, options)
            .map_err(|e| e.in_file(path))
    }
}

impl LoadedModel {
    /// Reads an ONNX file as it is: a [`Model`] when its inputs are static, else a
    /// [`SymbolicModel`](crate::SymbolicModel) whose symbolic dims (`batch`, `seq`)
    /// are bound later ([`SymbolicModel::bind`](crate::SymbolicModel::bind)). The
    /// symbolic model is checked by importing it once with every symbolic dim bound to 1.
    ///
    /// # Errors
    ///
    /// As [`OnnxFile::load_onnx`], and an error of that check.
    pub fn load_onnx(path: impl AsRef<Path>) -> Result<LoadedModel, OnnxError> {
        let path = path.as_ref();
        let (file, len, dir) = open_onnx(path)?;
        loaded::from_reader(&mut std::io::BufReader::new(file), len, dir)
            .map_err(|e| e.in_file(path))
    }

    /// The model in ONNX protobuf `bytes`, as [`LoadedModel::load_onnx`] reads a file.
    ///
    /// # Errors
    ///
    /// As [`LoadedModel::load_onnx`].
    pub fn from_onnx(bytes: &[u8]) -> Result<LoadedModel, OnnxError> {
        loaded::from_reader(&mut std::io::Cursor::new(bytes), bytes.len() as u64, None)
    }
}

/// The ONNX file `path` opened, its length, and the directory its external data is read
/// from: a regular file ([`open_regular`]), so a directory, a FIFO or a device is refused
/// by name rather than failing at its first byte or blocking.
fn open_onnx(path: &Path) -> Result<(fs::File, u64, Option<&Path>), OnnxError> {
    let io = |source| OnnxError::Io {
        path: path.to_owned(),
        source,
    };
    let RegularFile { file, len } =
        open_regular(path, FileKind::Onnx).map_err(|e| io(e.into_io()))?;
    let dir = path.parent().map(|d| {
        if d.as_os_str().is_empty() {
            Path::new(".")
        } else {
            d
        }
    });
    Ok((file, len, dir))
}
