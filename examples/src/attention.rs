//! Scaled dot-product attention, as flash attention on the cube and vector units.

use ndarray::Axis;
use pto_op::kernel::cube::{FRACTAL, tile_dim};
use pto_op::kernel::ir::MemLevel;
use pto_op::prelude::*;

/// Query rows of one block program per vector core, at most (`Kernel::vector_cores` share
/// a block program's rows: 2 on ascend910b, so 128 rows per block there).
const BLOCK_Q: usize = 64;

/// Bytes of the f32 accumulator `[rows, d]` one block program keeps in UB when the kernel
/// is traced without a device. The online softmax holds about five tiles of that size at
/// once (accumulator, its rescaled copy, p @ v, their sum, the score block), so 24 KiB
/// keeps the working set within the 118 KiB UB of the Kirin profiles: 64 query rows up to
/// d = 96, 48 rows at d = 128.
const ACC_BYTES: usize = 24 * 1024;

/// The share of the UB the accumulator gets when the kernel is traced for a device
/// (`Kernel::buffer_capacity`): the same 24 of 118 KiB, so 64 query rows at d = 128 on the
/// 184 KiB UB of each of ascend910b's two vector cores (the public Ascend kernel's 128 rows
/// per cube core, 64 on each vector core).
const ACC_SHARE: (usize, usize) = (24, 118);

/// Keys and values per step of the online softmax: the public Ascend kernel's
/// `CUBE_S1 = 128` (pto-isa `kernels/manual/common/flash_atten`) when a K block fits L0B
/// twice and the score block fits the accumulator's share of UB (ascend910b), else 64
/// (the Kirin profiles). With `d` = 64, the f32 score block is 32 KiB of
/// UB and the K and V blocks 16 KiB (f16) of L1 and L0B each.
const BLOCK_KV: usize = 128;

/// The L0A / L0B capacity assumed when the kernel is traced without a device: kirin9030's,
/// the smallest of the built-in profiles.
const PORTABLE_L0: u64 = 32 * 1024;

/// The score of a masked key: finite, unlike -inf, so that a row whose keys in one block
/// are all masked gets `exp(MASKED - MASKED) = 1` instead of NaN; that block's weights are
/// wiped by `exp(MASKED - m) = 0` once the row's running maximum `m` is a real score, which
/// happens in the first block (key 0 is never masked).
const MASKED: f64 = -1e30;

/// `y = softmax(q @ k^T * scale [+ causal mask]) @ v`, one head.
///
/// Shapes: `q` is `[s_q, d]`, `k` and `v` are `[s_kv, d]`, `y` is `[s_q, d]`. All three
/// inputs have one float dtype (f16, bf16 or f32), which `y` keeps; the reference computes
/// in f32, except that the unnormalised probabilities meet `v` in the input dtype.
///
/// Params:
/// - `causal`: query `i` attends only to keys `j <= i` (the mask is aligned at the top
///   left, like `torch.nn.functional.scaled_dot_product_attention(is_causal=True)`).
/// - `scale`: the factor of the scores; `0.0` (the default) means `1 / sqrt(d)`.
///
/// The kernel is flash attention: a block program owns 64 query rows per vector core (fewer
/// for head dims over 96 on the Kirin profiles, so that its working set fits the unified
/// buffer; 128 rows on a split Ascend 910B core, whose two vector cores each hold 64, as the
/// public Ascend kernel does) and walks the keys and values in tiles with an online
/// softmax (running row maximum, running sum and an f32 accumulator, rescaled at every
/// tile), so the `[s_q, s_kv]` score matrix never exists. A tile is one cube block of 64
/// or 128 keys, or on ascend910b a logical tile of two 128-key sub-tiles whose P @ V
/// accumulate in L0C. The probabilities are rounded to the input dtype before they meet `v` on the
/// cube, and in the reference (see `tolerance`).
/// Causal attention still visits every key block; the masked ones are wasted work.
#[custom_op(
    name = "demo.flash_attention",
    params(causal: bool = false, scale: f32 = 0.0),
    // The kernel and the reference both round the unnormalised probabilities to the input
    // dtype before p @ v (as the cube takes them), but with more than one key block the
    // kernel's are relative to the running maximum of the blocks so far, the reference's
    // to the row's maximum, so a weight can round differently. Rows with few keys (causal
    // attention's first rows) average few values of size ~1, so one rounding of a weight
    // moves y by about an ulp near 1 there, far above the default atol of 1e-5. Measured
    // when the reference kept the probabilities in f32, over the parity shapes and 3 seeds
    // each, with the default rtol: f16 needed atol <= 1.25e-4, bf16 <= 1e-3; declared with
    // a 2x margin. f32 stays within the default tolerance.
    tolerance(f16 = (1e-3, 2.5e-4), bf16 = (1.6e-2, 2e-3))
)]
pub mod flash_attention {
    use super::*;

