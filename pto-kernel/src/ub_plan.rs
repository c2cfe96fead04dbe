//! The memory plan of a lowered kernel: where every tile lives in the unified buffer.
//!
//! Positions and live ranges are the kernel's [`Liveness`]: a loop takes one position where it
//! starts and one where its iteration ends (after its body), so that a tile's live range is
//! an interval; a tile used inside a loop it was defined outside of stays live to that
//! loop's end.
//!
//! - Tiles loaded from GM live in a `VECIN` queue of their own load, allocated at the load
//!   and freed after their last use.
//! - Tiles whose only use is a store in the same scope are computed straight into a
//!   `VECOUT` queue buffer.
//! - Every other UB tile, and the temporaries an instruction needs, gets a fixed offset in
//!   one `VECCALC` buffer, shared first-fit by tiles whose live ranges do not overlap.
//! - Loop results are the storage of their loop's carried tiles.
//!
//! [`reserved_ub`] is the UB one vector core reserves for a program (queues, the `VECCALC`
//! pool, the reductions' work buffer): the lowering's capacity check, and the buffer check's
//! ([`crate::buffers`]), so the simulator and the estimator refuse every program whose
//! kernel would not fit.

use std::collections::HashMap;

use crate::device::DeviceProfile;
use crate::dtype::DType;
use crate::ir::{IdVec, Inst, MemLevel, Operand, Program, ReduceOp, TileId, TileType};
use crate::liveness::Liveness;
// The one position numbering, which the lowering walks too.
pub use crate::liveness::span;
use crate::row_reduce::{REPEAT_MAX, RowReduce};
use crate::vector_split::{mixes_cube_and_vector, row_split};

/// Bytes of UB alignment: every buffer starts at a multiple of it.
pub const UB_ALIGN: u64 = MemLevel::Ub.pool_alignment();

/// Elements of one UB row are padded to a multiple of this (32 bytes of f16, 64 of f32), so
/// every row of every dtype starts 32-byte aligned: the rule the simulator prices a row
/// reduction's result by ([`crate::row_reduce::UB_ROW_ALIGN_ELEMS`]).
pub const ROW_ALIGN_ELEMS: usize = crate::row_reduce::UB_ROW_ALIGN_ELEMS;

/// How a tile is laid out in UB: `rows` rows of `cols` elements, `pitch` apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geom {
    /// Product of every dimension but the last (1 for rank 0 and 1).
    pub rows: usize,
    /// The last dimension (1 for rank 0).
    pub cols: usize,
    /// Elements from one row to the next.
    pub pitch: usize,
    /// Bytes of the tile's buffer, a multiple of 32.
    pub bytes: u64,
}

impl Geom {
    /// The layout of tiles of type `ty`. Bool tiles are bit masks (`Compare`'s output), one
    /// bit per element of the same padded layout.
    pub fn of(ty: &TileType) -> Geom {
        let (rows, cols) = match ty.shape.split_last() {
            None => (1, 1),
            Some((&cols, lead)) => (lead.iter().product(), cols),
        };
        if ty.level != MemLevel::Ub {
            // Cube buffers hold whole 16 x 16 fractals (512 bytes of f16).
            let rows = rows.next_multiple_of(16);
            let pitch = cols.next_multiple_of(16);
            return Geom {
                rows,
                cols,
                pitch,
                bytes: ((rows * pitch * ty.dtype.size_bytes()) as u64).next_multiple_of(512),
            };
        }
        let pitch = cols.next_multiple_of(ROW_ALIGN_ELEMS);
        let elems = (rows * pitch) as u64;
        let raw = match ty.dtype {
            DType::Bool => elems / 8,
            dtype => elems * dtype.size_bytes() as u64,
        };
        Geom {
            rows,
            cols,
            pitch,
            bytes: raw.next_multiple_of(UB_ALIGN),
        }
    }

    /// Elements of the padded tile, the count of whole-tile vector instructions.
    pub fn elems(&self) -> usize {
        self.rows * self.pitch
    }
}

/// Where a tile lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Storage {
    /// Not in UB (L1, L0A/B/C), or never defined.
    None,
    /// At this byte offset of the shared `VECCALC` buffer.
    Pool(u64),
    /// In the `VECIN` queue of its load.
    InQueue,
    /// In the `VECOUT` queue of the store that is its only use.
    OutQueue,
    /// The storage of another tile (a loop result: its carried tile).
    Alias(TileId),
}

/// The plan of a program.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Where each tile lives, by `TileId`.
    pub storage: IdVec<TileId, Storage>,
    /// The position of each tile's last use (its definition if unused).
    pub end: IdVec<TileId, usize>,
    /// Byte offsets in the pool of the temporaries of the instruction at a position, by
    /// name ([`Plan::temp`]).
    pub temps: HashMap<usize, HashMap<Temp, u64>>,
    /// Bytes of the shared buffer of each level, by [`level_index`]: `VECCALC` (UB), then
    /// one `TBuf` of L1, L0A, L0B and L0C.
    pub pool_bytes: [u64; 5],
    /// The position of each tile's definition (a loop result: the loop's end), by
    /// `TileId`.
    pub def: IdVec<TileId, Option<usize>>,
    /// The position of each tile's last use before aliasing.
    pub last_use: IdVec<TileId, usize>,
    /// Bytes of the reductions' shared work buffer.
    pub reduce_work_bytes: u64,
}

