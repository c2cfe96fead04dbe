//! One device's graph of a decoder-only LLM at prefill or decode, sharded over a
//! tensor-parallel group.

use pto_op::ops::{add, gather, matmul, mul, reshape, rms_norm, silu, slice};
use pto_op::{AttrValue, Attributes, DType, Graph, GraphDef, OpError, Shape, Value, registry};

use super::config::LlmConfig;
use super::workload::{Phase, Quant, Workload};
use crate::EstimateError;

/// The fused ops the graph calls by name; an operator crate links them (pto-examples'
/// `llm` and `comm` modules do).
pub mod ops {
    /// Causal attention over a whole prompt, grouped-query: `q [b, s, h, d]`, `k` and `v`
    /// `[b, s, kv, d]` -> `[b, s, h, d]`.
    pub const PREFILL_ATTENTION: &str = "llm.prefill_attention";
    /// One new token per sequence attending to its KV cache: `q [b, h, d]`, the new `k`
    /// and `v` `[b, kv, d]`, the caches `[b, t, kv, d]` -> `[b, h, d]`.
    pub const DECODE_ATTENTION: &str = "llm.decode_attention";
    /// Rotary position embedding of `x [n, h, d]` by `cos` and `sin` `[n, d]`.
    pub const ROTARY: &str = "llm.rotary_embedding";
    /// The LM head: `x [n, hidden] @ table[vocab, hidden]^T` (the table is the embedding
    /// when they are tied).
    pub const LM_HEAD: &str = "llm.lm_head";
    /// A quantised linear, `x [n, k] @ w * scale` (`scheme` w8a8: `w` int8 `[k, m]`;
    /// w4a16: `w` int4 packed two to a byte, `[k / 2, m]`), `scale [m]`.
    pub const QUANT_LINEAR: &str = "llm.quant_linear";
    /// A mixture-of-experts MLP: `x [n, hidden]`, the router's logits `[n, experts]`, the
    /// experts' `w_gate` and `w_up` `[experts, hidden, e]` and `w_down` `[experts, e,
    /// hidden]` to `[n, hidden]`; `top_k` experts per token.
    pub const MOE: &str = "llm.moe_ffn";
    /// Sum over the tensor-parallel group.
    pub const ALL_REDUCE: &str = "comm.all_reduce";
    /// Concatenation over the tensor-parallel group along the last axis.
    pub const ALL_GATHER: &str = "comm.all_gather";
}

/// The graph one device of the group runs for `workload`: token ids (and in decode the
/// KV cache of every layer) in, the logits of the last position of every sequence out.
///
/// Per layer: RMSNorm; Q, K, V projections (column-parallel: each device holds
/// `heads / tp` query heads and `kv_heads / tp` key-value heads, or one replicated
/// key-value head when there are fewer than devices), their bias for Qwen2, rotary on Q and
/// K; one fused attention op (prefill: causal flash attention over the prompt; decode:
/// the new token over its cache); the output projection (row-parallel) and an all-reduce;
/// the residual; RMSNorm; the gated MLP (gate and up column-parallel, down row-parallel)
/// and an all-reduce; the residual. Then the final norm on the last position of each
/// sequence, the LM head (each device a `vocab / tp` slice) and an all-gather of the logits.
///
/// A mixture-of-experts layer (see [`LlmConfig::is_moe_layer`]) has a router and one
/// [`ops::MOE`] instead of the MLP, plus its shared experts as a dense MLP; with
/// `workload.quant` the decoder layers' linears are [`ops::QUANT_LINEAR`].
///
/// # Errors
///
/// A workload that does not fit the model (heads not divisible by `tp`, zero sizes), or
/// a fused op that is not linked into the program.
pub fn build(config: &LlmConfig, workload: &Workload) -> Result<GraphDef, EstimateError> {
    let shard = Shard::of(config, workload)?;
    let op = |e: OpError| EstimateError::Workload {
        model: workload.name.clone(),
        message: e.to_string(),
    };
    describe(config, workload, &shard).map_err(op)
}

/// The sizes one device holds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Shard {
    pub heads: usize,
    pub kv_heads: usize,
    pub mlp: usize,
    /// Hidden units of one expert on the device (each expert's MLP sharded like the
    /// dense one).
    pub expert: usize,
    pub vocab: usize,
}

