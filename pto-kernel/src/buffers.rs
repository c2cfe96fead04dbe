//! The buffer check: the working set of every on-core buffer of a program against a device
//! profile, what the simulator refuses to run and the estimator refuses to price as the
//! kernel (both call [`check`] or [`BufferUse::check`]).
//!
//! Live ranges are the program's [`Liveness`] over its positions: a tile is live from the
//! position that defines it to its last use, loop-carried tiles across their whole loop,
//! and so is every tile that a loop body reads but that is defined before the loop. A
//! loop's `results` are live from the position after the loop: at its end the params still
//! hold the last iteration's values. Each tile occupies its bytes rounded up to the level's
//! alignment. A row reduction's tmp tile ([`RowReduce`]: the folds' one repeat per row, or
//! the group reduces' 4 KiB, on each vector core) is live at the reduction's position only.
//!
//! UB is checked a second time as the Ascend C lowering reserves it on one vector core
//! ([`crate::ub_plan::reserved_ub`]: rows padded to 32 bytes, bit masks, the instructions'
//! temporaries, the load and store queues, the reductions' work buffer for the whole
//! kernel), so a program whose kernel would not fit is refused here too
//! ([`BufferError::KernelUb`]).
//!
//! A matmul that accumulates (`acc`) writes its result into the accumulator's buffer, as
//! the cube accumulates in L0C in place, when nothing reads the accumulator afterwards and
//! it belongs to the same loop body (or is that loop's carried tile); likewise a loop's
//! carried tile takes its `init`'s buffer when nothing reads the init after the loop
//! starts. Such tiles share one buffer, live over the union of their ranges, counted once:
//! a K-loop's running sum occupies L0C once, not twice.
//!
//! Double buffering keeps two copies of each tile that a loop body copies in (loads and
//! moves), so the copy for iteration i+1 can run while iteration i computes: the working
//! sets are given for any set of double-buffered loops ([`BufferUse::working_sets`]); which
//! loops double-buffer is the simulator's decision.

use std::collections::{BTreeMap, BTreeSet};

use crate::device::{CubeVector, DeviceProfile};
use crate::ir::{IdVec, Inst, MemLevel, Program, TileId};
use crate::liveness::{Definition, Liveness, LoopSpan};
use crate::row_reduce::RowReduce;
use crate::ub_plan::reserved_ub;
use crate::validate::ValidProgram;
use crate::vector_split::{block_capacity, vector_cores_sharing};

/// Why a program does not fit a device's on-core buffers. (Exhaustive: the simulator
/// reports each as an error of its own.)
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BufferError {
    /// An on-core buffer's working set exceeds its capacity.
    #[error("{0}")]
    Overflow(Box<BufferOverflow>),
    /// The UB the program's Ascend C kernel reserves on one vector core (its queues, its
    /// `VECCALC` pool with the instructions' temporaries, the reductions' work buffer: what
    /// the lowering checks) exceeds the profile's UB, though the live tiles fit.
    #[error(
        "op `{op}`: its kernel reserves {needed} bytes of UB on each vector core ({detail}), \
         over the {device} limit of {limit} bytes"
    )]
    KernelUb {
        /// The op.
        op: String,
        /// The bytes reserved.
        needed: u64,
        /// The device profile's name.
        device: String,
        /// UB's capacity.
        limit: u64,
        /// The buffers reserved.
        detail: String,
    },
}

/// A working set over a buffer's capacity: where, which buffer, by how much, and the live
/// tiles.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "op `{op}`: inst {inst} ({mnemonic}): {buffer} working set {needed} bytes exceeds \
     the {device} limit of {limit} bytes (live: {live})"
)]
pub struct BufferOverflow {
    /// The op.
    pub op: String,
    /// The instruction where the working set peaks, numbered in program order with loop
    /// bodies after their loop.
    pub inst: usize,
    /// Its mnemonic.
    pub mnemonic: String,
    /// The buffer: UB, L1, L0A, L0B or L0C.
    pub buffer: String,
    /// The bytes the live tiles need there.
    pub needed: u64,
    /// The device profile's name.
    pub device: String,
    /// The buffer's capacity.
    pub limit: u64,
    /// The live tiles with their types and footprints, largest first.
    pub live: String,
}

/// Checks every on-core buffer of `program` against `profile`, single-buffered: the live
/// tiles of each level, then the UB the program's Ascend C kernel reserves.
///
/// # Errors
///
/// [`BufferError::Overflow`] naming the instruction where the first overflowing level
/// peaks, the level, the bytes needed, the limit and the live tiles;
/// [`BufferError::KernelUb`] when the live tiles fit but the kernel's UB does not.
pub fn check(program: &ValidProgram, profile: &DeviceProfile) -> Result<(), BufferError> {
    BufferUse::of(program, profile).check()
}

