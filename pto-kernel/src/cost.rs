//! The cost model of kernel instructions: how many cycles each one occupies its pipe on a
//! device profile. The simulator's scheduler, the estimator's pipe model and device
//! lowerings all call it, so they cannot drift apart.
//!
//! Every instruction occupies its pipe ([`Inst::pipe`]) for:
//!
//! - copies: `copy_latency_cycles + bytes / rate` for the path (GM -> UB, GM -> L1,
//!   L1 -> L0A, L1 -> L0B, L0C out, UB -> GM, UB -> L1); paths to or from GM run at most at
//!   `memory_bandwidth / clock_hz / cores in use` bytes per cycle, as the cores share GM.
//!   `bytes` is the larger of the source and destination tile (for an extract, the
//!   destination sub-tile).
//! - every transfer to or from GM also holds its AI core's **links** ([`Links`]): the GM
//!   share (reads and writes), the L2 read share and the L2 write share, each for its bytes
//!   at that share alone; the simulator runs no two transfers of one AI core on a link at
//!   once, on any pipe of either side of a split core, so concurrent transfers add their
//!   bytes against the share (hicann/catlass `docs/en/1_Practice/evaluation/
//!   bottleneck_analysis_and_optimization.md`: "when multiple movement instructions execute
//!   simultaneously, they share the bandwidth ... the total execution time is the sum of
//!   their data volumes divided by the GM bandwidth"). A load holds the GM share for its
//!   misses and the L2 read share for its hits, a store the GM share, a hand-off's write
//!   the L2 write share and its read the L2 read share.
//! - loads (GM -> UB / L1) read through the L2 cache ([`crate::device::L2Cache`]): a share
//!   `h` of their bytes hits L2 and streams at `l2.bandwidth / clock_hz / cores in use`
//!   bytes per cycle (capped by the path's rate), the rest at the GM rate above, so a
//!   load's bytes take `h / l2_rate + (1 - h) / gm_rate` cycles each. `h` is one number per
//!   program, the **re-read share**: over the whole grid, the program loads `L` bytes of
//!   its inputs, of which `U` are distinct (the inputs' sizes, at most what is loaded);
//!   the first read of each byte misses, every re-read hits while the distinct bytes fit
//!   the cache, and a share `capacity / U` of them hits when they do not:
//!   `h = (L - U) / L * min(1, capacity / U)`. This is what tiled kernels need (a GEMM
//!   re-reads each row of `a` once per column tile of `y`, flash attention re-reads `k`
//!   and `v` once per query block); it ignores the order of reads and what other ops
//!   left in the cache, and stores go to GM at the GM rate.
//! - a row reduction (a `reduce` over the last axis): the instruction sequence of
//!   [`super::row_reduce`] (element-wise folds of the row's repeats over all rows, then one
//!   reduce per row, as the public A2/A3 implementation issues it), each step at its cost
//!   ([`CostModel::row_reduce`]); the vector cores of a split core share the rows.
//! - vector: `vector_latency_cycles + repeats * cycles_per_repeat(kind)`, with
//!   `repeats = ceil(bytes of the largest operand or result / vector_bytes_per_repeat)`
//!   and the kind from [`Inst::cycles_per_repeat`].
//! - a top-k: the sort instructions of [`super::top_k`] (`Sort32`, merges of the whole
//!   row, an extract of the first `k`; an index reduction along the last axis the same
//!   with `k = 1`), each one instruction over all rows at `vector_latency_cycles + rows x
//!   repeats x reduce` (the pipe model's `topk` entry where it has one): an assumed
//!   throughput, as no public source gives the sort instructions' own.
//! - cube: `cube_latency_cycles + m * k * n / cube_macs(dtype of a)`.
//! - scalar: the S pipe spends `issue_cycles` on every instruction but a loop, and
//!   `loop_overhead_cycles` on every loop iteration; a loop itself occupies no pipe.
//!
//! A profile with a cycle-level pipe model ([`crate::device::PipeModel`], the 910B
//! profiles) replaces the plain latencies and vector costs where it has them:
//!
//! - transfers that read GM (loads, a hand-off's read back) pay `gm_read_latency_cycles`,
//!   those that write GM (stores, FIXP out of L0C, a hand-off's write)
//!   `gm_write_latency_cycles`, in place of `copy_latency_cycles`, **after** their bytes
//!   ([`InstCost::latency`]): the MTE pipe takes the next transfer once the bytes are
//!   moved, so queued transfers overlap their latencies, as MTE1, cube and vector
//!   latencies already do. PyPTO's pipe model (`pipe.cpp`) instead ends each transfer its
//!   latency after the previous one's end; vendor measurements contradict that: the CANN
//!   Ascend C best practice "Transferring a Large Data Block at a Time" (hiascend.com,
//!   opdevg, `atlas_ascendc_best_practices_10_0013`) reaches near-full bandwidth from 16 KB
//!   a transfer, which a latency paid per transfer would cap at 35% (351 cycles against
//!   16384 / 87);
//! - an L1 -> L0A / L0B copy occupies MTE1 for `bytes / rate` and a matmul the cube for
//!   `m * k * n / cube_macs`, their results ready `mte1_latency_cycles` /
//!   `cube_latency_cycles` later ([`InstCost::latency`]: the pipe takes the next
//!   instruction meanwhile);
//! - a vector instruction with a row in the table ([`Inst::vector_op_name`] and the
//!   result's dtype, a cast's source dtype) occupies the vector pipe for `repeats *
//!   cycles_per_repeat` of its row, its result ready `latency_cycles` later; one without a
//!   row keeps the class cost above.
//!
//! Where each instruction runs ([`CostModel::placement`]) follows the profile's
//! [`CubeVector`]. On a `coupled` core everything runs on the one core ([`Side::Core`]).
//! On a `split` core (Ascend 910B) the cube core ([`Side::Cube`]: loads into L1, L1 -> L0A /
//! L0B, matmuls, FIXP out of L0C, stores from L0C) and the vector cores ([`Side::Vector`]:
//! loads into UB, vector instructions, stores from UB) each have their own pipes, MTE2
//! and scalar unit, and a tile crosses from one to the other only through GM: a **hand-off**.
//! A move L0C -> UB becomes FIXP L0C -> GM on the cube core then MTE2 GM -> UB on the vector
//! cores; a move UB -> L1 becomes MTE3 UB -> GM on the vector cores then MTE2 GM -> L1 on
//! the cube core. The write is priced as a store of the tile (bytes at the path's rate,
//! capped by the GM share, then the GM write latency); the read as a load that hits L2 (at
//! the path's rate capped by the L2 share, or the GM share without an L2), as the reader
//! takes back what the writer just wrote; the write goes at the path's rate capped by the
//! L2 write share (`l2.write_bandwidth / clock_hz / cores in use`), or the GM share when
//! the profile gives no L2 write bandwidth. The cross-core flag between them takes the pipe
//! model's `cross_core_flag_cycles` ([`CostModel::cross_core_flag_cycles`]): the read
//! starts that long after the write has reached GM (no public figure gives the flag's
//! latency: the 910B profiles assume one, in their notes). A hand-off moves the
//! destination tile's bytes (the FIXP converts L0C's f32 on the way out). A move L0C -> UB
//! whose tile is read only by one store (a matmul's result converted for its store) is no
//! hand-off on a split core: the cube core stores it from L0C, converting on the way
//! (Fixpipe's L0C -> GM with F322F16), so the move is priced as a store from L0C and the
//! store itself costs nothing ([`Placement::Fused`]).
//!
//! Durations depend only on tile types, never on data or the program id.

