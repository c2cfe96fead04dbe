use pto_op::prelude::*;

#[custom_op(name = "ui.optional_input_called_with_a_tensor")]
mod scale {
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
    fn reference(x: &Tensor, _bias: Option<&Tensor>) -> Result<Tensor, OpError> {
        Ok(x.clone())
    }
}

// `apply` takes an optional input as `Option<&Value>`: `Some(&b)`, or `None` to leave it out.
fn trace(x: &Value, b: &Value) -> Result<Value, OpError> {
    scale::apply(x, b, &scale::Params {})
}

fn main() {}
