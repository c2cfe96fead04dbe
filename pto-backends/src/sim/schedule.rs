//! The timing model: cycles of one block program on one core, per pipe, and of the whole
//! op spread over the AI cores.
//!
//! Every instruction occupies its pipe ([`Inst::pipe`]) for the cycles of the kernel layer's
//! cost model ([`pto_op::kernel::cost`], which the estimator's pipe model calls too): copies
//! by bytes, path and latency, vector instructions by 256-byte repeats and kind, matmuls by
//! multiply-accumulates. The S pipe issues instructions in program order, `issue_cycles`
//! each, and spends `loop_overhead_cycles` per loop iteration. An instruction cannot start
//! before it is issued; as S runs ahead of the other pipes, this only delays anything when
//! S is the bottleneck.
//!
//! An instruction's result is ready when its pipe occupation ends, plus its latency
//! ([`pto_op::kernel::cost::InstCost::latency`], non-zero only on a profile with a pipe
//! model): the pipe takes the next instruction meanwhile, so independent instructions
//! overlap their latencies and a dependent one waits for them. GM transfers are no
//! exception: a load's or a store's GM latency follows its bytes, so the MTE2 queue takes
//! the next load once the previous one's bytes are moved.
//!
//! A transfer to or from GM also holds its AI core's links ([`Links`]: the GM share, the
//! L2 read share, the L2 write share) for its bytes at each share: it starts only when its
//! pipe and every link it holds are idle, so the transfers of both sides of a split core
//! and of all their MTE pipes share the AI core's part of the chip's bandwidth, their
//! times adding up when they would overlap (the cores in use split the chip's bandwidth
//! evenly: [`pto_op::kernel::cost`]).
//!
//! An instruction may start once it is issued, its operands are ready and, for a tile
//! defined in a loop body, the buffer it overwrites is no longer read: in iteration i+1 it
//! waits for the last use of the same tile in iteration i, or in iteration i-1 when the tile
//! is double-buffered ([`MemoryPlan::is_double_buffered`]). It then takes the earliest idle
//! interval of its pipe from that time: a pipe runs independent instructions in the order
//! they become ready, as a software-pipelining lowering would order them, so data and buffer
//! reuse are the only dependencies. Loops are unrolled, so iterations overlap across pipes
//! and buffer reuse is what limits that overlap.
//!
//! On a profile whose cube and vector are split (`CubeVector::Split`, Ascend 910B), the
//! cube core and the vector cores of an AI core each have their own pipes, MTE2 queue and
//! scalar unit issuing their own instructions in program order ([`CostModel::placement`]
//! says which side runs what). A move L0C -> UB or UB -> L1 is a hand-off through GM: the
//! writer's store (FIXP or MTE3) on one side, then the reader's MTE2 load on the other,
//! which starts no earlier than the write has completed plus the cross-core flag's
//! cycles (the pipe model's `cross_core_flag_cycles`: from the writer's set once its bytes
//! are in GM to the reader's wait releasing; assumed, see the profile's notes). The
//! reader's wait holds only the read: the reader's other instructions go on, as a
//! software-pipelined kernel waits for a stage's flag while it works on another stage.
//! Each side loops over the iterations of a loop with instructions of its own, paying the
//! loop overhead on its scalar unit. The report counts the bytes handed off
//! ([`SimReport::handoff_bytes`]).
//!
//! Durations depend only on tile types, never on data or the program id, so every block
//! program has the same timeline: it is scheduled once. Block programs are spread
//! round-robin over the cores in use (`min(ai_cores, grid)`) and run back to back on each.
//!
//! The kernel's launch ([`DeviceProfile::launch`]) is charged once per run, apart from the
//! cycles of the cores ([`SimReport::launch_cycles`]): its `seconds` for every kernel, and
//! its `mix_seconds` more for a mix kernel, one with work on both the cube core and the
//! vector cores of a split core. A device-side timing of the kernel (a profiler's task
//! time) is [`SimReport::seconds`]; a host timing around the launch
//! [`SimReport::total_seconds`].

use std::collections::BTreeMap;
use std::fmt;

use pto_op::kernel::ValidProgram;
use pto_op::kernel::cost::{self, CostModel, Links, PerSide, Placement, Side};
use pto_op::kernel::ir::{IdVec, Inst, MemLevel, Pipe, Program, TileId, VarId};
use pto_op::{CubeVector, DeviceProfile};
use serde::{Deserialize, Serialize};