use std::collections::BTreeMap;

use crate::device::{CubeVector, DeviceProfile};
use crate::dtype::DType;
use crate::top_k::TopKPlan;

use super::ir::{GlobalId, Inst, MemLevel, Pipe, Program, TileId, TileType};
use super::row_reduce::{RowReduce, StepKind};

/// Why the cost model cannot time an instruction.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CostError {
    /// The instruction refers to a tile the program does not declare.
    #[error("tile {tile} is not declared (the program declares {declared} tiles)")]
    UndeclaredTile {
        /// The tile.
        tile: TileId,
        /// How many tiles the program declares.
        declared: usize,
    },
    /// A load into a level loads cannot reach.
    #[error("loads go to UB or L1, not {}", .0.name().to_uppercase())]
    LoadLevel(MemLevel),
    /// A store from a level stores cannot read.
    #[error("stores come from UB or L0C, not {}", .0.name().to_uppercase())]
    StoreLevel(MemLevel),
    /// A move between levels the profile has no copy rate for.
    #[error(
        "no copy path {} -> {} in the device profile",
        from.name().to_uppercase(),
        to.name().to_uppercase()
    )]
    NoCopyPath {
        /// The source level.
        from: MemLevel,
        /// The destination level.
        to: MemLevel,
    },
    /// A matmul on a dtype the profile's cube does not take.
    #[error("the {device} cube takes no {dtype} inputs")]
    CubeDtype {
        /// The device profile's name.
        device: String,
        /// The input dtype.
        dtype: DType,
    },
}

/// What one instruction costs: its pipe, the cycles it occupies it, and the bytes it moves
/// or produces.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InstCost {
    /// The pipe it runs on.
    pub pipe: Pipe,
    /// Cycles it occupies the pipe (0 for a loop: see [`CostModel::loop_overhead_cycles`]).
    pub cycles: f64,
    /// Cycles after the pipe occupation until its result can be read (the pipe takes the
    /// next instruction meanwhile): a [`crate::device::PipeModel`]'s GM, MTE1, cube and
    /// vector latencies; 0 otherwise (the plain latencies occupy the pipe).
    pub latency: f64,
    /// Cycles a transfer to or from GM holds each of its AI core's shares of the memory
    /// system ([`Links`]): its bytes at the share alone, without the path's cap, so at
    /// most `cycles`. Every transfer of the AI core, on any pipe and either side of a
    /// split core, holds the same links, so concurrent transfers add their bytes. Zero for
    /// on-core work.
    pub links: Links,
    /// Bytes moved (copies) or of the largest operand or result (compute).
    pub bytes: u64,
}

/// Cycles a transfer holds each of its AI core's shares of the memory system: GM
/// (`memory_bandwidth / cores in use`, reads and writes together, as concurrent MTE2 and
/// MTE3 moves share GM bandwidth in hicann/catlass
/// `docs/en/1_Practice/evaluation/bottleneck_analysis_and_optimization.md`), L2 reads
/// (`l2.bandwidth / cores`: a load's hits, a hand-off's read back) and L2 writes
/// (`l2.write_bandwidth / cores`: a hand-off's write), the profile's per-core rates of
/// each (`A2A3.ini`'s `ddr_rate`, `l2_read_rate`, `l2_write_rate` on the 910B).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Links {
    /// Cycles on the GM share: a load's misses, a store.
    pub gm: f64,
    /// Cycles on the L2 read share.
    pub l2_read: f64,
    /// Cycles on the L2 write share.
    pub l2_write: f64,
}

impl Links {
    /// The cycles on each link, in the order `gm`, `l2_read`, `l2_write`.
    pub fn cycles(&self) -> [f64; 3] {
        [self.gm, self.l2_read, self.l2_write]
    }
}

