//! The paths a manifest names, confined to its package. A package may come from anyone, so
//! every name in `pto_package.json` that becomes a path (an op's `stem`, the keys of its
//! `files` and of `shared_files`) is refused unless it is a relative path of plain names
//! that stays inside the package and goes through no symbolic link there (and a stem must be
//! its op's).

use std::fs;
use std::path::{Component, Path, PathBuf};

use pto_op::fs::{FileKind, read_regular};

use super::error::PackageError;

/// The manifest's file name in a package directory.
pub const MANIFEST_FILE: &str = "pto_package.json";

/// The file stem of an op name: `demo.rms_norm` -> `demo_rms_norm` (the kernel entry's
/// name too).
pub fn stem_name(op: &str) -> String {
    op.replace('.', "_")
}

/// The path of an op's text-form kernels in a package: `op_kernel/<stem>.pto`.
pub fn kernel_file(stem: &str) -> String {
    format!("op_kernel/{stem}.pto")
}

/// Why `value` is not a relative path of plain names, if it is not.
pub(super) fn check_relative(value: &str) -> Result<(), &'static str> {
    if value.is_empty() {
        return Err("is empty");
    }
    for component in Path::new(value).components() {
        match component {
            Component::Normal(_) => {}
            Component::ParentDir => return Err("has a `..` component, which leaves the package"),
            Component::RootDir | Component::Prefix(_) => {
                return Err("is an absolute path, outside the package");
            }
            Component::CurDir => return Err("has a `.` component"),
        }
    }
    Ok(())
}

/// Why `relative` (already checked by [`check_relative`]) goes through a symbolic link
/// inside `dir`, if it does. A part that does not exist is no link: reading it fails later
/// with the path.
pub(super) fn check_no_link(dir: &Path, relative: &str) -> Result<(), String> {
    let mut path = dir.to_path_buf();
    for component in Path::new(relative).components() {
        path.push(component);
        match fs::symlink_metadata(&path) {
            Ok(metadata) if metadata.is_symlink() => {
                let target = fs::read_link(&path)
                    .map_or_else(|_| "?".to_owned(), |t| t.display().to_string());
                return Err(format!(
                    "goes through `{}`, a symbolic link (to `{target}`); a package holds no links",
                    path.display()
                ));
            }
            Ok(_) => {}
            Err(_) => return Ok(()),
        }
    }
    Ok(())
}

/// `relative` (a path the manifest names, checked by [`check_manifest_paths`]) in the package
/// in `dir`, checked again for links just before it is read.
///
/// # Errors
///
/// [`PackageError::UnsafePath`] when a part of it is a symbolic link.
pub(super) fn package_file(
    dir: &Path,
    field: &str,
    relative: &str,
) -> Result<PathBuf, PackageError> {
    let refuse = |reason: String| PackageError::UnsafePath {
        manifest: dir.join(MANIFEST_FILE),
        field: field.to_owned(),
        value: relative.to_owned(),
        reason,
    };
    check_relative(relative).map_err(|reason| refuse(reason.to_owned()))?;
    check_no_link(dir, relative).map_err(refuse)?;
    Ok(dir.join(relative))
}

