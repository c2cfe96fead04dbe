//! Seeded pseudo-random tensors, the same for a seed on every platform, and the SplitMix64
//! generator behind them (also the one generator of pto-op's tests).

use crate::dtype::DType;
use crate::shape::Shape;

use super::Tensor;

impl Tensor {
    /// A tensor of pseudo-random values, the same for a seed on every platform: floats
    /// uniform in [-1, 1), integers uniform in [-8, 8) (unsigned: [0, 16); i2: [-2, 2), u2:
    /// [0, 4)), bool true or false with equal odds; f8e8m0, which has no sign, in [0, 1). See [`Tensor::random_uniform`] for how values are drawn.
    ///
    /// ```
    /// use pto_types::{DType, Tensor};
    /// let a = Tensor::random([4, 8], DType::F16, 7);
    /// assert_eq!(a, Tensor::random([4, 8], DType::F16, 7));
    /// assert_ne!(a, Tensor::random([4, 8], DType::F16, 8));
    /// assert!(a.to_f64_vec().iter().all(|v| (-1.0..=1.0).contains(v)));
    /// ```
    pub fn random(shape: impl Into<Shape>, dtype: DType, seed: u64) -> Tensor {
        let (low, high) = match dtype {
            DType::F32 | DType::F16 | DType::BF16 | DType::F64 => (-1.0, 1.0),
            DType::I32 | DType::I64 | DType::I8 | DType::I16 => (-8.0, 8.0),
            DType::U8 | DType::U16 | DType::U32 | DType::U64 => (0.0, 16.0),
            DType::Bool => (0.0, 2.0),
            // The 8- and 4-bit floats: [-1, 1) rounded to the format (f8e8m0: powers of two
            // from 2^-1 down, as it has no sign).
            DType::F8E4M3FN
            | DType::F8E4M3FNUZ
            | DType::F8E5M2
            | DType::F8E5M2FNUZ
            | DType::F4E2M1 => (-1.0, 1.0),
            DType::F8E8M0 => (0.0, 1.0),
            DType::I4 => (-8.0, 8.0),
            DType::U4 => (0.0, 16.0),
            DType::I2 => (-2.0, 2.0),
            DType::U2 => (0.0, 4.0),
        };
        Tensor::random_uniform(shape, dtype, seed, low, high)
    }

    /// A tensor of pseudo-random values uniform in [`low`, `high`), the same for a seed on
    /// every platform.
    ///
    /// Elements are drawn in row-major order, one SplitMix64 output each, turned into
    /// `u` uniform in [0, 1) from its top 53 bits. Floats are `low + (high - low) * u`
    /// rounded to the dtype (so f16 and bf16 can round up to `high`); integer dtypes draw
    /// integers `k` with `low <= k < high`, saturated to the dtype's range; bool draws such
    /// an integer and is true when it is not 0.
    ///
    /// # Panics
    ///
    /// If `low` and `high` are not finite with `low < high`, or, for integer and bool
    /// dtypes, no integer lies in [`low`, `high`).
    pub fn random_uniform(
        shape: impl Into<Shape>,
        dtype: DType,
        seed: u64,
        low: f64,
        high: f64,
    ) -> Tensor {
        assert!(
            low.is_finite() && high.is_finite() && low < high,
            "random_uniform needs finite bounds with low < high, got [{low}, {high})"
        );
        let mut rng = SplitMix64::new(seed);
        if dtype.is_float() || dtype.is_small_float() {
            return Tensor::from_f64_fn(shape, dtype, |_| low + (high - low) * rng.next_unit());
        }
        let (first, end) = (low.ceil(), high.ceil());
        assert!(
            first < end,
            "random_uniform for {dtype} needs an integer in [{low}, {high})"
        );
        let count = end - first;
        Tensor::from_f64_fn(shape, dtype, |_| {
            // `next_unit() < 1`, but the product can still round up to `count`.
            first + (rng.next_unit() * count).floor().min(count - 1.0)
        })
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast and fully specified, so a seed yields
/// the same stream on every platform and in every version. It draws [`Tensor::random`]'s
/// values, and tests and fuzzers across the workspace use it for reproducible cases.
///
/// ```
/// use pto_types::tensor::SplitMix64;
/// let mut rng = SplitMix64::new(0);
/// assert_eq!(rng.next_u64(), 0xE220_A839_7B1D_CDAF);
/// assert!(rng.below(10) < 10);
/// assert!((0.0..1.0).contains(&rng.next_unit()));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// The generator whose stream `seed` names.
    pub const fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1): the top 53 bits, which an f64 holds exactly.
    pub fn next_unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * 2f64.powi(-53)
    }

    /// A number in `0..n` (`n > 0`), by modulo: slightly biased for huge `n`, which is fine
    /// for picking test cases.
    ///
    /// # Panics
    ///
    /// If `n` is 0.
    pub fn below(&mut self, n: usize) -> usize {
        assert!(n > 0, "SplitMix64::below(0): no number is below 0");
        (self.next_u64() % n as u64) as usize
    }
}
