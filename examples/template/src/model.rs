//! A model built from this crate's op and a standard op, registered by name for the `pto`
//! command line.

use pto_op::models::ModelDef;
use pto_op::ops::matmul;
use pto_op::{DType, Graph, Model, OpError, Shape, Tensor};

use crate::l2_normalize;

/// `y = l2_normalize(x @ w)`: f32 `[32, 128] @ [128, 64]`.
pub fn build() -> Result<Model, OpError> {
    let graph = Graph::new();
    let x = graph.input("x", Shape::from([32, 128]), DType::F32);
    let w = graph.weight("w", Tensor::random([128, 64], DType::F32, 7))?;
    let h = matmul::apply(&x, &w, &Default::default())?;
    let y = l2_normalize::apply(&h, &l2_normalize::Params { eps: 1e-6 })?;
    graph.output(&y);
    graph.to_model("my-ops-demo")
}

pto_op::register_model!(
    MY_OPS_DEMO,
    ModelDef {
        name: "my-ops-demo",
        description: "a projection, then every row normalized to unit length",
        build,
        describe: None,
    }
);