    /// The factor of the scores: `p.scale`, or `1 / sqrt(d)` when it is 0.
    pub fn effective_scale(p: &Params, d: usize) -> f32 {
        if p.scale == 0.0 {
            1.0 / (d as f32).sqrt()
        } else {
            p.scale
        }
    }

    #[infer_shape]
    fn infer_shape(q: &Shape, k: &Shape, v: &Shape, p: &Params) -> Result<Shape, OpError> {
        let (_, d) = q.expect_matrix("q")?;
        let (s_kv, kd) = k.expect_matrix("k")?;
        v.expect_matrix("v")?;
        if kd != d {
            return Err(OpError::input(
                "k",
                format!("expected [s_kv, {d}] (the last dim of q, of shape {q}), got shape {k}"),
            ));
        }
        if v != k {
            return Err(OpError::input(
                "v",
                format!("expected the shape of k, {k}, got {v}"),
            ));
        }
        if s_kv == 0 || d == 0 {
            return Err(OpError::input(
                "k",
                format!("shape {k} has no keys to attend to: s_kv and d must be at least 1"),
            ));
        }
        if !p.scale.is_finite() {
            return Err(OpError::invalid(format!(
                "param `scale` must be finite (0 for 1/sqrt(d)), got {}",
                p.scale
            )));
        }
        Ok(q.clone())
    }

    #[infer_dtype]
    fn infer_dtype(q: DType, k: DType, v: DType, _p: &Params) -> Result<DType, OpError> {
        if !matches!(q, DType::F16 | DType::BF16 | DType::F32) {
            return Err(OpError::input(
                "q",
                format!("expected f16, bf16 or f32, got {q}"),
            ));
        }
        for (name, dtype) in [("k", k), ("v", v)] {
            if dtype != q {
                return Err(OpError::input(
                    name,
                    format!("expected the dtype of q, {q}, got {dtype}"),
                ));
            }
        }
        Ok(q)
    }

    #[reference]
    fn reference(q: &Tensor, k: &Tensor, v: &Tensor, p: &Params) -> Result<Tensor, OpError> {
        let (q32, k32, v32) = (
            q.to_f32_matrix("q")?,
            k.to_f32_matrix("k")?,
            v.to_f32_matrix("v")?,
        );
        let mut scores = q32.dot(&k32.t()) * effective_scale(p, q32.ncols());
        if p.causal {
            for ((i, j), s) in scores.indexed_iter_mut() {
                if j > i {
                    *s = f32::NEG_INFINITY;
                }
            }
        }
        let mut sums = Vec::with_capacity(scores.nrows());
        for mut row in scores.axis_iter_mut(Axis(0)) {
            let max = row.fold(f32::NEG_INFINITY, |m, &s| m.max(s));
            row.mapv_inplace(|s| (s - max).exp());
            sums.push(row.sum());
        }
        // The unnormalised probabilities meet `v` in the input dtype, as on the cube (and in
        // FlashAttention, and torch's math attention, which rounds them too); the row sums
        // and the division stay in f32, as in the kernel.
        let probs = Tensor::from_array(scores.into_dyn())
            .cast(q.dtype())
            .to_f32_matrix("probabilities")?;
        let mut y = probs.dot(&v32);
        for (mut row, sum) in y.axis_iter_mut(Axis(0)).zip(sums) {
            row.mapv_inplace(|x| x / sum);
        }
        Ok(Tensor::from_array(y.into_dyn()).cast(q.dtype()))
    }

