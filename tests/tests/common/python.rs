//! Running the Python checks: `python3` with the packages of `requirements-test.txt`
//! (`onnx`, `onnxruntime`), which `scripts/test` installs.
//!
//! Without them a test fails and says to run `scripts/test`, unless `PTO_SKIP_PYTHON=1` is
//! set explicitly; then the Python part is skipped, loudly.

use std::ffi::OsStr;
use std::process::Command;

/// Runs `python3 -c script args...` and returns its stdout; `None` when skipped by
/// `PTO_SKIP_PYTHON=1`. Fails the test when python3 or its packages are missing, or the
/// script fails.
pub fn python<A: AsRef<OsStr>>(script: &str, args: &[A]) -> Option<String> {
    if std::env::var("PTO_SKIP_PYTHON").as_deref() == Ok("1") {
        eprintln!("!!!!!!!! PTO_SKIP_PYTHON=1: SKIPPING the Python ONNX check !!!!!!!!");
        return None;
    }
    let probe = Command::new("python3")
        .args(["-c", "import onnx, onnxruntime"])
        .output();
    match probe {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!(
            "python3 lacks the onnx/onnxruntime packages ({}): run `scripts/test`, which \
             installs requirements-test.txt (or set PTO_SKIP_PYTHON=1 to skip on purpose)",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Err(e) => panic!(
            "cannot run python3 ({e}): install Python 3 and run `scripts/test` (or set \
             PTO_SKIP_PYTHON=1 to skip on purpose)"
        ),
    }
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("python3 ran a moment ago");
    assert!(
        out.status.success(),
        "python check failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}
