//! Scalar math of the standard ops' references, public for op authors who need the same
//! functions (a fused op's reference).

/// sqrt(2 / pi).
const SQRT_2_OVER_PI: f32 = 0.797_884_6;

/// GELU, tanh approximation: `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`; the
/// `tanh` form of ONNX Gelu, and what the tile language's `gelu()` computes.
///
/// ```
/// use pto_op::ops::math::gelu_tanh;
/// assert_eq!(gelu_tanh(0.0), 0.0);
/// assert!((gelu_tanh(1.0) - 0.841192).abs() < 1e-6);
/// ```
pub fn gelu_tanh(x: f32) -> f32 {
    0.5 * x * (1.0 + (SQRT_2_OVER_PI * (x + 0.044_715 * x * x * x)).tanh())
}

/// GELU, exact form: `x * Phi(x) = 0.5 x erfc(-x / sqrt 2)`, computed in f64; the default
/// (`none`) form of ONNX Gelu.
///
/// ```
/// use pto_op::ops::math::gelu_erf;
/// assert_eq!(gelu_erf(0.0), 0.0);
/// assert!((gelu_erf(1.0) - 0.841_344_7).abs() < 1e-6);
/// assert!((gelu_erf(-1.0) + 0.158_655_3).abs() < 1e-6);
/// ```
pub fn gelu_erf(x: f32) -> f32 {
    let x = f64::from(x);
    (0.5 * x * erfc(-x * core::f64::consts::FRAC_1_SQRT_2)) as f32
}

/// The coefficients of the `erfc` approximation of [`erfc_nonnegative`], lowest first.
pub const ERFC_COEFFICIENTS: [f64; 10] = [
    -1.265_512_23,
    1.000_023_68,
    0.374_091_96,
    0.096_784_18,
    -0.186_288_06,
    0.278_868_07,
    -1.135_203_98,
    1.488_515_87,
    -0.822_152_23,
    0.170_872_77,
];

/// `erfc(z)` for `z >= 0`: `t exp(-z^2 + P(t))` with `t = 1 / (1 + z/2)` and `P` the
/// polynomial of [`ERFC_COEFFICIENTS`] (Numerical Recipes' `erfcc`, fractional error below
/// 1.2e-7). The `std.gelu` kernel evaluates the same formula on tiles.
pub fn erfc_nonnegative(z: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = ERFC_COEFFICIENTS
        .iter()
        .rev()
        .fold(0.0, |acc, c| acc * t + c);
    t * (-z * z + poly).exp()
}

/// The complementary error function, `1 - erf(x)`, fractional error below 1.2e-7.
///
/// ```
/// use pto_op::ops::math::erfc;
/// assert!((erfc(0.5) - 0.479_500_1).abs() < 1e-7);
/// assert!((erfc(-0.5) - 1.520_499_9).abs() < 1e-7);
/// ```
pub fn erfc(x: f64) -> f64 {
    if x >= 0.0 {
        erfc_nonnegative(x)
    } else {
        2.0 - erfc_nonnegative(-x)
    }
}

/// The error function, `1 - erfc(x)` with [`erfc`] (absolute error below 1.2e-7); what
/// the tile language's `erf()` computes on the simulator.
///
/// ```
/// use pto_op::ops::math::erf;
/// assert_eq!(erf(0.0), 0.0);
/// assert!((erf(0.5) - 0.520_499_9).abs() < 2e-7);
/// assert!((erf(-2.0) + 0.995_322_3).abs() < 2e-7);
/// ```
pub fn erf(x: f64) -> f64 {
    if x == 0.0 { x } else { 1.0 - erfc(x) }
}

/// The remainder of floor division, `a - floor(a / b) * b`, with the sign of `b` (Python's
/// `%`, `numpy.mod`); what the tile language's `mod` computes. Rust's `%` is the
/// truncated remainder, the tile language's `rem`.
///
/// ```
/// use pto_op::ops::math::floor_mod;
/// assert_eq!(floor_mod(-7.0, 3.0), 2.0);
/// assert_eq!(floor_mod(7.0, -3.0), -2.0);
/// assert_eq!(floor_mod(-7.5, -2.0), -1.5);
/// assert_eq!(-7.0f32 % 3.0, -1.0);
/// ```
pub fn floor_mod(a: f32, b: f32) -> f32 {
    let r = a % b;
    if r != 0.0 && (r < 0.0) != (b < 0.0) {
        r + b
    } else {
        r
    }
}
