//! ONNX export and import: round trips, the official checker (Python `onnx`), error messages,
//! and a fuzz of the importer.
//!
//! The Python checks need `requirements-test.txt` installed; `scripts/test` does that. Without
//! them these tests fail, unless `PTO_SKIP_PYTHON=1` is set explicitly.

mod common;

use std::path::{Path, PathBuf};

use prost::Message;
use pto_examples::{gelu_affine, moments, rms_norm};
use pto_onnx::OnnxFile;
use pto_onnx::proto::{AttributeProto, GraphProto, ModelProto, TensorProto};
use pto_onnx::{OnnxError, from_onnx, to_onnx};
use pto_op::Model;
use pto_op::prelude::*;
use pto_op::tensor::SplitMix64;

use common::proto::{f32_value, node, untyped_value};
use common::python::python;

/// gelu_affine -> rms_norm (with a weight) -> moments (two outputs).
fn custom_model() -> Result<Model, OpError> {
    let g = Graph::new();
    let x = g.input("x", Shape::from([4, 16]), DType::F32);
    let gamma = g.weight("gamma", Tensor::random([16], DType::F32, 7))?;
    let y = gelu_affine::apply(
        &x,
        &gelu_affine::Params {
            scale: 0.5,
            bias: 0.25,
        },
    )?;
    let z = rms_norm::apply(&y, &gamma, &rms_norm::Params { eps: 1e-5 })?;
    let (mean, rstd) = moments::apply(&z, &moments::Params::default())?;
    g.output(&z);
    g.output(&mean);
    g.output(&rstd);
    g.to_model("custom")
}

/// An op with every param type, to round-trip each through its attribute.
#[custom_op(
    name = "test_onnx.every_param",
    version = 3,
    params(
        a: f32 = 0.1,
        b: f64 = 0.1,
        c: i32 = -7,
        d: i64 = 1,
        e: bool = true,
        f: String = "x",
        g: Vec<i64> = [],
        h: Vec<f32>,
    )
)]
pub mod every_param {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, _p: &Params) -> Result<Shape, OpError> {
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _p: &Params) -> Result<DType, OpError> {
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor, _p: &Params) -> Result<Tensor, OpError> {
        Ok(x.clone())
    }
}

fn every_param_model() -> Result<Model, OpError> {
    let g = Graph::new();
    let x = g.input("x", Shape::from([3]), DType::I64);
    let params = every_param::Params {
        a: 0.0,
        b: 0.1 + 0.2,
        c: i32::MIN,
        d: i64::MAX,
        e: false,
        f: "tanh ü".to_owned(),
        g: vec![-1, 0, 5],
        h: vec![0.5, -0.0, 1e-30],
    };
    let y = every_param::apply(&x, &params)?;
    g.output(&y);
    g.to_model("every_param")
}

fn temp_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

const CHECK: &str = "import sys, onnx\n\
m = onnx.load(sys.argv[1])\n\
onnx.checker.check_model(m, full_check=True)\n\
print(m.ir_version, [(o.domain, o.version) for o in m.opset_import])";

#[test]
fn a_custom_op_model_round_trips_and_passes_the_onnx_checker() {
    let model = custom_model().unwrap();
    let path = temp_path("custom.onnx");
    model.save_onnx(&path).unwrap();
    assert_eq!(
        Model::load_onnx(&path).unwrap(),
        model.with_traced_kernels()
    );
    if let Some(out) = python(CHECK, &[&path]) {
        assert_eq!(out.trim(), "11 [('demo', 1)]");
    }
}

