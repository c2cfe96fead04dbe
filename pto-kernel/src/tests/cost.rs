//! The cost model on the 910B profile's pipe model: instruction costs equal the values
//! computed by hand from the cited tables (PyPTO's A2A3 `def.h` / `pipe.h`, see the
//! profile's notes), and profiles without a pipe model keep the plain costs.

use crate::cost::{CostModel, Placement, Side};
use crate::device::DeviceProfile;
use crate::dtype::DType;
use crate::ir::{
    GlobalId, Index, Inst, MemLevel, Operand, Pipe, Program, ReduceOp, TileId, TileType, UnaryOp,
};
use crate::test_support::Builder;

/// One block program (grid 1) with an input `x` [64, 256] f16 and these tiles: the shared
/// one UB program ([`Builder::one_ub`]).
fn program(tiles: Vec<TileType>, body: Vec<Inst>) -> Program {
    let (mut b, _, _) = Builder::one_ub("t.cost", 1, &[64, 256], DType::F16);
    for t in tiles {
        b.tile(&t.shape, t.dtype, t.level);
    }
    body.into_iter().for_each(|inst| b.push(inst));
    b.finish_unchecked()
}

fn tile(shape: &[usize], dtype: DType, level: MemLevel) -> TileType {
    TileType {
        shape: shape.to_vec(),
        dtype,
        level,
    }
}

fn ub(shape: &[usize], dtype: DType) -> TileType {
    tile(shape, dtype, MemLevel::Ub)
}

fn at0() -> Vec<Index> {
    vec![Index::Const(0), Index::Const(0)]
}

#[test]
fn vector_costs_on_ascend910b_are_the_pipe_models() {
    let p = DeviceProfile::builtin("ascend910b").unwrap();
    let exp = |dst: u32, src: u32| Inst::Unary {
        dst: TileId::new(dst),
        op: UnaryOp::Exp,
        src: TileId::new(src),
    };
    let prog = program(
        vec![
            ub(&[64, 256], DType::F32),
            ub(&[64, 256], DType::F32),
            ub(&[64, 256], DType::F16),
            ub(&[64, 256], DType::F16),
            ub(&[64, 1], DType::F32),
            ub(&[64, 1], DType::F32),
            ub(&[64, 256], DType::F32),
        ],
        vec![],
    );
    let model = CostModel::new(&p, &prog);
    let cost = |inst: &Inst| model.inst(&prog, inst).unwrap();

    // exp over 64 x 256 f32: 64 KiB = 128 repeats of the pair's 512 bytes (256 on each
    // vector core); VEXP f32 moves 128 bytes per cycle: 2 cycles per repeat; latency
    // delay 12 + vecDelay_ 15.
    let c = cost(&exp(1, 0));
    assert_eq!(
        (c.pipe, c.cycles, c.latency, c.bytes),
        (Pipe::V, 256.0, 27.0, 65536)
    );
    // f16: 32 KiB = 64 repeats, VEXP f16 64 bytes per cycle: 4 cycles per repeat. The same
    // time for the same elements (the plain classes would have halved it).
    let c = cost(&exp(3, 2));
    assert_eq!((c.cycles, c.latency), (256.0, 27.0));

    // Row sum of 64 x 256 f32: the pair's vector cores take 32 rows each, 32 x 256 f32 per
    // core, one of pto-isa's group-reduce shapes (ReduceOptFP32_32x256): VCGADD over 128
    // repeats (1 cycle each, latency 12 + 15), VADD of 8 and of 4 repeats (latency 6 + 15),
    // VCGADD of 4 repeats, then VBRCB of 4 repeats (2 cycles each, latency 4 + 15) of the
    // packed sums into the [32, 1] tile's padded rows; a barrier after each, so each
    // latency but the last's is paid.
    let c = cost(&Inst::Reduce {
        dst: TileId::new(4),
        op: ReduceOp::Sum,
        src: TileId::new(0),
        axis: 1,
    });
    assert_eq!(
        (c.cycles, c.latency),
        (
            128.0 + 27.0 + 8.0 + 21.0 + 4.0 + 21.0 + 4.0 + 27.0 + 8.0,
            19.0
        )
    );
    // Row max: VCGMAX (latency 5 + 15) and VMAX (latency 4 + 15) the same way. (Priced as
    // one VCADD / VCMAX over the 128 repeats, as before, both were 128 x 7 = 896 cycles.)
    let c = cost(&Inst::Reduce {
        dst: TileId::new(5),
        op: ReduceOp::Max,
        src: TileId::new(0),
        axis: 1,
    });
    assert_eq!(
        (c.cycles, c.latency),
        (
            128.0 + 20.0 + 8.0 + 19.0 + 4.0 + 19.0 + 4.0 + 20.0 + 8.0,
            19.0
        )
    );
    // Add of two f32 tiles (one broadcast): VADD, 1 cycle per repeat, latency 6 + 15.
    let c = cost(&Inst::Binary {
        dst: TileId::new(6),
        op: crate::ir::BinaryOp::Add,
        lhs: Operand::Tile(TileId::new(0)),
        rhs: Operand::Tile(TileId::new(4)),
    });
    assert_eq!((c.cycles, c.latency), (128.0, 21.0));
    // Cast f32 -> f16: VCONV, 1 cycle per repeat of the larger operand, latency 4 + 15.
    let c = cost(&Inst::Cast {
        dst: TileId::new(2),
        src: TileId::new(0),
    });
    assert_eq!((c.cycles, c.latency), (128.0, 19.0));
    // tanh has no row in the table: the assumed class (transcendental) and latency, which
    // occupy the pipe.
    let c = cost(&Inst::Unary {
        dst: TileId::new(1),
        op: UnaryOp::Tanh,
        src: TileId::new(0),
    });
    assert_eq!(
        (c.cycles, c.latency),
        (
            p.vector_latency_cycles + 128.0 * p.vector_cycles_per_repeat.transcendental,
            0.0
        )
    );
}

