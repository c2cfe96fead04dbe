//! Example operators, written as an operator author would write them.
//!
//! - [`gelu_affine`]: a fused element-wise chain with params, `y = gelu(x * scale + bias)`.
//! - [`moments`]: an op with two outputs, the mean and reciprocal standard deviation of each
//!   row (the statistics of a layer norm).
//! - [`matmul`]: a matrix product on the cube unit, tiled with a K-loop.
//! - [`flash_attention`]: single-head attention with an online softmax, cube and vector
//!   units working together.
//!
//! `cargo run -p pto-examples --example describe` registers them, prints their schemas and
//! runs them on the CPU.

mod attention;
mod elementwise;
pub mod math;
// The file is named after its op; the module cannot be, as the op's module takes the name.
#[path = "matmul.rs"]
mod matrix_product;
mod normalization;

pub use attention::flash_attention;
pub use elementwise::gelu_affine;
pub use matrix_product::matmul;
pub use normalization::moments;

// The parity tests run the kernels on the `sim` target, which pto-backends registers.
#[cfg(test)]
use pto_backends as _;