#[test]
fn every_param_type_round_trips_exactly_and_passes_the_checker() {
    let model = every_param_model().unwrap();
    let bytes = to_onnx(&model).unwrap();
    let back = from_onnx(&bytes).unwrap();
    assert_eq!(back, model.with_traced_kernels());
    let AttrValue::F64(b) = back.graph.nodes[0].attrs["b"] else {
        panic!("b is an f64");
    };
    assert_eq!(b.to_bits(), (0.1f64 + 0.2).to_bits());
    let proto = ModelProto::decode(bytes.as_slice()).unwrap();
    let node = &proto.graph.as_ref().unwrap().node[0];
    assert_eq!(
        (node.domain.as_str(), node.op_type.as_str()),
        ("test_onnx", "every_param")
    );
    let meta: Vec<(&str, &str)> = node
        .metadata_props
        .iter()
        .map(|e| (e.key.as_str(), e.value.as_str()))
        .collect();
    let fingerprint = every_param::def().fingerprint().to_string();
    assert_eq!(
        meta,
        [
            ("pto.version", "3"),
            ("pto.fingerprint", fingerprint.as_str())
        ]
    );
    let path = temp_path("every_param.onnx");
    model.save_onnx(&path).unwrap();
    if let Some(out) = python(CHECK, &[&path]) {
        assert_eq!(out.trim(), "11 [('test_onnx', 3)]");
    }
}

/// `bytes` decoded, their graph changed by `edit`, and imported again.
fn import_edited(bytes: &[u8], edit: impl FnOnce(&mut GraphProto)) -> Result<Model, OnnxError> {
    let mut proto = ModelProto::decode(bytes)?;
    let graph = proto
        .graph
        .as_mut()
        .ok_or_else(|| OnnxError::Model("no graph".to_owned()))?;
    edit(graph);
    from_onnx(&proto.encode_to_vec())
}

#[test]
fn import_errors_name_the_node_the_attribute_and_what_was_expected() {
    let bytes = to_onnx(&custom_model().unwrap()).unwrap();
    let import_edited = |edit: &dyn Fn(&mut GraphProto)| import_edited(&bytes, edit).unwrap_err();
    let unknown = import_edited(&|g| g.node[1].domain = "nope".to_owned());
    assert_eq!(
        unknown.to_string(),
        "node #1 `n1` (nope.rms_norm): no op for domain `nope`, op_type `rms_norm`: no op named `nope.rms_norm` \
         is registered; did you mean demo.rms_norm or std.rms_norm?"
    );
    let mistyped = import_edited(&|g| {
        let attr: &mut AttributeProto = &mut g.node[1].attribute[0];
        attr.r#type = 2;
        attr.i = Some(1);
    });
    assert_eq!(
        mistyped.to_string(),
        "node #1 `n1` (demo.rms_norm): attribute `eps`: expected a FLOAT attribute (for a param of type f32), \
         got INT"
    );
    let unknown_attr = import_edited(&|g| g.node[1].attribute[0].name = "epsilon".to_owned());
    assert_eq!(
        unknown_attr.to_string(),
        "node #1 `n1` (demo.rms_norm): attribute `epsilon`: `demo.rms_norm` has no param of this name (its \
         params: eps)"
    );
    let changed = import_edited(&|g| g.node[1].metadata_props[1].value = "0".repeat(16));
    assert!(
        changed.to_string().contains("signature changed since"),
        "{changed}"
    );
    let bad_shape = import_edited(&|g| {
        g.initializer[0].dims = vec![8];
        g.initializer[0].raw_data.truncate(32);
    });
    assert_eq!(
        bad_shape.to_string(),
        "node #1 `n1` (demo.rms_norm): op `demo.rms_norm`: input `gamma`: expected shape [16], got [8]"
    );
    let undefined = import_edited(&|g| g.node[1].input[0] = "ghost".to_owned());
    assert_eq!(
        undefined.to_string(),
        "value `ghost`: used before it is defined (nodes must be in a topological order)"
    );
}

#[test]
fn a_missing_param_without_default_is_named() {
    let bytes = to_onnx(&every_param_model().unwrap()).unwrap();
    let err = import_edited(&bytes, |g| g.node[0].attribute.retain(|a| a.name != "h")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "node #0 `n0` (test_onnx.every_param): attribute `h`: missing: `test_onnx.every_param` needs a value of type \
         Vec<f32>"
    );
}

