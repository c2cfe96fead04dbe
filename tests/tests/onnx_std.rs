//! The standard-op mapping of ONNX export and import, proven against ONNX Runtime.
//!
//! Models of standard ops only are exported, checked with `onnx.checker` (full check) and
//! run in ONNX Runtime (CPU, one thread); every node output is a graph output, so each op's
//! result is compared with the CPU references of pto-op, evaluated here in graph order.
//! Import of the export gives the same model where the mapping is one to one, and the same
//! outputs always.
//!
//! The Python checks need `requirements-test.txt` installed; `scripts/test` does that. Without
//! them these tests fail, unless `PTO_SKIP_PYTHON=1` is set explicitly.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use prost::Message;
use pto_onnx::OnnxFile;
use pto_onnx::proto::{ModelProto, NodeProto};
use pto_onnx::{from_onnx, to_onnx};
use pto_op::ops;
use pto_op::prelude::*;
use pto_op::{Model, Tolerance, registry};

use common::python::python;
use common::temp_dir;

/// A model and the inputs to run it on, by input name.
struct Case {
    model: Model,
    inputs: BTreeMap<String, Tensor>,
}

/// The outputs of `model` on `inputs`: each node's CPU reference, in graph order.
fn evaluate(model: &Model, inputs: &BTreeMap<String, Tensor>) -> Result<Vec<Tensor>, OpError> {
    let graph = &model.graph;
    let mut values: Vec<Option<Tensor>> = vec![None; graph.values.len()];
    let sources = graph.inputs.iter().map(|&id| (id, inputs));
    for (id, tensors) in sources.chain(graph.weights.iter().map(|&id| (id, &model.weights))) {
        let name = &graph.values[id].name;
        let tensor = tensors
            .get(name)
            .ok_or_else(|| OpError::invalid(format!("no tensor for `{name}`")))?;
        values[id] = Some(tensor.clone());
    }
    for node in &graph.nodes {
        let args = node
            .inputs
            .iter()
            .map(|&id| {
                values[id].as_ref().ok_or_else(|| {
                    OpError::invalid(format!("`{}` is used before it is computed", node.op))
                })
            })
            .collect::<Result<Vec<&Tensor>, OpError>>()?;
        let def = registry::find(&node.op).map_err(|e| OpError::invalid(e.to_string()))?;
        let results = def.run_reference(&args, &node.attrs)?;
        for (&id, tensor) in node.outputs.iter().zip(results) {
            values[id] = Some(tensor);
        }
    }
    graph
        .outputs
        .iter()
        .map(|&id| {
            values[id]
                .clone()
                .ok_or_else(|| OpError::invalid(format!("output {id} is never computed")))
        })
        .collect()
}

/// A token-embedding MLP block: gather (i64 indices) -> layer_norm -> batched matmul + bias
/// -> every activation -> arithmetic with broadcasting -> matmul -> residual -> rms_norm ->
/// logits -> softmax on the last and on a middle axis. Every op result is a graph output.
fn mlp_block() -> Result<Case, OpError> {
    let g = Graph::new();
    let out = |v: Value| {
        g.output(&v);
        v
    };
    let tokens = g.input("tokens", Shape::from([2, 5]), DType::I64);
    let embedding = g.weight("embedding", Tensor::random([16, 8], DType::F32, 1))?;
    let ln_gamma = g.weight(
        "ln_gamma",
        Tensor::random_uniform([8], DType::F32, 2, 0.5, 1.5),
    )?;
    let ln_beta = g.weight("ln_beta", Tensor::random([8], DType::F32, 3))?;
    let w_up = g.weight("w_up", Tensor::random([8, 16], DType::F32, 4))?;
    let b_up = g.weight("b_up", Tensor::random([16], DType::F32, 5))?;
    let scale = g.weight(
        "scale",
        Tensor::random_uniform([1, 16], DType::F32, 6, 1.0, 2.0),
    )?;
    let w_down = g.weight("w_down", Tensor::random([16, 8], DType::F32, 7))?;
    let rms_gamma = g.weight(
        "rms_gamma",
        Tensor::random_uniform([8], DType::F32, 8, 0.5, 1.5),
    )?;
    let w_out = g.weight("w_out", Tensor::random([8, 12], DType::F32, 9))?;

    let e = out(ops::gather::apply(
        &embedding,
        &tokens,
        &ops::gather::Params { axis: 0 },
    )?);
    let h = out(ops::layer_norm::apply(
        &e,
        &ln_gamma,
        &ln_beta,
        &ops::layer_norm::Params { eps: 1e-5 },
    )?);
    let up = out(ops::matmul::apply(&h, &w_up, &Default::default())?);
    let u = out(ops::add::apply(&up, &b_up, &Default::default())?);
    let gelu = |approximate: &str| {
        ops::gelu::apply(
            &u,
            &ops::gelu::Params {
                approximate: approximate.to_owned(),
            },
        )
    };
    let erf = out(gelu("none")?);
    let tanh = out(gelu("tanh")?);
    let silu = out(ops::silu::apply(&u, &Default::default())?);
    let relu = out(ops::relu::apply(&u, &Default::default())?);
    let sigmoid = out(ops::sigmoid::apply(&u, &Default::default())?);
    let gated = out(ops::mul::apply(&erf, &sigmoid, &Default::default())?);
    let diff = out(ops::sub::apply(&tanh, &silu, &Default::default())?);
    let mixed = out(ops::add::apply(&gated, &diff, &Default::default())?);
    let plus_relu = out(ops::add::apply(&mixed, &relu, &Default::default())?);
    let scaled = out(ops::div::apply(&plus_relu, &scale, &Default::default())?);
    let down = out(ops::matmul::apply(&scaled, &w_down, &Default::default())?);
    let residual = out(ops::add::apply(&e, &down, &Default::default())?);
    let normed = out(ops::rms_norm::apply(
        &residual,
        &rms_gamma,
        &ops::rms_norm::Params { eps: 1e-6 },
    )?);
    let logits = out(ops::matmul::apply(&normed, &w_out, &Default::default())?);
    let mean = out(ops::reduce_mean::apply(
        &logits,
        &ops::reduce_mean::Params {
            axes: vec![-1],
            keepdims: true,
        },
    )?);
    let centered = out(ops::sub::apply(&logits, &mean, &Default::default())?);
    out(ops::softmax::apply(
        &centered,
        &ops::softmax::Params { axis: -1 },
    )?);
    out(ops::softmax::apply(
        &logits,
        &ops::softmax::Params { axis: 1 },
    )?);
    let tokens = Tensor::from_vec([2, 5], vec![0i64, 3, 15, 7, -1, 2, 2, 9, -16, 11])
        .map_err(|e| OpError::invalid(e.to_string()))?;
    Ok(Case {
        model: g.to_model("mlp_block")?,
        inputs: BTreeMap::from([("tokens".to_owned(), tokens)]),
    })
}

