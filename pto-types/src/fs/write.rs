//! Writing files atomically, only over a regular file or a new name.

use std::fmt;
use std::fs::File;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use super::describe_file_type;

/// The step of an atomic write that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum WriteStep {
    /// The path does not end in a file name.
    Name,
    /// The path is something a write must not replace: a FIFO, a device, a socket, a
    /// directory, or a symbolic link to nothing or to one of those.
    Target,
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
            WriteStep::Target => "refusing to replace it",
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
/// // A directory (like a FIFO or a device) is never replaced.
/// let err = pto_types::fs::write_atomic(&dir, b"hello").unwrap_err();
/// assert!(err.to_string().ends_with("refusing to replace it: it is a directory, not a regular file"));
/// # std::fs::remove_dir_all(&dir).unwrap();
/// ```
///
/// # Errors
///
/// [`WriteError`] naming `path` and the step that failed.
pub fn write_atomic(path: impl AsRef<Path>, bytes: &[u8]) -> Result<(), WriteError> {
    write_atomic_with(path, |file| file.write_all(bytes))
}

/// Writes a file atomically: `write` fills a new temporary file in the target's directory
/// (created exclusively under an unpredictable name, `.NAME.PID.RANDOM.tmp`, so a planted
/// file or symlink is never followed), which is flushed to disk and renamed over the target;
/// then the directory is flushed so the rename survives a crash. A reader sees the old file
/// or the new one, never a part. On failure the temporary file is removed and the target is
/// untouched.
///
/// The target is `path` when it is a regular file or names nothing; a symbolic link is
/// followed (the file it leads to is replaced, the link kept). Anything else (a FIFO, a
/// device, a socket, a directory, a link to nothing or to one of those) is refused before
/// anything is written. Temporaries of the same target left by a process that is gone (a
/// write killed with kill -9) are removed first.
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
    if path.file_name().is_none() {
        return Err(fail(WriteStep::Name)(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no file name at the end of the path",
        )));
    }
    let target = resolve_target(path).map_err(fail(WriteStep::Target))?;
    let file_name = target
        .file_name()
        .expect("a resolved target ends in a file name")
        .to_string_lossy()
        .into_owned();
    let directory = match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    remove_stale_temporaries(directory, &file_name);
    let prefix = temporary_prefix(&file_name, std::process::id());
    let mut builder = tempfile::Builder::new();
    builder
        .prefix(&prefix)
        .suffix(TEMPORARY_SUFFIX)
        .rand_bytes(TEMPORARY_RANDOM_CHARS);
    // A new file gets 0666 less the umask (as `open` applies it to the mode asked for),
    // as files other tools create do, not the 0600 of a temporary file.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    // Dropping `temporary` on any early return removes the file.
    let mut temporary = builder
        .tempfile_in(directory)
        .map_err(fail(WriteStep::CreateTemporary))?;
    // A file replaced keeps its mode.
    if let Ok(metadata) = std::fs::metadata(&target) {
        temporary
            .as_file()
            .set_permissions(metadata.permissions())
            .map_err(fail(WriteStep::CreateTemporary))?;
    }
    write(temporary.as_file_mut()).map_err(fail(WriteStep::Write))?;
    temporary
        .as_file()
        .sync_all()
        .map_err(fail(WriteStep::SyncFile))?;
    temporary
        .persist(&target)
        .map_err(|e| fail(WriteStep::Rename)(e.error))?;
    sync_directory(directory).map_err(fail(WriteStep::SyncDirectory))
}

/// The file a write to `path` replaces: `path` itself when it is a regular file or names
/// nothing, the file a symbolic link leads to when that is a regular file.
fn resolve_target(path: &Path) -> io::Result<PathBuf> {
    let refuse = |what: String| io::Error::new(io::ErrorKind::InvalidInput, what);
    let metadata = match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(path.to_owned()),
        Err(e) => return Err(e),
        Ok(metadata) => metadata,
    };
    if metadata.is_file() {
        return Ok(path.to_owned());
    }
    if !metadata.file_type().is_symlink() {
        return Err(refuse(format!(
            "it is {}, not a regular file",
            describe_file_type(metadata.file_type())
        )));
    }
    let resolved = std::fs::canonicalize(path).map_err(|e| {
        let leads_to = std::fs::read_link(path)
            .map(|to| format!(" to `{}`", to.display()))
            .unwrap_or_default();
        let why = if e.kind() == io::ErrorKind::NotFound {
            "which does not exist".to_owned()
        } else {
            format!("which cannot be followed ({e})")
        };
        refuse(format!(
            "it is a symbolic link{leads_to}, {why}; pto-op does not create the target of a link"
        ))
    })?;
    let metadata = std::fs::metadata(&resolved)?;
    if metadata.is_file() {
        Ok(resolved)
    } else {
        Err(refuse(format!(
            "it is a symbolic link to `{}`, which is {}, not a regular file",
            resolved.display(),
            describe_file_type(metadata.file_type())
        )))
    }
}

