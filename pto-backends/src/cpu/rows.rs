//! Row kernels in f32 for fast paths: written so the compiler vectorizes them (several
//! independent accumulators, no branches in the element loops).

/// Independent partial sums per reduction: enough for the compiler to keep a few vector
/// registers busy.
const LANES: usize = 16;

/// `exp(x)` in f32 (Cephes' `expf`: a degree-6 polynomial on `x - n ln 2`, scaled by
/// `2^n`), within a few ulp of the correctly rounded value; 0 below -86.9 (where the
/// true value is below 2^-125), infinity above 88.72, NaN for NaN.
///
/// ```
/// use pto_backends::cpu::rows::exp;
/// for x in [-20.0f32, -1.0, 0.0, 0.5, 3.0, 80.0] {
///     assert!((exp(x) - x.exp()).abs() <= x.exp() * 3e-7);
/// }
/// assert_eq!(exp(-1e9), 0.0);
/// assert!(exp(f32::NAN).is_nan());
/// ```
#[inline]
pub fn exp(x: f32) -> f32 {
    const LOG2_E: f32 = core::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    const LOW: f32 = -86.9;
    const HIGH: f32 = 88.722_84;
    // Adding and subtracting 1.5 * 2^23 rounds to the nearest integer without a call
    // to `floor` (which baseline x86-64 has no instruction for), so the loop vectorizes.
    const ROUND: f32 = 12_582_912.0;
    let clamped = x.clamp(LOW, HIGH);
    let n = (clamped * LOG2_E + ROUND) - ROUND;
    let r = clamped - n * LN2_HI - n * LN2_LO;
    let mut p = 1.987_569_1e-4_f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    let e = p * r * r + r + 1.0;
    // 2^n for n in -125..=128, as 2^(n - 1) * 2 so that n = 128 has exponent bits.
    let n = n as i32;
    let scale = f32::from_bits(((n - 1 + 127) as u32) << 23);
    let y = e * scale * 2.0;
    let y = if x < LOW { 0.0 } else { y };
    let y = if x > HIGH { f32::INFINITY } else { y };
    if x.is_nan() { x } else { y }
}

/// The sum of `values`, in 16 interleaved partial sums.
#[inline]
pub fn sum(values: &[f32]) -> f32 {
    fold(values, 0.0, |acc, v| acc + v, |a, b| a + b)
}

/// The sum of squares of `values`.
#[inline]
pub fn sum_of_squares(values: &[f32]) -> f32 {
    fold(values, 0.0, |acc, v| acc + v * v, |a, b| a + b)
}

/// The largest of `values` (NaN if one is NaN; -infinity for none).
#[inline]
pub fn max(values: &[f32]) -> f32 {
    let m = fold(
        values,
        f32::NEG_INFINITY,
        |acc, v| if v > acc { v } else { acc },
        |a, b| if b > a { b } else { a },
    );
    if values.iter().any(|v| v.is_nan()) {
        f32::NAN
    } else {
        m
    }
}

fn fold(
    values: &[f32],
    init: f32,
    step: impl Fn(f32, f32) -> f32,
    merge: impl Fn(f32, f32) -> f32,
) -> f32 {
    let mut acc = [init; LANES];
    let mut chunks = values.chunks_exact(LANES);
    for chunk in &mut chunks {
        for (a, &v) in acc.iter_mut().zip(chunk) {
            *a = step(*a, v);
        }
    }
    let mut total = acc.into_iter().fold(init, &merge);
    for &v in chunks.remainder() {
        total = step(total, v);
    }
    total
}

/// `row = softmax(row)`: `exp(x - max) / sum`, with [`exp`].
pub fn softmax(row: &mut [f32]) {
    let max = max(row);
    for v in row.iter_mut() {
        *v = exp(*v - max);
    }
    let sum = sum(row);
    for v in row.iter_mut() {
        *v /= sum;
    }
}

/// `y = x * rsqrt(mean(x^2) + eps) * gamma` over one row.
pub fn rms_norm(x: &[f32], gamma: &[f32], eps: f32, y: &mut [f32]) {
    let inv = 1.0 / (sum_of_squares(x) / x.len() as f32 + eps).sqrt();
    for ((y, &x), &g) in y.iter_mut().zip(x).zip(gamma) {
        *y = x * inv * g;
    }
}

/// `y = (x - mean) * rsqrt(var + eps) * gamma + beta` over one row (biased variance).
pub fn layer_norm(x: &[f32], gamma: &[f32], beta: &[f32], eps: f32, y: &mut [f32]) {
    let n = x.len() as f32;
    let mean = sum(x) / n;
    for (y, &x) in y.iter_mut().zip(x) {
        *y = x - mean;
    }
    let inv = 1.0 / (sum_of_squares(y) / n + eps).sqrt();
    for ((y, &g), &b) in y.iter_mut().zip(gamma).zip(beta) {
        *y = *y * inv * g + b;
    }
}

/// `x * sigmoid(x)`, with [`exp`].
#[inline]
pub fn silu(x: f32) -> f32 {
    x / (1.0 + exp(-x))
}

/// `1 / (1 + exp(-x))`, with [`exp`].
#[inline]
pub fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + exp(-x))
}