/// Which core of an AI core runs an instruction (see [`CubeVector`]).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Side {
    /// The one core of a coupled AI core (cube and vector pipes together).
    Core,
    /// The cube core (AIC) of a split AI core.
    Cube,
    /// The vector cores (AIV) of a split AI core, timed as one.
    Vector,
}

impl Side {
    /// Every side, in trace order.
    pub const ALL: [Side; 3] = [Side::Core, Side::Cube, Side::Vector];

    /// `core`, `AIC` or `AIV`: the name in reports and traces.
    pub const fn name(self) -> &'static str {
        match self {
            Side::Core => "core",
            Side::Cube => "AIC",
            Side::Vector => "AIV",
        }
    }

    /// The position in [`Side::ALL`].
    pub const fn index(self) -> usize {
        match self {
            Side::Core => 0,
            Side::Cube => 1,
            Side::Vector => 2,
        }
    }
}

/// A value for each [`Side`], indexed by the side itself (`table[side]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PerSide<T>([T; 3]);

impl<T> PerSide<T> {
    /// `value` for every side.
    pub fn filled(value: T) -> Self
    where
        T: Copy,
    {
        PerSide([value; 3])
    }

    /// The values in [`Side::ALL`] order.
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.0.iter()
    }
}

impl<T> std::ops::Index<Side> for PerSide<T> {
    type Output = T;

    fn index(&self, side: Side) -> &T {
        &self.0[side.index()]
    }
}

impl<T> std::ops::IndexMut<Side> for PerSide<T> {
    fn index_mut(&mut self, side: Side) -> &mut T {
        &mut self.0[side.index()]
    }
}

/// One pipe occupation of an instruction on one side of the AI core.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Part {
    /// The core it runs on.
    pub side: Side,
    /// Its pipe, cycles and bytes.
    pub cost: InstCost,
}

/// Where an instruction runs and what it costs there ([`CostModel::placement`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Placement {
    /// One pipe occupation on one side.
    On(Part),
    /// A tile handed from one side of a split core to the other through GM: the writer's
    /// store to GM, then (after the cross-core flag) the reader's load back.
    HandOff {
        /// The store to GM, on the side that holds the source tile.
        write: Part,
        /// The load back, on the side that holds the destination tile.
        read: Part,
    },
    /// A store done by the move before it (a split core's FIXP L0C -> GM): no work of its
    /// own.
    Fused,
}

impl Placement {
    /// The pipe occupations, in order: one, or a hand-off's write and read.
    pub fn parts(&self) -> impl Iterator<Item = Part> + use<> {
        let (first, second) = match *self {
            Placement::On(part) => (Some(part), None),
            Placement::HandOff { write, read } => (Some(write), Some(read)),
            Placement::Fused => (None, None),
        };
        first.into_iter().chain(second)
    }

    /// The bytes a hand-off writes to GM (and reads back); 0 for anything else.
    pub fn handoff_bytes(&self) -> u64 {
        match self {
            Placement::On(_) | Placement::Fused => 0,
            Placement::HandOff { write, .. } => write.cost.bytes,
        }
    }
}

/// Whether each side has instructions in `body` (loop bodies included), on a profile whose
/// cores are arranged as `arrangement`.
pub fn sides_in(program: &Program, body: &[Inst], arrangement: CubeVector) -> PerSide<bool> {
    let mut sides = PerSide::filled(false);
    fn walk(program: &Program, body: &[Inst], arrangement: CubeVector, sides: &mut PerSide<bool>) {
        for inst in body {
            if let Inst::Loop { body, .. } = inst {
                walk(program, body, arrangement, sides);
                continue;
            }
            match side_of(program, inst, arrangement) {
                Some(side) => sides[side] = true,
                None => {
                    sides[Side::Cube] = true;
                    sides[Side::Vector] = true;
                }
            }
        }
    }
    walk(program, body, arrangement, &mut sides);
    sides
}

/// The side that runs `inst` (not a loop) on `arrangement`, or `None` for a hand-off
/// between the sides of a split core.
fn side_of(program: &Program, inst: &Inst, arrangement: CubeVector) -> Option<Side> {
    if arrangement == CubeVector::Coupled {
        return Some(Side::Core);
    }
    let level = |t: &TileId| program.tile(*t).map(|ty| ty.level);
    Some(match inst {
        Inst::Load { dst, .. } => match level(dst) {
            Some(MemLevel::Ub) => Side::Vector,
            _ => Side::Cube,
        },
        Inst::Store { src, .. } => match level(src) {
            Some(MemLevel::Ub) => Side::Vector,
            _ => Side::Cube,
        },
        Inst::Move { dst, src } => match (level(src), level(dst)) {
            (Some(MemLevel::L0C), Some(MemLevel::Ub))
            | (Some(MemLevel::Ub), Some(MemLevel::L1)) => {
                return None;
            }
            (Some(MemLevel::Ub), _) | (_, Some(MemLevel::Ub)) => Side::Vector,
            _ => Side::Cube,
        },
        Inst::Extract { .. } | Inst::Matmul { .. } | Inst::Loop { .. } => Side::Cube,
        Inst::Full { .. }
        | Inst::Iota { .. }
        | Inst::Unary { .. }
        | Inst::Binary { .. }
        | Inst::Compare { .. }
        | Inst::Select { .. }
        | Inst::Cast { .. }
        | Inst::Reduce { .. }
        | Inst::ArgReduce { .. }
        | Inst::Logic { .. }
        | Inst::Not { .. }
        | Inst::TopK { .. }
        | Inst::Reshape { .. } => Side::Vector,
    })
}

/// The cores that run block programs of a grid of `grid`: `min(ai_cores, grid)`, at
/// least 1.
pub fn cores_in_use(grid: usize, profile: &DeviceProfile) -> usize {
    (profile.ai_cores as usize).min(grid).max(1)
}

