use pto_op::prelude::*;

// One mistake in the description (a param type), and the rest of the crate calls every part
// of the op's generated surface: only the mistake is reported.
#[custom_op(name = "ui.broken_scale", params(factor: u16 = 2))]
mod broken_scale {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, bias: &Shape, _p: &Params) -> Result<Shape, OpError> {
        bias.expect_eq("bias", x)?;
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _bias: DType) -> Result<DType, OpError> {
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor, _bias: &Tensor, _p: &Params) -> Result<Tensor, OpError> {
        Ok(x.clone())
    }
}

// A good op beside it, with its own `apply`: rustc must not suggest it for the broken one.
#[custom_op(name = "ui.good_copy")]
mod good_copy {
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
}

fn traced(x: &Value, bias: &Value) -> Result<Value, OpError> {
    let params = broken_scale::Params { factor: 3 };
    let y = broken_scale::apply(x, bias, &params)?;
    good_copy::apply(&y, &good_copy::Params {})
}

fn now(executor: &dyn Executor, x: &Tensor, bias: &Tensor) -> Result<Tensor, OpError> {
    broken_scale::run(executor, x, bias, &broken_scale::Params::default())
}

fn described() -> (&'static str, usize) {
    (broken_scale::NAME, broken_scale::def().inputs.len())
}

fn main() {
    let _ = (traced, now, described);
}