use super::error::SimError;
use super::memory::MemoryPlan;

/// The timing of one op run on the simulator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimReport {
    /// The op.
    pub op: String,
    /// The device profile's name.
    pub device: String,
    /// Total cycles of the kernel on the device: the busiest core's (the launch apart).
    pub cycles: u64,
    /// `cycles` at the profile's clock.
    pub seconds: f64,
    /// Cycles of launching the kernel, once per run before its first block program: the
    /// profile's [`launch`](DeviceProfile::launch) cost, with its mix part when the kernel
    /// runs on both the cube and the vector cores of a split core.
    #[serde(default)]
    pub launch_cycles: u64,
    /// `launch_cycles` at the profile's clock.
    #[serde(default)]
    pub launch_seconds: f64,
    /// Busy cycles of each pipe, summed over the cores.
    pub per_pipe_busy: BTreeMap<Pipe, u64>,
    /// Cycles of each AI core (0 for cores without block programs).
    pub per_core_cycles: Vec<u64>,
    /// The busiest pipe (on a split core, of the busiest side).
    pub bound: Pipe,
    /// How the profile's cube and vector are arranged.
    #[serde(default)]
    pub cube_vector: CubeVector,
    /// Bytes handed between the cube core and the vector cores through GM over the whole
    /// grid (0 unless split): each is written to GM by one side and read back by the other,
    /// so the GM / L2 traffic is twice this.
    #[serde(default)]
    pub handoff_bytes: u64,
    /// The peak working set of each on-core level, in bytes.
    pub peak_bytes: BTreeMap<MemLevel, u64>,
    /// How many loops are double-buffered.
    pub double_buffered_loops: usize,
    /// Instructions executed over the whole grid (loop bodies counted per iteration, loops
    /// themselves not).
    pub instructions: u64,
}

impl SimReport {
    /// The kernel's time with its launch: what a host timing one run around the launch
    /// sees.
    pub fn total_seconds(&self) -> f64 {
        self.seconds + self.launch_seconds
    }

    /// The share of the cores' time that `pipe` is busy, in [0, 1]: its busy cycles over
    /// the sum of [`per_core_cycles`](SimReport::per_core_cycles).
    pub fn utilisation(&self, pipe: Pipe) -> f64 {
        let core_cycles: u64 = self.per_core_cycles.iter().sum();
        let busy = self.per_pipe_busy.get(&pipe).copied().unwrap_or(0);
        if core_cycles == 0 {
            0.0
        } else {
            busy as f64 / core_cycles as f64
        }
    }
}

impl fmt::Display for SimReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} on {}: {} cycles ({:.3} us), bound by {}",
            self.op,
            self.device,
            self.cycles,
            self.seconds * 1e6,
            self.bound
        )?;
        if self.launch_cycles > 0 {
            writeln!(
                f,
                "launch: {} cycles ({:.3} us) once per kernel, before it; with it {:.3} us",
                self.launch_cycles,
                self.launch_seconds * 1e6,
                self.total_seconds() * 1e6
            )?;
        }
        writeln!(f, "{:<8} {:>14} {:>7}", "pipe", "busy cycles", "util")?;
        for pipe in Pipe::ALL {
            writeln!(
                f,
                "{:<8} {:>14} {:>6.1}%",
                pipe.name(),
                self.per_pipe_busy.get(&pipe).copied().unwrap_or(0),
                self.utilisation(pipe) * 100.0
            )?;
        }
        if self.cube_vector == CubeVector::Split {
            writeln!(
                f,
                "cube and vector split (AIC / AIV): {} bytes handed off through GM (written \
                 and read back: {} bytes of traffic)",
                self.handoff_bytes,
                2 * self.handoff_bytes
            )?;
        }
        write!(
            f,
            "{} instructions, {} double-buffered loop(s)",
            self.instructions, self.double_buffered_loops
        )
    }
}

/// One instruction's occupation of a pipe, in cycles from the block program's start.
#[derive(Debug, Clone, PartialEq)]
pub struct PipeEvent {
    /// The core of the AI core it runs on ([`Side::Core`] unless split).
    pub side: Side,
    /// The pipe.
    pub pipe: Pipe,
    /// Start cycle.
    pub start: f64,
    /// Duration in cycles.
    pub duration: f64,
    /// Mnemonic and tile, e.g. `load %3`.
    pub name: String,
    /// Bytes moved or produced.
    pub bytes: u64,
    /// Shape of the tile.
    pub shape: Vec<usize>,
}

