//! Opening and reading the files a user names: regular files only, each kind capped.

use std::fmt;
use std::fs::File;
use std::io::{self, Read as _};
use std::path::{Path, PathBuf};

use super::describe_file_type;

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// The kinds of file pto-op reads, each with the most bytes it reads of one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileKind {
    /// A model file (`.pto`): its header, then its weights.
    ModelFile,
    /// An ONNX file.
    Onnx,
    /// A file of an ONNX model's external data.
    OnnxExternalData,
    /// A tensor file (`--inputs`, safetensors or `.npy`).
    Tensors,
    /// A device profile (JSON).
    DeviceProfile,
    /// A package's manifest (`pto_package.json`).
    PackageManifest,
    /// Kernel text, or a generated source file of a package.
    KernelSource,
}

impl FileKind {
    /// The most bytes read of one file of this kind; a larger file is refused unread.
    ///
    /// The caps are far above any real file of the kind and far below what would exhaust a
    /// machine by mistake: an ONNX file is a protobuf message, which cannot pass 2 GiB
    /// (larger models keep their weights as external data); weights (model files, external
    /// data, tensor files) stop at 64 GiB, beyond the memory of the machines pto-op runs on
    /// (the memory budget refuses a model that large before it runs); text files (profiles,
    /// manifests, kernel text) stop at 64 MiB, over a hundred times the largest in the tree.
    pub const fn max_bytes(self) -> u64 {
        match self {
            FileKind::ModelFile | FileKind::OnnxExternalData | FileKind::Tensors => 64 * GIB,
            FileKind::Onnx => 2 * GIB,
            FileKind::DeviceProfile | FileKind::PackageManifest | FileKind::KernelSource => {
                64 * MIB
            }
        }
    }