/// The temporaries of a target named `file_name`: `.NAME.PID.` + random + `.tmp`.
fn temporary_prefix(file_name: &str, pid: u32) -> String {
    format!(".{file_name}.{pid}.")
}

const TEMPORARY_SUFFIX: &str = ".tmp";
const TEMPORARY_RANDOM_CHARS: usize = 8;

/// The process id in the name of a temporary of `file_name`, when `entry` is one.
fn temporary_owner(entry: &str, file_name: &str) -> Option<u32> {
    let rest = entry
        .strip_prefix('.')?
        .strip_prefix(file_name)?
        .strip_prefix('.')?
        .strip_suffix(TEMPORARY_SUFFIX)?;
    let (pid, random) = rest.split_once('.')?;
    (random.len() == TEMPORARY_RANDOM_CHARS && random.bytes().all(|b| b.is_ascii_alphanumeric()))
        .then(|| pid.parse().ok())
        .flatten()
}

/// Removes the temporaries of `file_name` in `directory` whose process is gone: regular
/// files only (a planted link is left alone), and only where `/proc` tells which processes
/// live. Best effort: a temporary that cannot be removed stays, and the write goes on.
fn remove_stale_temporaries(directory: &Path, file_name: &str) {
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(directory) else {
        return;
    };
    let own = std::process::id();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| temporary_owner(name, file_name))
        else {
            continue;
        };
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        if pid != own && is_file && !proc.join(pid.to_string()).exists() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
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
    use super::super::test_dir::TestDir;
    use super::*;

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
    fn planted_temporary_names_are_not_followed() {
        let dir = TestDir::new("symlink");
        let victim = dir.0.join("victim");
        std::fs::write(&victim, b"precious").expect("writable");
        let path = dir.0.join("out.json");
        // Every predictable name the former helpers used.
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
        for round in 0..20 {
            write_atomic(&path, format!("round {round}").as_bytes()).expect("writes");
        }
        assert_eq!(std::fs::read(&victim).expect("readable"), b"precious");
        assert_eq!(std::fs::read(&path).expect("readable"), b"round 19");
        let mut expected: Vec<String> = planted.to_vec();
        expected.extend(["out.json".to_owned(), "victim".to_owned()]);
        expected.sort();
        assert_eq!(dir.entries(), expected);
    }

    #[cfg(unix)]
    #[test]
    fn a_new_file_gets_the_umask_s_mode_and_a_replaced_one_keeps_its_own() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = TestDir::new("modes");
        let mode = |path: &Path| {
            std::fs::metadata(path)
                .expect("exists")
                .permissions()
                .mode()
                & 0o777
        };
        // The umask of this process, read back from a file `File::create` (0666) made.
        let probe = dir.0.join("probe");
        File::create(&probe).expect("writable");
        let new = dir.0.join("new.onnx");
        write_atomic(&new, b"x").expect("writes");
        assert_eq!(mode(&new), mode(&probe), "as any new file, not 0600");
        std::fs::set_permissions(&new, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        write_atomic(&new, b"y").expect("writes");
        assert_eq!(mode(&new), 0o640, "a replaced file keeps its mode");
    }

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_is_followed_and_kept() {
        let dir = TestDir::new("follow");
        std::fs::create_dir(dir.0.join("v3")).expect("can create a dir");
        std::fs::write(dir.0.join("v3/model.onnx"), b"old").expect("writable");
        std::os::unix::fs::symlink("v3/model.onnx", dir.0.join("model.onnx")).expect("can link");
        write_atomic(dir.0.join("model.onnx"), b"new").expect("writes through the link");
        let link = std::fs::symlink_metadata(dir.0.join("model.onnx")).expect("exists");
        assert!(link.file_type().is_symlink(), "the link is kept");
        assert_eq!(
            std::fs::read(dir.0.join("v3/model.onnx")).expect("readable"),
            b"new"
        );
        assert_eq!(dir.entries(), ["model.onnx", "v3"]);
        let in_v3: Vec<_> = std::fs::read_dir(dir.0.join("v3"))
            .expect("listable")
            .collect();
        assert_eq!(in_v3.len(), 1, "no temporary is left beside the target");
    }

    #[cfg(unix)]
    #[test]
    fn a_dangling_link_is_refused_and_nothing_is_created() {
        let dir = TestDir::new("dangling");
        std::os::unix::fs::symlink("elsewhere/plot.svg", dir.0.join("plot.svg")).expect("link");
        let err = write_atomic(dir.0.join("plot.svg"), b"<svg/>").expect_err("leads nowhere");
        assert_eq!(err.step, WriteStep::Target);
        assert!(
            err.to_string()
                .contains("it is a symbolic link to `elsewhere/plot.svg`, which does not exist"),
            "{err}"
        );
        assert_eq!(dir.entries(), ["plot.svg"]);
    }

    /// What the target is after a refused write: it must still be what it was.
    #[cfg(unix)]
    fn assert_refused(path: &Path, found: &str) {
        use std::os::unix::fs::FileTypeExt as _;
        let before = std::fs::symlink_metadata(path).expect("exists").file_type();
        let err = write_atomic(path, b"model bytes").expect_err("not a regular file");
        assert_eq!(err.step, WriteStep::Target);
        assert_eq!(
            err.to_string(),
            format!(
                "writing `{}`: refusing to replace it: it is {found}, not a regular file",
                path.display()
            )
        );
        let after = std::fs::symlink_metadata(path)
            .expect("still there")
            .file_type();
        assert_eq!(
            (before.is_fifo(), before.is_char_device(), before.is_dir()),
            (after.is_fifo(), after.is_char_device(), after.is_dir())
        );
        let parent = path.parent().expect("in a directory");
        let litter: Vec<_> = std::fs::read_dir(parent)
            .expect("listable")
            .filter_map(|e| {
                let name = e.expect("an entry").file_name();
                name.to_string_lossy().ends_with(".tmp").then_some(name)
            })
            .collect();
        assert!(litter.is_empty(), "temporaries left: {litter:?}");
    }

    #[cfg(unix)]
    #[test]
    fn fifos_sockets_and_directories_are_never_replaced() {
        let dir = TestDir::new("special");
        assert_refused(&dir.fifo("model.pto"), "a FIFO (named pipe)");
        let socket = dir.0.join("trace.json");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).expect("can bind");
        assert_refused(&socket, "a socket");
        std::fs::create_dir(dir.0.join("out.onnx")).expect("can create a dir");
        assert_refused(&dir.0.join("out.onnx"), "a directory");
        // A link to a FIFO: followed, and the FIFO is refused.
        std::os::unix::fs::symlink("model.pto", dir.0.join("link.pto")).expect("can link");
        let err = write_atomic(dir.0.join("link.pto"), b"x").expect_err("leads to a FIFO");
        assert!(
            err.to_string().contains("which is a FIFO (named pipe)"),
            "{err}"
        );
    }

    /// A character device made in the test's own directory (never the system's `/dev/null`):
    /// `mknod` needs root, which CI has; elsewhere `/dev/null` is checked read-only instead.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_device_is_never_replaced() {
        let dir = TestDir::new("device");
        let node = dir.0.join("null");
        let made = std::process::Command::new("mknod")
            .arg(&node)
            .args(["c", "1", "3"])
            .output()
            .is_ok_and(|o| o.status.success());
        if made {
            assert_refused(&node, "a character device");
        } else {
            // Not root: the refusal comes before any write, so asking is harmless (and fails
            // for want of permission if it ever got as far as the rename).
            let err = write_atomic("/dev/null", b"x").expect_err("a device");
            assert_eq!(err.step, WriteStep::Target);
            assert!(err.to_string().contains("a character device"), "{err}");
        }
    }

    #[test]
    fn temporaries_of_a_process_that_is_gone_are_removed_on_the_next_write() {
        let dir = TestDir::new("stale");
        let path = dir.0.join("model.onnx");
        // Above any pid_max (2^22): no process has it. Pid 1 always lives.
        let stale = ".model.onnx.999999999.Ab3dE6gH.tmp";
        let live = ".model.onnx.1.Ab3dE6gH.tmp";
        let other_target = ".other.onnx.999999999.Ab3dE6gH.tmp";
        let not_ours = ".model.onnx.999999999.notmine.tmp";
        for name in [stale, live, other_target, not_ours] {
            std::fs::write(dir.0.join(name), b"half a model").expect("writable");
        }
        write_atomic(&path, b"model").expect("writes");
        let mut expected = vec!["model.onnx", live, other_target, not_ours];
        if !Path::new("/proc/self").exists() {
            expected.push(stale);
        }
        expected.sort_unstable();
        assert_eq!(dir.entries(), expected);
    }

    #[test]
    fn temporary_names_carry_the_pid_and_only_they_match() {
        assert_eq!(
            temporary_owner(".a.onnx.42.Zz09aBcD.tmp", "a.onnx"),
            Some(42)
        );
        assert_eq!(temporary_owner(".a.onnx.42.Zz09aBc.tmp", "a.onnx"), None);
        assert_eq!(temporary_owner(".a.onnx.x.Zz09aBcD.tmp", "a.onnx"), None);
        assert_eq!(temporary_owner(".b.onnx.42.Zz09aBcD.tmp", "a.onnx"), None);
        assert_eq!(temporary_owner("a.onnx", "a.onnx"), None);
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
        // A non-empty directory put in the way while the temporary is written (a race the
        // check before it cannot see): the rename fails.
        let path = dir.0.join("occupied");
        let err = write_atomic_with(&path, |file| {
            std::fs::create_dir(&path)?;
            std::fs::write(path.join("inside"), b"kept")?;
            file.write_all(b"new")
        })
        .expect_err("cannot replace a directory");
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