    #[parity(q = f32[64, 64], k = f32[128, 64], v = f32[128, 64])]
    #[parity(q = f32[64, 64], k = f32[128, 64], v = f32[128, 64], causal = true)]
    #[parity(q = f32[100, 40], k = f32[70, 40], v = f32[70, 40], seed = 1)]
    #[parity(q = f32[130, 64], k = f32[130, 64], v = f32[130, 64], causal = true, seed = 2)]
    #[parity(q = f16[64, 64], k = f16[128, 64], v = f16[128, 64])]
    #[parity(q = f16[64, 64], k = f16[128, 64], v = f16[128, 64], causal = true)]
    #[parity(q = f16[100, 40], k = f16[70, 40], v = f16[70, 40], scale = 0.5, seed = 1)]
    #[parity(q = f16[130, 64], k = f16[130, 64], v = f16[130, 64], causal = true, seed = 2)]
    #[parity(q = f16[90, 32], k = f16[50, 32], v = f16[50, 32], causal = true, seed = 3)]
    #[parity(q = bf16[48, 16], k = bf16[200, 16], v = bf16[200, 16], seed = 4)]
    #[parity(q = f16[100, 128], k = f16[150, 128], v = f16[150, 128], causal = true, seed = 5)]
    #[parity(q = f32[60, 128], k = f32[60, 128], v = f32[60, 128], seed = 6)]
    #[kernel]
    fn flash_kernel(
        kernel: &mut Kernel,
        q: &Global,
        k: &Global,
        v: &Global,
        y: &Global,
        p: &Params,
    ) -> Result<(), OpError> {
        let (s_q, d) = q.dims2()?;
        let (s_kv, _) = k.dims2()?;
        let d_tile = d.next_multiple_of(FRACTAL);
        let acc_bytes = kernel
            .buffer_capacity(MemLevel::Ub)
            .map_or(ACC_BYTES, |ub| ub as usize / ACC_SHARE.1 * ACC_SHARE.0);
        // The rows one vector core's UB holds; a block program's rows are shared by the
        // vector cores of a split core (two on ascend910b: the public kernel's 128 queries
        // per cube core, 64 on each vector core), each with its own UB.
        let vector_cores = kernel.vector_cores();
        let rows_per_core =
            (acc_bytes / (d_tile * DType::F32.size_bytes()) / FRACTAL * FRACTAL).max(FRACTAL);
        let bytes = q.dtype().size_bytes();
        let l0 = |level| kernel.buffer_capacity(level).unwrap_or(PORTABLE_L0) as usize;
        let bq = tile_dim(vector_cores * BLOCK_Q.min(rows_per_core), s_q);
        // 128 keys per step when a K (or V) block fits L0B twice (double-buffered) and the
        // f32 score block of one vector core's rows is smaller than the accumulator's share
        // of its UB, else 64. (At the share exactly, 48 rows of d = 128 on kirinx90, the
        // Ascend C lowering's queues and temporaries need 121,600 bytes of its 120,832.)
        let block_kv = if 2 * BLOCK_KV * d_tile * bytes <= l0(MemLevel::L0B)
            && bq.div_ceil(vector_cores) * BLOCK_KV * DType::F32.size_bytes() < acc_bytes
        {
            BLOCK_KV
        } else {
            BLOCK_KV / 2
        };
        let bk = tile_dim(block_kv, s_kv);
        // q stays resident in L0A across the key blocks when it fits there next to two
        // probability blocks, as the public Ascend kernel keeps its left tile stationary.
        let resident_q = bq * (d_tile + 2 * bk) * bytes <= l0(MemLevel::L0A);
        let scale = effective_scale(p, d);
        kernel.grid(s_q.div_ceil(bq))?;
        let q0 = kernel.program_id() * bq;
        // Padding columns of d are zero in q, k and v, so they add nothing to the scores
        // and give zero output columns, which the store drops.
        let q_tile = kernel.load_l1(q, (q0, 0), [bq, d_tile])?;
        let q_tile = if resident_q { q_tile.to_l0a() } else { q_tile };

        // Keys go in logical tiles of `subs` cube sub-tiles of `bk`, as the public Ascend
        // kernel's 256-key `TILE_S1` of two 128-key `CUBE_S1` sub-tiles: the online softmax
        // rescales once per logical tile, and the sub-tiles' P @ V accumulate in L0C, so
        // one partial output leaves the cube per logical tile. Two sub-tiles when the
        // device gives 128-key sub-tiles and UB holds the peak of a logical tile, both as
        // live tiles (the second sub-tile's scores, the first's difference and
        // probabilities, the accumulator and one more tile of its size) and as the Ascend
        // C kernel reserves it ([`two_sub_tiles_reserve`]); else one, as before.
        let f32_bytes = DType::F32.size_bytes();
        let masked_if_two = p.causal || s_kv % (2 * bk) != 0;
        let subs = match kernel.buffer_capacity(MemLevel::Ub) {
            Some(ub)
                if bk == BLOCK_KV
                    && s_kv > bk
                    && 3 * bq * bk * f32_bytes + 2 * bq * d_tile * f32_bytes
                        <= vector_cores * ub as usize
                    && two_sub_tiles_reserve(
                        bq.div_ceil(vector_cores),
                        bk,
                        d_tile,
                        y.dtype(),
                        masked_if_two,
                    ) <= ub as usize =>
            {
                2
            }
            _ => 1,
        };
        let tile_keys = subs * bk;
        let tiles = s_kv.div_ceil(tile_keys);

        // The last key each row may see: its own index when causal, and never a padding
        // key beyond s_kv. Keys at or below it are kept.
        let last_key = s_kv.saturating_sub(1) as f64;
        let limit = match (p.causal, s_kv % tile_keys != 0) {
            (true, _) => Some(kernel.iota([bq, 1], 0, q0, DType::F32).min(last_key)),
            (false, true) => Some(kernel.full([bq, 1], DType::F32, last_key)),
            (false, false) => None,
        };

        let init = [
            kernel.full([bq, 1], DType::F32, MASKED),
            kernel.full([bq, 1], DType::F32, 0.0),
            kernel.full([bq, d_tile], DType::F32, 0.0),
        ];
        let last = kernel.fold(tiles, &init, |kernel, tile, carried| {
            let [max, sum, acc] = carried else {
                return Err(OpError::invalid("the fold carries (max, sum, acc)"));
            };
            // QK of every sub-tile, then the row maximum over the logical tile.
            let mut scores = Vec::with_capacity(subs);
            let mut values = Vec::with_capacity(subs);
            for sub in 0..subs {
                let kv0 = tile * tile_keys + sub * bk;
                let k_tile = kernel.load_l1(k, (kv0, 0), [bk, d_tile])?;
                values.push(kernel.load_l1(v, (kv0, 0), [bk, d_tile])?);
                let mut block = kernel
                    .matmul(&q_tile, &k_tile, None, true)?
                    .to_ub(DType::F32)
                    * scale;
                if let Some(limit) = &limit {
                    let keys = kernel.iota([1, bk], 1, kv0, DType::F32);
                    block = Tile::select(&keys.le(limit), &block, MASKED);
                }
                scores.push(block);
            }
            let mut new_max = max.max(scores[0].max_axis(-1));
            for block in &scores[1..] {
                new_max = new_max.max(block.max_axis(-1));
            }
            // P of every sub-tile, the running sum, and P @ V accumulated over the
            // sub-tiles in L0C (one instruction order for any number of sub-tiles, the
            // one of a single 128-key step when there is one).
            let probs: Vec<Tile> = scores
                .iter()
                .map(|block| (block - &new_max).exp())
                .collect();
            let rescale = (max - &new_max).exp();
            let mut new_sum = sum * &rescale;
            for p in &probs {
                new_sum = new_sum + p.sum(-1);
            }
            let mut weighted: Option<Tile> = None;
            for (p, v_tile) in probs.iter().zip(&values) {
                let probs_in = p.cast(q.dtype()).to_l1();
                weighted = Some(kernel.matmul(&probs_in, v_tile, weighted.as_ref(), false)?);
            }
            let weighted = weighted
                .ok_or_else(|| OpError::invalid("a logical tile has at least one sub-tile"))?
                .to_ub(DType::F32);
            Ok(vec![new_max, new_sum, acc * &rescale + weighted])
        })?;
        let [_, sum, acc] = last.as_slice() else {
            return Err(OpError::invalid("the fold returns (max, sum, acc)"));
        };
        kernel.store(y, (q0, 0), &(acc / sum).cast(y.dtype()))
    }
}

