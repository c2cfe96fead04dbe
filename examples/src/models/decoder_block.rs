//! A transformer decoder block (one head): fused custom ops for attention and the MLP,
//! standard ops (`std.matmul`, `std.add`) for the projections and residuals.
//!
//! ```text
//! h = demo.rms_norm(x, g_attn)
//! r = x + demo.flash_attention(h @ w_q, h @ w_k, h @ w_v; causal) @ w_o
//! y = r + demo.swiglu(demo.rms_norm(r, g_mlp), w_gate, w_up, w_down)
//! ```

use pto_op::ops::{add, matmul, mul, rms_norm as std_rms_norm, silu, softmax, transpose};
use pto_op::{DType, Graph, Model, OpError, Shape, Tensor, Value};

use super::{gain, weight};
use crate::{flash_attention, rms_norm, swiglu};

/// Tokens.
pub const SEQ: usize = 64;
/// Model width (and head dim: one head).
pub const D_MODEL: usize = 64;
/// Hidden units of the MLP.
pub const D_HIDDEN: usize = 128;

/// The weights of one block, seeded: both forms of the block use the same ones.
struct BlockWeights {
    g_attn: Value,
    w_q: Value,
    w_k: Value,
    w_v: Value,
    w_o: Value,
    g_mlp: Value,
    w_gate: Value,
    w_up: Value,
    w_down: Value,
}

impl BlockWeights {
    fn declare(graph: &Graph, dtype: DType) -> Result<BlockWeights, OpError> {
        // Projections are uniform in +-1/sqrt(fan_in), so activations keep their scale.
        let projection = |name: &str, rows: usize, cols: usize, seed: u64| {
            graph.weight(
                name,
                weight(&[rows, cols], dtype, seed, 1.0 / (rows as f64).sqrt()),
            )
        };
        Ok(BlockWeights {
            g_attn: graph.weight("g_attn", gain(D_MODEL, dtype, 1))?,
            w_q: projection("w_q", D_MODEL, D_MODEL, 2)?,
            w_k: projection("w_k", D_MODEL, D_MODEL, 3)?,
            w_v: projection("w_v", D_MODEL, D_MODEL, 4)?,
            w_o: projection("w_o", D_MODEL, D_MODEL, 5)?,
            g_mlp: graph.weight("g_mlp", gain(D_MODEL, dtype, 6))?,
            w_gate: projection("w_gate", D_MODEL, D_HIDDEN, 7)?,
            w_up: projection("w_up", D_MODEL, D_HIDDEN, 8)?,
            w_down: projection("w_down", D_HIDDEN, D_MODEL, 9)?,
        })
    }
}

/// The block over f32 `x` of `[SEQ, D_MODEL]`, weights seeded.
pub fn build() -> Result<Model, OpError> {
    let dtype = DType::F32;
    let graph = Graph::new();
    let x = graph.input("x", Shape::from([SEQ, D_MODEL]), dtype);
    let BlockWeights {
        g_attn,
        w_q,
        w_k,
        w_v,
        w_o,
        g_mlp,
        w_gate,
        w_up,
        w_down,
    } = BlockWeights::declare(&graph, dtype)?;

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

/// The same block written with standard ops only, so that any ONNX runtime can run its
/// export: attention as `softmax(q k^T * scale + causal mask) v` and the MLP as
/// `(silu(m w_gate) * (m w_up)) w_down`. Same shapes and weights as [`build`]; the causal
/// mask and the score scale are weights.
pub fn build_std() -> Result<Model, OpError> {
    let dtype = DType::F32;
    let graph = Graph::new();
    let x = graph.input("x", Shape::from([SEQ, D_MODEL]), dtype);
    let BlockWeights {
        g_attn,
        w_q,
        w_k,
        w_v,
        w_o,
        g_mlp,
        w_gate,
        w_up,
        w_down,
    } = BlockWeights::declare(&graph, dtype)?;
    let scale = graph.weight(
        "scale",
        Tensor::from_vec([1], vec![1.0 / (D_MODEL as f32).sqrt()]).map_err(OpError::from)?,
    )?;
    // Key j is visible to query i when j <= i; a large finite negative keeps softmax finite.
    let mask = Tensor::from_f64_fn([SEQ, SEQ], dtype, |i| if i[1] <= i[0] { 0.0 } else { -1e9 });
    let mask = graph.weight("causal_mask", mask)?;

    let norm = std_rms_norm::Params { eps: 1e-6 };
    let h = std_rms_norm::apply(&x, &g_attn, &norm)?;
    let (q, k, v) = (mm(&h, &w_q)?, mm(&h, &w_k)?, mm(&h, &w_v)?);
    let k_t = transpose::apply(&k, &transpose::Params { perm: vec![1, 0] })?;
    let scores = mul::apply(&mm(&q, &k_t)?, &scale, &mul::Params {})?;
    let scores = add::apply(&scores, &mask, &add::Params {})?;
    let probs = softmax::apply(&scores, &softmax::Params { axis: -1 })?;
    let attended = mm(&mm(&probs, &v)?, &w_o)?;
    let residual = add::apply(&x, &attended, &add::Params {})?;
    let m = std_rms_norm::apply(&residual, &g_mlp, &norm)?;
    let gate = silu::apply(&mm(&m, &w_gate)?, &silu::Params {})?;
    let hidden = mul::apply(&gate, &mm(&m, &w_up)?, &mul::Params {})?;
    let y = add::apply(&residual, &mm(&hidden, &w_down)?, &add::Params {})?;
    graph.output(&y);
    graph.to_model("decoder-block-std")
}

fn mm(a: &Value, b: &Value) -> Result<Value, OpError> {
    matmul::apply(a, b, &matmul::Params {})
}
