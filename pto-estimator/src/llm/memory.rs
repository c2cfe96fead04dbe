//! Memory per device: weights, KV cache, activations, their sum, and the largest batch that
//! fits.

use pto_op::graph::Liveness;
use pto_op::{GraphDef, ValueKind};
use serde::Serialize;

use super::config::LlmConfig;
use super::graph::{Shard, build};
use super::workload::Workload;
use crate::EstimateError;

/// The memory one device of the group holds for one serving step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MemoryReport {
    /// Weight bytes on the device (its shards, and the replicated embedding and norms).
    pub weight_bytes: u64,
    /// KV cache bytes of one token in one layer on the device (keys and values).
    pub kv_bytes_per_token_layer: u64,
    /// KV cache bytes of one token over every layer on the device.
    pub kv_bytes_per_token: u64,
    /// KV cache bytes of the whole batch after the step.
    pub kv_cache_bytes: u64,
    /// The most activation bytes alive at once (the KV cache counted above, not here).
    pub activation_bytes: u64,
    /// Weights + KV cache + activations.
    pub peak_bytes: u64,
    /// The device's memory, from its node profile, when known.
    pub capacity_bytes: Option<u64>,
}

impl MemoryReport {
    /// The memory of `graph`, the graph [`build`] made for `workload`.
    ///
    /// # Errors
    ///
    /// A workload that does not fit the model.
    pub fn of(
        config: &LlmConfig,
        workload: &Workload,
        graph: &GraphDef,
        capacity_bytes: Option<u64>,
    ) -> Result<MemoryReport, EstimateError> {
        let shard = Shard::of(config, workload)?;
        let dtype = config.dtype()?;
        let per_layer =
            2 * (shard.kv_heads * config.head_size()) as u64 * dtype.size_bytes() as u64;
        let per_token = per_layer * config.num_hidden_layers as u64;
        let kv_cache_bytes = per_token * (workload.batch * workload.cached_tokens()) as u64;
        let weight_bytes = graph
            .weights
            .iter()
            .filter_map(|&id| graph.values.get(id))
            .map(|v| v.ty.bytes())
            .sum();
        // The cache is resident for the whole step: it is counted once, above, and not as
        // an input that dies after its layer.
        let mut resident = graph.clone();
        for value in &mut resident.values {
            if value.kind == ValueKind::Input && value.name.ends_with("_cache") {
                value.kind = ValueKind::Weight;
            }
        }
        let activation_bytes = Liveness::of(&resident).peak_bytes;
        Ok(MemoryReport {
            weight_bytes,
            kv_bytes_per_token_layer: per_layer,
            kv_bytes_per_token: per_token,
            kv_cache_bytes,
            activation_bytes,
            peak_bytes: weight_bytes + kv_cache_bytes + activation_bytes,
            capacity_bytes,
        })
    }

    /// Whether the step fits the device's memory (`None` when the capacity is unknown).
    pub fn fits(&self) -> Option<bool> {
        self.capacity_bytes.map(|c| self.peak_bytes <= c)
    }
}

/// The largest batch of `workload` (its phase, lengths and group) whose weights, KV
/// cache and activations fit `capacity_bytes` per device; 0 when not even one sequence
/// does. Memory grows with the batch, so a doubling search and then a bisection find it.
///
/// # Errors
///
/// A workload that does not fit the model.
pub fn max_batch(
    config: &LlmConfig,
    workload: &Workload,
    capacity_bytes: u64,
) -> Result<usize, EstimateError> {
    let fits = |batch: usize| -> Result<bool, EstimateError> {
        let trial = Workload {
            batch,
            ..workload.clone()
        };
        let graph = build(config, &trial)?;
        Ok(
            MemoryReport::of(config, &trial, &graph, Some(capacity_bytes))?.peak_bytes
                <= capacity_bytes,
        )
    };
    if !fits(1)? {
        return Ok(0);
    }
    let (mut low, mut high) = (1usize, 2usize);
    while fits(high)? {
        low = high;
        high = high.saturating_mul(2);
        if high > 1 << 20 {
            return Ok(low);
        }
    }
    // fits(low), not fits(high)
    while high - low > 1 {
        let mid = low + (high - low) / 2;
        if fits(mid)? {
            low = mid;
        } else {
            high = mid;
        }
    }
    Ok(low)
}
