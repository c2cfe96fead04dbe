//! Writing a package into its directory atomically: the files are written beside it, then
//! swapped in with one rename, so the directory holds the previous package or the new one,
//! whole.

use std::fs;
use std::path::{Path, PathBuf};

use pto_op::Model;

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
    let staging = sibling(dir, "tmp")?;
    let written = (|| {
        for file in &files {
            write_file(&staging.join(&file.path), &file.text)?;
        }
        write_file(&staging.join(MANIFEST_FILE), &(manifest_text + "\n"))?;
        make_executable(&staging.join("build.sh"))?;
        replace_dir(&staging, dir)
    })();
    if written.is_err() {
        // The staging directory is ours alone; a failure to remove it leaves only litter.
        let _ = fs::remove_dir_all(&staging);
    }
    written.map(|()| manifest)
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

/// A fresh path beside `dir` (`.<name>.<what>-<pid>-<n>`), not yet existing.
pub(super) fn sibling(dir: &Path, what: &str) -> Result<PathBuf, PackageError> {
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
    let pid = std::process::id();
    let mut n = 0u32;
    loop {
        let candidate = parent.join(format!(".{name}.{what}-{pid}-{n}"));
        if !candidate.exists() {
            return Ok(candidate);
        }
        n += 1;
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
    let old = sibling(dir, "old")?;
    rename(dir, &old)?;
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
        let staging = sibling(&dir, "tmp").expect("a fresh name");
        write_file(&staging.join(MANIFEST_FILE), "next").expect("written");
        replace_dir(&staging, &dir).expect("replaced");
        assert_eq!(
            fs::read_to_string(dir.join(MANIFEST_FILE)).expect("read"),
            "next"
        );
        assert_eq!(fs::read_dir(&root).expect("readable").count(), 1);
        fs::remove_dir_all(&root).expect("cleaned up");
    }
}