#[test]
fn copies_on_ascend910b_pay_the_gm_latencies_after_their_bytes() {
    let p = DeviceProfile::builtin("ascend910b").unwrap();
    let prog = program(
        vec![
            ub(&[64, 256], DType::F16),
            tile(&[64, 128], DType::F32, MemLevel::L0C),
            ub(&[64, 128], DType::F16),
            ub(&[64, 128], DType::F16),
            tile(&[128, 128], DType::F16, MemLevel::L1),
            tile(&[128, 128], DType::F16, MemLevel::L0A),
        ],
        vec![],
    );
    let model = CostModel::new(&p, &prog);
    assert_eq!(model.l2_hit_share(), 0.0);
    // GM -> UB, 32 KiB on one core: 87 bytes per cycle (the pipe model's GM read; the GM
    // share of one core, 768, is larger), the data there ddrRdLatency_ 347 + 4 later, the
    // pipe free meanwhile (the CANN best practice "transferring a large data block at a
    // time" measures near-full bandwidth from 16 KB a transfer, which a latency occupying
    // the pipe would cap at 16384 / 87 / (351 + 16384 / 87) = 35%).
    let load = Inst::Load {
        dst: TileId::new(0),
        src: GlobalId::new(0),
        offsets: at0(),
        pad: 0.0,
    };
    let c = model.inst(&prog, &load).unwrap();
    assert_eq!((c.pipe, c.latency), (Pipe::Mte2, 351.0));
    assert!((c.cycles - 32768.0 / 87.0).abs() < 1e-9, "{c:?}");
    // It holds the core's GM share (1.42 TB/s / 1.85 GHz = 768 bytes per cycle) for its
    // bytes: every miss, no L2 re-read.
    let share = p.memory_bandwidth / p.clock_hz;
    assert!((c.links.gm - 32768.0 / share).abs() < 1e-9, "{c:?}");
    assert_eq!((c.links.l2_read, c.links.l2_write), (0.0, 0.0));
    // UB -> GM at A2A3.ini's 64 bytes per cycle, ddrWrLatency_ 203 + 4 after them.
    let store = Inst::Store {
        dst: GlobalId::new(1),
        offsets: at0(),
        src: TileId::new(0),
    };
    let c = model.inst(&prog, &store).unwrap();
    assert_eq!(
        (c.pipe, c.cycles, c.latency),
        (Pipe::Mte3, 32768.0 / 64.0, 207.0)
    );
    assert!((c.links.gm - 32768.0 / share).abs() < 1e-9, "{c:?}");
    // L1 -> L0A: 32 KiB at 512 bytes per cycle, the pipe free after them, the data ready
    // 25 cycles later.
    let to_l0a = Inst::Move {
        dst: TileId::new(5),
        src: TileId::new(4),
    };
    let c = model.inst(&prog, &to_l0a).unwrap();
    assert_eq!((c.pipe, c.cycles, c.latency), (Pipe::Mte1, 64.0, 25.0));

    // A hand-off L0C -> UB (its tile read by a vector instruction): FIXP to GM at 87 bytes
    // per cycle with the write latency after it, then MTE2 back with the read latency
    // after it; the write holds the L2 write share (86 bytes per cycle per core x 24 on
    // one core), the read the L2 read share (110 x 24).
    let handoff = Inst::Move {
        dst: TileId::new(2),
        src: TileId::new(1),
    };
    let use_it = Inst::Unary {
        dst: TileId::new(3),
        op: UnaryOp::Exp,
        src: TileId::new(2),
    };
    let prog = Program {
        body: vec![handoff.clone(), use_it],
        ..prog
    };
    let model = CostModel::new(&p, &prog);
    let Placement::HandOff { write, read } = model.placement(&prog, &handoff).unwrap() else {
        panic!("a hand-off on the split core")
    };
    let bytes = 64.0 * 128.0 * 2.0;
    assert_eq!((write.side, write.cost.pipe), (Side::Cube, Pipe::Fixp));
    assert!((write.cost.cycles - bytes / 87.0).abs() < 1e-9);
    assert_eq!(write.cost.latency, 207.0);
    let l2_write = p.l2.write_bandwidth / p.clock_hz;
    assert!((write.cost.links.l2_write - bytes / l2_write).abs() < 1e-9);
    assert_eq!((write.cost.links.gm, write.cost.links.l2_read), (0.0, 0.0));
    assert_eq!((read.side, read.cost.pipe), (Side::Vector, Pipe::Mte2));
    assert!((read.cost.cycles - bytes / 87.0).abs() < 1e-9);
    assert_eq!(read.cost.latency, 351.0);
    let l2_read = p.l2.bandwidth / p.clock_hz;
    assert!((read.cost.links.l2_read - bytes / l2_read).abs() < 1e-9);
}

