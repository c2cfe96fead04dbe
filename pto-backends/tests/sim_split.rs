//! The split cube / vector cores of a `split` profile (Ascend 910B): hand-offs through GM,
//! their cost and ordering, against a coupled copy of the same profile.

mod common;

use common::*;
use pto_backends::sim::schedule::{self, PipeEvent, Timeline};
use pto_backends::sim::{SimOptions, Simulator, memory};
use pto_op::kernel::ValidProgram;
use pto_op::kernel::cost::Side;
use pto_op::kernel::ir::*;
use pto_op::{CubeVector, DType, DeviceProfile, Tensor};

fn split() -> DeviceProfile {
    let p = DeviceProfile::builtin("ascend910b").expect("built-in profile");
    assert_eq!(p.cube_vector, CubeVector::Split);
    p
}

fn coupled() -> DeviceProfile {
    let mut p = split();
    p.cube_vector = CubeVector::Coupled;
    p
}

fn timeline(program: &ValidProgram, profile: &DeviceProfile) -> Timeline {
    let plan = memory::plan(program, profile, true).expect("fits");
    schedule::schedule(program, profile, &plan, 1_000_000).expect("schedules")
}

fn busy(t: &Timeline, pipe: Pipe) -> f64 {
    t.busy.get(&pipe).copied().unwrap_or(0.0)
}

fn end(e: &PipeEvent) -> f64 {
    e.start + e.duration
}