/// The math of exported transformers: negation, square root, tanh, powers (a scalar and a
/// broadcast exponent) and a batched matrix product whose batch dims broadcast. Every op
/// result is a graph output.
fn transformer_math() -> Result<Case, OpError> {
    let g = Graph::new();
    let out = |v: Value| {
        g.output(&v);
        v
    };
    let x = g.input("x", Shape::from([2, 3, 4]), DType::F32);
    let two = g.weight(
        "two",
        Tensor::from_vec([1], vec![2.0f32]).map_err(|e| OpError::invalid(e.to_string()))?,
    )?;
    let exponents = g.weight(
        "exponents",
        Tensor::from_vec([4], vec![1.0f32, 2.0, 3.0, 0.5])
            .map_err(|e| OpError::invalid(e.to_string()))?,
    )?;
    let one = g.weight(
        "one",
        Tensor::from_vec([1], vec![1.0f32]).map_err(|e| OpError::invalid(e.to_string()))?,
    )?;
    let b = g.weight("b", Tensor::random([1, 4, 5], DType::F32, 12))?;
    let n = out(ops::neg::apply(&x, &Default::default())?);
    let square = out(ops::pow::apply(&n, &two, &Default::default())?);
    let positive = out(ops::add::apply(&square, &one, &Default::default())?);
    out(ops::pow::apply(&positive, &exponents, &Default::default())?);
    let root = out(ops::sqrt::apply(&positive, &Default::default())?);
    let t = out(ops::tanh::apply(&root, &Default::default())?);
    out(ops::batch_matmul::apply(&t, &b, &Default::default())?);
    Ok(Case {
        model: g.to_model("transformer_math")?,
        inputs: BTreeMap::from([("x".to_owned(), Tensor::random([2, 3, 4], DType::F32, 13))]),
    })
}