#[test]
fn the_importer_never_panics_on_flipped_or_truncated_bytes() {
    const CASES: u64 = 12_000;
    let valid = to_onnx(&custom_model().unwrap()).unwrap();
    let start = std::time::Instant::now();
    let (mut ok, mut failed) = (0, 0);
    for seed in 0..CASES {
        let mut rng = SplitMix64::new(seed);
        let mut bytes = valid.clone();
        match rng.below(4) {
            0 => bytes.truncate(rng.below(valid.len())),
            _ => {
                for _ in 0..=rng.below(4) {
                    let at = rng.below(bytes.len());
                    bytes[at] ^= 1 << rng.below(8);
                }
            }
        }
        match std::panic::catch_unwind(|| from_onnx(&bytes).is_ok()) {
            Ok(true) => ok += 1,
            Ok(false) => failed += 1,
            Err(_) => panic!("from_onnx panicked on case seed {seed}"),
        }
    }
    eprintln!(
        "fuzz: {CASES} cases ({ok} imported, {failed} refused) in {:?}",
        start.elapsed()
    );
    assert!(failed > 0 && ok > 0, "{ok} ok, {failed} failed");
}

/// A tiny standard-ONNX model: `y = Reshape(x: f32[4, 4], shape)` with `shape` an int64
/// initializer.
fn reshape_model(shape: &[i64]) -> Vec<u8> {
    common::proto::model(
        17,
        GraphProto {
            node: vec![node("reshape", "Reshape", &["x", "shape"], "y")],
            name: "g".to_owned(),
            initializer: vec![TensorProto {
                dims: vec![shape.len() as i64],
                data_type: 7,
                int64_data: shape.to_vec(),
                name: "shape".to_owned(),
                ..Default::default()
            }],
            input: vec![f32_value("x", &[4, 4])],
            output: vec![untyped_value("y")],
            ..Default::default()
        },
    )
    .encode_to_vec()
}

#[test]
fn reshapes_to_huge_shapes_are_refused_with_a_clear_error() {
    if let Err(e) = from_onnx(&reshape_model(&[2, 8])) {
        panic!("{e}");
    }
    let cases: [(&[i64], &str); 4] = [
        (
            &[(1 << 62) + 1, 16],
            "the dims' product does not fit in a usize",
        ),
        (
            &[1 << 40, 1 << 40],
            "the dims' product does not fit in a usize",
        ),
        (
            &[-1, 1 << 62, 1 << 62],
            "the dims' product does not fit in a usize",
        ),
        (
            &[1 << 40, 4],
            "means shape [1099511627776, 4] of 4398046511104 elements",
        ),
    ];
    for (shape, expected) in cases {
        let bytes = reshape_model(shape);
        assert!(bytes.len() < 200, "{}", bytes.len());
        let error = from_onnx(&bytes).unwrap_err().to_string();
        assert!(
            error.contains(expected) && error.contains("std.reshape"),
            "{shape:?}: {error}"
        );
    }
}