impl Plan {
    /// The byte offset in the pool of temporary `temp` of the instruction at position
    /// `at`, if [`temp_bytes`] gives it one.
    pub fn temp(&self, at: usize, temp: Temp) -> Option<u64> {
        self.temps.get(&at)?.get(&temp).copied()
    }
}

/// The index of a level's pool: UB, L1, L0A, L0B, L0C (GM: UB, unused).
pub fn level_index(level: MemLevel) -> usize {
    match level {
        MemLevel::Ub | MemLevel::Gm => 0,
        MemLevel::L1 => 1,
        MemLevel::L0A => 2,
        MemLevel::L0B => 3,
        MemLevel::L0C => 4,
    }
}

/// Byte alignment of tiles in each level's pool, by [`level_index`].
const POOL_ALIGN: [u64; 5] = [
    MemLevel::Ub.pool_alignment(),
    MemLevel::L1.pool_alignment(),
    MemLevel::L0A.pool_alignment(),
    MemLevel::L0B.pool_alignment(),
    MemLevel::L0C.pool_alignment(),
];

/// The tile whose storage `t` uses, following aliases.
pub fn root(storage: &IdVec<TileId, Storage>, mut t: TileId) -> TileId {
    while let Some(Storage::Alias(next)) = storage.get(t) {
        t = *next;
    }
    t
}

/// Whether tiles of shapes `a` and `b` have one UB layout (they differ by leading 1s).
pub fn same_layout(a: &[usize], b: &[usize]) -> bool {
    let split = |s: &[usize]| match s.split_last() {
        None => (1, 1),
        Some((&cols, lead)) => (lead.iter().product::<usize>(), cols),
    };
    split(a) == split(b)
}

/// For `dst = lhs op rhs` where one operand is a statistic per row of the other (`[.., r, 1]`
/// against `[.., r, c]`): whether the statistic is the left operand, the statistic and the
/// full operand. Such ops run row by row with the statistic as a scalar.
pub fn row_statistic(
    program: &Program,
    dst: TileId,
    lhs: &Operand,
    rhs: &Operand,
) -> Option<(bool, TileId, TileId)> {
    let (Operand::Tile(a), Operand::Tile(b)) = (lhs, rhs) else {
        return None;
    };
    let dst_ty = program.tile(dst)?;
    let is_full = |t: TileId| {
        program
            .tile(t)
            .is_some_and(|x| same_layout(&x.shape, &dst_ty.shape))
    };
    let is_stat = |t: TileId| {
        program.tile(t).is_some_and(|x| {
            let g = Geom::of(x);
            let d = Geom::of(dst_ty);
            x.shape.len() <= dst_ty.shape.len() && g.cols == 1 && d.cols > 1 && g.rows == d.rows
        })
    };
    if is_full(*a) && is_stat(*b) {
        Some((false, *b, *a))
    } else if is_stat(*a) && is_full(*b) {
        Some((true, *a, *b))
    } else {
        None
    }
}

/// The tiles a non-loop instruction defines (one, or a top-k's two; a loop's params and
/// results are handled by the loop's own rules).
fn defs(inst: &Inst) -> Vec<TileId> {
    match inst {
        Inst::Loop { .. } => Vec::new(),
        _ => inst.defs().collect(),
    }
}

/// Whether the lowering of unary `op` calls an Ascend C math function that takes a
/// `sharedTmpBuffer` (`Sin`, `Cos`, `Erf`, `Floor`, `Ceil`).
pub fn unary_takes_tmp(op: crate::ir::UnaryOp) -> bool {
    use crate::ir::UnaryOp;
    matches!(
        op,
        UnaryOp::Sin | UnaryOp::Cos | UnaryOp::Erf | UnaryOp::Floor | UnaryOp::Ceil
    )
}

/// Whether binary `op` lowers to an Ascend C math function with a `sharedTmpBuffer`
/// (`Power`, `Fmod`) rather than to a basic vector instruction.
pub fn binary_is_math(op: crate::ir::BinaryOp) -> bool {
    use crate::ir::BinaryOp;
    matches!(op, BinaryOp::Pow | BinaryOp::Rem | BinaryOp::Mod)
}

/// Bytes of the `sharedTmpBuffer` the lowering gives a math function over `elems`
/// elements: one f32 per element, what the host implementation requires
/// (`ascendc_host/vector.h`, `host::CheckTmp`). A device build sizes it the same way; the
/// vendor's `Get<Name>MaxMinTmpSize` is not consulted.
pub fn math_tmp_bytes(elems: usize) -> u64 {
    ((elems * 4) as u64).next_multiple_of(UB_ALIGN)
}

