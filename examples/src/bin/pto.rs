//! The `pto` command line with every example op and model linked.
//!
//! `cargo run -p pto-examples --bin pto -- run decoder-block --target sim`

// Links the example ops, team B's ops and the example models.
use pto_examples as _;

fn main() -> std::process::ExitCode {
    pto_cli::main()
}