/// The share of a program's loaded bytes that hit the L2 cache of `profile`, in [0, 1]:
/// the re-read share of the module docs, `(L - U) / L * min(1, capacity / U)`.
///
/// ```
/// use pto_kernel::DeviceProfile;
/// use pto_kernel::cost::l2_hit_share;
/// let mut p = DeviceProfile::builtin("ascend910b").unwrap();
/// // 4 MiB distinct, each byte read 4 times: 3 of 4 reads hit.
/// assert_eq!(l2_hit_share(&p, 16 << 20, 4 << 20), 0.75);
/// p.l2.capacity = 1 << 20; // a quarter of the distinct bytes fits
/// assert_eq!(l2_hit_share(&p, 16 << 20, 4 << 20), 0.75 / 4.0);
/// p.l2.capacity = 0; // no L2
/// assert_eq!(l2_hit_share(&p, 16 << 20, 4 << 20), 0.0);
/// ```
pub fn l2_hit_share(profile: &DeviceProfile, loaded: u64, distinct: u64) -> f64 {
    let distinct = distinct.min(loaded);
    if profile.l2.capacity == 0 || loaded == 0 || distinct == 0 {
        return 0.0;
    }
    let reread = (loaded - distinct) as f64 / loaded as f64;
    reread * (profile.l2.capacity as f64 / distinct as f64).min(1.0)
}

/// `(loaded, distinct)` bytes of the input globals of `program` over its whole grid:
/// every load's tile bytes times its loop trips times the grid, and per input the smaller
/// of its size and what is loaded of it.
pub fn input_traffic(program: &Program) -> (u64, u64) {
    fn walk(program: &Program, body: &[Inst], trips: u64, loaded: &mut BTreeMap<GlobalId, u64>) {
        for inst in body {
            match inst {
                Inst::Loop { count, body, .. } => {
                    walk(program, body, trips.saturating_mul(*count as u64), loaded)
                }
                Inst::Load { dst, src, .. } => {
                    let bytes = program.tile(*dst).map_or(0, |t| t.bytes() as u64);
                    let entry = loaded.entry(*src).or_insert(0);
                    *entry = entry.saturating_add(bytes.saturating_mul(trips));
                }
                _ => {}
            }
        }
    }
    let mut per_global = BTreeMap::new();
    walk(
        program,
        &program.body,
        program.grid.max(1) as u64,
        &mut per_global,
    );
    per_global
        .iter()
        .fold((0u64, 0u64), |(loaded, distinct), (global, bytes)| {
            let size = program.global(*global).map_or(0, |g| {
                (g.shape.iter().product::<usize>() * g.dtype.size_bytes()) as u64
            });
            (
                loaded.saturating_add(*bytes),
                distinct.saturating_add(size.min(*bytes)),
            )
        })
}

/// The costs of instructions of one program on one device profile, its grid spread over
/// [`cores_in_use`] cores (which share the GM and L2 bandwidth), its loads hitting L2 by
/// [`l2_hit_share`].
///
/// ```
/// use pto_kernel::DeviceProfile;
/// use pto_kernel::cost::CostModel;
/// use pto_kernel::ir::Program;
/// let kirin = DeviceProfile::builtin("kirin9030").unwrap();
/// let program = Program { op: "doc.empty".into(), grid: 8, globals: vec![].into(), tiles: vec![].into(), vars: 0, body: vec![] };
/// let model = CostModel::new(&kirin, &program);
/// assert_eq!(model.issue_cycles(), kirin.issue_cycles);
/// assert_eq!(model.l2_hit_share(), 0.0);
/// ```
#[derive(Debug, Clone)]
pub struct CostModel<'a> {
    profile: &'a DeviceProfile,
    gm_bytes_per_cycle: f64,
    l2_bytes_per_cycle: f64,
    l2_write_bytes_per_cycle: f64,
    l2_hits: f64,
    /// On a split core, the UB tiles moved out of L0C whose only reader is a store.
    stored_from_l0c: std::collections::BTreeSet<TileId>,
}

/// The UB tiles of `program` defined by a move from L0C and read by exactly one
/// instruction, a store (loop `init` / `yields` count as reads).
fn stored_from_l0c(program: &Program) -> std::collections::BTreeSet<TileId> {
    fn walk(
        program: &Program,
        body: &[Inst],
        moved: &mut std::collections::BTreeSet<TileId>,
        reads: &mut BTreeMap<TileId, (usize, bool)>,
    ) {
        for inst in body {
            if let Inst::Loop { body, .. } = inst {
                walk(program, body, moved, reads);
            }
            if let Inst::Move { dst, src } = inst {
                let level = |t: &TileId| program.tile(*t).map(|ty| ty.level);
                if level(src) == Some(MemLevel::L0C) && level(dst) == Some(MemLevel::Ub) {
                    moved.insert(*dst);
                }
            }
            let store = matches!(inst, Inst::Store { .. });
            for tile in inst.uses() {
                let entry = reads.entry(tile).or_insert((0, true));
                entry.0 += 1;
                entry.1 &= store;
            }
        }
    }
    let mut moved = std::collections::BTreeSet::new();
    let mut reads = BTreeMap::new();
    walk(program, &program.body, &mut moved, &mut reads);
    moved.retain(|t| reads.get(t) == Some(&(1, true)));
    moved
}

