use pto_op::prelude::*;

// `bias` is optional in #[infer_shape], so every function takes it as an `Option`.
#[custom_op(name = "ui.optional_input_not_optional_in_reference")]
mod optional_input_not_optional_in_reference {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, _bias: Option<&Shape>) -> Result<Shape, OpError> {
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _bias: Option<DType>) -> Result<DType, OpError> {
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor, _bias: &Tensor) -> Result<Tensor, OpError> {
        Ok(x.clone())
    }
}

fn main() {}
