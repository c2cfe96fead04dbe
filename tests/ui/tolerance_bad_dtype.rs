use pto_op::prelude::*;

#[custom_op(name = "ui.tolerance_bad_dtype", params(eps: f32 = 1e-6), tolerance(f16 = (2e-3, 1e-3), half = (1e-2, 1e-2)))]
mod tolerance_bad_dtype {
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

    #[kernel]
    fn kernel(k: &mut Kernel, _x: &Global, _gamma: &Global, _y: &Global) -> Result<(), OpError> {
        k.grid(1)
    }
}

fn main() {}
