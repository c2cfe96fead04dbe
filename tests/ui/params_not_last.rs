use pto_op::prelude::*;

#[custom_op(name = "ui.params_not_last", params(eps: f32 = 1e-6))]
mod params_not_last {
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
    fn reference(p: &Params, x: &Tensor) -> Result<Tensor, OpError> {
        Ok(Tensor::from_array(x.view::<f32>()?.mapv(|v| v + p.eps)))
    }
}

fn main() {}