/// UB bytes one vector core's Ascend C kernel reserves at the peak of a logical tile of two
/// `bk`-key sub-tiles, for `rows` query rows of a `d_tile`-wide head: what the lowering
/// holds there beyond the live tiles the simulator counts. When the second sub-tile is
/// masked (`masked`), its compare takes the key row and the limit column broadcast to two
/// f32 `[rows, bk]` temporaries, next to the key row, the bit mask and both sub-tiles'
/// scores; the accumulator, `y`'s store queue, the running maximum, the running sum and the
/// limit (columns padded to 32-byte rows, `UB_ROW_ALIGN_ELEMS` f32 each) and the row
/// reductions' work buffer, which the kernel reserves for its whole run
/// (`RowReduce::tmp_bytes` of the fold path; a profile whose reductions take the group
/// path reserves less, so this errs on the safe side there). It was exact for the causal
/// f32 `[130, 64]` and f16 `[2048, 128]` cases on ascend910b before the lowering took the
/// group path (194,048 and 210,432 bytes, over its 188,416).
fn two_sub_tiles_reserve(rows: usize, bk: usize, d_tile: usize, y: DType, masked: bool) -> usize {
    use pto_op::kernel::row_reduce::RowReduce;
    use pto_op::kernel::vector_split::UB_ROW_ALIGN_ELEMS;
    let f32_bytes = DType::F32.size_bytes();
    let block = rows * bk * f32_bytes;
    let mask = if masked {
        2 * block + bk * f32_bytes + rows * bk / 8
    } else {
        0
    };
    let columns = 3 * rows * UB_ROW_ALIGN_ELEMS * f32_bytes;
    let reduce = RowReduce::plan(
        pto_op::kernel::ir::ReduceOp::Max,
        DType::F32,
        rows,
        bk,
        256,
        false,
    )
    .tmp_bytes;
    2 * block + mask + rows * d_tile * (f32_bytes + y.size_bytes()) + columns + reduce
}

