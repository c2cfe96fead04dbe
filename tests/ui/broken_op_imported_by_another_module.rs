use pto_op::prelude::*;

// One mistake (a param type) in an op that another module imports from and calls by path:
// without the generated surface, rustc reported the import and the path as unresolved too,
// and suggested the other op's `apply`.
#[custom_op(name = "ui.broken_import", params(factor: u16 = 2))]
mod broken_import {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, _p: &Params) -> Result<Shape, OpError> {
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

#[custom_op(name = "ui.good_import")]
mod good_import {
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

mod model {
    use super::broken_import::{Params, apply};
    use pto_op::prelude::*;

    pub fn forward(x: &Value) -> Result<Value, OpError> {
        let y = apply(x, &Params { factor: 1 })?;
        let z = crate::broken_import::apply(&y, &crate::broken_import::Params { factor: 2 })?;
        crate::good_import::apply(&z, &crate::good_import::Params {})
    }

    pub fn name() -> &'static str {
        crate::broken_import::def().name
    }
}

fn main() {
    let _ = (model::forward, model::name);
}
