//! Buffer checks, the timing model, traces and the `sim` target.

mod common;

use common::*;
use pto_backends::sim::{Sim, SimError, SimOptions, Simulator};
use pto_op::kernel::ir::*;
use pto_op::{DType, DeviceProfile, Executor, Tensor};

fn kirin() -> DeviceProfile {
    DeviceProfile::builtin("kirin9030").expect("built-in profile")
}

/// A two-core variant of the kirinx90 profile (its 64 KiB L0A / L0B hold the attention
/// test program's tiles twice): the built-in Kirin profiles have one AI core, and these
/// tests check how block programs spread over cores and how double buffering overlaps.
fn two_cores() -> DeviceProfile {
    let mut p = DeviceProfile::builtin("kirinx90").expect("built-in profile");
    p.ai_cores = 2;
    p
}

fn attention_inputs(grid: usize, seq: usize) -> [Tensor; 3] {
    [
        Tensor::random([64 * grid, 64], DType::F16, 1),
        Tensor::random([seq, 64], DType::F16, 2),
        Tensor::random([seq, 64], DType::F16, 3),
    ]
}

fn run_attention(profile: DeviceProfile, options: SimOptions) -> pto_backends::sim::SimRun {
    let program = attention(2, 1024);
    let [q, k, v] = attention_inputs(2, 1024);
    Simulator::new(profile, options)
        .run(&program, &[&q, &k, &v])
        .expect("attention runs")
}

#[test]
fn a_ub_tile_over_the_limit_names_buffer_bytes_and_limit() {
    let mut b = Builder::new("demo.softmax", 1);
    let x = b.input("x", &[256, 256], DType::F16);
    let y = b.output("y", &[256, 256], DType::F16);
    let z = b.output("z", &[8, 8], DType::F32);
    let t = b.tile(&[256, 256], DType::F16, MemLevel::Ub);
    let small = b.tile(&[8, 8], DType::F32, MemLevel::Ub);
    b.push(Inst::Full {
        dst: small,
        value: 1.0,
    });
    b.push(load(t, x, vec![c(0), c(0)], 0.0));
    b.push(store(y, vec![c(0), c(0)], t));
    // `small` stays live across the load.
    b.push(store(z, vec![c(0), c(0)], small));
    let x = Tensor::zeros([256, 256], DType::F16);
    let err = Simulator::new(kirin(), SimOptions::default())
        .run(&b.finish(), &[&x])
        .unwrap_err();
    let SimError::BufferOverflow(overflow) = &err else {
        panic!("expected an overflow, got {err}");
    };
    assert_eq!((overflow.needed, overflow.limit), (131328, 120832));
    assert_eq!(overflow.buffer, "UB");
    assert_eq!(
        err.to_string(),
        "op `demo.softmax`: inst 1 (load): UB working set 131328 bytes exceeds the kirin9030 \
         limit of 120832 bytes (live: %0 f16[256, 256]@ub 131072 B, %1 f32[8, 8]@ub 256 B)"
    );
}

/// A row reduction's tmp tile (one 256-byte repeat per row, `pto_op::kernel::row_reduce`)
/// counts in UB at the reduction: 64 x 448 f32 (112 KiB) and its result fit kirin9030's
/// 118 KiB without it, not with its 16 KiB; 64 x 384 f32 fits with it.
#[test]
fn a_row_reductions_tmp_tile_can_overflow_ub_and_is_named() {
    let program = |cols: usize| {
        let mut b = Builder::new("demo.rowsum", 1);
        let x = b.input("x", &[64, cols], DType::F32);
        let y = b.output("y", &[64, 1], DType::F32);
        let t = b.tile(&[64, cols], DType::F32, MemLevel::Ub);
        let r = b.tile(&[64, 1], DType::F32, MemLevel::Ub);
        b.push(load(t, x, vec![c(0), c(0)], 0.0));
        b.push(Inst::Reduce {
            dst: r,
            op: ReduceOp::Sum,
            src: t,
            axis: 1,
        });
        b.push(store(y, vec![c(0), c(0)], r));
        b.finish()
    };
    let x = Tensor::zeros([64, 448], DType::F32);
    let err = Simulator::new(kirin(), SimOptions::default())
        .run(&program(448), &[&x])
        .unwrap_err();
    let SimError::BufferOverflow(overflow) = &err else {
        panic!("expected an overflow, got {err}");
    };
    // 114688 (x) + 256 (the result, 64 f32 rounded up to 32 bytes) + 16384 (tmp).
    assert_eq!((overflow.needed, overflow.limit), (131328, 120832));
    assert_eq!(
        err.to_string(),
        "op `demo.rowsum`: inst 1 (reduce): UB working set 131328 bytes exceeds the kirin9030 \
         limit of 120832 bytes (live: %0 f32[64, 448]@ub 114688 B, the row reduction's tmp \
         tile (reduce of %0) 16384 B, %1 f32[64, 1]@ub 256 B)"
    );
    let x = Tensor::zeros([64, 384], DType::F32);
    let run = Simulator::new(kirin(), SimOptions::default())
        .run(&program(384), &[&x])
        .expect("fits with its tmp tile");
    assert_eq!(run.report.peak_bytes[&MemLevel::Ub], 98304 + 256 + 16384);
}

