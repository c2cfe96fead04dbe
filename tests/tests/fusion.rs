//! Fusion (`pto_op::fusion`) on traced std-op graphs: the demo crate's RMSNorm pattern is
//! rewritten into `demo.rms_norm` with the same outputs; a match whose condition fails (the
//! mean over another axis) or whose inner values are read elsewhere stays as it was.

use pto_backends::compiler::compile;
use pto_examples as _;
use pto_op::ops::{add, div, mul, pow, reduce_mean, sqrt};
use pto_op::prelude::*;
use pto_op::{Model, Tolerance};

/// `gamma * (x * (1 / sqrt(mean(x^2, axes) + eps)))`, as an exporter writes RMSNorm; with
/// `mean_out`, the mean is a graph output too.
fn rms_chain(axes: Vec<i64>, mean_out: bool) -> Model {
    let g = Graph::new();
    let x = g.input("x", Shape::from([4, 16]), DType::F32);
    let scalar = |name: &str, v: f32| {
        g.weight(name, Tensor::from_vec([1], vec![v]).expect("one element"))
            .expect("unique name")
    };
    let gamma = g
        .weight("gamma", Tensor::random([16], DType::F32, 3))
        .expect("unique name");
    let (two, eps, one) = (scalar("two", 2.0), scalar("eps", 1e-6), scalar("one", 1.0));
    let square = pow::apply(&x, &two, &Default::default()).expect("traces");
    let mean = reduce_mean::apply(
        &square,
        &reduce_mean::Params {
            axes,
            keepdims: true,
        },
    )
    .expect("traces");
    let root = sqrt::apply(
        &add::apply(&mean, &eps, &Default::default()).expect("traces"),
        &Default::default(),
    )
    .expect("traces");
    let inverse = div::apply(&one, &root, &Default::default()).expect("traces");
    // The operands of both products in the other order than the exporter's: the pattern
    // declares them commutative.
    let normalized = mul::apply(&inverse, &x, &Default::default()).expect("traces");
    let y = mul::apply(&normalized, &gamma, &Default::default()).expect("traces");
    g.output(&y);
    if mean_out {
        g.output(&mean);
    }
    g.to_model("rms_chain").expect("builds")
}

fn run(model: &Model) -> Vec<Tensor> {
    let compiled = compile(model, "cpu").expect("compiles");
    compiled
        .run(&compiled.random_inputs(1))
        .expect("runs")
        .outputs
}

#[test]
fn the_rms_norm_chain_becomes_demo_rms_norm_with_the_same_outputs() {
    let model = rms_chain(vec![-1], false);
    let (fused, applied) = pto_op::fusion::fuse(&model).expect("fuses");
    let ops: Vec<&str> = fused.graph.nodes.iter().map(|n| n.op.as_str()).collect();
    assert_eq!(ops, ["demo.rms_norm"]);
    assert_eq!(applied.len(), 1);
    assert_eq!(
        (
            applied[0].fusion.as_str(),
            applied[0].nodes,
            applied[0].root
        ),
        ("demo.rms_norm", 7, 6)
    );
    // The constants the chain used (2, 1, eps) are gone; eps is the op's param.
    assert_eq!(fused.weights.keys().collect::<Vec<_>>(), ["gamma"]);
    let (expected, actual) = (run(&model), run(&fused));
    let c = actual[0]
        .compare(&expected[0], Tolerance::for_dtype(DType::F32))
        .expect("same shape");
    assert!(c.passed(), "{c}");
}

#[test]
fn a_match_whose_condition_fails_is_left_as_it_was() {
    // The mean over axis 0 is not RMSNorm's: the rewrite declines.
    let model = rms_chain(vec![0], false);
    let (fused, applied) = pto_op::fusion::fuse(&model).expect("fuses");
    assert_eq!(applied, []);
    assert_eq!(fused.graph.nodes.len(), model.graph.nodes.len());
    assert_eq!(run(&fused), run(&model));
}

#[test]
fn a_match_whose_inner_values_are_read_elsewhere_is_left_as_it_was() {
    let model = rms_chain(vec![-1], true);
    let (fused, applied) = pto_op::fusion::fuse(&model).expect("fuses");
    assert_eq!(applied, []);
    assert_eq!(fused.graph.nodes.len(), model.graph.nodes.len());
}

#[test]
fn the_linked_fusions_are_listed_by_name() {
    let names: Vec<&str> = pto_op::fusion::fusions()
        .expect("unique names")
        .iter()
        .map(|f| f.name)
        .collect();
    for name in ["demo.flash_attention", "demo.rms_norm", "demo.swiglu"] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
}