/// `s_q, s_kv, d` of the sweep of single-head attention: decode against a cache, prefill,
/// ragged lengths. Heads of 128 only for decode: with 64 query rows per block program, a
/// `[64, 128]` f32 accumulator and its temporaries overflow the Kirin unified buffer.
const ATTENTION_SWEEP_SIZES: [[usize; 3]; 12] = [
    [1, 256, 64],
    [64, 64, 64],
    [100, 70, 40],
    [1, 1024, 128],
    [128, 128, 64],
    [256, 256, 64],
    [300, 300, 64],
    [128, 512, 64],
    [512, 512, 64],
    [512, 1024, 80],
    [1000, 1000, 64],
    [1024, 2048, 64],
];

pto_op::register_sweep!(
    FLASH_ATTENTION_SWEEP,
    pto_op::sweep::SweepDef {
        op: flash_attention::NAME,
        sizes: || {
            ATTENTION_SWEEP_SIZES
                .iter()
                .map(|&[q, kv, d]| pto_op::sweep::f16(vec![vec![q, d], vec![kv, d], vec![kv, d]]))
                .collect()
        },
        location: pto_op::source_location!(),
    }
);

/// Multi-head attention as exporters write it, `softmax(q @ k^T / scale [+ mask]) @ v` on
/// `[batch, heads, seq, d]`, fused into one [`demo.flash_attention`](flash_attention) per
/// head: causal when the mask is the causal one (0 on and below the diagonal, -1e9 or less
/// above), none without a mask. `k^T` is a transpose of `k [b, h, s, d]`, or of
/// `k [b, s, h, d]` whose heads are not yet split off (torch merges the two transposes, as
/// in GPT-2). A mask computed at run time (BERT's padding mask) is left alone: flash
/// attention takes none.
pub mod attention_fusion {
    use pto_op::fusion::{Match, Pattern, Pattern::*};
    use pto_op::ops::{concat, reshape, slice};
    use pto_op::prelude::*;

