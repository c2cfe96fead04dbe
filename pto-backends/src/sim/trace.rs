//! Chrome trace-event timelines of a simulated run, for `chrome://tracing` or Perfetto.
//!
//! One process per AI core (`pid` = core), one thread lane per pipe (`tid` = the pipe's
//! position in [`Pipe::ALL`]: MTE2, MTE1, CUBE, VECTOR, FIXP, MTE3, SCALAR). Each pipe
//! occupation is an `"X"` (complete) event with `ts` and `dur` in microseconds at the
//! profile's clock, named after the instruction and its tile, with bytes and shape in
//! `args`. The scalar lane shows loop iterations; the per-instruction issue slots count
//! in the report's SCALAR busy time but are not drawn. On a profile whose cube and vector
//! are split, each core has the lanes twice, `AIC MTE2` .. `AIC SCALAR` for the cube core
//! then `AIV MTE2` .. `AIV SCALAR` for its vector cores; a hand-off through GM shows as its
//! write (`(to GM)`) on one side and its read (`(from GM)`) on the other.
//!
//! Big runs stay fast by capping events: every block program has the same timeline (see
//! [`schedule`](super::schedule)), so the trace holds whole block programs, core by core
//! and in the order each core runs them, until the next one would pass the event limit
//! ([`SimOptions::trace_event_limit`](super::SimOptions)). At least the first block program
//! of every core in use is drawn, truncated to the limit if it alone is longer.

use pto_op::chrome_trace::{CompleteEvent, TraceEvent};
use pto_op::kernel::cost::Side;
use pto_op::kernel::ir::{Pipe, Program};
use pto_op::{CubeVector, DeviceProfile};
use serde::Serialize;

use super::schedule::{Timeline, cores_in_use, programs_on_core};

/// A Chrome trace of one simulated op run: complete events are categorized by pipe name.
pub type ChromeTrace = pto_op::chrome_trace::ChromeTrace<&'static str, PipeEventArgs>;

/// The details of one pipe occupation in a [`ChromeTrace`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PipeEventArgs {
    /// The block program (`core + k * cores` for the `k`-th program on a core).
    pub program_id: usize,
    /// Bytes moved or produced.
    pub bytes: u64,
    /// Shape of the tile.
    pub shape: Vec<usize>,
    /// Duration in cycles.
    pub cycles: f64,
}

/// The trace of `program` on `profile`, whose block programs all follow `timeline`, with at
/// most about `event_limit` pipe events (see the module docs).
pub fn chrome_trace(
    program: &Program,
    profile: &DeviceProfile,
    timeline: &Timeline,
    event_limit: usize,
) -> ChromeTrace {
    let cores = cores_in_use(program, profile);
    let us_per_cycle = 1e6 / profile.clock_hz;
    let mut trace = ChromeTrace::default();
    let sides: &[Side] = match profile.cube_vector {
        CubeVector::Coupled => &[Side::Core],
        CubeVector::Split => &[Side::Cube, Side::Vector],
    };
    // The lane of a pipe of a side: the pipe's position, after the cube core's lanes for
    // the vector cores.
    let lane_of = |side: Side, pipe: Pipe| {
        let pipe = Pipe::ALL.iter().position(|p| *p == pipe).unwrap_or(0);
        match side {
            Side::Vector => Pipe::ALL.len() + pipe,
            Side::Core | Side::Cube => pipe,
        }
    };
    for core in 0..cores {
        trace.trace_events.push(TraceEvent::process_name(
            core,
            format!("{} core {core}", profile.name),
        ));
        for &side in sides {
            for pipe in Pipe::ALL {
                let lane = lane_of(side, pipe);
                let name = match side {
                    Side::Core => pipe.name().to_owned(),
                    _ => format!("{} {}", side.name(), pipe.name()),
                };
                trace
                    .trace_events
                    .push(TraceEvent::thread_name(core, lane, name));
                trace
                    .trace_events
                    .push(TraceEvent::thread_sort_index(core, lane, lane));
            }
        }
    }
    let per_program = timeline.events.len().max(1);
    let budget_per_core = (event_limit / cores).max(1);
    for core in 0..cores {
        let programs = programs_on_core(program.grid, cores, core);
        let drawn = (budget_per_core / per_program).clamp(1, programs.max(1));
        for k in 0..drawn.min(programs) {
            let offset = k as f64 * timeline.cycles;
            let program_id = core + k * cores;
            for event in timeline.events.iter().take(budget_per_core) {
                let lane = lane_of(event.side, event.pipe);
                trace.trace_events.push(TraceEvent::Complete(CompleteEvent {
                    name: event.name.clone(),
                    cat: event.pipe.name(),
                    pid: core,
                    tid: lane,
                    ts: (offset + event.start) * us_per_cycle,
                    dur: event.duration * us_per_cycle,
                    args: PipeEventArgs {
                        program_id,
                        bytes: event.bytes,
                        shape: event.shape.clone(),
                        cycles: event.duration,
                    },
                }));
            }
        }
    }
    trace
}
