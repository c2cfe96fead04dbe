//! The `pto` command line with this crate's ops and models linked.

use my_ops as _; // link the crate: its ops and models register themselves

fn main() -> std::process::ExitCode {
    pto_cli::main()
}
