//! Serving estimates of decoder-only LLMs from their Hugging Face `config.json`: prefill
//! and decode steps, tensor parallelism with its communication, and memory per device.
//!
//! ```no_run
//! use pto_estimator::llm::{LlmConfig, Phase, Workload};
//! let config = LlmConfig::load("config.json".as_ref()).unwrap();
//! let workload = Workload {
//!     name: "llama-2-7b".into(), phase: Phase::Decode, batch: 1, seq: 0, context: 1536, tp: 1,
//!     quant: Default::default(),
//! };
//! let device = pto_op::DeviceProfile::builtin("ascend910b").unwrap();
//! let mut estimator = pto_estimator::Estimator::linked(&device).unwrap();
//! let report = pto_estimator::llm::estimate(&config, &workload, &mut estimator).unwrap();
//! println!("{report}");
//! ```
//!
//! - [`config`]: the config.
//! - [`workload`]: phase, batch, lengths, tensor parallelism.
//! - [`graph`]: one device's graph, with the fused attention and communication ops.
//! - [`node`]: the node profile (devices, memory, links) the communication is priced on.
//! - [`memory`]: weights, KV cache, activations, and the largest batch that fits.

pub mod config;
pub mod graph;
pub mod memory;
pub mod node;
pub mod published;
pub mod sweep;
pub mod workload;

use pto_op::table::column_width;
use serde::Serialize;

use crate::report::{ModelReport, Stream};
use crate::{EstimateError, Estimator};

pub use config::LlmConfig;
pub use memory::{MemoryReport, max_batch};
pub use node::{Link, NodeProfile, Topology};
pub use workload::{Phase, Quant, Workload};

/// A serving step's estimate on one device of its group: the model report (per-op
/// table, streams, totals), the communication, and memory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LlmReport {
    /// What was estimated.
    pub workload: Workload,
    /// The node profile the communication and the memory capacity come from.
    pub node: Option<String>,
    /// The per-op report of one device's graph.
    pub report: ModelReport,
    /// Memory on one device.
    pub memory: MemoryReport,
    /// The largest batch that fits the device's memory at this phase and length, when
    /// asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_batch: Option<usize>,
}

/// Estimates `workload` of `config` on the estimator's device.
///
/// # Errors
///
/// A workload that does not fit the model; tensor parallelism on a device without a node
/// profile (nothing to price its communication on); an estimate's error.
pub fn estimate(
    config: &LlmConfig,
    workload: &Workload,
    estimator: &mut Estimator<'_>,
) -> Result<LlmReport, EstimateError> {
    let device = estimator.device().name.clone();
    let node = NodeProfile::of_device(&device);
    if workload.tp > 1 && node.is_none() {
        return Err(EstimateError::Workload {
            model: workload.name.clone(),
            message: format!(
                "`--tp {}` needs the links between devices, and `{device}` has no node \
                 profile (pto-estimator/data/nodes/*.json lists the devices each holds)",
                workload.tp
            ),
        });
    }
    if let Some(node) = node
        && workload.tp > node.devices_per_node
    {
        return Err(EstimateError::Workload {
            model: workload.name.clone(),
            message: format!(
                "`--tp {}` spans more than one {} node of {} devices; tensor parallelism \
                 across nodes is not modelled",
                workload.tp, node.name, node.devices_per_node
            ),
        });
    }
    let graph = graph::build(config, workload)?;
    let name = format!("{} ({})", workload.name, workload.summary());
    let mut report = ModelReport::of_graph(&name, &graph, estimator)?;
    let capacity = node.map(|n| n.device_memory_bytes);
    let memory = MemoryReport::of(config, workload, &graph, capacity)?;
    // The KV cache is resident state, counted once in `memory`: the report's activation
    // peak is the memory report's, not one that counts the cache as inputs.
    report.peak_activation_bytes = memory.activation_bytes;
    Ok(LlmReport {
        workload: workload.clone(),
        node: node.map(|n| n.name.clone()),
        report,
        memory,
        max_batch: None,
    })
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64
}

impl core::fmt::Display for LlmReport {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        writeln!(f, "{}", self.report)?;
        let comm: Vec<_> = self
            .report
            .ops
            .iter()
            .filter(|row| row.stream == Stream::Communication)
            .collect();
        if !comm.is_empty() {
            let op_w = column_width("op", comm.iter().map(|row| row.op.as_str()));
            let count = |op: &str| comm.iter().filter(|row| row.op == op).count();
            let mut ops: Vec<&str> = comm.iter().map(|row| row.op.as_str()).collect();
            ops.dedup();
            ops.sort_unstable();
            ops.dedup();
            writeln!(
                f,
                "communication over {} ({} devices):",
                self.node.as_deref().unwrap_or("-"),
                self.workload.tp
            )?;
            writeln!(f, "  {:<op_w$} {:>6} {:>12}", "op", "calls", "total (us)")?;
            for op in ops {
                let seconds: f64 = comm
                    .iter()
                    .filter(|row| row.op == op)
                    .map(|row| row.seconds)
                    .sum();
                writeln!(f, "  {op:<op_w$} {:>6} {:>12.3}", count(op), seconds * 1e6)?;
            }
        }
        let m = &self.memory;
        write!(
            f,
            "memory per device: weights {:.1} MiB, KV cache {:.1} MiB ({} B per token per \
             layer, {:.1} KiB per token), activations {:.1} MiB, peak {:.1} MiB",
            mib(m.weight_bytes),
            mib(m.kv_cache_bytes),
            m.kv_bytes_per_token_layer,
            m.kv_bytes_per_token as f64 / 1024.0,
            mib(m.activation_bytes),
            mib(m.peak_bytes),
        )?;
        if let Some(capacity) = m.capacity_bytes {
            write!(
                f,
                " of {:.1} MiB ({})",
                mib(capacity),
                if m.peak_bytes <= capacity {
                    "fits"
                } else {
                    "does not fit"
                }
            )?;
        }
        if let Some(batch) = self.max_batch {
            write!(
                f,
                "\nlargest batch that fits: {batch} ({}, {} tokens cached per sequence, tp {})",
                self.workload.phase,
                self.workload.cached_tokens(),
                self.workload.tp
            )?;
        }
        Ok(())
    }
}