/// The live range of one buffer: a tile's, joined with those of the tiles that share it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveRange {
    /// The tile whose buffer it is.
    pub tile: TileId,
    /// Every tile held in the buffer: `tile`, then those that share it, by `TileId`.
    pub tiles: Vec<TileId>,
    /// The first position where it is live.
    pub start: usize,
    /// The last.
    pub end: usize,
    /// The loops (ordinals in [`Liveness::loops`]) whose body copies the tile in: doubling
    /// any of them doubles it.
    pub copied_in_by: Vec<usize>,
}

impl LiveRange {
    /// Whether one of `doubled` (loop ordinals) keeps two copies of the buffer.
    pub fn doubled_by(&self, doubled: &BTreeSet<usize>) -> bool {
        self.copied_in_by.iter().any(|l| doubled.contains(l))
    }
}

/// The on-core buffers of one program on one device: the live range of every buffer, from
/// which the working sets of each level follow.
#[derive(Debug, Clone)]
pub struct BufferUse<'p> {
    program: &'p Program,
    profile: &'p DeviceProfile,
    liveness: Liveness<'p>,
    ranges: Vec<LiveRange>,
    /// The positions of the reductions: their tmp tile lives there only.
    reductions: Vec<usize>,
}

/// The working set of each level at each position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkingSets(BTreeMap<MemLevel, Vec<u64>>);

impl WorkingSets {
    /// The peak of `level` and the first position where it is reached (0 and 0 for a level
    /// the program does not use).
    pub fn peak(&self, level: MemLevel) -> (u64, usize) {
        self.0
            .get(&level)
            .and_then(|sets| {
                sets.iter()
                    .enumerate()
                    .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(&a.0)))
                    .map(|(at, bytes)| (*bytes, at))
            })
            .unwrap_or((0, 0))
    }
}

