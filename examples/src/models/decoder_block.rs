//! A transformer decoder block (one head): fused custom ops for attention and the MLP,
//! standard ops (`std.matmul`, `std.add`) for the projections and residuals.
//!
//! ```text
//! h = demo.rms_norm(x, g_attn)
//! r = x + demo.flash_attention(h @ w_q, h @ w_k, h @ w_v; causal) @ w_o
//! y = r + demo.swiglu(demo.rms_norm(r, g_mlp), w_gate, w_up, w_down)
//! ```

use pto_op::ops::{add, matmul};
use pto_op::{DType, Graph, Model, OpError, Shape};

use super::{gain, weight};
use crate::{flash_attention, rms_norm, swiglu};

/// Tokens.
pub const SEQ: usize = 64;
/// Model width (and head dim: one head).
pub const D_MODEL: usize = 64;
/// Hidden units of the MLP.
pub const D_HIDDEN: usize = 128;

/// The block over f32 `x` of `[SEQ, D_MODEL]`, weights seeded.
pub fn build() -> Result<Model, OpError> {
    let dtype = DType::F32;
    let graph = Graph::new();
    let x = graph.input("x", Shape::from([SEQ, D_MODEL]), dtype);
    let projection = |name: &str, rows: usize, cols: usize, seed: u64| {
        graph.weight(
            name,
            weight(&[rows, cols], dtype, seed, 1.0 / (rows as f64).sqrt()),
        )
    };
    let g_attn = graph.weight("g_attn", gain(D_MODEL, dtype, 1))?;
    let w_q = projection("w_q", D_MODEL, D_MODEL, 2)?;
    let w_k = projection("w_k", D_MODEL, D_MODEL, 3)?;
    let w_v = projection("w_v", D_MODEL, D_MODEL, 4)?;
    let w_o = projection("w_o", D_MODEL, D_MODEL, 5)?;
    let g_mlp = graph.weight("g_mlp", gain(D_MODEL, dtype, 6))?;
    let w_gate = projection("w_gate", D_MODEL, D_HIDDEN, 7)?;
    let w_up = projection("w_up", D_MODEL, D_HIDDEN, 8)?;
    let w_down = projection("w_down", D_HIDDEN, D_MODEL, 9)?;

    let norm = rms_norm::Params { eps: 1e-6 };
    let h = rms_norm::apply(&x, &g_attn, &norm)?;
    let q = matmul::apply(&h, &w_q, &matmul::Params {})?;
    let k = matmul::apply(&h, &w_k, &matmul::Params {})?;
    let v = matmul::apply(&h, &w_v, &matmul::Params {})?;
    let attention = flash_attention::apply(
        &q,
        &k,
        &v,
        &flash_attention::Params {
            causal: true,
            scale: 0.0,
        },
    )?;
    let attended = matmul::apply(&attention, &w_o, &matmul::Params {})?;
    let residual = add::apply(&x, &attended, &add::Params {})?;
    let m = rms_norm::apply(&residual, &g_mlp, &norm)?;
    let mlp = swiglu::apply(&m, &w_gate, &w_up, &w_down, &swiglu::Params {})?;
    let y = add::apply(&residual, &mlp, &add::Params {})?;
    graph.output(&y);
    graph.to_model("decoder-block")
}
