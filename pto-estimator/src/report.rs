//! A whole model's estimate: the per-op table, totals, memory, a Chrome-trace timeline and a
//! roofline plot (drawn and written, [`ModelReport::write_plot`], by [`crate::plot`]).

use std::collections::BTreeMap;
use std::path::Path;

use pto_op::chrome_trace::{ChromeTrace, CompleteEvent, DisplayTimeUnit, TraceEvent};
use pto_op::table::column_width;
use pto_op::{DType, GraphDef, OpInvokeInfo, PerformanceProperties, registry};
use serde::Serialize;

use crate::chain::Source;
use crate::roofline::{Bound, Unit};
use crate::{EstimateError, Estimator};

/// One op call of a model's estimate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpRow {
    /// The node's index (the call's, for a list of calls).
    pub node: usize,
    /// The op.
    pub op: String,
    /// When it starts, in seconds: when its inputs are ready and its stream is free (a
    /// list of calls without a graph runs back to back).
    pub start_seconds: f64,
    /// The stream it runs on: communication ops (the `comm` domain) on their own, so that
    /// they overlap compute wherever the graph allows.
    pub stream: Stream,
    /// Its time, in seconds.
    pub seconds: f64,
    /// Its share of the total, in [0, 1].
    pub share: f64,
    /// What limits it.
    pub bound: Bound,
    /// Where its numbers came from.
    pub source: Source,
    /// Whether the device's calibration corrected its time.
    pub calibrated: bool,
    /// Floating-point operations (2 per multiply-accumulate, 1 per element op); `None` for a
    /// direct estimate.
    pub flops: Option<u64>,
    /// Global memory bytes read and written; `None` for a direct estimate.
    pub bytes: Option<u64>,
    /// [`OpRow::flops`] split by the unit and dtype that do them, each with its own peak
    /// (empty for a direct estimate and for an op without compute).
    pub work: Vec<UnitWork>,
}

/// A stream of the timeline: a device computes on one and communicates on the other, at
/// the same time when the graph allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stream {
    /// The AI cores.
    Compute,
    /// Collectives between devices (ops of the `comm` domain: their time is the links',
    /// not the cores').
    Communication,
}

impl Stream {
    /// The stream `op` runs on: [`Stream::Communication`] for the `comm` domain.
    pub fn of(op: &str) -> Stream {
        match op.split_once('.') {
            Some(("comm", _)) => Stream::Communication,
            _ => Stream::Compute,
        }
    }

    /// The trace lane (`tid`) of the stream.
    fn lane(self) -> usize {
        match self {
            Stream::Compute => 0,
            Stream::Communication => 1,
        }
    }
}

impl core::fmt::Display for Stream {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.pad(match self {
            Stream::Compute => "compute",
            Stream::Communication => "comm",
        })
    }
}

/// The FLOPs one compute unit does on one dtype in one op call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct UnitWork {
    /// The unit.
    pub unit: Unit,
    /// The dtype it works on.
    pub dtype: DType,
    /// Its FLOPs: 2 per cube multiply-accumulate, 1 per vector element operation.
    pub flops: u64,
}

impl UnitWork {
    /// The nonzero work of `properties`, cube first, by dtype.
    pub fn of(properties: &PerformanceProperties) -> Vec<UnitWork> {
        let per_unit = |unit, flops: fn(&pto_op::ComputeOps) -> u64| {
            properties
                .compute_ops
                .iter()
                .map(move |(dtype, ops)| UnitWork {
                    unit,
                    dtype: *dtype,
                    flops: flops(ops),
                })
                .filter(|w| w.flops > 0)
        };
        per_unit(Unit::Cube, |ops| 2 * ops.mma_ops)
            .chain(per_unit(Unit::Vector, |ops| ops.gp_ops))
            .collect()
    }
}

