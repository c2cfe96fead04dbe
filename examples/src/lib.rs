//! Example operators, written as an operator author would write them.
//!
//! - [`gelu_affine`]: a fused element-wise chain with params, `y = gelu(x * scale + bias)`.
//! - [`moments`]: an op with two outputs, the mean and reciprocal standard deviation of each
//!   row (the statistics of a layer norm).
//!
//! `cargo run -p pto-examples --example describe` registers them, prints their schemas and
//! runs them on the CPU.

mod elementwise;
pub mod math;
mod normalization;

pub use elementwise::gelu_affine;
pub use normalization::moments;
