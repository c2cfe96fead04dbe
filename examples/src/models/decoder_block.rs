//! A transformer decoder block (one head): fused custom ops for attention and the MLP,
//! standard ops (`std.matmul`, `std.add`) for the projections and residuals.
//!
//! ```text
//! h = demo.rms_norm(x, g_attn)
//! r = x + demo.flash_attention(h @ w_q, h @ w_k, h @ w_v; causal) @ w_o
//! y = r + demo.swiglu(demo.rms_norm(r, g_mlp), w_gate, w_up, w_down)
//! ```

use pto_op::ops::{
    add, concat, matmul, mul, rms_norm as std_rms_norm, silu, slice, softmax, transpose,
};
use pto_op::{DType, Graph, Model, OpError, Shape, Tensor, Value};

use super::init::{gain, weight};
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
        BlockWeights::declare_sized(graph, dtype, D_MODEL, D_HIDDEN)
    }

    fn declare_sized(
        graph: &Graph,
        dtype: DType,
        d_model: usize,
        d_hidden: usize,
    ) -> Result<BlockWeights, OpError> {
        // Projections are uniform in +-1/sqrt(fan_in), so activations keep their scale.
        let projection = |name: &str, rows: usize, cols: usize, seed: u64| {
            graph.weight(
                name,
                weight(&[rows, cols], dtype, seed, 1.0 / (rows as f64).sqrt()),
            )
        };
        Ok(BlockWeights {
            g_attn: graph.weight("g_attn", gain(d_model, dtype, 1))?,
            w_q: projection("w_q", d_model, d_model, 2)?,
            w_k: projection("w_k", d_model, d_model, 3)?,
            w_v: projection("w_v", d_model, d_model, 4)?,
            w_o: projection("w_o", d_model, d_model, 5)?,
            g_mlp: graph.weight("g_mlp", gain(d_model, dtype, 6))?,
            w_gate: projection("w_gate", d_model, d_hidden, 7)?,
            w_up: projection("w_up", d_model, d_hidden, 8)?,
            w_down: projection("w_down", d_hidden, d_model, 9)?,
        })
    }
}

/// The block over f32 `x` of `[SEQ, D_MODEL]`, weights seeded.
pub fn build() -> Result<Model, OpError> {
    build_in(DType::F32)
}

/// The block over `x` of `[SEQ, D_MODEL]` in `dtype` (f32, f16 or bf16), its weights seeded
/// and of the same dtype: [`build`] in another float dtype (the built-in model
/// `decoder-block-f16` is it in f16), named `decoder-block`, `decoder-block-f16` or
/// `decoder-block-bf16`.
pub fn build_in(dtype: DType) -> Result<Model, OpError> {
    if !matches!(dtype, DType::F32 | DType::F16 | DType::BF16) {
        return Err(OpError::invalid(format!(
            "the decoder block is built in f32, f16 or bf16, not {dtype}"
        )));
    }
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
    graph.to_model(match dtype {
        DType::F32 => "decoder-block",
        DType::F16 => "decoder-block-f16",
        _ => "decoder-block-bf16",
    })
}

/// The width of a decoder block written with standard ops ([`build_std_sized`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StdBlockSize {
    /// Tokens.
    pub seq: usize,
    /// Model width.
    pub d_model: usize,
    /// Attention heads; `d_model` must be a multiple of it.
    pub heads: usize,
    /// Hidden units of the MLP.
    pub d_hidden: usize,
}

impl StdBlockSize {
    /// The block of [`build_std`]: 64 tokens, width 64, one head, 128 hidden units.
    pub const SMALL: StdBlockSize = StdBlockSize {
        seq: SEQ,
        d_model: D_MODEL,
        heads: 1,
        d_hidden: D_HIDDEN,
    };

    /// A decoder layer at a real width: 128 tokens, width 2048 in 16 heads of 128, 5632
    /// hidden units (the MLP width of 2048-wide LLaMA-style models).
    pub const WIDE: StdBlockSize = StdBlockSize {
        seq: 128,
        d_model: 2048,
        heads: 16,
        d_hidden: 5632,
    };
}

/// The same block written with standard ops only, so that any ONNX runtime can run its
/// export: attention as `softmax(q k^T * scale + causal mask) v` and the MLP as
/// `(silu(m w_gate) * (m w_up)) w_down`. Same shapes and weights as [`build`]; the causal
/// mask and the score scale are weights.
pub fn build_std() -> Result<Model, OpError> {
    build_std_sized(StdBlockSize::SMALL, "decoder-block-std")
}