impl<'p> BufferUse<'p> {
    /// The buffers of `program` on `profile` (a valid program defines each tile once,
    /// before its uses).
    pub fn of(program: &'p ValidProgram, profile: &'p DeviceProfile) -> BufferUse<'p> {
        let program: &'p Program = program;
        let liveness = Liveness::of(program);
        let positions = liveness.positions();
        // (start, end) of each tile, once defined.
        let mut ranges: IdVec<TileId, Option<(usize, usize)>> = liveness
            .tiles()
            .iter()
            .map(|t| {
                let def = t.def?;
                let start = match t.definition {
                    Definition::LoopResult => def + 1,
                    Definition::Inst | Definition::LoopParam => def,
                };
                Some((start, t.end.max(start)))
            })
            .collect();
        // Candidate buffer sharings `(tile, takes the buffer of, at position, in scope)`, in
        // program order.
        let mut shares: Vec<(TileId, TileId, usize, Option<usize>)> = Vec::new();
        let mut reductions = Vec::new();
        for (at, position) in positions.iter().enumerate() {
            if position.loop_end {
                continue;
            }
            match position.inst {
                Inst::Matmul {
                    dst,
                    acc: Some(acc),
                    ..
                } => shares.push((*dst, *acc, at, position.scope)),
                Inst::Loop { params, init, .. } => {
                    for (param, init) in params.iter().zip(init) {
                        shares.push((*param, *init, at, position.scope));
                    }
                }
                Inst::Reduce { .. } => reductions.push(at),
                _ => {}
            }
        }
        let root = share_buffers(&liveness, &mut ranges, shares);
        // The tiles of each buffer, by the tile whose buffer it is.
        let mut members: IdVec<TileId, Vec<TileId>> = IdVec::filled(root.len(), Vec::new());
        for (tile, r) in root.iter_enumerated() {
            if *r != tile {
                members[*r].push(tile);
            }
        }
        let ranges = ranges
            .iter_enumerated()
            .filter_map(|(tile, range)| {
                let (start, end) = (*range)?;
                // Results of a final loop are never live on core: nothing follows.
                (start < positions.len()).then(|| LiveRange {
                    tile,
                    tiles: std::iter::once(tile)
                        .chain(members[tile].iter().copied())
                        .collect(),
                    start,
                    end,
                    copied_in_by: copied_in_by(&liveness, tile),
                })
            })
            .collect();
        BufferUse {
            program,
            profile,
            liveness,
            ranges,
            reductions,
        }
    }

    /// The program's liveness, which the ranges are drawn from.
    pub fn liveness(&self) -> &Liveness<'p> {
        &self.liveness
    }

    /// Every loop, in program order: the ordinals [`BufferUse::working_sets`] takes.
    pub fn loops(&self) -> &[LoopSpan] {
        self.liveness.loops()
    }

    /// The live range of every buffer, by tile; a tile whose buffer another's is has none.
    pub fn ranges(&self) -> &[LiveRange] {
        &self.ranges
    }

    /// Checks every level's working set, single-buffered, then the UB the kernel reserves.
    ///
    /// # Errors
    ///
    /// As [`check`].
    pub fn check(&self) -> Result<(), BufferError> {
        let (program, profile) = (self.program, self.profile);
        let single = self.working_sets(&BTreeSet::new());
        for level in MemLevel::ON_CORE {
            let (peak, at) = single.peak(level);
            let limit = block_capacity(profile, program, level).unwrap_or(u64::MAX);
            if peak > limit {
                return Err(self.overflow(level, at, peak, limit));
            }
        }
        // The kernel the program lowers to reserves UB by the lowering's plan (row-padded
        // tiles, instruction temporaries, queues, a work buffer for the whole kernel), which
        // can exceed the live tiles' peak: nothing runs or is priced that the lowering
        // refuses.
        if let Some(limit) = profile.capacity(MemLevel::Ub) {
            let split = profile.cube_vector == CubeVector::Split;
            let reserved = reserved_ub(program, profile, split);
            if reserved.total() > limit {
                return Err(BufferError::KernelUb {
                    op: program.op.clone(),
                    needed: reserved.total(),
                    device: profile.name.clone(),
                    limit,
                    detail: reserved.detail(),
                });
            }
        }
        Ok(())
    }

    /// Whether every level fits with the loops `doubled` (ordinals) double-buffered.
    pub fn fits(&self, doubled: &BTreeSet<usize>) -> bool {
        let sets = self.working_sets(doubled);
        MemLevel::ON_CORE.iter().all(|level| {
            sets.peak(*level).0
                <= block_capacity(self.profile, self.program, *level).unwrap_or(u64::MAX)
        })
    }

    /// The tiles kept twice with the loops `doubled` double-buffered: those their bodies
    /// copy in.
    pub fn doubled_tiles(&self, doubled: &BTreeSet<usize>) -> BTreeSet<TileId> {
        self.ranges
            .iter()
            .filter(|r| r.doubled_by(doubled))
            .map(|r| r.tile)
            .collect()
    }

    /// The working set of each on-core level at each position, with the loops `doubled`
    /// (ordinals) double-buffered.
    pub fn working_sets(&self, doubled: &BTreeSet<usize>) -> WorkingSets {
        let n = self.liveness.positions().len();
        let mut delta: BTreeMap<MemLevel, Vec<i64>> = MemLevel::ON_CORE
            .iter()
            .map(|l| (*l, vec![0i64; n + 1]))
            .collect();
        for range in &self.ranges {
            let Some((level, bytes)) = self.footprint(range, doubled) else {
                continue;
            };
            if let Some(d) = delta.get_mut(&level) {
                d[range.start] += bytes as i64;
                d[(range.end + 1).min(n)] -= bytes as i64;
            }
        }
        for at in &self.reductions {
            let bytes = self.reduce_tmp(*at) as i64;
            if let Some(d) = delta.get_mut(&MemLevel::Ub) {
                d[*at] += bytes;
                d[(*at + 1).min(n)] -= bytes;
            }
        }
        WorkingSets(
            delta
                .into_iter()
                .map(|(level, d)| {
                    let mut running = 0i64;
                    let sets = d[..n]
                        .iter()
                        .map(|step| {
                            running += step;
                            running.max(0) as u64
                        })
                        .collect();
                    (level, sets)
                })
                .collect(),
        )
    }

    /// The UB bytes of the tmp tile of the row reduction at position `at`
    /// ([`RowReduce::tmp_bytes`], on each vector core sharing the block program
    /// ([`vector_cores_sharing`]), rounded up to UB's alignment), live at that position
    /// only; 0 for any other instruction.
    fn reduce_tmp(&self, at: usize) -> u64 {
        let (program, profile) = (self.program, self.profile);
        let Some(plan) = RowReduce::of(program, self.liveness.positions()[at].inst, profile) else {
            return 0;
        };
        if plan.tmp_bytes == 0 {
            return 0;
        }
        let align = profile.alignment.get(MemLevel::Ub).unwrap_or(1).max(1);
        let cores = vector_cores_sharing(profile, program) as u64;
        (plan.tmp_bytes as u64).div_ceil(align) * align * cores
    }

    /// Bytes the buffer of `range` occupies in its level (rounded up to the alignment),
    /// doubled when one of `doubled` double-buffers it; `None` for tiles in global memory.
    fn footprint(&self, range: &LiveRange, doubled: &BTreeSet<usize>) -> Option<(MemLevel, u64)> {
        let ty = self.program.tile(range.tile)?;
        let align = self.profile.alignment.get(ty.level)?.max(1);
        let bytes = (ty.bytes() as u64).div_ceil(align) * align;
        let copies = if range.doubled_by(doubled) { 2 } else { 1 };
        Some((ty.level, bytes * copies))
    }

    /// The overflow of `level` at position `at`: `needed` bytes over `limit`.
    fn overflow(&self, level: MemLevel, at: usize, needed: u64, limit: u64) -> BufferError {
        let (program, profile) = (self.program, self.profile);
        let mut live: Vec<(u64, String)> = self
            .ranges
            .iter()
            .filter(|r| r.start <= at && at <= r.end)
            .filter_map(|r| {
                let (l, bytes) = self.footprint(r, &BTreeSet::new())?;
                let ty = program.tile(r.tile)?;
                (l == level).then(|| (bytes, format!("{} {ty} {bytes} B", r.tile)))
            })
            .collect();
        if level == MemLevel::Ub {
            for point in &self.reductions {
                let bytes = self.reduce_tmp(*point);
                if *point == at && bytes > 0 {
                    let inst = self.liveness.positions()[*point].inst;
                    let src = inst.uses().next().unwrap_or(TileId::new(0));
                    live.push((
                        bytes,
                        format!("the row reduction's tmp tile (reduce of {src}) {bytes} B"),
                    ));
                }
            }
        }
        // Largest first: those are the ones to shrink.
        live.sort_by_key(|(bytes, _)| core::cmp::Reverse(*bytes));
        const SHOWN: usize = 6;
        let mut listed: Vec<String> = live.iter().take(SHOWN).map(|(_, s)| s.clone()).collect();
        if live.len() > SHOWN {
            listed.push(format!("and {} more", live.len() - SHOWN));
        }
        let positions = self.liveness.positions();
        let point = &positions[at.min(positions.len().saturating_sub(1))];
        BufferError::Overflow(Box::new(BufferOverflow {
            op: program.op.clone(),
            inst: point.number,
            mnemonic: point.inst.mnemonic().to_owned(),
            buffer: level.name().to_uppercase(),
            needed,
            device: profile.name.clone(),
            limit,
            live: listed.join(", "),
        }))
    }
}

