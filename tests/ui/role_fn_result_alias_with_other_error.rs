use pto_op::prelude::*;

// `Result<T>` here is an alias whose error is not `OpError`: the macro cannot see through
// the alias, so rustc reports it, pointing at the function's return type.
type Result<T> = core::result::Result<T, String>;

#[custom_op(name = "ui.result_alias")]
mod result_alias {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape) -> Result<Shape> {
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType) -> core::result::Result<DType, OpError> {
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor) -> core::result::Result<Tensor, OpError> {
        Ok(x.clone())
    }
}

fn main() {}