/// A temporary the lowering of an instruction needs in UB, by what it holds. The first
/// operand is a binary op's or compare's `lhs` and a select's `on_true`, the second its
/// `rhs` or `on_false`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Temp {
    /// The first operand broadcast to the result's shape (in the operand's dtype).
    BroadcastLhs,
    /// The second operand broadcast to the result's shape.
    BroadcastRhs,
    /// A scalar first operand duplicated into a tile of the result's layout.
    ScalarLhs,
    /// A scalar second operand duplicated into a tile of the result's layout.
    ScalarRhs,
    /// The `sharedTmpBuffer` of a math function ([`math_tmp_bytes`]).
    MathScratch,
    /// One row of the result, a row statistic duplicated along it (an integer `sub` or a
    /// `div` by a statistic per row).
    StatRow,
    /// `mod`'s sign fix: the remainder with the divisor's sign.
    ModFixed,
    /// `mod`'s sign fix: the bit mask of where the signs differ.
    ModMask,
    /// A top-k's row of scores, padded to whole blocks of 32 with the lowest value.
    SortScores,
    /// A top-k's indices `0..` of a padded row (u32), the sort's second input.
    SortIndex,
    /// A top-k's sorted `(score, index)` pairs of a row, 8 bytes each.
    SortPairs,
    /// The sort's temporary space (as large as the pairs: the docs give no size).
    SortTmp,
    /// The values split from the first pairs (whole blocks of 32).
    SortValues,
    /// The indices split from the first pairs (u32, whole blocks of 32).
    SortIndices,
}

/// The UB temporaries of a sort of the rows of a tile of type `src` keeping `k` pairs (a
/// top-k; an index reduction keeps one).
fn sort_temps(src: Option<&TileType>, k: usize) -> Vec<(Temp, u64)> {
    let Some(t) = src else {
        return Vec::new();
    };
    let padded = crate::top_k::padded_row(t.shape.last().copied().unwrap_or(1)) as u64;
    let kept = k.next_multiple_of(crate::top_k::SORT_BLOCK) as u64;
    let pairs = padded * crate::top_k::PAIR_BYTES as u64;
    let size = t.dtype.size_bytes() as u64;
    vec![
        (Temp::SortScores, (padded * size).next_multiple_of(UB_ALIGN)),
        (Temp::SortIndex, padded * 4),
        (Temp::SortPairs, pairs),
        (Temp::SortTmp, pairs),
        (Temp::SortValues, (kept * size).next_multiple_of(UB_ALIGN)),
        (Temp::SortIndices, kept * 4),
    ]
}

/// The temporaries the lowering of `inst` needs in UB and their bytes, in the order the
/// plan allocates them (at most one of each name).
pub fn temp_bytes(program: &Program, inst: &Inst) -> Vec<(Temp, u64)> {
    let ty = |t: TileId| program.tile(t);
    let geom = |t: TileId| ty(t).map(Geom::of);
    let broadcast = |o: &Operand, dst: TileId, temp: Temp| -> Option<(Temp, u64)> {
        match o {
            Operand::Tile(t)
                if !same_layout(
                    ty(*t).map_or(&[][..], |x| &x.shape),
                    ty(dst).map_or(&[][..], |x| &x.shape),
                ) =>
            {
                let dst_ty = ty(dst)?;
                let src_ty = ty(*t)?;
                let full = Geom::of(&TileType {
                    shape: dst_ty.shape.clone(),
                    dtype: src_ty.dtype,
                    level: MemLevel::Ub,
                });
                Some((temp, full.bytes))
            }
            _ => None,
        }
    };
    let broadcasts = |first: &Operand, second: &Operand, dst: TileId| -> Vec<(Temp, u64)> {
        [
            broadcast(first, dst, Temp::BroadcastLhs),
            broadcast(second, dst, Temp::BroadcastRhs),
        ]
        .into_iter()
        .flatten()
        .collect()
    };
    // Bytes of one row of a tile of layout `g`.
    let row_bytes =
        |g: &Geom, dtype: DType| ((g.pitch * dtype.size_bytes()) as u64).next_multiple_of(UB_ALIGN);
    match inst {
        Inst::Unary { dst, op, .. } if unary_takes_tmp(*op) => geom(*dst)
            .map(|g| (Temp::MathScratch, math_tmp_bytes(g.elems())))
            .into_iter()
            .collect(),
        Inst::Binary { dst, op, lhs, rhs } if binary_is_math(*op) => {
            // Broadcasts, a scalar operand duplicated into a tile, the math function's
            // `sharedTmpBuffer`, and for `mod` the sign fix's tile and bit mask.
            let Some(g) = geom(*dst) else {
                return Vec::new();
            };
            let mut temps = broadcasts(lhs, rhs, *dst);
            for (operand, temp) in [(lhs, Temp::ScalarLhs), (rhs, Temp::ScalarRhs)] {
                if matches!(operand, Operand::Scalar(_)) {
                    temps.push((temp, g.bytes));
                }
            }
            temps.push((Temp::MathScratch, math_tmp_bytes(g.elems())));
            if matches!(op, crate::ir::BinaryOp::Mod) {
                let mask = ty(*dst).map(|t| {
                    Geom::of(&TileType {
                        shape: t.shape.clone(),
                        dtype: DType::Bool,
                        level: MemLevel::Ub,
                    })
                    .bytes
                });
                temps.push((Temp::ModFixed, g.bytes));
                temps.extend(mask.map(|bytes| (Temp::ModMask, bytes)));
            }
            temps
        }
        Inst::TopK { src, k, .. } => sort_temps(ty(*src), *k),
        // Along the last axis, the first pair of the row's sort (the lowering's route).
        Inst::ArgReduce { src, axis, .. }
            if ty(*src).is_some_and(|t| *axis + 1 == t.shape.len()) =>
        {
            sort_temps(ty(*src), 1)
        }
        Inst::Binary { dst, op, lhs, rhs }
            if let Some(_) = row_statistic(program, *dst, lhs, rhs) =>
        {
            // Row by row with the statistic as a scalar; a division needs it as a row.
            // (Integers subtract as tiles too.)
            match (op, geom(*dst), ty(*dst)) {
                (crate::ir::BinaryOp::Sub, Some(g), Some(t)) if !t.dtype.is_float() => {
                    vec![(Temp::StatRow, row_bytes(&g, t.dtype))]
                }
                (crate::ir::BinaryOp::Div, Some(g), Some(t)) => {
                    vec![(Temp::StatRow, row_bytes(&g, t.dtype))]
                }
                _ => Vec::new(),
            }
        }
        Inst::Binary { dst, op, lhs, rhs } => {
            let mut temps = broadcasts(lhs, rhs, *dst);
            // A scalar divisor or dividend, and an integer subtraction with a scalar (exact
            // only as a tile subtraction), go through a duplicated tile.
            let integer = ty(*dst).is_some_and(|t| !t.dtype.is_float());
            let duplicated = match op {
                crate::ir::BinaryOp::Div => true,
                crate::ir::BinaryOp::Sub => integer,
                _ => false,
            };
            let scalar = if matches!(lhs, Operand::Scalar(_)) {
                Some(Temp::ScalarLhs)
            } else if matches!(rhs, Operand::Scalar(_)) {
                Some(Temp::ScalarRhs)
            } else {
                None
            };
            if duplicated && let Some(temp) = scalar {
                temps.extend(geom(*dst).map(|g| (temp, g.bytes)));
            }
            temps
        }
        Inst::Compare { dst, lhs, rhs, .. } => {
            // Operands broadcast to the compared shape, in the operands' dtype.
            let shape_ty = |o: &Operand| match o {
                Operand::Tile(t) => ty(*t),
                Operand::Scalar(_) => None,
            };
            let dtype = shape_ty(lhs)
                .or(shape_ty(rhs))
                .map_or(DType::F32, |t| t.dtype);
            let Some(dst_ty) = ty(*dst) else {
                return Vec::new();
            };
            let full = Geom::of(&TileType {
                shape: dst_ty.shape.clone(),
                dtype,
                level: MemLevel::Ub,
            })
            .bytes;
            [(lhs, Temp::BroadcastLhs), (rhs, Temp::BroadcastRhs)]
                .into_iter()
                .filter(|(o, _)| {
                    matches!(o, Operand::Tile(t)
                        if !same_layout(ty(*t).map_or(&[][..], |x| &x.shape), &dst_ty.shape))
                })
                .map(|(_, temp)| (temp, full))
                .collect()
        }
        Inst::Select {
            dst,
            on_true,
            on_false,
            ..
        } => {
            let mut temps = broadcasts(on_true, on_false, *dst);
            if matches!(on_true, Operand::Scalar(_)) {
                temps.extend(geom(*dst).map(|g| (Temp::ScalarLhs, g.bytes)));
            }
            temps
        }
        _ => Vec::new(),
    }
}