/// Shape ops on a rank-3 input: transpose (explicit and reversing perm), reshape with 0
/// and -1, a chain of concats, slices with negative bounds and with default axes, gathers
/// with i64 and i32 indices, casts through f16 and i32, reductions with and without
/// keepdims, integer arithmetic, slices with negative and positive steps, a reshape with
/// allowzero, and integer powers (integer and float exponents). Every op result is a graph
/// output.
fn shape_ops() -> Result<Case, OpError> {
    let g = Graph::new();
    let out = |v: Value| {
        g.output(&v);
        v
    };
    let x = g.input("x", Shape::from([2, 3, 4]), DType::F32);
    let side = g.weight("side", Tensor::random([4, 2], DType::F32, 11))?;
    let indices = g.weight(
        "indices",
        Tensor::from_vec([3], vec![-1i64, 0, 2]).map_err(|e| OpError::invalid(e.to_string()))?,
    )?;
    let indices_i32 = g.weight(
        "indices_i32",
        Tensor::from_vec([2, 2], vec![3i32, -4, 1, 1])
            .map_err(|e| OpError::invalid(e.to_string()))?,
    )?;
    let exponent = g.weight(
        "exponent",
        Tensor::from_vec([4], vec![2i32, 3, 2, 0]).map_err(|e| OpError::invalid(e.to_string()))?,
    )?;
    let halves = g.weight(
        "halves",
        Tensor::from_vec([4], vec![0.5f32, 1.5, 0.5, 1.0])
            .map_err(|e| OpError::invalid(e.to_string()))?,
    )?;
    let two = g.weight(
        "two",
        Tensor::from_vec([1], vec![2i64]).map_err(|e| OpError::invalid(e.to_string()))?,
    )?;
    let ten = g.weight(
        "ten",
        Tensor::from_vec([1], vec![10.0f32]).map_err(|e| OpError::invalid(e.to_string()))?,
    )?;
    let ints = |v: &[i64]| v.to_vec();

    let t = out(ops::transpose::apply(
        &x,
        &ops::transpose::Params {
            perm: ints(&[2, 0, 1]),
        },
    )?);
    out(ops::transpose::apply(
        &x,
        &ops::transpose::Params { perm: Vec::new() },
    )?);
    let r = out(ops::reshape::apply(
        &t,
        &ops::reshape::Params {
            shape: ints(&[0, -1]),
            allowzero: false,
        },
    )?);
    out(ops::reshape::apply(
        &x,
        &ops::reshape::Params {
            shape: ints(&[-1]),
            allowzero: false,
        },
    )?);
    let c = out(ops::concat::apply(
        &r,
        &side,
        &ops::concat::Params { axis: 1 },
    )?);
    let c2 = out(ops::concat::apply(
        &c,
        &r,
        &ops::concat::Params { axis: -1 },
    )?);
    let s = out(ops::slice::apply(
        &c2,
        &ops::slice::Params {
            starts: ints(&[1, -10]),
            ends: ints(&[-1, 100]),
            axes: ints(&[0, 1]),
            steps: Vec::new(),
        },
    )?);
    out(ops::slice::apply(
        &x,
        &ops::slice::Params {
            starts: ints(&[0, 1]),
            ends: ints(&[1, 3]),
            axes: Vec::new(),
            steps: Vec::new(),
        },
    )?);
    out(ops::reduce_sum::apply(
        &s,
        &ops::reduce_sum::Params {
            axes: ints(&[0]),
            keepdims: false,
        },
    )?);
    out(ops::reduce_sum::apply(
        &x,
        &ops::reduce_sum::Params {
            axes: Vec::new(),
            keepdims: false,
        },
    )?);
    out(ops::reduce_mean::apply(
        &x,
        &ops::reduce_mean::Params {
            axes: Vec::new(),
            keepdims: true,
        },
    )?);
    out(ops::reduce_mean::apply(
        &x,
        &ops::reduce_mean::Params {
            axes: ints(&[1, -1]),
            keepdims: false,
        },
    )?);
    out(ops::gather::apply(
        &x,
        &indices,
        &ops::gather::Params { axis: 1 },
    )?);
    out(ops::gather::apply(
        &x,
        &indices_i32,
        &ops::gather::Params { axis: -1 },
    )?);
    let cast = |v: &Value, to: &str| {
        ops::cast::apply(
            v,
            &ops::cast::Params {
                to: to.to_owned(),
                saturate: true,
                round_mode: "up".into(),
            },
        )
    };
    let half = out(cast(&x, "f16")?);
    out(cast(&half, "f32")?);
    let big = out(ops::mul::apply(&x, &ten, &Default::default())?);
    let truncated = out(cast(&big, "i32")?);
    let doubled = out(ops::add::apply(
        &truncated,
        &truncated,
        &Default::default(),
    )?);
    out(ops::reduce_sum::apply(
        &doubled,
        &ops::reduce_sum::Params {
            axes: ints(&[2]),
            keepdims: true,
        },
    )?);
    // Slices with steps: negative ones from a clamped start down to `i64::MIN` (the first
    // element) and past a start beyond the axis, and a positive one of 3.
    out(ops::slice::apply(
        &x,
        &ops::slice::Params {
            starts: ints(&[-1, 10]),
            ends: ints(&[i64::MIN, 0]),
            axes: ints(&[1, 2]),
            steps: ints(&[-2, -3]),
        },
    )?);
    out(ops::slice::apply(
        &x,
        &ops::slice::Params {
            starts: ints(&[0]),
            ends: ints(&[4]),
            axes: ints(&[-1]),
            steps: ints(&[3]),
        },
    )?);
    out(ops::reshape::apply(
        &x,
        &ops::reshape::Params {
            shape: ints(&[4, 6]),
            allowzero: true,
        },
    )?);
    // Integer powers (of a computed base: constants are folded at import): exact for
    // integer exponents, truncated for float ones (`positive`: the squares).
    out(ops::pow::apply(&truncated, &exponent, &Default::default())?);
    let positive = ops::pow::apply(&truncated, &two, &Default::default())?;
    out(ops::pow::apply(&positive, &halves, &Default::default())?);
    Ok(Case {
        model: g.to_model("shape_ops")?,
        inputs: BTreeMap::from([("x".to_owned(), Tensor::random([2, 3, 4], DType::F32, 10))]),
    })
}

/// exp, erf, reciprocal, max and min (broadcast), equal and where, ReduceMax, expand and
/// trilu (upper and lower, k from the diagonal). Every op result is a graph output.
fn exporter_ops() -> Result<Case, OpError> {
    let g = Graph::new();
    let out = |v: Value| {
        g.output(&v);
        v
    };
    let x = g.input("x", Shape::from([2, 3, 4]), DType::F32);
    let row = g.weight("row", Tensor::random([4], DType::F32, 21))?;
    let e = out(ops::exp::apply(&x, &Default::default())?);
    out(ops::erf::apply(&x, &Default::default())?);
    out(ops::reciprocal::apply(&e, &Default::default())?);
    let high = out(ops::max::apply(&x, &row, &Default::default())?);
    let low = out(ops::min::apply(&x, &row, &Default::default())?);
    let same = out(ops::equal::apply(&high, &x, &Default::default())?);
    out(ops::select::apply(&same, &x, &low, &Default::default())?);
    out(ops::reduce_max::apply(
        &x,
        &ops::reduce_max::Params {
            axes: vec![-1],
            keepdims: false,
        },
    )?);
    out(ops::expand::apply(
        &row,
        &ops::expand::Params { shape: vec![3, 1] },
    )?);
    out(ops::trilu::apply(
        &x,
        &ops::trilu::Params { upper: true, k: 1 },
    )?);
    out(ops::trilu::apply(
        &x,
        &ops::trilu::Params {
            upper: false,
            k: -1,
        },
    )?);
    Ok(Case {
        model: g.to_model("exporter_ops")?,
        inputs: BTreeMap::from([("x".to_owned(), Tensor::random([2, 3, 4], DType::F32, 22))]),
    })
}

