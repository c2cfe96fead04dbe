//! A LLaMA-7B decoder stack at prefill, for estimation: 32 layers of hidden 4096, 32 heads
//! of 128, an MLP of 11008 and a vocabulary of 32000, over 2,048 tokens of f16, batch 1.
//!
//! The weights (~13 GB) are declared by type only ([`Graph::declare_weight`]): the graph is
//! complete and estimable, but has no data to run. Per layer:
//!
//! ```text
//! h = std.rms_norm(x, g_attn)
//! q, k, v = h @ w_q, h @ w_k, h @ w_v
//! q, k = rope(q), rope(k)            // per head: rotate_half with std.slice/std.concat
//! o_h = demo.flash_attention(q[:, h], k[:, h], v[:, h]; causal) for each of 32 heads
//! x = x + concat(o_h) @ w_o
//! m = std.rms_norm(x, g_mlp)
//! x = x + (std.silu(m @ w_gate) * (m @ w_up)) @ w_down
//! ```

use pto_op::ops::{add, concat, gather, matmul, mul, reshape, rms_norm, silu, slice};
use pto_op::{DType, Graph, GraphDef, OpError, Shape, Value};

use crate::flash_attention;

/// Tokens of the prefill.
pub const TOKENS: usize = 2048;
/// Model width.
pub const HIDDEN: usize = 4096;
/// Attention heads.
pub const HEADS: usize = 32;
/// Width of one head.
pub const HEAD_DIM: usize = 128;
/// Hidden units of the MLP.
pub const MLP: usize = 11008;
/// Vocabulary.
pub const VOCAB: usize = 32000;
/// Decoder layers.
pub const LAYERS: usize = 32;

const DTYPE: DType = DType::F16;

/// The graph: token ids `[TOKENS]` (i64), `cos` and `sin` `[TOKENS, HIDDEN]` (the rotary
/// tables, `sin` with the sign of rotate_half folded in) in, logits `[TOKENS, VOCAB]` out.
pub fn describe() -> Result<GraphDef, OpError> {
    let graph = Graph::new();
    let ids = graph.input("ids", Shape::from([TOKENS]), DType::I64);
    let cos = graph.input("cos", Shape::from([TOKENS, HIDDEN]), DTYPE);
    let sin = graph.input("sin", Shape::from([TOKENS, HIDDEN]), DTYPE);
    let weight = |name: String, dims: &[usize]| {
        graph.declare_weight(name, Shape::from(dims.to_vec()), DTYPE)
    };
    let embedding = weight("embedding".into(), &[VOCAB, HIDDEN])?;
    let mut x = gather::apply(&embedding, &ids, &gather::Params { axis: 0 })?;
    let norm = rms_norm::Params { eps: 1e-6 };
    let mm = matmul::Params {};
    for layer in 0..LAYERS {
        let w = |name: &str, dims: &[usize]| weight(format!("l{layer}.{name}"), dims);
        let h = rms_norm::apply(&x, &w("g_attn", &[HIDDEN])?, &norm)?;
        let q = matmul::apply(&h, &w("w_q", &[HIDDEN, HIDDEN])?, &mm)?;
        let k = matmul::apply(&h, &w("w_k", &[HIDDEN, HIDDEN])?, &mm)?;
        let v = matmul::apply(&h, &w("w_v", &[HIDDEN, HIDDEN])?, &mm)?;
        let (q, k) = (rope(&q, &cos, &sin)?, rope(&k, &cos, &sin)?);
        let mut attended: Option<Value> = None;
        for head in 0..HEADS {
            let columns = |t: &Value| {
                let start = (head * HEAD_DIM) as i64;
                slice::apply(
                    t,
                    &slice::Params {
                        starts: vec![start],
                        ends: vec![start + HEAD_DIM as i64],
                        axes: vec![1],
                        steps: Vec::new(),
                    },
                )
            };
            let params = flash_attention::Params {
                causal: true,
                scale: 0.0,
            };
            let o = flash_attention::apply(&columns(&q)?, &columns(&k)?, &columns(&v)?, &params)?;
            attended = Some(match attended {
                None => o,
                Some(left) => concat::apply(&left, &o, &concat::Params { axis: 1 })?,
            });
        }
        let attended = attended.ok_or_else(|| OpError::invalid("a model needs a head"))?;
        let projected = matmul::apply(&attended, &w("w_o", &[HIDDEN, HIDDEN])?, &mm)?;
        x = add::apply(&x, &projected, &add::Params {})?;
        let m = rms_norm::apply(&x, &w("g_mlp", &[HIDDEN])?, &norm)?;
        let gate = silu::apply(
            &matmul::apply(&m, &w("w_gate", &[HIDDEN, MLP])?, &mm)?,
            &silu::Params {},
        )?;
        let up = matmul::apply(&m, &w("w_up", &[HIDDEN, MLP])?, &mm)?;
        let mixed = mul::apply(&gate, &up, &mul::Params {})?;
        let down = matmul::apply(&mixed, &w("w_down", &[MLP, HIDDEN])?, &mm)?;
        x = add::apply(&x, &down, &add::Params {})?;
    }
    let x = rms_norm::apply(&x, &weight("g_final".into(), &[HIDDEN])?, &norm)?;
    let logits = matmul::apply(&x, &weight("lm_head".into(), &[HIDDEN, VOCAB])?, &mm)?;
    graph.output(&logits);
    Ok(graph.def())
}

/// Rotary embedding of `[TOKENS, HIDDEN]`: `t * cos + rotate_half(t) * sin`, rotate_half
/// swapping the halves of every head (its sign is folded into `sin`).
fn rope(t: &Value, cos: &Value, sin: &Value) -> Result<Value, OpError> {
    let heads = reshape::apply(
        t,
        &reshape::Params {
            shape: vec![TOKENS as i64, HEADS as i64, HEAD_DIM as i64],
            allowzero: false,
        },
    )?;
    let half = (HEAD_DIM / 2) as i64;
    let part = |start: i64, end: i64| {
        slice::apply(
            &heads,
            &slice::Params {
                starts: vec![start],
                ends: vec![end],
                axes: vec![2],
                steps: Vec::new(),
            },
        )
    };
    let swapped = concat::apply(
        &part(half, 2 * half)?,
        &part(0, half)?,
        &concat::Params { axis: 2 },
    )?;
    let rotated = reshape::apply(
        &swapped,
        &reshape::Params {
            shape: vec![TOKENS as i64, HIDDEN as i64],
            allowzero: false,
        },
    )?;
    let straight = mul::apply(t, cos, &mul::Params {})?;
    let turned = mul::apply(&rotated, sin, &mul::Params {})?;
    add::apply(&straight, &turned, &add::Params {})
}

/// The model cannot be built with weights: they would take ~13 GB. Estimate it instead.
pub fn build() -> Result<pto_op::Model, OpError> {
    Err(OpError::invalid(
        "llama-7b-prefill declares ~13 GB of f16 weights without data: it is for estimation \
         (`pto estimate llama-7b-prefill`), not for running",
    ))
}
