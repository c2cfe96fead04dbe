//! The one way pto-op touches the files a user names: every file it reads (model files, ONNX
//! files and their external data, tensor files, device profiles, package manifests, kernel
//! text) is opened with [`open_regular`] or [`read_regular`], and every file it writes (model
//! files, ONNX exports, traces, plots, calibration profiles, tensor outputs) goes through
//! [`write_atomic`].
//!
//! The rules, the same for every file:
//!
//! - **Regular files only.** A FIFO, a character or block device (`/dev/zero`, `/dev/null`), a
//!   socket or a directory is refused by name, on reading and on writing: reading one would
//!   block forever or never end, and writing would replace it. A FIFO is opened without
//!   blocking, so naming one gets the error at once.
//! - **Symbolic links are followed** to where they point, on reading and on writing: writing
//!   through `out.onnx -> v3/out.onnx` replaces `v3/out.onnx` atomically and keeps the link. A
//!   link to nothing, or to anything but a regular file, is refused (writing never creates the
//!   target of a dangling link).
//! - **Reads are capped** per kind of file ([`FileKind::max_bytes`]): a sparse or growing file
//!   is refused before it is read into memory, and a file that grows while it is read stops at
//!   the cap with an error.
//! - **Writes are atomic**: a temporary file beside the target, created exclusively under an
//!   unpredictable name (`.NAME.PID.RANDOM.tmp`), filled, flushed and renamed over it. A write
//!   killed half-way (kill -9, power loss) leaves at most that temporary; the next write to
//!   the same target removes every such temporary whose process is gone.

mod read;
mod write;

pub use read::{FileKind, ReadError, ReadProblem, RegularFile, open_regular, read_regular};
pub use write::{WriteError, WriteStep, write_atomic, write_atomic_with};

/// What a path is when it is not a regular file, for the errors of reading and writing.
fn describe_file_type(file_type: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if file_type.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if file_type.is_char_device() {
            return "a character device";
        }
        if file_type.is_block_device() {
            return "a block device";
        }
        if file_type.is_socket() {
            return "a socket";
        }
    }
    if file_type.is_dir() {
        "a directory"
    } else if file_type.is_symlink() {
        "a symbolic link"
    } else if file_type.is_file() {
        "a regular file"
    } else {
        "not a regular file"
    }
}

#[cfg(test)]
pub(crate) mod test_dir {
    use std::path::PathBuf;

    /// A fresh directory under the system's temporary directory, removed on drop.
    pub(crate) struct TestDir(pub(crate) PathBuf);

    impl TestDir {
        pub(crate) fn new(name: &str) -> TestDir {
            let dir = std::env::temp_dir().join(format!("pto-fs-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("the temporary directory is writable");
            TestDir(dir)
        }

        pub(crate) fn entries(&self) -> Vec<String> {
            let mut names: Vec<String> = std::fs::read_dir(&self.0)
                .expect("listable")
                .map(|e| {
                    e.expect("an entry")
                        .file_name()
                        .to_string_lossy()
                        .into_owned()
                })
                .collect();
            names.sort();
            names
        }

        /// A FIFO named `name` in the directory (by `mkfifo`, which every Unix has).
        #[cfg(unix)]
        pub(crate) fn fifo(&self, name: &str) -> PathBuf {
            let path = self.0.join(name);
            let status = std::process::Command::new("mkfifo")
                .arg(&path)
                .status()
                .expect("mkfifo runs");
            assert!(status.success(), "mkfifo {}", path.display());
            path
        }
    }

    impl Drop for TestDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