/// The ops exporters build masks, rotary tables and clamps from: the comparisons (broadcast),
/// and, or, xor and not of their results, IsNaN and IsInf (both, positive, negative) of
/// NaN, the infinities and finite values, cos, sin, abs, log, sign, and floor, ceil and
/// round of halves (to even) and of other values, clip (and clip with its bounds crossed).
/// Every op result is a graph output.
fn mask_ops() -> Result<Case, OpError> {
    let g = Graph::new();
    let out = |v: Value| {
        g.output(&v);
        v
    };
    let x = g.input("x", Shape::from([2, 3, 4]), DType::F32);
    let special = g.input("special", Shape::from([6]), DType::F32);
    let halves = g.input("halves", Shape::from([8]), DType::F32);
    let row = g.weight("row", Tensor::random([4], DType::F32, 31))?;
    let scalar = |name: &str, v: f32| g.weight(name, Tensor::from_vec(Shape::scalar(), vec![v])?);
    let (lo, hi) = (scalar("lo", -0.5)?, scalar("hi", 0.75)?);
    let lt = out(ops::less::apply(&x, &row, &Default::default())?);
    let le = out(ops::less_equal::apply(&x, &row, &Default::default())?);
    let gt = out(ops::greater::apply(&x, &row, &Default::default())?);
    let ge = out(ops::greater_equal::apply(&row, &x, &Default::default())?);
    out(ops::and::apply(&lt, &ge, &Default::default())?);
    out(ops::or::apply(&gt, &lt, &Default::default())?);
    out(ops::xor::apply(&le, &ge, &Default::default())?);
    out(ops::not::apply(&lt, &Default::default())?);
    out(ops::is_nan::apply(&special, &Default::default())?);
    for (detect_positive, detect_negative) in [(true, true), (true, false), (false, true)] {
        let params = ops::is_inf::Params {
            detect_positive,
            detect_negative,
        };
        out(ops::is_inf::apply(&special, &params)?);
    }
    out(ops::cos::apply(&x, &Default::default())?);
    out(ops::sin::apply(&x, &Default::default())?);
    let magnitude = out(ops::abs::apply(&x, &Default::default())?);
    out(ops::log::apply(&magnitude, &Default::default())?);
    out(ops::sign::apply(&x, &Default::default())?);
    out(ops::sign::apply(&halves, &Default::default())?);
    for rounded in [
        ops::floor::apply(&halves, &Default::default())?,
        ops::ceil::apply(&halves, &Default::default())?,
        ops::round::apply(&halves, &Default::default())?,
        ops::round::apply(&x, &Default::default())?,
    ] {
        out(rounded);
    }
    out(ops::clip::apply(&x, &lo, &hi, &Default::default())?);
    // lo > hi: every element is hi.
    out(ops::clip::apply(&x, &hi, &lo, &Default::default())?);
    let special_values = vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -3.5, 1e30];
    let halves_values: Vec<f32> = vec![-2.5, -1.5, -0.5, 0.0, 0.5, 1.5, 2.5, 3.7];
    Ok(Case {
        model: g.to_model("mask_ops")?,
        inputs: BTreeMap::from([
            // Scaled so that round and floor see values beyond [-1, 1].
            (
                "x".to_owned(),
                Tensor::from_f32_array(
                    Tensor::random([2, 3, 4], DType::F32, 32).to_f32_array() * 3.0,
                    DType::F32,
                ),
            ),
            (
                "special".to_owned(),
                Tensor::from_vec([6], special_values).expect("6 values"),
            ),
            (
                "halves".to_owned(),
                Tensor::from_vec([8], halves_values).expect("8 values"),
            ),
        ]),
    })
}

fn cases() -> Vec<Case> {
    vec![
        mlp_block().expect("the MLP block traces"),
        shape_ops().expect("the shape-ops model traces"),
        transformer_math().expect("the transformer math model traces"),
        exporter_ops().expect("the exporter-ops model traces"),
        mask_ops().expect("the mask-ops model traces"),
    ]
}

/// Writes `model` as `dir/model.onnx` and its inputs as `dir/inputs/<name>.npy`, the layout
/// `scripts/ort_bench.py` reads. Returns the model's path and the inputs directory.
fn write_case(case: &Case, dir: &Path) -> (PathBuf, PathBuf) {
    let model_path = dir.join("model.onnx");
    case.model
        .save_onnx(&model_path)
        .expect("the model exports");
    let inputs_dir = dir.join("inputs");
    fs::create_dir_all(&inputs_dir).expect("writable");
    for (name, tensor) in &case.inputs {
        fs::write(
            inputs_dir.join(format!("{name}.npy")),
            pto_cli::tensor_file::npy_bytes(tensor).expect("no bf16 input"),
        )
        .expect("writable");
    }
    (model_path, inputs_dir)
}

/// Checks the model with the full ONNX checker, runs it in ONNX Runtime (CPU, one thread)
/// on the `.npy` inputs, writes output `k` as raw little-endian `k.bin` and prints the
/// output shapes as JSON.
const RUN_IN_ORT: &str = r#"import json, os, sys
import numpy as np, onnx, onnxruntime as ort
model_path, inputs_dir, outputs_dir = sys.argv[1:4]
onnx.checker.check_model(onnx.load(model_path), full_check=True)
options = ort.SessionOptions()
options.intra_op_num_threads = 1
options.inter_op_num_threads = 1
session = ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
feeds = {i.name: np.load(os.path.join(inputs_dir, i.name + ".npy")) for i in session.get_inputs()}
outputs = session.run(None, feeds)
for k, o in enumerate(outputs):
    np.ascontiguousarray(o, dtype=o.dtype.newbyteorder("<")).tofile(os.path.join(outputs_dir, f"{k}.bin"))
print(json.dumps([list(o.shape) for o in outputs]))
"#;

/// The outputs of `case` in ONNX Runtime; `None` when Python is skipped.
fn run_in_ort(case: &Case, dir: &Path) -> Option<Vec<Tensor>> {
    let (model_path, inputs_dir) = write_case(case, dir);
    let outputs_dir = dir.join("outputs");
    fs::create_dir_all(&outputs_dir).expect("writable");
    let stdout = python(RUN_IN_ORT, &[&model_path, &inputs_dir, &outputs_dir])?;
    let shapes: Vec<Vec<usize>> = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("the ORT script printed {stdout:?}: {e}"));
    let graph = &case.model.graph;
    assert_eq!(shapes.len(), graph.outputs.len(), "ORT's output count");
    let outputs = graph
        .outputs
        .iter()
        .zip(shapes)
        .enumerate()
        .map(|(k, (&id, shape))| {
            let value = &graph.values[id];
            assert_eq!(
                shape,
                value.ty.shape.dims(),
                "the shape of output `{}`",
                value.name
            );
            let bytes = fs::read(outputs_dir.join(format!("{k}.bin"))).expect("ORT wrote it");
            Tensor::from_le_bytes(value.ty.dtype, value.ty.shape.clone(), &bytes)
                .unwrap_or_else(|e| panic!("output `{}` from ORT: {e}", value.name))
        })
        .collect();
    Some(outputs)
}