/// The attention-like program of `common` (per iteration: S = Q K^T moved L0C -> UB, the
/// softmax on the vector unit, P moved UB -> L1 for P V, P V moved L0C -> UB and added to
/// the accumulator): three hand-offs per iteration on a split core, each costing exactly
/// a write on one side and a read on the other, the read after the write.
#[test]
fn hand_offs_cost_their_write_and_read_and_the_vector_cores_wait_for_the_write() {
    let (grid, seq) = (2, 1024);
    let iterations = seq / 128;
    let program = attention(grid, seq);
    let (s, c) = (timeline(&program, &split()), timeline(&program, &coupled()));

    // The costs of the hand-offs, from the profile's numbers (2 cores in use share GM / L2).
    let p = split();
    let cores = grid as f64;
    let gm = p.memory_bandwidth / p.clock_hz / cores;
    let l2_read = p.l2.bandwidth / p.clock_hz / cores;
    let l2_write = p.l2.write_bandwidth / p.clock_hz / cores;
    let r = p.copy_bytes_per_cycle;
    // On-core moves (coupled) pay the plain copy latency on their pipe; transfers to and
    // from GM pay the pipe model's GM write and read latencies after their bytes, the
    // pipe free meanwhile, so they add nothing to the pipes' busy cycles.
    let lat = p.copy_latency_cycles;
    let (s_f32, s_f16, p_f16, pv_f32): (f64, f64, f64, f64) = (
        64.0 * 128.0 * 4.0,
        64.0 * 128.0 * 2.0,
        64.0 * 128.0 * 2.0,
        64.0 * 64.0 * 4.0,
    );
    assert!(
        gm > r.l0c_out && l2_write > r.l0c_out,
        "the paths, not the shares, bind here"
    );
    // Coupled: on-core moves L0C -> UB (FIXP, the larger of source and destination) and
    // UB -> L1 (MTE3).
    let coupled_fixp = (lat + s_f32.max(s_f16) / r.l0c_out) + (lat + pv_f32 / r.l0c_out);
    let coupled_mte3 = lat + p_f16 / r.ub_to_l1;
    // Split: FIXP L0C -> GM of the converted tile, MTE3 UB -> GM, and three reads back.
    let split_fixp = s_f16 / r.l0c_out.min(l2_write) + pv_f32 / r.l0c_out.min(l2_write);
    let split_mte3 = p_f16 / r.ub_to_gm.min(l2_write);
    let reads = s_f16 / r.gm_to_ub.min(l2_read)
        + p_f16 / r.gm_to_l1.min(l2_read)
        + pv_f32 / r.gm_to_ub.min(l2_read);
    let n = iterations as f64;
    let close = |a: f64, b: f64| (a - b).abs() < 1e-6 * a.abs().max(1.0);
    assert!(close(
        busy(&s, Pipe::Fixp) - busy(&c, Pipe::Fixp),
        n * (split_fixp - coupled_fixp)
    ));
    assert!(close(
        busy(&s, Pipe::Mte3) - busy(&c, Pipe::Mte3),
        n * (split_mte3 - coupled_mte3)
    ));
    assert!(close(
        busy(&s, Pipe::Mte2) - busy(&c, Pipe::Mte2),
        n * reads
    ));
    // Issue: one more slot per hand-off (both sides issue it); loop overhead on both
    // sides' scalar units.
    assert!(close(
        busy(&s, Pipe::S) - busy(&c, Pipe::S),
        n * (3.0 * p.issue_cycles + p.loop_overhead_cycles)
    ));
    for pipe in [Pipe::M, Pipe::Mte1] {
        assert!(close(busy(&s, pipe), busy(&c, pipe)), "{pipe}");
    }
    // The vector work is the same but for the row reductions, whose instructions run per
    // vector core (`pto_op::kernel::row_reduce`): on the split core each of the two takes
    // half the rows with 256-byte repeats, on the coupled copy one unit all of them with
    // the profile's 512-byte repeats.
    let reductions = |profile: &DeviceProfile| {
        fn walk(body: &[Inst], trips: f64, f: &mut dyn FnMut(&Inst, f64)) {
            for inst in body {
                match inst {
                    Inst::Loop { count, body, .. } => walk(body, trips * *count as f64, f),
                    Inst::Reduce { .. } => f(inst, trips),
                    _ => {}
                }
            }
        }
        let model = pto_op::kernel::cost::CostModel::new(profile, &program);
        let mut cycles = 0.0;
        walk(&program.body, 1.0, &mut |inst, trips| {
            cycles += trips * model.inst(&program, inst).expect("priced").cycles;
        });
        cycles
    };
    assert!(reductions(&split()) > 0.0);
    assert!(close(
        busy(&s, Pipe::V) - busy(&c, Pipe::V),
        reductions(&split()) - reductions(&coupled())
    ));

    // Bytes handed off: the destination tiles, every iteration, per block program.
    assert_eq!(
        s.handoff_bytes,
        iterations as u64 * (s_f16 + p_f16 + pv_f32) as u64
    );
    assert_eq!(c.handoff_bytes, 0);
    let report = Simulator::new(split(), SimOptions::default())
        .time(&program)
        .unwrap();
    assert_eq!(report.handoff_bytes, grid as u64 * s.handoff_bytes);
    assert_eq!(report.cube_vector, CubeVector::Split);
    assert!(
        report.to_string().contains("bytes handed off through GM"),
        "{report}"
    );

    // Each write is followed by its read on the other side, which starts once the write
    // has reached GM (its bytes, then the GM write latency) and its cross-core flag has
    // reached the reader.
    let model = p.pipe_model.as_ref().unwrap();
    let write_latency = model.gm_write_latency_cycles + model.cross_core_flag_cycles;
    let writes: Vec<usize> = (0..s.events.len())
        .filter(|&i| s.events[i].name.ends_with("(to GM)"))
        .collect();
    assert_eq!(writes.len(), 3 * iterations);
    for &i in &writes {
        let (w, r) = (&s.events[i], &s.events[i + 1]);
        assert!(r.name.ends_with("(from GM)"), "{} then {}", w.name, r.name);
        assert_eq!(r.pipe, Pipe::Mte2);
        match w.pipe {
            Pipe::Fixp => assert_eq!((w.side, r.side), (Side::Cube, Side::Vector)),
            Pipe::Mte3 => assert_eq!((w.side, r.side), (Side::Vector, Side::Cube)),
            other => panic!("a hand-off written by {other}"),
        }
        assert!(
            r.start >= end(w) + write_latency,
            "{}: read at {} before the write ends at {} + {write_latency}",
            r.name,
            r.start,
            end(w)
        );
    }
    // The vector cores' softmax of each iteration (its row max) waits for the scores
    // the cube core wrote: the k-th reduce starts after the k-th FIXP write's read.
    let score_reads: Vec<&PipeEvent> = writes
        .iter()
        .map(|&i| &s.events[i + 1])
        .filter(|e| e.side == Side::Vector && e.shape == vec![64, 128])
        .collect();
    let reduces: Vec<&PipeEvent> = s
        .events
        .iter()
        .filter(|e| e.name.starts_with("reduce"))
        .collect();
    assert_eq!((score_reads.len(), reduces.len()), (iterations, iterations));
    for (read, reduce) in score_reads.iter().zip(&reduces) {
        assert_eq!(reduce.side, Side::Vector);
        assert!(reduce.start >= end(read));
    }
    // No event of the coupled run is a hand-off, and all run on the one core.
    assert!(
        c.events
            .iter()
            .all(|e| e.side == Side::Core && !e.name.contains("GM)"))
    );

    // Same outputs either way: the split changes time only.
    let [q, k, v] = [
        Tensor::random([64 * grid, 64], DType::F16, 1),
        Tensor::random([seq, 64], DType::F16, 2),
        Tensor::random([seq, 64], DType::F16, 3),
    ];
    let options = SimOptions {
        trace: true,
        ..SimOptions::default()
    };
    let run_s = Simulator::new(split(), options)
        .run(&program, &[&q, &k, &v])
        .unwrap();
    let run_c = Simulator::new(coupled(), options)
        .run(&program, &[&q, &k, &v])
        .unwrap();
    assert_eq!(run_s.outputs, run_c.outputs);
    // The trace has the cube core's and the vector cores' lanes.
    let json = serde_json::to_string(&run_s.trace.unwrap()).unwrap();
    for lane in ["AIC FIXP", "AIV MTE2", "AIC MTE2", "AIV VECTOR"] {
        assert!(json.contains(lane), "{lane}");
    }
    assert!(
        !serde_json::to_string(&run_c.trace.unwrap())
            .unwrap()
            .contains("AIV")
    );
}

