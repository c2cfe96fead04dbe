//! Models on our CPU runtime against the same ONNX file in ONNX Runtime (Python), side by
//! side in one run: both on one thread, then both on every core.
//!
//! `cargo bench -p pto-examples --bench decoder_vs_onnxruntime` (needs `python3` with the
//! packages of `requirements-test.txt`; `scripts/test` installs them).
//!
//! The models are written with standard ops only, so that ONNX Runtime can run their export
//! (it knows no `demo.*` op):
//!
//! - `decoder-block-std`, the 64x64 decoder block;
//! - a decoder layer at a real width: 128 tokens, width 2048 in 16 heads, 5632 hidden;
//! - the MLP block of a LLaMA-7B layer: 32 tokens, 4096 -> 11008 -> 4096;
//! - the same MLP block for one token, as in decode (its products are weight-bound).
//!
//! All f32. `PTO_BENCH_SIZE=small` shrinks the two large models (width / 8, fewer tokens)
//! for a quick or CI run; the default, `full`, is the sizes above.
//!
//! `PTO_BENCH_CLOCK=cpu` times the one-thread rows by the CPU time of the running thread
//! (both sides: `/proc/thread-self/stat` here, `time.thread_time` in Python) instead of the
//! wall clock: on a machine shared with other work, it leaves out the time a run waited
//! for a core (10 ms resolution on our side, so each sample runs long). The all-cores rows
//! are always wall time.
//!
//! Our side is the compiled model on the `cpu` target (the ops' fast CPU paths, with
//! `pto_backends::cpu::set_threads`); ONNX Runtime's side is timed by `scripts/ort_bench.py`
//! inside its own process (the sum of `iters` runs after a warm-up, `intra_op_num_threads`
//! 1 or the core count), so process start-up is not counted.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};
use pto_backends::compiler::compile;
use pto_cli::tensor_file::npy_bytes;
use pto_examples::models::decoder_block::{StdBlockSize, build_mlp_std, build_std_sized};
use pto_onnx::OnnxFile;
use pto_op::Model;
use pto_op::models::find_builtin;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// ONNX Runtime's time for `iters` runs on `threads` threads, as measured by
/// `scripts/ort_bench.py`.
fn onnxruntime_time(
    model: &Path,
    inputs: &Path,
    iters: u64,
    threads: usize,
    cpu_clock: bool,
) -> Duration {
    let out = Command::new("python3")
        .arg(repo_root().join("scripts/ort_bench.py"))
        .arg(model)
        .arg(inputs)
        .arg(iters.to_string())
        .arg(threads.to_string())
        .arg(if cpu_clock { "cpu" } else { "wall" })
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

/// Whether `PTO_BENCH_SIZE=small` asks for the shrunk models.
fn small() -> bool {
    match std::env::var("PTO_BENCH_SIZE").as_deref() {
        Ok("small") => true,
        Ok("full") | Err(_) => false,
        Ok(other) => panic!("PTO_BENCH_SIZE is `small` or `full`, got `{other}`"),
    }
}

/// Whether `PTO_BENCH_CLOCK=cpu` asks for the one-thread rows in CPU time.
fn cpu_clock() -> bool {
    match std::env::var("PTO_BENCH_CLOCK").as_deref() {
        Ok("cpu") => true,
        Ok("wall") | Err(_) => false,
        Ok(other) => panic!("PTO_BENCH_CLOCK is `wall` or `cpu`, got `{other}`"),
    }
}

/// The CPU time this thread has run (user and system), from `/proc/thread-self/stat` in
/// clock ticks of 10 ms.
fn thread_cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").expect("Linux /proc");
    // Fields after the command name (which may hold spaces), closed by the last ')'.
    let fields: Vec<&str> = stat[stat.rfind(')').expect("a stat line") + 2..]
        .split(' ')
        .collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name and state.
    let ticks: u64 =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    Duration::from_millis(ticks * 10)
}