    /// What the file is, for messages: `model file`, `ONNX file`, ...
    pub const fn name(self) -> &'static str {
        match self {
            FileKind::ModelFile => "model file",
            FileKind::Onnx => "ONNX file",
            FileKind::OnnxExternalData => "ONNX external data file",
            FileKind::Tensors => "tensor file",
            FileKind::DeviceProfile => "device profile",
            FileKind::PackageManifest => "package manifest",
            FileKind::KernelSource => "kernel source",
        }
    }
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a file could not be read; displayed without the path (see [`ReadError`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadProblem {
    /// The operating system could not open the file (it does not exist, no permission).
    #[error("{0}")]
    Open(#[source] io::Error),
    /// The path is not a regular file (after following symbolic links).
    #[error("it is {found}, not a regular file; pto-op reads only regular files")]
    NotRegular {
        /// What it is: `a FIFO (named pipe)`, `a character device`, `a directory`, ...
        found: &'static str,
    },
    /// The file holds more bytes than files of its kind may.
    #[error("it holds {} or more, over the {} cap of a {kind}", bytes(*size), bytes(*max))]
    TooLarge {
        /// The kind of file.
        kind: FileKind,
        /// Its size (or the bytes read before the cap stopped the read).
        size: u64,
        /// The cap ([`FileKind::max_bytes`]).
        max: u64,
    },
    /// Reading the opened file failed.
    #[error("{0}")]
    Read(#[source] io::Error),
}

impl ReadProblem {
    /// The kind of I/O error this is, for callers that report an [`io::Error`].
    pub fn io_kind(&self) -> io::ErrorKind {
        match self {
            ReadProblem::Open(e) | ReadProblem::Read(e) => e.kind(),
            ReadProblem::NotRegular { .. } => io::ErrorKind::InvalidInput,
            ReadProblem::TooLarge { .. } => io::ErrorKind::FileTooLarge,
        }
    }
}

/// A byte count for messages: `2048 bytes (2.0 KiB)`.
fn bytes(n: u64) -> String {
    let (value, unit) = if n >= GIB {
        (n as f64 / GIB as f64, "GiB")
    } else if n >= MIB {
        (n as f64 / MIB as f64, "MiB")
    } else if n >= KIB {
        (n as f64 / KIB as f64, "KiB")
    } else {
        return format!("{n} bytes");
    };
    format!("{n} bytes ({value:.1} {unit})")
}

/// A file of `kind` at `path` could not be opened or read.
#[derive(Debug, thiserror::Error)]
#[error("reading the {kind} `{}`: {problem}", path.display())]
pub struct ReadError {
    /// The path given.
    pub path: PathBuf,
    /// The kind of file it was read as.
    pub kind: FileKind,
    /// What went wrong.
    #[source]
    pub problem: ReadProblem,
}

impl ReadError {
    /// The error as an [`io::Error`] whose message is the problem alone (no path), for a
    /// caller whose own error names the path: the operating system's error itself when it
    /// was one, so `NotFound` and the like are kept.
    pub fn into_io(self) -> io::Error {
        match self.problem {
            ReadProblem::Open(e) | ReadProblem::Read(e) => e,
            problem => io::Error::new(problem.io_kind(), problem),
        }
    }
}

impl From<ReadError> for io::Error {
    fn from(error: ReadError) -> io::Error {
        error.into_io()
    }
}

/// A regular file opened for reading, with its length when it was opened.
#[derive(Debug)]
pub struct RegularFile {
    /// The open file.
    pub file: File,
    /// Its length in bytes, at most the cap of its kind.
    pub len: u64,
}

/// Opens the file of `kind` at `path` for reading: a regular file (symbolic links followed)
/// no larger than [`FileKind::max_bytes`]. A FIFO is opened without blocking and refused, as
/// are devices, sockets and directories.
///
/// # Errors
///
/// [`ReadError`] naming `path`, its kind and the problem.
pub fn open_regular(path: impl AsRef<Path>, kind: FileKind) -> Result<RegularFile, ReadError> {
    let path = path.as_ref();
    let fail = |problem| ReadError {
        path: path.to_owned(),
        kind,
        problem,
    };
    let file = open_nonblocking(path).map_err(|e| fail(ReadProblem::Open(e)))?;
    let metadata = file.metadata().map_err(|e| fail(ReadProblem::Open(e)))?;
    if !metadata.is_file() {
        return Err(fail(ReadProblem::NotRegular {
            found: describe_file_type(metadata.file_type()),
        }));
    }
    let len = metadata.len();
    if len > kind.max_bytes() {
        return Err(fail(ReadProblem::TooLarge {
            kind,
            size: len,
            max: kind.max_bytes(),
        }));
    }
    Ok(RegularFile { file, len })
}

/// Opening without waiting for a writer: `open` of a FIFO blocks until one comes, with
/// `O_NONBLOCK` it returns at once, and the type check refuses it. The flag changes nothing
/// for a regular file.
#[cfg(unix)]
fn open_nonblocking(path: &Path) -> io::Result<File> {
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    Ok(File::from(fd))
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> io::Result<File> {
    File::open(path)
}

/// Reads the whole file of `kind` at `path` ([`open_regular`]'s checks): its bytes, never
/// more than the kind's cap, even if the file grows while it is read.
///
/// ```
/// use pto_types::fs::{FileKind, read_regular};
/// let dir = std::env::temp_dir().join(format!("pto-read-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// std::fs::write(dir.join("profile.json"), b"{}").unwrap();
/// assert_eq!(read_regular(dir.join("profile.json"), FileKind::DeviceProfile).unwrap(), b"{}");
/// let err = read_regular(&dir, FileKind::DeviceProfile).unwrap_err();
/// assert!(err.to_string().ends_with("it is a directory, not a regular file; pto-op reads only regular files"));
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
///
/// # Errors
///
/// [`ReadError`] naming `path`, its kind and the problem.
pub fn read_regular(path: impl AsRef<Path>, kind: FileKind) -> Result<Vec<u8>, ReadError> {
    let path = path.as_ref();
    let RegularFile { file, len } = open_regular(path, kind)?;
    let max = kind.max_bytes();
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ReadError {
            path: path.to_owned(),
            kind,
            problem: ReadProblem::Read(e),
        })?;
    if bytes.len() as u64 > max {
        return Err(ReadError {
            path: path.to_owned(),
            kind,
            problem: ReadProblem::TooLarge {
                kind,
                size: bytes.len() as u64,
                max,
            },
        });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::super::test_dir::TestDir;
    use super::*;

    #[test]
    fn a_regular_file_is_read_through_a_symbolic_link() {
        let dir = TestDir::new("read-link");
        std::fs::write(dir.0.join("real.json"), b"{\"a\": 1}").expect("writable");
        #[cfg(unix)]
        std::os::unix::fs::symlink("real.json", dir.0.join("link.json")).expect("can link");
        #[cfg(not(unix))]
        std::fs::copy(dir.0.join("real.json"), dir.0.join("link.json")).expect("can copy");
        let bytes = read_regular(dir.0.join("link.json"), FileKind::DeviceProfile).expect("reads");
        assert_eq!(bytes, b"{\"a\": 1}");
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_at_once_without_a_writer() {
        let dir = TestDir::new("read-fifo");
        let fifo = dir.fifo("model.onnx");
        // Without O_NONBLOCK this open would wait for a writer forever.
        let err = open_regular(&fifo, FileKind::Onnx).expect_err("a FIFO is no file");
        assert!(matches!(
            err.problem,
            ReadProblem::NotRegular {
                found: "a FIFO (named pipe)"
            }
        ));
        assert_eq!(
            err.to_string(),
            format!(
                "reading the ONNX file `{}`: it is a FIFO (named pipe), not a regular file; \
                 pto-op reads only regular files",
                fifo.display()
            )
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_to_a_fifo_is_refused() {
        let dir = TestDir::new("read-link-fifo");
        dir.fifo("pipe");
        std::os::unix::fs::symlink("pipe", dir.0.join("inputs.safetensors")).expect("can link");
        let err = read_regular(dir.0.join("inputs.safetensors"), FileKind::Tensors)
            .expect_err("the link leads to a FIFO");
        assert!(
            err.to_string().contains("it is a FIFO (named pipe)"),
            "{err}"
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn devices_are_refused_not_read_until_memory_runs_out() {
        // /dev/zero never ends and /dev/null is empty: both are character devices, refused
        // before a byte is read (only opened for reading: nothing is written to them).
        for device in ["/dev/zero", "/dev/null"] {
            let err = read_regular(device, FileKind::Tensors).expect_err("a device is no file");
            assert_eq!(
                err.to_string(),
                format!(
                    "reading the tensor file `{device}`: it is a character device, not a \
                     regular file; pto-op reads only regular files"
                )
            );
        }
    }

    #[test]
    fn a_directory_is_refused() {
        let dir = TestDir::new("read-dir");
        let err = read_regular(&dir.0, FileKind::ModelFile).expect_err("a directory");
        assert!(matches!(
            err.problem,
            ReadProblem::NotRegular {
                found: "a directory"
            }
        ));
    }

    #[test]
    fn a_file_over_its_kind_s_cap_is_refused_unread() {
        let dir = TestDir::new("read-cap");
        let path = dir.0.join("huge.json");
        // A sparse file: 1 byte over the cap of a profile, no disk used.
        let file = File::create(&path).expect("writable");
        file.set_len(FileKind::DeviceProfile.max_bytes() + 1)
            .expect("sparse files");
        let err = read_regular(&path, FileKind::DeviceProfile).expect_err("over the cap");
        assert_eq!(
            err.to_string(),
            format!(
                "reading the device profile `{}`: it holds 67108865 bytes (64.0 MiB) or more, \
                 over the 67108864 bytes (64.0 MiB) cap of a device profile",
                path.display()
            )
        );
        // At the cap exactly, it is read.
        file.set_len(FileKind::DeviceProfile.max_bytes())
            .expect("sparse files");
        let bytes = read_regular(&path, FileKind::DeviceProfile).expect("at the cap");
        assert_eq!(bytes.len() as u64, FileKind::DeviceProfile.max_bytes());
    }

    #[test]
    fn a_missing_file_keeps_the_operating_system_s_error() {
        let dir = TestDir::new("read-missing");
        let err = read_regular(dir.0.join("nope.pto"), FileKind::ModelFile).expect_err("missing");
        assert!(
            matches!(&err.problem, ReadProblem::Open(e) if e.kind() == io::ErrorKind::NotFound)
        );
        assert_eq!(err.into_io().kind(), io::ErrorKind::NotFound);
    }
}