#[test]
fn element_types_and_opsets_are_named_in_refusals() {
    let bytes = to_onnx(&custom_model().unwrap()).unwrap();
    let string = import_edited(&bytes, |g| {
        if let Some(t) = g.input[0]
            .r#type
            .as_mut()
            .and_then(|t| t.tensor_type.as_mut())
        {
            t.elem_type = 8;
        }
    })
    .unwrap_err()
    .to_string();
    assert!(
        string.contains(
            "element type string is not one of pto-op's dtypes (float, float16, bfloat16, \
             double, int32, int64, int16, int8, uint64, uint32, uint16, uint8, bool, float8e4m3fn, \
             float8e4m3fnuz, float8e5m2, float8e5m2fnuz, float8e8m0, float4e2m1, int4, uint4, int2, \
             uint2)"
        ),
        "{string}"
    );
    let unknown = import_edited(&bytes, |g| g.initializer[0].data_type = 99)
        .unwrap_err()
        .to_string();
    assert!(
        unknown.contains("data type code 99 (unknown to pto-op) is not one of"),
        "{unknown}"
    );
    // int32_data of an int8 initializer is read as signed: 200 does not fit.
    let mut proto = ModelProto::decode(reshape_model(&[2, 8]).as_slice()).unwrap();
    let graph = proto.graph.as_mut().unwrap();
    let shape = &mut graph.initializer[0];
    shape.data_type = 3;
    shape.int64_data.clear();
    shape.int32_data = vec![200, -1];
    let int8 = from_onnx(&proto.encode_to_vec()).unwrap_err().to_string();
    assert!(
        int8.contains("int32_data value 200 does not fit a i8 element"),
        "{int8}"
    );
    // An opset older than the form pto-op imports names the one that works.
    let mut proto = ModelProto::decode(reshape_model(&[2, 8]).as_slice()).unwrap();
    proto.opset_import[0].version = 1;
    let old = from_onnx(&proto.encode_to_vec()).unwrap_err().to_string();
    assert!(
        old.contains(
            "but the model imports opset 1 of the default domain: export the model \
                      with opset"
        ) && old.contains("or later"),
        "{old}"
    );
}

#[test]
fn values_too_large_to_address_are_refused_when_traced() {
    let g = Graph::new();
    let a = g.input("a", Shape::from([1 << 31, 1]), DType::F32);
    let b = g.input("b", Shape::from([1, 1 << 31]), DType::F32);
    let error = pto_op::ops::add::apply(&a, &b, &Default::default()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "op `std.add`: output `y` would be f32[2147483648, 2147483648], larger than the \
         17592186044416 bytes a tensor may have"
    );
    // Just below the limit is a value (estimated, not run, so nothing is allocated).
    let c = g.input("c", Shape::from([1, 1 << 10]), DType::F32);
    let big = pto_op::ops::add::apply(&a, &c, &Default::default()).unwrap();
    assert_eq!(big.ty().shape.numel(), 1 << 41);
}

/// A zero-element value is checked whatever its byte count (zero): before the fix, tracing
/// on `f32[0, 18446744073709551615]` succeeded and export wrote the dim as -1.
#[test]
fn zero_element_values_with_huge_dims_are_refused_when_traced_and_exported() {
    let g = Graph::new();
    let x = g.input("x", Shape::from([0, usize::MAX]), DType::F32);
    let error = pto_op::ops::neg::apply(&x, &Default::default()).unwrap_err();
    assert_eq!(
        error.to_string(),
        "op `std.neg`: output `y` would be f32[0, 18446744073709551615], whose dim 1, \
         18446744073709551615, is more than the 9223372036854775807 a dim may be (ONNX dims \
         are int64)"
    );
    // An input passed straight through is no node's output: export refuses its dim rather
    // than writing it as -1.
    g.output(&x);
    let model = g.to_model("passthrough").expect("a model");
    assert_eq!(
        to_onnx(&model).unwrap_err().to_string(),
        "value `x`: dim 1 of f32[0, 18446744073709551615] is 18446744073709551615, more than \
         the 9223372036854775807 an ONNX dim (int64) may be"
    );
}