impl Shard {
    pub(crate) fn of(config: &LlmConfig, workload: &Workload) -> Result<Shard, EstimateError> {
        let tp = workload.tp;
        let fail = |message: String| {
            Err(EstimateError::Workload {
                model: workload.name.clone(),
                message,
            })
        };
        if tp == 0 || workload.batch == 0 {
            return fail("`--tp` and `--batch` must be at least 1".to_owned());
        }
        let (heads, kv) = (config.num_attention_heads, config.kv_heads());
        if !heads.is_multiple_of(tp) {
            return fail(format!(
                "tensor parallelism {tp} does not divide the {heads} attention heads: \
                 choose a `--tp` that does"
            ));
        }
        if !kv.is_multiple_of(tp) && !tp.is_multiple_of(kv) {
            return fail(format!(
                "tensor parallelism {tp} neither divides the {kv} key-value heads nor is \
                 a multiple of them (so they cannot be replicated evenly)"
            ));
        }
        if !config.intermediate_size.is_multiple_of(tp) {
            return fail(format!(
                "tensor parallelism {tp} does not divide the MLP's {} hidden units",
                config.intermediate_size
            ));
        }
        if config.experts.is_some() && !config.expert_size().is_multiple_of(tp) {
            return fail(format!(
                "tensor parallelism {tp} does not divide an expert's {} hidden units",
                config.expert_size()
            ));
        }
        Ok(Shard {
            expert: config.expert_size() / tp,
            heads: heads / tp,
            kv_heads: (kv / tp).max(1),
            mlp: config.intermediate_size / tp,
            vocab: config.vocab_size.div_ceil(tp),
        })
    }
}

fn attrs(pairs: &[(&str, AttrValue)]) -> Attributes {
    pairs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), value.clone()))
        .collect()
}

fn call(op: &str, inputs: &[&Value], attributes: Attributes) -> Result<Value, OpError> {
    let def = registry::find(op).map_err(|e| {
        OpError::invalid(format!(
            "{e}: the LLM graph calls `{op}`; link an operator crate that has it \
             (pto-examples' `llm` and `comm` modules)"
        ))
    })?;
    Graph::trace(def, inputs, attributes)?
        .into_iter()
        .next()
        .ok_or_else(|| OpError::invalid(format!("`{op}` has no output")))
}

fn view(x: &Value, dims: &[usize]) -> Result<Value, OpError> {
    reshape::apply(
        x,
        &reshape::Params {
            shape: dims.iter().map(|&d| d as i64).collect(),
            allowzero: false,
        },
    )
}