    const SCORES: Pattern = Op(
        "std.div",
        &[
            Op(
                "std.batch_matmul",
                &[Any("q"), Named("kt", &Op("std.transpose", &[Any("k")]))],
            ),
            Weight("scale"),
        ],
    );

    /// With an additive mask.
    pub const MASKED: Pattern = Op(
        "std.batch_matmul",
        &[
            Named(
                "p",
                &Op(
                    "std.softmax",
                    &[Commutative("std.add", &[SCORES, Weight("mask")])],
                ),
            ),
            Any("v"),
        ],
    );

    /// A mask that slices a constant (GPT-2's `bias[:t, :t]` of its causal buffer, whose
    /// slices import keeps as nodes): one slice or two of the weight.
    const SLICED_MASK: Pattern = Named("mask_outer", &Op("std.slice", &[Weight("mask")]));
    const TWICE_SLICED_MASK: Pattern = Named(
        "mask_outer",
        &Op(
            "std.slice",
            &[Named("mask_inner", &Op("std.slice", &[Weight("mask")]))],
        ),
    );

    /// With an additive mask sliced from a constant once.
    pub const MASKED_SLICED: Pattern = Op(
        "std.batch_matmul",
        &[
            Named(
                "p",
                &Op(
                    "std.softmax",
                    &[Commutative("std.add", &[SCORES, SLICED_MASK])],
                ),
            ),
            Any("v"),
        ],
    );

    /// With an additive mask sliced from a constant twice.
    pub const MASKED_TWICE_SLICED: Pattern = Op(
        "std.batch_matmul",
        &[
            Named(
                "p",
                &Op(
                    "std.softmax",
                    &[Commutative("std.add", &[SCORES, TWICE_SLICED_MASK])],
                ),
            ),
            Any("v"),
        ],
    );

    /// The mask the match adds: the captured weight, through the captured slices (the
    /// inner one first), computed by `std.slice`'s reference; `None` without a mask.
    fn mask_of(m: &Match<'_>) -> Option<Result<Tensor, OpError>> {
        let mut mask = m.weight("mask")?.clone();
        for name in ["mask_inner", "mask_outer"] {
            if let Some(attrs) = m.attrs(name) {
                mask = match slice::def().run_reference(&[&mask], attrs) {
                    Ok(mut out) if !out.is_empty() => out.remove(0),
                    Ok(_) => return Some(Err(OpError::invalid("std.slice gave no output"))),
                    Err(e) => return Some(Err(e)),
                };
            }
        }
        Some(Ok(mask))
    }

    /// Without a mask.
    pub const UNMASKED: Pattern = Op(
        "std.batch_matmul",
        &[Named("p", &Op("std.softmax", &[SCORES])), Any("v")],
    );

    /// Whether `mask` (broadcast to `[s, s]`) is 0 on and below the diagonal and -1e9 or
    /// less above it: `Some(true)`; all 0: `Some(false)`; anything else `None`.
    fn causal(mask: &Tensor, s: usize) -> Option<bool> {
        let dims = mask.dims();
        if dims.len() < 2 || dims[dims.len() - 2..] != [s, s] || mask.numel() != s * s {
            return None;
        }
        let values = mask.to_f64_vec();
        let zero = |i: usize, j: usize| values[i * s + j] == 0.0;
        let masked = |i: usize, j: usize| values[i * s + j] <= -1e9;
        let all = |f: &dyn Fn(usize, usize) -> bool| (0..s).all(|i| (0..s).all(|j| f(i, j)));
        if all(&|i, j| zero(i, j)) {
            Some(false)
        } else if all(&|i, j| if j <= i { zero(i, j) } else { masked(i, j) }) {
            Some(true)
        } else {
            None
        }
    }