/// The first-fit allocator of the shared buffer.
struct Pool {
    /// Allocated (offset, bytes), sorted by offset.
    used: Vec<(u64, u64)>,
    high: u64,
    align: u64,
}

impl Pool {
    fn alloc(&mut self, bytes: u64) -> u64 {
        let mut offset = 0;
        let mut index = 0;
        for (i, &(start, size)) in self.used.iter().enumerate() {
            if start >= offset + bytes {
                break;
            }
            offset = (start + size).next_multiple_of(self.align);
            index = i + 1;
        }
        self.used.insert(index, (offset, bytes));
        self.high = self.high.max(offset + bytes);
        offset
    }

    fn free(&mut self, offset: u64) {
        self.used.retain(|&(start, _)| start != offset);
    }
}

/// The row reduction the lowering emits for a reduce of `op` over the last axis of `rows`
/// rows of `cols` `dtype` elements, `pitch` elements apart, on `profile`, and the rows of
/// one batch: rows go in batches of at most [`REPEAT_MAX`] (one row at a time where a row
/// is more than 255 blocks long, the repeat stride's limit), each batch reduced as
/// [`RowReduce::plan`] decides, with the group path where the profile prices it
/// ([`RowReduce::group_priced`]): the one rule the simulator applies too.
pub fn row_reduce(
    profile: &DeviceProfile,
    op: ReduceOp,
    dtype: DType,
    rows: usize,
    cols: usize,
    pitch: usize,
) -> (RowReduce, usize) {
    let size = dtype.size_bytes().max(1);
    let batch = if pitch * size / 32 > 255 {
        1
    } else {
        rows.clamp(1, REPEAT_MAX)
    };
    let group = RowReduce::group_priced(profile, op, dtype);
    (RowReduce::plan(op, dtype, batch, cols, 256, group), batch)
}