/// A program with only vector work, and a matmul stored straight from L0C, time exactly
/// alike on the split profile and its coupled copy: no hand-off, one side busy.
#[test]
fn programs_without_hand_offs_time_identically_split_or_coupled() {
    // Pure vector: y = exp(x) * 2 over 8 row blocks (their doubled working set fits one
    // vector core's UB, so the loop double-buffers on both).
    let (mut b, x, y) = Builder::one_ub("test.vector", 4, &[4 * 8 * 32, 512], DType::F16);
    let t = b.ub(&[32, 512], DType::F16);
    let e = b.ub(&[32, 512], DType::F16);
    let z = b.ub(&[32, 512], DType::F16);
    let i = b.var();
    let row = Index::Add(
        Box::new(mul(Index::ProgramId, c(8 * 32))),
        Box::new(mul(Index::Var(i), c(32))),
    );
    b.push(Inst::Loop {
        var: i,
        count: 8,
        init: vec![],
        params: vec![],
        body: vec![
            load(t, x, vec![row.clone(), c(0)], 0.0),
            Inst::Unary {
                dst: e,
                op: UnaryOp::Exp,
                src: t,
            },
            binary(z, BinaryOp::Mul, tile(e), scalar(2.0)),
            store(y, vec![row, c(0)], z),
        ],
        yields: vec![],
        results: vec![],
    });
    let vector = b.finish();

    // A matmul stored from L0C (f32 out): y = a @ b, 4 K-steps accumulated in L0C.
    let mut b = Builder::new("test.cube", 2);
    let a = b.input("a", &[2 * 128, 4 * 64], DType::F16);
    let w = b.input("w", &[4 * 64, 128], DType::F16);
    let y = b.output("y", &[2 * 128, 128], DType::F32);
    let a1 = b.tile(&[128, 64], DType::F16, MemLevel::L1);
    let w1 = b.tile(&[64, 128], DType::F16, MemLevel::L1);
    let a0 = b.tile(&[128, 64], DType::F16, MemLevel::L0A);
    let w0 = b.tile(&[64, 128], DType::F16, MemLevel::L0B);
    let zero = b.tile(&[128, 128], DType::F32, MemLevel::L0C);
    let acc = b.tile(&[128, 128], DType::F32, MemLevel::L0C);
    let next = b.tile(&[128, 128], DType::F32, MemLevel::L0C);
    let out = b.tile(&[128, 128], DType::F32, MemLevel::L0C);
    let k = b.var();
    let r0 = mul(Index::ProgramId, c(128));
    let k0 = mul(Index::Var(k), c(64));
    b.push(load(a1, a, vec![r0.clone(), c(0)], 0.0));
    b.push(load(w1, w, vec![c(0), c(0)], 0.0));
    b.push(Inst::Move { dst: a0, src: a1 });
    b.push(Inst::Move { dst: w0, src: w1 });
    b.push(Inst::Matmul {
        dst: zero,
        a: a0,
        b: w0,
        acc: None,
        transpose_b: false,
    });
    let a1b = b.tile(&[128, 64], DType::F16, MemLevel::L1);
    let w1b = b.tile(&[64, 128], DType::F16, MemLevel::L1);
    let a0b = b.tile(&[128, 64], DType::F16, MemLevel::L0A);
    let w0b = b.tile(&[64, 128], DType::F16, MemLevel::L0B);
    b.push(Inst::Loop {
        var: k,
        count: 3,
        init: vec![zero],
        params: vec![acc],
        body: vec![
            load(
                a1b,
                a,
                vec![
                    r0.clone(),
                    Index::Add(Box::new(k0.clone()), Box::new(c(64))),
                ],
                0.0,
            ),
            load(
                w1b,
                w,
                vec![Index::Add(Box::new(k0), Box::new(c(64))), c(0)],
                0.0,
            ),
            Inst::Move { dst: a0b, src: a1b },
            Inst::Move { dst: w0b, src: w1b },
            Inst::Matmul {
                dst: next,
                a: a0b,
                b: w0b,
                acc: Some(acc),
                transpose_b: false,
            },
        ],
        yields: vec![next],
        results: vec![out],
    });
    b.push(store(y, vec![r0, c(0)], out));
    let cube = b.finish();

    for (program, side) in [(&vector, Side::Vector), (&cube, Side::Cube)] {
        let (s, c) = (timeline(program, &split()), timeline(program, &coupled()));
        assert_eq!(s.cycles, c.cycles, "{}", program.op);
        assert_eq!(s.busy, c.busy, "{}", program.op);
        assert_eq!((s.handoff_bytes, c.handoff_bytes), (0, 0));
        assert_eq!(s.events.len(), c.events.len());
        for (es, ec) in s.events.iter().zip(&c.events) {
            assert_eq!((es.side, ec.side), (side, Side::Core), "{}", es.name);
            assert_eq!(
                (es.pipe, es.start, es.duration, &es.name),
                (ec.pipe, ec.start, ec.duration, &ec.name)
            );
        }
        let rs = Simulator::new(split(), SimOptions::default())
            .time(program)
            .unwrap();
        let rc = Simulator::new(coupled(), SimOptions::default())
            .time(program)
            .unwrap();
        assert_eq!(
            (rs.cycles, rs.bound, &rs.per_pipe_busy),
            (rc.cycles, rc.bound, &rc.per_pipe_busy)
        );
    }
}

