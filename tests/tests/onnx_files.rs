//! ONNX files as users have them: names that survive import (issue 11 item 8), weights in
//! external-data files (issue 12 item 7), and `pto run --outputs` written under the
//! model's own output names and read back by numpy (issue 12 item 6).
//!
//! The Python parts need `requirements-test.txt` installed (`scripts/test`); without them
//! these tests fail, unless `PTO_SKIP_PYTHON=1` is set explicitly.

mod common;

use std::collections::BTreeMap;

use prost::Message;
use pto_onnx::OnnxFile;
use pto_onnx::from_onnx;
use pto_onnx::proto::{GraphProto, ModelProto, StringStringEntryProto, TensorProto};
use pto_op::Model;
use pto_op::model::file::read_safetensors;
use pto_op::prelude::*;

use common::proto::{f32_value, model, node};
use common::python::python;
use common::temp_dir;

/// `logits = Relu(MatMul(x: f32[2, 3], w: f32[3, 4]) + b)`, nodes `proj`, `bias`, `act`;
/// `w` is `weight` (an initializer whose tensor proto the caller completes).
fn named_model(weight: TensorProto) -> ModelProto {
    model(
        17,
        GraphProto {
            name: "named".to_owned(),
            node: vec![
                node("proj", "MatMul", &["x", "w"], "/proj/MatMul_output_0"),
                node("bias", "Add", &["/proj/MatMul_output_0", "b"], "biased"),
                node("act", "Relu", &["biased"], "logits"),
            ],
            initializer: vec![
                weight,
                TensorProto {
                    name: "b".to_owned(),
                    dims: vec![4],
                    data_type: 1,
                    float_data: vec![0.5, -0.5, 0.25, -0.25],
                    ..Default::default()
                },
            ],
            input: vec![f32_value("x", &[2, 3])],
            output: vec![f32_value("logits", &[2, 4])],
            ..Default::default()
        },
    )
}

fn weight_values() -> Vec<f32> {
    (0..12).map(|i| i as f32 * 0.25 - 1.0).collect()
}

fn le_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn raw_weight() -> TensorProto {
    TensorProto {
        name: "w".to_owned(),
        dims: vec![3, 4],
        data_type: 1,
        raw_data: le_bytes(&weight_values()),
        ..Default::default()
    }
}

/// The weight `w` in the external file `location`, at `offset`, `length` bytes.
fn external_weight(location: &str, offset: Option<u64>, length: Option<u64>) -> TensorProto {
    let mut external_data = vec![StringStringEntryProto {
        key: "location".to_owned(),
        value: location.to_owned(),
    }];
    for (key, number) in [("offset", offset), ("length", length)] {
        if let Some(number) = number {
            external_data.push(StringStringEntryProto {
                key: key.to_owned(),
                value: number.to_string(),
            });
        }
    }
    TensorProto {
        name: "w".to_owned(),
        dims: vec![3, 4],
        data_type: 1,
        data_location: 1,
        external_data,
        ..Default::default()
    }
}

#[test]
fn onnx_value_and_node_names_survive_import() {
    let model = from_onnx(&named_model(raw_weight()).encode_to_vec()).unwrap();
    let graph = &model.graph;
    let output = &graph.values[graph.outputs[0]];
    assert_eq!(output.name, "logits");
    let names: Vec<&str> = graph.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["proj", "bias", "act"]);
    let values: Vec<&str> = graph.values.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(
        values,
        ["x", "w", "b", "/proj/MatMul_output_0", "biased", "logits"]
    );
    // They survive export too.
    let again = from_onnx(&pto_onnx::to_onnx(&model).unwrap()).unwrap();
    assert_eq!(again, model.with_traced_kernels());

    // In `inspect`, and as the output of `run`.
    use pto_examples as _;
    let dir = temp_dir("onnx-files-names");
    let path = dir.join("named.onnx");
    std::fs::write(&path, named_model(raw_weight()).encode_to_vec()).unwrap();
    let path = path.to_str().unwrap();
    let inspect = pto_cli::run(["pto", "inspect", path]).unwrap();
    assert!(inspect.contains("outputs: logits f32[2, 4]"), "{inspect}");
    assert!(inspect.contains("-> logits f32[2, 4]"), "{inspect}");
    assert!(inspect.contains("`proj`"), "{inspect}");
    let run = pto_cli::run(["pto", "run", path]).unwrap();
    assert!(run.contains("output `logits` f32[2, 4]"), "{run}");
}

