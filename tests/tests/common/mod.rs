//! Helpers shared by the integration test files that include them with `mod common;`.

// Each test file uses a different subset of the helpers.
#![allow(dead_code)]

pub mod proto;
pub mod python;

use std::path::{Path, PathBuf};

/// A fresh directory `name` under the target's temporary directory; a leftover of an earlier
/// run is removed first.
pub fn temp_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    // Its absence is fine.
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the target's temporary directory is writable");
    dir
}