/// The op that produces each graph output, by output position.
fn producers(model: &Model) -> Vec<&str> {
    let graph = &model.graph;
    graph
        .outputs
        .iter()
        .map(|id| {
            graph
                .nodes
                .iter()
                .find(|n| n.outputs.contains(id))
                .map_or("(input)", |n| n.op.as_str())
        })
        .collect()
}

/// Asserts each of `actual` is within the default tolerance of its dtype of `expected`.
fn assert_close(actual: &[Tensor], expected: &[Tensor], what: &str) {
    assert_eq!(actual.len(), expected.len(), "{what}: output count");
    for (k, (a, e)) in actual.iter().zip(expected).enumerate() {
        let comparison = a
            .compare(e, Tolerance::for_dtype(e.dtype()))
            .unwrap_or_else(|err| panic!("{what}: output {k}: {err}"));
        assert!(comparison.passed(), "{what}: output {k}: {comparison}");
    }
}

#[test]
fn every_standard_op_is_covered_by_the_ort_models() {
    let used: BTreeSet<String> = cases()
        .iter()
        .flat_map(|c| c.model.graph.nodes.iter().map(|n| n.op.clone()))
        .collect();
    let standard: BTreeSet<String> = registry::ops()
        .expect("the registry builds")
        .iter()
        .map(|def| def.name.to_owned())
        .filter(|name| name.starts_with("std."))
        .collect();
    let missing: Vec<&String> = standard.difference(&used).collect();
    assert!(missing.is_empty(), "no ORT model uses {missing:?}");
}

#[test]
fn standard_op_models_match_onnx_runtime() {
    let mut max_errors: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for case in cases() {
        let expected = evaluate(&case.model, &case.inputs).expect("the references run");
        let Some(actual) = run_in_ort(&case, &temp_dir(&format!("ort_{}", case.model.name))) else {
            return;
        };
        let mut failures = Vec::new();
        for ((op, ort), reference) in producers(&case.model)
            .into_iter()
            .zip(&actual)
            .zip(&expected)
        {
            // The default tolerances hold: no op needed loosening (see the max errors printed
            // below; MLAS's summation order and ORT's vectorized exp, erf and tanh stay within
            // a few f32 ulps of the references on these O(1) values).
            let comparison = ort
                .compare(reference, Tolerance::for_dtype(reference.dtype()))
                .expect("shapes were checked");
            let worst = max_errors.entry(op.to_owned()).or_default();
            worst.0 = worst.0.max(comparison.max_abs_error);
            worst.1 = worst.1.max(comparison.max_rel_error);
            if !comparison.passed() {
                failures.push(format!("{} ({op}): {comparison}", case.model.name));
            }
        }
        assert!(failures.is_empty(), "ORT differs:\n{}", failures.join("\n"));
    }
    for (op, (abs, rel)) in &max_errors {
        eprintln!("ORT vs reference: {op:<16} max abs error {abs:.1e}, max rel error {rel:.1e}");
    }
}

#[test]
fn one_to_one_models_import_as_exported() {
    for case in cases() {
        let bytes = to_onnx(&case.model).expect("the model exports");
        let back = from_onnx(&bytes).expect("the export imports");
        let expected = evaluate(&case.model, &case.inputs).expect("the references run");
        let actual = evaluate(&back, &case.inputs).expect("the import runs");
        // std.silu is written as Sigmoid then Mul, so a model using it comes back with
        // those two ops instead, which round differently from the fused reference; all
        // other std ops map one to one and give the same bits.
        assert_close(&actual, &expected, &case.model.name);
        if case.model.graph.nodes.iter().all(|n| n.op != "std.silu") {
            assert_eq!(
                back,
                case.model.with_traced_kernels(),
                "{}",
                case.model.name
            );
            assert_eq!(actual, expected, "{}", case.model.name);
        }
    }
}

#[test]
fn an_empty_perm_is_written_as_no_attribute_and_read_back_as_empty() {
    let case = shape_ops().expect("the shape-ops model traces");
    let bytes = to_onnx(&case.model).expect("exports");
    let proto = ModelProto::decode(bytes.as_slice()).expect("decodes");
    let perms: Vec<Vec<i64>> = proto
        .graph
        .iter()
        .flat_map(|g| &g.node)
        .filter(|n| n.op_type == "Transpose")
        .map(|n| n.attribute.iter().flat_map(|a| a.ints.clone()).collect())
        .collect();
    // ONNX reads `perm = []` as a permutation of no axes (the checker refuses it); without
    // the attribute, Transpose reverses the axes, as pto-op's empty perm does.
    assert_eq!(perms, [vec![2, 0, 1], vec![]]);
    let back = from_onnx(&bytes).expect("imports");
    let reversed = back
        .graph
        .nodes
        .iter()
        .filter(|n| n.op == "std.transpose")
        .map(|n| n.attrs.get("perm").cloned())
        .collect::<Vec<_>>();
    assert_eq!(
        reversed,
        [
            Some(AttrValue::I64s(vec![2, 0, 1])),
            Some(AttrValue::I64s(Vec::new()))
        ]
    );
}

