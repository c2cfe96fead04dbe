//! The fused ops of an LLM serving graph (`pto estimate --llm`): grouped-query attention
//! at prefill and at decode over a KV cache, rotary embedding and the LM head. Each has a
//! plain reference and `#[properties]` (what it computes and moves), which the roofline
//! prices; none has a kernel yet, so their estimates are the roofline's alone.
//!
//! Attention counts, per query-key pair of a head: `2 d` cube multiply-accumulates (the
//! score and its share of `p @ v`) and 5 f32 vector ops (scale, running max, subtract,
//! exp, sum: the online softmax), and moves its inputs and output once, as flash
//! attention does. Causal prefill visits `s (s + 1) / 2` pairs per head.

use pto_op::PerformanceProperties;
use pto_op::prelude::*;

/// Vector ops per query-key pair of the online softmax (scale, max, subtract, exp, sum).
const SOFTMAX_OPS_PER_PAIR: u64 = 5;

/// `softmax(q . k_j * scale) . v_j` over `keys` (`j` in `0..keys`) for one query row.
fn attend(
    q: &[f32],
    key: impl Fn(usize) -> Vec<f32>,
    value: impl Fn(usize) -> Vec<f32>,
    keys: usize,
) -> Vec<f32> {
    let scale = 1.0 / (q.len() as f32).sqrt();
    let scores: Vec<f32> = (0..keys)
        .map(|j| q.iter().zip(key(j)).map(|(a, b)| a * b).sum::<f32>() * scale)
        .collect();
    let max = scores.iter().fold(f32::NEG_INFINITY, |m, &s| m.max(s));
    let weights: Vec<f32> = scores.iter().map(|s| (s - max).exp()).collect();
    let total: f32 = weights.iter().sum();
    let mut y = vec![0.0; q.len()];
    for (j, w) in weights.iter().enumerate() {
        for (acc, v) in y.iter_mut().zip(value(j)) {
            *acc += w / total * v;
        }
    }
    y
}

/// The properties of attention over `pairs` query-key pairs of width `d`.
fn attention_properties(info: &OpInvokeInfo, pairs: u64, d: u64) -> PerformanceProperties {
    let mut p = info.memory_access_properties();
    let dtype = info.inputs[0].dtype;
    p.compute(dtype).mma_ops = 2 * pairs * d;
    p.compute(DType::F32).gp_ops = SOFTMAX_OPS_PER_PAIR * pairs;
    p
}

fn check_float(name: &str, dtype: DType) -> Result<DType, OpError> {
    if dtype.is_float() {
        Ok(dtype)
    } else {
        Err(OpError::input(
            name,
            format!("is {dtype}; expected a float dtype"),
        ))
    }
}

/// Causal grouped-query attention over whole prompts: `q [b, s, h, d]`, `k` and `v`
/// `[b, s, kv, d]` (`kv` divides `h`; query head `i` reads key-value head `i / (h / kv)`)
/// to `y [b, s, h, d]`, scale `1 / sqrt(d)`; `causal` masks the keys after each query.
#[custom_op(name = "llm.prefill_attention", params(causal: bool = true))]
pub mod prefill_attention {
    use super::*;

    #[infer_shape]
    fn infer_shape(q: &Shape, k: &Shape, v: &Shape, _p: &Params) -> Result<Shape, OpError> {
        q.expect_rank("q", 4)?;
        k.expect_rank("k", 4)?;
        let (qd, kd) = (q.dims(), k.dims());
        if k != v {
            return Err(OpError::input(
                "v",
                format!("is {v}; expected k's shape {k}"),
            ));
        }
        if kd[0] != qd[0]
            || kd[1] != qd[1]
            || kd[3] != qd[3]
            || kd[2] == 0
            || !qd[2].is_multiple_of(kd[2])
        {
            return Err(OpError::input(
                "k",
                format!(
                    "is {k}; expected [{}, {}, kv, {}] with kv dividing {} heads",
                    qd[0], qd[1], qd[3], qd[2]
                ),
            ));
        }
        Ok(q.clone())
    }

    #[infer_dtype]
    fn infer_dtype(q: DType, _k: DType, _v: DType, _p: &Params) -> Result<DType, OpError> {
        check_float("q", q)
    }

