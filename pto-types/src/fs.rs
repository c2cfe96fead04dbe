//! Writing files atomically: every file pto-op and the crates above it write (model files,
//! ONNX exports, traces, reports, calibration profiles) goes through [`write_atomic`].

use std::fmt;
use std::fs::File;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

/// The step of an atomic write that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WriteStep {
    /// The path does not end in a file name.
    Name,
    /// Creating the temporary file in the target's directory.
    CreateTemporary,
    /// Writing the contents into the temporary file.
    Write,
    /// Flushing the temporary file to disk.
    SyncFile,
    /// Renaming the temporary file over the target.
    Rename,
    /// Flushing the directory (the rename) to disk.
    SyncDirectory,
}

impl fmt::Display for WriteStep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WriteStep::Name => "the path does not name a file",
            WriteStep::CreateTemporary => "cannot create a temporary file in its directory",
            WriteStep::Write => "cannot write the temporary file",
            WriteStep::SyncFile => "cannot flush the temporary file to disk",
            WriteStep::Rename => "cannot rename the temporary file over it",
            WriteStep::SyncDirectory => "cannot flush its directory to disk",
        })
    }
}

/// An atomic write failed; the file at `path` is as it was before (except after
/// [`WriteStep::SyncDirectory`], when the new contents are in place but may not survive a
/// crash).
#[derive(Debug, thiserror::Error)]
#[error("writing `{}`: {step}: {source}", path.display())]
pub struct WriteError {
    /// The file being written.
    pub path: PathBuf,
    /// The step that failed.
    pub step: WriteStep,
    /// The error of the operating system (or of the writer given to [`write_atomic_with`]).
    #[source]
    pub source: io::Error,
}

/// Writes `bytes` to `path` atomically; see [`write_atomic_with`].
///
/// ```
/// let dir = std::env::temp_dir().join(format!("pto-fs-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("hello.txt");
/// pto_types::fs::write_atomic(&path, b"hello").unwrap();
/// assert_eq!(std::fs::read(&path).unwrap(), b"hello");
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
///
/// # Errors
///
/// [`WriteError`] naming `path` and the step that failed.
pub fn write_atomic(path: impl AsRef<Path>, bytes: &[u8]) -> Result<(), WriteError> {
    write_atomic_with(path, |file| file.write_all(bytes))
}

/// Writes a file atomically: `write` fills a new temporary file in `path`'s directory
/// (created exclusively under a random name, so a planted file or symlink is never
/// followed), which is flushed to disk and renamed over `path`; then the directory is
/// flushed so the rename survives a crash. A reader sees the old file or the new one, never
/// a part. On failure the temporary file is removed and `path` is untouched.
///
/// # Errors
///
/// [`WriteError`] naming `path` and the step that failed; an error returned by `write` is
/// its source, at [`WriteStep::Write`].
pub fn write_atomic_with(
    path: impl AsRef<Path>,
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> Result<(), WriteError> {
    let path = path.as_ref();
    let fail = |step| {
        move |source| WriteError {
            path: path.to_owned(),
            step,
            source,
        }
    };
    let file_name = path.file_name().ok_or_else(|| {
        fail(WriteStep::Name)(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no file name at the end of the path",
        ))
    })?;
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    // Dropping `temporary` on any early return removes the file.
    let mut temporary = tempfile::Builder::new()
        .prefix(&format!(".{}.", file_name.to_string_lossy()))
        .suffix(".tmp")
        .tempfile_in(directory)
        .map_err(fail(WriteStep::CreateTemporary))?;
    write(temporary.as_file_mut()).map_err(fail(WriteStep::Write))?;
    temporary
        .as_file()
        .sync_all()
        .map_err(fail(WriteStep::SyncFile))?;
    temporary
        .persist(path)
        .map_err(|e| fail(WriteStep::Rename)(e.error))?;
    sync_directory(directory).map_err(fail(WriteStep::SyncDirectory))
}

/// Flushes a directory's entries (a rename) to disk.
#[cfg(unix)]
fn sync_directory(directory: &Path) -> io::Result<()> {
    File::open(directory)?.sync_all()
}

