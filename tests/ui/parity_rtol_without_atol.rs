use pto_op::prelude::*;

// A case sets `rtol` without `atol`: both or neither.
#[custom_op(name = "ui.parity_rtol_without_atol")]
mod rtol_alone {
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
    fn reference(x: &Tensor) -> Result<Tensor, OpError> {
        Ok(x.clone())
    }

    #[parity(x = f32[4, 8], rtol = 1e-3)]
    #[kernel]
    fn kernel(k: &mut Kernel, _x: &Global, _y: &Global) -> Result<(), OpError> {
        k.grid(1)
    }
}

fn main() {}