    #[reference]
    fn reference(q: &Tensor, k: &Tensor, v: &Tensor, p: &Params) -> Result<Tensor, OpError> {
        let (q32, k32, v32) = (q.to_f32_array(), k.to_f32_array(), v.to_f32_array());
        let (b, s, h, d) = (
            q32.shape()[0],
            q32.shape()[1],
            q32.shape()[2],
            q32.shape()[3],
        );
        let group = h / k32.shape()[2];
        let mut y = ndarray::ArrayD::<f32>::zeros(q32.shape());
        for (bi, si, hi) in
            (0..b).flat_map(|bi| (0..s).flat_map(move |si| (0..h).map(move |hi| (bi, si, hi))))
        {
            let row: Vec<f32> = (0..d).map(|di| q32[[bi, si, hi, di]]).collect();
            let keys = if p.causal { si + 1 } else { s };
            let kv = hi / group;
            let out = attend(
                &row,
                |j| (0..d).map(|di| k32[[bi, j, kv, di]]).collect(),
                |j| (0..d).map(|di| v32[[bi, j, kv, di]]).collect(),
                keys,
            );
            for (di, value) in out.into_iter().enumerate() {
                y[[bi, si, hi, di]] = value;
            }
        }
        Ok(Tensor::from_f32_array(y, q.dtype()))
    }

    #[properties]
    fn properties(info: &OpInvokeInfo) -> PerformanceProperties {
        let q = info.inputs[0].shape.dims();
        let (b, s, h, d) = (q[0] as u64, q[1] as u64, q[2] as u64, q[3] as u64);
        let per_head = match info.param::<bool>("causal") {
            Some(false) => s * s,
            _ => s * (s + 1) / 2,
        };
        attention_properties(info, b * h * per_head, d)
    }
}

/// One new token per sequence attending to its KV cache and itself: `q [b, h, d]`, the new
/// token's `k` and `v` `[b, kv, d]`, the caches `k_cache` and `v_cache` `[b, t, kv, d]`
/// (the `t` tokens before it) to `y [b, h, d]`. The new `k` and `v` are appended to the
/// caches in place (their bytes are written once more); the reference attends over the
/// `t + 1` keys.
#[custom_op(name = "llm.decode_attention")]
pub mod decode_attention {
    use super::*;

    #[infer_shape]
    fn infer_shape(
        q: &Shape,
        k: &Shape,
        v: &Shape,
        k_cache: &Shape,
        v_cache: &Shape,
    ) -> Result<Shape, OpError> {
        q.expect_rank("q", 3)?;
        k_cache.expect_rank("k_cache", 4)?;
        let (qd, cd) = (q.dims(), k_cache.dims());
        if k != v {
            return Err(OpError::input(
                "v",
                format!("is {v}; expected k's shape {k}"),
            ));
        }
        if k_cache != v_cache {
            return Err(OpError::input(
                "v_cache",
                format!("is {v_cache}; expected k_cache's shape {k_cache}"),
            ));
        }
        let expected = [qd[0], cd[2], qd[2]];
        if k.dims() != expected
            || cd[0] != qd[0]
            || cd[3] != qd[2]
            || cd[2] == 0
            || !qd[1].is_multiple_of(cd[2])
        {
            return Err(OpError::input(
                "k_cache",
                format!(
                    "is {k_cache} with k {k}; expected [{}, t, kv, {}] and k [{}, kv, {}], kv dividing {} heads",
                    qd[0], qd[2], qd[0], qd[2], qd[1]
                ),
            ));
        }
        Ok(q.clone())
    }

    #[infer_dtype]
    fn infer_dtype(
        q: DType,
        _k: DType,
        _v: DType,
        _k_cache: DType,
        _v_cache: DType,
    ) -> Result<DType, OpError> {
        check_float("q", q)
    }