/// The estimate of a model (or a list of calls) on one device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelReport {
    /// The model.
    pub model: String,
    /// The device profile's name.
    pub device: String,
    /// Every call, in order.
    pub ops: Vec<OpRow>,
    /// When the last call ends, in seconds: the sum of every call's time when they run
    /// back to back, less where communication overlaps compute.
    pub total_seconds: f64,
    /// Busy time of each stream, in seconds.
    pub seconds_by_stream: BTreeMap<Stream, f64>,
    /// Bytes of all weights.
    pub weight_bytes: u64,
    /// The most activation bytes alive at once (inputs and node outputs, each alive from
    /// the node that makes it to its last reader; graph outputs to the end).
    pub peak_activation_bytes: u64,
    /// Time by source, in seconds.
    pub seconds_by_source: BTreeMap<Source, f64>,
    /// Time by bound, in seconds.
    pub seconds_by_bound: BTreeMap<Bound, f64>,
    /// The distinct calls whose kernel does not fit the device's buffers
    /// ([`Source::Overflow`]): `(first node, op, why)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overflows: Vec<(usize, String, String)>,
}

impl ModelReport {
    /// The estimate of every node of `graph`, with types inferred per node by each op's rules.
    ///
    /// # Errors
    ///
    /// An op that is not linked, a node its op's rules reject, or conflicting registrations.
    pub fn of_graph(
        name: &str,
        graph: &GraphDef,
        estimator: &mut Estimator<'_>,
    ) -> Result<ModelReport, EstimateError> {
        let mut calls = Vec::with_capacity(graph.nodes.len());
        for (index, node) in graph.nodes.iter().enumerate() {
            let def = registry::find(&node.op)?;
            let inputs = node
                .inputs
                .iter()
                .map(|&id| graph.values.get(id).map(|v| v.ty.clone()))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| EstimateError::Model {
                    model: name.to_owned(),
                    message: format!(
                        "node {index} (`{}`) reads a value it does not have",
                        node.op
                    ),
                })?;
            calls.push(def.invoke_info(&inputs, &node.attrs).map_err(|source| {
                EstimateError::Node {
                    node: index,
                    op: node.op.clone(),
                    source,
                }
            })?);
        }
        let mut report = ModelReport::of_calls(name, &calls, estimator)?;
        report.schedule(graph);
        report.weight_bytes = graph
            .weights
            .iter()
            .filter_map(|&id| graph.values.get(id))
            .map(|v| v.ty.bytes())
            .sum();
        report.peak_activation_bytes = pto_op::graph::Liveness::of(graph).peak_bytes;
        Ok(report)
    }

    /// The estimate of a list of calls, run back to back (no memory figures).
    ///
    /// # Errors
    ///
    /// Conflicting registrations of an op.
    pub fn of_calls(
        name: &str,
        calls: &[OpInvokeInfo],
        estimator: &mut Estimator<'_>,
    ) -> Result<ModelReport, EstimateError> {
        let mut ops = Vec::with_capacity(calls.len());
        let mut overflows: Vec<(usize, String, String)> = Vec::new();
        let mut start = 0.0;
        for (node, info) in calls.iter().enumerate() {
            let e = estimator.estimate_cached(info)?;
            if let (Source::Overflow, Some(note)) = (e.source, &e.note)
                && !overflows
                    .iter()
                    .any(|(_, op, why)| *op == e.op && why == note)
            {
                overflows.push((node, e.op.clone(), note.clone()));
            }
            let (flops, bytes, work) = match &e.properties {
                Some(p) => {
                    let work = UnitWork::of(p);
                    (
                        Some(work.iter().map(|w| w.flops).sum()),
                        Some(p.memory_read_bytes + p.memory_write_bytes),
                        work,
                    )
                }
                None => (None, None, Vec::new()),
            };
            ops.push(OpRow {
                node,
                stream: Stream::of(&e.op),
                op: e.op.clone(),
                start_seconds: start,
                seconds: e.seconds,
                share: 0.0,
                bound: e.bound,
                source: e.source,
                calibrated: e.calibrated,
                flops,
                bytes,
                work,
            });
            start += e.seconds;
        }
        let total = start;
        if !total.is_finite() {
            return Err(EstimateError::NotFinite {
                op: name.to_owned(),
                device: estimator.device().name.clone(),
                seconds: total,
                what: "the sum of the ops' estimates".to_owned(),
            });
        }
        let mut seconds_by_source = BTreeMap::new();
        let mut seconds_by_bound = BTreeMap::new();
        let mut seconds_by_stream = BTreeMap::new();
        for row in &mut ops {
            *seconds_by_stream.entry(row.stream).or_insert(0.0) += row.seconds;
            row.share = if total > 0.0 {
                row.seconds / total
            } else {
                0.0
            };
            *seconds_by_source.entry(row.source).or_insert(0.0) += row.seconds;
            *seconds_by_bound.entry(row.bound).or_insert(0.0) += row.seconds;
        }
        Ok(ModelReport {
            model: name.to_owned(),
            device: estimator.device().name.clone(),
            ops,
            total_seconds: total,
            seconds_by_stream,
            weight_bytes: 0,
            peak_activation_bytes: 0,
            seconds_by_source,
            seconds_by_bound,
            overflows,
        })
    }

    /// Starts every row of `graph`'s report when its inputs are ready and its stream is
    /// free, and the total when the last ends: communication overlaps compute where no
    /// data waits for it.
    fn schedule(&mut self, graph: &GraphDef) {
        let mut ready = vec![0.0f64; graph.values.len()];
        let mut free: BTreeMap<Stream, f64> = BTreeMap::new();
        let mut end = 0.0f64;
        for (row, node) in self.ops.iter_mut().zip(&graph.nodes) {
            let inputs = node
                .inputs
                .iter()
                .filter_map(|&id| ready.get(id))
                .fold(0.0f64, |a, &b| a.max(b));
            let stream = free.entry(row.stream).or_insert(0.0);
            row.start_seconds = inputs.max(*stream);
            *stream = row.start_seconds + row.seconds;
            end = end.max(*stream);
            for &id in &node.outputs {
                if let Some(slot) = ready.get_mut(id) {
                    *slot = *stream;
                }
            }
        }
        self.total_seconds = end;
        for row in &mut self.ops {
            row.share = if end > 0.0 { row.seconds / end } else { 0.0 };
        }
    }

    /// The timeline as a Chrome trace (`chrome://tracing`, Perfetto): one lane per stream
    /// (compute `tid` 0, communication `tid` 1).
    pub fn chrome_trace(&self) -> ModelTrace {
        ModelTrace {
            trace_events: self
                .ops
                .iter()
                .map(|row| {
                    TraceEvent::Complete(CompleteEvent {
                        name: row.op.clone(),
                        cat: row.source,
                        pid: 0,
                        tid: row.stream.lane(),
                        ts: row.start_seconds * 1e6,
                        dur: row.seconds * 1e6,
                        args: OpEventArgs {
                            node: row.node,
                            bound: row.bound,
                            source: row.source,
                        },
                    })
                })
                .collect(),
            display_time_unit: Some(DisplayTimeUnit::Ns),
        }
    }

    /// Writes [`ModelReport::chrome_trace`] to `path`, atomically.
    ///
    /// # Errors
    ///
    /// The file cannot be written.
    pub fn write_trace(&self, path: &Path) -> Result<(), EstimateError> {
        Ok(self.chrome_trace().write(path)?)
    }
}

