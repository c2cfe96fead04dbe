//! Writing a package into its directory atomically: the files are written beside it, then
//! swapped in with one rename, so the directory holds the previous package or the new one,
//! whole.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use pto_op::Model;
use tempfile::TempDir;

use super::error::PackageError;
use super::generate::generate;
use super::manifest::{MANIFEST_FILE, Manifest, parse_manifest};
use crate::ascendc::Soc;

/// Writes the custom-op package of `model` for `soc` into `dir`, atomically: everything is
/// written into a temporary directory beside `dir`, which then replaces `dir`. A failure
/// (an op that does not lower, a full disk) leaves a previous package in `dir` as it was.
///
/// Returns the manifest written.
///
/// # Errors
///
/// A [`PackageError`]: an op not linked or without a domain, an instance that does not
/// lower for `soc`, instances of one op that lower differently, a model without custom ops,
/// or an I/O error naming the path.
pub fn write_package(model: &Model, soc: Soc, dir: &Path) -> Result<Manifest, PackageError> {
    check_replaceable(dir)?;
    let (manifest, files) = generate(model, soc)?;
    let manifest_text =
        serde_json::to_string_pretty(&manifest).map_err(|e| PackageError::Manifest {
            path: dir.join(MANIFEST_FILE),
            message: e.to_string(),
        })?;
    check_writable(dir)?;
    let staging = staging_dir(dir)?;
    let path = staging.path();
    for file in &files {
        write_file(&path.join(&file.path), &file.text)?;
    }
    write_file(&path.join(MANIFEST_FILE), &(manifest_text + "\n"))?;
    make_executable(&path.join("build.sh"))?;
    make_executable(&path.join("capi/build.sh"))?;
    if path.join("build_and_install.sh").is_file() {
        make_executable(&path.join("build_and_install.sh"))?;
    }
    replace_dir(path, dir)?;
    // Swapped: the staging path is gone (the previous package was removed from it, or it was
    // renamed into place). Dropped before this, as on every error above, it is removed.
    let _ = staging.keep();
    Ok(manifest)
}

/// Refuses an output path that a package must not replace: anything but nothing, an
/// empty directory, or a directory holding a package manifest.
fn check_replaceable(dir: &Path) -> Result<(), PackageError> {
    let refuse = |found: &str| PackageError::NotAPackage {
        dir: dir.to_path_buf(),
        found: found.to_owned(),
    };
    let Ok(metadata) = fs::symlink_metadata(dir) else {
        return Ok(());
    };
    if !metadata.is_dir() {
        return Err(refuse(if metadata.is_symlink() {
            "a symbolic link"
        } else {
            "a file"
        }));
    }
    // A manifest is taken as the sign of a package only when it is one: a regular file (not
    // a link to one elsewhere) that parses as a manifest. Anything else named like it is the
    // user's, and the directory with it.
    let manifest = dir.join(MANIFEST_FILE);
    if let Ok(found) = fs::symlink_metadata(&manifest) {
        if found.is_symlink() {
            return Err(refuse(&format!(
                "a directory holding a `{MANIFEST_FILE}` that is a symbolic link"
            )));
        }
        if !found.is_file() {
            return Err(refuse(&format!(
                "a directory holding a `{MANIFEST_FILE}` that is not a regular file"
            )));
        }
        return match parse_manifest(dir) {
            Ok(_) => Ok(()),
            Err(e) => Err(refuse(&format!(
                "a directory holding a `{MANIFEST_FILE}` that does not parse as a package \
                 manifest: {}",
                manifest_reason(&e)
            ))),
        };
    }
    let mut entries = fs::read_dir(dir).map_err(|source| PackageError::Io {
        action: "reading the directory",
        path: dir.to_path_buf(),
        source,
    })?;
    match entries.next() {
        None => Ok(()),
        Some(_) => Err(refuse(&format!(
            "a directory with other files and no `{MANIFEST_FILE}`"
        ))),
    }
}