impl<'a> CostModel<'a> {
    /// The model of `profile` running `program` (its grid and its loads' L2 hits).
    pub fn new(profile: &'a DeviceProfile, program: &Program) -> CostModel<'a> {
        let cores = cores_in_use(program.grid, profile) as f64;
        let (loaded, distinct) = input_traffic(program);
        CostModel {
            profile,
            gm_bytes_per_cycle: profile.memory_bandwidth / profile.clock_hz / cores,
            l2_bytes_per_cycle: profile.l2.bandwidth / profile.clock_hz / cores,
            l2_write_bytes_per_cycle: profile.l2.write_bandwidth / profile.clock_hz / cores,
            l2_hits: l2_hit_share(profile, loaded, distinct),
            stored_from_l0c: match profile.cube_vector {
                CubeVector::Split => stored_from_l0c(program),
                CubeVector::Coupled => std::collections::BTreeSet::new(),
            },
        }
    }

    /// The share of the program's loaded bytes that hit L2 ([`l2_hit_share`]).
    pub fn l2_hit_share(&self) -> f64 {
        self.l2_hits
    }

    /// Cycles per byte of a load on a path of `rate` bytes per cycle: L2 hits at the L2
    /// share, misses at the GM share, each capped by the path.
    fn load_cycles_per_byte(&self, rate: f64) -> f64 {
        let miss = 1.0 / rate.min(self.gm_bytes_per_cycle);
        if self.l2_hits > 0.0 {
            let hit = 1.0 / rate.min(self.l2_bytes_per_cycle);
            self.l2_hits * hit + (1.0 - self.l2_hits) * miss
        } else {
            miss
        }
    }

    /// Cycles per byte of a hand-off's read back on a path of `rate` bytes per cycle: an
    /// L2 hit (at the L2 share), or at the GM share on a profile without L2.
    fn handoff_read_cycles_per_byte(&self, rate: f64) -> f64 {
        if self.profile.l2.capacity > 0 {
            1.0 / rate.min(self.l2_bytes_per_cycle)
        } else {
            1.0 / rate.min(self.gm_bytes_per_cycle)
        }
    }

    /// Cycles per byte of a hand-off's write on a path of `rate` bytes per cycle: at the
    /// L2 write share, or the GM share on a profile without an L2 write bandwidth.
    fn handoff_write_cycles_per_byte(&self, rate: f64) -> f64 {
        if self.profile.l2.capacity > 0 && self.l2_write_bytes_per_cycle > 0.0 {
            1.0 / rate.min(self.l2_write_bytes_per_cycle)
        } else {
            1.0 / rate.min(self.gm_bytes_per_cycle)
        }
    }

    /// Where `inst` (not a loop) runs and what it costs there: [`Placement::On`] the
    /// one side that runs it with [`CostModel::inst`]'s cost, or on a split core a
    /// [`Placement::HandOff`] for a move L0C -> UB or UB -> L1, and for a move L0C -> UB
    /// whose tile only a store reads, the move as a store from L0C and the store
    /// [`Placement::Fused`] (see the module docs).
    ///
    /// # Errors
    ///
    /// [`CostModel::inst`]'s.
    pub fn placement(&self, program: &Program, inst: &Inst) -> Result<Placement, CostError> {
        let cost = self.inst(program, inst)?;
        let declared = program.tiles.len();
        let ty = |t: TileId| {
            program
                .tile(t)
                .ok_or(CostError::UndeclaredTile { tile: t, declared })
        };
        let p = self.profile;
        let rates = &p.copy_bytes_per_cycle;
        match inst {
            Inst::Store { src, .. } if self.stored_from_l0c.contains(src) => {
                return Ok(Placement::Fused);
            }
            Inst::Move { dst, .. } if self.stored_from_l0c.contains(dst) => {
                let bytes = ty(*dst)?.bytes();
                let rate = rates.l0c_out.min(self.gm_bytes_per_cycle);
                let (cycles, latency) = self.gm_transfer(self.gm_write_latency(), bytes, rate);
                return Ok(Placement::On(Part {
                    side: Side::Cube,
                    cost: InstCost {
                        pipe: Pipe::Fixp,
                        cycles,
                        latency,
                        bytes: bytes as u64,
                        links: self.gm_write_links(bytes),
                    },
                }));
            }
            _ => {}
        }
        if let Some(side) = side_of(program, inst, self.profile.cube_vector) {
            return Ok(Placement::On(Part { side, cost }));
        }
        let Inst::Move { dst, src } = inst else {
            unreachable!("only moves are hand-offs")
        };
        let (s, d) = (ty(*src)?, ty(*dst)?);
        let bytes = d.bytes();
        let (write_side, write_pipe, write_rate, read_side, read_rate) = match s.level {
            MemLevel::L0C => (
                Side::Cube,
                Pipe::Fixp,
                rates.l0c_out,
                Side::Vector,
                rates.gm_to_ub,
            ),
            _ => (
                Side::Vector,
                Pipe::Mte3,
                rates.ub_to_gm,
                Side::Cube,
                rates.gm_to_l1,
            ),
        };
        let (write_cycles, write_latency) = self.gm_transfer(
            self.gm_write_latency(),
            bytes,
            1.0 / self.handoff_write_cycles_per_byte(write_rate),
        );
        let write = InstCost {
            pipe: write_pipe,
            cycles: write_cycles,
            latency: write_latency,
            bytes: bytes as u64,
            links: self.handoff_write_links(bytes),
        };
        let (read_cycles, read_latency) = self.gm_transfer(
            self.gm_read_latency(),
            bytes,
            1.0 / self.handoff_read_cycles_per_byte(read_rate),
        );
        let read = InstCost {
            pipe: Pipe::Mte2,
            cycles: read_cycles,
            latency: read_latency,
            bytes: bytes as u64,
            links: self.handoff_read_links(bytes),
        };
        Ok(Placement::HandOff {
            write: Part {
                side: write_side,
                cost: write,
            },
            read: Part {
                side: read_side,
                cost: read,
            },
        })
    }

    /// The device profile.
    pub fn profile(&self) -> &'a DeviceProfile {
        self.profile
    }

