//! The example models' weight initialisation, shared by the model files.

use pto_op::{DType, Tensor};

/// A weight of `shape` uniform in [-bound, bound), from `seed`: projections use
/// `bound = 1/sqrt(fan_in)`, so activations keep their scale.
pub(super) fn weight(shape: &[usize], dtype: DType, seed: u64, bound: f64) -> Tensor {
    Tensor::random_uniform(shape.to_vec(), dtype, seed, -bound, bound)
}

/// The gain of a norm: uniform in [0.5, 1.5).
pub(super) fn gain(size: usize, dtype: DType, seed: u64) -> Tensor {
    Tensor::random_uniform([size], dtype, seed, 0.5, 1.5)
}