/// A matmul's result moved to UB only to be stored (as `std.matmul` converts its f32
/// accumulator to the output dtype) is one FIXP store from L0C on a split core: no
/// hand-off, and the store costs nothing more.
#[test]
fn a_move_to_ub_only_stored_is_a_fixp_store_on_a_split_core() {
    let mut b = Builder::new("test.matmul_f16", 1);
    let a = b.input("a", &[128, 64], DType::F16);
    let w = b.input("w", &[64, 128], DType::F16);
    let y = b.output("y", &[128, 128], DType::F16);
    let a1 = b.tile(&[128, 64], DType::F16, MemLevel::L1);
    let w1 = b.tile(&[64, 128], DType::F16, MemLevel::L1);
    let a0 = b.tile(&[128, 64], DType::F16, MemLevel::L0A);
    let w0 = b.tile(&[64, 128], DType::F16, MemLevel::L0B);
    let acc = b.tile(&[128, 128], DType::F32, MemLevel::L0C);
    let out = b.tile(&[128, 128], DType::F16, MemLevel::Ub);
    b.push(load(a1, a, vec![c(0), c(0)], 0.0));
    b.push(load(w1, w, vec![c(0), c(0)], 0.0));
    b.push(Inst::Move { dst: a0, src: a1 });
    b.push(Inst::Move { dst: w0, src: w1 });
    b.push(Inst::Matmul {
        dst: acc,
        a: a0,
        b: w0,
        acc: None,
        transpose_b: false,
    });
    b.push(Inst::Move { dst: out, src: acc });
    b.push(store(y, vec![c(0), c(0)], out));
    let program = b.finish();
    let (s, c) = (timeline(&program, &split()), timeline(&program, &coupled()));
    assert_eq!(s.handoff_bytes, 0);
    let p = split();
    let gm = p.memory_bandwidth / p.clock_hz;
    let write_latency = p.pipe_model.as_ref().unwrap().gm_write_latency_cycles;
    let fixp = (128.0 * 128.0 * 2.0) / p.copy_bytes_per_cycle.l0c_out.min(gm);
    assert_eq!(busy(&s, Pipe::Fixp), fixp);
    // The store's GM write latency follows its bytes, before the program ends.
    let last = s.events.last().unwrap();
    assert_eq!(s.cycles, last.start + last.duration + write_latency);
    assert_eq!(busy(&s, Pipe::Mte3), 0.0);
    assert!(busy(&c, Pipe::Mte3) > 0.0, "coupled: the store from UB");
    let last = s.events.last().unwrap();
    assert_eq!(
        (last.side, last.pipe, last.name.as_str()),
        (Side::Cube, Pipe::Fixp, "move %5")
    );
}

