//! Example operators, written as an operator author would write them.
//!
//! - [`gelu_affine`]: a fused element-wise chain with params, `y = gelu(x * scale + bias)`.
//! - [`rms_norm`], [`softmax`]: row-wise ops with kernels.
//! - [`moments`]: an op with two outputs, the mean and reciprocal standard deviation of each
//!   row (the statistics of a layer norm).
//!
//! `cargo run -p pto-examples --example describe` registers them, prints their schemas and
//! runs them on the CPU.

mod elementwise;
pub mod math;
mod normalization;
mod reduction;
pub mod tiling;

pub use elementwise::gelu_affine;
pub use normalization::{moments, rms_norm};
pub use reduction::softmax;

// The crate's parity tests run on the `cpu` and `sim` targets of pto-backends.
#[cfg(test)]
use pto_backends as _;