fn describe(config: &LlmConfig, workload: &Workload, shard: &Shard) -> Result<GraphDef, OpError> {
    let dtype = config
        .dtype()
        .map_err(|e| OpError::invalid(e.to_string()))?;
    let (hidden, head) = (config.hidden_size, config.head_size());
    let (batch, tp) = (workload.batch, workload.tp as i64);
    let (tokens, per_sequence) = match workload.phase {
        Phase::Prefill => (batch * workload.seq, workload.seq),
        Phase::Decode => (batch, 1),
    };
    let graph = Graph::new();
    let ids = graph.input("ids", Shape::from([tokens]), DType::I64);
    let cos = graph.input("cos", Shape::from([tokens, head]), dtype);
    let sin = graph.input("sin", Shape::from([tokens, head]), dtype);
    let weight = |name: String, dims: &[usize]| {
        graph.declare_weight(name, Shape::from(dims.to_vec()), dtype)
    };
    let embedding = weight("embedding".into(), &[config.vocab_size, hidden])?;
    let mut x = gather::apply(&embedding, &ids, &gather::Params { axis: 0 })?;
    let norm = rms_norm::Params {
        eps: config.rms_norm_eps as f32,
    };
    let mm = matmul::Params {};
    let reduce = |v: &Value| -> Result<Value, OpError> {
        if tp == 1 {
            return Ok(v.clone());
        }
        call(
            ops::ALL_REDUCE,
            &[v],
            attrs(&[("ranks", AttrValue::I64(tp))]),
        )
    };
    let (q_width, kv_width) = (shard.heads * head, shard.kv_heads * head);
    for layer in 0..config.num_hidden_layers {
        let w = |name: &str, dims: &[usize]| weight(format!("l{layer}.{name}"), dims);
        let linear =
            |h: &Value, name: &str, depth: usize, width: usize| -> Result<Value, OpError> {
                let scheme = match workload.quant {
                    Quant::None => return matmul::apply(h, &w(name, &[depth, width])?, &mm),
                    Quant::W8A8 => "w8a8",
                    Quant::W4A16 => "w4a16",
                };
                let rows = if workload.quant == Quant::W4A16 {
                    depth.div_ceil(2)
                } else {
                    depth
                };
                let packed = graph.declare_weight(
                    format!("l{layer}.{name}"),
                    Shape::from([rows, width]),
                    DType::I8,
                )?;
                let scale = w(&format!("{name}.scale"), &[width])?;
                call(
                    ops::QUANT_LINEAR,
                    &[h, &packed, &scale],
                    attrs(&[("scheme", AttrValue::String(scheme.to_owned()))]),
                )
            };
        let project = |h: &Value, name: &str, width: usize| -> Result<Value, OpError> {
            let y = linear(h, name, hidden, width)?;
            if config.qkv_bias() {
                add::apply(&y, &w(&format!("{name}.bias"), &[width])?, &add::Params {})
            } else {
                Ok(y)
            }
        };
        let h = rms_norm::apply(&x, &w("g_attn", &[hidden])?, &norm)?;
        let q = project(&h, "w_q", q_width)?;
        let k = project(&h, "w_k", kv_width)?;
        let v = project(&h, "w_v", kv_width)?;
        let rotate = |t: &Value, heads: usize| -> Result<Value, OpError> {
            call(
                ops::ROTARY,
                &[&view(t, &[tokens, heads, head])?, &cos, &sin],
                Attributes::new(),
            )
        };
        let q = rotate(&q, shard.heads)?;
        let k = rotate(&k, shard.kv_heads)?;
        let attended = match workload.phase {
            Phase::Prefill => {
                let seqs = |t: &Value, heads: usize| view(t, &[batch, per_sequence, heads, head]);
                call(
                    ops::PREFILL_ATTENTION,
                    &[
                        &seqs(&q, shard.heads)?,
                        &seqs(&k, shard.kv_heads)?,
                        &seqs(&view(&v, &[tokens, shard.kv_heads, head])?, shard.kv_heads)?,
                    ],
                    attrs(&[("causal", AttrValue::Bool(true))]),
                )?
            }
            Phase::Decode => {
                let cache = |name: &str| {
                    graph.input(
                        format!("l{layer}.{name}"),
                        Shape::from([batch, workload.context, shard.kv_heads, head]),
                        dtype,
                    )
                };
                let (k_cache, v_cache) = (cache("k_cache"), cache("v_cache"));
                call(
                    ops::DECODE_ATTENTION,
                    &[
                        &q,
                        &k,
                        &view(&v, &[batch, shard.kv_heads, head])?,
                        &k_cache,
                        &v_cache,
                    ],
                    Attributes::new(),
                )?
            }
        };
        let attended = view(&attended, &[tokens, q_width])?;
        let projected = linear(&attended, "w_o", q_width, hidden)?;
        x = add::apply(&x, &reduce(&projected)?, &add::Params {})?;
        let m = rms_norm::apply(&x, &w("g_mlp", &[hidden])?, &norm)?;
        let swiglu = |prefix: &str, width: usize| -> Result<Value, OpError> {
            let gate = silu::apply(
                &linear(&m, &format!("{prefix}w_gate"), hidden, width)?,
                &silu::Params {},
            )?;
            let up = linear(&m, &format!("{prefix}w_up"), hidden, width)?;
            let mixed = mul::apply(&gate, &up, &mul::Params {})?;
            linear(&mixed, &format!("{prefix}w_down"), width, hidden)
        };
        let down = if config.is_moe_layer(layer) {
            let experts = config.experts.unwrap_or(1);
            let router = matmul::apply(&m, &w("w_router", &[hidden, experts])?, &mm)?;
            let e = shard.expert;
            let routed = call(
                ops::MOE,
                &[
                    &m,
                    &router,
                    &w("experts.w_gate", &[experts, hidden, e])?,
                    &w("experts.w_up", &[experts, hidden, e])?,
                    &w("experts.w_down", &[experts, e, hidden])?,
                ],
                attrs(&[(
                    "top_k",
                    AttrValue::I64(config.num_experts_per_tok.unwrap_or(1) as i64),
                )]),
            )?;
            match config.n_shared_experts.unwrap_or(0) {
                0 => routed,
                shared => add::apply(&routed, &swiglu("shared.", shared * e)?, &add::Params {})?,
            }
        } else {
            swiglu("", shard.mlp)?
        };
        x = add::apply(&x, &reduce(&down)?, &add::Params {})?;
    }
    if per_sequence > 1 {
        // Only the last position of each sequence goes on to the LM head.
        let last = slice::apply(
            &view(&x, &[batch, per_sequence, hidden])?,
            &slice::Params {
                starts: vec![per_sequence as i64 - 1],
                ends: vec![per_sequence as i64],
                axes: vec![1],
                steps: Vec::new(),
            },
        )?;
        x = view(&last, &[batch, hidden])?;
    }
    let x = rms_norm::apply(&x, &weight("g_final".into(), &[hidden])?, &norm)?;
    let table = if config.tie_word_embeddings && tp == 1 {
        embedding
    } else {
        weight("lm_head".into(), &[shard.vocab, hidden])?
    };
    let mut logits = call(ops::LM_HEAD, &[&x, &table], Attributes::new())?;
    if tp > 1 {
        logits = call(
            ops::ALL_GATHER,
            &[&logits],
            attrs(&[("ranks", AttrValue::I64(tp))]),
        )?;
    }
    graph.output(&logits);
    Ok(graph.def())
}
