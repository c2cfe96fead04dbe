use pto_op::prelude::*;

#[custom_op(name = "ui.undeclared_param_field", params(eps: f32 = 1e-6))]
mod undeclared_param_field {
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
    fn reference(x: &Tensor, p: &Params) -> Result<Tensor, OpError> {
        let scale = p.eps * p.gamma;
        Ok(Tensor::from_array(x.view::<f32>()?.mapv(|v| v * scale)))
    }
}

fn main() {}