/// [`build_std`] at any width, named `name`. With several heads, q, k and v are sliced into
/// heads by columns, each head attends on its own (scale `1/sqrt(d_model / heads)`), and
/// the heads are concatenated back (a balanced tree of `std.concat`) before `w_o`. With one
/// head it is exactly the graph of [`build_std`].
///
/// # Errors
///
/// `heads` is 0 or does not divide `d_model`, or an op rejects its inputs.
pub fn build_std_sized(size: StdBlockSize, name: &str) -> Result<Model, OpError> {
    let StdBlockSize {
        seq,
        d_model,
        heads,
        d_hidden,
    } = size;
    if heads == 0 || d_model % heads != 0 {
        return Err(OpError::invalid(format!(
            "decoder block {name}: {heads} heads do not divide the width {d_model}"
        )));
    }
    let head_dim = d_model / heads;
    let dtype = DType::F32;
    let graph = Graph::new();
    let x = graph.input("x", Shape::from([seq, d_model]), dtype);
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
    } = BlockWeights::declare_sized(&graph, dtype, d_model, d_hidden)?;
    let scale = graph.weight(
        "scale",
        Tensor::from_vec([1], vec![1.0 / (head_dim as f32).sqrt()]).map_err(OpError::from)?,
    )?;
    // Key j is visible to query i when j <= i; a large finite negative keeps softmax finite.
    let mask = Tensor::from_f64_fn([seq, seq], dtype, |i| if i[1] <= i[0] { 0.0 } else { -1e9 });
    let mask = graph.weight("causal_mask", mask)?;

    let norm = std_rms_norm::Params { eps: 1e-6 };
    let h = std_rms_norm::apply(&x, &g_attn, &norm)?;
    let (q, k, v) = (mm(&h, &w_q)?, mm(&h, &w_k)?, mm(&h, &w_v)?);
    let attend = |q: &Value, k: &Value, v: &Value| -> Result<Value, OpError> {
        let k_t = transpose::apply(k, &transpose::Params { perm: vec![1, 0] })?;
        let scores = mul::apply(&mm(q, &k_t)?, &scale, &mul::Params {})?;
        let scores = add::apply(&scores, &mask, &add::Params {})?;
        let probs = softmax::apply(&scores, &softmax::Params { axis: -1 })?;
        mm(&probs, v)
    };
    let attention = if heads == 1 {
        attend(&q, &k, &v)?
    } else {
        let columns = |t: &Value, head: usize| {
            let start = (head * head_dim) as i64;
            slice::apply(
                t,
                &slice::Params {
                    starts: vec![start],
                    ends: vec![start + head_dim as i64],
                    axes: vec![1],
                    steps: Vec::new(),
                },
            )
        };
        let mut parts = (0..heads)
            .map(|head| {
                attend(
                    &columns(&q, head)?,
                    &columns(&k, head)?,
                    &columns(&v, head)?,
                )
            })
            .collect::<Result<Vec<Value>, OpError>>()?;
        while parts.len() > 1 {
            let mut pending = parts.into_iter();
            let mut joined = Vec::new();
            while let Some(a) = pending.next() {
                joined.push(match pending.next() {
                    Some(b) => concat::apply(&a, &b, &concat::Params { axis: 1 })?,
                    None => a,
                });
            }
            parts = joined;
        }
        parts
            .pop()
            .ok_or_else(|| OpError::invalid(format!("decoder block {name}: no heads")))?
    };
    let attended = mm(&attention, &w_o)?;
    let residual = add::apply(&x, &attended, &add::Params {})?;
    let m = std_rms_norm::apply(&residual, &g_mlp, &norm)?;
    let gate = silu::apply(&mm(&m, &w_gate)?, &silu::Params {})?;
    let hidden = mul::apply(&gate, &mm(&m, &w_up)?, &mul::Params {})?;
    let y = add::apply(&residual, &mm(&hidden, &w_down)?, &add::Params {})?;
    graph.output(&y);
    graph.into_model(name)
}

/// A SwiGLU MLP block with its residual, standard ops only:
/// `y = x + (silu(x w_gate) * (x w_up)) w_down` over f32 `x` of `[seq, d_model]`, weights
/// seeded (uniform in +-1/sqrt(fan_in)). At `seq 32, d_model 4096, d_hidden 11008` it is
/// the MLP of a LLaMA-7B layer.
///
/// # Errors
///
/// An op rejects its inputs (not for any positive sizes).
pub fn build_mlp_std(seq: usize, d_model: usize, d_hidden: usize) -> Result<Model, OpError> {
    let dtype = DType::F32;
    let graph = Graph::new();
    let x = graph.input("x", Shape::from([seq, d_model]), dtype);
    let projection = |name: &str, rows: usize, cols: usize, seed: u64| {
        graph.weight(
            name,
            weight(&[rows, cols], dtype, seed, 1.0 / (rows as f64).sqrt()),
        )
    };
    let w_gate = projection("w_gate", d_model, d_hidden, 7)?;
    let w_up = projection("w_up", d_model, d_hidden, 8)?;
    let w_down = projection("w_down", d_hidden, d_model, 9)?;
    let gate = silu::apply(&mm(&x, &w_gate)?, &silu::Params {})?;
    let hidden = mul::apply(&gate, &mm(&x, &w_up)?, &mul::Params {})?;
    let y = add::apply(&x, &mm(&hidden, &w_down)?, &add::Params {})?;
    graph.output(&y);
    // The graph's last handle moves its weights into the model instead of copying them.
    drop((x, w_gate, w_up, w_down, gate, hidden, y));
    graph.into_model("mlp-block-std")
}

fn mm(a: &Value, b: &Value) -> Result<Value, OpError> {
    matmul::apply(a, b, &matmul::Params {})
}
