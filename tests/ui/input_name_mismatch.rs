use pto_op::prelude::*;

#[custom_op(name = "ui.input_name_mismatch")]
mod input_name_mismatch {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, _gamma: &Shape) -> Result<Shape, OpError> {
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _gamma: DType) -> Result<DType, OpError> {
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor, _scale: &Tensor) -> Result<Tensor, OpError> {
        Ok(x.clone())
    }
}

fn main() {}
