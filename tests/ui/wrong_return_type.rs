use pto_op::prelude::*;

#[custom_op(name = "ui.wrong_return_type")]
mod wrong_return_type {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape) -> Shape {
        x.clone()
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