    /// `(occupancy, latency after it)` of a GM transfer of `bytes` at `rate` bytes per
    /// cycle with `latency`: with a pipe model the latency follows the occupancy (the pipe
    /// takes the next transfer meanwhile, so queued transfers overlap their latencies);
    /// without one it occupies the pipe, as every plain latency does.
    fn gm_transfer(&self, latency: f64, bytes: usize, rate: f64) -> (f64, f64) {
        let data = bytes as f64 / rate;
        match self.profile.pipe_model {
            Some(_) => (data, latency),
            None => (latency + data, 0.0),
        }
    }

    /// The links a load of `bytes` holds: its hits on the L2 read share, its misses on
    /// the GM share.
    fn load_links(&self, bytes: usize) -> Links {
        let bytes = bytes as f64;
        Links {
            gm: bytes * (1.0 - self.l2_hits) / self.gm_bytes_per_cycle,
            l2_read: if self.l2_hits > 0.0 {
                bytes * self.l2_hits / self.l2_bytes_per_cycle
            } else {
                0.0
            },
            l2_write: 0.0,
        }
    }

    /// The links a store of `bytes` to GM holds: the GM share.
    fn gm_write_links(&self, bytes: usize) -> Links {
        Links {
            gm: bytes as f64 / self.gm_bytes_per_cycle,
            ..Links::default()
        }
    }

    /// The links a hand-off's read back of `bytes` holds: the L2 read share, or the GM
    /// share without an L2 (as [`CostModel::handoff_read_cycles_per_byte`] prices it).
    fn handoff_read_links(&self, bytes: usize) -> Links {
        let cycles = bytes as f64 * self.handoff_read_cycles_per_byte(f64::INFINITY);
        if self.profile.l2.capacity > 0 {
            Links {
                l2_read: cycles,
                ..Links::default()
            }
        } else {
            Links {
                gm: cycles,
                ..Links::default()
            }
        }
    }

    /// The links a hand-off's write of `bytes` holds: the L2 write share, or the GM share
    /// without an L2 write bandwidth.
    fn handoff_write_links(&self, bytes: usize) -> Links {
        let cycles = bytes as f64 * self.handoff_write_cycles_per_byte(f64::INFINITY);
        if self.profile.l2.capacity > 0 && self.l2_write_bytes_per_cycle > 0.0 {
            Links {
                l2_write: cycles,
                ..Links::default()
            }
        } else {
            Links {
                gm: cycles,
                ..Links::default()
            }
        }
    }

    /// Cycles of latency of a transfer that reads GM: the pipe model's, or the plain
    /// `copy_latency_cycles`.
    pub fn gm_read_latency(&self) -> f64 {
        self.profile
            .pipe_model
            .as_ref()
            .map_or(self.profile.copy_latency_cycles, |m| {
                m.gm_read_latency_cycles
            })
    }

    /// Cycles of latency of a transfer that writes GM: the pipe model's, or the plain
    /// `copy_latency_cycles`.
    pub fn gm_write_latency(&self) -> f64 {
        self.profile
            .pipe_model
            .as_ref()
            .map_or(self.profile.copy_latency_cycles, |m| {
                m.gm_write_latency_cycles
            })
    }

    /// Cycles from a hand-off's write reaching GM to the reader's wait on its cross-core
    /// flag releasing: the pipe model's `cross_core_flag_cycles`, 0 without one.
    pub fn cross_core_flag_cycles(&self) -> f64 {
        self.profile
            .pipe_model
            .as_ref()
            .map_or(0.0, |m| m.cross_core_flag_cycles)
    }

    /// Scalar cycles to issue one instruction (any but a loop).
    pub fn issue_cycles(&self) -> f64 {
        self.profile.issue_cycles
    }

    /// Scalar cycles of each loop iteration.
    pub fn loop_overhead_cycles(&self) -> f64 {
        self.profile.loop_overhead_cycles
    }

