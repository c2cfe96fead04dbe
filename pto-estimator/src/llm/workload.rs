//! What is served: the phase, the batch, the lengths and the tensor-parallel group.

use serde::Serialize;

/// The phase of serving one step estimates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// The whole prompt at once (time to first token).
    Prefill,
    /// One new token per sequence over its KV cache (time per output token).
    Decode,
}

impl core::fmt::Display for Phase {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.pad(match self {
            Phase::Prefill => "prefill",
            Phase::Decode => "decode",
        })
    }
}

/// How the decoder layers' linear weights are stored and multiplied (the embedding, the
/// norms and the LM head stay in the model's dtype).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Quant {
    /// In the model's dtype.
    #[default]
    None,
    /// int8 weights with a scale per output channel, activations quantised per token to
    /// int8: the cube multiplies int8 at its integer rate, the vector unit quantises the
    /// activations and dequantises the int32 result.
    W8A8,
    /// int4 weights (two to a byte) with a scale per output channel, activations in the
    /// model's dtype: the vector unit dequantises the weights, the cube multiplies in f16.
    W4A16,
}

impl core::fmt::Display for Quant {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.pad(match self {
            Quant::None => "none",
            Quant::W8A8 => "w8a8",
            Quant::W4A16 => "w4a16",
        })
    }
}

/// One serving step of a model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Workload {
    /// The model's name (for reports and errors).
    pub name: String,
    /// Prefill or decode.
    pub phase: Phase,
    /// Sequences served at once.
    pub batch: usize,
    /// Prompt tokens per sequence (prefill).
    pub seq: usize,
    /// Tokens already in each sequence's KV cache (decode); the new token attends to
    /// them and itself.
    pub context: usize,
    /// Devices of the tensor-parallel group (1: one device).
    pub tp: usize,
    /// The decoder layers' linears.
    pub quant: Quant,
}

impl Workload {
    /// Tokens each sequence holds in its KV cache after the step.
    pub fn cached_tokens(&self) -> usize {
        match self.phase {
            Phase::Prefill => self.seq,
            Phase::Decode => self.context + 1,
        }
    }

    /// A one-line summary: `decode, batch 1, context 1536, tp 8`.
    pub fn summary(&self) -> String {
        let length = match self.phase {
            Phase::Prefill => format!("seq {}", self.seq),
            Phase::Decode => format!("context {}", self.context),
        };
        let quant = match self.quant {
            Quant::None => String::new(),
            q => format!(", {q}"),
        };
        format!(
            "{}, batch {}, {length}, tp {}{quant}",
            self.phase, self.batch, self.tp
        )
    }
}
