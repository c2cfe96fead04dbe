use pto_op::prelude::*;

#[custom_op(name = "ui.missing_infer_shape", params(eps: f32 = 1e-6))]
mod missing_infer_shape {
    use super::*;

    #[infer_dtype]
    fn infer_dtype(x: DType, _p: &Params) -> Result<DType, OpError> {
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor, _p: &Params) -> Result<Tensor, OpError> {
        Ok(x.clone())
    }
}

fn main() {}
