use pto_op::prelude::*;

#[custom_op(params(eps: f32 = 1e-6))]
mod missing_name {
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
        Ok(Tensor::from_array(x.view::<f32>()?.mapv(|v| v + p.eps)))
    }
}

fn main() {}
