//! The cube kernels on the simulator: overlap of the pipes, double buffering, text form.

use std::collections::BTreeMap;

use pto_backends::sim::{SimOptions, SimRun, Simulator};
use pto_examples as demo;
use pto_op::kernel::ValidProgram;
use pto_op::kernel::ir::{MemLevel, Pipe};
use pto_op::{DType, DeviceProfile, Executor, OpParams, Shape, Tensor, TensorType};

fn kirin() -> DeviceProfile {
    DeviceProfile::builtin("kirin9030").expect("built-in profile")
}

fn types(shapes: &[[usize; 2]], dtype: DType) -> Vec<TensorType> {
    shapes
        .iter()
        .map(|s| TensorType {
            shape: Shape::from(*s),
            dtype,
        })
        .collect()
}

/// Attention at a realistic size: s = 512, d = 64, f16, not causal.
const SEQ: usize = 512;
const HEAD_DIM: usize = 64;

fn attention_program() -> ValidProgram {
    let attrs = demo::flash_attention::Params::default().to_attributes();
    demo::flash_attention::def()
        .trace_kernel(&types(&[[SEQ, HEAD_DIM]; 3], DType::F16), &attrs)
        .expect("attention traces")
}

fn attention_inputs() -> Vec<Tensor> {
    (0..3)
        .map(|seed| Tensor::random([SEQ, HEAD_DIM], DType::F16, seed))
        .collect()
}

fn run_attention(profile: DeviceProfile, options: SimOptions) -> SimRun {
    let inputs = attention_inputs();
    let inputs: Vec<&Tensor> = inputs.iter().collect();
    Simulator::new(profile, options)
        .run(&attention_program(), &inputs)
        .expect("attention runs")
}

/// The busy intervals, in microseconds, of each pipe lane of core 0 in a Chrome trace.
fn lanes_of_core_0(events: &[serde_json::Value]) -> BTreeMap<String, Vec<(f64, f64)>> {
    let names: BTreeMap<u64, String> = events
        .iter()
        .filter(|e| e["name"] == "thread_name" && e["pid"] == 0)
        .filter_map(|e| Some((e["tid"].as_u64()?, e["args"]["name"].as_str()?.to_owned())))
        .collect();
    let mut lanes: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "X" && e["pid"] == 0) {
        let (Some(tid), Some(ts), Some(dur)) =
            (e["tid"].as_u64(), e["ts"].as_f64(), e["dur"].as_f64())
        else {
            panic!("a complete event without tid, ts or dur: {e}");
        };
        let lane = names
            .get(&tid)
            .cloned()
            .unwrap_or_else(|| format!("tid {tid}"));
        lanes.entry(lane).or_default().push((ts, ts + dur));
    }
    lanes
}

/// The non-empty intersections of two sets of intervals.
fn intersect(a: &[(f64, f64)], b: &[(f64, f64)]) -> Vec<(f64, f64)> {
    a.iter()
        .flat_map(|&(s0, e0)| {
            b.iter().filter_map(move |&(s1, e1)| {
                let (s, e) = (s0.max(s1), e0.min(e1));
                (s < e).then_some((s, e))
            })
        })
        .collect()
}