/// The text of the file at `path` in a package, read as a file of `kind` through the one
/// file-access layer ([`pto_op::fs::read_regular`]): a FIFO, a device or a directory in its
/// place is refused by name without blocking, and a file over the kind's cap (a huge sparse
/// file) unread.
///
/// # Errors
///
/// [`PackageError::Io`] naming `action` and the path: what is there, the cap, or the
/// operating system's error; text that is not UTF-8 is [`std::io::ErrorKind::InvalidData`].
pub(super) fn read_package_text(
    path: &Path,
    kind: FileKind,
    action: &'static str,
) -> Result<String, PackageError> {
    let io = |source| PackageError::Io {
        action,
        path: path.to_path_buf(),
        source,
    };
    let bytes = read_regular(path, kind).map_err(|e| io(e.into_io()))?;
    String::from_utf8(bytes)
        .map_err(|e| io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
}

#[cfg(test)]
mod tests {
    use super::super::manifest::{read_manifest, sample_manifest, write_sample};
    use super::*;

    #[test]
    fn only_relative_paths_of_plain_names_are_inside_a_package() {
        for (value, reason) in [
            ("", "is empty"),
            ("../../outside/evil", "has a `..` component"),
            ("op_kernel/../../evil", "has a `..` component"),
            ("/etc/passwd", "is an absolute path"),
            ("./op_kernel/x.cpp", "has a `.` component"),
        ] {
            let err = check_relative(value).expect_err(value);
            assert!(err.starts_with(reason), "{value}: {err}");
        }
        check_relative("op_kernel/demo_rms_norm.cpp").expect("inside");
    }

    /// A fresh directory for one test.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("pto-paths-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_manifest_naming_paths_outside_its_package_is_refused() {
        let root = scratch("outside");
        let dir = root.join("a/b/pkg");
        let mut cases = Vec::new();
        let mut m = sample_manifest();
        m.ops[0].stem = "../../outside/evil".to_owned();
        cases.push((
            m,
            "ops[0].stem (op `demo.rms_norm`) `../../outside/evil` has a `..`",
        ));
        let mut m = sample_manifest();
        m.ops[0].stem = "/tmp/evil".to_owned();
        cases.push((
            m,
            "ops[0].stem (op `demo.rms_norm`) `/tmp/evil` is an absolute path",
        ));
        let mut m = sample_manifest();
        m.ops[0].stem = "op_kernel/x".to_owned();
        cases.push((m, "`op_kernel/x` is not one file name"));
        let mut m = sample_manifest();
        m.ops[0].stem = "demo_other".to_owned();
        cases.push((
            m,
            "`demo_other` is not the stem of the op's name (`demo_rms_norm`)",
        ));
        let mut m = sample_manifest();
        m.ops[0].stem = String::new();
        cases.push((m, "ops[0].stem (op `demo.rms_norm`) `` is empty"));
        let mut m = sample_manifest();
        m.ops[0].files.insert("op_host/../../../x".to_owned(), 1);
        cases.push((
            m,
            "ops[0].files (op `demo.rms_norm`) `op_host/../../../x` has a `..`",
        ));
        let mut m = sample_manifest();
        m.shared_files.insert("/etc/passwd".to_owned(), 1);
        cases.push((m, "shared_files `/etc/passwd` is an absolute path"));
        for (manifest, expected) in cases {
            write_sample(&dir, &manifest);
            let err = read_manifest(&dir).expect_err(expected).to_string();
            assert!(err.contains(expected), "{err}");
            // A redeploy reads the manifest first: it stops there, before reading any file.
            let err = super::super::redeploy(&dir, &Default::default()).expect_err(expected);
            assert!(err.to_string().contains(expected), "{err}");
        }
        fs::remove_dir_all(&root).expect("cleaned up");
    }

    #[test]
    fn a_package_file_that_is_a_link_out_of_the_package_is_refused() {
        let root = scratch("link");
        let dir = root.join("pkg");
        let secret = root.join("secret.txt");
        fs::create_dir_all(dir.join("op_kernel")).expect("created");
        fs::write(&secret, "not the package's").expect("written");
        write_sample(&dir, &sample_manifest());
        read_manifest(&dir).expect("no link yet");
        let link = dir.join("op_kernel/demo_rms_norm.pto");
        std::os::unix::fs::symlink(&secret, &link).expect("linked");
        let err = read_manifest(&dir).expect_err("a link").to_string();
        assert!(
            err.contains(&format!(
                "goes through `{}`, a symbolic link (to `{}`)",
                link.display(),
                secret.display()
            )),
            "{err}"
        );
        // A linked directory is refused as well, for every file under it.
        fs::remove_file(&link).expect("removed");
        fs::remove_dir_all(dir.join("op_kernel")).expect("removed");
        std::os::unix::fs::symlink(&root, dir.join("op_kernel")).expect("linked");
        let err = read_manifest(&dir)
            .expect_err("a linked directory")
            .to_string();
        assert!(err.contains("a symbolic link"), "{err}");
        // And a manifest that is itself a link.
        let other = root.join("other");
        fs::create_dir_all(&other).expect("created");
        std::os::unix::fs::symlink(dir.join(MANIFEST_FILE), other.join(MANIFEST_FILE))
            .expect("linked");
        let err = read_manifest(&other)
            .expect_err("a linked manifest")
            .to_string();
        assert!(err.contains("is a symbolic link"), "{err}");
        assert_eq!(
            fs::read_to_string(&secret).expect("untouched"),
            "not the package's"
        );
        fs::remove_dir_all(&root).expect("cleaned up");
    }
}
