//! How instructions are numbered in messages, and the lookup of their tiles' types.
//!
//! Instructions are numbered in program order, depth first: a loop gets a number, then the
//! instructions of its body, then what follows the loop. `inst 3 (load)` in a message is
//! the fourth instruction in that order ([`Inst::count`]). What an instruction reads and
//! writes is [`Inst::uses`] and [`Inst::defs`].

#[cfg(doc)]
use pto_op::kernel::ir::Inst;
use pto_op::kernel::ir::{Program, TileId, TileType};

use super::SimError;

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
