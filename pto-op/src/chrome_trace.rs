//! Chrome trace-event files (`chrome://tracing`, Perfetto), typed: the simulator's pipe
//! timelines and the estimator's model timelines are both a [`ChromeTrace`].
//!
//! Only the two event kinds pto-op draws are modelled: metadata (`"ph": "M"`, naming and
//! ordering processes and threads) and complete events (`"ph": "X"`, a span with a start and
//! a duration in microseconds).

use std::io::{BufWriter, Write as _};
use std::path::Path;

use serde::Serialize;

use crate::fs::{WriteError, write_atomic_with};

/// A whole trace: its events, metadata usually first. `C` is the type of a complete
/// event's category and `A` that of its arguments; both serialize as JSON.
///
/// ```
/// use pto_op::chrome_trace::{ChromeTrace, CompleteEvent, TraceEvent};
/// let mut trace: ChromeTrace<&str, [u32; 1]> = ChromeTrace::default();
/// trace.trace_events.push(TraceEvent::process_name(0, "core 0"));
/// trace.trace_events.push(TraceEvent::Complete(CompleteEvent {
///     name: "load".into(), cat: "MTE2", pid: 0, tid: 0, ts: 1.0, dur: 2.5, args: [64],
/// }));
/// assert_eq!(
///     trace.to_json().unwrap(),
///     r#"{"traceEvents":[{"ph":"M","name":"process_name","pid":0,"args":{"name":"core 0"}},"#
///         .to_owned()
///         + r#"{"ph":"X","name":"load","cat":"MTE2","pid":0,"tid":0,"ts":1.0,"dur":2.5,"args":[64]}]}"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChromeTrace<C, A> {
    /// The events, in the `traceEvents` array.
    #[serde(rename = "traceEvents")]
    pub trace_events: Vec<TraceEvent<C, A>>,
    /// How viewers show times (`"ns"` or `"ms"`); absent: their default.
    #[serde(rename = "displayTimeUnit", skip_serializing_if = "Option::is_none")]
    pub display_time_unit: Option<DisplayTimeUnit>,
}

impl<C, A> Default for ChromeTrace<C, A> {
    fn default() -> Self {
        ChromeTrace {
            trace_events: Vec::new(),
            display_time_unit: None,
        }
    }
}

/// The unit viewers show times in (the file's times are microseconds either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DisplayTimeUnit {
    /// Nanoseconds.
    Ns,
    /// Milliseconds.
    Ms,
}

/// One event of a trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "ph")]
pub enum TraceEvent<C, A> {
    /// Names or orders a process or a thread lane.
    #[serde(rename = "M")]
    Metadata(MetadataEvent),
    /// A span of time on a lane.
    #[serde(rename = "X")]
    Complete(CompleteEvent<C, A>),
}

impl<C, A> TraceEvent<C, A> {
    /// Names process `pid` (shown as the heading of its lanes).
    pub fn process_name(pid: usize, name: impl Into<String>) -> Self {
        TraceEvent::Metadata(MetadataEvent {
            name: MetadataKind::ProcessName,
            pid,
            tid: None,
            args: MetadataArgs::Name { name: name.into() },
        })
    }

    /// Names thread lane `tid` of process `pid`.
    pub fn thread_name(pid: usize, tid: usize, name: impl Into<String>) -> Self {
        TraceEvent::Metadata(MetadataEvent {
            name: MetadataKind::ThreadName,
            pid,
            tid: Some(tid),
            args: MetadataArgs::Name { name: name.into() },
        })
    }

    /// Places thread lane `tid` of process `pid` at `sort_index` among its lanes.
    pub fn thread_sort_index(pid: usize, tid: usize, sort_index: usize) -> Self {
        TraceEvent::Metadata(MetadataEvent {
            name: MetadataKind::ThreadSortIndex,
            pid,
            tid: Some(tid),
            args: MetadataArgs::SortIndex { sort_index },
        })
    }

    /// The complete event, if this is one.
    pub fn as_complete(&self) -> Option<&CompleteEvent<C, A>> {
        match self {
            TraceEvent::Complete(event) => Some(event),
            TraceEvent::Metadata(_) => None,
        }
    }
}