/// A one-node model of `op_type` whose inputs are f32 graph inputs of the given dims, with
/// one output `y` of undeclared type.
fn one_node_model(op_type: &str, inputs: &[(&str, &[i64])]) -> ModelProto {
    use pto_onnx::proto::{
        Dimension, NodeProto, OperatorSetIdProto, TensorShapeProto, TensorTypeProto, TypeProto,
        ValueInfoProto,
    };
    let value = |name: &str, dims: &[i64]| ValueInfoProto {
        name: name.to_owned(),
        r#type: Some(TypeProto {
            tensor_type: Some(TensorTypeProto {
                elem_type: 1,
                shape: Some(TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|&d| Dimension {
                            dim_value: Some(d),
                            ..Default::default()
                        })
                        .collect(),
                }),
            }),
        }),
    };
    ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: 17,
        }],
        graph: Some(GraphProto {
            node: vec![NodeProto {
                input: inputs.iter().map(|(n, _)| (*n).to_owned()).collect(),
                output: vec!["y".to_owned()],
                op_type: op_type.to_owned(),
                ..Default::default()
            }],
            name: "g".to_owned(),
            input: inputs.iter().map(|(n, d)| value(n, d)).collect(),
            output: vec![ValueInfoProto {
                name: "y".to_owned(),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[test]
fn matmul_of_1d_operands_imports_with_numpy_shapes_and_values() {
    use pto_backends::compiler::compile;
    // (a dims, b dims, numpy's result dims)
    let cases: [(&[i64], &[i64], &[usize]); 5] = [
        (&[3], &[3], &[]),
        (&[4], &[2, 4, 3], &[2, 3]),
        (&[1, 2, 4, 3], &[3], &[1, 2, 4]),
        (&[5], &[5, 2], &[2]),
        (&[2, 5], &[5], &[2]),
    ];
    for (a_dims, b_dims, expected) in cases {
        let bytes = one_node_model("MatMul", &[("a", a_dims), ("b", b_dims)]).encode_to_vec();
        let model = from_onnx(&bytes).unwrap_or_else(|e| panic!("{a_dims:?} @ {b_dims:?}: {e}"));
        let y = &model.graph.values[model.graph.outputs[0]];
        assert_eq!(y.ty.shape.dims(), expected, "{a_dims:?} @ {b_dims:?}");
        // The values: each output element is a dot product of a row of a (as a matrix)
        // and a column of b, computed here by hand.
        let dims = |d: &[i64]| d.iter().map(|&v| v as usize).collect::<Vec<_>>();
        let a = Tensor::random(dims(a_dims), DType::F32, 1);
        let b = Tensor::random(dims(b_dims), DType::F32, 2);
        let (av, bv) = (a.to_f64_vec(), b.to_f64_vec());
        let depth = *dims(a_dims).last().unwrap_or(&1);
        let n = if b_dims.len() == 1 {
            1
        } else {
            b_dims[b_dims.len() - 1] as usize
        };
        let a_rows = av.len() / depth;
        let b_batch = bv.len() / (depth * n);
        let mut want = Vec::new();
        for batch in 0..b_batch.max(1) {
            for row in 0..a_rows {
                for col in 0..n {
                    want.push(
                        (0..depth)
                            .map(|i| av[row * depth + i] * bv[batch * depth * n + i * n + col])
                            .sum::<f64>(),
                    );
                }
            }
        }
        for target in ["cpu", "sim"] {
            let compiled = compile(&model, target)
                .unwrap_or_else(|e| panic!("{a_dims:?} @ {b_dims:?} on {target}: {e}"));
            let out = compiled
                .run(&[a.clone(), b.clone()])
                .unwrap_or_else(|e| panic!("{a_dims:?} @ {b_dims:?} on {target}: {e}"));
            let got = out.outputs[0].to_f64_vec();
            assert_eq!(got.len(), want.len(), "{a_dims:?} @ {b_dims:?} on {target}");
            for (g, w) in got.iter().zip(&want) {
                assert!(
                    (g - w).abs() < 1e-4,
                    "{a_dims:?} @ {b_dims:?} on {target}: {g} vs {w}"
                );
            }
        }
    }
}

#[test]
fn optional_and_sequence_values_are_refused_by_name() {
    use pto_onnx::proto::TypeProto;
    let mut proto = one_node_model("Identity", &[("xs", &[3])]);
    let graph = proto.graph.as_mut().expect("the model has a graph");
    // A sequence (or optional) type: a TypeProto without its tensor alternative.
    graph.input[0].r#type = Some(TypeProto { tensor_type: None });
    let info = graph.input[0].clone();
    let err = from_onnx(&proto.encode_to_vec())
        .expect_err("a sequence input is refused")
        .to_string();
    assert!(
        err.contains("`xs`") && err.contains("optional and sequence types are not supported"),
        "{err}"
    );
    let err = pto_onnx::tensor_of_value(&[], &info)
        .expect_err("its test data is refused")
        .to_string();
    assert!(
        err.contains("optional and sequence types are not supported"),
        "{err}"
    );
}

/// Low-precision weights go out and come back through ONNX: the 4- and 2-bit ones packed in
/// `raw_data` as ONNX specifies, the 8-bit floats a byte each, and a `Cast` with a non-default
/// `saturate` keeps it (the model then imports opset 19).
#[test]
fn low_precision_weights_and_cast_attributes_round_trip_through_onnx() {
    use pto_op::ops::cast;
    let graph = Graph::new();
    let values = Tensor::from_vec([5], vec![-8.0f32, -1.0, 0.0, 7.0, 1000.0]).unwrap();
    let i4 = graph.weight("w_i4", values.cast(DType::I4)).unwrap();
    let u2 = graph.weight("w_u2", values.cast(DType::U2)).unwrap();
    let f8 = graph.weight("w_f8", values.cast(DType::F8E4M3FN)).unwrap();
    let params = |to: &str, saturate: bool| cast::Params {
        to: to.to_owned(),
        saturate,
        round_mode: "up".to_owned(),
    };
    for (w, p) in [
        (&i4, params("f32", true)),
        (&u2, params("f32", true)),
        (&f8, params("f32", true)),
    ] {
        graph.output(&cast::apply(w, &p).unwrap());
    }
    let x = graph.input("x", Shape::from([5]), DType::F32);
    graph.output(&cast::apply(&x, &params("f8e5m2", false)).unwrap());
    let model = graph.to_model("low_precision").unwrap();

    let bytes = to_onnx(&model).unwrap();
    let proto = ModelProto::decode(bytes.as_slice()).unwrap();
    let graph_proto = proto.graph.as_ref().unwrap();
    let raw = |name: &str| {
        let init = graph_proto
            .initializer
            .iter()
            .find(|i| i.name == name)
            .unwrap();
        (init.data_type, init.raw_data.clone())
    };
    // i4 [-8, -1, 0, 7, 1000 -> 1000 & 15 = 8 -> -8]: nibbles 8, F | 0, 7 | 8, pad.
    assert_eq!(raw("w_i4"), (22, vec![0xF8, 0x70, 0x08]));
    // u2 [-8 -> 0, -1 -> 3, 0, 7 -> 3, 1000 -> 0]: 0 | 3 << 2 | 0 << 4 | 3 << 6, then 0.
    assert_eq!(raw("w_u2"), (25, vec![0xCC, 0x00]));
    // f8e4m3fn [-8, -1, 0, 7, 448 (saturated)].
    assert_eq!(raw("w_f8"), (17, vec![0xD0, 0xB8, 0x00, 0x4E, 0x7E]));
    let saturate = graph_proto
        .node
        .iter()
        .flat_map(|n| &n.attribute)
        .filter(|a| a.name == "saturate")
        .map(|a| a.i)
        .collect::<Vec<_>>();
    assert_eq!(
        saturate,
        vec![Some(0)],
        "only the non-default saturate is written"
    );
    let opset = proto
        .opset_import
        .iter()
        .find(|o| o.domain.is_empty())
        .map(|o| o.version);
    assert!(opset >= Some(19), "{opset:?}");

    let back = from_onnx(&bytes).unwrap();
    assert_eq!(back.weights, model.weights);
    let nodes = |m: &Model| {
        m.graph
            .nodes
            .iter()
            .map(|n| n.attrs.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(nodes(&back), nodes(&model));
}

/// Loads the ONNX file `argv[1]` in ONNX Runtime (printing `ort refused: MESSAGE` or `ort
/// loaded`), then runs it in onnx's reference evaluator on the `.npy` input `argv[2]` (as
/// `x`) and writes output 0 as raw little-endian f32 to `argv[3]`.
const ROUND_MODE_RUNTIMES: &str = r#"import sys
import numpy as np, onnx, onnxruntime as ort
from onnx.reference import ReferenceEvaluator
model_path, x_path, out_path = sys.argv[1:4]
try:
    ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    print("ort loaded")
except Exception as e:
    print("ort refused: " + str(e).replace("\n", " "))
onnx.checker.check_model(onnx.load(model_path), full_check=True)
(y,) = ReferenceEvaluator(model_path).run(None, {"x": np.load(x_path)})
y.astype("<f4").tofile(out_path)
"#;

/// A Cast with `round_mode` (to f8e8m0) is written at opset 24: ONNX Runtime 1.23 refuses
/// the file, as [`pto_onnx::runtime_warning`] and the exporter's docs say, and onnx's
/// reference evaluator runs it with pto-op's results. With the default `round_mode` the
/// opset stays below 24 and nothing is said.
#[test]
fn a_cast_with_round_mode_is_written_at_opset_24_which_onnx_runtime_refuses() {
    use pto_onnx::{ONNX_RUNTIME_MAX_OPSET, runtime_warning};
    use pto_op::ops::cast;
    let dir = common::temp_dir("round-mode");
    // No ties between powers of two, in the linear or the log domain.
    let x = Tensor::from_vec([6], vec![1.0f32, 2.5, 3.5, 0.3, 7.0, 0.1]).unwrap();
    std::fs::write(
        dir.join("x.npy"),
        pto_cli::tensor_file::npy_bytes(&x).unwrap(),
    )
    .unwrap();
    for round_mode in ["up", "down", "nearest"] {
        let graph = Graph::new();
        let input = graph.input("x", Shape::from([6]), DType::F32);
        let params = |to: &str| cast::Params {
            to: to.to_owned(),
            saturate: true,
            round_mode: round_mode.to_owned(),
        };
        let e8m0 = cast::apply(&input, &params("f8e8m0")).unwrap();
        graph.output(&cast::apply(&e8m0, &params("f32")).unwrap());
        let model = graph.to_model("round_mode").unwrap();
        let bytes = to_onnx(&model).unwrap();
        let proto = ModelProto::decode(bytes.as_slice()).unwrap();
        let written = proto
            .opset_import
            .iter()
            .find(|o| o.domain.is_empty())
            .map(|o| o.version);
        let (opset, warning) = runtime_warning(&bytes).unwrap();
        assert_eq!(opset, written, "{round_mode}");
        if round_mode == "up" {
            assert!(written.unwrap() <= ONNX_RUNTIME_MAX_OPSET, "{written:?}");
            assert_eq!(warning, None);
            let saved = dir.join("up.pto");
            model.save(&saved).unwrap();
            let exported = dir.join("up.onnx");
            let report = pto_cli::run([
                "pto",
                "export",
                saved.to_str().unwrap(),
                "-o",
                exported.to_str().unwrap(),
            ])
            .expect("exports");
            assert!(!report.contains("warning"), "{report}");
            continue;
        }
        assert_eq!(written, Some(24), "{round_mode}");
        let warning = warning.expect("a warning above opset 23");
        assert!(
            warning.contains("opset 24") && warning.contains("ONNX Runtime refuses to load it"),
            "{warning}"
        );
        let path = dir.join(format!("{round_mode}.onnx"));
        std::fs::write(&path, &bytes).unwrap();
        // `pto export` of the model says so when it writes the file.
        let saved = dir.join(format!("{round_mode}.pto"));
        model.save(&saved).unwrap();
        let exported = dir.join(format!("{round_mode}-exported.onnx"));
        let saved = saved.to_str().unwrap();
        let report = pto_cli::run(["pto", "export", saved, "-o", exported.to_str().unwrap()])
            .expect("exports");
        assert!(report.contains(&format!("warning: {warning}")), "{report}");
        assert_eq!(std::fs::read(&exported).unwrap(), bytes);
        let out = dir.join(format!("{round_mode}.bin"));
        let Some(stdout) = python(ROUND_MODE_RUNTIMES, &[&path, &dir.join("x.npy"), &out]) else {
            return;
        };
        // The installed ONNX Runtime: should it load the file, the docs and the warning
        // are out of date.
        assert!(
            stdout.contains("ort refused") && stdout.contains("till opset 23"),
            "{round_mode}: {stdout}"
        );
        let reference =
            Tensor::from_le_bytes(DType::F32, [6], &std::fs::read(&out).unwrap()).unwrap();
        let mode = pto_op::lowp::RoundMode::from_name(round_mode).unwrap();
        let ours = x.cast_with(DType::F8E8M0, true, mode).cast(DType::F32);
        assert_eq!(ours, reference, "{round_mode}");
    }
}

/// A one-node Relu model `x -> relu -> y` with `edit` applied to its graph.
fn relu_model(edit: impl FnOnce(&mut GraphProto)) -> Vec<u8> {
    let mut graph = GraphProto {
        node: vec![node("relu", "Relu", &["x"], "y")],
        name: "g".to_owned(),
        input: vec![f32_value("x", &[2, 4])],
        output: vec![untyped_value("y")],
        ..Default::default()
    };
    edit(&mut graph);
    common::proto::model(17, graph).encode_to_vec()
}

/// Before issue 31 item 11, an output that no node produces was "used before it is
/// defined", as if the nodes were out of order.
#[test]
fn an_output_no_node_produces_says_so() {
    let bytes = relu_model(|g| g.output.push(untyped_value("z")));
    assert_eq!(
        from_onnx(&bytes).unwrap_err().to_string(),
        "value `z`: a graph output that no node produces, and no graph input or initializer"
    );
}

/// Before issue 31 item 11, an input with an empty name printed as "value ``".
#[test]
fn an_empty_input_name_is_called_an_empty_name() {
    let bytes = relu_model(|g| {
        g.input[0].name = String::new();
        g.node[0].input[0] = String::new();
    });
    assert_eq!(
        from_onnx(&bytes).unwrap_err().to_string(),
        "value `` (an empty name): a value defined with an empty name; ONNX names every value \
         it defines"
    );
}

/// A node input with an empty name is ONNX's absent optional input: for an op that takes
/// none there, the error says so (it said "an input is not a constant").
#[test]
fn an_absent_input_of_an_op_without_optional_inputs_says_so() {
    let bytes = relu_model(|g| {
        g.node[0].input[0] = String::new();
    });
    let error = from_onnx(&bytes).unwrap_err().to_string();
    assert!(
        error.contains(
            "input 0 has an empty name (an absent optional input), which `Relu` does not take"
        ),
        "{error}"
    );
}

/// Names from a file are shown escaped: a right-to-left override or an escape sequence in
/// a name cannot reorder or clear the line of the message that shows it.
#[test]
fn control_and_bidi_characters_in_names_are_escaped_in_messages() {
    let bytes = relu_model(|g| {
        g.output[0].name = "y\u{202e}txt.exe".to_owned();
    });
    assert_eq!(
        from_onnx(&bytes).unwrap_err().to_string(),
        "value `y\\u{202e}txt.exe`: a graph output that no node produces, and no graph input \
         or initializer"
    );
    let bytes = relu_model(|g| {
        g.node[0].op_type = "Relu\u{1b}[2J".to_owned();
        g.node[0].name = "n\u{2066}".to_owned();
    });
    let error = from_onnx(&bytes).unwrap_err().to_string();
    assert!(
        error.starts_with(
            "node #0 `n\\u{2066}` (Relu\\u{1b}[2J): no op for domain `` (an empty name), \
             op_type `Relu\\u{1b}[2J`"
        ),
        "{error}"
    );
    assert!(!error.contains(['\u{1b}', '\u{2066}']), "{error}");
}
