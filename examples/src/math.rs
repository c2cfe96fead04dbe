//! Scalar math shared by the example references.

/// GELU, tanh approximation: `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.
///
/// ```
/// use pto_examples::math::gelu_tanh;
/// assert_eq!(gelu_tanh(0.0), 0.0);
/// assert!((gelu_tanh(1.0) - 0.841192).abs() < 1e-6);
/// ```
pub fn gelu_tanh(x: f32) -> f32 {
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    0.5 * x * (1.0 + (SQRT_2_OVER_PI * (x + 0.044_715 * x * x * x)).tanh())
}
