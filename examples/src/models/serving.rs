//! Serving steps of published LLMs, built from their Hugging Face configs
//! (`pto-estimator/data/llm/*.json`, each citing its model card) by
//! [`pto_estimator::llm::graph::build`], for estimation: one fused attention op per layer,
//! weights declared without data.

use pto_estimator::llm::{LlmConfig, Phase, Quant, Workload, graph};
use pto_op::{GraphDef, OpError};

/// Llama-2-7B's config.
pub const LLAMA_2_7B: &str = pto_estimator::llm::published::LLAMA_2_7B;
/// Qwen2-7B's config.
pub const QWEN2_7B: &str = pto_estimator::llm::published::QWEN2_7B;

/// The graph of one step of `config` on one device.
///
/// # Errors
///
/// A config or workload the builder refuses, as an [`OpError`] naming it.
pub fn describe(config: &str, workload: &Workload) -> Result<GraphDef, OpError> {
    let config = LlmConfig::parse(config).map_err(|e| OpError::invalid(e.to_string()))?;
    graph::build(&config, workload).map_err(|e| OpError::invalid(e.to_string()))
}

fn decode(name: &str, context: usize) -> Workload {
    Workload {
        name: name.to_owned(),
        phase: Phase::Decode,
        batch: 1,
        seq: 0,
        context,
        tp: 1,
        quant: Quant::None,
    }
}

/// Llama-2-7B decoding one token after 2,047 (batch 1, one device).
pub fn llama_2_7b_decode() -> Result<GraphDef, OpError> {
    describe(LLAMA_2_7B, &decode("llama-2-7b-decode", 2047))
}

/// Qwen2-7B decoding one token after 1,536 (batch 1, one device).
pub fn qwen2_7b_decode() -> Result<GraphDef, OpError> {
    describe(QWEN2_7B, &decode("qwen2-7b-decode", 1536))
}

/// The serving models are for estimation: their weights are declared without data.
pub fn build() -> Result<pto_op::Model, OpError> {
    Err(OpError::invalid(
        "the serving models declare their weights without data: they are for estimation \
         (`pto estimate llama-2-7b-decode`), not for running",
    ))
}