#[test]
fn import_errors_name_the_onnx_node_and_its_operator() {
    let mut proto = named_model(raw_weight());
    let graph = proto.graph.as_mut().unwrap();
    graph.initializer[1].dims = vec![5];
    graph.initializer[1].float_data.push(0.0);
    let error = from_onnx(&proto.encode_to_vec()).unwrap_err().to_string();
    assert!(
        error.starts_with("node #1 `bias` (Add): op `std.add`"),
        "{error}"
    );
    let mut proto = named_model(raw_weight());
    proto.graph.as_mut().unwrap().node[2]
        .attribute
        .push(Default::default());
    let error = from_onnx(&proto.encode_to_vec()).unwrap_err().to_string();
    assert!(
        error.starts_with("node #2 `act` (Relu): attribute ``"),
        "{error}"
    );
}

#[test]
fn weights_in_external_data_files_are_read_beside_the_model() {
    let dir = temp_dir("onnx-files-external");
    let mut data = vec![7u8; 16]; // another tensor's bytes before this one
    data.extend(le_bytes(&weight_values()));
    std::fs::write(dir.join("weights.bin"), &data).unwrap();
    let embedded = from_onnx(&named_model(raw_weight()).encode_to_vec()).unwrap();
    for (name, weight) in [
        (
            "offset.onnx",
            external_weight("weights.bin", Some(16), Some(48)),
        ),
        (
            "no-length.onnx",
            external_weight("./weights.bin", Some(16), None),
        ),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, named_model(weight).encode_to_vec()).unwrap();
        let model = Model::load_onnx(&path).unwrap();
        assert_eq!(model.weights, embedded.weights, "{name}");
    }
    std::fs::write(dir.join("whole.bin"), le_bytes(&weight_values())).unwrap();
    let path = dir.join("whole.onnx");
    std::fs::write(
        &path,
        named_model(external_weight("whole.bin", None, None)).encode_to_vec(),
    )
    .unwrap();
    assert_eq!(Model::load_onnx(&path).unwrap().weights, embedded.weights);

    // Refusals, each naming the value and what is wrong.
    let outside = std::env::temp_dir().join("pto-outside.bin");
    let cases = [
        (
            external_weight("../weights.bin", None, None),
            "must be a relative path inside the model's directory",
        ),
        (
            external_weight(outside.to_str().unwrap(), None, None),
            "must be a relative path inside the model's directory",
        ),
        (external_weight("", None, None), "must be a relative path"),
        (external_weight("missing.bin", None, None), "missing.bin"),
        (
            external_weight("weights.bin", Some(1 << 40), None),
            "is past the end of",
        ),
        (
            external_weight("weights.bin", Some(16), Some(1 << 40)),
            "runs past the end of",
        ),
        (
            external_weight("weights.bin", Some(0), None),
            "takes 48 bytes, the data has 64",
        ),
        (
            external_weight("weights.bin", Some(16), Some(40)),
            "takes 48 bytes, the data has 40",
        ),
    ];
    for (index, (weight, expected)) in cases.into_iter().enumerate() {
        let path = dir.join(format!("bad{index}.onnx"));
        std::fs::write(&path, named_model(weight).encode_to_vec()).unwrap();
        let error = Model::load_onnx(&path).unwrap_err().to_string();
        let file = format!("ONNX file `{}`: value `w`: ", path.display());
        assert!(
            error.starts_with(&file) && error.contains(expected),
            "{index}: {error}"
        );
    }
    let error = from_onnx(&named_model(external_weight("weights.bin", None, None)).encode_to_vec())
        .unwrap_err()
        .to_string();
    assert!(error.contains("load the model from its file"), "{error}");
}

/// External data that names a FIFO or a device is refused at once: before the file access
/// layer, a FIFO blocked the import forever and `/dev/zero` read until memory ran out. The
/// load runs on a thread watched for 20 s, so a regression fails instead of hanging.
#[cfg(unix)]
#[test]
fn external_data_that_is_no_regular_file_is_refused_at_once() {
    let dir = temp_dir("onnx-files-external-special");
    let status = std::process::Command::new("mkfifo")
        .arg(dir.join("pipe.bin"))
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
    std::os::unix::fs::symlink("/dev/zero", dir.join("zero.bin")).expect("can link");
    for (location, found) in [
        ("pipe.bin", "it is a FIFO (named pipe), not a regular file"),
        ("zero.bin", "it is a character device, not a regular file"),
    ] {
        let path = dir.join(location.replace(".bin", ".onnx"));
        std::fs::write(
            &path,
            named_model(external_weight(location, None, Some(48))).encode_to_vec(),
        )
        .unwrap();
        let (send, receive) = std::sync::mpsc::channel();
        let load = path.clone();
        std::thread::spawn(move || send.send(Model::load_onnx(&load).map(|_| ())));
        let error = receive
            .recv_timeout(std::time::Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("loading {location} still runs after 20 s"))
            .expect_err("not a regular file")
            .to_string();
        let data = dir.join(location);
        assert!(
            error.contains(&format!(
                "reading the ONNX external data file `{}`: {found}",
                data.display()
            )),
            "{location}: {error}"
        );
    }
}

