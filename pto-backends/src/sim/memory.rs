//! Buffer checks: the working set of every on-core buffer against a device profile, and
//! which loops can double-buffer.
//!
//! Live ranges are computed over *points*: one per instruction in program order (see
//! [`Inst::count`]), plus one at the end of each loop, where the yields are
//! read. A tile is live from the point that defines it to its last use. Loop-carried tiles
//! (`params`) live across their whole loop, and so does every tile that a loop body reads
//! but that is defined before the loop (it is needed in every iteration). A loop's `results`
//! are live from the point after the loop. Each tile occupies its bytes rounded up to the
//! level's alignment. A row reduction's tmp tile ([`RowReduce`]: the folds' one repeat
//! per row, or the group reduces' 4 KiB, on each vector core) is live at the reduction's
//! point only.
//!
//! UB is checked a second time as the Ascend C lowering reserves it on one vector core (the
//! crate's `ub_plan`: rows padded to 32 bytes, bit masks, the instructions' temporaries,
//! the load and store queues, the reductions' work buffer for the whole kernel), so a
//! program whose kernel would not fit is refused here too ([`SimError::KernelUb`]).
//!
//! A matmul that accumulates (`acc`) writes its result into the accumulator's buffer, as
//! the cube accumulates in L0C in place, when nothing reads the accumulator afterwards and
//! it belongs to the same loop body (or is that loop's carried tile); likewise a loop's
//! carried tile takes its `init`'s buffer when nothing reads the init after the loop
//! starts. Such tiles share one buffer, live over the union of their ranges, counted once:
//! a K-loop's running sum occupies L0C once, not twice.
//!
//! Double buffering keeps two copies of each tile that a loop body copies in (loads and
//! moves), so the copy for iteration i+1 can run while iteration i computes. Loops are
//! considered in program order; a loop double-buffers when, with its copied-in tiles doubled
//! on top of the loops already chosen, every level still fits.

use std::collections::{BTreeMap, BTreeSet};

use pto_op::kernel::ValidProgram;
use pto_op::kernel::ir::{Inst, MemLevel, Program, TileId};
use pto_op::kernel::row_reduce::RowReduce;
use pto_op::kernel::vector_split::{block_capacity, vector_cores_sharing};
use pto_op::{CubeVector, DeviceProfile};
use serde::{Deserialize, Serialize};

use super::{BufferOverflow, SimError};

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
/// peaks, the level, the bytes needed, the limit and the live tiles.
pub fn plan(
    program: &ValidProgram,
    profile: &DeviceProfile,
    allow_double_buffering: bool,
) -> Result<MemoryPlan, SimError> {
    let ranges = LiveRanges::of(program);
    let single = ranges.working_sets(program, profile, &BTreeSet::new());
    for level in MemLevel::ON_CORE {
        let (peak, at) = single.peak(level);
        let limit = block_capacity(profile, program, level).unwrap_or(u64::MAX);
        if peak > limit {
            return Err(ranges.overflow(program, profile, level, at, peak, limit));
        }
    }
    // The kernel the program lowers to reserves UB by the lowering's plan (row-padded
    // tiles, instruction temporaries, queues, a work buffer for the whole kernel), which
    // can exceed the live tiles' peak: the simulator runs no program the lowering refuses.
    if let Some(limit) = profile.capacity(MemLevel::Ub) {
        let split = profile.cube_vector == CubeVector::Split;
        let reserved = pto_op::kernel::ub_plan::reserved_ub(program, profile, split);
        if reserved.total() > limit {
            return Err(SimError::KernelUb {
                op: program.op.clone(),
                needed: reserved.total(),
                device: profile.name.clone(),
                limit,
                detail: reserved.detail(),
            });
        }
    }
    let mut chosen = BTreeSet::new();
    let mut loops = Vec::with_capacity(ranges.loops.len());
    for (ordinal, l) in ranges.loops.iter().enumerate() {
        let mut candidate = chosen.clone();
        candidate.insert(ordinal);
        let fits = allow_double_buffering && {
            let sets = ranges.working_sets(program, profile, &candidate);
            MemLevel::ON_CORE.iter().all(|level| {
                sets.peak(*level).0 <= block_capacity(profile, program, *level).unwrap_or(u64::MAX)
            })
        };
        if fits {
            chosen = candidate;
        }
        loops.push(LoopBuffering {
            inst: l.inst,
            double_buffered: fits,
        });
    }
    let sets = ranges.working_sets(program, profile, &chosen);
    Ok(MemoryPlan {
        peak_bytes: MemLevel::ON_CORE
            .iter()
            .map(|level| (*level, sets.peak(*level).0))
            .collect(),
        loops,
        double_buffered_tiles: ranges
            .intervals
            .iter()
            .filter(|i| i.doubled_by(&chosen))
            .map(|i| i.tile)
            .collect(),
    })
}

