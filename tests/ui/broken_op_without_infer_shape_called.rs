use pto_op::prelude::*;

// No #[infer_shape]: the inputs `apply` and `run` take are read from #[infer_dtype], so the
// calls below add no error of their own.
#[custom_op(name = "ui.broken_add", params(alpha: f32 = 1.0))]
mod broken_add {
    use super::*;

    #[infer_dtype]
    fn infer_dtype(a: DType, _b: DType, _p: &Params) -> Result<DType, OpError> {
        Ok(a)
    }

    #[reference]
    fn reference(a: &Tensor, _b: &Tensor, _p: &Params) -> Result<Tensor, OpError> {
        Ok(a.clone())
    }
}

fn traced(a: &Value, b: &Value) -> Result<Value, OpError> {
    broken_add::apply(a, b, &broken_add::Params { alpha: 0.5 })
}

fn now(executor: &dyn Executor, a: &Tensor, b: &Tensor) -> Result<Tensor, OpError> {
    let params = broken_add::Params::default();
    assert_eq!(params.clone(), params);
    broken_add::run(executor, a, b, &params)
}

fn main() {
    let _ = (traced, now, broken_add::def, broken_add::NAME);
}