/// The schedule of one block program.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    /// Cycles from start to the end of the last instruction.
    pub cycles: f64,
    /// Busy cycles of each pipe (on a split core, summed over the sides).
    pub busy: BTreeMap<Pipe, f64>,
    /// Busy cycles of each pipe of each side.
    pub busy_by_side: BTreeMap<(Side, Pipe), f64>,
    /// Bytes handed off between the sides of a split core through GM (see the module docs).
    pub handoff_bytes: u64,
    /// Instructions executed (loop bodies per iteration, loops themselves not).
    pub instructions: u64,
    /// Pipe occupations, in issue order, at most the `event_limit` given to [`schedule`].
    pub events: Vec<PipeEvent>,
}

/// Schedules one block program of `program` on one core of `profile`, with `plan`'s double
/// buffering, recording at most `event_limit` events.
///
/// # Errors
///
/// [`SimError::Unsupported`] for a cube dtype (or copy path) the profile has no rate for.
pub fn schedule(
    program: &ValidProgram,
    profile: &DeviceProfile,
    plan: &MemoryPlan,
    event_limit: usize,
) -> Result<Timeline, SimError> {
    let mut scheduler = Scheduler {
        program,
        costs: CostModel::new(profile, program),
        plan,
        pipe_busy: BTreeMap::new(),
        links: Default::default(),
        busy: BTreeMap::new(),
        issue_free: PerSide::filled(0.0),
        loop_sides: BTreeMap::new(),
        handoff_bytes: 0,
        ready: IdVec::filled(program.tiles.len(), 0.0),
        last_use: IdVec::filled(program.tiles.len(), [0.0; 2]),
        end: 0.0,
        instructions: 0,
        events: Vec::new(),
        event_limit,
    };
    scheduler.body(&program.body, 0)?;
    let mut busy = BTreeMap::new();
    for ((_, pipe), cycles) in &scheduler.busy {
        *busy.entry(*pipe).or_insert(0.0) += cycles;
    }
    Ok(Timeline {
        cycles: scheduler.end,
        busy,
        busy_by_side: scheduler.busy,
        handoff_bytes: scheduler.handoff_bytes,
        instructions: scheduler.instructions,
        events: scheduler.events,
    })
}

/// The cores that run block programs: `min(ai_cores, grid)`, at least 1.
pub fn cores_in_use(program: &Program, profile: &DeviceProfile) -> usize {
    cost::cores_in_use(program.grid, profile)
}

/// How many block programs core `core` runs when `grid` programs are dealt round-robin
/// over `cores` cores.
pub fn programs_on_core(grid: usize, cores: usize, core: usize) -> usize {
    grid / cores + usize::from(core < grid % cores)
}

