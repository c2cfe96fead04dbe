use pto_op::prelude::*;

#[custom_op(name = "ui.parity_key_shadowed_by_param", params(seed: i64 = 0))]
mod shadowed {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, _p: &Params) -> Result<Shape, OpError> {
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _p: &Params) -> Result<DType, OpError> {
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor, _p: &Params) -> Result<Tensor, OpError> {
        Ok(x.clone())
    }

    #[parity(x = f32[4, 8], seed = 3)]
    #[kernel]
    fn kernel(k: &mut Kernel, _x: &Global, _y: &Global, _p: &Params) -> Result<(), OpError> {
        k.grid(1)
    }
}

fn main() {}