    #[reference]
    fn reference(
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        k_cache: &Tensor,
        v_cache: &Tensor,
    ) -> Result<Tensor, OpError> {
        let (q32, k32, v32) = (q.to_f32_array(), k.to_f32_array(), v.to_f32_array());
        let (kc, vc) = (k_cache.to_f32_array(), v_cache.to_f32_array());
        let (b, h, d) = (q32.shape()[0], q32.shape()[1], q32.shape()[2]);
        let t = kc.shape()[1];
        let group = h / kc.shape()[2];
        let mut y = ndarray::ArrayD::<f32>::zeros(q32.shape());
        for (bi, hi) in (0..b).flat_map(|bi| (0..h).map(move |hi| (bi, hi))) {
            let row: Vec<f32> = (0..d).map(|di| q32[[bi, hi, di]]).collect();
            let kv = hi / group;
            let pick =
                |cache: &ndarray::ArrayD<f32>, new: &ndarray::ArrayD<f32>, j: usize| -> Vec<f32> {
                    (0..d)
                        .map(|di| {
                            if j < t {
                                cache[[bi, j, kv, di]]
                            } else {
                                new[[bi, kv, di]]
                            }
                        })
                        .collect()
                };
            let out = attend(&row, |j| pick(&kc, &k32, j), |j| pick(&vc, &v32, j), t + 1);
            for (di, value) in out.into_iter().enumerate() {
                y[[bi, hi, di]] = value;
            }
        }
        Ok(Tensor::from_f32_array(y, q.dtype()))
    }

    /// The traffic is the KV cache: both caches read once, plus the query, the new key
    /// and value read and written into the cache, and the output.
    #[properties]
    fn properties(info: &OpInvokeInfo) -> PerformanceProperties {
        let q = info.inputs[0].shape.dims();
        let (b, h, d) = (q[0] as u64, q[1] as u64, q[2] as u64);
        let t = info.inputs[3].shape.dims()[1] as u64;
        let mut p = attention_properties(info, b * h * (t + 1), d);
        p.memory_write_bytes += info.inputs[1].bytes() + info.inputs[2].bytes();
        p
    }
}

/// Rotary position embedding, `y = x cos + rotate_half(x) sin`, of `x [n, h, d]` by the
/// tables `cos` and `sin` `[n, d]` of each token's position (`sin` with rotate_half's
/// sign folded in: `rotate_half(x) = [x2, x1]` over the two halves of each head).
#[custom_op(name = "llm.rotary_embedding")]
pub mod rotary_embedding {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, cos: &Shape, sin: &Shape) -> Result<Shape, OpError> {
        x.expect_rank("x", 3)?;
        let xd = x.dims();
        let table = [xd[0], xd[2]];
        if cos.dims() != table || sin.dims() != table || !xd[2].is_multiple_of(2) {
            return Err(OpError::input(
                "cos",
                format!(
                    "is {cos} (sin {sin}); expected [{}, {}] for x {x}, an even head width",
                    xd[0], xd[2]
                ),
            ));
        }
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _cos: DType, _sin: DType) -> Result<DType, OpError> {
        check_float("x", x)
    }

    #[reference]
    fn reference(x: &Tensor, cos: &Tensor, sin: &Tensor) -> Result<Tensor, OpError> {
        let (x32, c, s) = (
            x.to_f32_array(),
            cos.to_f32_matrix("cos")?,
            sin.to_f32_matrix("sin")?,
        );
        let (n, h, d) = (x32.shape()[0], x32.shape()[1], x32.shape()[2]);
        let half = d / 2;
        let mut y = ndarray::ArrayD::<f32>::zeros(x32.shape());
        for (ti, hi, di) in
            (0..n).flat_map(|t| (0..h).flat_map(move |hi| (0..d).map(move |di| (t, hi, di))))
        {
            let partner = x32[[ti, hi, (di + half) % d]];
            y[[ti, hi, di]] = x32[[ti, hi, di]] * c[[ti, di]] + partner * s[[ti, di]];
        }
        Ok(Tensor::from_f32_array(y, x.dtype()))
    }

    /// Two multiplies and an add per element, in f32.
    #[properties]
    fn properties(info: &OpInvokeInfo) -> PerformanceProperties {
        let mut p = info.memory_access_properties();
        p.compute(DType::F32).gp_ops = 3 * info.inputs[0].shape.numel() as u64;
        p
    }
}

