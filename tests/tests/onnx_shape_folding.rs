//! The shape arithmetic torch's exporters write for dynamic shapes (`x.view(b, -1)`,
//! `x.expand(..)`, masks built from `arange` over a dim), folded to constants at import once
//! every dim is known, so the params it feeds (a Reshape's shape, an Expand's shape) are
//! known. The models are written by the onnx package's helpers in the forms the exporters
//! emit, and the expected values are ONNX Runtime's on the same files, never pto-op's.

mod common;

use pto_backends::compiler::compile;
use pto_onnx::OnnxFile;
use pto_op::{DType, Model, Tensor, Tolerance};

use common::python::python;
use common::temp_dir;

/// Writes each model into `argv[1]` and prints, by model, ONNX Runtime's output (values and
/// shape) for the input `x` as JSON.
const MODELS: &str = r#"import json, os, sys
import numpy as np, onnx, onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
out_dir = sys.argv[1]
x = ((np.arange(24, dtype=np.float32).reshape(2, 3, 4) * 0.37) % 2.3 - 1.1).astype(np.float32)

def model(name, nodes, y_shape, initializers=(), y_type=TensorProto.FLOAT):
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("y", y_type, y_shape)],
        initializer=list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    path = os.path.join(out_dir, name + ".onnx")
    onnx.save(m, path)
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    y = s.run(None, {"x": x})[0]
    return name, {"y": y.astype(np.float64).ravel().tolist(), "shape": list(y.shape)}

def i64(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)

def node(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs, **attrs)

cases = []
# x.view(x.size(0), -1): Shape -> Gather -> Unsqueeze -> Concat -> Reshape.
cases.append(model("view_batch_minus_one", [
    node("Shape", ["x"], ["s"]),
    node("Gather", ["s", "zero"], ["b"], axis=0),
    node("Unsqueeze", ["b", "axes0"], ["b1"]),
    node("Concat", ["b1", "minus_one"], ["shape"], axis=0),
    node("Reshape", ["x", "shape"], ["y"]),
], [2, 12], [i64("zero", 0), i64("axes0", [0]), i64("minus_one", [-1])]))
# x.unsqueeze(1).expand(-1, 5, -1, -1), as the legacy exporter writes expand with -1:
# Expand(x, Where(Equal(shape, -1), ones, shape)).
cases.append(model("expand_where_equal", [
    node("Unsqueeze", ["x", "axes1"], ["x1"]),
    node("Equal", ["want", "minus_ones"], ["is_keep"]),
    node("Shape", ["x1"], ["s1"]),
    node("Where", ["is_keep", "ones", "want"], ["target"]),
    node("Expand", ["x1", "target"], ["y"]),
], [2, 5, 3, 4], [i64("axes1", [1]), i64("want", [-1, 5, -1, -1]),
                  i64("minus_ones", [-1, -1, -1, -1]), i64("ones", [1, 1, 1, 1])]))
# A causal mask over the last dim, built from the shape: Range(0, n) compared with its
# transpose, Where(mask, x, -1e4) (the additive mask an HF model writes).
cases.append(model("causal_mask_from_shape", [
    node("Shape", ["x"], ["s"]),
    node("Gather", ["s", "two"], ["n"], axis=0),
    node("Range", ["zero", "n", "one"], ["r"]),
    node("Unsqueeze", ["r", "axes0"], ["row"]),
    node("Unsqueeze", ["r", "axes1"], ["col"]),
    node("Gather", ["s", "one"], ["m"], axis=0),
    node("Range", ["zero", "m", "one"], ["rm"]),
    node("Unsqueeze", ["rm", "axes1"], ["colm"]),
    node("LessOrEqual", ["row", "colm"], ["keep"]),
    node("Where", ["keep", "x", "neg"], ["y"]),
], [2, 3, 4], [i64("two", 2), i64("zero", 0), i64("one", 1), i64("axes0", [0]),
               i64("axes1", [1]),
               numpy_helper.from_array(np.array(-1e4, dtype=np.float32), "neg")]))
# ConstantOfShape(Shape(x)) * x + Cast(Mul(Gather(Shape), 2)): shape arithmetic that reaches
# the data as a number.
cases.append(model("constant_of_shape_and_arithmetic", [
    node("Shape", ["x"], ["s"]),
    node("ConstantOfShape", ["s"], ["half"],
         value=numpy_helper.from_array(np.array([0.5], dtype=np.float32))),
    node("Mul", ["half", "x"], ["hx"]),
    node("Gather", ["s", "last"], ["n"], axis=0),
    node("Mul", ["n", "two"], ["n2"]),
    node("Cast", ["n2"], ["n2f"], to=TensorProto.FLOAT),
    node("Add", ["hx", "n2f"], ["y"]),
], [2, 3, 4], [i64("last", -1), i64("two", 2)]))
print(json.dumps({"x": x.astype(np.float64).ravel().tolist(), "cases": dict(cases)}))
"#;

