use pto_op::prelude::*;

#[custom_op(name = "ui.wrong_input_count")]
mod wrong_input_count {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, _gamma: &Shape) -> Result<Shape, OpError> {
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType) -> Result<DType, OpError> {
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor, _gamma: &Tensor) -> Result<Tensor, OpError> {
        Ok(x.clone())
    }
}

fn main() {}
