//! The decoder block on our CPU runtime against the same ONNX file in ONNX Runtime (Python,
//! one thread), side by side in one run.
//!
//! `cargo bench -p pto-examples --bench decoder_vs_onnxruntime` (needs `python3` with the
//! packages of `requirements-test.txt`; `scripts/test` installs them).
//!
//! The model is `decoder-block-std`, the decoder block written with standard ops only, so
//! that ONNX Runtime can run its export (it knows no `demo.*` op). Our side is the compiled
//! model on the `cpu` target (each op's reference); ONNX Runtime's side is timed by
//! `scripts/ort_bench.py` inside its own process (the sum of `iters` runs after a warm-up),
//! so process start-up is not counted.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use pto_backends::compiler::compile;
use pto_cli::tensor_file::npy_bytes;
use pto_examples as _;
use pto_op::models::find_builtin;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// ONNX Runtime's time for `iters` runs, as measured by `scripts/ort_bench.py`.
fn onnxruntime_time(model: &Path, inputs: &Path, iters: u64) -> Duration {
    let out = Command::new("python3")
        .arg(repo_root().join("scripts/ort_bench.py"))
        .arg(model)
        .arg(inputs)
        .arg(iters.to_string())
        .output()
        .expect("python3 runs (install it, then `scripts/test` installs onnxruntime)");
    assert!(
        out.status.success(),
        "ort_bench.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("ort_bench.py prints JSON");
    let total_ms = report["total_ms"].as_f64().expect("total_ms is a number");
    Duration::from_secs_f64(total_ms / 1e3)
}

fn decoder_block(c: &mut Criterion) {
    let def = find_builtin("decoder-block-std")
        .expect("unique model names")
        .expect("registered by pto-examples");
    let model = (def.build)().expect("the model builds");
    let compiled = compile(&model, "cpu").expect("compiles for cpu");
    let inputs = compiled.random_inputs(0);

    let dir = std::env::temp_dir().join(format!("pto-bench-decoder-{}", std::process::id()));
    let inputs_dir = dir.join("inputs");
    std::fs::create_dir_all(&inputs_dir).expect("writable temp dir");
    let onnx = dir.join("decoder-block-std.onnx");
    model.save_onnx(&onnx).expect("exports");
    for (&id, tensor) in model.graph.inputs.iter().zip(&inputs) {
        let name = &model.graph.values[id].name;
        let bytes = npy_bytes(tensor).expect("f32 inputs");
        std::fs::write(inputs_dir.join(format!("{name}.npy")), bytes).expect("writable");
    }

    let mut group = c.benchmark_group("decoder_block_std_64x64_f32");
    group.sample_size(20);
    group.bench_function("pto_cpu", |b| {
        b.iter(|| black_box(compiled.run(&inputs).expect("runs")))
    });
    group.bench_function("onnxruntime_1_thread", |b| {
        b.iter_custom(|iters| onnxruntime_time(&onnx, &inputs_dir, iters))
    });
    group.finish();
}

criterion_group!(benches, decoder_block);
criterion_main!(benches);