/// The f32 tensor of shape `shape` (a JSON list of dims) and values `values` (a JSON list).
fn tensor(shape: &serde_json::Value, values: &serde_json::Value) -> Tensor {
    let dims: Vec<usize> = shape
        .as_array()
        .expect("a list of dims")
        .iter()
        .map(|d| d.as_u64().expect("a dim") as usize)
        .collect();
    let values: Vec<f32> = values
        .as_array()
        .expect("a list of values")
        .iter()
        .map(|v| v.as_f64().expect("a number") as f32)
        .collect();
    Tensor::from_vec(dims, values).expect("as many values as the shape holds")
}

#[test]
fn torch_dynamic_shape_idioms_fold_at_import_and_match_onnx_runtime() {
    let dir = temp_dir("onnx_shape_folding");
    let Some(stdout) = python(MODELS, &[&dir]) else {
        return;
    };
    let written: serde_json::Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("the script printed {stdout:?}: {e}"));
    let x = tensor(&serde_json::json!([2, 3, 4]), &written["x"]);
    let cases = written["cases"].as_object().expect("the cases by name");
    assert_eq!(cases.len(), 4);
    for (name, case) in cases {
        let model = Model::load_onnx(dir.join(format!("{name}.onnx")))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        // The shape arithmetic is gone: no node of the graph computes on integers.
        let g = &model.graph;
        for node in &g.nodes {
            for &input in &node.inputs {
                assert!(
                    g.values[input].ty.dtype.is_float() || g.values[input].ty.dtype == DType::Bool,
                    "{name}: node {} ({}) computes on {} {}",
                    node.name,
                    node.op,
                    g.values[input].name,
                    g.values[input].ty
                );
            }
        }
        let expected = tensor(&case["shape"], &case["y"]);
        for target in ["cpu", "sim"] {
            let compiled = compile(&model, target).unwrap_or_else(|e| panic!("{name}: {e}"));
            let y = &compiled
                .run(std::slice::from_ref(&x))
                .unwrap_or_else(|e| panic!("{name} on {target}: {e}"))
                .outputs[0];
            let comparison = y
                .compare(&expected, Tolerance::for_dtype(DType::F32))
                .unwrap_or_else(|e| panic!("{name} on {target}: {e}"));
            assert!(
                comparison.passed(),
                "{name} on {target}, against ONNX Runtime: {comparison}"
            );
        }
    }
}

/// A Reshape whose target shape is a graph input, as a model exported with the shape as an
/// argument has it.
const RESHAPE_BY_INPUT: &str = r#"import sys
import numpy as np, onnx, onnxruntime as ort
from onnx import TensorProto, helper
graph = helper.make_graph(
    [helper.make_node("Reshape", ["x", "shape"], ["y"])], "reshape_by_input",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 12]),
     helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b"])])
m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.checker.check_model(m, full_check=True)
onnx.save(m, sys.argv[1])
s = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
y = s.run(None, {"x": np.zeros([2, 12], np.float32), "shape": np.array([3, 8], np.int64)})[0]
print(list(y.shape))
"#;

#[test]
fn a_graph_input_that_feeds_a_param_is_given_on_the_command_line() {
    let dir = temp_dir("onnx_shape_folding_constant");
    let path = dir.join("reshape_by_input.onnx");
    let Some(ort_shape) = python(RESHAPE_BY_INPUT, &[&path]) else {
        return;
    };
    assert_eq!(ort_shape.trim(), "[3, 8]");
    let file = path.to_str().expect("a UTF-8 path");
    let out = pto_cli::run(["pto", "inspect", file, "--constant", "shape=[3,8]"]).unwrap();
    assert!(out.contains("inputs:  x f32[2, 12]\n"), "{out}");
    assert!(out.contains("outputs: y f32[3, 8]\n"), "{out}");
    // Without it, the error says how to give it.
    let err = pto_cli::run(["pto", "inspect", file])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(
            "`shape` is a graph input: give its value at import (`--constant shape=[..]`, \
             `ImportOptions::constant`)"
        ),
        "{err}"
    );
    // A value of the wrong shape is refused by name, as is one that is no list of numbers.
    let err = pto_cli::run(["pto", "inspect", file, "--constant", "shape=[3,8,1]"])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("value `shape`: dimension 0 is declared 2 (shape i64[2])"),
        "{err}"
    );
    let err = pto_cli::run(["pto", "inspect", file, "--constant", "shape=[3,[8]]"])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("the value of `shape` is not a number or a rectangular list of numbers"),
        "{err}"
    );
}