    /// The cost of `inst`, a non-loop instruction of `program` or a loop (which costs 0
    /// cycles itself, on S).
    ///
    /// # Errors
    ///
    /// [`CostError`]: an undeclared tile, or a copy path or cube dtype the profile has no
    /// rate for.
    pub fn inst(&self, program: &Program, inst: &Inst) -> Result<InstCost, CostError> {
        let ty = |t: TileId| {
            program.tile(t).ok_or(CostError::UndeclaredTile {
                tile: t,
                declared: program.tiles.len(),
            })
        };
        let p = self.profile;
        let rates = &p.copy_bytes_per_cycle;
        let pipe = inst.pipe(program);
        let model = p.pipe_model.as_ref();
        // (occupancy, latency after it, bytes), and the cycles on the GM link.
        let on_core =
            |(cycles, latency, bytes): (f64, f64, u64)| (cycles, latency, bytes, Links::default());
        let copy = |bytes: usize, rate: f64, via_gm: bool| {
            if via_gm {
                let rate = rate.min(self.gm_bytes_per_cycle);
                let (cycles, latency) = self.gm_transfer(self.gm_write_latency(), bytes, rate);
                (cycles, latency, bytes as u64, self.gm_write_links(bytes))
            } else {
                on_core((
                    p.copy_latency_cycles + bytes as f64 / rate,
                    0.0,
                    bytes as u64,
                ))
            }
        };
        // An L1 -> L0A / L0B copy: with a pipe model its latency follows the occupancy.
        let mte1 = |bytes: usize, rate: f64| {
            on_core(match model {
                Some(m) => (bytes as f64 / rate, m.mte1_latency_cycles, bytes as u64),
                None => (
                    p.copy_latency_cycles + bytes as f64 / rate,
                    0.0,
                    bytes as u64,
                ),
            })
        };
        let load = |bytes: usize, rate: f64| {
            let (cycles, latency) = self.gm_transfer(
                self.gm_read_latency(),
                bytes,
                1.0 / self.load_cycles_per_byte(rate),
            );
            (cycles, latency, bytes as u64, self.load_links(bytes))
        };
        let (cycles, latency, bytes, links) = match inst {
            Inst::Load { dst, .. } => {
                let t = ty(*dst)?;
                match t.level {
                    MemLevel::Ub => load(t.bytes(), rates.gm_to_ub),
                    MemLevel::L1 => load(t.bytes(), rates.gm_to_l1),
                    level => return Err(CostError::LoadLevel(level)),
                }
            }
            Inst::Store { src, .. } => {
                let t = ty(*src)?;
                match t.level {
                    MemLevel::Ub => copy(t.bytes(), rates.ub_to_gm, true),
                    MemLevel::L0C => copy(t.bytes(), rates.l0c_out, true),
                    level => return Err(CostError::StoreLevel(level)),
                }
            }
            Inst::Move { dst, src } => {
                let (s, d) = (ty(*src)?, ty(*dst)?);
                let bytes = s.bytes().max(d.bytes());
                match (s.level, d.level) {
                    (MemLevel::L1, MemLevel::L0A) => mte1(bytes, rates.l1_to_l0a),
                    (MemLevel::L1, MemLevel::L0B) => mte1(bytes, rates.l1_to_l0b),
                    (MemLevel::L0C, MemLevel::Ub | MemLevel::L1) => {
                        copy(bytes, rates.l0c_out, false)
                    }
                    (MemLevel::Ub, MemLevel::L1) => copy(bytes, rates.ub_to_l1, false),
                    (from, to) => return Err(CostError::NoCopyPath { from, to }),
                }
            }
            Inst::Extract { dst, src, .. } => {
                let (s, d) = (ty(*src)?, ty(*dst)?);
                match (s.level, d.level) {
                    (MemLevel::L1, MemLevel::L0A) => mte1(d.bytes(), rates.l1_to_l0a),
                    (MemLevel::L1, MemLevel::L0B) => mte1(d.bytes(), rates.l1_to_l0b),
                    (from, to) => return Err(CostError::NoCopyPath { from, to }),
                }
            }
            Inst::Matmul { dst, a, b, .. } => {
                let (a_ty, d) = (ty(*a)?, ty(*dst)?);
                ty(*b)?;
                let (m, k) = matrix_dims(a_ty);
                let n = d.shape.get(1).copied().unwrap_or(1);
                let macs = p
                    .cube_macs(a_ty.dtype)
                    .ok_or_else(|| CostError::CubeDtype {
                        device: p.name.clone(),
                        dtype: a_ty.dtype,
                    })?;
                let compute = (m * k * n) as f64 / macs;
                on_core(match model {
                    Some(model) => (compute, model.cube_latency_cycles, d.bytes() as u64),
                    None => (p.cube_latency_cycles + compute, 0.0, d.bytes() as u64),
                })
            }
            Inst::Loop { .. } => (0.0, 0.0, 0, Links::default()),
            Inst::Reduce { .. } if RowReduce::of(program, inst, p).is_some() => {
                let mut largest = 0;
                for tile in inst.defs().chain(inst.uses()) {
                    largest = largest.max(ty(tile)?.bytes());
                }
                let plan = RowReduce::of(program, inst, p).expect("checked above");
                let (cycles, latency) = self.row_reduce(&plan);
                (cycles, latency, largest as u64, Links::default())
            }
            Inst::TopK { values, src, k, .. } => {
                let (s, v) = (ty(*src)?, ty(*values)?);
                let cycles = self.sort_cycles(program, inst, s, *k);
                on_core((cycles, 0.0, s.bytes().max(v.bytes()) as u64))
            }
            // Along the last axis, the first pair of each row's sort (the lowering's route).
            Inst::ArgReduce { src, axis, .. }
                if program
                    .tile(*src)
                    .is_some_and(|t| *axis + 1 == t.shape.len()) =>
            {
                let s = ty(*src)?;
                on_core((self.sort_cycles(program, inst, s, 1), 0.0, s.bytes() as u64))
            }
            // The vector instructions.
            _ => {
                let mut largest = 0;
                for tile in inst.defs().chain(inst.uses()) {
                    largest = largest.max(ty(tile)?.bytes());
                }
                let repeats = (largest as f64 / p.vector_bytes_per_repeat).ceil();
                on_core(match self.vector_op_cost(program, inst) {
                    Some(op) => (
                        repeats * op.cycles_per_repeat,
                        op.latency_cycles,
                        largest as u64,
                    ),
                    None => {
                        let per_repeat = inst.cycles_per_repeat(&p.vector_cycles_per_repeat);
                        (
                            p.vector_latency_cycles + repeats * per_repeat,
                            0.0,
                            largest as u64,
                        )
                    }
                })
            }
        };
        Ok(InstCost {
            pipe,
            cycles,
            latency,
            bytes,
            links,
        })
    }

    /// The cycles a row reduction occupies the vector pipe and its result's latency after
    /// them: its steps in turn, each step's `repeats` at its cost (the pipe model's entry
    /// for the step's instruction, else the class cost: `simple` for folds, copies and the
    /// mean's scaling, `reduce` for reduces, plus `vector_latency_cycles`), and as a
    /// barrier separates the steps, every step's latency but the last's on the pipe.
    pub fn row_reduce(&self, plan: &RowReduce) -> (f64, f64) {
        let p = self.profile;
        let model = p.pipe_model.as_ref();
        let mut cycles = 0.0;
        let mut latency = 0.0;
        for step in &plan.steps {
            cycles += latency;
            let repeats = step.repeats as f64;
            match model.and_then(|m| m.vector_op(plan.step_name(step.kind), plan.dtype)) {
                Some(op) => {
                    cycles += repeats * op.cycles_per_repeat;
                    latency = op.latency_cycles;
                }
                None => {
                    let class = match step.kind {
                        StepKind::Reduce | StepKind::GroupReduce => {
                            p.vector_cycles_per_repeat.reduce
                        }
                        StepKind::Fold | StepKind::Copy | StepKind::Brcb | StepKind::Scale => {
                            p.vector_cycles_per_repeat.simple
                        }
                    };
                    cycles += p.vector_latency_cycles + repeats * class;
                    latency = 0.0;
                }
            }
        }
        (cycles, latency)
    }