/// Benchmarks `model` on our cpu target and in ONNX Runtime, in group `group`, `samples`
/// samples each.
fn side_by_side(c: &mut Criterion, group: &str, model: &Model, samples: usize) {
    let compiled = compile(model, "cpu").expect("compiles for cpu");
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let inputs = compiled.random_inputs(0);

    let dir = std::env::temp_dir().join(format!("pto-bench-{group}-{}", std::process::id()));
    let inputs_dir = dir.join("inputs");
    std::fs::create_dir_all(&inputs_dir).expect("writable temp dir");
    let onnx = dir.join(format!("{}.onnx", model.name));
    model.save_onnx(&onnx).expect("exports");
    for (&id, tensor) in model.graph.inputs.iter().zip(&inputs) {
        let name = &model.graph.values[id].name;
        let bytes = npy_bytes(tensor).expect("f32 inputs");
        std::fs::write(inputs_dir.join(format!("{name}.npy")), bytes).expect("writable");
    }

    let mut group = c.benchmark_group(group);
    group.sample_size(samples);
    if cpu_clock() {
        // Every sample runs as many iterations (long enough for the 10 ms ticks of the
        // CPU clock); criterion's default grows them from one, which would read zero.
        group.sampling_mode(SamplingMode::Flat);
    }
    for (threads, label) in [(1, "1_thread"), (cores, "all_cores")] {
        let cpu = cpu_clock() && threads == 1;
        let label = if cpu {
            format!("{label}_cpu_time")
        } else {
            label.to_owned()
        };
        group.bench_function(format!("pto_cpu_{label}"), |b| {
            pto_backends::cpu::set_threads(threads);
            if cpu {
                b.iter_custom(|iters| {
                    let start = thread_cpu_time();
                    for _ in 0..iters {
                        black_box(compiled.run(&inputs).expect("runs"));
                    }
                    thread_cpu_time() - start
                })
            } else {
                b.iter(|| black_box(compiled.run(&inputs).expect("runs")))
            }
        });
        group.bench_function(format!("onnxruntime_{label}"), |b| {
            b.iter_custom(|iters| onnxruntime_time(&onnx, &inputs_dir, iters, threads, cpu))
        });
    }
    group.finish();
    // The large models' ONNX files are hundreds of MB: do not leave them behind.
    std::fs::remove_dir_all(&dir).expect("removable temp dir");
}

fn decoder_block(c: &mut Criterion) {
    let def = find_builtin("decoder-block-std")
        .expect("unique model names")
        .expect("registered by pto-examples");
    let model = (def.build)().expect("the model builds");
    side_by_side(c, "decoder_block_std_64x64_f32", &model, 20);
}

fn decoder_layer_wide(c: &mut Criterion) {
    let (size, group) = if small() {
        let size = StdBlockSize {
            seq: 32,
            d_model: 256,
            heads: 4,
            d_hidden: 704,
        };
        (size, "decoder_layer_small_256_f32")
    } else {
        (StdBlockSize::WIDE, "decoder_layer_2048x16h_seq128_f32")
    };
    let model = build_std_sized(size, "decoder-layer-std").expect("the model builds");
    side_by_side(c, group, &model, 10);
}

fn mlp_block_7b(c: &mut Criterion) {
    let ((seq, d_model, d_hidden), group) = if small() {
        ((8, 512, 1376), "mlp_block_small_512_f32")
    } else {
        ((32, 4096, 11008), "mlp_block_4096x11008_seq32_f32")
    };
    let model = build_mlp_std(seq, d_model, d_hidden).expect("the model builds");
    side_by_side(c, group, &model, 10);
}

fn mlp_block_7b_one_token(c: &mut Criterion) {
    let ((seq, d_model, d_hidden), group) = if small() {
        ((1, 512, 1376), "mlp_block_small_512_seq1_f32")
    } else {
        ((1, 4096, 11008), "mlp_block_4096x11008_seq1_f32")
    };
    let model = build_mlp_std(seq, d_model, d_hidden).expect("the model builds");
    side_by_side(c, group, &model, 10);
}

criterion_group!(
    benches,
    decoder_block,
    decoder_layer_wide,
    mlp_block_7b,
    mlp_block_7b_one_token
);
criterion_main!(benches);