#[test]
fn kirin_costs_keep_the_plain_formulas() {
    let p = DeviceProfile::builtin("kirin9030").unwrap();
    assert!(p.pipe_model.is_none());
    let prog = program(
        vec![ub(&[64, 256], DType::F32), ub(&[64, 256], DType::F32)],
        vec![],
    );
    let model = CostModel::new(&p, &prog);
    let c = model
        .inst(
            &prog,
            &Inst::Unary {
                dst: TileId::new(1),
                op: UnaryOp::Exp,
                src: TileId::new(0),
            },
        )
        .unwrap();
    let repeats = (65536.0 / p.vector_bytes_per_repeat).ceil();
    assert_eq!(
        (c.cycles, c.latency),
        (
            p.vector_latency_cycles + repeats * p.vector_cycles_per_repeat.transcendental,
            0.0
        )
    );
    let c = model
        .inst(
            &prog,
            &Inst::Load {
                dst: TileId::new(0),
                src: GlobalId::new(0),
                offsets: at0(),
                pad: 0.0,
            },
        )
        .unwrap();
    let rate = p
        .copy_bytes_per_cycle
        .gm_to_ub
        .min(p.memory_bandwidth / p.clock_hz);
    assert!((c.cycles - (p.copy_latency_cycles + 65536.0 / rate)).abs() < 1e-9);
}

/// The 910B profile as written before the pipe model (no `pipe_model`): the plain costs
/// of that time, e.g. exp over 64 x 256 f32 = 20 + 128 repeats x 4.
#[test]
fn the_910b_profile_without_its_pipe_model_prices_as_before() {
    let mut p = DeviceProfile::builtin("ascend910b").unwrap();
    p.pipe_model = None;
    let prog = program(
        vec![
            ub(&[64, 256], DType::F32),
            ub(&[64, 256], DType::F32),
            ub(&[64, 1], DType::F32),
        ],
        vec![],
    );
    let model = CostModel::new(&p, &prog);
    let exp = Inst::Unary {
        dst: TileId::new(1),
        op: UnaryOp::Exp,
        src: TileId::new(0),
    };
    let c = model.inst(&prog, &exp).unwrap();
    assert_eq!((c.cycles, c.latency), (20.0 + 128.0 * 4.0, 0.0));
    let reduce = Inst::Reduce {
        dst: TileId::new(2),
        op: ReduceOp::Sum,
        src: TileId::new(0),
        axis: 1,
    };
    let c = model.inst(&prog, &reduce).unwrap();
    // Now the row reduction's instructions at the plain costs: 32 x 256 f32 on each vector
    // core (no group reduce without the pipe model's rows), 3 folds of 32 repeats (simple)
    // and a reduce of 32 (reduce class), each with the fixed 20 cycles (was one reduce of
    // 20 + 128 x 2 = 276).
    assert_eq!(
        (c.cycles, c.latency),
        (3.0 * (20.0 + 32.0) + (20.0 + 32.0 * 2.0), 0.0)
    );
    assert_eq!(model.gm_read_latency(), 200.0);
    assert_eq!(model.gm_write_latency(), 200.0);
}