/// Why a manifest was not read, without the path (the refusal names the directory).
fn manifest_reason(error: &PackageError) -> String {
    match error {
        PackageError::Manifest { message, .. } => message.clone(),
        PackageError::Io { source, .. } => source.to_string(),
        other => other.to_string(),
    }
}

/// The infix of a staging directory's name: `.<name>.pto-staging.PID.XXXXXX` beside `<name>`.
const STAGING: &str = "pto-staging";

/// How old a staging directory of the same target must be for [`staging_dir`] to take it for
/// the litter of a killed process and remove it. A write fills its staging directory in
/// seconds, and every file written into it touches it, so an hour is far from any live one.
pub(super) const STALE_STAGING: Duration = Duration::from_secs(60 * 60);

/// A new, empty directory beside `dir`, created atomically under a name no other process can
/// predict (`.<name>.pto-staging.PID.XXXXXX`), where a package is written before it replaces
/// `dir`. It is removed when dropped: keep it ([`tempfile::TempDir::keep`]) once swapped in.
///
/// A process killed while writing leaves its staging directory behind; this removes the ones
/// of the same target whose process is gone (where `/proc` tells), and those of the older
/// form without a pid last modified more than [`STALE_STAGING`] ago.
pub(super) fn staging_dir(dir: &Path) -> Result<TempDir, PackageError> {
    let (parent, name) = parent_and_name(dir)?;
    let prefix = format!(".{name}.{STAGING}.");
    remove_stale_staging(&parent, &prefix, STALE_STAGING);
    tempfile::Builder::new()
        .prefix(&format!("{prefix}{}.", std::process::id()))
        .tempdir_in(&parent)
        .map_err(|source| PackageError::Io {
            action: "creating the staging directory beside the package",
            path: dir.to_path_buf(),
            source,
        })
}

/// The directory `dir` is in (created if missing) and `dir`'s own name.
fn parent_and_name(dir: &Path) -> Result<(PathBuf, String), PackageError> {
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&parent).map_err(|source| PackageError::Io {
        action: "creating the directory",
        path: parent.clone(),
        source,
    })?;
    let name = dir
        .file_name()
        .map_or_else(|| "package".into(), |n| n.to_string_lossy().into_owned());
    Ok((parent, name))
}

/// Removes the directories in `parent` named `<prefix>PID.XXXXXX` whose process `PID` is gone
/// (where `/proc` tells), and those named `<prefix>XXXXXX` (no pid: written before pids were
/// named) not modified for `age`; `XXXXXX` is six letters or digits. Only real directories of
/// exactly those forms are touched; a failure leaves them (litter, not an error).
fn remove_stale_staging(parent: &Path, prefix: &str, age: Duration) {
    let proc = Path::new("/proc");
    let procs_known = proc.join("self").exists();
    let random = |s: &str| s.len() == 6 && s.bytes().all(|b| b.is_ascii_alphanumeric());
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(suffix) = name.to_str().and_then(|n| n.strip_prefix(prefix)) else {
            continue;
        };
        let owner = suffix
            .split_once('.')
            .filter(|(pid, rest)| random(rest) && pid.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|(pid, _)| pid.parse::<u32>().ok());
        let Ok(metadata) = fs::symlink_metadata(entry.path()) else {
            continue;
        };
        let stale = match owner {
            Some(pid) => {
                procs_known && pid != std::process::id() && !proc.join(pid.to_string()).exists()
            }
            None if random(suffix) => metadata
                .modified()
                .ok()
                .and_then(|modified| modified.elapsed().ok())
                .is_some_and(|elapsed| elapsed > age),
            None => false,
        };
        if metadata.is_dir() && stale {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// Refuses to replace the package in `dir` when a directory of it is read-only: replacing it
/// removes the previous package, which fails there (after the new one is in place), and a
/// read-only package is one its owner meant to keep as it is.
pub(super) fn check_writable(dir: &Path) -> Result<(), PackageError> {
    let Ok(metadata) = fs::symlink_metadata(dir) else {
        return Ok(());
    };
    if !metadata.is_dir() {
        return Ok(());
    }
    if !writable(dir, &metadata) {
        return Err(PackageError::ReadOnly {
            dir: dir.to_path_buf(),
            path: dir.to_path_buf(),
        });
    }
    let entries = fs::read_dir(dir).map_err(|source| PackageError::Io {
        action: "reading the directory",
        path: dir.to_path_buf(),
        source,
    })?;
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
            check_writable(&path).map_err(|e| match e {
                PackageError::ReadOnly { path, .. } => PackageError::ReadOnly {
                    dir: dir.to_path_buf(),
                    path,
                },
                other => other,
            })?;
        }
    }
    Ok(())
}