#[test]
fn attention_keeps_cube_vector_and_mte2_busy_at_once() {
    let run = run_attention(
        kirin(),
        SimOptions {
            trace: true,
            ..SimOptions::default()
        },
    );
    let report = &run.report;
    for pipe in [
        Pipe::M,
        Pipe::V,
        Pipe::Mte2,
        Pipe::Mte1,
        Pipe::Fixp,
        Pipe::Mte3,
    ] {
        assert!(report.per_pipe_busy[&pipe] > 0, "{pipe} idle\n{report}");
    }
    let busy: u64 = report.per_pipe_busy.values().sum();
    let core_cycles: u64 = report.per_core_cycles.iter().sum();
    assert!(
        busy > core_cycles && core_cycles >= report.cycles,
        "no overlap: {busy} busy cycles in {core_cycles} core cycles\n{report}"
    );
    assert_eq!(report.double_buffered_loops, 1, "{report}");

    let trace = run.trace.expect("trace requested");
    let json = serde_json::to_value(&trace).expect("serializes");
    let lanes = lanes_of_core_0(json["traceEvents"].as_array().expect("traceEvents array"));
    let lane = |name: &str| lanes.get(name).map_or(&[][..], Vec::as_slice);
    let (cube, vector, mte2) = (lane("CUBE"), lane("VECTOR"), lane("MTE2"));
    assert!(
        !cube.is_empty() && !vector.is_empty() && !mte2.is_empty(),
        "{lanes:?}"
    );
    assert!(
        !intersect(cube, vector).is_empty(),
        "CUBE never overlaps VECTOR"
    );
    assert!(
        !intersect(cube, mte2).is_empty(),
        "CUBE never overlaps MTE2"
    );
    assert!(
        !intersect(vector, mte2).is_empty(),
        "VECTOR never overlaps MTE2"
    );
    assert!(
        !intersect(&intersect(cube, vector), mte2).is_empty(),
        "CUBE, VECTOR and MTE2 are never busy at the same time"
    );

    // And it computes attention: the simulated output agrees with the reference.
    let inputs = attention_inputs();
    let inputs: Vec<&Tensor> = inputs.iter().collect();
    let op = demo::flash_attention::def();
    let attrs = demo::flash_attention::Params::default().to_attributes();
    let expected = pto_backends::cpu::Cpu
        .execute(op, &inputs, &attrs)
        .expect("reference runs");
    let comparison = run.outputs[0]
        .compare(&expected.outputs[0], op.tolerance(DType::F16))
        .expect("same shapes");
    assert!(comparison.passed(), "{comparison}");
}

#[test]
fn attention_is_faster_when_its_loop_can_double_buffer() {
    let doubled = run_attention(kirin(), SimOptions::default()).report;
    let forbidden = run_attention(
        kirin(),
        SimOptions {
            double_buffering: false,
            ..SimOptions::default()
        },
    )
    .report;
    // Single-buffered, the loop needs 24 KiB of L1 and 65 KiB of UB; doubled, 40 KiB and
    // 81 KiB. This profile holds the first and not the second.
    let mut small = kirin();
    small.buffers.l1 = 32 * 1024;
    small.buffers.ub = 72 * 1024;
    let shrunk = run_attention(small, SimOptions::default()).report;

    eprintln!(
        "attention s={SEQ} d={HEAD_DIM} f16 on kirin9030: {} cycles double-buffered, {} with \
         double buffering off, {} with buffers shrunk\n{doubled}",
        doubled.cycles, forbidden.cycles, shrunk.cycles
    );
    assert_eq!(doubled.double_buffered_loops, 1, "{doubled}");
    assert_eq!(forbidden.double_buffered_loops, 0, "{forbidden}");
    assert_eq!(shrunk.double_buffered_loops, 0, "{shrunk}");
    assert!(
        doubled.cycles < forbidden.cycles,
        "double-buffered {} cycles, forbidden {} cycles",
        doubled.cycles,
        forbidden.cycles
    );
    assert!(
        doubled.cycles < shrunk.cycles,
        "double-buffered {} cycles, shrunk {} cycles",
        doubled.cycles,
        shrunk.cycles
    );
    assert_eq!(shrunk.cycles, forbidden.cycles);
    for level in [MemLevel::L1, MemLevel::Ub] {
        assert!(
            doubled.peak_bytes[&level] > shrunk.peak_bytes[&level],
            "{level}"
        );
    }
}

#[test]
fn matmul_runs_its_k_loop_on_the_cube_double_buffered() {
    let (m, depth, n) = (256, 512, 192);
    let op = demo::matmul::def();
    let attrs = demo::matmul::Params::default().to_attributes();
    let program = op
        .trace_kernel(&types(&[[m, depth], [depth, n]], DType::F16), &attrs)
        .expect("matmul traces");
    // Traced without a device: 128 x 128 output tiles, which fit every built-in profile.
    assert_eq!(program.grid, (m / 128) * n.div_ceil(128));
    let a = Tensor::random([m, depth], DType::F16, 1);
    let b = Tensor::random([depth, n], DType::F16, 2);
    let run = Simulator::new(kirin(), SimOptions::default())
        .run(&program, &[&a, &b])
        .expect("matmul runs");
    let report = &run.report;
    assert_eq!(report.double_buffered_loops, 1, "{report}");
    assert!(report.per_pipe_busy[&Pipe::M] > 0, "{report}");
    let expected = pto_backends::cpu::Cpu
        .execute(op, &[&a, &b], &attrs)
        .expect("reference runs");
    let comparison = run.outputs[0]
        .compare(&expected.outputs[0], op.tolerance(DType::F16))
        .expect("same shapes");
    assert!(comparison.passed(), "{comparison}");
}