#[test]
fn attention_overlaps_pipes_and_runs_correctly() {
    let run = run_attention(two_cores(), SimOptions::default());
    let report = &run.report;
    let busy = |p: Pipe| report.per_pipe_busy[&p];
    for pipe in [
        Pipe::M,
        Pipe::V,
        Pipe::Mte2,
        Pipe::Mte1,
        Pipe::Fixp,
        Pipe::Mte3,
    ] {
        assert!(busy(pipe) > 0, "{pipe} idle:\n{report}");
    }
    let total_busy: u64 = report.per_pipe_busy.values().sum();
    let core_cycles: u64 = report.per_core_cycles.iter().sum();
    assert!(
        total_busy > core_cycles,
        "no overlap: {total_busy} busy cycles in {core_cycles} core cycles\n{report}"
    );
    assert_eq!(report.per_core_cycles.len(), 2);
    assert_eq!(report.per_core_cycles[0], report.per_core_cycles[1]);
    assert_eq!(report.double_buffered_loops, 1);
    // 4 instructions outside the loop (+ store), 14 per iteration, 8 iterations, 2 programs.
    assert_eq!(report.instructions, 2 * (5 + 14 * 8));

    // Functional check against an f64 computation of the same (unnormalised) attention.
    let [q, k, v] = attention_inputs(2, 1024);
    let (q, k, v) = (q.to_f32_array(), k.to_f32_array(), v.to_f32_array());
    let got = run.outputs[0].to_f32_array();
    for row in [0usize, 77, 127] {
        let mut o = [0f64; 64];
        for block in 0..8 {
            let keys = block * 128..block * 128 + 128;
            let s: Vec<f64> = keys
                .clone()
                .map(|key| (0..64).map(|i| f64::from(q[[row, i]] * k[[key, i]])).sum())
                .collect();
            let max = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            for (p, key) in s.iter().zip(keys) {
                let p = (p - max).exp();
                for (i, oi) in o.iter_mut().enumerate() {
                    *oi += p * f64::from(v[[key, i]]);
                }
            }
        }
        for (i, want) in o.iter().enumerate() {
            let have = f64::from(got[[row, i]]);
            assert!(
                (have - want).abs() <= 0.05 + 0.01 * want.abs(),
                "o[{row}, {i}] = {have}, expected {want}"
            );
        }
    }
}

#[test]
fn double_buffering_is_faster_when_allowed_and_when_it_fits() {
    let doubled = run_attention(two_cores(), SimOptions::default()).report;
    let single = run_attention(
        two_cores(),
        SimOptions {
            double_buffering: false,
            ..SimOptions::default()
        },
    )
    .report;
    assert_eq!(single.double_buffered_loops, 0);
    assert!(
        doubled.cycles < single.cycles,
        "double-buffered {} cycles, single {} cycles",
        doubled.cycles,
        single.cycles
    );
    // K and V tiles in L0B are 16 KiB: 20 KiB fits one, not two.
    let mut small = two_cores();
    small.buffers.l0b = 20 * 1024;
    let shrunk = run_attention(small, SimOptions::default()).report;
    assert_eq!(shrunk.double_buffered_loops, 0);
    assert_eq!(shrunk.cycles, single.cycles);
    assert!(doubled.cycles < shrunk.cycles);
    assert!(doubled.peak_bytes[&MemLevel::L0B] > shrunk.peak_bytes[&MemLevel::L0B]);
}