/// A pure vector program holds one vector core's UB on the split profile, as on a coupled
/// core: the Ascend C lowering runs it as an AIV-only kernel, one block program per vector
/// core with whole tiles. Only a mix program whose rows split between the two vector cores
/// holds both UBs (`pto_op::kernel::vector_split::block_capacity`; `tests/tests/vector_cores.rs`).
/// So a loop whose doubled working set fits two UBs but not one double-buffers on neither.
#[test]
fn a_vector_loop_holds_one_vector_cores_ub_on_the_split_profile() {
    let (mut b, x, y) = Builder::one_ub("test.vector_big", 1, &[8 * 64, 512], DType::F16);
    let t = b.ub(&[64, 512], DType::F16);
    let e = b.ub(&[64, 512], DType::F16);
    let i = b.var();
    let row = mul(Index::Var(i), c(64));
    b.push(Inst::Loop {
        var: i,
        count: 8,
        init: vec![],
        params: vec![],
        body: vec![
            load(t, x, vec![row.clone(), c(0)], 0.0),
            Inst::Unary {
                dst: e,
                op: UnaryOp::Exp,
                src: t,
            },
            store(y, vec![row, c(0)], e),
        ],
        yields: vec![],
        results: vec![],
    });
    let program = b.finish();
    let (s, c) = (split(), coupled());
    let (ps, pc) = (
        memory::plan(&program, &s, true).unwrap(),
        memory::plan(&program, &c, true).unwrap(),
    );
    // 128 KiB single, 192 KiB with the loaded tile doubled: over one 184 KiB UB.
    assert_eq!(ps.peak_bytes[&MemLevel::Ub], 128 * 1024);
    assert_eq!(pc.peak_bytes[&MemLevel::Ub], 128 * 1024);
    assert_eq!(
        (ps.double_buffered_loops(), pc.double_buffered_loops()),
        (0, 0)
    );
}

/// With the 910B pipe model a vector instruction occupies the vector pipe only for its
/// repeats; its latency delays the instructions that read its result, not the next
/// independent one.
#[test]
fn vector_latencies_delay_readers_not_the_pipe() {
    let (mut b, x, y) = Builder::one_ub("test.vector_latency", 1, &[64, 256], DType::F32);
    let [t, e1, e2, e3, s] = [(); 5].map(|()| b.ub(&[64, 256], DType::F32));
    b.push(load(t, x, vec![c(0), c(0)], 0.0));
    let exp = |dst, src| Inst::Unary {
        dst,
        op: UnaryOp::Exp,
        src,
    };
    b.push(exp(e1, t)); // independent of e2
    b.push(exp(e2, t));
    b.push(exp(e3, e2)); // reads e2: waits for its latency
    b.push(binary(s, BinaryOp::Add, tile(e1), tile(e3)));
    b.push(store(y, vec![c(0), c(0)], s));
    let program = b.finish();
    // Five 64 KiB tiles, three live at once: more than one vector core's 184 KiB, which is
    // all a vector-only program holds; the UB is widened, as the capacity is not what this
    // test is about.
    let mut p = split();
    p.buffers.ub = 256 * 1024;
    let t = timeline(&program, &p);
    let v: Vec<&PipeEvent> = t.events.iter().filter(|e| e.pipe == Pipe::V).collect();
    assert_eq!(v.len(), 4);
    // exp f32 on 64 KiB: 128 repeats x 2 cycles, latency 27 (VEXP {128, 1, 12} + 15).
    assert_eq!((v[0].duration, v[1].duration), (256.0, 256.0));
    assert_eq!(
        v[1].start,
        end(v[0]),
        "the second exp starts as the first leaves the pipe"
    );
    assert_eq!(
        v[2].start,
        end(v[1]) + 27.0,
        "the exp of e2 waits for its latency"
    );
    // The add waits for e3's latency too; the store for the add's (VADD: 6 + 15).
    assert_eq!(v[3].start, end(v[2]) + 27.0);
    let store = t.events.iter().find(|e| e.pipe == Pipe::Mte3).unwrap();
    assert!(store.start >= end(v[3]) + 21.0);
    // Busy cycles count the occupation only.
    assert_eq!(busy(&t, Pipe::V), 3.0 * 256.0 + 128.0);
}