/// Other platforms cannot open a directory as a file; their rename is as durable as it gets.
#[cfg(not(unix))]
fn sync_directory(_directory: &Path) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory under the system's temporary directory, removed on drop.
    struct TestDir(PathBuf);

    impl TestDir {
        fn new(name: &str) -> TestDir {
            let dir = std::env::temp_dir().join(format!("pto-fs-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("the temporary directory is writable");
            TestDir(dir)
        }

        fn entries(&self) -> Vec<String> {
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
    }

    impl Drop for TestDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn replaces_the_file_and_leaves_nothing_else() {
        let dir = TestDir::new("replace");
        let path = dir.0.join("model.pto");
        write_atomic(&path, b"old").expect("writes");
        write_atomic(&path, b"new contents").expect("overwrites");
        assert_eq!(std::fs::read(&path).expect("readable"), b"new contents");
        assert_eq!(dir.entries(), ["model.pto"]);
    }

    #[cfg(unix)]
    #[test]
    fn planted_symlinks_are_not_followed() {
        let dir = TestDir::new("symlink");
        let victim = dir.0.join("victim");
        std::fs::write(&victim, b"precious").expect("writable");
        let path = dir.0.join("out.json");
        // Every predictable name the former helpers used, and the target itself.
        let pid = std::process::id();
        let planted = [
            format!(".out.json.{pid}.tmp"),
            format!(".out.json.{pid}.0.tmp"),
            format!("out.json.{pid}.tmp"),
            ".out.json.tmp".to_owned(),
            "out.json.tmp".to_owned(),
        ];
        for name in &planted {
            std::os::unix::fs::symlink(&victim, dir.0.join(name)).expect("can plant");
        }
        std::os::unix::fs::symlink(&victim, &path).expect("can plant");
        for round in 0..20 {
            write_atomic(&path, format!("round {round}").as_bytes()).expect("writes");
        }
        assert_eq!(std::fs::read(&victim).expect("readable"), b"precious");
        // The symlink at the target was replaced by a regular file, not written through.
        let meta = std::fs::symlink_metadata(&path).expect("exists");
        assert!(meta.file_type().is_file());
        assert_eq!(std::fs::read(&path).expect("readable"), b"round 19");
        let mut expected: Vec<String> = planted.to_vec();
        expected.extend(["out.json".to_owned(), "victim".to_owned()]);
        expected.sort();
        assert_eq!(dir.entries(), expected);
    }

    #[test]
    fn a_failed_write_keeps_the_old_file_and_removes_the_temporary_one() {
        let dir = TestDir::new("failed-write");
        let path = dir.0.join("report.json");
        write_atomic(&path, b"old report").expect("writes");
        let err = write_atomic_with(&path, |file| {
            file.write_all(b"half a rep")?;
            Err(io::Error::other("disk full"))
        })
        .expect_err("the writer failed");
        assert_eq!(err.step, WriteStep::Write);
        assert_eq!(err.path, path);
        assert_eq!(
            err.to_string(),
            format!(
                "writing `{}`: cannot write the temporary file: disk full",
                path.display()
            )
        );
        assert_eq!(std::fs::read(&path).expect("readable"), b"old report");
        assert_eq!(dir.entries(), ["report.json"]);
    }

    #[test]
    fn a_failed_rename_removes_the_temporary_file() {
        let dir = TestDir::new("failed-rename");
        // A non-empty directory in the way: the rename fails.
        let path = dir.0.join("occupied");
        std::fs::create_dir(&path).expect("can create a dir");
        std::fs::write(path.join("inside"), b"kept").expect("writable");
        let err = write_atomic(&path, b"new").expect_err("cannot replace a directory");
        assert_eq!(err.step, WriteStep::Rename);
        assert_eq!(dir.entries(), ["occupied"]);
        assert_eq!(std::fs::read(path.join("inside")).expect("kept"), b"kept");
    }

    #[test]
    fn a_path_without_a_file_name_is_refused() {
        let err = write_atomic(Path::new("/"), b"x").expect_err("no file name");
        assert_eq!(err.step, WriteStep::Name);
    }
}