/// The report of the whole op: `timeline` (one block program) repeated over the grid.
///
/// # Errors
///
/// [`SimError::CycleOverflow`] when a count of the whole op (cycles, busy cycles,
/// instructions, bytes handed off) does not fit in a `u64`: a profile's rates and the
/// work budget keep real programs far below it, but the arithmetic never saturates
/// silently.
pub fn report(
    program: &Program,
    profile: &DeviceProfile,
    plan: &MemoryPlan,
    timeline: &Timeline,
) -> Result<SimReport, SimError> {
    let overflow = |what: &str, value: String| SimError::CycleOverflow {
        op: program.op.clone(),
        device: profile.name.clone(),
        what: what.to_owned(),
        value,
    };
    let whole = |what: &str, value: f64| {
        let rounded = value.ceil();
        // `u64::MAX as f64` rounds up to 2^64, which does not fit: stay below it.
        if rounded.is_finite() && rounded >= 0.0 && rounded < u64::MAX as f64 {
            Ok(rounded as u64)
        } else {
            Err(overflow(what, format!("{value:e}")))
        }
    };
    let cores = cores_in_use(program, profile);
    let per_core_cycles = (0..profile.ai_cores as usize)
        .map(|core| {
            let programs = if core < cores {
                programs_on_core(program.grid, cores, core)
            } else {
                0
            };
            whole("cycles of a core", programs as f64 * timeline.cycles)
        })
        .collect::<Result<Vec<u64>, SimError>>()?;
    let cycles = per_core_cycles.iter().copied().max().unwrap_or(0);
    // A mix kernel: work on a pipe other than S on both sides of a split core.
    let works_on = |side: Side| {
        timeline
            .busy_by_side
            .iter()
            .any(|((s, pipe), busy)| *s == side && *pipe != Pipe::S && *busy > 0.0)
    };
    let mix =
        profile.cube_vector == CubeVector::Split && works_on(Side::Cube) && works_on(Side::Vector);
    let launch_cycles = profile.launch.cycles(profile.clock_hz, mix);
    let grid = program.grid as f64;
    let per_pipe_busy = Pipe::ALL
        .iter()
        .map(|pipe| {
            let busy = timeline.busy.get(pipe).copied().unwrap_or(0.0);
            Ok((
                *pipe,
                whole(&format!("busy cycles of {pipe}"), busy * grid)?,
            ))
        })
        .collect::<Result<BTreeMap<Pipe, u64>, SimError>>()?;
    let times_grid = |what: &str, per_program: u64| {
        u64::try_from(program.grid)
            .ok()
            .and_then(|grid| per_program.checked_mul(grid))
            .ok_or_else(|| overflow(what, format!("{per_program} x grid {}", program.grid)))
    };
    // The busiest pipe of any side (on a coupled core, of the core).
    let bound = timeline
        .busy_by_side
        .iter()
        .fold(None::<(Pipe, f64)>, |best, ((_, pipe), busy)| match best {
            Some((_, b)) if b >= *busy => best,
            _ => Some((*pipe, *busy)),
        })
        .map_or(Pipe::S, |(pipe, _)| pipe);
    Ok(SimReport {
        op: program.op.clone(),
        device: profile.name.clone(),
        cycles,
        seconds: cycles as f64 / profile.clock_hz,
        launch_cycles,
        launch_seconds: launch_cycles as f64 / profile.clock_hz,
        per_pipe_busy,
        per_core_cycles,
        bound,
        cube_vector: profile.cube_vector,
        handoff_bytes: times_grid("bytes handed off", timeline.handoff_bytes)?,
        peak_bytes: plan.peak_bytes.clone(),
        double_buffered_loops: plan.double_buffered_loops(),
        instructions: times_grid("instructions", timeline.instructions)?,
    })
}

struct Scheduler<'p> {
    program: &'p ValidProgram,
    costs: CostModel<'p>,
    plan: &'p MemoryPlan,
    /// Busy intervals of each pipe of each side, sorted and disjoint.
    pipe_busy: BTreeMap<(Side, Pipe), Vec<(f64, f64)>>,
    /// Busy intervals of each of the AI core's shares of the memory system (GM, L2 read,
    /// L2 write: [`Links::cycles`]'s order), which every transfer of either side holds for
    /// its [`InstCost::links`](cost::InstCost).
    links: [Vec<(f64, f64)>; 3],
    busy: BTreeMap<(Side, Pipe), f64>,
    /// When each side's scalar pipe can issue its next instruction.
    issue_free: PerSide<f64>,
    /// The sides that run each loop, by the address of its body.
    loop_sides: BTreeMap<usize, Vec<Side>>,
    handoff_bytes: u64,
    /// When each tile's current value is ready.
    ready: IdVec<TileId, f64>,
    /// The end of the last use of each tile's current and previous instance.
    last_use: IdVec<TileId, [f64; 2]>,
    end: f64,
    instructions: u64,
    events: Vec<PipeEvent>,
    event_limit: usize,
}

/// The earliest start at or after `earliest` of `duration` idle cycles between the sorted,
/// disjoint busy `intervals`.
fn earliest_idle(intervals: &[(f64, f64)], earliest: f64, duration: f64) -> f64 {
    // The first interval that ends after `earliest`.
    let mut at = intervals.partition_point(|(_, end)| *end <= earliest);
    let mut start = earliest;
    while let Some((busy_start, busy_end)) = intervals.get(at) {
        if start + duration <= *busy_start {
            break;
        }
        start = start.max(*busy_end);
        at += 1;
    }
    start
}