/// A metadata event (`"ph": "M"`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MetadataEvent {
    /// What it sets.
    pub name: MetadataKind,
    /// The process.
    pub pid: usize,
    /// The thread lane, for thread metadata.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tid: Option<usize>,
    /// The value set.
    pub args: MetadataArgs,
}

/// What a metadata event sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MetadataKind {
    /// The name of a process.
    ProcessName,
    /// The name of a thread lane.
    ThreadName,
    /// The position of a thread lane among its process's lanes.
    ThreadSortIndex,
}

/// The value a metadata event sets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum MetadataArgs {
    /// A process or thread name.
    Name {
        /// The name.
        name: String,
    },
    /// A thread's sort position.
    SortIndex {
        /// The position.
        sort_index: usize,
    },
}

/// A complete event (`"ph": "X"`): a span on lane `tid` of process `pid`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompleteEvent<C, A> {
    /// The label drawn on the span.
    pub name: String,
    /// The category (viewers can filter by it).
    pub cat: C,
    /// The process.
    pub pid: usize,
    /// The thread lane.
    pub tid: usize,
    /// Start, in microseconds.
    pub ts: f64,
    /// Duration, in microseconds.
    pub dur: f64,
    /// Details shown when the span is selected.
    pub args: A,
}

impl<C: Serialize, A: Serialize> ChromeTrace<C, A> {
    /// The trace as JSON text.
    ///
    /// # Errors
    ///
    /// When `C` or `A` fail to serialize (never for plain data).
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(self)
    }

    /// Writes the trace as JSON to `path`, atomically ([`crate::fs::write_atomic`]): a
    /// reader never sees half a trace.
    ///
    /// # Errors
    ///
    /// [`WriteError`] naming `path` and the step that failed.
    pub fn write(&self, path: impl AsRef<Path>) -> Result<(), WriteError> {
        write_atomic_with(path, |file| {
            let mut writer = BufWriter::new(file);
            serde_json::to_writer(&mut writer, self)?;
            writer.flush()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Args {
        bytes: u64,
    }

    fn trace() -> ChromeTrace<&'static str, Args> {
        ChromeTrace {
            trace_events: vec![
                TraceEvent::process_name(1, "npu core 1"),
                TraceEvent::thread_name(1, 2, "CUBE"),
                TraceEvent::thread_sort_index(1, 2, 2),
                TraceEvent::Complete(CompleteEvent {
                    name: "matmul %6".to_owned(),
                    cat: "CUBE",
                    pid: 1,
                    tid: 2,
                    ts: 0.5,
                    dur: 1.25,
                    args: Args { bytes: 4096 },
                }),
            ],
            display_time_unit: Some(DisplayTimeUnit::Ns),
        }
    }

    #[test]
    fn events_serialize_in_the_trace_event_format() {
        let json: serde_json::Value =
            serde_json::from_str(&trace().to_json().expect("serializes")).expect("valid JSON");
        assert_eq!(
            json,
            serde_json::json!({
                "traceEvents": [
                    { "name": "process_name", "ph": "M", "pid": 1, "args": { "name": "npu core 1" } },
                    { "name": "thread_name", "ph": "M", "pid": 1, "tid": 2, "args": { "name": "CUBE" } },
                    { "name": "thread_sort_index", "ph": "M", "pid": 1, "tid": 2,
                      "args": { "sort_index": 2 } },
                    { "name": "matmul %6", "cat": "CUBE", "ph": "X", "pid": 1, "tid": 2,
                      "ts": 0.5, "dur": 1.25, "args": { "bytes": 4096 } },
                ],
                "displayTimeUnit": "ns",
            })
        );
    }

    #[test]
    fn write_puts_the_json_in_the_file() {
        let dir = std::env::temp_dir().join(format!("pto-chrome-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("writable");
        let path = dir.join("trace.json");
        let trace = trace();
        trace.write(&path).expect("writes");
        let text = std::fs::read_to_string(&path).expect("readable");
        std::fs::remove_dir_all(&dir).expect("removable");
        assert_eq!(text, trace.to_json().expect("serializes"));
        assert_eq!(
            trace.trace_events[3].as_complete().map(|e| e.dur),
            Some(1.25)
        );
        assert!(trace.trace_events[0].as_complete().is_none());
    }
}
