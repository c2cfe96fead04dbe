//! Chrome trace-event timelines of a simulated run, for `chrome://tracing` or Perfetto.
//!
//! One process per AI core (`pid` = core), one thread lane per pipe (`tid` = the pipe's
//! position in [`Pipe::ALL`]: MTE2, MTE1, CUBE, VECTOR, FIXP, MTE3, SCALAR). Each pipe
//! occupation is an `"X"` (complete) event with `ts` and `dur` in microseconds at the
//! profile's clock, named after the instruction and its tile, with bytes and shape in
//! `args`. The scalar lane shows loop iterations; the per-instruction issue slots count
//! in the report's SCALAR busy time but are not drawn.
//!
//! Big runs stay fast by capping events: every block program has the same timeline (see
//! [`schedule`](super::schedule)), so the trace holds whole block programs, core by core
//! and in the order each core runs them, until the next one would pass the event limit
//! ([`SimOptions::trace_event_limit`](super::SimOptions)). At least the first block program
//! of every core in use is drawn, truncated to the limit if it alone is longer.

use std::io::Write as _;
use std::path::Path;

use pto_op::DeviceProfile;
use pto_op::kernel::ir::{Pipe, Program};
use serde::Serialize;
use serde_json::json;

use super::SimError;
use super::schedule::{Timeline, cores_in_use, programs_on_core};

/// A Chrome trace of one simulated op run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChromeTrace {
    /// The events, metadata first, in the `traceEvents` format.
    #[serde(rename = "traceEvents")]
    pub trace_events: Vec<serde_json::Value>,
}

impl ChromeTrace {
    /// The trace of `program` on `profile`, whose block programs all follow `timeline`,
    /// with at most about `event_limit` pipe events (see the module docs).
    pub fn build(
        program: &Program,
        profile: &DeviceProfile,
        timeline: &Timeline,
        event_limit: usize,
    ) -> ChromeTrace {
        let cores = cores_in_use(program, profile);
        let us_per_cycle = 1e6 / profile.clock_hz;
        let mut trace_events = Vec::new();
        for core in 0..cores {
            trace_events.push(json!({
                "name": "process_name", "ph": "M", "pid": core,
                "args": { "name": format!("{} core {core}", profile.name) },
            }));
            for (lane, pipe) in Pipe::ALL.iter().enumerate() {
                trace_events.push(json!({
                    "name": "thread_name", "ph": "M", "pid": core, "tid": lane,
                    "args": { "name": pipe.name() },
                }));
                trace_events.push(json!({
                    "name": "thread_sort_index", "ph": "M", "pid": core, "tid": lane,
                    "args": { "sort_index": lane },
                }));
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
                    let lane = Pipe::ALL.iter().position(|p| *p == event.pipe).unwrap_or(0);
                    trace_events.push(json!({
                        "name": event.name,
                        "cat": event.pipe.name(),
                        "ph": "X",
                        "pid": core,
                        "tid": lane,
                        "ts": (offset + event.start) * us_per_cycle,
                        "dur": event.duration * us_per_cycle,
                        "args": {
                            "program_id": program_id,
                            "bytes": event.bytes,
                            "shape": event.shape,
                            "cycles": event.duration,
                        },
                    }));
                }
            }
        }
        ChromeTrace { trace_events }
    }

    /// The trace as JSON text.
    pub fn to_json(&self) -> Result<String, SimError> {
        serde_json::to_string(self).map_err(|e| SimError::Io {
            path: "<trace>".to_owned(),
            message: e.to_string(),
        })
    }

    /// Writes the trace to `path` atomically: into a temporary file in the same directory,
    /// then renamed over `path`, so a reader never sees half a trace.
    pub fn write_chrome_trace(&self, path: &Path) -> Result<(), SimError> {
        let io = |e: std::io::Error| SimError::Io {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        let text = self.to_json()?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => std::path::PathBuf::from("."),
        };
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "trace.json".to_owned());
        let temp = dir.join(format!(".{file_name}.{}.tmp", std::process::id()));
        let written = std::fs::File::create(&temp).and_then(|mut f| {
            f.write_all(text.as_bytes())?;
            f.sync_all()
        });
        if let Err(e) = written.and_then(|()| std::fs::rename(&temp, path)) {
            // Best effort: the temporary file may not exist if creating it failed.
            let _ = std::fs::remove_file(&temp);
            return Err(io(e));
        }
        Ok(())
    }
}
