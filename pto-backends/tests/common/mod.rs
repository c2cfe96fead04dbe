//! Hand-written kernel programs of the simulator tests: the builder and constructors are
//! pto-op's `kernel::test_support` (shared with its cost tests), re-exported here.

#![allow(dead_code)] // Each test file uses a different subset of the helpers.

use pto_op::DType;
use pto_op::kernel::ValidProgram;
use pto_op::kernel::ir::*;
pub use pto_op::kernel::test_support::*;

/// An attention-like block program: per program, 64 query rows against `seq` keys in
/// blocks of 128: S = Q K^T on the cube, P = exp(S - rowmax S) on the vector unit, P back
/// through L1 to the cube, O += P V accumulated in UB. Inputs q [64 * grid, 64],
/// k and v [seq, 64], f16; output o [64 * grid, 64] f16.
pub fn attention(grid: usize, seq: usize) -> ValidProgram {
    let (rows, d, block) = (64usize, 64usize, 128usize);
    let mut b = Builder::new("test.attention", grid);
    let q = b.input("q", &[rows * grid, d], DType::F16);
    let k = b.input("k", &[seq, d], DType::F16);
    let v = b.input("v", &[seq, d], DType::F16);
    let o = b.output("o", &[rows * grid, d], DType::F16);
    let h = DType::F16;
    let q_l1 = b.tile(&[rows, d], h, MemLevel::L1);
    let q_l0a = b.tile(&[rows, d], h, MemLevel::L0A);
    let acc0 = b.tile(&[rows, d], DType::F32, MemLevel::Ub);
    let acc = b.tile(&[rows, d], DType::F32, MemLevel::Ub);
    let k_l1 = b.tile(&[block, d], h, MemLevel::L1);
    let k_l0b = b.tile(&[block, d], h, MemLevel::L0B);
    let s_l0c = b.tile(&[rows, block], DType::F32, MemLevel::L0C);
    let s_ub = b.tile(&[rows, block], h, MemLevel::Ub);
    let m = b.tile(&[rows, 1], h, MemLevel::Ub);
    let diff = b.tile(&[rows, block], h, MemLevel::Ub);
    let p = b.tile(&[rows, block], h, MemLevel::Ub);
    let p_l1 = b.tile(&[rows, block], h, MemLevel::L1);
    let p_l0a = b.tile(&[rows, block], h, MemLevel::L0A);
    let v_l1 = b.tile(&[block, d], h, MemLevel::L1);
    let v_l0b = b.tile(&[block, d], h, MemLevel::L0B);
    let pv_l0c = b.tile(&[rows, d], DType::F32, MemLevel::L0C);
    let pv_ub = b.tile(&[rows, d], DType::F32, MemLevel::Ub);
    let next = b.tile(&[rows, d], DType::F32, MemLevel::Ub);
    let result = b.tile(&[rows, d], DType::F32, MemLevel::Ub);
    let out = b.tile(&[rows, d], h, MemLevel::Ub);
    let j = b.var();
    let row0 = mul(Index::ProgramId, c(rows as i64));
    let kv_row = mul(Index::Var(j), c(block as i64));
    b.push(load(q_l1, q, vec![row0.clone(), c(0)], 0.0));
    b.push(Inst::Move {
        dst: q_l0a,
        src: q_l1,
    });
    b.push(Inst::Full {
        dst: acc0,
        value: 0.0,
    });
    b.push(Inst::Loop {
        var: j,
        count: seq.div_ceil(block),
        init: vec![acc0],
        params: vec![acc],
        body: vec![
            load(k_l1, k, vec![kv_row.clone(), c(0)], 0.0),
            Inst::Move {
                dst: k_l0b,
                src: k_l1,
            },
            Inst::Matmul {
                dst: s_l0c,
                a: q_l0a,
                b: k_l0b,
                acc: None,
                transpose_b: true,
            },
            Inst::Move {
                dst: s_ub,
                src: s_l0c,
            },
            Inst::Reduce {
                dst: m,
                op: ReduceOp::Max,
                src: s_ub,
                axis: 1,
            },
            binary(diff, BinaryOp::Sub, tile(s_ub), tile(m)),
            Inst::Unary {
                dst: p,
                op: UnaryOp::Exp,
                src: diff,
            },
            Inst::Move { dst: p_l1, src: p },
            Inst::Move {
                dst: p_l0a,
                src: p_l1,
            },
            load(v_l1, v, vec![kv_row, c(0)], 0.0),
            Inst::Move {
                dst: v_l0b,
                src: v_l1,
            },
            Inst::Matmul {
                dst: pv_l0c,
                a: p_l0a,
                b: v_l0b,
                acc: None,
                transpose_b: false,
            },
            Inst::Move {
                dst: pv_ub,
                src: pv_l0c,
            },
            binary(next, BinaryOp::Add, tile(acc), tile(pv_ub)),
        ],
        yields: vec![next],
        results: vec![result],
    });
    b.push(Inst::Cast {
        dst: out,
        src: result,
    });
    b.push(store(o, vec![row0, c(0)], out));
    b.finish()
}
