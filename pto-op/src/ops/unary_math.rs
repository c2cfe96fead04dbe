//! Element-wise math that exported transformers use: negation, square root, tanh and powers.

use super::elementwise::{
    activation_kernel, activation_reference, broadcast_shapes, load_broadcast,
};
use super::{expect_dtype_of, expect_float};
use crate::kernel::rows::row_tiles;
use crate::prelude::*;

float_unary_op! {
    /// y = -x, element-wise. Float dtypes, which `y` keeps.
    "std.neg",
    neg,
    reference: |v| -v,
    kernel: Tile::neg,
}

float_unary_op! {
    /// y = sqrt(x), element-wise (NaN for negative x). Float dtypes, which `y` keeps; computed
    /// in f32.
    "std.sqrt",
    sqrt,
    reference: f32::sqrt,
    kernel: Tile::sqrt,
}

float_unary_op! {
    /// y = tanh(x), element-wise. Float dtypes, which `y` keeps; computed in f32.
    "std.tanh",
    tanh,
    reference: f32::tanh,
    kernel: Tile::tanh,
}

/// y = a ^ b, numpy broadcasting, as ONNX Pow on floats: `a` and `b` share one float dtype,
/// which `y` keeps; computed in f32 (`powf`: a negative base with a non-integer exponent
/// gives NaN).
#[custom_op(name = "std.pow")]
pub mod pow {
    use super::*;

    #[infer_shape]
    fn infer_shape(a: &Shape, b: &Shape) -> Result<Shape, OpError> {
        broadcast_shapes(a, b)
    }

    #[infer_dtype]
    fn infer_dtype(a: DType, b: DType) -> Result<DType, OpError> {
        expect_float("a", a)?;
        expect_dtype_of("b", b, "a", a)?;
        Ok(a)
    }

    #[reference]
    fn reference(a: &Tensor, b: &Tensor) -> Result<Tensor, OpError> {
        let shape = broadcast_shapes(&a.shape(), &b.shape())?;
        let dims = ndarray::IxDyn(shape.dims());
        let not_broadcast = || OpError::input("b", format!("does not broadcast to {shape}"));
        let (a32, b32) = (a.to_f32_array(), b.to_f32_array());
        let a32 = a32.broadcast(dims.clone()).ok_or_else(not_broadcast)?;
        let b32 = b32.broadcast(dims).ok_or_else(not_broadcast)?;
        let mut y = a32.to_owned();
        y.zip_mut_with(&b32, |x, &e| *x = x.powf(e));
        Ok(Tensor::from_f32_array(y, a.dtype()))
    }

    #[kernel]
    fn kernel(k: &mut Kernel, a: &Global, b: &Global, y: &Global) -> Result<(), OpError> {
        let tiles = row_tiles(k, y)?;
        let at = load_broadcast(k, a, &tiles)?.cast(DType::F32);
        let bt = load_broadcast(k, b, &tiles)?.cast(DType::F32);
        k.store(y, tiles.offsets, &at.pow(&bt).cast(y.dtype()))
    }
}
