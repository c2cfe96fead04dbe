//! Building a package: running its `build.sh` (written by [`super::cmake`]), and running `build.sh` where a CANN toolkit is
//! present. None of the build has run on a CANN toolkit here (none is installed); the files
//! say so.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::error::PackageError;
use super::toolkit::TOOLKIT_ENV;

/// The CANN toolkit directory: `toolkit` (the value of [`TOOLKIT_ENV`], which the caller
/// reads), if it names an existing directory.
///
/// # Errors
///
/// [`PackageError::ToolkitAbsent`] naming `dir` (the package whose sources stay unbuilt).
pub fn toolkit(dir: &Path, toolkit: Option<&Path>) -> Result<PathBuf, PackageError> {
    let absent = |state: String| PackageError::ToolkitAbsent {
        dir: dir.to_path_buf(),
        state,
    };
    match toolkit {
        None => Err(absent("not set".to_owned())),
        Some(path) if path.as_os_str().is_empty() => Err(absent("empty".to_owned())),
        Some(path) if path.is_dir() => Ok(path.to_path_buf()),
        Some(path) => Err(absent(format!(
            "`{}`, which is not a directory",
            path.display()
        ))),
    }
}

/// Builds the package in `dir` with its `build.sh`, where a CANN toolkit is present
/// (`toolkit`, the value of [`TOOLKIT_ENV`]); returns the build's output. Not run on this
/// project's machines, which have no toolkit.
///
/// # Errors
///
/// [`PackageError::ToolkitAbsent`] when there is no toolkit (the sources stay as written),
/// [`PackageError::BuildFailed`] with the end of the output when the build fails.
pub fn build_package(dir: &Path, toolkit_dir: Option<&Path>) -> Result<String, PackageError> {
    let toolkit_dir = toolkit(dir, toolkit_dir)?;
    let script = dir.join("build.sh");
    let output = Command::new("bash")
        .arg(&script)
        .current_dir(dir)
        .env(TOOLKIT_ENV, &toolkit_dir)
        .output()
        .map_err(|source| PackageError::Io {
            action: "running",
            path: script.clone(),
            source,
        })?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    if output.status.success() {
        Ok(text)
    } else {
        let tail: Vec<&str> = text.lines().rev().take(40).collect();
        Err(PackageError::BuildFailed {
            dir: dir.to_path_buf(),
            status: output.status.to_string(),
            output: tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_toolkit_is_said_and_named() {
        let dir = Path::new("pkg");
        let err = toolkit(dir, None).expect_err("unset");
        assert!(
            err.to_string().contains("ASCEND_HOME_PATH` is not set"),
            "{err}"
        );
        let missing = Path::new("/nonexistent/ascend");
        let err = toolkit(dir, Some(missing)).expect_err("no such directory");
        assert!(err.to_string().contains("/nonexistent/ascend"), "{err}");
        assert!(err.to_string().contains("pkg/build.sh"), "{err}");
        let here = std::env::temp_dir();
        assert_eq!(toolkit(dir, Some(&here)).expect("a directory"), here);
    }
}