/// The LM head, `y = x @ table^T`: `x [n, hidden]`, `table [vocab, hidden]` (the
/// embedding table when they are tied, or a slice of the vocabulary on one device) to the
/// logits `[n, vocab]`.
#[custom_op(name = "llm.lm_head")]
pub mod lm_head {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, table: &Shape) -> Result<Shape, OpError> {
        x.expect_rank("x", 2)?;
        table.expect_rank("table", 2)?;
        if x.dims()[1] != table.dims()[1] {
            return Err(OpError::input(
                "table",
                format!("is {table}; expected [vocab, {}] for x {x}", x.dims()[1]),
            ));
        }
        Ok(Shape::from([x.dims()[0], table.dims()[0]]))
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _table: DType) -> Result<DType, OpError> {
        check_float("x", x)
    }

    #[reference]
    fn reference(x: &Tensor, table: &Tensor) -> Result<Tensor, OpError> {
        let y = x
            .to_f32_matrix("x")?
            .dot(&table.to_f32_matrix("table")?.t());
        Ok(Tensor::from_f32_array(y.into_dyn(), x.dtype()))
    }

    /// `n x vocab x hidden` multiply-accumulates on the cube; the table read once.
    #[properties]
    fn properties(info: &OpInvokeInfo) -> PerformanceProperties {
        let mut p = info.memory_access_properties();
        let (x, table) = (&info.inputs[0], &info.inputs[1]);
        p.compute(x.dtype).mma_ops = (x.shape.numel() * table.shape.dims()[0]) as u64;
        p
    }
}

/// The weight of `w` at `(row, col)` as a whole number: an int8 element (w8a8), or the
/// int4 nibble of a packed byte (w4a16: row `r` is the low nibble of byte row `r / 2` for
/// even `r`, the high nibble for odd, each signed in [-8, 8)).
fn quant_weight(w: &ndarray::ArrayD<f32>, scheme: &str, row: usize, col: usize) -> f32 {
    if scheme == "w4a16" {
        let byte = w[[row / 2, col]] as i8 as u8;
        let nibble = if row.is_multiple_of(2) {
            byte & 0x0f
        } else {
            byte >> 4
        };
        f32::from(((nibble << 4) as i8) >> 4)
    } else {
        w[[row, col]]
    }
}

