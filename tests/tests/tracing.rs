//! Tracing: `apply` runs the op's own rules and records a node.

use pto_examples::{gelu_affine, moments};
use pto_op::prelude::*;

#[test]
fn apply_records_nodes_with_inferred_types() {
    let graph = Graph::new();
    let x = graph.input("x", Shape::from([8, 32]), DType::F16);
    let y = gelu_affine::apply(
        &x,
        &gelu_affine::Params {
            scale: 0.5,
            bias: 0.0,
        },
    )
    .unwrap();
    let (mean, rstd) = moments::apply(&y, &moments::Params::default()).unwrap();
    assert_eq!((y.dtype(), y.shape()), (DType::F16, &Shape::from([8, 32])));
    assert_eq!(
        (mean.dtype(), mean.shape()),
        (DType::F32, &Shape::from([8, 1]))
    );
    assert_eq!(rstd.id(), mean.id() + 1);

    let data = graph.def();
    assert_eq!(data.inputs, vec![x.id()]);
    let ops: Vec<&str> = data.nodes.iter().map(|n| n.op.as_str()).collect();
    assert_eq!(ops, ["demo.gelu_affine", "demo.moments"]);
    assert_eq!(data.nodes[1].inputs, vec![y.id()]);
    assert_eq!(data.nodes[1].outputs, vec![mean.id(), rstd.id()]);
    assert_eq!(data.nodes[0].fingerprint, gelu_affine::def().fingerprint());
    assert_eq!(
        data.nodes[0].attrs,
        gelu_affine::Params {
            scale: 0.5,
            bias: 0.0
        }
        .to_attributes()
    );
}

#[test]
fn a_bad_call_fails_while_tracing_and_records_nothing() {
    let graph = Graph::new();
    let x = graph.input("x", Shape::scalar(), DType::F32);
    let err = moments::apply(&x, &moments::Params::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "op `demo.moments`: input `x`: expected rank >= 1, got shape [] of rank 0"
    );
    assert!(graph.def().nodes.is_empty());
}

#[test]
fn inputs_from_two_graphs_are_refused() {
    let (g1, g2) = (Graph::new(), Graph::new());
    let a = g1.input("a", Shape::from([2]), DType::F32);
    let b = g2.input("b", Shape::from([2]), DType::F32);
    let err = pto_op::Graph::trace(two_inputs::def(), &[&a, &b], Default::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "op `test.two_inputs`: input `b`: belongs to another graph than the first input"
    );
}

/// An op with two inputs, to mix graphs.
#[custom_op(name = "test.two_inputs")]
pub mod two_inputs {
    use super::*;

    #[infer_shape]
    fn infer_shape(a: &Shape, b: &Shape) -> Result<Shape, OpError> {
        a.broadcast(b)
    }

    #[infer_dtype]
    fn infer_dtype(a: DType, _b: DType) -> Result<DType, OpError> {
        Ok(a)
    }

    #[reference]
    fn reference(a: &Tensor, _b: &Tensor) -> Result<Tensor, OpError> {
        Ok(a.clone())
    }
}

#[test]
fn a_traced_graph_becomes_a_model_with_weights_names_and_schemas() {
    let graph = Graph::new();
    let x = graph.input("x", Shape::from([4, 16]), DType::F32);
    let gamma = graph
        .weight("gamma", Tensor::random([16], DType::F32, 1))
        .unwrap();
    let y = pto_examples::rms_norm::apply(&x, &gamma, &Default::default()).unwrap();
    graph.output(&y);
    let model = graph.to_model("tiny").unwrap();
    assert_eq!(model.graph.values[y.id()].name, "n0.y");
    assert_eq!(model.graph.outputs, vec![y.id()]);
    assert_eq!(model.weight_bytes(), 64);
    assert_eq!(
        model.schemas["demo.rms_norm"],
        pto_examples::rms_norm::def().schema()
    );
    let err = graph
        .weight("gamma", Tensor::zeros([1], DType::F32))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("already has a value named `gamma`"),
        "{err}"
    );
}
