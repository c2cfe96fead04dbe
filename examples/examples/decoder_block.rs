//! The `decoder_block` example model end to end: describe, export (model file and ONNX),
//! compile, run on cpu and sim, compare.
//!
//! `cargo run -p pto-examples --example decoder_block -- [OUTPUT_DIR]` (default: the system's
//! temporary directory).

use std::path::PathBuf;

use pto_examples::models::{decoder_block, walkthrough};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .map_or_else(|| std::env::temp_dir().join("pto-examples"), PathBuf::from);
    print!("{}", walkthrough(&decoder_block::build()?, &dir)?);
    Ok(())
}