/// A quantised linear layer, `y = x @ dequant(w)`: `x [n, k]` in a float dtype, `scale
/// [m]` one per output channel, `y [n, m]` in `x`'s dtype. `scheme`:
///
/// - `w8a8`: `w` int8 `[k, m]`; each row of `x` is quantised to int8 with its own scale
///   (`max |x_row| / 127`), multiplied on the cube in int8 with int32 sums, and the result
///   scaled back by both scales.
/// - `w4a16`: `w` int4, two to a byte, `[ceil(k / 2), m]` int8 (see the reference); the
///   weights are dequantised (`w x scale`) and multiplied with `x` in its dtype.
#[custom_op(name = "llm.quant_linear", params(scheme: String = "w8a8"))]
pub mod quant_linear {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, w: &Shape, scale: &Shape, p: &Params) -> Result<Shape, OpError> {
        x.expect_rank("x", 2)?;
        w.expect_rank("w", 2)?;
        let (k, m) = (x.dims()[1], w.dims()[1]);
        let rows = match p.scheme.as_str() {
            "w8a8" => k,
            "w4a16" => k.div_ceil(2),
            other => {
                return Err(OpError::invalid(format!(
                    "`scheme` is `{other}`; expected w8a8 or w4a16"
                )));
            }
        };
        if w.dims()[0] != rows {
            return Err(OpError::input(
                "w",
                format!("is {w}; expected [{rows}, m] for x {x} under {}", p.scheme),
            ));
        }
        if scale.dims() != [m] {
            return Err(OpError::input(
                "scale",
                format!("is {scale}; expected [{m}]"),
            ));
        }
        Ok(Shape::from([x.dims()[0], m]))
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, w: DType, _scale: DType, _p: &Params) -> Result<DType, OpError> {
        if w != DType::I8 {
            return Err(OpError::input(
                "w",
                format!("is {w}; expected i8 (int4 packed two to a byte for w4a16)"),
            ));
        }
        check_float("x", x)
    }

    #[reference]
    fn reference(x: &Tensor, w: &Tensor, scale: &Tensor, p: &Params) -> Result<Tensor, OpError> {
        let x32 = x.to_f32_matrix("x")?;
        let (w32, s32) = (w.to_f32_array(), scale.to_f32_array());
        let (n, k, m) = (x32.nrows(), x32.ncols(), w32.shape()[1]);
        let mut y = ndarray::Array2::<f32>::zeros((n, m));
        for row in 0..n {
            let (xs, x_scale) = if p.scheme == "w8a8" {
                let max = x32.row(row).fold(0.0f32, |a, v| a.max(v.abs()));
                let s = if max > 0.0 { max / 127.0 } else { 1.0 };
                (
                    x32.row(row).mapv(|v| (v / s).round().clamp(-127.0, 127.0)),
                    s,
                )
            } else {
                (x32.row(row).to_owned(), 1.0)
            };
            for col in 0..m {
                let dot: f32 = (0..k)
                    .map(|i| xs[i] * quant_weight(&w32, &p.scheme, i, col))
                    .sum();
                y[[row, col]] = dot * x_scale * s32[[col]];
            }
        }
        Ok(Tensor::from_f32_array(y.into_dyn(), x.dtype()))
    }

    /// w8a8: `n k m` int8 multiply-accumulates; 3 f32 vector ops per element of `x` (its
    /// row maximum, the scaling, the cast) and 2 per output (the two scales). w4a16: `n k
    /// m` multiply-accumulates in `x`'s dtype and 2 vector ops per weight (unpack and
    /// scale), the weights dequantised once per call. Traffic: every input once (the
    /// packed weights at their bytes) and the output.
    #[properties]
    fn properties(info: &OpInvokeInfo) -> PerformanceProperties {
        let mut p = info.memory_access_properties();
        let (x, w) = (&info.inputs[0], &info.inputs[1]);
        let (n, k) = (x.shape.dims()[0] as u64, x.shape.dims()[1] as u64);
        let m = w.shape.dims()[1] as u64;
        if info.param::<String>("scheme").as_deref() == Some("w4a16") {
            p.compute(x.dtype).mma_ops = n * k * m;
            p.compute(x.dtype).gp_ops = 2 * k * m;
        } else {
            p.compute(DType::I8).mma_ops = n * k * m;
            p.compute(DType::F32).gp_ops = 3 * n * k + 2 * n * m;
        }
        p
    }
}

/// Experts whose weights `tokens` tokens, each routed to `top_k` of `experts`, touch in
/// expectation when routing is uniform and independent per token (the load-balance
/// assumption: a trained router's auxiliary loss aims at it): each expert is missed by all
/// tokens with probability `(1 - top_k / experts)^tokens`.
pub fn experts_touched(tokens: u64, top_k: u64, experts: u64) -> f64 {
    if experts == 0 {
        return 0.0;
    }
    let miss = 1.0 - top_k.min(experts) as f64 / experts as f64;
    experts as f64 * (1.0 - miss.powf(tokens as f64))
}

/// A mixture-of-experts SwiGLU MLP: `x [n, h]`, the router's `logits [n, experts]`, the
/// experts' `w_gate` and `w_up` `[experts, h, e]`, `w_down` `[experts, e, h]`. Each token
/// goes to its `top_k` experts by logit, weighted by the softmax of those logits
/// (Mixtral's routing), and `y` is the weighted sum of their outputs
/// `(silu(x w_gate) * (x w_up)) w_down`.
#[custom_op(name = "llm.moe_ffn", params(top_k: i64 = 2))]
pub mod moe_ffn {
    use super::*;

