//! The simulator's memory plan: the buffer check ([`pto_op::kernel::buffers`]: the working
//! set of every on-core buffer against the device profile, and the UB the program's kernel
//! reserves), then which loops double-buffer.
//!
//! Double buffering keeps two copies of each tile that a loop body copies in (loads and
//! moves), so the copy for iteration i+1 can run while iteration i computes. Loops are
//! considered in program order; a loop double-buffers when, with its copied-in tiles doubled
//! on top of the loops already chosen, every level still fits.

use std::collections::{BTreeMap, BTreeSet};

use pto_op::DeviceProfile;
use pto_op::kernel::ValidProgram;
use pto_op::kernel::buffers::{BufferError, BufferUse};
use pto_op::kernel::ir::{MemLevel, TileId};
use serde::{Deserialize, Serialize};

use super::error::SimError;

/// What the buffer check found: peak working sets and the double-buffering decisions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryPlan {
    /// The largest working set of each on-core level, in bytes, with the chosen loops
    /// double-buffered.
    pub peak_bytes: BTreeMap<MemLevel, u64>,
    /// Every loop, in program order.
    pub loops: Vec<LoopBuffering>,
    /// The tiles kept twice: those copied in by the body of a double-buffered loop.
    pub double_buffered_tiles: BTreeSet<TileId>,
}

/// The buffering decision for one loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopBuffering {
    /// The loop's instruction number.
    pub inst: usize,
    /// Whether its copied-in tiles are double-buffered.
    pub double_buffered: bool,
}

impl MemoryPlan {
    /// The number of double-buffered loops.
    pub fn double_buffered_loops(&self) -> usize {
        self.loops.iter().filter(|l| l.double_buffered).count()
    }

    /// Whether `tile` has two buffers, so that redefining it need only wait for the
    /// instance before the previous one.
    pub fn is_double_buffered(&self, tile: TileId) -> bool {
        self.double_buffered_tiles.contains(&tile)
    }
}

/// Checks every on-core buffer of `program` against `profile` and decides double buffering
/// (only when `allow_double_buffering`).
///
/// # Errors
///
/// [`SimError::BufferOverflow`] naming the instruction where the first overflowing level
/// peaks, the level, the bytes needed, the limit and the live tiles;
/// [`SimError::KernelUb`] when the program's Ascend C kernel would not fit UB.
pub fn plan(
    program: &ValidProgram,
    profile: &DeviceProfile,
    allow_double_buffering: bool,
) -> Result<MemoryPlan, SimError> {
    let buffers = BufferUse::of(program, profile);
    buffers.check()?;
    let mut chosen = BTreeSet::new();
    let mut loops = Vec::with_capacity(buffers.loops().len());
    for (ordinal, l) in buffers.loops().iter().enumerate() {
        let mut candidate = chosen.clone();
        candidate.insert(ordinal);
        let fits = allow_double_buffering && buffers.fits(&candidate);
        if fits {
            chosen = candidate;
        }
        loops.push(LoopBuffering {
            inst: l.inst,
            double_buffered: fits,
        });
    }
    let sets = buffers.working_sets(&chosen);
    Ok(MemoryPlan {
        peak_bytes: MemLevel::ON_CORE
            .iter()
            .map(|level| (*level, sets.peak(*level).0))
            .collect(),
        loops,
        double_buffered_tiles: buffers.doubled_tiles(&chosen),
    })
}

impl From<BufferError> for SimError {
    fn from(error: BufferError) -> SimError {
        match error {
            BufferError::Overflow(overflow) => SimError::BufferOverflow(overflow),
            BufferError::KernelUb {
                op,
                needed,
                device,
                limit,
                detail,
            } => SimError::KernelUb {
                op,
                needed,
                device,
                limit,
                detail,
            },
        }
    }
}
