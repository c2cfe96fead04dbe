//! Runs one of the ONNX Runtime benchmark's models on the `cpu` target, for a profiler
//! (`valgrind --tool=callgrind`) or a peak-memory measurement (`/usr/bin/time -v`).
//!
//! `cargo run --release -p pto-examples --example cpu_run -- MODEL [RUNS]`, MODEL one of
//! `block` (the 64x64 decoder block), `layer` (the 2048-wide 16-head decoder layer), `mlp`
//! (the 7B-width MLP block), `layer-small`, `mlp-small` (the benchmark's small sizes); RUNS
//! defaults to 1; `PTO_CPU_THREADS` sets the threads (default: every core). Prints the
//! model's weight and planned peak activation bytes, then the time of each run.

use std::time::Instant;

use pto_backends::buffers::human_bytes;
use pto_backends::compiler::compile_owned;
use pto_examples::models::decoder_block::{StdBlockSize, build_mlp_std, build_std_sized};
use pto_op::Model;

fn model(name: &str) -> Result<Model, Box<dyn std::error::Error>> {
    let small_layer = StdBlockSize {
        seq: 32,
        d_model: 256,
        heads: 4,
        d_hidden: 704,
    };
    Ok(match name {
        "block" => build_std_sized(StdBlockSize::SMALL, "decoder-block-std")?,
        "layer" => build_std_sized(StdBlockSize::WIDE, "decoder-layer-std")?,
        "layer-small" => build_std_sized(small_layer, "decoder-layer-std")?,
        "mlp" => build_mlp_std(32, 4096, 11008)?,
        "mlp-small" => build_mlp_std(8, 512, 1376)?,
        other => {
            return Err(format!(
                "unknown model `{other}`: expected block, layer, layer-small, mlp or mlp-small"
            )
            .into());
        }
    })
}

// Errors are printed as `pto` prints them (`error: ...` and their causes), not as the
// `Error: {:?}` of a `main` returning `Result`.
fn main() -> std::process::ExitCode {
    pto_cli::exit_code(run())
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "block".to_owned());
    let runs: usize = args.next().map_or(Ok(1), |r| r.parse())?;
    if let Ok(threads) = std::env::var("PTO_CPU_THREADS") {
        pto_backends::cpu::set_threads(threads.parse()?);
    }
    let compiled = compile_owned(model(&name)?, "cpu")?;
    let plan = compiled.plan();
    println!(
        "{name}: weights {}, planned peak activations {}",
        human_bytes(plan.weight_bytes),
        human_bytes(plan.peak_activation_bytes)
    );
    let inputs = compiled.random_inputs(0);
    for run in 0..runs {
        let started = Instant::now();
        let result = compiled.run(&inputs)?;
        std::hint::black_box(&result.outputs);
        println!("run {run}: {:.3} ms", started.elapsed().as_secs_f64() * 1e3);
    }
    Ok(())
}
