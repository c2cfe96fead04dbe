use pto_op::prelude::*;

// An optional input goes after every required one: a call leaves out a trailing run.
#[custom_op(name = "ui.optional_input_before_required")]
mod optional_input_before_required {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, _bias: Option<&Shape>, _w: &Shape) -> Result<Shape, OpError> {
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _bias: Option<DType>, _w: DType) -> Result<DType, OpError> {
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor, _bias: Option<&Tensor>, _w: &Tensor) -> Result<Tensor, OpError> {
        Ok(x.clone())
    }
}

fn main() {}