/// Plans `program`'s UB tiles (a row reduction's work buffer as on `profile`).
pub fn plan(program: &Program, profile: &DeviceProfile) -> Plan {
    let live = Liveness::of(program);
    let n = program.tiles.len();
    let mut storage = IdVec::filled(n, Storage::None);
    let mut reduce_work_bytes = 0;

    // Storage kinds.
    classify(
        program,
        profile,
        &program.body,
        &live,
        &mut storage,
        &mut reduce_work_bytes,
    );

    // Pool intervals: (start, end, bytes, level, tile or temp).
    enum Item {
        Tile(TileId),
        Temp(usize, Temp),
    }
    let mut intervals: Vec<(usize, usize, u64, usize, Item)> = Vec::new();
    let last_use: IdVec<TileId, usize> = live.tiles().iter().map(|t| t.end).collect();
    let mut end = last_use.clone();
    // Aliases (loop results, accumulators) extend the storage they use.
    for t in program.tiles.keys() {
        let r = root(&storage, t);
        end[r] = end[r].max(last_use[t]);
    }
    for (t, kind) in storage.iter_enumerated() {
        if *kind == Storage::Pool(0)
            && let Some(d) = live.tiles()[t].def
        {
            let ty = &program.tiles[t];
            intervals.push((
                d,
                end[t],
                Geom::of(ty).bytes,
                level_index(ty.level),
                Item::Tile(t),
            ));
        }
    }
    // The temporaries of each instruction, at its position.
    let temps_at: Vec<(usize, Vec<(Temp, u64)>)> = live
        .positions()
        .iter()
        .enumerate()
        .filter(|(_, p)| !matches!(p.inst, Inst::Loop { .. }))
        .map(|(at, p)| (at, temp_bytes(program, p.inst)))
        .filter(|(_, temps)| !temps.is_empty())
        .collect();
    for (at, temps) in &temps_at {
        for (temp, bytes) in temps {
            intervals.push((*at, *at, *bytes, 0, Item::Temp(*at, *temp)));
        }
    }
    // Allocate in order of start; at one position allocate everything before freeing.
    intervals.sort_by_key(|(start, end, _, _, _)| (*start, *end));
    let mut pools: Vec<Pool> = POOL_ALIGN
        .iter()
        .map(|&align| Pool {
            used: Vec::new(),
            high: 0,
            align,
        })
        .collect();
    let mut temps: HashMap<usize, HashMap<Temp, u64>> = HashMap::new();
    // Tiles whose storage others use (loop results, accumulators), and carried tiles.
    let mut aliased: IdVec<TileId, bool> = IdVec::filled(n, false);
    for kind in &storage {
        if let Storage::Alias(target) = kind {
            aliased[*target] = true;
        }
    }
    let mut carried = IdVec::filled(n, false);
    mark_carried(&program.body, &mut carried);
    let mut in_place: HashMap<TileId, Vec<TileId>> = HashMap::new();
    collect_in_place(program, &program.body, &mut in_place);
    // (end, level, offset, bytes, tile)
    let mut live_now: Vec<(usize, usize, u64, u64, Option<TileId>)> = Vec::new();
    for (start, stop, bytes, level, item) in intervals {
        live_now.retain(|&(e, l, offset, _, _)| {
            if e < start {
                pools[l].free(offset);
                false
            } else {
                true
            }
        });
        // An element-wise result may take the place of an operand that dies here.
        let shared = |u: TileId| aliased[u] && !carried[u];
        let reused = match item {
            Item::Tile(t) => in_place.get(&t).and_then(|operands| {
                live_now.iter().position(|&(e, l, _, b, tile)| {
                    e >= start
                        && tile.is_some_and(|u| {
                            live.tiles()[u].read_end() == Some(start) && !shared(u)
                        })
                        && l == level
                        && b >= bytes
                        && tile.is_some_and(|u| operands.contains(&u))
                })
            }),
            Item::Temp(..) => None,
        };
        let (offset, kept, stop) = match reused {
            // The result keeps the storage as long as the operand's was kept.
            Some(index) => {
                let (e, _, offset, held, _) = live_now.remove(index);
                (offset, held, stop.max(e))
            }
            None => (pools[level].alloc(bytes), bytes, stop),
        };
        if let Item::Tile(t) = item {
            end[t] = stop;
        }
        let tile = match item {
            Item::Tile(t) => Some(t),
            Item::Temp(..) => None,
        };
        live_now.push((stop, level, offset, kept, tile));
        match item {
            Item::Tile(t) => storage[t] = Storage::Pool(offset),
            Item::Temp(at, temp) => {
                let earlier = temps.entry(at).or_default().insert(temp, offset);
                debug_assert!(earlier.is_none(), "two temporaries {temp:?} at {at}");
            }
        }
    }
    let mut pool_bytes = [0; 5];
    for (i, pool) in pools.iter().enumerate() {
        pool_bytes[i] = pool.high.next_multiple_of(POOL_ALIGN[i]);
    }
    Plan {
        storage,
        end,
        def: live.tiles().iter().map(|t| t.def).collect(),
        last_use,
        temps,
        pool_bytes,
        reduce_work_bytes,
    }
}

fn mark_carried(body: &[Inst], carried: &mut IdVec<TileId, bool>) {
    for inst in body {
        if let Inst::Loop { params, body, .. } = inst {
            for p in params {
                carried[*p] = true;
            }
            mark_carried(body, carried);
        }
    }
}

