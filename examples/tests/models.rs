//! The example models compile for cpu and sim, run, and agree.

use pto_backends::compiler::{NodeRuns, RunError, TimeKind, compile};
use pto_backends::parity::check_model_parity;
use pto_op::models::{builtin_models, find_builtin};
use pto_op::{DType, Tensor};
// Links the example models (and their ops) into this test.
use pto_examples as _;

/// The models with weight data: `llama-7b-prefill` and the serving models only describe
/// their graphs.
fn runnable() -> Vec<&'static pto_op::models::ModelDef> {
    builtin_models()
        .expect("unique names")
        .into_iter()
        .filter(|m| m.describe.is_none())
        .collect()
}

#[test]
fn every_example_model_agrees_on_cpu_and_sim() {
    let names: Vec<&str> = builtin_models()
        .expect("unique names")
        .iter()
        .map(|m| m.name)
        .collect();
    assert_eq!(
        names,
        [
            "decoder-block",
            "decoder-block-f16",
            "decoder-block-std",
            "llama-2-7b-decode",
            "llama-7b-prefill",
            "mixed",
            "pipeline",
            "qwen2-7b-decode"
        ]
    );
    for def in runnable() {
        let model = (def.build)().unwrap();
        let parity = check_model_parity(&model, "sim", "cpu", None, 7).unwrap();
        println!("{parity}");
        assert!(parity.passed(), "{parity}");
        assert!(
            parity.simulated_seconds.is_some_and(|s| s > 0.0),
            "{parity}"
        );
    }
}

#[test]
fn sim_runs_kernels_falls_back_visibly_and_times_every_node() {
    let model = (find_builtin("mixed").unwrap().unwrap().build)().unwrap();
    let compiled = compile(&model, "sim").unwrap();
    let report = compiled.report();
    assert_eq!(report.fallbacks, ["demo.moments"]);
    assert_eq!(report.kernels_traced, 4);
    assert!(matches!(report.nodes[0].runs, NodeRuns::Kernel { .. }));
    assert_eq!(report.nodes[4].runs, NodeRuns::Fallback);
    let text = report.to_string();
    assert!(
        text.contains("1 op(s) fall back to the CPU reference: demo.moments"),
        "{text}"
    );
    assert!(text.contains("reference (fallback: no kernel)"), "{text}");

    let run = compiled.run(&compiled.random_inputs(1)).unwrap();
    let kinds: Vec<TimeKind> = run.node_times.iter().map(|t| t.kind).collect();
    assert_eq!(
        kinds,
        [
            TimeKind::Simulated,
            TimeKind::Simulated,
            TimeKind::Simulated,
            TimeKind::Simulated,
            TimeKind::Wall
        ]
    );
    assert!(run.node_times[0].cycles.is_some_and(|c| c > 0));
    let table = run.timing_table();
    assert!(table.contains("teamb.scaled_tanh"), "{table}");
    assert!(table.contains("total simulated"), "{table}");

    // Compile once, run many times: the same inputs give the same outputs.
    let again = compiled.run(&compiled.random_inputs(1)).unwrap();
    assert_eq!(again.outputs, run.outputs);
}

#[test]
fn inputs_are_checked_by_name_count_shape_and_dtype() {
    let model = (find_builtin("pipeline").unwrap().unwrap().build)().unwrap();
    let compiled = compile(&model, "cpu").unwrap();
    let err = compiled.run(&[]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "model `pipeline` takes 1 input(s) (x), got 0"
    );
    let err = compiled
        .run(&[Tensor::zeros([64, 256], DType::F16)])
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "model `pipeline`: input `x`: expected f32[64, 256], got f16[64, 256]"
    );
    let err = compiled
        .run(&[Tensor::zeros([64, 255], DType::F32)])
        .unwrap_err();
    assert!(matches!(err, RunError::InputType { .. }), "{err}");
    let named = [("y".to_owned(), Tensor::zeros([64, 256], DType::F32))].into();
    let err = compiled.order_inputs(named).unwrap_err();
    assert_eq!(
        err.to_string(),
        "model `pipeline`: input `x` (f32[64, 256]) is not given; its inputs are `x`"
    );
}

#[test]
fn every_example_model_walks_through_export_compile_run_and_compare() {
    let dir = std::env::temp_dir().join(format!("pto-walkthrough-{}", std::process::id()));
    for def in runnable() {
        let model = (def.build)().unwrap();
        let out = pto_examples::models::walkthrough(&model, &dir).unwrap();
        // std.silu travels through ONNX as Sigmoid + Mul, so that model loads back with one
        // node more; every other loads back identical.
        let identical = !model.graph.nodes.iter().any(|n| n.op == "std.silu");
        let expected = if identical {
            "the ONNX file loads back identical"
        } else {
            "the ONNX file loads back"
        };
        assert!(out.contains(expected), "{out}");
        assert!(out.contains("(sim vs cpu) passed"), "{out}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn two_models_of_one_name_are_a_duplicate_naming_both_places() {
    use pto_op::models::{ModelDef, ModelRegistration};
    use pto_op::registration::check_unique;
    let pipeline = find_builtin("pipeline").unwrap().unwrap();
    let registration = |name, source| ModelRegistration {
        def: ModelDef {
            name,
            description: "",
            build: pipeline.build,
            describe: None,
        },
        source,
    };
    // `_` and `-` are the same to lookups, so to duplicates.
    let second = registration("my_model", pto_op::source_location!());
    let first = registration("my-model", pto_op::source_location!());
    let err = check_unique(&[first, second]).expect_err("one name twice");
    assert_eq!(err.first.line + 1, err.second.line, "{err}");
    let message = err.to_string();
    assert!(
        message.starts_with("two model registrations of `my-model`: one in models ("),
        "{message}"
    );
    assert!(message.contains("models.rs:"), "{message}");
}
