//! Helpers shared by the integration test files that include them with `mod common;`.

// Each test file uses a different subset of the helpers.
#![allow(dead_code)]

pub mod proto;
pub mod python;
pub mod run_cap;

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

/// The UB bytes the Ascend C lowering of `program` reserves on `profile`'s SoC (every
/// built-in profile is of one).
#[cfg(feature = "device")]
pub fn ascendc_ub(
    program: &pto_op::kernel::ValidProgram,
    profile: &pto_op::DeviceProfile,
) -> Result<u64, String> {
    use pto_backends::ascendc::{Soc, lower_program};
    let soc = Soc::from_profile_name(&profile.name)
        .ok_or_else(|| format!("profile `{}` is of no SoC the lowering knows", profile.name))?;
    lower_program(program, "test", soc, profile)
        .map(|lowered| {
            lowered
                .buffer_bytes
                .get(pto_op::kernel::ir::MemLevel::Ub)
                .unwrap_or(0)
        })
        .map_err(|e| e.to_string())
}