/// The operands each element-wise result may overwrite (by result tile): the instructions
/// whose lowering reads each element of its operands before writing that element of the
/// result, and never reads an operand after writing the result.
fn collect_in_place(program: &Program, body: &[Inst], out: &mut HashMap<TileId, Vec<TileId>>) {
    let same_size = |a: TileId, b: TileId| match (program.tile(a), program.tile(b)) {
        (Some(x), Some(y)) => {
            x.level == MemLevel::Ub
                && y.level == MemLevel::Ub
                && x.dtype.size_bytes() == y.dtype.size_bytes()
                && x.dtype != DType::Bool
                && y.dtype != DType::Bool
                && same_layout(&x.shape, &y.shape)
        }
        _ => false,
    };
    for inst in body {
        let (dst, operands): (TileId, Vec<TileId>) = match inst {
            Inst::Loop {
                body, init, params, ..
            } => {
                // A carried tile may take its initial value's place (no copy then).
                for (p, i) in params.iter().zip(init) {
                    if same_size(*i, *p)
                        && program.tile(*p).is_some_and(|t| {
                            t.dtype == program.tile(*i).map_or(t.dtype, |x| x.dtype)
                        })
                    {
                        out.insert(*p, vec![*i]);
                    }
                }
                collect_in_place(program, body, out);
                continue;
            }
            Inst::Unary { dst, op, src } => match op {
                crate::ir::UnaryOp::Silu | crate::ir::UnaryOp::Gelu => continue,
                _ => (*dst, vec![*src]),
            },
            Inst::Binary { dst, .. } | Inst::Select { dst, .. } => (
                *dst,
                inst.uses()
                    .filter(|u| program.tile(*u).is_some_and(|t| t.dtype != DType::Bool))
                    .collect(),
            ),
            Inst::Cast { dst, src } => (*dst, vec![*src]),
            _ => continue,
        };
        let operands: Vec<TileId> = operands
            .into_iter()
            .filter(|u| same_size(*u, dst))
            .collect();
        if !operands.is_empty() {
            out.insert(dst, operands);
        }
    }
}

/// Sets each UB tile's storage kind (`Pool(0)` stands for "in the pool, offset to come").
fn classify(
    program: &Program,
    profile: &DeviceProfile,
    body: &[Inst],
    live: &Liveness<'_>,
    storage: &mut IdVec<TileId, Storage>,
    reduce_work_bytes: &mut u64,
) {
    // Tiles whose only use is one store of this scope.
    let mut stored: HashMap<TileId, usize> = HashMap::new();
    for inst in body {
        if let Inst::Store { src, .. } = inst {
            *stored.entry(*src).or_default() += 1;
        }
    }
    // Casts to the tile's own dtype: their result can be their operand's storage.
    let mut identity: HashMap<TileId, TileId> = HashMap::new();
    for inst in body {
        if let Inst::Cast { dst, src } = inst
            && let (Some(a), Some(b)) = (program.tile(*src), program.tile(*dst))
            && a.dtype == b.dtype
            && a.level == b.level
            && same_layout(&a.shape, &b.shape)
        {
            identity.insert(*src, *dst);
        }
    }
    let in_ub = |t: TileId| program.tile(t).is_some_and(|ty| ty.level == MemLevel::Ub);
    for inst in body {
        match inst {
            Inst::Loop {
                init,
                params,
                results,
                body,
                ..
            } => {
                for (p, i) in params.iter().zip(init) {
                    // UB tiles are copied in; cube tiles (an L0C accumulator) cannot be,
                    // so the loop carries the initial tile's storage.
                    storage[*p] = if in_ub(*p) {
                        Storage::Pool(0)
                    } else {
                        Storage::Alias(*i)
                    };
                }
                for (r, p) in results.iter().zip(params) {
                    storage[*r] = Storage::Alias(*p);
                }
                classify(program, profile, body, live, storage, reduce_work_bytes);
            }
            Inst::Load { dst, .. } if in_ub(*dst) => storage[*dst] = Storage::InQueue,
            // Mmad accumulates in place: the result is the accumulator's storage.
            Inst::Matmul {
                dst,
                acc: Some(acc),
                ..
            } => storage[*dst] = Storage::Alias(*acc),
            _ => {
                if let Inst::Reduce { src, op, axis, .. } = inst
                    && let Some(ty) = program.tile(*src)
                    && *axis + 1 >= ty.shape.len()
                {
                    // The row reduction's tmp tile: one repeat per row of a batch of rows,
                    // or the group path's (see `Lowering::row_reduce`).
                    let g = Geom::of(ty);
                    let tmp = row_reduce(profile, *op, ty.dtype, g.rows, g.cols, g.pitch)
                        .0
                        .tmp_bytes;
                    *reduce_work_bytes =
                        (*reduce_work_bytes).max((tmp as u64).next_multiple_of(UB_ALIGN));
                }
                for d in defs(inst) {
                    if !in_ub(d) {
                        storage[d] = Storage::Pool(0);
                        continue;
                    }
                    if matches!(storage[d], Storage::Alias(_)) {
                        continue;
                    }
                    let only_stored = |t: TileId| {
                        stored.get(&t) == Some(&1)
                            && live.tile(t).is_some_and(|l| l.uses == 1)
                            && program.tile(t).is_some_and(|t| t.dtype != DType::Bool)
                    };
                    // Computed straight into the store's queue, through an identity cast.
                    let cast_then_stored = identity
                        .get(&d)
                        .filter(|y| live.tile(d).is_some_and(|l| l.uses == 1) && only_stored(**y));
                    storage[d] = if only_stored(d) {
                        Storage::OutQueue
                    } else if let Some(y) = cast_then_stored {
                        storage[*y] = Storage::Alias(d);
                        Storage::OutQueue
                    } else {
                        Storage::Pool(0)
                    };
                }
            }
        }
    }
}