/// `loads` programs' loads of 32 KiB f16 [64, 256] tiles, each program reading its own rows
/// (so nothing is re-read and nothing hits L2): `cube` of them into L1 (the cube core's
/// MTE2), the rest into UB (the vector cores' MTE2), all independent of each other.
fn independent_loads(grid: usize, cube: usize, vector: usize) -> ValidProgram {
    let mut b = Builder::new("test.loads", grid);
    let rows = 64 * grid as i64;
    let row = Index::Mul(Box::new(Index::ProgramId), Box::new(c(64)));
    for (count, level) in [(cube, MemLevel::L1), (vector, MemLevel::Ub)] {
        for at in 0..count {
            let name = format!("x_{}_{at}", level.name());
            let x = b.input(&name, &[rows as usize, 256], DType::F16);
            let t = b.tile(&[64, 256], DType::F16, level);
            b.push(load(t, x, vec![row.clone(), c(0)], 0.0));
        }
    }
    b.finish()
}

/// Queued GM loads overlap their latencies: the MTE2 queue takes the next load once the
/// previous one's bytes are moved, so n loads end n x bytes / rate + one latency after
/// the first starts (the CANN best practice "transferring a large data block at a time"
/// measures near-full bandwidth from 16 KB a transfer, which a latency paid in series,
/// 351 cycles per 16 KiB at 87 bytes per cycle, would cap at 35%).
#[test]
fn queued_gm_loads_pay_one_latency_not_one_each() {
    let p = split();
    let program = independent_loads(1, 6, 0);
    let t = timeline(&program, &p);
    let latency = p.pipe_model.as_ref().unwrap().gm_read_latency_cycles;
    let bytes = 64.0 * 256.0 * 2.0;
    let data = bytes / p.copy_bytes_per_cycle.gm_to_l1;
    let loads: Vec<&PipeEvent> = t.events.iter().filter(|e| e.pipe == Pipe::Mte2).collect();
    assert_eq!(loads.len(), 6);
    for pair in loads.windows(2) {
        assert_eq!(pair[1].start, end(pair[0]), "back to back on MTE2");
    }
    let first_issue = loads[0].start;
    assert!(
        (t.cycles - (first_issue + 6.0 * data + latency)).abs() < 1e-6,
        "{t:?}"
    );
    assert!((busy(&t, Pipe::Mte2) - 6.0 * data).abs() < 1e-6);
}