/// The weights are read straight from their place in the file: raw data given twice (the
/// last wins, as in protobuf), and one split across the graph given twice (merged), import
/// as the official decoding reads them.
#[test]
fn the_skeleton_reader_decodes_as_protobuf_does() {
    let mut proto = named_model(raw_weight());
    let mut bytes = proto.encode_to_vec();
    let reference = from_onnx(&bytes).unwrap();
    // A second `graph` field holding one more output merges into the first.
    let extra = GraphProto {
        output: vec![f32_value("biased", &[2, 4])],
        ..Default::default()
    };
    let extra_model = ModelProto {
        graph: Some(extra),
        ..Default::default()
    };
    bytes.extend(extra_model.encode_to_vec());
    let merged = from_onnx(&bytes).unwrap();
    assert_eq!(merged.graph.outputs.len(), 2);
    assert_eq!(merged.weights, reference.weights);
    // Raw data twice: the last one wins.
    let mut graph = proto.graph.take().unwrap();
    let mut first = raw_weight();
    first.raw_data = vec![0; 48];
    let mut tensor_bytes = first.encode_to_vec();
    tensor_bytes.extend(
        TensorProto {
            raw_data: le_bytes(&weight_values()),
            ..Default::default()
        }
        .encode_to_vec(),
    );
    graph.initializer[0] = TensorProto::decode(tensor_bytes.as_slice()).unwrap();
    assert_eq!(graph.initializer[0].raw_data, le_bytes(&weight_values()));
    // Re-encoded, prost writes raw_data once; write the two fields by hand instead.
    let mut model_bytes = proto.encode_to_vec();
    let mut graph_bytes = GraphProto {
        initializer: Vec::new(),
        ..graph.clone()
    }
    .encode_to_vec();
    for tensor in [tensor_bytes, graph.initializer[1].encode_to_vec()] {
        graph_bytes.push(5 << 3 | 2);
        prost::encoding::encode_varint(tensor.len() as u64, &mut graph_bytes);
        graph_bytes.extend(tensor);
    }
    model_bytes.push(7 << 3 | 2);
    prost::encoding::encode_varint(graph_bytes.len() as u64, &mut model_bytes);
    model_bytes.extend(graph_bytes);
    assert_eq!(from_onnx(&model_bytes).unwrap().weights, reference.weights);
}

const ONNXRUNTIME: &str = r#"
import json, struct, sys
import numpy as np, onnx, onnxruntime as ort
from onnx import helper, numpy_helper, TensorProto
model_path, npy_dir, st_path = sys.argv[1], sys.argv[2], sys.argv[3]
x = (np.arange(6, dtype=np.float32).reshape(2, 3) - 2.0) * 0.5
w = (np.arange(12, dtype=np.float32) * 0.25 - 1.0).reshape(3, 4)
b = np.array([0.5, -0.5, 0.25, -0.25], dtype=np.float32)
expected = np.maximum(x @ w + b, 0)
sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
got_ort = sess.run(["logits"], {"x": x})[0]
assert np.allclose(got_ort, expected, atol=1e-6), (got_ort, expected)
npy = np.load(npy_dir + "/logits.npy")
assert npy.dtype == np.float32 and npy.shape == (2, 4), (npy.dtype, npy.shape)
assert np.allclose(npy, got_ort, atol=1e-6), (npy, got_ort)
data = open(st_path, "rb").read()
(n,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8:8 + n])
entry = header["logits"]
assert entry["dtype"] == "F32" and entry["shape"] == [2, 4], entry
start, end = entry["data_offsets"]
st = np.frombuffer(data[8 + n + start:8 + n + end], dtype="<f4").reshape(2, 4)
assert np.array_equal(st, npy), (st, npy)
print("ok")
"#;