/// A `TQue` of the lowered kernel: `depth` buffers of `bytes` each at `position`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Queue {
    /// The queue's name in the kernel source (`inQueue_t0`, `outQueue_store7`).
    pub name: String,
    /// Its `TPosition`: `VECIN` or `VECOUT`.
    pub position: &'static str,
    /// Its number of buffers.
    pub depth: u32,
    /// Bytes of each buffer.
    pub bytes: u64,
}

/// The queues the lowering of `program` with `plan` declares, in program order: a `VECIN`
/// queue per load into UB (two deep inside a loop when `double_buffer`), a `VECOUT` queue
/// per tile computed into its store's queue, and one per store of any other tile.
pub fn queues(program: &Program, plan: &Plan, double_buffer: bool) -> Vec<Queue> {
    let in_ub = |t: TileId| program.tile(t).filter(|ty| ty.level == MemLevel::Ub);
    let mut out = Vec::new();
    for (at, position) in Liveness::of(program).positions().iter().enumerate() {
        let in_loop = position.scope.is_some();
        match position.inst {
            Inst::Loop { .. } => {}
            Inst::Load { dst, .. } => {
                if let Some(ty) = in_ub(*dst) {
                    out.push(Queue {
                        name: format!("inQueue_t{}", dst.as_u32()),
                        position: "VECIN",
                        depth: if double_buffer && in_loop { 2 } else { 1 },
                        bytes: Geom::of(ty).bytes,
                    });
                }
            }
            Inst::Store { src, .. } => {
                if let Some(ty) = in_ub(*src)
                    && plan.storage[root(&plan.storage, *src)] != Storage::OutQueue
                {
                    out.push(Queue {
                        name: format!("outQueue_store{at}"),
                        position: "VECOUT",
                        depth: 1,
                        bytes: Geom::of(ty).bytes,
                    });
                }
            }
            inst => {
                for d in defs(inst) {
                    let Some(ty) = in_ub(d) else { continue };
                    if plan.storage[d] != Storage::OutQueue {
                        continue;
                    }
                    out.push(Queue {
                        name: format!("outQueue_t{}", d.as_u32()),
                        position: "VECOUT",
                        depth: 1,
                        bytes: Geom::of(ty).bytes,
                    });
                }
            }
        }
    }
    out
}

/// The UB one vector core reserves for a program: its queues, the `VECCALC` pool and the
/// reductions' work buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UbReservation {
    /// The queues, in program order.
    pub queues: Vec<Queue>,
    /// Bytes of the `VECCALC` pool.
    pub calc: u64,
    /// Bytes of the reductions' work buffer.
    pub reduce_work: u64,
}

impl UbReservation {
    /// The reservation of `program` planned as `plan`.
    pub fn of(program: &Program, plan: &Plan, double_buffer: bool) -> UbReservation {
        UbReservation {
            queues: queues(program, plan, double_buffer),
            calc: plan.pool_bytes[0],
            reduce_work: plan.reduce_work_bytes,
        }
    }

    /// Bytes of UB in all.
    pub fn total(&self) -> u64 {
        let queues: u64 = self
            .queues
            .iter()
            .map(|q| q.bytes * u64::from(q.depth))
            .sum();
        queues + self.calc + self.reduce_work
    }

    /// `inQueue_t0 2x4096, calcBuf 8192, reduceWorkBuf 1024`.
    pub fn detail(&self) -> String {
        let mut parts: Vec<String> = self
            .queues
            .iter()
            .map(|q| format!("{} {}x{}", q.name, q.depth, q.bytes))
            .collect();
        parts.push(format!("calcBuf {}", self.calc));
        if self.reduce_work > 0 {
            parts.push(format!("reduceWorkBuf {}", self.reduce_work));
        }
        parts.join(", ")
    }
}

/// How the vector cores of a split core's mix kernel share a block program: by rows
/// (`Ok(rows)`: each of the two takes half the rows of every UB tile of `rows` rows), or
/// taking turns with whole tiles (`Err(reason)`); `None` for a coupled core or a program
/// without both cube and vector work.
pub fn aiv_rows(program: &Program, split_cores: bool) -> Option<Result<usize, String>> {
    (split_cores && mixes_cube_and_vector(program)).then(|| row_split(program))
}

/// `program` with half the rows (the second last axis) in each UB tile of `rows` rows.
pub fn halve_rows(program: &Program, rows: usize) -> Program {
    let mut halved = program.clone();
    for ty in &mut halved.tiles {
        let rank = ty.shape.len();
        if ty.level == MemLevel::Ub && rank >= 2 && ty.shape[rank - 2] == rows {
            ty.shape[rank - 2] = rows / 2;
        }
    }
    halved
}