/// The cube core's and the vector cores' loads share their AI core's GM bandwidth: with
/// the 24 cores of the chip in use each gets 1.42 TB/s / 24 = 32 bytes per cycle, less
/// than either MTE2's 87, so a load on each side at once takes as long as the two one
/// after the other (hicann/catlass docs/en/1_Practice/evaluation/
/// bottleneck_analysis_and_optimization.md: concurrent moves share the GM bandwidth, their
/// time the sum of their bytes over it). With one core in use the share is 768 bytes per
/// cycle and the two overlap.
#[test]
fn the_cube_and_vector_cores_share_their_ai_cores_gm_bandwidth() {
    let p = split();
    let bytes = 64.0 * 256.0 * 2.0;
    let latency = p.pipe_model.as_ref().unwrap().gm_read_latency_cycles;
    let share = |cores: f64| p.memory_bandwidth / p.clock_hz / cores;
    assert!(share(24.0) < p.copy_bytes_per_cycle.gm_to_l1);
    let both = timeline(&independent_loads(24, 1, 1), &p);
    let mte2: Vec<&PipeEvent> = both
        .events
        .iter()
        .filter(|e| e.pipe == Pipe::Mte2)
        .collect();
    assert_eq!(
        mte2.iter().map(|e| e.side).collect::<Vec<_>>(),
        [Side::Cube, Side::Vector]
    );
    assert!(mte2[1].start >= mte2[0].start + bytes / share(24.0) - 1e-6);
    let alone = timeline(&independent_loads(24, 1, 0), &p);
    assert!(
        (both.cycles - alone.cycles - bytes / share(24.0)).abs() < 1e-6,
        "{} vs {}",
        both.cycles,
        alone.cycles
    );
    // One core in use: the share binds neither load, they run side by side.
    let one = timeline(&independent_loads(1, 1, 1), &p);
    let mte2: Vec<&PipeEvent> = one.events.iter().filter(|e| e.pipe == Pipe::Mte2).collect();
    assert!(mte2[1].start < end(mte2[0]));
    assert!(one.cycles < 2.0 * bytes / p.copy_bytes_per_cycle.gm_to_l1 + latency);
}

/// The launch of a kernel is charged once per run, apart from its cycles: on the 910B the
/// mix-kernel figure (hicann/catlass examples/102_dynamic_optimized_matmul/docs/en/
/// CommonMatmul_en.md: "roughly 1-5 us", the profile takes 3 us: 3e-6 x 1.85 GHz = 5550
/// cycles) for a kernel with work on both the cube and the vector cores, nothing for a
/// pure-cube one; the sim target's time of a call includes it.
#[test]
fn a_mix_kernel_pays_its_launch_once_a_pure_cube_kernel_does_not() {
    let p = split();
    let sim = Simulator::new(p.clone(), SimOptions::default());
    let mix = sim.time(&attention(2, 1024)).unwrap();
    assert_eq!(mix.launch_cycles, 5550);
    assert!((mix.launch_seconds - 3e-6).abs() < 1e-15);
    assert!((mix.total_seconds() - mix.seconds - 3e-6).abs() < 1e-15);
    assert_eq!(
        mix.cycles,
        mix.per_core_cycles.iter().copied().max().unwrap(),
        "the cores' cycles leave the launch out"
    );
    assert!(mix.to_string().contains("launch: 5550 cycles"), "{mix}");
    // One launch per run, whatever the grid.
    assert_eq!(sim.time(&attention(8, 1024)).unwrap().launch_cycles, 5550);
    // Only the cube core works (its store fused into FIXP): a pure-cube kernel.
    let cube = sim.time(&independent_loads(2, 1, 0)).unwrap();
    assert_eq!(cube.launch_cycles, 0);
    assert!(!cube.to_string().contains("launch"), "{cube}");
    // The same mix program on a coupled core is no mix kernel.
    let coupled = Simulator::new(coupled(), SimOptions::default())
        .time(&attention(2, 1024))
        .unwrap();
    assert_eq!(coupled.launch_cycles, 0);
}

