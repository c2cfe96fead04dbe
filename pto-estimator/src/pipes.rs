//! The pipe model of a traced kernel: what the peaks of the roofline leave out.
//!
//! Each instruction costs its pipe the cycles of the kernel layer's cost model
//! ([`pto_op::kernel::cost`], the one the simulator schedules with): copies by bytes, path
//! and latency, vector instructions by 256-byte repeats and kind, matmuls by
//! multiply-accumulates, `issue_cycles` of S per instruction and `loop_overhead_cycles` per
//! loop iteration. Without a schedule, one block program is then timed as:
//!
//! - straight-line code: the sum of its instructions, as a block's loads, compute and
//!   stores depend on each other (a hand-off between the cube and vector cores of a split
//!   profile: its write and its read, [`CostModel::placement`]);
//! - a loop: one iteration in full (filling the pipes), then each further iteration at the
//!   pace of its busiest pipe, the scalar pipe's issue and loop overhead included (on a
//!   split profile, of the busiest pipe of either side);
//!
//! and the op as `ceil(grid / cores in use)` block programs back to back on the busiest
//! core. No data-dependent cost: durations depend on tile types only. The busy cycles of
//! each pipe ([`pipe_cycles`]) are the simulator's, by construction.

use std::collections::BTreeMap;

use pto_op::DeviceProfile;
use pto_op::kernel::ValidProgram;
use pto_op::kernel::cost::{self, CostError, CostModel, PerSide, Side};
use pto_op::kernel::ir::{Inst, Pipe, Program};

/// The pipe-model time of `program` on `device`, in seconds.
///
/// ```
/// use pto_op::{DType, DeviceProfile, Shape, TensorType};
/// let kirin = DeviceProfile::builtin("kirin9030").unwrap();
/// let t = TensorType { shape: Shape::from([64, 128]), dtype: DType::F16 };
/// let add = pto_op::registry::find("std.add").unwrap();
/// let program = add.trace_kernel(&[t.clone(), t], &Default::default()).unwrap();
/// // Two loads, a store and their latencies: more than the bytes at full bandwidth.
/// let seconds = pto_estimator::pipes::pipeline_seconds(&program, &kirin).unwrap();
/// assert!(seconds > 3.0 * 16384.0 / 6.8e10);
/// ```
///
/// # Errors
///
/// The cost model's: an instruction the device cannot run (a cube dtype it has no rate
/// for).
pub fn pipeline_seconds(program: &ValidProgram, device: &DeviceProfile) -> Result<f64, CostError> {
    let cores = cost::cores_in_use(program.grid, device);
    let pace = Pace {
        program,
        costs: CostModel::new(device, program),
    };
    let per_program = pace.straight(&program.body)?;
    Ok(program.grid.div_ceil(cores) as f64 * per_program / device.clock_hz)
}

/// The busy cycles of each pipe in one block program of `program` on `device`: the cost
/// model's [`CostModel::busy`], the same cycles the simulator's schedule keeps each pipe
/// busy.
///
/// # Errors
///
/// The cost model's, as for [`pipeline_seconds`].
pub fn pipe_cycles(
    program: &ValidProgram,
    device: &DeviceProfile,
) -> Result<BTreeMap<Pipe, f64>, CostError> {
    CostModel::new(device, program).busy(program, &program.body)
}

struct Pace<'a> {
    program: &'a Program,
    costs: CostModel<'a>,
}

impl Pace<'_> {
    /// Cycles of straight-line code: every instruction after the one before.
    fn straight(&self, body: &[Inst]) -> Result<f64, CostError> {
        let mut total = 0.0;
        for inst in body {
            total += match inst {
                Inst::Loop { count, body, .. } => self.looped(*count, body)?,
                _ => self
                    .costs
                    .placement(self.program, inst)?
                    .parts()
                    .map(|part| self.costs.issue_cycles() + part.cost.cycles + part.cost.latency)
                    .sum(),
            };
        }
        Ok(total)
    }

    /// Cycles of a loop: one iteration in full, the rest at the busiest pipe's pace.
    fn looped(&self, count: usize, body: &[Inst]) -> Result<f64, CostError> {
        if count == 0 {
            return Ok(0.0);
        }
        let overhead = self.costs.loop_overhead_cycles();
        let first = overhead + self.straight(body)?;
        let mut busy: Vec<((Side, Pipe), f64)> = Vec::new();
        let mut scalar = PerSide::filled(0.0);
        for side in self.costs.loop_sides(self.program, body) {
            scalar[side] = overhead;
        }
        let mut add =
            |key: (Side, Pipe), cycles: f64| match busy.iter_mut().find(|(k, _)| *k == key) {
                Some((_, total)) => *total += cycles,
                None => busy.push((key, cycles)),
            };
        for inst in body {
            match inst {
                // A nested loop occupies the pipes in turn: count it whole, on S (of the
                // cube side when split: its sides run it in parallel).
                Inst::Loop { count, body, .. } => {
                    let side = self.costs.loop_sides(self.program, body)[0];
                    scalar[side] += self.costs.issue_cycles();
                    add((side, Pipe::S), self.looped(*count, body)?);
                }
                _ => {
                    for part in self.costs.placement(self.program, inst)?.parts() {
                        scalar[part.side] += self.costs.issue_cycles();
                        add((part.side, part.cost.pipe), part.cost.cycles);
                    }
                }
            };
        }
        let pace = busy
            .iter()
            .map(|((side, pipe), cycles)| {
                if *pipe == Pipe::S {
                    cycles + scalar[*side]
                } else {
                    *cycles
                }
            })
            .fold(scalar.iter().copied().fold(0.0, f64::max), f64::max);
        Ok(first + (count - 1) as f64 * pace)
    }
}