/// The UB one vector core reserves for `program` in the Ascend C lowering when its loads
/// are not double-buffered (the lowering's fallback, its least), on a SoC whose cube and
/// vector cores are split (`split_cores`: each vector core holds its half of the rows of a
/// mix program's row-split tiles) or coupled.
pub fn reserved_ub(program: &Program, profile: &DeviceProfile, split_cores: bool) -> UbReservation {
    match aiv_rows(program, split_cores) {
        Some(Ok(rows)) => {
            let half = halve_rows(program, rows);
            UbReservation::of(&half, &plan(&half, profile), false)
        }
        _ => UbReservation::of(program, &plan(program, profile), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{BinaryOp, GlobalDecl, GlobalId, GlobalRole, Index, UnaryOp};

    fn ub(shape: &[usize], dtype: DType) -> TileType {
        TileType {
            shape: shape.to_vec(),
            dtype,
            level: MemLevel::Ub,
        }
    }

    #[test]
    fn rows_are_padded_to_32_bytes_of_every_dtype_and_cube_tiles_to_fractals() {
        let g = Geom::of(&ub(&[2, 7, 33], DType::F32));
        assert_eq!(
            (g.rows, g.cols, g.pitch, g.bytes),
            (14, 33, 48, 14 * 48 * 4)
        );
        let g = Geom::of(&ub(&[13, 100], DType::Bool));
        assert_eq!(
            (g.pitch, g.bytes),
            (112, (13 * 112 / 8_u64).next_multiple_of(32))
        );
        let l1 = TileType {
            level: MemLevel::L1,
            ..ub(&[40, 70], DType::F16)
        };
        let g = Geom::of(&l1);
        assert_eq!((g.rows, g.pitch, g.bytes), (48, 80, 48 * 80 * 2));
        assert!(same_layout(&[1, 64, 20], &[64, 20]));
        assert!(!same_layout(&[64, 1], &[64, 20]));
    }

    /// x -> exp -> (+ 1) -> store: each result may overwrite its dying operand, so the
    /// pool holds one tile; the stored result is computed into the VECOUT queue.
    #[test]
    fn element_wise_chains_run_in_place_and_the_stored_tile_lives_in_its_queue() {
        let global = |name: &str, role| GlobalDecl {
            name: name.into(),
            shape: vec![8, 64],
            dtype: DType::F32,
            role,
        };
        let t = ub(&[8, 64], DType::F32);
        let program = Program {
            op: "test.chain".into(),
            grid: 1,
            globals: vec![
                global("x", GlobalRole::Input),
                global("y", GlobalRole::Output),
            ]
            .into(),
            tiles: vec![t.clone(), t.clone(), t.clone(), t].into(),
            vars: 0,
            body: vec![
                Inst::Load {
                    dst: TileId::new(0),
                    src: GlobalId::new(0),
                    offsets: vec![Index::Const(0), Index::Const(0)],
                    pad: 0.0,
                },
                Inst::Unary {
                    dst: TileId::new(1),
                    op: UnaryOp::Exp,
                    src: TileId::new(0),
                },
                Inst::Unary {
                    dst: TileId::new(2),
                    op: UnaryOp::Abs,
                    src: TileId::new(1),
                },
                Inst::Binary {
                    dst: TileId::new(3),
                    op: BinaryOp::Add,
                    lhs: Operand::Tile(TileId::new(2)),
                    rhs: Operand::Scalar(1.0),
                },
                Inst::Store {
                    dst: GlobalId::new(1),
                    offsets: vec![Index::Const(0), Index::Const(0)],
                    src: TileId::new(3),
                },
            ],
        };
        let profile = DeviceProfile::builtin("kirin9030").expect("profile");
        let plan = plan(&program, &profile);
        assert_eq!(plan.storage[TileId::new(0)], Storage::InQueue);
        assert_eq!(plan.storage[TileId::new(1)], Storage::Pool(0));
        assert_eq!(plan.storage[TileId::new(2)], Storage::Pool(0));
        assert_eq!(plan.storage[TileId::new(3)], Storage::OutQueue);
        assert_eq!(plan.pool_bytes[0], 8 * 64 * 4);
    }

    /// `mod` of a tile by a scalar: the scalar's tile, the math function's buffer and the
    /// sign fix's tile and mask, each by name at the instruction's position, apart.
    #[test]
    fn temporaries_are_planned_by_name() {
        let program = crate::text::parse(
            "kernel t.temps grid 1\n\
             global @0 x: f32[8, 64] input\n\
             global @1 y: f32[8, 64] output\n\
             %0: f32[8, 64]@ub = load @0[0, 0] pad 0.0\n\
             %1: f32[8, 64]@ub = binary mod %0, 3.0\n\
             store @1[0, 0], %1\n",
        )
        .expect("a valid text");
        let program = program.program();
        let names: Vec<Temp> = temp_bytes(program, &program.body[1])
            .into_iter()
            .map(|(temp, _)| temp)
            .collect();
        assert_eq!(
            names,
            [
                Temp::ScalarRhs,
                Temp::MathScratch,
                Temp::ModFixed,
                Temp::ModMask
            ]
        );
        let profile = DeviceProfile::builtin("kirin9030").expect("profile");
        let plan = plan(program, &profile);
        let mut offsets: Vec<u64> = names
            .iter()
            .map(|temp| plan.temp(1, *temp).expect("planned"))
            .collect();
        offsets.sort_unstable();
        offsets.dedup();
        assert_eq!(offsets.len(), 4, "{:?}", plan.temps);
        assert_eq!(plan.temp(1, Temp::ScalarLhs), None);
        assert_eq!(plan.temp(0, Temp::MathScratch), None);
    }
}
