//! Team B's `pto` command line: the std ops and team B's ops, no other operator crate.
//!
//! `cargo run -p pto-team-b --bin pto-team-b -- accuracy`

use pto_team_b as _;

fn main() -> std::process::ExitCode {
    pto_cli::main()
}
