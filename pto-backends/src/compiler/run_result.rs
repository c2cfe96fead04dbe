//! What one run gives: the graph outputs and each node's time.

use pto_op::Tensor;
use pto_op::table::column_width;
use serde::Serialize;

/// What a node's time measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeKind {
    /// Wall-clock time on this machine.
    Wall,
    /// Time the target simulated (device cycles at its clock).
    Simulated,
}

/// The time one node took.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeTime {
    /// The node's index.
    pub node: usize,
    /// The op.
    pub op: &'static str,
    /// Seconds, of the kind `kind`.
    pub seconds: f64,
    /// What `seconds` measures.
    pub kind: TimeKind,
    /// Simulated device cycles, for simulated times.
    pub cycles: Option<u64>,
}

/// The result of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunResult {
    /// The graph outputs, in the graph's output order.
    pub outputs: Vec<Tensor>,
    /// Each node's time, in run order.
    pub node_times: Vec<NodeTime>,
}

impl RunResult {
    /// The per-node timing table: node, op, time, kind, cycles, and the total per kind.
    pub fn timing_table(&self) -> String {
        let op_w = column_width("op", self.node_times.iter().map(|t| t.op));
        let mut table = format!(
            "{:>4}  {:<op_w$} {:>12}  {:<9} {:>12}\n",
            "node", "op", "time", "kind", "cycles"
        );
        for t in &self.node_times {
            table.push_str(&format!(
                "{:>4}  {:<op_w$} {:>12}  {:<9} {:>12}\n",
                t.node,
                t.op,
                human_seconds(t.seconds),
                match t.kind {
                    TimeKind::Wall => "wall",
                    TimeKind::Simulated => "simulated",
                },
                t.cycles.map_or("-".to_owned(), |c| c.to_string())
            ));
        }
        for (kind, label) in [(TimeKind::Simulated, "simulated"), (TimeKind::Wall, "wall")] {
            let times: Vec<&NodeTime> = self.node_times.iter().filter(|t| t.kind == kind).collect();
            if !times.is_empty() {
                table.push_str(&format!(
                    "total {label}: {} over {} node(s)\n",
                    human_seconds(times.iter().map(|t| t.seconds).sum()),
                    times.len()
                ));
            }
        }
        table
    }
}

/// Seconds for people: `12.3 us`, `4.56 ms`, `1.20 s`.
fn human_seconds(seconds: f64) -> String {
    if seconds >= 1.0 {
        format!("{seconds:.2} s")
    } else if seconds >= 1e-3 {
        format!("{:.2} ms", seconds * 1e3)
    } else {
        format!("{:.1} us", seconds * 1e6)
    }
}
