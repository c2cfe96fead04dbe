//! Example models, each traced from the example ops and registered by name for the `pto`
//! command line (`pto run decoder-block`).
//!
//! - [`pipeline`]: one custom op feeds the next, with a weight.
//! - [`decoder_block`]: a transformer decoder block: fused custom ops and std ops.
//! - [`llama`]: a LLaMA-7B decoder stack at prefill with per-head attention, weights
//!   declared without data, for estimation.
//! - [`serving`]: decode steps of Llama-2-7B and Qwen2-7B from their configs, with fused
//!   attention over a KV cache (what `pto estimate --llm` builds), for estimation.
//! - [`mixed`]: std ops and the ops of two operator crates (two teams) in one model.
//!
//! [`walkthrough`] takes any of them end to end: describe, export (model file and ONNX),
//! compile, run on cpu and sim, compare. `cargo run -p pto-examples --example
//! decoder_block` (or `pipeline`, `mixed`) runs it.

pub mod decoder_block;
mod init;
pub mod llama;
pub mod mixed;
pub mod pipeline;
pub mod serving;
mod walkthrough;

pub use walkthrough::walkthrough;

use pto_op::models::ModelDef;
use pto_op::register_model;

register_model!(
    PIPELINE,
    ModelDef {
        name: "pipeline",
        description: "gelu_affine -> rms_norm (weight) -> softmax: one custom op feeds the next",
        build: pipeline::build,
        describe: None,
    }
);

register_model!(
    DECODER_BLOCK,
    ModelDef {
        name: "decoder-block",
        description: "a transformer decoder block: RMSNorm, Q/K/V projections, flash attention, \
                      output projection, residual, RMSNorm, fused SwiGLU MLP, residual",
        build: decoder_block::build,
        describe: None,
    }
);

register_model!(
    DECODER_BLOCK_F16,
    ModelDef {
        name: "decoder-block-f16",
        description: "the decoder block in f16 (input, weights and activations)",
        build: || decoder_block::build_in(pto_op::DType::F16),
        describe: None,
    }
);

register_model!(
    DECODER_BLOCK_STD,
    ModelDef {
        name: "decoder-block-std",
        description: "the decoder block with standard ops only (attention and SwiGLU unfused), \
                      for ONNX runtimes that know no custom ops",
        build: decoder_block::build_std,
        describe: None,
    }
);

register_model!(
    MIXED,
    ModelDef {
        name: "mixed",
        description: "standard ops and the ops of two operator crates in one model: std.*, demo.*, teamb.*",
        build: mixed::build,
        describe: None,
    }
);

register_model!(
    LLAMA_7B_PREFILL,
    ModelDef {
        name: "llama-7b-prefill",
        description: "LLaMA-7B prefill, 32 layers, 2048 tokens, f16, attention split per head; \
                      weights declared without data (estimation only: pto estimate)",
        build: llama::build,
        describe: Some(llama::describe),
    }
);

register_model!(
    LLAMA_2_7B_DECODE,
    ModelDef {
        name: "llama-2-7b-decode",
        description: "Llama-2-7B decoding one token after 2047, batch 1, f16, fused attention \
                      over the KV cache; weights declared without data (estimation only)",
        build: serving::build,
        describe: Some(serving::llama_2_7b_decode),
    }
);

register_model!(
    QWEN2_7B_DECODE,
    ModelDef {
        name: "qwen2-7b-decode",
        description: "Qwen2-7B decoding one token after 1536, batch 1, bf16, grouped-query \
                      attention over the KV cache; weights declared without data (estimation only)",
        build: serving::build,
        describe: Some(serving::qwen2_7b_decode),
    }
);
