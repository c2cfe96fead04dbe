//! The forms of ONNX operators that exporters write and the ONNX backend node tests do not
//! cover, imported and run on cpu and sim against ONNX Runtime on the same files: Softmax
//! of opsets 11 and 12 (over the input flattened to 2-D at `axis`, which is the opset-13
//! softmax only on the last axis), Slice of opset 11, a Concat (and a Max) of one input,
//! Clip with a bound omitted.
//! The models are written by the onnx package's helpers, so the expected values are ONNX
//! Runtime's, never pto-op's.

mod common;

use pto_backends::compiler::compile;
use pto_onnx::OnnxFile;
use pto_op::{DType, Model, Tensor, Tolerance};

use common::python::python;
use common::temp_dir;

/// Writes each model into `argv[1]` and prints, by model, its input and ONNX Runtime's
/// output (values and shapes) as JSON.
const MODELS: &str = r#"import json, os, sys
import numpy as np, onnx, onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
out_dir = sys.argv[1]
x = (np.arange(24, dtype=np.float32).reshape(2, 3, 4) * 0.37) % 2.3 - 1.1

def model(name, opset, nodes, y_shape, initializers=()):
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
        initializer=list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7
    onnx.checker.check_model(m, full_check=True)
    path = os.path.join(out_dir, name + ".onnx")
    onnx.save(m, path)
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    y = s.run(None, {"x": x})[0]
    return name, {"y": y.astype(np.float64).ravel().tolist(), "shape": list(y.shape)}

def i64(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)

cases = []
for opset in (11, 12):
    for axis in (None, 0, 1, 2, -1, -2):
        attrs = {} if axis is None else {"axis": axis}
        label = "default" if axis is None else str(axis).replace("-", "m")
        cases.append(model(f"softmax{opset}_axis_{label}", opset,
                           [helper.make_node("Softmax", ["x"], ["y"], **attrs)], [2, 3, 4]))
cases.append(model("softmax13_axis_1", 13,
                   [helper.make_node("Softmax", ["x"], ["y"], axis=1)], [2, 3, 4]))
cases.append(model("slice11", 11,
                   [helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"])],
                   [2, 2, 2],
                   [i64("starts", [-1, 0]), i64("ends", [-5, 9]), i64("axes", [-1, 1]),
                    i64("steps", [-2, 2])]))
cases.append(model("concat_one_input", 13,
                   [helper.make_node("Concat", ["x"], ["y"], axis=1)], [2, 3, 4]))
cases.append(model("concat_one_input_opset11", 11,
                   [helper.make_node("Concat", ["x"], ["y"], axis=-1)], [2, 3, 4]))
cases.append(model("clip_without_min", 13,
                   [helper.make_node("Clip", ["x", "", "hi"], ["y"])], [2, 3, 4],
                   [numpy_helper.from_array(np.array(0.3, dtype=np.float32), "hi")]))
cases.append(model("clip_without_max", 12,
                   [helper.make_node("Clip", ["x", "lo"], ["y"])], [2, 3, 4],
                   [numpy_helper.from_array(np.array(-0.2, dtype=np.float32), "lo")]))
cases.append(model("max_one_input", 13,
                   [helper.make_node("Max", ["x"], ["y"])], [2, 3, 4]))
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
fn older_and_one_input_forms_match_onnx_runtime_on_cpu_and_sim() {
    let dir = temp_dir("onnx_exporter_forms");
    let Some(stdout) = python(MODELS, &[&dir]) else {
        return;
    };
    let written: serde_json::Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("the script printed {stdout:?}: {e}"));
    let x = tensor(&serde_json::json!([2, 3, 4]), &written["x"]);
    let cases = written["cases"].as_object().expect("the cases by name");
    assert_eq!(cases.len(), 19);
    for (name, case) in cases {
        let model = Model::load_onnx(dir.join(format!("{name}.onnx")))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
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
        // The graph output keeps the file's name.
        let g = &model.graph;
        assert_eq!(g.values[g.outputs[0]].name, "y", "{name}");
    }
}

#[test]
fn softmax_and_clip_before_opset_11_are_refused_naming_the_op_and_the_opsets() {
    let dir = temp_dir("onnx_exporter_forms_opset10");
    let script = r#"import os, sys, onnx
from onnx import TensorProto, helper
for op, attrs in (("Softmax", {}), ("Clip", {"min": -1.0, "max": 1.0})):
    graph = helper.make_graph(
        [helper.make_node(op, ["x"], ["y"], name="the_node", **attrs)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 10)])
    m.ir_version = 7
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(sys.argv[1], op + "10.onnx"))
"#;
    if python(script, &[&dir]).is_none() {
        return;
    }
    for (op, forms) in [("Softmax", "opsets 11 and 13"), ("Clip", "opset 11")] {
        let err = Model::load_onnx(dir.join(format!("{op}10.onnx")))
            .unwrap_err()
            .to_string();
        for part in ["`the_node`", op, "opset 10", forms] {
            assert!(err.contains(part), "{part} in: {err}");
        }
    }
}
