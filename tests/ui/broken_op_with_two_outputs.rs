use pto_op::prelude::*;

// One mistake (an input named differently in #[reference]) in an op of two outputs; the
// calls below destructure both, so they type-check against the surface the op declares.
#[custom_op(name = "ui.broken_moments", outputs(mean, variance))]
mod broken_moments {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape) -> Result<(Shape, Shape), OpError> {
        Ok((x.clone(), x.clone()))
    }

    #[infer_dtype]
    fn infer_dtype(x: DType) -> Result<(DType, DType), OpError> {
        Ok((x, x))
    }

    #[reference]
    fn reference(input: &Tensor) -> Result<(Tensor, Tensor), OpError> {
        Ok((input.clone(), input.clone()))
    }
}

// Called from another module, where every path into the op is resolved.
mod model {
    use pto_op::prelude::*;

    pub fn traced(x: &Value) -> Result<Value, OpError> {
        let (mean, _variance) =
            crate::broken_moments::apply(x, &crate::broken_moments::Params {})?;
        Ok(mean)
    }

    pub fn now(executor: &dyn Executor, x: &Tensor) -> Result<Tensor, OpError> {
        let (_mean, variance) =
            crate::broken_moments::run(executor, x, &crate::broken_moments::Params {})?;
        Ok(variance)
    }
}

fn main() {
    let _ = (model::traced, model::now);
}
