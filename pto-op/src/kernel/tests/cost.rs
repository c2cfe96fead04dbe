//! The cost model on the 910B profile's pipe model: instruction costs equal the values
//! computed by hand from the cited tables (PyPTO's A2A3 `def.h` / `pipe.h`, see the
//! profile's notes), and profiles without a pipe model keep the plain costs.

use crate::device::DeviceProfile;
use crate::dtype::DType;
use crate::kernel::cost::{CostModel, Placement, Side};
use crate::kernel::ir::{
    GlobalDecl, GlobalId, GlobalRole, Index, Inst, MemLevel, Operand, Pipe, Program, ReduceOp,
    TileId, TileType, UnaryOp,
};

/// One block program (grid 1) with an input `x` [64, 256] f16 and these tiles.
fn program(tiles: Vec<TileType>, body: Vec<Inst>) -> Program {
    Program {
        op: "t.cost".into(),
        grid: 1,
        globals: vec![
            GlobalDecl {
                name: "x".into(),
                shape: vec![64, 256],
                dtype: DType::F16,
                role: GlobalRole::Input,
            },
            GlobalDecl {
                name: "y".into(),
                shape: vec![64, 256],
                dtype: DType::F16,
                role: GlobalRole::Output,
            },
        ],
        tiles,
        vars: 0,
        body,
    }
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
        dst: TileId(dst),
        op: UnaryOp::Exp,
        src: TileId(src),
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

    // Row sum of 64 x 256 f32: VCADD in mode 0, vecRmwDelay_ 7 cycles per repeat of the
    // input, latency 20 + 15.
    let c = cost(&Inst::Reduce {
        dst: TileId(4),
        op: ReduceOp::Sum,
        src: TileId(0),
        axis: 1,
    });
    assert_eq!((c.cycles, c.latency), (128.0 * 7.0, 35.0));
    // Row max: VCMAX, 7 cycles per repeat, latency 8 + 15.
    let c = cost(&Inst::Reduce {
        dst: TileId(5),
        op: ReduceOp::Max,
        src: TileId(0),
        axis: 1,
    });
    assert_eq!((c.cycles, c.latency), (128.0 * 7.0, 23.0));
    // Add of two f32 tiles (one broadcast): VADD, 1 cycle per repeat, latency 6 + 15.
    let c = cost(&Inst::Binary {
        dst: TileId(6),
        op: crate::kernel::ir::BinaryOp::Add,
        lhs: Operand::Tile(TileId(0)),
        rhs: Operand::Tile(TileId(4)),
    });
    assert_eq!((c.cycles, c.latency), (128.0, 21.0));
    // Cast f32 -> f16: VCONV, 1 cycle per repeat of the larger operand, latency 4 + 15.
    let c = cost(&Inst::Cast {
        dst: TileId(2),
        src: TileId(0),
    });
    assert_eq!((c.cycles, c.latency), (128.0, 19.0));
    // tanh has no row in the table: the assumed class (transcendental) and latency, which
    // occupy the pipe.
    let c = cost(&Inst::Unary {
        dst: TileId(1),
        op: UnaryOp::Tanh,
        src: TileId(0),
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
fn copies_on_ascend910b_pay_the_gm_latencies() {
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
    // share of one core, 768, is larger) after ddrRdLatency_ 347 + 4.
    let load = Inst::Load {
        dst: TileId(0),
        src: GlobalId(0),
        offsets: at0(),
        pad: 0.0,
    };
    let c = model.inst(&prog, &load).unwrap();
    assert_eq!((c.pipe, c.latency), (Pipe::Mte2, 0.0));
    assert!((c.cycles - (351.0 + 32768.0 / 87.0)).abs() < 1e-9, "{c:?}");
    // UB -> GM at A2A3.ini's 64 bytes per cycle after ddrWrLatency_ 203 + 4.
    let store = Inst::Store {
        dst: GlobalId(1),
        offsets: at0(),
        src: TileId(0),
    };
    let c = model.inst(&prog, &store).unwrap();
    assert_eq!((c.pipe, c.cycles), (Pipe::Mte3, 207.0 + 32768.0 / 64.0));
    // L1 -> L0A: 32 KiB at 512 bytes per cycle, the pipe free after them, the data ready
    // 25 cycles later.
    let to_l0a = Inst::Move {
        dst: TileId(5),
        src: TileId(4),
    };
    let c = model.inst(&prog, &to_l0a).unwrap();
    assert_eq!((c.pipe, c.cycles, c.latency), (Pipe::Mte1, 64.0, 25.0));

    // A hand-off L0C -> UB (its tile read by a vector instruction): FIXP to GM at 87 bytes
    // per cycle with the write latency, then MTE2 back with the read latency.
    let handoff = Inst::Move {
        dst: TileId(2),
        src: TileId(1),
    };
    let use_it = Inst::Unary {
        dst: TileId(3),
        op: UnaryOp::Exp,
        src: TileId(2),
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
    assert!((write.cost.cycles - (207.0 + bytes / 87.0)).abs() < 1e-9);
    assert_eq!((read.side, read.cost.pipe), (Side::Vector, Pipe::Mte2));
    assert!((read.cost.cycles - (351.0 + bytes / 87.0)).abs() < 1e-9);
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
                dst: TileId(1),
                op: UnaryOp::Exp,
                src: TileId(0),
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
                dst: TileId(0),
                src: GlobalId(0),
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
        dst: TileId(1),
        op: UnaryOp::Exp,
        src: TileId(0),
    };
    let c = model.inst(&prog, &exp).unwrap();
    assert_eq!((c.cycles, c.latency), (20.0 + 128.0 * 4.0, 0.0));
    let reduce = Inst::Reduce {
        dst: TileId(2),
        op: ReduceOp::Sum,
        src: TileId(0),
        axis: 1,
    };
    let c = model.inst(&prog, &reduce).unwrap();
    assert_eq!((c.cycles, c.latency), (20.0 + 128.0 * 2.0, 0.0));
    assert_eq!(model.gm_read_latency(), 200.0);
    assert_eq!(model.gm_write_latency(), 200.0);
}
