//! The CANN toolkit a package is built with: the environment variable that names it.

/// The environment variable of the CANN toolkit's install directory (`set_env.sh` sets it);
/// read by the program's edge (the `pto` command line), passed to [`build_package`](super::build_package).
pub const TOOLKIT_ENV: &str = "ASCEND_HOME_PATH";