    #[infer_shape]
    fn infer_shape(
        x: &Shape,
        logits: &Shape,
        w_gate: &Shape,
        w_up: &Shape,
        w_down: &Shape,
        p: &Params,
    ) -> Result<Shape, OpError> {
        x.expect_rank("x", 2)?;
        w_gate.expect_rank("w_gate", 3)?;
        let (n, h) = (x.dims()[0], x.dims()[1]);
        let (experts, e) = (w_gate.dims()[0], w_gate.dims()[2]);
        if logits.dims() != [n, experts] {
            return Err(OpError::input(
                "logits",
                format!("is {logits}; expected [{n}, {experts}]"),
            ));
        }
        if w_gate.dims()[1] != h || w_up != w_gate {
            return Err(OpError::input(
                "w_up",
                format!("is {w_up} (w_gate {w_gate}); expected both [{experts}, {h}, e]"),
            ));
        }
        if w_down.dims() != [experts, e, h] {
            return Err(OpError::input(
                "w_down",
                format!("is {w_down}; expected [{experts}, {e}, {h}]"),
            ));
        }
        if p.top_k < 1 || p.top_k as usize > experts {
            return Err(OpError::invalid(format!(
                "`top_k` is {}; expected 1 to {experts}",
                p.top_k
            )));
        }
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(
        x: DType,
        _logits: DType,
        _w_gate: DType,
        _w_up: DType,
        _w_down: DType,
        _p: &Params,
    ) -> Result<DType, OpError> {
        check_float("x", x)
    }

    #[reference]
    fn reference(
        x: &Tensor,
        logits: &Tensor,
        w_gate: &Tensor,
        w_up: &Tensor,
        w_down: &Tensor,
        p: &Params,
    ) -> Result<Tensor, OpError> {
        let (x32, l32) = (x.to_f32_matrix("x")?, logits.to_f32_matrix("logits")?);
        let (g, u, d) = (
            w_gate.to_f32_array(),
            w_up.to_f32_array(),
            w_down.to_f32_array(),
        );
        let (n, h, e) = (x32.nrows(), x32.ncols(), g.shape()[2]);
        let mut y = ndarray::Array2::<f32>::zeros((n, h));
        for t in 0..n {
            let mut order: Vec<usize> = (0..l32.ncols()).collect();
            order.sort_by(|&a, &b| l32[[t, b]].total_cmp(&l32[[t, a]]));
            let chosen = &order[..p.top_k as usize];
            let max = l32[[t, chosen[0]]];
            let weights: Vec<f32> = chosen.iter().map(|&c| (l32[[t, c]] - max).exp()).collect();
            let total: f32 = weights.iter().sum();
            for (&expert, weight) in chosen.iter().zip(weights) {
                let hidden: Vec<f32> = (0..e)
                    .map(|j| {
                        let gate: f32 = (0..h).map(|i| x32[[t, i]] * g[[expert, i, j]]).sum();
                        let up: f32 = (0..h).map(|i| x32[[t, i]] * u[[expert, i, j]]).sum();
                        gate / (1.0 + (-gate).exp()) * up
                    })
                    .collect();
                for o in 0..h {
                    let out: f32 = (0..e).map(|j| hidden[j] * d[[expert, j, o]]).sum();
                    y[[t, o]] += weight / total * out;
                }
            }
        }
        Ok(Tensor::from_f32_array(y.into_dyn(), x.dtype()))
    }

    /// `n top_k 3 h e` multiply-accumulates (each token through its experts' three
    /// projections); 5 vector ops per element of each token's expert hidden units (silu,
    /// product, the weighted sum's share) and 3 per router logit (softmax, top-k).
    /// Traffic: `x`, the logits and `y`, and the weights of the experts the batch touches
    /// under uniform routing ([`experts_touched`]): at decode, a batch of a few tokens
    /// reads a few experts, not all of them.
    #[properties]
    fn properties(info: &OpInvokeInfo) -> PerformanceProperties {
        let (x, logits, gate) = (&info.inputs[0], &info.inputs[1], &info.inputs[2]);
        let (n, h) = (x.shape.dims()[0] as u64, x.shape.dims()[1] as u64);
        let (experts, e) = (gate.shape.dims()[0] as u64, gate.shape.dims()[2] as u64);
        let top_k = info.param::<i64>("top_k").map_or(2, |k| k.max(1) as u64);
        let per_expert = 3 * h * e * gate.dtype.size_bytes() as u64;
        let touched = experts_touched(n, top_k, experts);
        let mut p = PerformanceProperties {
            memory_read_bytes: x.bytes()
                + logits.bytes()
                + (touched * per_expert as f64).round() as u64,
            memory_write_bytes: info.outputs[0].bytes(),
            ..Default::default()
        };
        p.compute(x.dtype).mma_ops = n * top_k * 3 * h * e;
        p.compute(DType::F32).gp_ops = 5 * n * top_k * e + 3 * n * experts;
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pto_op::TensorType;

    #[test]
    fn decode_attention_over_a_cache_is_prefill_attentions_last_row() {
        // The last query row of causal attention over t + 1 tokens sees exactly what a
        // decode step over a cache of the first t sees: the same mathematics, two ops.
        let (t, h, kv, d) = (5, 4, 2, 8);
        let q = Tensor::random_uniform([1, t + 1, h, d], DType::F32, 1, -1.0, 1.0);
        let k = Tensor::random_uniform([1, t + 1, kv, d], DType::F32, 2, -1.0, 1.0);
        let v = Tensor::random_uniform([1, t + 1, kv, d], DType::F32, 3, -1.0, 1.0);
        let full = prefill_attention::def()
            .run_reference(
                &[&q, &k, &v],
                &prefill_attention::Params { causal: true }.to_attributes(),
            )
            .unwrap()
            .remove(0)
            .to_f32_array();
        let (q32, k32, v32) = (q.to_f32_array(), k.to_f32_array(), v.to_f32_array());
        let last = |a: &ndarray::ArrayD<f32>| a.index_axis(ndarray::Axis(1), t).to_owned();
        let past =
            |a: &ndarray::ArrayD<f32>| a.slice_axis(ndarray::Axis(1), (0..t).into()).to_owned();
        let step = decode_attention::def()
            .run_reference(
                &[
                    &Tensor::from_array(last(&q32)),
                    &Tensor::from_array(last(&k32)),
                    &Tensor::from_array(last(&v32)),
                    &Tensor::from_array(past(&k32)),
                    &Tensor::from_array(past(&v32)),
                ],
                &Default::default(),
            )
            .unwrap()
            .remove(0)
            .to_f32_array();
        let expected = last(&full);
        for (a, b) in step.iter().zip(expected.iter()) {
            assert!((a - b).abs() < 1e-5, "{a} vs {b}");
        }
    }

    #[test]
    fn quantised_linears_multiply_the_dequantised_weights() {
        // x = [1, 2] with w8a8 weights [[1, -2], [3, 4]] and scales [0.5, 2]: x's row
        // quantises to [64, 127] at scale 2/127 (64 = round(1 / (2/127)) = round(63.5)),
        // so y = [64 + 381, -128 + 508] x 2/127 x [0.5, 2].
        let x = Tensor::from_vec([1, 2], vec![1.0f32, 2.0]).unwrap();
        let w = Tensor::from_vec([2, 2], vec![1i8, -2, 3, 4]).unwrap();
        let scale = Tensor::from_vec([2], vec![0.5f32, 2.0]).unwrap();
        let attrs = quant_linear::Params {
            scheme: "w8a8".into(),
        }
        .to_attributes();
        let y = quant_linear::def()
            .run_reference(&[&x, &w, &scale], &attrs)
            .unwrap()
            .remove(0);
        let s = 2.0 / 127.0;
        let expected = [445.0 * s * 0.5, 380.0 * s * 2.0];
        for (a, b) in y.to_f32_array().iter().zip(expected) {
            assert!((a - b).abs() < 1e-5, "{a} vs {b}");
        }
        // w4a16: rows 0 and 1 of column 0 packed in one byte: low nibble 3, high nibble
        // -2 (0xE); column 1: 7 and -8 (0x87). y = [1 x 3 + 2 x -2, 1 x 7 + 2 x -8] x scale.
        let packed = Tensor::from_vec([1, 2], vec![0xE3u8 as i8, 0x87u8 as i8]).unwrap();
        let attrs = quant_linear::Params {
            scheme: "w4a16".into(),
        }
        .to_attributes();
        let y = quant_linear::def()
            .run_reference(&[&x, &packed, &scale], &attrs)
            .unwrap()
            .remove(0);
        assert_eq!(
            y.to_f32_array().iter().copied().collect::<Vec<_>>(),
            [-0.5, -18.0]
        );
    }

    #[test]
    fn a_mixture_of_one_expert_is_that_experts_mlp() {
        // With top_k = 1 the routing weight is 1: y is the chosen expert's SwiGLU.
        let x = Tensor::random_uniform([3, 4], DType::F32, 8, -1.0, 1.0);
        let logits = Tensor::from_vec([3, 2], vec![1.0f32, 0.0, 0.0, 1.0, 2.0, -1.0]).unwrap();
        let g = Tensor::random_uniform([2, 4, 5], DType::F32, 9, -1.0, 1.0);
        let u = Tensor::random_uniform([2, 4, 5], DType::F32, 10, -1.0, 1.0);
        let d = Tensor::random_uniform([2, 5, 4], DType::F32, 11, -1.0, 1.0);
        let attrs = moe_ffn::Params { top_k: 1 }.to_attributes();
        let y = moe_ffn::def()
            .run_reference(&[&x, &logits, &g, &u, &d], &attrs)
            .unwrap()
            .remove(0)
            .to_f32_array();
        let (x32, g32, u32_, d32) = (
            x.to_f32_array(),
            g.to_f32_array(),
            u.to_f32_array(),
            d.to_f32_array(),
        );
        for (t, expert) in [(0, 0), (1, 1), (2, 0)] {
            for o in 0..4 {
                let mut out = 0.0f32;
                for j in 0..5 {
                    let gate: f32 = (0..4).map(|i| x32[[t, i]] * g32[[expert, i, j]]).sum();
                    let up: f32 = (0..4).map(|i| x32[[t, i]] * u32_[[expert, i, j]]).sum();
                    out += gate / (1.0 + (-gate).exp()) * up * d32[[expert, j, o]];
                }
                assert!((y[[t, o]] - out).abs() < 1e-5, "{} vs {out}", y[[t, o]]);
            }
        }
    }

    #[test]
    fn uniform_routing_touches_the_expected_experts() {
        // One token touches exactly top_k experts; many touch them all.
        assert!((experts_touched(1, 2, 8) - 2.0).abs() < 1e-12);
        assert!((experts_touched(10_000, 2, 8) - 8.0).abs() < 1e-9);
        // Two tokens, top-2 of 8: 8 x (1 - (6/8)^2) = 3.5.
        assert!((experts_touched(2, 2, 8) - 3.5).abs() < 1e-12);
    }

    #[test]
    fn attention_of_one_key_returns_its_value() {
        // softmax over a single key is 1: y is that key's value, whatever q is.
        let q = Tensor::random_uniform([1, 1, 2, 4], DType::F32, 4, -1.0, 1.0);
        let k = Tensor::random_uniform([1, 1, 1, 4], DType::F32, 5, -1.0, 1.0);
        let v = Tensor::random_uniform([1, 1, 1, 4], DType::F32, 6, -1.0, 1.0);
        let y = prefill_attention::def()
            .run_reference(&[&q, &k, &v], &Default::default())
            .unwrap()
            .remove(0)
            .to_f32_array();
        let v32 = v.to_f32_array();
        for head in 0..2 {
            for di in 0..4 {
                assert!((y[[0, 0, head, di]] - v32[[0, 0, 0, di]]).abs() < 1e-6);
            }
        }
    }

    #[test]
    fn decode_attentions_traffic_is_its_kv_cache() {
        let f16 = |dims: &[usize]| TensorType {
            shape: Shape::from(dims.to_vec()),
            dtype: DType::F16,
        };
        let (b, h, kv, d, t) = (2, 32, 8, 128, 1536);
        let info = decode_attention::def()
            .invoke_info(
                &[
                    f16(&[b, h, d]),
                    f16(&[b, kv, d]),
                    f16(&[b, kv, d]),
                    f16(&[b, t, kv, d]),
                    f16(&[b, t, kv, d]),
                ],
                &Default::default(),
            )
            .unwrap();
        let p = (decode_attention::def().properties.expect("has properties"))(&info);
        let cache = 2 * (b * t * kv * d * 2) as u64;
        let small = (2 * b * h * d * 2 + 2 * 2 * b * kv * d * 2) as u64;
        assert_eq!(p.memory_read_bytes + p.memory_write_bytes, cache + small);
        assert_eq!(
            p.compute_ops[&DType::F16].mma_ops,
            (2 * b * h * (t + 1) * d) as u64
        );
    }
}