/// A point of the live-range analysis.
struct Point {
    inst: usize,
    mnemonic: &'static str,
}

/// A loop as the analysis sees it.
struct LoopSpan {
    inst: usize,
}

/// The live range of one tile.
struct Interval {
    tile: TileId,
    start: usize,
    end: usize,
    /// Loops (by ordinal) whose body copies this tile in: doubling any of them doubles it.
    copied_in_by: Vec<usize>,
}

impl Interval {
    fn doubled_by(&self, chosen: &BTreeSet<usize>) -> bool {
        self.copied_in_by.iter().any(|l| chosen.contains(l))
    }
}

struct LiveRanges {
    points: Vec<Point>,
    loops: Vec<LoopSpan>,
    intervals: Vec<Interval>,
    /// The reductions, by point (see [`LiveRanges::reduce_tmp`]).
    reductions: Vec<(usize, Inst)>,
}

/// The working set of each level at each point.
struct WorkingSets(BTreeMap<MemLevel, Vec<u64>>);

impl WorkingSets {
    /// The peak of `level` and the first point where it is reached.
    fn peak(&self, level: MemLevel) -> (u64, usize) {
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

/// The builder of [`LiveRanges`]: the defining and last-use points of every tile.
struct Walk {
    points: Vec<Point>,
    loops: Vec<LoopSpan>,
    /// (start, end) by tile, once defined.
    ranges: Vec<Option<(usize, usize)>>,
    copied_in_by: Vec<Vec<usize>>,
    next_inst: usize,
    /// The ordinals of the loops around the current instruction.
    loop_stack: Vec<usize>,
    /// The last point where an instruction (or a loop's init) reads each tile.
    read_last: Vec<Option<usize>>,
    /// The innermost loop (ordinal) whose body defines each tile; a loop's params belong
    /// to its body.
    scope: Vec<Option<usize>>,
    /// Candidate buffer sharings `(tile, takes the buffer of, at point, in scope)`.
    shares: Vec<(TileId, TileId, usize, Option<usize>)>,
    /// The reductions, by point: their tmp tile lives at that point only.
    reductions: Vec<(usize, Inst)>,
}

impl Walk {
    // A valid program declares every tile it names and defines each once, before its uses.
    fn define(&mut self, tile: TileId, at: usize) {
        let range = self.ranges[tile.0 as usize].get_or_insert((at, at));
        range.0 = range.0.min(at);
        self.scope[tile.0 as usize] = self.loop_stack.last().copied();
    }

    fn read_at(&mut self, tile: TileId, at: usize) {
        self.use_at(tile, at);
        let last = &mut self.read_last[tile.0 as usize];
        *last = Some(last.map_or(at, |l| l.max(at)));
    }

    fn use_at(&mut self, tile: TileId, at: usize) {
        let range = self.ranges[tile.0 as usize].get_or_insert((at, at));
        range.1 = range.1.max(at);
    }

    fn body(&mut self, body: &[Inst]) {
        for inst in body {
            let number = self.next_inst;
            self.next_inst += 1;
            let mnemonic = inst.mnemonic();
            let at = self.points.len();
            self.points.push(Point {
                inst: number,
                mnemonic,
            });
            // A loop reads its init here, and defines its params and reads its yields
            // around its body, below.
            let (reads, writes) = match inst {
                Inst::Loop { init, .. } => (init.clone(), Vec::new()),
                _ => (inst.uses(), inst.defs()),
            };
            for tile in reads {
                self.read_at(tile, at);
            }
            if matches!(inst, Inst::Reduce { .. }) {
                self.reductions.push((at, inst.clone()));
            }
            if let Inst::Matmul {
                dst,
                acc: Some(acc),
                ..
            } = inst
            {
                let scope = self.loop_stack.last().copied();
                self.shares.push((*dst, *acc, at, scope));
            }
            for tile in writes {
                self.define(tile, at);
                if inst.is_copy_in() {
                    self.copied_in_by[tile.0 as usize].extend(self.loop_stack.iter().copied());
                }
            }
            if let Inst::Loop {
                params,
                body,
                yields,
                results,
                ..
            } = inst
            {
                let ordinal = self.loops.len();
                self.loops.push(LoopSpan { inst: number });
                let outer = self.loop_stack.last().copied();
                for (param, init) in params.iter().zip(inst.uses()) {
                    self.shares.push((*param, init, at, outer));
                }
                self.loop_stack.push(ordinal);
                for tile in params {
                    self.define(*tile, at);
                }
                self.body(body);
                self.loop_stack.pop();
                let end = self.points.len();
                self.points.push(Point {
                    inst: number,
                    mnemonic,
                });
                for tile in yields.iter().chain(params) {
                    self.use_at(*tile, end);
                }
                // Tiles defined before the loop and read in its body are needed by every
                // iteration.
                for (start, last) in self.ranges.iter_mut().flatten() {
                    if *start < at && *last > at && *last < end {
                        *last = end;
                    }
                }
                for tile in results {
                    self.define(*tile, end + 1);
                }
            }
        }
    }
}

impl Walk {
    /// Applies the valid sharings: the sharing tile's range joins the shared tile's (its
    /// root's, along chains) and the sharing tile is no longer counted on its own.
    fn share_buffers(&mut self) {
        let mut root: Vec<usize> = (0..self.ranges.len()).collect();
        fn find(root: &mut [usize], mut t: usize) -> usize {
            while root[t] != t {
                root[t] = root[root[t]];
                t = root[t];
            }
            t
        }
        for (tile, target, at, scope) in std::mem::take(&mut self.shares) {
            let (t, g) = (tile.0 as usize, target.0 as usize);
            let valid = t < root.len()
                && g < root.len()
                && self.read_last[g] == Some(at)
                && self.scope[g] == scope;
            if !valid {
                continue;
            }
            let (rt, rg) = (find(&mut root, t), find(&mut root, g));
            if rt == rg {
                continue;
            }
            let (Some((ts, te)), Some((gs, ge))) = (self.ranges[rt], self.ranges[rg]) else {
                continue;
            };
            self.ranges[rg] = Some((ts.min(gs), te.max(ge)));
            self.ranges[rt] = None;
            root[rt] = rg;
        }
    }
}

impl LiveRanges {
    fn of(program: &Program) -> LiveRanges {
        let mut walk = Walk {
            points: Vec::new(),
            loops: Vec::new(),
            ranges: vec![None; program.tiles.len()],
            copied_in_by: vec![Vec::new(); program.tiles.len()],
            next_inst: 0,
            loop_stack: Vec::new(),
            read_last: vec![None; program.tiles.len()],
            scope: vec![None; program.tiles.len()],
            shares: Vec::new(),
            reductions: Vec::new(),
        };
        walk.body(&program.body);
        walk.share_buffers();
        let point_count = walk.points.len();
        let intervals = walk
            .ranges
            .iter()
            .zip(walk.copied_in_by)
            .enumerate()
            .filter_map(|(slot, (range, copied_in_by))| {
                let (start, end) = (*range)?;
                // Results of a final loop are never live on core: nothing follows.
                (start < point_count).then(|| Interval {
                    tile: TileId(slot as u32),
                    start,
                    end: end.max(start),
                    copied_in_by,
                })
            })
            .collect();
        LiveRanges {
            points: walk.points,
            loops: walk.loops,
            intervals,
            reductions: walk.reductions,
        }
    }

    /// The UB bytes of a row reduction's tmp tile ([`RowReduce::tmp_bytes`], on each vector
    /// core sharing the block program (`vector_split::vector_cores_sharing`), rounded up to
    /// UB's alignment), live at the reduction's point
    /// only; 0 for any other instruction.
    fn reduce_tmp(program: &Program, profile: &DeviceProfile, inst: &Inst) -> u64 {
        let Some(plan) = RowReduce::of(program, inst, profile) else {
            return 0;
        };
        if plan.tmp_bytes == 0 {
            return 0;
        }
        let align = profile.alignment.get(MemLevel::Ub).unwrap_or(1).max(1);
        let cores = vector_cores_sharing(profile, program) as u64;
        (plan.tmp_bytes as u64).div_ceil(align) * align * cores
    }

    /// Bytes `tile` occupies in its level (rounded up to the alignment), doubled when a
    /// chosen loop double-buffers it; `None` for tiles in global memory.
    fn footprint(
        program: &Program,
        profile: &DeviceProfile,
        interval: &Interval,
        chosen: &BTreeSet<usize>,
    ) -> Option<(MemLevel, u64)> {
        let ty = program.tile(interval.tile)?;
        let align = profile.alignment.get(ty.level)?.max(1);
        let bytes = (ty.bytes() as u64).div_ceil(align) * align;
        let copies = if interval.doubled_by(chosen) { 2 } else { 1 };
        Some((ty.level, bytes * copies))
    }

    fn working_sets(
        &self,
        program: &Program,
        profile: &DeviceProfile,
        chosen: &BTreeSet<usize>,
    ) -> WorkingSets {
        let n = self.points.len();
        let mut delta: BTreeMap<MemLevel, Vec<i64>> = MemLevel::ON_CORE
            .iter()
            .map(|l| (*l, vec![0i64; n + 1]))
            .collect();
        for interval in &self.intervals {
            let Some((level, bytes)) = Self::footprint(program, profile, interval, chosen) else {
                continue;
            };
            if let Some(d) = delta.get_mut(&level) {
                d[interval.start] += bytes as i64;
                d[(interval.end + 1).min(n)] -= bytes as i64;
            }
        }
        for (at, inst) in &self.reductions {
            let bytes = Self::reduce_tmp(program, profile, inst) as i64;
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

    fn overflow(
        &self,
        program: &Program,
        profile: &DeviceProfile,
        level: MemLevel,
        at: usize,
        needed: u64,
        limit: u64,
    ) -> SimError {
        let mut live: Vec<(u64, String)> = self
            .intervals
            .iter()
            .filter(|i| i.start <= at && at <= i.end)
            .filter_map(|i| {
                let (l, bytes) = Self::footprint(program, profile, i, &BTreeSet::new())?;
                let ty = program.tile(i.tile)?;
                (l == level).then(|| (bytes, format!("{} {ty} {bytes} B", i.tile)))
            })
            .collect();
        if level == MemLevel::Ub {
            for (point, inst) in &self.reductions {
                let bytes = Self::reduce_tmp(program, profile, inst);
                if *point == at && bytes > 0 {
                    let src = inst.uses().first().copied().unwrap_or(TileId(0));
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
        let point = &self.points[at.min(self.points.len().saturating_sub(1))];
        SimError::BufferOverflow(Box::new(BufferOverflow {
            op: program.op.clone(),
            inst: point.inst,
            mnemonic: point.mnemonic.to_owned(),
            buffer: level.name().to_uppercase(),
            needed,
            device: profile.name.clone(),
            limit,
            live: listed.join(", "),
        }))
    }
}