impl core::fmt::Display for ModelReport {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        writeln!(
            f,
            "model `{}` on `{}`: {} op call(s), {:.3} ms",
            self.model,
            self.device,
            self.ops.len(),
            self.total_seconds * 1e3
        )?;
        let op_w = column_width("op", self.ops.iter().map(|row| row.op.as_str()));
        writeln!(
            f,
            "{:>5}  {:<op_w$} {:>12} {:>7}  {:<8} source",
            "node", "op", "time (us)", "share", "bound"
        )?;
        for row in &self.ops {
            writeln!(
                f,
                "{:>5}  {:<op_w$} {:>12.3} {:>6.2}%  {:<8} {}",
                row.node,
                row.op,
                row.seconds * 1e6,
                row.share * 100.0,
                row.bound,
                if row.calibrated {
                    format!("{}, calibrated", row.source)
                } else {
                    row.source.to_string()
                }
            )?;
        }
        let sources: Vec<String> = self
            .seconds_by_source
            .iter()
            .map(|(s, t)| format!("{s} {:.3} ms", t * 1e3))
            .collect();
        let bounds: Vec<String> = self
            .seconds_by_bound
            .iter()
            .map(|(b, t)| format!("{b} {:.3} ms", t * 1e3))
            .collect();
        writeln!(f, "by source: {}", sources.join(", "))?;
        writeln!(f, "by bound:  {}", bounds.join(", "))?;
        if self.seconds_by_stream.contains_key(&Stream::Communication) {
            let streams: Vec<String> = self
                .seconds_by_stream
                .iter()
                .map(|(s, t)| format!("{s} {:.3} ms", t * 1e3))
                .collect();
            writeln!(
                f,
                "by stream: {} (busy; they overlap where the graph allows)",
                streams.join(", ")
            )?;
        }
        for (node, op, why) in &self.overflows {
            writeln!(
                f,
                "kernel over buffers (priced as memory traffic): node {node} `{op}`: {why}"
            )?;
        }
        write!(
            f,
            "total {:.3} ms; weights {:.1} MiB; peak activations {:.1} MiB",
            self.total_seconds * 1e3,
            self.weight_bytes as f64 / (1 << 20) as f64,
            self.peak_activation_bytes as f64 / (1 << 20) as f64
        )
    }
}