/// A hand-off's read waits for the cross-core flag: it starts the profile's
/// `cross_core_flag_cycles` after the write has reached GM (assumed on the 910B: a trip out
/// of the core and back, the GM write plus the GM read latency, 207 + 351), and a profile
/// whose flag is free starts it that much sooner.
#[test]
fn a_hand_off_read_waits_for_the_cross_core_flag() {
    let mut b = Builder::new("test.handoff", 1);
    let a = b.input("a", &[64, 64], DType::F16);
    let w = b.input("w", &[64, 64], DType::F16);
    let y = b.output("y", &[64, 64], DType::F16);
    let a1 = b.tile(&[64, 64], DType::F16, MemLevel::L1);
    let w1 = b.tile(&[64, 64], DType::F16, MemLevel::L1);
    let a0 = b.tile(&[64, 64], DType::F16, MemLevel::L0A);
    let w0 = b.tile(&[64, 64], DType::F16, MemLevel::L0B);
    let acc = b.tile(&[64, 64], DType::F32, MemLevel::L0C);
    let scores = b.tile(&[64, 64], DType::F16, MemLevel::Ub);
    let e = b.tile(&[64, 64], DType::F16, MemLevel::Ub);
    b.push(load(a1, a, vec![c(0), c(0)], 0.0));
    b.push(load(w1, w, vec![c(0), c(0)], 0.0));
    b.push(Inst::Move { dst: a0, src: a1 });
    b.push(Inst::Move { dst: w0, src: w1 });
    b.push(Inst::Matmul {
        dst: acc,
        a: a0,
        b: w0,
        acc: None,
        transpose_b: false,
    });
    b.push(Inst::Move {
        dst: scores,
        src: acc,
    });
    b.push(Inst::Unary {
        dst: e,
        op: UnaryOp::Exp,
        src: scores,
    });
    b.push(store(y, vec![c(0), c(0)], e));
    let program = b.finish();
    let p = split();
    let model = p.pipe_model.clone().unwrap();
    assert_eq!(
        model.cross_core_flag_cycles,
        model.gm_write_latency_cycles + model.gm_read_latency_cycles
    );
    let read_start = |profile: &DeviceProfile| {
        let t = timeline(&program, profile);
        let write = t
            .events
            .iter()
            .find(|e| e.name.ends_with("(to GM)"))
            .unwrap();
        let read = t
            .events
            .iter()
            .find(|e| e.name.ends_with("(from GM)"))
            .unwrap();
        (read.start - end(write), t.cycles)
    };
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9 * b.max(1.0);
    let (gap, cycles) = read_start(&p);
    let expected = model.gm_write_latency_cycles + model.cross_core_flag_cycles;
    assert!(close(gap, expected), "{gap} vs {expected}");
    let mut free = p.clone();
    free.pipe_model.as_mut().unwrap().cross_core_flag_cycles = 0.0;
    let (free_gap, free_cycles) = read_start(&free);
    assert!(close(free_gap, model.gm_write_latency_cycles), "{free_gap}");
    assert!(close(cycles - free_cycles, model.cross_core_flag_cycles));
}

/// The tuner times every candidate tiling of `std.matmul` on the simulator and keeps the
/// fastest: the candidates come sorted by time, the device's default tiling is among them
/// once, each candidate's time is that of its traced kernel, and for a small output (two
/// 128 x 256 tiles on 24 cores) a smaller tile that busies more cores wins.
#[test]
fn the_matmul_tuner_keeps_the_fastest_candidate() {
    use pto_backends::sim::tune::tune_matmul;
    use pto_op::kernel::cube::{GemmTiles, tiled_matmul_with};
    let p = split();
    let tuning = tune_matmul(&p, [256, 4096, 256], DType::F16).unwrap();
    let times: Vec<f64> = tuning.candidates.iter().map(|c| c.seconds()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    let defaults: Vec<_> = tuning.candidates.iter().filter(|c| c.default).collect();
    assert_eq!(defaults.len(), 1);
    let caps = [
        p.buffers.l0a,
        p.buffers.l0b,
        p.buffers.l0c,
        p.buffers.l1,
        p.buffers.ub,
    ];
    let fitting = GemmTiles::fitting(caps, 2, 2);
    assert_eq!((defaults[0].m, defaults[0].n), (fitting.m, fitting.n));
    assert_eq!(defaults[0].blocks, 2);
    let chosen = tuning.chosen();
    assert!(chosen.blocks > defaults[0].blocks, "{chosen:?}");
    assert!(chosen.seconds() < defaults[0].seconds());
    // The chosen time is its kernel's, traced and timed afresh.
    let mut k = pto_op::Kernel::new("std.matmul")
        .with_core_count(p.ai_cores as usize)
        .with_buffers(p.buffers)
        .with_vector_cores(2);
    let a = k.input("a", pto_op::Shape::from([256, 4096]), DType::F16);
    let b = k.input("b", pto_op::Shape::from([4096, 256]), DType::F16);
    let y = k.output("y", pto_op::Shape::from([256, 256]), DType::F16);
    let tiles = GemmTiles {
        m: chosen.m,
        n: chosen.n,
        k: chosen.k,
        steps: chosen.steps,
    };
    tiled_matmul_with(&mut k, &a, &b, &y, tiles).unwrap();
    let report = Simulator::new(p.clone(), SimOptions::default())
        .time(&k.finish().unwrap())
        .unwrap();
    assert_eq!(report, chosen.report);
}
