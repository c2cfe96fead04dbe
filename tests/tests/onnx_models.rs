//! Every example model exports to ONNX that the `onnx` checker accepts, and imports back to
//! a model that computes the same outputs.

mod common;

use common::python::python;
use pto_backends::compiler::compile;
use pto_examples as _;
use pto_onnx::OnnxFile;
use pto_onnx::{from_onnx, to_onnx};
use pto_op::models::builtin_models;
use pto_op::{Model, Tolerance};

const CHECK: &str = r#"import sys, onnx
onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)
print("ok")
"#;

fn example_models() -> Vec<Model> {
    // Models that only describe their graph (the 7B decoder, for estimation) have no
    // weights to export.
    let models: Vec<Model> = builtin_models()
        .expect("unique model names")
        .into_iter()
        .filter(|def| def.describe.is_none())
        .map(|def| (def.build)().unwrap_or_else(|e| panic!("{}: {e}", def.name)))
        .collect();
    let names: Vec<&str> = models.iter().map(|m| m.name.as_str()).collect();
    for expected in ["pipeline", "decoder-block", "mixed"] {
        assert!(
            names.contains(&expected),
            "{expected} is registered: {names:?}"
        );
    }
    models
}

#[test]
fn every_example_model_passes_the_onnx_checker() {
    let dir = std::env::temp_dir().join(format!("pto-onnx-models-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("writable temp dir");
    for model in example_models() {
        let path = dir.join(format!("{}.onnx", model.name));
        model.save_onnx(&path).expect("exports");
        if let Some(out) = python(CHECK, &[&path]) {
            assert_eq!(out.trim(), "ok", "{}", model.name);
        }
    }
}

#[test]
fn import_of_export_computes_the_same_outputs() {
    for model in example_models() {
        let bytes = to_onnx(&model).expect("exports");
        let imported = from_onnx(&bytes).expect("imports");
        let original = compile(&model, "cpu").expect("compiles");
        let reimported = compile(&imported, "cpu").expect("compiles");
        let inputs = original.random_inputs(5);
        let expected = original.run(&inputs).expect("runs").outputs;
        let actual = reimported.run(&inputs).expect("runs").outputs;
        if model.graph.nodes.iter().any(|n| n.op == "std.silu") {
            // std.silu has no ONNX op: it travels as Sigmoid + Mul, which rounds once more.
            assert_eq!(
                imported.graph.nodes.len(),
                model.graph.nodes.len() + 1,
                "{}",
                model.name
            );
            for (a, e) in actual.iter().zip(&expected) {
                let comparison = a
                    .compare(e, Tolerance::for_dtype(e.dtype()))
                    .expect("same shapes");
                assert!(comparison.passed(), "{}: {comparison}", model.name);
            }
        } else {
            assert_eq!(
                imported,
                model.with_traced_kernels(),
                "{} imports as exported",
                model.name
            );
            assert_eq!(actual, expected, "{}", model.name);
        }
    }
}
