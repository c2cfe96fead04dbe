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
//! - vector: `vector_latency_cycles + repeats * cycles_per_repeat(kind)`, with
//!   `repeats = ceil(bytes of the largest operand or result / vector_bytes_per_repeat)`
//!   and the kind from [`Inst::cycles_per_repeat`].
//! - cube: `cube_latency_cycles + m * k * n / cube_macs(dtype of a)`.
//! - scalar: the S pipe spends `issue_cycles` on every instruction but a loop, and
//!   `loop_overhead_cycles` on every loop iteration; a loop itself occupies no pipe.
//!
//! Durations depend only on tile types, never on data or the program id.

use std::collections::BTreeMap;

use crate::device::DeviceProfile;
use crate::dtype::DType;

use super::ir::{Inst, MemLevel, Pipe, Program, TileId, TileType};

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
    /// Bytes moved (copies) or of the largest operand or result (compute).
    pub bytes: u64,
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
/// use pto_op::DeviceProfile;
/// use pto_op::kernel::cost::l2_hit_share;
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
    fn walk(program: &Program, body: &[Inst], trips: u64, loaded: &mut BTreeMap<u32, u64>) {
        for inst in body {
            match inst {
                Inst::Loop { count, body, .. } => {
                    walk(program, body, trips.saturating_mul(*count as u64), loaded)
                }
                Inst::Load { dst, src, .. } => {
                    let bytes = program.tile(*dst).map_or(0, |t| t.bytes() as u64);
                    let entry = loaded.entry(src.0).or_insert(0);
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
            let size = program.global(super::ir::GlobalId(*global)).map_or(0, |g| {
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
/// use pto_op::DeviceProfile;
/// use pto_op::kernel::cost::CostModel;
/// use pto_op::kernel::ir::Program;
/// let kirin = DeviceProfile::builtin("kirin9030").unwrap();
/// let program = Program { op: "doc.empty".into(), grid: 8, globals: vec![], tiles: vec![], vars: 0, body: vec![] };
/// let model = CostModel::new(&kirin, &program);
/// assert_eq!(model.issue_cycles(), kirin.issue_cycles);
/// assert_eq!(model.l2_hit_share(), 0.0);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct CostModel<'a> {
    profile: &'a DeviceProfile,
    gm_bytes_per_cycle: f64,
    l2_bytes_per_cycle: f64,
    l2_hits: f64,
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
            l2_hits: l2_hit_share(profile, loaded, distinct),
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

    /// The device profile.
    pub fn profile(&self) -> &'a DeviceProfile {
        self.profile
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
        let copy = |bytes: usize, rate: f64, via_gm: bool| {
            let rate = if via_gm {
                rate.min(self.gm_bytes_per_cycle)
            } else {
                rate
            };
            (p.copy_latency_cycles + bytes as f64 / rate, bytes as u64)
        };
        let load = |bytes: usize, rate: f64| {
            (
                p.copy_latency_cycles + bytes as f64 * self.load_cycles_per_byte(rate),
                bytes as u64,
            )
        };
        let (cycles, bytes) = match inst {
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
                let rate = match (s.level, d.level) {
                    (MemLevel::L1, MemLevel::L0A) => rates.l1_to_l0a,
                    (MemLevel::L1, MemLevel::L0B) => rates.l1_to_l0b,
                    (MemLevel::L0C, MemLevel::Ub | MemLevel::L1) => rates.l0c_out,
                    (MemLevel::Ub, MemLevel::L1) => rates.ub_to_l1,
                    (from, to) => return Err(CostError::NoCopyPath { from, to }),
                };
                copy(s.bytes().max(d.bytes()), rate, false)
            }
            Inst::Extract { dst, src, .. } => {
                let (s, d) = (ty(*src)?, ty(*dst)?);
                let rate = match (s.level, d.level) {
                    (MemLevel::L1, MemLevel::L0A) => rates.l1_to_l0a,
                    (MemLevel::L1, MemLevel::L0B) => rates.l1_to_l0b,
                    (from, to) => return Err(CostError::NoCopyPath { from, to }),
                };
                copy(d.bytes(), rate, false)
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
                (
                    p.cube_latency_cycles + (m * k * n) as f64 / macs,
                    d.bytes() as u64,
                )
            }
            Inst::Loop { .. } => (0.0, 0),
            // The vector instructions.
            _ => {
                let mut largest = 0;
                for tile in inst.defs().into_iter().chain(inst.uses()) {
                    largest = largest.max(ty(tile)?.bytes());
                }
                let repeats = (largest as f64 / p.vector_bytes_per_repeat).ceil();
                let per_repeat = inst.cycles_per_repeat(&p.vector_cycles_per_repeat);
                (
                    p.vector_latency_cycles + repeats * per_repeat,
                    largest as u64,
                )
            }
        };
        Ok(InstCost {
            pipe,
            cycles,
            bytes,
        })
    }

    /// The busy cycles of each pipe in one run of `body` (one block program for
    /// `program.body`): every instruction's cycles on its pipe, its issue on S, and every
    /// loop iteration's overhead on S, loop bodies counted once per iteration. Only the
    /// pipes with work appear.
    ///
    /// Busy cycles do not depend on the order instructions run in, so any schedule of the
    /// body (the simulator's included) keeps each pipe busy exactly this long.
    ///
    /// # Errors
    ///
    /// The first instruction [`CostModel::inst`] cannot time.
    pub fn busy(&self, program: &Program, body: &[Inst]) -> Result<BTreeMap<Pipe, f64>, CostError> {
        let mut busy = BTreeMap::new();
        self.add_busy(program, body, 1.0, &mut busy)?;
        Ok(busy)
    }

    fn add_busy(
        &self,
        program: &Program,
        body: &[Inst],
        trips: f64,
        into: &mut BTreeMap<Pipe, f64>,
    ) -> Result<(), CostError> {
        for inst in body {
            if let Inst::Loop { count, body, .. } = inst {
                let count = *count as f64;
                *into.entry(Pipe::S).or_insert(0.0) += trips * count * self.loop_overhead_cycles();
                self.add_busy(program, body, trips * count, into)?;
            } else {
                let cost = self.inst(program, inst)?;
                *into.entry(Pipe::S).or_insert(0.0) += trips * self.issue_cycles();
                *into.entry(cost.pipe).or_insert(0.0) += trips * cost.cycles;
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
