use pto_op::prelude::*;

#[custom_op(name = "ui.duplicate_param", params(eps: f32 = 1e-6, eps: f32 = 1e-5))]
mod duplicate_param {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape) -> Result<Shape, OpError> {
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType) -> Result<DType, OpError> {
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor) -> Result<Tensor, OpError> {
        Ok(x.clone())
    }
}

fn main() {}
