//! Trace a kernel, print its kernel file, simulate it on a device and write its timeline.
//!
//! `cargo run -p pto-examples --example simulate -- [DEVICE] [TRACE.json]`
//! (defaults: `kirin9030`, `attention.trace.json`). Open the trace in `chrome://tracing`
//! or <https://ui.perfetto.dev>: one process per AI core, one lane per pipe.

use std::path::PathBuf;

use pto_backends::cpu::Cpu;
use pto_backends::sim::{SimOptions, Simulator};
use pto_examples::flash_attention;
use pto_op::prelude::*;
use pto_op::{Executor, TensorType};

// Errors are printed as `pto` prints them (`error: ...` and their causes), not as the
// `Error: {:?}` of a `main` returning `Result`.
fn main() -> std::process::ExitCode {
    pto_cli::exit_code(run())
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let device = DeviceProfile::resolve(&args.next().unwrap_or_else(|| "kirin9030".into()))?;
    let trace_path = PathBuf::from(args.next().unwrap_or_else(|| "attention.trace.json".into()));

    let (seq, head_dim) = (512, 64);
    let inputs: Vec<Tensor> = (0..3)
        .map(|seed| Tensor::random([seq, head_dim], DType::F16, seed))
        .collect();
    let inputs: Vec<&Tensor> = inputs.iter().collect();
    let types: Vec<TensorType> = inputs.iter().map(|t| t.tensor_type()).collect();
    let params = flash_attention::Params {
        causal: true,
        ..Default::default()
    };

    // The kernel file: the traced program as text (first lines).
    let program = flash_attention::def().trace_kernel(&types, &params.to_attributes())?;
    let text = program.to_string();
    println!(
        "== kernel file of {} ({} lines)",
        flash_attention::NAME,
        text.lines().count()
    );
    for line in text.lines().take(16) {
        println!("  {line}");
    }
    println!("  ...");

    // Simulate, with the timeline.
    let options = SimOptions {
        trace: true,
        ..SimOptions::default()
    };
    let run = Simulator::new(device, options).run(&program, &inputs)?;
    println!("\n== simulated\n{}", run.report);
    if let Some(trace) = &run.trace {
        trace.write(&trace_path)?;
        println!(
            "timeline: {} ({} events)",
            trace_path.display(),
            trace.trace_events.len()
        );
    }

    // And the same inputs on the CPU reference.
    let expected = Cpu.execute(flash_attention::def(), &inputs, &params.to_attributes())?;
    let tolerance = flash_attention::def().tolerance(DType::F16);
    println!(
        "\n== sim vs cpu: {}",
        run.outputs[0].compare(&expected.outputs[0], tolerance)?
    );
    Ok(())
}
