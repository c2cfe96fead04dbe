//! What each instruction reads and writes, and how instructions are numbered in messages.
//!
//! Instructions are numbered in program order, depth first: a loop gets a number, then the
//! instructions of its body, then what follows the loop. `inst 3 (load)` in a message is
//! the fourth instruction in that order.

use pto_op::kernel::ir::{Inst, Operand, Program, TileId, TileType};

use super::SimError;

/// The number of instructions in `body`, counting loop bodies (a loop counts itself too).
pub(crate) fn inst_count(body: &[Inst]) -> usize {
    body.iter()
        .map(|inst| match inst {
            Inst::Loop { body, .. } => 1 + inst_count(body),
            _ => 1,
        })
        .sum()
}

/// The tile an instruction defines; `None` for stores and loops (a loop defines its
/// `params` and `results`, which the callers handle).
pub(crate) fn def(inst: &Inst) -> Option<TileId> {
    match inst {
        Inst::Load { dst, .. }
        | Inst::Full { dst, .. }
        | Inst::Iota { dst, .. }
        | Inst::Unary { dst, .. }
        | Inst::Binary { dst, .. }
        | Inst::Compare { dst, .. }
        | Inst::Select { dst, .. }
        | Inst::Cast { dst, .. }
        | Inst::Reduce { dst, .. }
        | Inst::Move { dst, .. }
        | Inst::Matmul { dst, .. } => Some(*dst),
        Inst::Store { .. } | Inst::Loop { .. } => None,
    }
}

/// Whether an instruction is a copy into an on-core buffer (its result is what a
/// double-buffered loop keeps two of).
pub(crate) fn is_copy_in(inst: &Inst) -> bool {
    matches!(inst, Inst::Load { .. } | Inst::Move { .. })
}

/// The tiles an instruction reads. For a loop: its `init` tiles (the body and the yields
/// are handled by the callers, which walk the body).
pub(crate) fn uses(inst: &Inst) -> Vec<TileId> {
    let tile = |o: &Operand| match o {
        Operand::Tile(t) => Some(*t),
        Operand::Scalar(_) => None,
    };
    match inst {
        Inst::Load { .. } | Inst::Full { .. } | Inst::Iota { .. } => Vec::new(),
        Inst::Store { src, .. }
        | Inst::Unary { src, .. }
        | Inst::Cast { src, .. }
        | Inst::Reduce { src, .. }
        | Inst::Move { src, .. } => vec![*src],
        Inst::Binary { lhs, rhs, .. } | Inst::Compare { lhs, rhs, .. } => {
            [tile(lhs), tile(rhs)].into_iter().flatten().collect()
        }
        Inst::Select {
            cond,
            on_true,
            on_false,
            ..
        } => [Some(*cond), tile(on_true), tile(on_false)]
            .into_iter()
            .flatten()
            .collect(),
        Inst::Matmul { a, b, acc, .. } => {
            [Some(*a), Some(*b), *acc].into_iter().flatten().collect()
        }
        Inst::Loop { init, .. } => init.clone(),
    }
}

/// The type of `tile`, or an error naming the instruction that refers to a tile the program
/// does not declare.
pub(crate) fn tile_type<'p>(
    program: &'p Program,
    tile: TileId,
    inst: usize,
    mnemonic: &str,
) -> Result<&'p TileType, SimError> {
    program.tile(tile).ok_or_else(|| SimError::Invalid {
        op: program.op.clone(),
        inst,
        mnemonic: mnemonic.to_owned(),
        message: format!(
            "tile {tile} is not declared (the program declares {} tiles)",
            program.tiles.len()
        ),
    })
}