#[test]
fn the_report_serializes_and_prints_a_row_per_pipe() {
    let report = run_attention(kirin(), SimOptions::default()).report;
    let json = serde_json::to_value(&report).expect("serializes");
    assert!(json["per_pipe_busy"]["M"].as_u64().is_some_and(|v| v > 0));
    assert!(json["peak_bytes"]["ub"].as_u64().is_some_and(|v| v > 0));
    let back: pto_backends::sim::SimReport = serde_json::from_value(json).expect("parses");
    assert_eq!(back, report);
    let text = report.to_string();
    for pipe in Pipe::ALL {
        assert!(text.contains(pipe.name()), "{pipe} missing from\n{text}");
    }
    assert!(text.starts_with("test.attention on kirin9030: "));
}

#[test]
fn the_chrome_trace_has_a_lane_per_core_and_pipe_and_is_written_atomically() {
    let run = run_attention(
        two_cores(),
        SimOptions {
            trace: true,
            ..SimOptions::default()
        },
    );
    let trace = run.trace.expect("trace requested");
    let dir = std::env::temp_dir().join(format!("pto-sim-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("attention.json");
    trace.write(&path).expect("writes");
    let text = std::fs::read_to_string(&path).expect("reads back");
    let leftovers = std::fs::read_dir(&dir).expect("lists").count();
    std::fs::remove_dir_all(&dir).expect("cleans up");
    assert_eq!(leftovers, 1, "the temporary file was left behind");

    let json: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let events = json["traceEvents"].as_array().expect("traceEvents array");
    let lanes: Vec<(u64, String)> = events
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| {
            (
                e["pid"].as_u64().unwrap_or(99),
                e["args"]["name"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    for core in 0..2 {
        for pipe in Pipe::ALL {
            assert!(
                lanes.contains(&(core, pipe.name().to_owned())),
                "core {core} {pipe}"
            );
        }
    }
    let complete: Vec<&serde_json::Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    assert!(complete.iter().any(|e| e["pid"] == 1));
    assert!(
        complete
            .iter()
            .any(|e| e["name"].as_str() == Some("matmul %6"))
    );
    assert!(
        complete
            .iter()
            .all(|e| e["dur"].as_f64().is_some_and(|d| d >= 0.0))
    );
    // kirinx90 runs at 1 GHz: the last event ends at the report's cycles, in microseconds.
    let end = complete
        .iter()
        .map(|e| e["ts"].as_f64().unwrap_or(0.0) + e["dur"].as_f64().unwrap_or(0.0))
        .fold(0.0, f64::max);
    assert!((end - run.report.cycles as f64 / 1000.0).abs() < 0.01);
}

#[test]
fn traces_are_capped() {
    let run = run_attention(
        kirin(),
        SimOptions {
            trace: true,
            trace_event_limit: 10,
            ..SimOptions::default()
        },
    );
    let trace = run.trace.expect("trace requested");
    let complete = trace
        .trace_events
        .iter()
        .filter_map(|e| e.as_complete())
        .count();
    assert_eq!(complete, 10);
}

#[test]
fn the_sim_target_traces_runs_and_reports_an_ops_kernel() {
    let sim = pto_op::target::target("sim").expect("sim is linked");
    assert_eq!(sim.target(), "sim");
    let op = pto_op::registry::find("test.sim_scale").expect("registered");
    // 13 rows: the last block program's tile hangs over the edge (masked).
    let x = Tensor::random([13, 40], DType::F32, 5);
    let attrs = scale::Params::default().to_attributes();
    let target = Sim::new(kirin());
    let y = target.execute(op, &[&x], &attrs).unwrap();
    let expected = pto_backends::cpu::Cpu.execute(op, &[&x], &attrs).unwrap();
    assert_eq!(y.outputs, expected.outputs);
    assert_eq!(expected.simulated, None, "the CPU models no time");
    let report = target.call(op, &[&x], &attrs).unwrap().report;
    assert_eq!(report.op, "test.sim_scale");
    // The call's simulated time is the report's, returned with the outputs.
    let simulated = y.simulated.expect("the simulator models time");
    assert_eq!(
        (simulated.cycles, simulated.seconds),
        (report.cycles, report.seconds)
    );
    assert!(
        report.cycles > 0 && report.per_pipe_busy[&Pipe::V] > 0,
        "{report}"
    );

    let bad = Tensor::zeros([8, 4, 2], DType::F32);
    let err = target.execute(op, &[&bad], &attrs).unwrap_err();
    assert_eq!(
        err.to_string(),
        "op `test.sim_scale`: input `x`: expected rank 2, got shape [8, 4, 2] of rank 3"
    );
}

#[test]
fn simulator_errors_become_op_errors_naming_the_op() {
    let err = SimError::Unsupported {
        op: "a.b".into(),
        message: "inst 2 (move): no copy path".into(),
    }
    .into_op_error("a.b");
    assert_eq!(err.to_string(), "op `a.b`: inst 2 (move): no copy path");
    assert!(matches!(
        err,
        pto_op::OpError::Backend {
            unsupported: true,
            ..
        }
    ));
    let err = SimError::InputCount {
        op: "a.b".into(),
        expected: 2,
        actual: 1,
    }
    .into_op_error("a.b");
    assert_eq!(
        err.to_string(),
        "op `a.b`: the program reads 2 input(s), got 1"
    );
    // The simulator's error is kept, typed, as the source.
    let source = std::error::Error::source(&err)
        .and_then(|s| s.downcast_ref::<pto_op::BackendError>())
        .expect("a backend error as the source");
    assert!(matches!(
        source.get_ref().downcast_ref::<SimError>(),
        Some(SimError::InputCount {
            expected: 2,
            actual: 1,
            ..
        })
    ));
}

use pto_op::prelude::*;

/// y = x * 2, eight rows per block program.
#[custom_op(name = "test.sim_scale")]
pub mod scale {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, _p: &Params) -> Result<Shape, OpError> {
        x.expect_rank("x", 2)?;
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _p: &Params) -> Result<DType, OpError> {
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor, _p: &Params) -> Result<Tensor, OpError> {
        Ok(Tensor::from_array(x.to_f32_array().mapv(|v| v * 2.0)))
    }

    #[kernel]
    fn kernel(k: &mut Kernel, x: &Global, y: &Global, _p: &Params) -> Result<(), OpError> {
        let (rows, cols) = x.dims2()?;
        k.grid(rows.div_ceil(8))?;
        let r0 = k.program_id() * 8;
        let tile = k.load(x, (r0, 0), [8, cols])?;
        k.store(y, (r0, 0), &(tile * 2.0))
    }
}

#[test]
fn timing_alone_gives_the_report_of_a_full_run() {
    let simulator = Simulator::new(kirin(), SimOptions::default());
    let program = attention(2, 1024);
    let [q, k, v] = attention_inputs(2, 1024);
    let run = simulator
        .run(&program, &[&q, &k, &v])
        .expect("attention runs");
    assert_eq!(
        simulator.time(&program).expect("attention times"),
        run.report
    );
}

/// A top-k defines two tiles, its values and its indices, and both are ready when it
/// ends: storing the indices (i32) takes as long after it as storing the values (f32, the
/// same bytes). The indices were never marked ready, so their store overlapped the sort.
#[test]
fn both_results_of_a_top_k_are_ready_when_it_ends() {
    let cycles = |store_indices: bool| {
        let mut k = pto_op::Kernel::new("t.topk_ready");
        let x = k.input("x", pto_op::Shape::from([8, 512]), DType::F32);
        let out_dtype = if store_indices {
            DType::I32
        } else {
            DType::F32
        };
        let y = k.output("y", pto_op::Shape::from([8, 8]), out_dtype);
        let t = k.load(&x, [0, 0], [8, 512]).expect("loads");
        let (values, indices) = t.top_k(8);
        let stored = if store_indices { indices } else { values };
        k.store(&y, [0, 0], &stored).expect("stores");
        let program = k.finish().expect("traces");
        Simulator::new(kirin(), SimOptions::default())
            .time(&program)
            .expect("times")
            .cycles
    };
    let (values, indices) = (cycles(false), cycles(true));
    assert_eq!(values, indices, "values {values} cycles, indices {indices}");
}