/// A model's timeline as a Chrome trace: one complete event per op, categorized by the
/// estimate's source.
pub type ModelTrace = ChromeTrace<Source, OpEventArgs>;

/// The details of one op in a [`ModelTrace`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpEventArgs {
    /// The node's index in the model.
    pub node: usize,
    /// What limits the op's time.
    pub bound: Bound,
    /// Where the estimate came from.
    pub source: Source,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chrome_trace_puts_ops_back_to_back_on_one_lane() {
        let row = |node, op: &str, start_seconds, seconds, bound, source| OpRow {
            node,
            op: op.to_owned(),
            start_seconds,
            stream: Stream::Compute,
            seconds,
            share: 0.5,
            bound,
            source,
            calibrated: false,
            flops: None,
            bytes: None,
            work: Vec::new(),
        };
        let report = ModelReport {
            model: "tiny".to_owned(),
            device: "kirin9030".to_owned(),
            ops: vec![
                row(0, "demo.gelu", 0.0, 2e-6, Bound::Vector, Source::KernelIr),
                row(
                    1,
                    "demo.matmul",
                    2e-6,
                    3e-6,
                    Bound::Cube,
                    Source::UserEstimator,
                ),
            ],
            total_seconds: 5e-6,
            seconds_by_stream: BTreeMap::new(),
            weight_bytes: 0,
            peak_activation_bytes: 0,
            seconds_by_source: BTreeMap::new(),
            seconds_by_bound: BTreeMap::new(),
            overflows: Vec::new(),
        };
        let json: serde_json::Value =
            serde_json::from_str(&report.chrome_trace().to_json().expect("serializes"))
                .expect("valid JSON");
        assert_eq!(
            json,
            serde_json::json!({
                "traceEvents": [
                    { "name": "demo.gelu", "cat": "kernel_ir", "ph": "X", "pid": 0, "tid": 0,
                      "ts": 0.0, "dur": 2.0,
                      "args": { "node": 0, "bound": "vector", "source": "kernel_ir" } },
                    { "name": "demo.matmul", "cat": "user_estimator", "ph": "X", "pid": 0,
                      "tid": 0, "ts": 2.0, "dur": 3.0,
                      "args": { "node": 1, "bound": "cube", "source": "user_estimator" } },
                ],
                "displayTimeUnit": "ns",
            })
        );
    }
}
