//! The cost model of kernel instructions: how many cycles each one occupies its pipe on a
//! device profile. The simulator's scheduler, the estimator's pipe model and device
//! lowerings all call it, so they cannot drift apart.
//!
//! Every instruction occupies its pipe ([`Inst::pipe`]) for:
//!
//! - copies: `copy_latency_cycles + bytes / rate` for the path (GM -> UB, GM -> L1,
//!   L1 -> L0A, L1 -> L0B, L0C out, UB -> GM, UB -> L1); paths to or from GM run at most at
//!   `memory_bandwidth / clock_hz / cores in use` bytes per cycle, as the cores share GM.
//!   `bytes` is the larger of the source and destination tile.
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

/// The costs of instructions on one device profile, for a grid spread over
/// [`cores_in_use`] cores (which share the GM bandwidth).
///
/// ```
/// use pto_op::DeviceProfile;
/// use pto_op::kernel::cost::CostModel;
/// let kirin = DeviceProfile::builtin("kirin9030").unwrap();
/// let model = CostModel::new(&kirin, 8);
/// assert_eq!(model.issue_cycles(), kirin.issue_cycles);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct CostModel<'a> {
    profile: &'a DeviceProfile,
    gm_bytes_per_cycle: f64,
}

impl<'a> CostModel<'a> {
    /// The model of `profile` running a grid of `grid` block programs.
    pub fn new(profile: &'a DeviceProfile, grid: usize) -> CostModel<'a> {
        let cores = cores_in_use(grid, profile);
        CostModel {
            profile,
            gm_bytes_per_cycle: profile.memory_bandwidth / profile.clock_hz / cores as f64,
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
        let (cycles, bytes) = match inst {
            Inst::Load { dst, .. } => {
                let t = ty(*dst)?;
                match t.level {
                    MemLevel::Ub => copy(t.bytes(), rates.gm_to_ub, true),
                    MemLevel::L1 => copy(t.bytes(), rates.gm_to_l1, true),
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
