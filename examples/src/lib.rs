//! Example operators, written as an operator author would write them.
//!
//! - [`gelu_affine`]: a fused element-wise chain with params, `y = gelu(x * scale + bias)`.
//! - [`rms_norm`], [`softmax`]: row-wise ops with kernels.
//! - [`moments`]: an op with two outputs, the mean and reciprocal standard deviation of each
//!   row (the statistics of a layer norm).
//! - [`matmul`]: a matrix product on the cube unit, tiled with a K-loop.
//! - [`flash_attention`]: single-head attention with an online softmax, cube and vector
//!   units working together.
//! - [`swiglu`]: a transformer's SwiGLU feed-forward block, fused: two projections, the
//!   gate and the down projection in one kernel.
//! - [`rope`]: rotary position embedding with the tile language's `sin`, `cos`, `floor` and
//!   `pow`; [`unary_math`] and [`binary_math`] apply one math function (sin, cos, floor,
//!   ceil, erf, exp2, log2; pow, rem, mod) element-wise, on a grid of the device's cores.
//!
//! - [`llm`]: the fused ops of an LLM serving graph (attention at prefill and at decode
//!   over a KV cache, rotary embedding, the LM head) and [`comm`]: the collectives of a
//!   tensor-parallel group, priced on a node profile's links (`pto estimate --llm`).
//!
//! [`models`] traces example models from these ops (and team B's, [`pto_team_b`]) and
//! registers them for the `pto` command line.
//!
//! `cargo run -p pto-examples --example describe` registers them, prints their schemas and
//! runs them on the CPU and the simulator.

mod attention;
pub mod comm;
mod cpu_kernels;
mod elementwise;
mod linalg;
pub mod llm;
mod math;
mod mlp;
pub mod models;
mod normalization;
mod reduction;

pub use attention::flash_attention;
pub use elementwise::gelu_affine;
pub use linalg::matmul;
pub use math::{binary_math, rope, unary_math};
pub use mlp::swiglu;
pub use normalization::{moments, rms_norm};
pub use reduction::softmax;

// The `mixed` model uses team B's ops; naming the crate links them.
pub use pto_team_b;