#[test]
fn silu_imports_as_sigmoid_times_input() {
    let case = mlp_block().expect("the MLP block traces");
    let back = from_onnx(&to_onnx(&case.model).expect("exports")).expect("imports");
    let count = |model: &Model, op: &str| model.graph.nodes.iter().filter(|n| n.op == op).count();
    assert_eq!(count(&case.model, "std.silu"), 1);
    assert_eq!(count(&back, "std.silu"), 0);
    assert_eq!(
        count(&back, "std.sigmoid"),
        count(&case.model, "std.sigmoid") + 1
    );
    assert_eq!(count(&back, "std.mul"), count(&case.model, "std.mul") + 1);
    // A product of a rank-3 `a` imports as a reshape to its rows, the product and a
    // reshape back (the kernel's form): two more nodes per such product.
    let batched = case
        .model
        .graph
        .nodes
        .iter()
        .filter(|n| {
            n.op == "std.matmul" && case.model.graph.values[n.inputs[0]].ty.shape.rank() > 2
        })
        .count();
    assert_eq!(
        count(&back, "std.reshape"),
        count(&case.model, "std.reshape") + 2 * batched
    );
    assert_eq!(
        back.graph.nodes.len(),
        case.model.graph.nodes.len() + 1 + 2 * batched
    );
}

#[test]
fn a_concat_of_three_inputs_imports_as_a_chain_with_the_same_outputs() {
    let case = shape_ops().expect("the shape-ops model traces");
    let mut proto =
        ModelProto::decode(to_onnx(&case.model).expect("exports").as_slice()).expect("decodes");
    let graph = proto.graph.as_mut().expect("has a graph");
    // The model concatenates (r, side) into c, then (c, r) into c2: make that one Concat of
    // (r, side, r) on the last axis, c2's node, and keep c as the first Concat's output.
    let concats: Vec<usize> = (0..graph.node.len())
        .filter(|&i| graph.node[i].op_type == "Concat")
        .collect();
    let [first, second] = concats[..] else {
        panic!("expected two Concat nodes, got {concats:?}");
    };
    let (r, side) = (
        graph.node[first].input[0].clone(),
        graph.node[first].input[1].clone(),
    );
    graph.node[second].input = vec![r.clone(), side, r];
    let back = from_onnx(&proto.encode_to_vec()).expect("the edited model imports");
    let count = |model: &Model| {
        model
            .graph
            .nodes
            .iter()
            .filter(|n| n.op == "std.concat")
            .count()
    };
    assert_eq!(count(&back), count(&case.model) + 1);
    assert_eq!(
        evaluate(&back, &case.inputs).expect("the import runs"),
        evaluate(&case.model, &case.inputs).expect("the references run")
    );
}

#[test]
fn ort_bench_prints_a_positive_median_as_json() {
    let case = mlp_block().expect("the MLP block traces");
    let (model_path, inputs_dir) = write_case(&case, &temp_dir("ort_bench"));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/ort_bench.py");
    // Runs the script as `python3 scripts/ort_bench.py ...` would, through the shared helper.
    const RUN_FILE: &str = "import runpy, sys\n\
sys.argv = sys.argv[1:]\n\
runpy.run_path(sys.argv[0], run_name='__main__')";
    let Some(stdout) = python(
        RUN_FILE,
        &[
            script.as_os_str(),
            model_path.as_os_str(),
            inputs_dir.as_os_str(),
            "5".as_ref(),
        ],
    ) else {
        return;
    };
    let report: serde_json::Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|e| panic!("ort_bench.py printed {stdout:?}: {e}"));
    assert_eq!(report["runs"], 5, "{report}");
    let median = report["median_ms"].as_f64().expect("median_ms is a number");
    assert!(median > 0.0, "{report}");
}

#[test]
fn the_standard_op_decoder_block_matches_onnx_runtime() {
    use pto_examples as _;
    let build = pto_op::models::find_builtin("decoder-block-std")
        .expect("unique model names")
        .expect("registered");
    let model = (build.build)().expect("the model builds");
    let x = Tensor::random_uniform([64, 64], DType::F32, 11, -1.0, 1.0);
    let case = Case {
        model,
        inputs: BTreeMap::from([("x".to_owned(), x)]),
    };
    let expected = evaluate(&case.model, &case.inputs).expect("the references run");
    let Some(actual) = run_in_ort(&case, &temp_dir("ort_decoder_block_std")) else {
        return;
    };
    // A whole block: 8 matmuls, a softmax over 64 keys and two norms between input and
    // output; MLAS sums in another order than ndarray, so allow a few f32 ulps per stage.
    let tolerance = Tolerance::new(1e-5, 1e-5);
    let comparison = actual[0]
        .compare(&expected[0], tolerance)
        .expect("same shape");
    eprintln!("decoder-block-std, ORT vs our CPU references: {comparison}");
    assert!(comparison.passed(), "{comparison}");
}

#[test]
fn the_multi_head_decoder_layer_and_mlp_block_of_the_benchmark_match_onnx_runtime() {
    use pto_examples::models::decoder_block::{StdBlockSize, build_mlp_std, build_std_sized};
    let size = StdBlockSize {
        seq: 16,
        d_model: 64,
        heads: 4,
        d_hidden: 96,
    };
    let layer = build_std_sized(size, "decoder-layer-std").expect("the layer builds");
    let mlp = build_mlp_std(8, 64, 160).expect("the MLP block builds");
    for (model, rows) in [(layer, 16), (mlp, 8)] {
        let name = model.name.clone();
        let x = Tensor::random_uniform([rows, 64], DType::F32, 12, -1.0, 1.0);
        let case = Case {
            model,
            inputs: BTreeMap::from([("x".to_owned(), x)]),
        };
        let expected = evaluate(&case.model, &case.inputs).expect("the references run");
        let Some(actual) = run_in_ort(&case, &temp_dir(&format!("ort_{name}"))) else {
            return;
        };
        // As for the 64x64 block: MLAS and ndarray sum in other orders.
        let comparison = actual[0]
            .compare(&expected[0], Tolerance::new(1e-5, 1e-5))
            .expect("same shape");
        eprintln!("{name}, ORT vs our CPU references: {comparison}");
        assert!(comparison.passed(), "{name}: {comparison}");
    }
}

