//! The `pipeline` example model end to end: describe, export (model file and ONNX),
//! compile, run on cpu and sim, compare.
//!
//! `cargo run -p pto-examples --example pipeline -- [OUTPUT_DIR]` (default: the system's
//! temporary directory).

use std::path::PathBuf;

use pto_examples::models::{pipeline, walkthrough};

// Errors are printed as `pto` prints them (`error: ...` and their causes), not as the
// `Error: {:?}` of a `main` returning `Result`.
fn main() -> std::process::ExitCode {
    pto_cli::exit_code(run())
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .map_or_else(|| std::env::temp_dir().join("pto-examples"), PathBuf::from);
    print!("{}", walkthrough(&pipeline::build()?, &dir)?);
    Ok(())
}
