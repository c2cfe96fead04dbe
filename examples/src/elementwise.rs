//! Element-wise example ops.

use pto_op::prelude::*;

/// y = gelu(x * scale + bias), element-wise, GELU in its tanh form. Float dtypes; computes in f32.
#[custom_op(name = "demo.gelu_affine", params(scale: f32 = 1.0, bias: f32 = 0.0))]
pub mod gelu_affine {
    use super::*;
    use crate::math::gelu_tanh;

    #[infer_shape]
    fn infer_shape(x: &Shape, _p: &Params) -> Result<Shape, OpError> {
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _p: &Params) -> Result<DType, OpError> {
        match x.is_float() {
            true => Ok(x),
            false => Err(OpError::input(
                "x",
                format!("expected f32, f16 or bf16, got {x}"),
            )),
        }
    }

    #[reference]
    fn reference(x: &Tensor, p: &Params) -> Result<Tensor, OpError> {
        let y = x.to_f32_array().mapv(|v| gelu_tanh(v * p.scale + p.bias));
        Ok(Tensor::from_array(y).cast(x.dtype()))
    }
}
