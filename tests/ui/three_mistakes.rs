use pto_op::prelude::*;

// Three independent mistakes: each is reported once, and nothing else is.
#[custom_op(name = "ui.three_mistakes", colour = "red", params(axis: u16))]
mod three_mistakes {
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
    fn reference(z: &Tensor) -> Result<Tensor, OpError> {
        Ok(z.clone())
    }
}

fn main() {}
