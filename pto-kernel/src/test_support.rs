//! Support for tests that write kernel programs by hand, instruction by instruction (the
//! tile-language builder, [`super::Kernel`], traces them instead): a [`Builder`] of
//! programs, the "one UB program" most cost and simulator tests start from
//! ([`Builder::one_ub`]: an input `x` and an output `y` of one shape), and short
//! constructors of indices, operands and instructions.
//!
//! Compiled for pto-op's own tests and, with the feature `test-support`, for other crates'
//! tests (pto-backends takes it as a dev-dependency); not part of the API.

use crate::dtype::DType;

use super::ValidProgram;
use super::ir::{
    BinaryOp, GlobalDecl, GlobalId, GlobalRole, IdVec, Index, Inst, MemLevel, Operand, Program,
    TileId, TileType, VarId,
};

/// A program under construction.
pub struct Builder {
    program: Program,
}

impl Builder {
    /// An empty program of op `op` with `grid` block programs.
    pub fn new(op: &str, grid: usize) -> Builder {
        Builder {
            program: Program {
                op: op.to_owned(),
                grid,
                globals: IdVec::new(),
                tiles: IdVec::new(),
                vars: 0,
                body: Vec::new(),
            },
        }
    }

    /// One UB program: op `op` with `grid` block programs, an input `x` and an output `y`
    /// of `shape` and `dtype` (globals 0 and 1), its tiles and body still to add.
    pub fn one_ub(
        op: &str,
        grid: usize,
        shape: &[usize],
        dtype: DType,
    ) -> (Builder, GlobalId, GlobalId) {
        let mut b = Builder::new(op, grid);
        let x = b.input("x", shape, dtype);
        let y = b.output("y", shape, dtype);
        (b, x, y)
    }

    fn global(&mut self, name: &str, shape: &[usize], dtype: DType, role: GlobalRole) -> GlobalId {
        self.program.globals.push(GlobalDecl {
            name: name.to_owned(),
            shape: shape.to_vec(),
            dtype,
            role,
        })
    }

    /// Declares an input.
    pub fn input(&mut self, name: &str, shape: &[usize], dtype: DType) -> GlobalId {
        self.global(name, shape, dtype, GlobalRole::Input)
    }

    /// Declares an output.
    pub fn output(&mut self, name: &str, shape: &[usize], dtype: DType) -> GlobalId {
        self.global(name, shape, dtype, GlobalRole::Output)
    }

    /// Declares a tile in `level`.
    pub fn tile(&mut self, shape: &[usize], dtype: DType, level: MemLevel) -> TileId {
        self.program.tiles.push(TileType {
            shape: shape.to_vec(),
            dtype,
            level,
        })
    }

    /// Declares a tile in UB.
    pub fn ub(&mut self, shape: &[usize], dtype: DType) -> TileId {
        self.tile(shape, dtype, MemLevel::Ub)
    }

    /// Declares a loop variable.
    pub fn var(&mut self) -> VarId {
        self.program.vars += 1;
        VarId::new(self.program.vars - 1)
    }

    /// Appends an instruction to the body.
    pub fn push(&mut self, inst: Inst) {
        self.program.body.push(inst);
    }

    /// The program, validated; panics naming the op when it is invalid (the simulator
    /// runs valid programs only).
    pub fn finish(self) -> ValidProgram {
        let op = self.program.op.clone();
        self.program
            .validate()
            .unwrap_or_else(|e| panic!("test program {op} is invalid: {e}"))
    }

    /// The program as built, for tests of validation and of costs.
    pub fn finish_unchecked(self) -> Program {
        self.program
    }
}

/// A constant index.
pub fn c(v: i64) -> Index {
    Index::Const(v)
}

/// The product of two indices.
pub fn mul(a: Index, b: Index) -> Index {
    Index::Mul(Box::new(a), Box::new(b))
}

/// A tile operand.
pub fn tile(t: TileId) -> Operand {
    Operand::Tile(t)
}

/// A scalar operand.
pub fn scalar(v: f64) -> Operand {
    Operand::Scalar(v)
}

/// `dst = load(src at offsets)`, out-of-range elements `pad`.
pub fn load(dst: TileId, src: GlobalId, offsets: Vec<Index>, pad: f64) -> Inst {
    Inst::Load {
        dst,
        src,
        offsets,
        pad,
    }
}

/// `store(dst at offsets, src)`.
pub fn store(dst: GlobalId, offsets: Vec<Index>, src: TileId) -> Inst {
    Inst::Store { dst, offsets, src }
}

/// `dst = lhs op rhs`.
pub fn binary(dst: TileId, op: BinaryOp, lhs: Operand, rhs: Operand) -> Inst {
    Inst::Binary { dst, op, lhs, rhs }
}