    /// One `demo.flash_attention` per (batch, head), concatenated back to
    /// `[batch, heads, seq, d]`.
    pub fn rewrite(m: &Match<'_>) -> Result<Option<Value>, OpError> {
        let (q, k, v) = (m.value("q")?, m.value("k")?, m.value("v")?);
        let [b, h, s, d] = q.shape().dims() else {
            return Ok(None);
        };
        let (b, h, s, d) = (*b, *h, *s, *d);
        // k^T of k [b, h, s, d] (perm [0, 1, 3, 2]), or of k [b, s, h, d] before its heads
        // are split off (perm [0, 2, 3, 1]: an exporter merges split_heads' transpose into
        // k^T's, as torch does for GPT-2 and BERT).
        let heads_inside = match m.attrs("kt").and_then(|a| a.get("perm")) {
            Some(AttrValue::I64s(perm)) if perm == &[0, 1, 3, 2] => false,
            Some(AttrValue::I64s(perm)) if perm == &[0, 2, 3, 1] => true,
            _ => return Ok(None),
        };
        let k_fits = match heads_inside {
            false => k.shape() == q.shape(),
            true => k.shape().dims() == [b, s, h, d],
        };
        let last_axis = matches!(
            m.attrs("p").and_then(|a| a.get("axis")),
            Some(AttrValue::I64(-1 | 3)) | None
        );
        let same = k_fits && v.shape() == q.shape();
        let Some(divisor) = m.scalar("scale") else {
            return Ok(None);
        };
        let causal = match mask_of(m) {
            Some(Ok(mask)) => causal(&mask, s),
            Some(Err(_)) => None,
            None => Some(false),
        };
        let (true, true, Some(causal)) = (last_axis, same, causal) else {
            return Ok(None);
        };
        if divisor == 0.0 || !q.dtype().is_float() {
            return Ok(None);
        }
        let params = super::flash_attention::Params {
            causal,
            scale: (1.0 / divisor) as f32,
        };
        // Head j of batch i of x [b, h, s, d] (heads on `axis` 1), or of k [b, s, h, d]
        // (heads on axis 2): its [s, d] elements in row-major order either way.
        let head_on = |x: &Value, axis: i64, i: usize, j: usize| -> Result<Value, OpError> {
            let part = slice::apply(
                x,
                &slice::Params {
                    starts: vec![i as i64, j as i64],
                    ends: vec![i as i64 + 1, j as i64 + 1],
                    axes: vec![0, axis],
                    steps: Vec::new(),
                },
            )?;
            reshape::apply(
                &part,
                &reshape::Params {
                    shape: vec![s as i64, d as i64],
                    allowzero: false,
                },
            )
        };
        let mut batches = Vec::new();
        for i in 0..b {
            let mut heads: Option<Value> = None;
            for j in 0..h {
                let k_axis = if heads_inside { 2 } else { 1 };
                let y = super::flash_attention::apply(
                    &head_on(&q, 1, i, j)?,
                    &head_on(&k, k_axis, i, j)?,
                    &head_on(&v, 1, i, j)?,
                    &params,
                )?;
                let y = reshape::apply(
                    &y,
                    &reshape::Params {
                        shape: vec![1, 1, s as i64, d as i64],
                        allowzero: false,
                    },
                )?;
                heads = Some(match heads {
                    None => y,
                    Some(acc) => concat::apply(&acc, &y, &concat::Params { axis: 1 })?,
                });
            }
            batches.extend(heads);
        }
        let mut rest = batches.into_iter();
        let Some(mut y) = rest.next() else {
            return Ok(None);
        };
        for next in rest {
            y = concat::apply(&y, &next, &concat::Params { axis: 0 })?;
        }
        Ok(Some(y))
    }
}

pto_op::register_fusion!(
    FLASH_ATTENTION_FUSION,
    pto_op::fusion::FusionDef {
        name: "demo.flash_attention",
        op: flash_attention::NAME,
        patterns: &[
            attention_fusion::MASKED,
            attention_fusion::MASKED_SLICED,
            attention_fusion::MASKED_TWICE_SLICED,
            attention_fusion::UNMASKED,
        ],
        rewrite: attention_fusion::rewrite,
        location: pto_op::source_location!(),
    }
);