/// `pto run --inputs x.safetensors --outputs DIR` and `--outputs FILE.safetensors`, on an
/// ONNX model whose weight is in an external file, read back by numpy and compared with
/// onnxruntime on the same model and input.
#[test]
fn run_outputs_are_written_under_their_onnx_names_and_numpy_reads_them() {
    use pto_examples as _;
    let dir = temp_dir("onnx-files-outputs");
    std::fs::write(dir.join("weights.bin"), le_bytes(&weight_values())).unwrap();
    let model_path = dir.join("model.onnx");
    std::fs::write(
        &model_path,
        named_model(external_weight("weights.bin", None, None)).encode_to_vec(),
    )
    .unwrap();
    let x: Vec<f32> = (0..6).map(|i| (i as f32 - 2.0) * 0.5).collect();
    let inputs = BTreeMap::from([("x".to_owned(), Tensor::from_vec([2, 3], x).unwrap())]);
    let inputs_path = dir.join("x.safetensors");
    std::fs::write(
        &inputs_path,
        pto_op::model::file::safetensors_bytes(&inputs).unwrap(),
    )
    .unwrap();
    let npy_dir = dir.join("out");
    let st_path = dir.join("out.safetensors");
    for target in ["cpu", "sim"] {
        for out in [&npy_dir, &st_path] {
            let report = pto_cli::run([
                "pto",
                "run",
                model_path.to_str().unwrap(),
                "--target",
                target,
                "--inputs",
                inputs_path.to_str().unwrap(),
                "--outputs",
                out.to_str().unwrap(),
            ])
            .unwrap();
            assert!(
                report.contains(&format!("wrote 1 output(s) to {}", out.display())),
                "{report}"
            );
        }
        let written = read_safetensors(&std::fs::read(&st_path).unwrap()).unwrap();
        assert_eq!(written.keys().collect::<Vec<_>>(), ["logits"]);
        assert_eq!(written["logits"].dims(), [2, 4]);
        assert!(npy_dir.join("logits.npy").is_file());
        if let Some(out) = python(ONNXRUNTIME, &[&model_path, &npy_dir, &st_path]) {
            assert_eq!(out.trim(), "ok", "{target}");
        }
    }
    // bf16 has no numpy dtype: refused for a .npy directory (before anything is written),
    // written to safetensors.
    use pto_cli::tensor_file::write_tensors;
    let bf16 = vec![("h".to_owned(), Tensor::zeros([2], DType::BF16))];
    let npy = dir.join("bf16");
    let error = write_tensors(&npy, &bf16).unwrap_err().to_string();
    assert!(error.contains("numpy has no bf16 dtype"), "{error}");
    assert!(!npy.exists());
    assert!(write_tensors(&dir.join("bf16.safetensors"), &bf16).is_ok());
    // Output names that are not file names stay inside the directory.
    let odd = vec![
        ("../escape".to_owned(), Tensor::zeros([1], DType::F32)),
        ("a/b".to_owned(), Tensor::zeros([1], DType::F32)),
    ];
    write_tensors(&dir.join("odd"), &odd).unwrap();
    assert!(dir.join("odd/.._escape.npy").is_file() && dir.join("odd/a_b.npy").is_file());
    assert!(!dir.join("escape.npy").exists());
}

/// Every error of loading a model file names the file, whichever verb loads it: garbage,
/// a valid file cut short, an empty file, a directory, for ONNX files and model files.
#[test]
fn every_error_of_a_bad_model_file_names_the_file() {
    let dir = temp_dir("onnx-files-bad-files");
    let onnx = named_model(raw_weight()).encode_to_vec();
    let graph = Graph::new();
    let x = graph.input("x", Shape::from([2, 3]), DType::F32);
    graph.output(&x);
    let saved = dir.join("good.pto");
    graph.to_model("identity").unwrap().save(&saved).unwrap();
    let pto = std::fs::read(&saved).unwrap();
    let mut cases = Vec::new();
    for (ext, bytes) in [("onnx", &onnx), ("pto", &pto)] {
        for (what, content) in [
            ("garbage", b"\x67\xff\xff garbage".to_vec()),
            ("truncated", bytes[..bytes.len() / 2].to_vec()),
            ("header", bytes[..20].to_vec()),
            ("empty", Vec::new()),
        ] {
            let path = dir.join(format!("{what}.{ext}"));
            std::fs::write(&path, content).unwrap();
            cases.push(path);
        }
        let path = dir.join(format!("directory.{ext}"));
        std::fs::create_dir_all(&path).unwrap();
        cases.push(path);
    }
    for path in &cases {
        let file = path.to_str().unwrap();
        let mut verbs = vec![
            vec!["pto", "inspect", file],
            vec!["pto", "compile", file],
            vec!["pto", "run", file],
            vec!["pto", "parity", file],
            vec!["pto", "export", file, "-o", "unused.onnx"],
        ];
        if file.ends_with(".onnx") {
            verbs.push(vec!["pto", "import", file, "-o", "unused.pto"]);
        }
        for args in verbs {
            let error = pto_cli::run(args.clone()).unwrap_err();
            let text = pto_cli::error_text(&error);
            assert!(text.contains(&format!("`{file}`")), "{args:?}: {text}");
        }
    }
    // The library's own loaders name the file too.
    for path in cases.iter().filter(|p| p.extension().unwrap() == "onnx") {
        let text = Model::load_onnx(path).unwrap_err().to_string();
        assert!(text.contains(&path.display().to_string()), "{text}");
        let text = pto_onnx::LoadedModel::load_onnx(path)
            .unwrap_err()
            .to_string();
        assert!(text.contains(&path.display().to_string()), "{text}");
    }
}