/// Marks `[start, start + duration)` busy in `intervals` (idle there), merging it with
/// touching neighbours so the list stays short.
fn book(intervals: &mut Vec<(f64, f64)>, start: f64, duration: f64) {
    let end = start + duration;
    let at = intervals.partition_point(|(_, busy_end)| *busy_end <= start);
    let merge_prev = at > 0 && intervals[at - 1].1 >= start;
    let merge_next = intervals.get(at).is_some_and(|(s, _)| *s <= end);
    match (merge_prev, merge_next) {
        (true, true) => {
            intervals[at - 1].1 = intervals[at].1;
            intervals.remove(at);
        }
        (true, false) => intervals[at - 1].1 = end,
        (false, true) => intervals[at].0 = intervals[at].0.min(start),
        (false, false) => intervals.insert(at, (start, end)),
    }
}

impl Scheduler<'_> {
    fn body(&mut self, body: &[Inst], first: usize) -> Result<(), SimError> {
        let mut position = first;
        for inst in body {
            match inst {
                Inst::Loop {
                    var,
                    count,
                    init,
                    params,
                    body,
                    yields,
                    results,
                } => self.looped(position, *var, *count, init, params, body, yields, results)?,
                _ => self.instruction(inst, position)?,
            }
            position += match inst {
                Inst::Loop { body, .. } => 1 + Inst::count(body),
                _ => 1,
            };
        }
        Ok(())
    }

    /// Schedules every iteration of a loop, unrolled.
    #[allow(clippy::too_many_arguments)]
    fn looped(
        &mut self,
        position: usize,
        var: VarId,
        count: usize,
        init: &[TileId],
        params: &[TileId],
        body: &[Inst],
        yields: &[TileId],
        results: &[TileId],
    ) -> Result<(), SimError> {
        let mut carried: Vec<f64> = init.iter().map(|t| self.ready[*t]).collect();
        let overhead = self.costs.loop_overhead_cycles();
        let program = self.program;
        let costs = &self.costs;
        let sides = self
            .loop_sides
            .entry(body.as_ptr() as usize)
            .or_insert_with(|| costs.loop_sides(program, body))
            .clone();
        for iteration in 0..count {
            for &side in &sides {
                let start = self.issue_free[side];
                self.issue_free[side] += overhead;
                self.occupy(side, Pipe::S, start, overhead, || {
                    (format!("loop {var} = {iteration}"), 0, Vec::new())
                });
            }
            for (param, ready) in params.iter().zip(&carried) {
                self.ready[*param] = *ready;
            }
            self.body(body, position + 1)?;
            carried = yields.iter().map(|t| self.ready[*t]).collect();
        }
        for (result, ready) in results.iter().zip(&carried) {
            self.ready[*result] = *ready;
        }
        Ok(())
    }

    /// Reserves the earliest time at or after `earliest` when `pipe` is idle for
    /// `duration` cycles and, for a GM transfer, each of the AI core's links it holds is
    /// idle for its cycles from the same start; returns the start.
    fn reserve(
        &mut self,
        side: Side,
        pipe: Pipe,
        earliest: f64,
        duration: f64,
        links: Links,
    ) -> f64 {
        let holds = links.cycles();
        let mut start = earliest;
        // Move the start to where every resource is idle: each step only moves it later,
        // to the end of a busy interval, so this ends.
        loop {
            let mut at = earliest_idle(
                self.pipe_busy.entry((side, pipe)).or_default(),
                start,
                duration,
            );
            for (link, cycles) in self.links.iter().zip(holds) {
                if cycles > 0.0 {
                    at = earliest_idle(link, at, cycles);
                }
            }
            if at == start {
                break;
            }
            start = at;
        }
        for (link, cycles) in self.links.iter_mut().zip(holds) {
            if cycles > 0.0 {
                book(link, start, cycles);
            }
        }
        book(
            self.pipe_busy.entry((side, pipe)).or_default(),
            start,
            duration,
        );
        start
    }

    /// Books `duration` cycles on `pipe` from `start`, and an event while under the limit.
    fn occupy(
        &mut self,
        side: Side,
        pipe: Pipe,
        start: f64,
        duration: f64,
        describe: impl FnOnce() -> (String, u64, Vec<usize>),
    ) {
        *self.busy.entry((side, pipe)).or_insert(0.0) += duration;
        self.end = self.end.max(start + duration);
        if self.events.len() < self.event_limit {
            let (name, bytes, shape) = describe();
            self.events.push(PipeEvent {
                side,
                pipe,
                start,
                duration,
                name,
                bytes,
                shape,
            });
        }
    }

    /// Issues a part of an instruction on its side's scalar pipe, in that side's program
    /// order: the cycle it is issued.
    fn issue(&mut self, side: Side) -> f64 {
        let issue = self.costs.issue_cycles();
        let issued = self.issue_free[side] + issue;
        *self.busy.entry((side, Pipe::S)).or_insert(0.0) += issue;
        self.issue_free[side] = issued;
        issued
    }

    fn instruction(&mut self, inst: &Inst, position: usize) -> Result<(), SimError> {
        let mnemonic = inst.mnemonic();
        let placement =
            self.costs
                .placement(self.program, inst)
                .map_err(|e| SimError::Unsupported {
                    op: self.program.op.clone(),
                    message: format!("inst {position} ({mnemonic}): {e}"),
                })?;
        self.instructions += 1;

        let operands = inst.uses();
        let dst = inst.defs().next();
        let shown = dst.or(operands.clone().next());
        let program = self.program;
        let describe = |suffix: &'static str, bytes: u64| {
            move || {
                let name = match shown {
                    Some(t) => format!("{mnemonic} {t}{suffix}"),
                    None => format!("{mnemonic}{suffix}"),
                };
                let shape = shown
                    .and_then(|t| program.tile(t))
                    .map(|ty| ty.shape.clone())
                    .unwrap_or_default();
                (name, bytes, shape)
            }
        };

        // The part that reads the operands: the whole instruction, or a hand-off's write.
        let (first, read_back) = match placement {
            Placement::On(part) => (part, None),
            Placement::HandOff { write, read } => (write, Some(read)),
            // Done by the move that defined its tile (a FIXP store from L0C).
            Placement::Fused => return Ok(()),
        };
        let issued = self.issue(first.side);
        let mut start = issued;
        for tile in operands.clone() {
            start = start.max(self.ready[tile]);
        }
        if read_back.is_none() {
            // Every result's buffer (a top-k writes its values and its indices).
            for tile in inst.defs() {
                start = start.max(self.buffer_free(Some(tile)));
            }
        }
        let (pipe, duration, bytes) = (first.cost.pipe, first.cost.cycles, first.cost.bytes);
        let start = self.reserve(first.side, pipe, start, duration, first.cost.links);
        let mut end = start + duration;
        for tile in operands {
            self.last_use[tile][0] = self.last_use[tile][0].max(end);
        }
        // The result is ready once the latency after the pipe occupation has passed.
        end += first.cost.latency;
        self.end = self.end.max(end);
        let suffix = if read_back.is_some() { " (to GM)" } else { "" };
        self.occupy(first.side, pipe, start, duration, describe(suffix, bytes));

        // A hand-off's read: on the other side, once the write has completed and its flag
        // has reached the reader, into a free buffer.
        if let Some(read) = read_back {
            self.handoff_bytes += read.cost.bytes;
            // The write has reached GM at `end`; the reader's wait releases the flag's
            // cycles later.
            let flag = end + self.costs.cross_core_flag_cycles();
            let issued = self.issue(read.side);
            let start = issued.max(flag).max(self.buffer_free(dst));
            let (pipe, duration) = (read.cost.pipe, read.cost.cycles);
            let start = self.reserve(read.side, pipe, start, duration, read.cost.links);
            end = start + duration + read.cost.latency;
            self.end = self.end.max(end);
            self.occupy(
                read.side,
                pipe,
                start,
                duration,
                describe(" (from GM)", read.cost.bytes),
            );
        }
        for tile in inst.defs() {
            self.ready[tile] = end;
        }
        Ok(())
    }

    /// When the buffer `dst`'s new instance overwrites is free: after the last use of the
    /// latest instance, or with two buffers of the one before it; and from now on the
    /// latest instance is the new one (not yet used).
    fn buffer_free(&mut self, dst: Option<TileId>) -> f64 {
        let Some(tile) = dst else {
            return 0.0;
        };
        let [latest, previous] = self.last_use[tile];
        self.last_use[tile] = [0.0, latest];
        if self.plan.is_double_buffered(tile) {
            previous
        } else {
            latest
        }
    }
}
