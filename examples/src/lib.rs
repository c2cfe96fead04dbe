//! Example operators, written as an operator author would write them.
//!
//! - [`gelu_affine`]: a fused element-wise chain with params, `y = gelu(x * scale + bias)`.
//! - [`rms_norm`], [`softmax`]: row-wise ops with kernels.
//! - [`moments`]: an op with two outputs, the mean and reciprocal standard deviation of each
//!   row (the statistics of a layer norm).
//! - [`matmul`]: a matrix product on the cube unit, tiled with a K-loop.
//! - [`flash_attention`]: single-head attention with an online softmax, cube and vector
//!   units working together.
//!
//! `cargo run -p pto-examples --example describe` registers them, prints their schemas and
//! runs them on the CPU and the simulator.

mod attention;
mod elementwise;
mod linalg;
mod normalization;
mod reduction;

pub use attention::flash_attention;
pub use elementwise::gelu_affine;
pub use linalg::matmul;
pub use normalization::{moments, rms_norm};
pub use reduction::softmax;

// The crate's parity tests run on the `cpu` and `sim` targets of pto-backends.
#[cfg(test)]
use pto_backends as _;
