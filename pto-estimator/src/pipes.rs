//! The pipe model of a traced kernel: what the peaks of the roofline leave out.
//!
//! Each instruction costs its pipe the cycles the device profile gives it (the simulator's
//! costs, see `pto_backends::sim::schedule`): a copy `copy_latency_cycles + bytes / rate`
//! (paths to or from GM at most `memory_bandwidth / clock_hz / cores in use`), a vector
//! instruction `vector_latency_cycles + repeats * cycles per repeat`, a matmul
//! `cube_latency_cycles + m * k * n / cube_macs`. Without a schedule, one block program
//! is then timed as:
//!
//! - straight-line code: the sum of its instructions, as a block's loads, compute and
//!   stores depend on each other;
//! - a loop: one iteration in full (filling the pipes), then each further iteration at the
//!   pace of its busiest pipe, the scalar pipe's issue and loop overhead included;
//!
//! and the op as `ceil(grid / cores in use)` block programs back to back on the busiest
//! core. No data-dependent cost: durations depend on tile types only.

use pto_op::DeviceProfile;
use pto_op::kernel::ir::{Inst, MemLevel, Pipe, Program};

/// The pipe-model time of `program` on `device`, in seconds.
///
/// ```
/// use pto_op::{DType, DeviceProfile, Shape, TensorType};
/// let kirin = DeviceProfile::builtin("kirin9030").unwrap();
/// let t = TensorType { shape: Shape::from([64, 128]), dtype: DType::F16 };
/// let add = pto_op::registry::find("std.add").unwrap();
/// let program = add.trace_kernel(&[t.clone(), t], &Default::default()).unwrap();
/// // Two loads, a store and their latencies: more than the bytes at full bandwidth.
/// assert!(pto_estimator::pipes::pipeline_seconds(&program, &kirin) > 3.0 * 16384.0 / 6.8e10);
/// ```
pub fn pipeline_seconds(program: &Program, device: &DeviceProfile) -> f64 {
    let cores = (device.ai_cores as usize).min(program.grid).max(1);
    let costs = Costs {
        program,
        device,
        gm_bytes_per_cycle: device.memory_bandwidth / device.clock_hz / cores as f64,
    };
    let per_program = costs.straight(&program.body);
    program.grid.div_ceil(cores) as f64 * per_program / device.clock_hz
}

struct Costs<'a> {
    program: &'a Program,
    device: &'a DeviceProfile,
    gm_bytes_per_cycle: f64,
}

impl Costs<'_> {
    /// Cycles of straight-line code: every instruction after the one before.
    fn straight(&self, body: &[Inst]) -> f64 {
        body.iter()
            .map(|inst| match inst {
                Inst::Loop { count, body, .. } => self.looped(*count, body),
                _ => self.device.issue_cycles + self.cycles(inst),
            })
            .sum()
    }

    /// Cycles of a loop: one iteration in full, the rest at the busiest pipe's pace.
    fn looped(&self, count: usize, body: &[Inst]) -> f64 {
        if count == 0 {
            return 0.0;
        }
        let first = self.device.loop_overhead_cycles + self.straight(body);
        let mut busy: Vec<(Pipe, f64)> = Vec::new();
        let mut scalar = self.device.loop_overhead_cycles;
        for inst in body {
            let (pipe, cycles) = match inst {
                // A nested loop occupies the pipes in turn: count it whole, on S.
                Inst::Loop { count, body, .. } => (Pipe::S, self.looped(*count, body)),
                _ => (inst.pipe(self.program), self.cycles(inst)),
            };
            scalar += self.device.issue_cycles;
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
        first + (count - 1) as f64 * pace
    }

    /// Cycles `inst` occupies its pipe (0 for what the profile cannot run).
    fn cycles(&self, inst: &Inst) -> f64 {
        let p = self.device;
        let rates = &p.copy_bytes_per_cycle;
        let bytes = |t| self.program.tile(t).map_or(0, |ty| ty.bytes()) as f64;
        let level = |t| self.program.tile(t).map(|ty| ty.level);
        let copy = |bytes: f64, rate: f64, via_gm: bool| {
            let rate = if via_gm {
                rate.min(self.gm_bytes_per_cycle)
            } else {
                rate
            };
            p.copy_latency_cycles + bytes / rate
        };
        match inst {
            Inst::Load { dst, .. } => match level(*dst) {
                Some(MemLevel::L1) => copy(bytes(*dst), rates.gm_to_l1, true),
                _ => copy(bytes(*dst), rates.gm_to_ub, true),
            },
            Inst::Store { src, .. } => match level(*src) {
                Some(MemLevel::L0C) => copy(bytes(*src), rates.l0c_out, true),
                _ => copy(bytes(*src), rates.ub_to_gm, true),
            },
            Inst::Move { dst, src } => {
                let rate = match (level(*src), level(*dst)) {
                    (Some(MemLevel::L1), Some(MemLevel::L0A)) => rates.l1_to_l0a,
                    (Some(MemLevel::L1), Some(MemLevel::L0B)) => rates.l1_to_l0b,
                    (Some(MemLevel::L0C), _) => rates.l0c_out,
                    _ => rates.ub_to_l1,
                };
                copy(bytes(*src).max(bytes(*dst)), rate, false)
            }
            Inst::Matmul { dst, a, .. } => {
                let (Some(a), Some(d)) = (self.program.tile(*a), self.program.tile(*dst)) else {
                    return 0.0;
                };
                let (m, k) = match a.shape.as_slice() {
                    [m, k] => (*m, *k),
                    [k] => (1, *k),
                    _ => (a.numel(), 1),
                };
                let n = d.shape.get(1).copied().unwrap_or(1);
                let macs = p.cube_macs(a.dtype).unwrap_or(f64::INFINITY);
                p.cube_latency_cycles + (m * k * n) as f64 / macs
            }
            Inst::Loop { count, body, .. } => self.looped(*count, body),
            _ => {
                let largest = crate::derive::vector_operand_bytes(self.program, inst) as f64;
                let repeats = (largest / p.vector_bytes_per_repeat).ceil();
                p.vector_latency_cycles
                    + repeats * inst.cycles_per_repeat(&p.vector_cycles_per_repeat)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pto_op::{DType, Shape, TensorType};

    fn add_program(rows: usize) -> Program {
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
        // One row per block program at 4096 columns: 2 programs fill both cores, 4 take
        // twice as long.
        let (two, four) = (add_program(2), add_program(4));
        assert_eq!((two.grid, four.grid), (2, 4));
        let ratio = pipeline_seconds(&four, &kirin) / pipeline_seconds(&two, &kirin);
        assert!((ratio - 2.0).abs() < 1e-9, "{ratio}");
    }

    #[test]
    fn copy_latency_counts_once_per_copy() {
        let kirin = DeviceProfile::builtin("kirin9030").expect("built-in");
        let mut slower = kirin.clone();
        slower.copy_latency_cycles += 100.0;
        let program = add_program(2);
        // Two loads and a store per block program, one program per core.
        let extra = pipeline_seconds(&program, &slower) - pipeline_seconds(&program, &kirin);
        assert!((extra * kirin.clock_hz - 300.0).abs() < 1e-6, "{extra}");
    }
}
