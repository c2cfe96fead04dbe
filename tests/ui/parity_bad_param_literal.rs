use pto_op::prelude::*;

#[custom_op(name = "ui.parity_bad_param_literal", params(eps: f32 = 1e-6))]
mod parity_bad_param_literal {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, _gamma: &Shape, _p: &Params) -> Result<Shape, OpError> {
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _gamma: DType, _p: &Params) -> Result<DType, OpError> {
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor, _gamma: &Tensor, _p: &Params) -> Result<Tensor, OpError> {
        Ok(x.clone())
    }

    #[parity(x = f16[4, 64], gamma = f16[64], eps = "small")]
    #[kernel]
    fn kernel(k: &mut Kernel, _x: &Global, _gamma: &Global, _y: &Global) -> Result<(), OpError> {
        k.grid(1)
    }
}

fn main() {}