    /// The cycles of a sort of the rows of `src` keeping `k` ([`TopKPlan`]): each step one
    /// instruction over all rows, its repeats at the pipe model's entry for `inst` or the
    /// profile's reduce cost, after the vector latency.
    fn sort_cycles(&self, program: &Program, inst: &Inst, src: &TileType, k: usize) -> f64 {
        let p = self.profile;
        let row_len = src.shape.last().copied().unwrap_or(1);
        let plan = TopKPlan::new(src.numel() / row_len.max(1), row_len, k);
        let (per_repeat, latency) = self.vector_op_cost(program, inst).map_or(
            (p.vector_cycles_per_repeat.reduce, p.vector_latency_cycles),
            |op| (op.cycles_per_repeat, op.latency_cycles),
        );
        plan.steps
            .iter()
            .map(|(_, repeats)| latency + (plan.rows * repeats) as f64 * per_repeat)
            .sum()
    }

    /// The pipe model's entry for vector instruction `inst`, if the profile has a pipe
    /// model with one for its name and dtype (the source's dtype for a cast, the result's
    /// otherwise).
    fn vector_op_cost(
        &self,
        program: &Program,
        inst: &Inst,
    ) -> Option<crate::device::VectorOpCost> {
        let model = self.profile.pipe_model.as_ref()?;
        let name = inst.vector_op_name()?;
        let tile = match inst {
            Inst::Cast { src, .. } => *src,
            _ => inst.defs().next()?,
        };
        model.vector_op(name, program.tile(tile)?.dtype)
    }

    /// The busy cycles of each pipe in one run of `body` (one block program for
    /// `program.body`): every instruction's cycles on its pipe, its issue on S, and every
    /// loop iteration's overhead on S, loop bodies counted once per iteration; on a split
    /// core summed over the cube and the vector side (see [`CostModel::busy_by_side`]).
    /// Only the pipes with work appear.
    ///
    /// Busy cycles do not depend on the order instructions run in, so any schedule of the
    /// body (the simulator's included) keeps each pipe busy exactly this long.
    ///
    /// # Errors
    ///
    /// The first instruction [`CostModel::inst`] cannot time.
    pub fn busy(&self, program: &Program, body: &[Inst]) -> Result<BTreeMap<Pipe, f64>, CostError> {
        let mut busy = BTreeMap::new();
        for ((_, pipe), cycles) in self.busy_by_side(program, body)? {
            *busy.entry(pipe).or_insert(0.0) += cycles;
        }
        Ok(busy)
    }

    /// [`CostModel::busy`] per side of the AI core: each part of an instruction
    /// ([`CostModel::placement`]) on its side's pipe, its issue on that side's S, and each
    /// loop iteration's overhead on the S of every side with instructions in the loop (on a
    /// split core each side runs its own loop; a loop with no instructions charges the cube
    /// side).
    ///
    /// # Errors
    ///
    /// The first instruction [`CostModel::inst`] cannot time.
    pub fn busy_by_side(
        &self,
        program: &Program,
        body: &[Inst],
    ) -> Result<BTreeMap<(Side, Pipe), f64>, CostError> {
        let mut busy = BTreeMap::new();
        self.add_busy(program, body, 1.0, &mut busy)?;
        Ok(busy)
    }

    /// The sides that run a loop's iterations: every side with instructions in `body` (the
    /// one core when coupled; the cube side for an empty loop on a split core).
    pub fn loop_sides(&self, program: &Program, body: &[Inst]) -> Vec<Side> {
        if self.profile.cube_vector == CubeVector::Coupled {
            return vec![Side::Core];
        }
        let present = sides_in(program, body, self.profile.cube_vector);
        let sides: Vec<Side> = Side::ALL.into_iter().filter(|s| present[*s]).collect();
        if sides.is_empty() {
            vec![Side::Cube]
        } else {
            sides
        }
    }

    fn add_busy(
        &self,
        program: &Program,
        body: &[Inst],
        trips: f64,
        into: &mut BTreeMap<(Side, Pipe), f64>,
    ) -> Result<(), CostError> {
        for inst in body {
            if let Inst::Loop { count, body, .. } = inst {
                let count = *count as f64;
                for side in self.loop_sides(program, body) {
                    *into.entry((side, Pipe::S)).or_insert(0.0) +=
                        trips * count * self.loop_overhead_cycles();
                }
                self.add_busy(program, body, trips * count, into)?;
            } else {
                for part in self.placement(program, inst)?.parts() {
                    *into.entry((part.side, Pipe::S)).or_insert(0.0) += trips * self.issue_cycles();
                    *into.entry((part.side, part.cost.pipe)).or_insert(0.0) +=
                        trips * part.cost.cycles;
                }
            }
        }
        Ok(())
    }
}

/// `(m, k)` of a cube operand: `[m, k]`, `[k]` as one row, anything else as a column.
fn matrix_dims(ty: &TileType) -> (usize, usize) {
    match ty.shape.as_slice() {
        [m, k] => (*m, *k),
        [k] => (1, *k),
        _ => (ty.numel(), 1),
    }
}