/// Whether this process may add and remove entries of the directory `path`: it has a write
/// bit, and (on Linux) `access(W_OK)` allows it.
fn writable(path: &Path, metadata: &fs::Metadata) -> bool {
    if metadata.permissions().readonly() {
        return false;
    }
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{Access, access};
        access(path, Access::WRITE_OK | Access::EXEC_OK).is_ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        true
    }
}

/// Writes `text` to `path`, creating the directories above it.
pub(super) fn write_file(path: &Path, text: &str) -> Result<(), PackageError> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(|source| PackageError::Io {
            action: "creating the directory",
            path: parent.to_path_buf(),
            source,
        })?;
    }
    fs::write(path, text).map_err(|source| PackageError::Io {
        action: "writing",
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(unix)]
fn make_executable(path: &Path) -> Result<(), PackageError> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).map_err(|source| {
        PackageError::Io {
            action: "making executable",
            path: path.to_path_buf(),
            source,
        }
    })
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> Result<(), PackageError> {
    Ok(())
}

/// Puts the finished `staging` directory in place of `dir`. On Linux the two are exchanged
/// with one `renameat2(RENAME_EXCHANGE)`, so at every instant `dir` is the previous package
/// or the new one, whole, even if the process is killed; the previous package is then
/// removed. Elsewhere (or on a file system without the exchange) a previous package is first
/// renamed aside, and renamed back if the second rename fails; it is removed only once the
/// new package is in place.
pub(super) fn replace_dir(staging: &Path, dir: &Path) -> Result<(), PackageError> {
    let rename = |from: &Path, to: &Path| {
        fs::rename(from, to).map_err(|source| PackageError::Io {
            action: "renaming into place",
            path: to.to_path_buf(),
            source,
        })
    };
    if !dir.exists() {
        return rename(staging, dir);
    }
    let remove_previous = |previous: &Path| {
        fs::remove_dir_all(previous).map_err(|source| PackageError::Io {
            action: "removing the previous package",
            path: previous.to_path_buf(),
            source,
        })
    };
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{CWD, RenameFlags, renameat_with};
        use rustix::io::Errno;
        match renameat_with(CWD, staging, CWD, dir, RenameFlags::EXCHANGE) {
            // `staging` now holds the previous package.
            Ok(()) => return remove_previous(staging),
            // No exchange on this kernel or file system: rename in two steps below.
            Err(Errno::INVAL | Errno::NOSYS | Errno::NOTSUP) => {}
            Err(e) => {
                return Err(PackageError::Io {
                    action: "swapping into place",
                    path: dir.to_path_buf(),
                    source: e.into(),
                });
            }
        }
    }
    // A fresh empty directory under an unpredictable name, which the rename replaces.
    let (parent, name) = parent_and_name(dir)?;
    let old = tempfile::Builder::new()
        .prefix(&format!(".{name}.pto-old."))
        .tempdir_in(&parent)
        .map_err(|source| PackageError::Io {
            action: "creating a directory for the previous package beside",
            path: dir.to_path_buf(),
            source,
        })?
        .keep();
    if let Err(e) = rename(dir, &old) {
        let _ = fs::remove_dir(&old);
        return Err(e);
    }
    if let Err(e) = rename(staging, dir) {
        // Put the previous package back; if even that fails the error below names `dir`
        // and the previous package is still whole in `old`.
        let _ = fs::rename(&old, dir);
        return Err(e);
    }
    remove_previous(&old)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_package_never_replaces_what_is_not_one() {
        let root = std::env::temp_dir().join(format!("pto-not-a-package-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let file = root.join("model.pto");
        write_file(&file, "a model file").expect("written");
        let other = root.join("docs");
        write_file(&other.join("notes.txt"), "notes").expect("written");
        let empty = root.join("empty");
        fs::create_dir_all(&empty).expect("created");
        let package = root.join("pkg");
        write_file(&package.join(MANIFEST_FILE), &package_manifest()).expect("written");
        for (dir, found) in [
            (&file, "is a file"),
            (&other, "is a directory with other files"),
        ] {
            let err = check_replaceable(dir).expect_err("refused").to_string();
            assert!(
                err.starts_with(&format!("`{}` {found}", dir.display())),
                "{err}"
            );
        }
        assert_eq!(
            fs::read_to_string(&file).expect("still there"),
            "a model file"
        );
        for dir in [&empty, &package, &root.join("new")] {
            check_replaceable(dir).expect("a package may go there");
        }
        fs::remove_dir_all(&root).expect("cleaned up");
    }

    /// The text of a manifest of a package.
    fn package_manifest() -> String {
        serde_json::to_string(&super::super::manifest::sample_manifest()).expect("serialized")
    }

    #[test]
    fn a_file_named_like_the_manifest_does_not_make_a_directory_a_package() {
        let root = std::env::temp_dir().join(format!("pto-fake-manifest-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let notes = root.join("notes");
        write_file(&notes.join("my_notes.txt"), "mine").expect("written");
        write_file(&notes.join(MANIFEST_FILE), "not even json").expect("written");
        let err = check_replaceable(&notes).expect_err("refused").to_string();
        assert!(
            err.contains(&format!(
                "holding a `{MANIFEST_FILE}` that does not parse as a package manifest: expected"
            )),
            "{err}"
        );
        // Refused before anything is generated or swapped: the user's files stay.
        let model = Model::new("m".to_owned(), Default::default(), Default::default())
            .expect("an empty model");
        let err = write_package(&model, Soc::Kirin9030, &notes).expect_err("refused");
        assert!(matches!(err, PackageError::NotAPackage { .. }), "{err}");
        assert_eq!(
            fs::read_to_string(notes.join("my_notes.txt")).expect("still there"),
            "mine"
        );

        // A link to a real manifest elsewhere is not this directory's manifest either.
        let package = root.join("pkg");
        write_file(&package.join(MANIFEST_FILE), &package_manifest()).expect("written");
        let linked = root.join("linked");
        write_file(&linked.join("my_notes.txt"), "mine").expect("written");
        std::os::unix::fs::symlink(package.join(MANIFEST_FILE), linked.join(MANIFEST_FILE))
            .expect("linked");
        let err = check_replaceable(&linked).expect_err("refused").to_string();
        assert!(
            err.contains(&format!("a `{MANIFEST_FILE}` that is a symbolic link")),
            "{err}"
        );
        check_replaceable(&package).expect("a real package may be replaced");
        fs::remove_dir_all(&root).expect("cleaned up");
    }

    #[test]
    fn a_failed_rename_puts_the_previous_package_back() {
        let root = std::env::temp_dir().join(format!("pto-replace-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let dir = root.join("pkg");
        write_file(&dir.join(MANIFEST_FILE), "previous").expect("written");
        // A staging directory that vanished: the second rename fails.
        let err = replace_dir(&root.join(".pkg.tmp-gone"), &dir).expect_err("nothing to rename");
        assert!(matches!(err, PackageError::Io { .. }), "{err}");
        assert_eq!(
            fs::read_to_string(dir.join(MANIFEST_FILE)).expect("still there"),
            "previous"
        );
        let siblings: Vec<_> = fs::read_dir(&root)
            .expect("readable")
            .filter_map(Result::ok)
            .map(|e| e.file_name())
            .collect();
        assert_eq!(siblings, [std::ffi::OsString::from("pkg")]);
        // A finished staging directory replaces it whole.
        let staging = staging_dir(&dir).expect("a fresh directory");
        write_file(&staging.path().join(MANIFEST_FILE), "next").expect("written");
        replace_dir(staging.path(), &dir).expect("replaced");
        let _ = staging.keep();
        assert_eq!(
            fs::read_to_string(dir.join(MANIFEST_FILE)).expect("read"),
            "next"
        );
        assert_eq!(fs::read_dir(&root).expect("readable").count(), 1);
        fs::remove_dir_all(&root).expect("cleaned up");
    }

    #[test]
    fn a_package_is_staged_under_a_name_made_when_the_directory_is() {
        let root = std::env::temp_dir().join(format!("pto-staging-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let dir = root.join("pkg");
        let (first, second) = (
            staging_dir(&dir).expect("staged"),
            staging_dir(&dir).expect("staged"),
        );
        assert_ne!(first.path(), second.path());
        for staging in [&first, &second] {
            let name = staging.path().file_name().expect("named").to_string_lossy();
            assert!(name.starts_with(".pkg.pto-staging."), "{name}");
            assert!(staging.path().is_dir(), "created with its name");
        }
        let kept = first.path().to_path_buf();
        drop(first);
        assert!(!kept.exists(), "an unused staging directory is removed");

        // What a killed write left: removed by the next write once an hour old, and only that.
        let two_hours_ago = std::time::SystemTime::now() - 2 * STALE_STAGING;
        let stale = root.join(".pkg.pto-staging.k1lled");
        let mine = root.join(".pkg.pto-staging.my-own-backup");
        let other = root.join(".other.pto-staging.k1lled");
        for path in [&stale, &mine, &other] {
            write_file(&path.join("f"), "left").expect("written");
            fs::File::open(path)
                .and_then(|d| d.set_modified(two_hours_ago))
                .expect("aged");
        }
        // Named by pid: removed at once when the process is gone (a pid above any pid_max),
        // kept while it lives (pid 1), however old.
        let dead = root.join(".pkg.pto-staging.999999999.k1lled");
        let live = root.join(".pkg.pto-staging.1.k1lled");
        for path in [&dead, &live] {
            write_file(&path.join("f"), "left").expect("written");
        }
        let third = staging_dir(&dir).expect("staged");
        assert!(!stale.exists(), "a stale staging directory is removed");
        if Path::new("/proc/self").exists() {
            assert!(
                !dead.exists(),
                "the staging directory of a process gone is removed"
            );
        }
        let third_name = third.path().file_name().expect("named").to_string_lossy();
        assert!(
            third_name.starts_with(&format!(".pkg.pto-staging.{}.", std::process::id())),
            "{third_name}"
        );
        for kept in [&mine, &other, &live, second.path(), third.path()] {
            assert!(kept.exists(), "{} is kept", kept.display());
        }
        drop((second, third));
        fs::remove_dir_all(&root).expect("cleaned up");
    }

    #[test]
    fn a_read_only_package_is_refused_naming_the_package() {
        use std::os::unix::fs::PermissionsExt;
        let root = std::env::temp_dir().join(format!("pto-read-only-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let dir = root.join("pkg");
        write_file(&dir.join(MANIFEST_FILE), &package_manifest()).expect("written");
        write_file(&dir.join("op_kernel/a.cpp"), "a").expect("written");
        check_writable(&dir).expect("writable");
        for read_only in [dir.join("op_kernel"), dir.clone()] {
            fs::set_permissions(&read_only, fs::Permissions::from_mode(0o555)).expect("chmod");
            let err = check_writable(&dir).expect_err("read-only").to_string();
            fs::set_permissions(&read_only, fs::Permissions::from_mode(0o755)).expect("chmod");
            assert!(
                err.starts_with(&format!(
                    "the package in `{}` is read-only (`{}` does not allow writing)",
                    dir.display(),
                    read_only.display()
                )),
                "{err}"
            );
        }
        fs::remove_dir_all(&root).expect("cleaned up");
    }
}