#[test]
fn both_kernels_round_trip_through_the_text_form() {
    let attention = demo::flash_attention::def();
    let matmul = demo::matmul::def();
    let mut programs = vec![attention_program()];
    for causal in [false, true] {
        let attrs = demo::flash_attention::Params { causal, scale: 0.5 }.to_attributes();
        let shapes = [[100, 40], [70, 40], [70, 40]];
        programs.push(
            attention
                .trace_kernel(&types(&shapes, DType::F32), &attrs)
                .expect("attention traces"),
        );
    }
    for dtype in [DType::F16, DType::F32] {
        let attrs = demo::matmul::Params::default().to_attributes();
        programs.push(
            matmul
                .trace_kernel(&types(&[[100, 70], [70, 50]], dtype), &attrs)
                .expect("matmul traces"),
        );
    }
    for program in programs {
        let text = program.to_string();
        let parsed =
            pto_op::kernel::text::parse(&text).unwrap_or_else(|e| panic!("{e}\nin\n{text}"));
        assert_eq!(parsed, program, "{text}");
    }
}

/// On the split Ascend 910B profile flash attention at HEAD = 128 is tiled like the public
/// Ascend kernel: 128 queries per block program (64 on each vector core), 256-key tiles of
/// two 128-key cube sub-tiles, and per tile and block the same three hand-offs through GM:
/// f32 scores (128 KiB), f16 probabilities (64 KiB), f32 partial output (64 KiB). On
/// kirin9030 (coupled) nothing is handed off.
#[test]
fn attention_on_ascend910b_hands_off_the_measured_kernels_tiles() {
    let (s_q, s_kv, d) = (256, 2048, 128);
    let shapes = [[s_q, d], [s_kv, d], [s_kv, d]];
    let attrs = demo::flash_attention::Params::default().to_attributes();
    let ascend = DeviceProfile::builtin("ascend910b").expect("built-in profile");
    let program = demo::flash_attention::def()
        .trace_kernel_for(&types(&shapes, DType::F16), &attrs, &ascend)
        .expect("traces");
    assert_eq!(program.grid, s_q / 128, "128 queries per block program");
    let report = Simulator::new(ascend, SimOptions::default())
        .time(&program)
        .expect("fits");
    let tiles = (s_kv / 256) as u64;
    let per_tile = (128 * 256 * 4 + 128 * 256 * 2 + 128 * 128 * 4) as u64;
    assert_eq!(
        report.handoff_bytes,
        program.grid as u64 * tiles * per_tile,
        "{report}"
    );
    assert_eq!(per_tile, 256 * 1024);

    let kirin_program = demo::flash_attention::def()
        .trace_kernel_for(&types(&shapes, DType::F16), &attrs, &kirin())
        .expect("traces");
    let kirin_report = Simulator::new(kirin(), SimOptions::default())
        .time(&kirin_program)
        .expect("fits");
    assert_eq!(kirin_report.handoff_bytes, 0);
}

/// The 910B tiling computes what the reference does: flash attention's parity shapes at
/// HEAD = 128 on the ascend910b simulator (128-query blocks, two-sub-tile logical tiles,
/// a last logical tile half or wholly beyond the keys, causal or not) against the CPU.
#[test]
fn attention_on_ascend910b_matches_the_reference() {
    let sim = pto_backends::sim::Sim::new(DeviceProfile::builtin("ascend910b").expect("built in"));
    let cpu = pto_op::target::target("cpu").expect("cpu linked");
    let def = demo::flash_attention::def();
    for (s_q, s_kv, causal, dtype) in [
        (256, 512, false, DType::F16),
        (128, 384, false, DType::F16),
        (130, 300, true, DType::F16),
        (100, 150, false, DType::F32),
        (200, 640, true, DType::BF16),
    ] {
        let params = demo::flash_attention::Params {
            causal,
            ..Default::default()
        };
        let case = pto_op::parity::ParityCase {
            inputs: types(&[[s_q, 128], [s_kv, 128], [s_kv, 128]], dtype),
            attrs: params.to_attributes(),
            ranges: Vec::new(),
            seed: 7,
            tolerance: None,
        };
        let report = pto_op::parity::check_parity(def, &case, cpu.as_ref(), &sim).expect("runs");
        assert!(report.passed(), "{report}");
    }
}