/// A row reduction off the group-reduce shapes takes pto-isa's general path: 128 x 256 f32
/// is 64 x 256 on each of the 910B's vector cores, 4 repeats per row: 3 element-wise folds
/// of the 64 rows (count mode, 64 repeats each) into a tmp tile of one repeat per row,
/// then one reduce of the 64 rows' single repeats, a barrier between each two.
#[test]
fn a_row_reduction_folds_first_then_reduces_once_per_row() {
    let p = DeviceProfile::builtin("ascend910b").unwrap();
    let prog = program(
        vec![ub(&[128, 256], DType::F32), ub(&[128, 1], DType::F32)],
        vec![],
    );
    let model = CostModel::new(&p, &prog);
    let reduce = |op| Inst::Reduce {
        dst: TileId::new(1),
        op,
        src: TileId::new(0),
        axis: 1,
    };
    // VADD f32: 1 cycle per repeat, latency 6 + 15; VCADD mode 0: 7 per repeat, 20 + 15.
    let c = model.inst(&prog, &reduce(ReduceOp::Sum)).unwrap();
    assert_eq!(
        (c.pipe, c.cycles, c.latency),
        (Pipe::V, 3.0 * (64.0 + 21.0) + 64.0 * 7.0, 35.0)
    );
    // VMAX f32: 1 per repeat, latency 4 + 15; VCMAX: 7 per repeat (vecRmwDelay_), 8 + 15.
    let c = model.inst(&prog, &reduce(ReduceOp::Max)).unwrap();
    assert_eq!(
        (c.cycles, c.latency),
        (3.0 * (64.0 + 19.0) + 64.0 * 7.0, 23.0)
    );
    // The old pricing, one VCADD over all 256 repeats of the pair (128 on each core), was
    // 128 x 7 = 896 cycles.
    // A mean adds the scaling of the 64 results after the sum's latency: one VMULS (priced
    // as VMUL, 1 cycle per repeat, latency 7 + 15) over the padded [64, 1] result, a row of
    // 16 f32 per value as the lowering lays it out: 64 x 64 bytes, 16 repeats.
    let c = model.inst(&prog, &reduce(ReduceOp::Mean)).unwrap();
    assert_eq!(
        (c.cycles, c.latency),
        (3.0 * (64.0 + 21.0) + 64.0 * 7.0 + 35.0 + 16.0, 22.0)
    );
}

/// Kirin (no pipe model) follows the same instructions at its class costs: 64 x 256 f32
/// on one core of 256-byte repeats is 3 folds of 64 repeats (simple, 1 per repeat) and one
/// reduce of 64 repeats (reduce class, 2 per repeat), each with the fixed 20 cycles.
#[test]
fn kirin_follows_the_same_row_reduction_at_its_class_costs() {
    let p = DeviceProfile::builtin("kirin9030").unwrap();
    let prog = program(
        vec![ub(&[64, 256], DType::F32), ub(&[64, 1], DType::F32)],
        vec![],
    );
    let model = CostModel::new(&p, &prog);
    let c = model
        .inst(
            &prog,
            &Inst::Reduce {
                dst: TileId::new(1),
                op: ReduceOp::Max,
                src: TileId::new(0),
                axis: 1,
            },
        )
        .unwrap();
    assert_eq!(
        (c.cycles, c.latency),
        (3.0 * (20.0 + 64.0 * 1.0) + (20.0 + 64.0 * 2.0), 0.0)
    );
    // A row of less than one repeat: the reduce alone, one (masked) repeat per row: 64
    // repeats (was one reduce over the tile's 8 KiB, 32 repeats: 20 + 32 x 2).
    let prog = program(
        vec![ub(&[64, 32], DType::F32), ub(&[64, 1], DType::F32)],
        vec![],
    );
    let model = CostModel::new(&p, &prog);
    let c = model
        .inst(
            &prog,
            &Inst::Reduce {
                dst: TileId::new(1),
                op: ReduceOp::Sum,
                src: TileId::new(0),
                axis: 1,
            },
        )
        .unwrap();
    assert_eq!((c.cycles, c.latency), (20.0 + 64.0 * 2.0, 0.0));
}