/// The loops whose body copies `tile` in (all those around the copy, outermost last).
fn copied_in_by(liveness: &Liveness<'_>, tile: TileId) -> Vec<usize> {
    let Some(def) = liveness
        .tile(tile)
        .filter(|t| t.definition == Definition::Inst)
    else {
        return Vec::new();
    };
    match def.def {
        Some(at) if liveness.positions()[at].inst.is_copy_in() => {
            liveness.loops_around(at).collect()
        }
        _ => Vec::new(),
    }
}

/// Applies the valid sharings to `ranges`: the sharing tile's range joins the shared
/// tile's (its root's, along chains) and the sharing tile is no longer counted on its own.
/// A sharing is valid when the shared tile's last read is where the sharing tile is defined
/// and both belong to the same loop body. Returns the tile whose buffer each tile is in.
fn share_buffers(
    liveness: &Liveness<'_>,
    ranges: &mut IdVec<TileId, Option<(usize, usize)>>,
    shares: Vec<(TileId, TileId, usize, Option<usize>)>,
) -> IdVec<TileId, TileId> {
    let mut root: IdVec<TileId, TileId> = ranges.keys().collect();
    fn find(root: &mut IdVec<TileId, TileId>, mut t: TileId) -> TileId {
        while root[t] != t {
            root[t] = root[root[t]];
            t = root[t];
        }
        t
    }
    for (tile, target, at, scope) in shares {
        let valid = root.get(tile).is_some()
            && liveness
                .tile(target)
                .is_some_and(|g| g.last_read == Some(at) && g.scope == scope);
        if !valid {
            continue;
        }
        let (rt, rg) = (find(&mut root, tile), find(&mut root, target));
        if rt == rg {
            continue;
        }
        let (Some((ts, te)), Some((gs, ge))) = (ranges[rt], ranges[rg]) else {
            continue;
        };
        ranges[rg] = Some((ts.min(gs), te.max(ge)));
        ranges[rt] = None;
        root[rt] = rg;
    }
    root.keys().map(|t| find(&mut root, t)).collect()
}
