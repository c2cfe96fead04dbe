use pto_op::prelude::*;

#[custom_op(name = "ui.parity_range_outside_dtype")]
mod parity_range_outside_dtype {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, _w: &Shape, _p: &Params) -> Result<Shape, OpError> {
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _w: DType, _p: &Params) -> Result<DType, OpError> {
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor, _w: &Tensor, _p: &Params) -> Result<Tensor, OpError> {
        Ok(x.clone())
    }

    #[parity(x = f32[4, 64], w = i8[64] in -200..200)]
    #[kernel]
    fn kernel(k: &mut Kernel, _x: &Global, _w: &Global, _y: &Global) -> Result<(), OpError> {
        k.grid(1)
    }
}

fn main() {}
