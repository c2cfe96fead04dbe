//! The pipe model of a traced kernel: what the peaks of the roofline leave out.
//!
//! Each instruction costs its pipe the cycles of the kernel layer's cost model
//! ([`pto_op::kernel::cost`], the one the simulator schedules with): copies by bytes, path
//! and latency, vector instructions by 256-byte repeats and kind, matmuls by
//! multiply-accumulates, `issue_cycles` of S per instruction and `loop_overhead_cycles` per
//! loop iteration. Without a schedule, one block program is then timed as:
//!
//! - straight-line code: the sum of its instructions, as a block's loads, compute and
//!   stores depend on each other;
//! - a loop: one iteration in full (filling the pipes), then each further iteration at the
//!   pace of its busiest pipe, the scalar pipe's issue and loop overhead included;
//!
//! and the op as `ceil(grid / cores in use)` block programs back to back on the busiest
//! core. No data-dependent cost: durations depend on tile types only. The busy cycles of
//! each pipe ([`pipe_cycles`]) are the simulator's, by construction.

use std::collections::BTreeMap;

use pto_op::DeviceProfile;
use pto_op::kernel::ValidProgram;
use pto_op::kernel::cost::{self, CostError, CostModel};
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
                _ => self.costs.issue_cycles() + self.costs.inst(self.program, inst)?.cycles,
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
        let mut busy: Vec<(Pipe, f64)> = Vec::new();
        let mut scalar = overhead;
        for inst in body {
            let (pipe, cycles) = match inst {
                // A nested loop occupies the pipes in turn: count it whole, on S.
                Inst::Loop { count, body, .. } => (Pipe::S, self.looped(*count, body)?),
                _ => {
                    let cost = self.costs.inst(self.program, inst)?;
                    (cost.pipe, cost.cycles)
                }
            };
            scalar += self.costs.issue_cycles();
            match busy.iter_mut().find(|(p, _)| *p == pipe) {
                Some((_, total)) => *total += cycles,
                None => busy.push((pipe, cycles)),
            }
        }
        let pace = busy
            .iter()
            .map(|(pipe, cycles)| {
                if *pipe == Pipe::S {
                    cycles + scalar
                } else {
                    *cycles
                }
            })
            .fold(scalar, f64::max);
        Ok(first + (count - 1) as f64 * pace)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pto_op::{DType, Shape, TensorType};

    fn add_program(rows: usize) -> ValidProgram {
        let t = TensorType {
            shape: Shape::from([rows, 4096]),
            dtype: DType::F16,
        };
        pto_op::registry::find("std.add")
            .expect("std.add is linked")
            .trace_kernel(&[t.clone(), t], &Default::default())
            .expect("std.add traces")
    }

    #[test]
    fn block_programs_beyond_the_cores_run_back_to_back() {
        let kirin = DeviceProfile::builtin("kirin9030").expect("built-in");
        // One row per block program at 4096 columns, on the one core of kirin9030: 4
        // programs take twice as long as 2.
        let (two, four) = (add_program(2), add_program(4));
        assert_eq!((two.grid, four.grid), (2, 4));
        let ratio =
            pipeline_seconds(&four, &kirin).unwrap() / pipeline_seconds(&two, &kirin).unwrap();
        assert!((ratio - 2.0).abs() < 1e-9, "{ratio}");
    }

    #[test]
    fn copy_latency_counts_once_per_copy() {
        let kirin = DeviceProfile::builtin("kirin9030").expect("built-in");
        let mut slower = kirin.clone();
        slower.copy_latency_cycles += 100.0;
        let program = add_program(1);
        // Two loads and a store in the one block program.
        let extra = pipeline_seconds(&program, &slower).unwrap()
            - pipeline_seconds(&program, &kirin).unwrap();
        assert!((extra * kirin.clock_hz - 300.0).abs() < 1e-6, "{extra}");
    }
}