/// Writes, checks and runs in ONNX Runtime the Pow models of mixed dtypes (a float base, an
/// integer exponent): for each, `NAME.onnx` and its output `NAME.bin` (raw f32). Inputs
/// `x.npy` (f32 `[2, 5]`) and `k.npy` (i64 `[2, 5]`) are in the directory.
const POW_MIXED_IN_ORT: &str = r#"import os, sys
import numpy as np, onnx, onnxruntime as ort
from onnx import helper, numpy_helper, TensorProto
out = sys.argv[1]
x = np.load(os.path.join(out, "x.npy"))
k = np.load(os.path.join(out, "k.npy"))
X = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])
K = helper.make_tensor_value_info("k", TensorProto.INT64, [2, 5])
Y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5])
def init(name, array):
    return numpy_helper.from_array(array, name)
cases = {
    # A scalar int64 initializer.
    "scalar_i64": ([helper.make_node("Pow", ["x", "e"], ["y"])],
                   [init("e", np.array(3, dtype=np.int64))], [X], {"x": x}),
    # An int32 Constant node, one exponent per column, negative ones among them.
    "constant_i32": ([helper.make_node("Constant", [], ["e"],
                        value=init("e", np.array([-2, -1, 0, 1, 2], dtype=np.int32))),
                      helper.make_node("Pow", ["x", "e"], ["y"])],
                     [], [X], {"x": x}),
    # An int64 initializer broadcast along the rows.
    "broadcast_i64": ([helper.make_node("Pow", ["x", "e"], ["y"])],
                      [init("e", np.array([[2], [3]], dtype=np.int64))], [X], {"x": x}),
    # A constant float base and an integer exponent that is an input.
    "constant_base": ([helper.make_node("Pow", ["b", "k"], ["y"])],
                      [init("b", np.array([0.5, -2.0, 3.0, 1.5, -1.0], dtype=np.float32))],
                      [K], {"k": k}),
}
options = ort.SessionOptions()
options.intra_op_num_threads = 1
options.inter_op_num_threads = 1
for name, (nodes, inits, inputs, feeds) in cases.items():
    graph = helper.make_graph(nodes, name, inputs, [Y], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    path = os.path.join(out, name + ".onnx")
    onnx.save(model, path)
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    (y,) = session.run(None, feeds)
    assert y.dtype == np.float32 and y.shape == (2, 5), (name, y.dtype, y.shape)
    y.astype("<f4").tofile(os.path.join(out, name + ".bin"))
print(" ".join(cases))
"#;

#[test]
fn pow_of_a_float_base_and_an_integer_exponent_matches_onnx_runtime() {
    // ONNX Pow takes a base and an exponent of different types, the result of the base's;
    // the import casts the exponent (a constant one at import) to the base's dtype.
    let dir = temp_dir("pow-mixed");
    let x = Tensor::from_f64_fn([2, 5], DType::F32, |i| {
        [-1.5, -0.75, 0.5, 1.25, 2.0][i[1]] * (1.0 + i[0] as f64 / 3.0)
    });
    let k = Tensor::from_vec([2, 5], vec![-3i64, -1, 0, 1, 2, 3, 4, -2, 5, 1]).unwrap();
    for (name, tensor) in [("x", &x), ("k", &k)] {
        fs::write(
            dir.join(format!("{name}.npy")),
            pto_cli::tensor_file::npy_bytes(tensor).expect("npy"),
        )
        .expect("writable");
    }
    let Some(stdout) = python(POW_MIXED_IN_ORT, &[&dir]) else {
        return;
    };
    let cases: Vec<&str> = stdout.split_whitespace().collect();
    assert_eq!(cases.len(), 4, "{stdout}");
    for case in cases {
        let bytes = fs::read(dir.join(format!("{case}.onnx"))).expect("written");
        let model = from_onnx(&bytes).unwrap_or_else(|e| panic!("{case}: {e}"));
        assert!(
            model.graph.nodes.iter().any(|n| n.op == ops::pow::NAME),
            "{case}: a pow"
        );
        // A constant exponent (a Constant node) is cast at import: no cast runs. An
        // initializer is a weight, cast by a node.
        assert_eq!(
            model.graph.nodes.iter().any(|n| n.op == ops::cast::NAME),
            case != "constant_i32",
            "{case}: {:?}",
            model.graph.nodes
        );
        let inputs = BTreeMap::from([("x".to_owned(), x.clone()), ("k".to_owned(), k.clone())])
            .into_iter()
            .filter(|(name, _)| {
                model
                    .graph
                    .inputs
                    .iter()
                    .any(|&id| &model.graph.values[id].name == name)
            })
            .collect();
        let ours = evaluate(&model, &inputs).unwrap_or_else(|e| panic!("{case}: {e}"));
        let expected = Tensor::from_le_bytes(
            DType::F32,
            [2, 5],
            &fs::read(dir.join(format!("{case}.bin"))).expect("ORT wrote it"),
        )
        .unwrap();
        assert_close(&ours, &[expected], case);
    }
}

/// A Pow of an f32 input and an i64 initializer exponent `e` of `values`.
fn pow_of_an_initializer(values: Vec<i64>) -> Vec<u8> {
    use pto_onnx::proto::{GraphProto, TensorProto};
    let n = values.len();
    common::proto::model(
        17,
        GraphProto {
            name: "pow".to_owned(),
            node: vec![common::proto::node("pow", "Pow", &["x", "e"], "y")],
            initializer: vec![TensorProto {
                name: "e".to_owned(),
                dims: vec![n as i64],
                data_type: DType::I64.onnx_code(),
                int64_data: values,
                ..Default::default()
            }],
            input: vec![common::proto::f32_value("x", &[n as i64])],
            output: vec![common::proto::untyped_value("y")],
            ..Default::default()
        },
    )
    .encode_to_vec()
}

#[test]
fn an_integer_initializer_exponent_not_exact_in_the_base_dtype_is_refused_at_import() {
    // The initializer is a weight, cast to f32 by a `std.cast` node: 2^24 + 1 would run as
    // 2^24.
    let err = from_onnx(&pow_of_an_initializer(vec![2, 16_777_217]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(
            "op `std.pow`: input `b`: node 1 (`pow`): the exponent is the i64 weight \
             `e` cast to f32, and its element 1, 16777217, is not exact in f32 (it would be \
             16777216); cast the base to f32 or f64 first"
        ),
        "{err}"
    );
    // 2^24 is exact: imported, cast by a node, and run.
    let model = from_onnx(&pow_of_an_initializer(vec![2, 16_777_216])).expect("exact");
    assert!(model.graph.nodes.iter().any(|n| n.op == ops::cast::NAME));
    let x = Tensor::from_vec([2], vec![3.0f32, 1.0]).unwrap();
    let y = evaluate(&model, &BTreeMap::from([("x".to_owned(), x)])).unwrap();
    assert_eq!(y[0].to_f64_vec(), [9.0, 1.0]);
}

/// An f16 base to the power of an i64 weight `e` of `values` cast to f16, built in code (as
/// the import builds an initializer exponent).
fn pow_of_a_cast_weight(values: Vec<i64>) -> Model {
    let g = Graph::new();
    let n = values.len();
    let x = g.input("x", Shape::from([n]), DType::F16);
    let e = g
        .weight("e", Tensor::from_vec([n], values).expect("builds"))
        .expect("builds");
    let to = ops::cast::Params {
        to: "f16".to_owned(),
        saturate: true,
        round_mode: "up".into(),
    };
    let e = ops::cast::apply(&e, &to).expect("builds");
    let y = ops::pow::apply(&x, &e, &Default::default()).expect("builds");
    g.output(&y);
    g.to_model("pow-f16").expect("builds")
}

#[test]
fn an_integer_weight_exponent_not_exact_in_the_base_dtype_is_refused_at_compile_and_load() {
    let expected = "op `std.pow`: input `b`: node 1: the exponent is the i64 weight `e` cast to \
                    f16, and its element 0, 2049, is not exact in f16 (it would be 2048); cast \
                    the base to f32 or f64 first";
    let model = pow_of_a_cast_weight(vec![2049, 3]);
    for target in ["cpu", "sim"] {
        let err = pto_backends::compiler::compile(&model, target)
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert_eq!(err, format!("model `pow-f16`: {expected}"), "{target}");
    }
    let bytes = model.to_bytes().expect("the file is written as it is");
    let err = Model::from_bytes(&bytes).unwrap_err().to_string();
    assert_eq!(err, format!("model file: invalid graph: {expected}"));
    // 2048 is exact in f16: compiled, loaded and run.
    let model = pow_of_a_cast_weight(vec![2048, 3]);
    let loaded = Model::from_bytes(&model.to_bytes().unwrap()).expect("exact");
    let compiled = pto_backends::compiler::compile(&loaded, "cpu").expect("exact");
    let x = Tensor::from_vec([2], vec![half::f16::ONE, half::f16::from_f32(2.0)]).unwrap();
    let y = compiled.run(&[x]).unwrap();
    assert_eq!(y.outputs[0].to_f64_vec(), [1.0, 8.0]);
}

#[test]
fn a_constant_integer_exponent_not_exact_in_the_base_dtype_is_refused() {
    use pto_onnx::proto::{AttributeProto, AttributeType, GraphProto, TensorProto};
    // 2^24 + 1 has no f32: the power of the cast exponent is not the integer's.
    let constant = NodeProto {
        attribute: vec![AttributeProto {
            name: "value".to_owned(),
            r#type: AttributeType::Tensor as i32,
            t: Some(TensorProto {
                data_type: DType::I64.onnx_code(),
                int64_data: vec![16_777_217],
                ..Default::default()
            }),
            ..Default::default()
        }],
        ..common::proto::node("e", "Constant", &[], "e")
    };
    let bytes = common::proto::model(
        17,
        GraphProto {
            name: "pow".to_owned(),
            node: vec![
                constant,
                common::proto::node("pow", "Pow", &["x", "e"], "y"),
            ],
            input: vec![common::proto::f32_value("x", &[3])],
            output: vec![common::proto::untyped_value("y")],
            ..Default::default()
        },
    )
    .encode_to_vec();
    let err = from_onnx(&bytes).unwrap_err().to_string();
    assert!(
        err.contains("`e`")
            && err.contains("16777217")
            && err.contains("not exact in f32")
            && err.contains("cast the base to f32 or f64 first"),
        "{err}"
    );
}

/// The comparison, logic and rounding ops have no kernel: on sim they run on the CPU
/// reference, listed as fallbacks in the compile report, with the CPU's results.
#[test]
fn the_ops_without_a_kernel_fall_back_to_the_cpu_reference_on_sim_and_say_so() {
    use pto_backends::compiler::compile;
    let case = mask_ops().expect("the mask-ops model traces");
    let sim = compile(&case.model, "sim").expect("compiles for sim");
    let cpu = compile(&case.model, "cpu").expect("compiles for cpu");
    let used: BTreeSet<&str> = case
        .model
        .graph
        .nodes
        .iter()
        .map(|n| n.op.as_str())
        .collect();
    let fallbacks: BTreeSet<&str> = sim.report().fallbacks.iter().map(String::as_str).collect();
    assert_eq!(used, fallbacks, "every op of the model falls back on sim");
    let inputs: Vec<Tensor> = case
        .model
        .graph
        .inputs
        .iter()
        .map(|&id| case.inputs[&case.model.graph.values[id].name].clone())
        .collect();
    let (on_sim, on_cpu) = (
        sim.run(&inputs).expect("runs on sim"),
        cpu.run(&inputs).expect("runs on cpu"),
    );
    assert_eq!(on_sim.outputs, on_cpu.outputs);
}
