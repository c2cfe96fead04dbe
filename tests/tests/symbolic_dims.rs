//! Models with symbolic dims (issue 12 item 5): an ONNX model whose inputs have symbolic
//! dims imports without binding them, is saved with them symbolic, and binds them when it
//! compiles; the same file compiles for two bindings and both match onnxruntime. The errors
//! of a binding name the dim, the input and how to bind.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::python::python;
use prost::Message;
use pto_backends::compiler::compile;
use pto_cli::tensor_file::read_safetensors;
use pto_examples as _;
use pto_onnx::ImportOptions;
use pto_onnx::OnnxFile;
use pto_onnx::proto::{
    Dimension, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto,
    TensorShapeProto, TensorTypeProto, TypeProto, ValueInfoProto,
};
use pto_onnx::{Dim, LoadedModel, SymbolicModel};
use pto_op::model::ModelFileError;
use pto_op::{Model, Shape, Tensor, Tolerance};

const TOLERANCE: Tolerance = Tolerance {
    rtol: 1e-4,
    atol: 1e-4,
};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("fixtures/onnx/{name}"))
}

/// A fresh directory for one test, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("pto-symbolic-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("can create a temp dir");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn symbolic(loaded: LoadedModel) -> SymbolicModel {
    match loaded {
        LoadedModel::Symbolic(model) => model,
        LoadedModel::Static(model) => panic!("`{}` imported static", model.name),
    }
}

const ORT: &str = r#"import sys, json, numpy as np, onnxruntime as ort
s = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
feeds = {i.name: np.load(p) for i, p in zip(s.get_inputs(), sys.argv[2:])}
print(json.dumps([v.astype(np.float64).ravel().tolist() for v in s.run(None, feeds)]))
"#;

/// onnxruntime's first output of the ONNX file `onnx` for `inputs`, when the Python
/// checks run.
fn onnxruntime(onnx: &Path, inputs: &[Tensor], dir: &Path) -> Option<Vec<f64>> {
    let mut args = vec![onnx.to_path_buf()];
    for (i, input) in inputs.iter().enumerate() {
        let path = dir.join(format!("in{i}.npy"));
        std::fs::write(&path, pto_cli::tensor_file::npy_bytes(input).expect("npy")).expect("w");
        args.push(path);
    }
    let out = python(ORT, &args)?;
    let mut outputs: Vec<Vec<f64>> = serde_json::from_str(out.trim()).expect("json");
    Some(outputs.remove(0))
}

fn assert_close(name: &str, actual: &[f64], expected: &[f64]) {
    assert_eq!(actual.len(), expected.len(), "{name}: lengths");
    let mut worst: f64 = 0.0;
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        let error = (a - e).abs();
        assert!(
            error <= TOLERANCE.atol + TOLERANCE.rtol * e.abs(),
            "{name}: element {i}: {a} against {e}"
        );
        worst = worst.max(error);
    }
    println!(
        "{name}: max |error| {worst:.3e} over {} values",
        actual.len()
    );
}

/// The GPT-2-style export (`input_ids: i64[batch, seq]`) imports with its dims symbolic,
/// saves, loads, and the one file compiles for two bindings on cpu and sim. Each matches
/// onnxruntime run on the same inputs, and (the model is causal, its rows independent) the
/// outputs onnxruntime recorded for the fixture's `[1, 8]` inputs: a batch of two copies
/// gives them twice, a prefix of 5 tokens their first 5 positions.
#[test]
fn one_symbolic_model_file_compiles_for_two_bindings_and_matches_onnxruntime() {
    let onnx = fixture("gpt2_tiny.onnx");
    let model = symbolic(LoadedModel::load_onnx(&onnx).expect("imports with symbolic dims"));
    assert_eq!(model.inputs[0].to_string(), "input_ids i64[batch, seq]");
    assert_eq!(model.outputs[0].to_string(), "logits f32[batch, seq, 64]");
    assert_eq!(model.dims(), ["batch", "seq"]);

    let dir = TempDir::new("two-bindings");
    let file = dir.0.join("gpt2.pto");
    model.save(&file).expect("saves");
    let loaded = symbolic(LoadedModel::load(&file).expect("loads"));
    assert_eq!(loaded, model);
    // The file of a symbolic model is not a model to compile as it is.
    let err = Model::load(&file).unwrap_err();
    assert!(matches!(err, ModelFileError::Symbolic { .. }), "{err}");
    assert!(
        err.to_string().contains("--shape batch=<size>,seq=<size>"),
        "{err}"
    );

    let io = read_safetensors(&fixture("gpt2_tiny.io.safetensors")).expect("io");
    let ids: Vec<i64> = io["input_ids"].to_vec().expect("i64 ids");
    let recorded = io["logits"].to_f64_vec();
    assert_eq!((ids.len(), recorded.len()), (8, 8 * 64));
    let twice: Vec<i64> = ids.iter().chain(&ids).copied().collect();
    let cases = [
        (
            ImportOptions::default().dim("batch", 2).dim("seq", 8),
            Tensor::from_vec([2, 8], twice).expect("ids"),
            recorded
                .iter()
                .chain(&recorded)
                .copied()
                .collect::<Vec<f64>>(),
        ),
        (
            ImportOptions::default().shape("input_ids", [1, 5]),
            Tensor::from_vec([1, 5], ids[..5].to_vec()).expect("ids"),
            recorded[..5 * 64].to_vec(),
        ),
    ];
    for (options, input, causal) in cases {
        let bound = loaded.bind(&options).expect("binds");
        let shape = input.shape();
        let logits = &bound.graph.values[bound.graph.outputs[0]];
        assert_eq!(
            logits.ty.shape,
            Shape::from([shape.dims()[0], shape.dims()[1], 64])
        );
        let ort = onnxruntime(&onnx, std::slice::from_ref(&input), &dir.0);
        for target in ["cpu", "sim"] {
            let compiled = compile(&bound, target).expect("compiles");
            let out = compiled.run(std::slice::from_ref(&input)).expect("runs");
            let actual = out.outputs[0].to_f64_vec();
            let name = format!("gpt2 {shape} on {target}");
            assert_close(&format!("{name} vs recorded onnxruntime"), &actual, &causal);
            if let Some(ort) = &ort {
                assert_close(&format!("{name} vs onnxruntime"), &actual, ort);
            }
        }
    }
}

/// `--shape` at import still binds early: the model is static, and equals the symbolic
/// model bound to the same shape.
#[test]
fn binding_at_import_and_binding_later_give_the_same_model() {
    let onnx = fixture("gpt2_tiny.onnx");
    let options = ImportOptions::default().dim("batch", 1).dim("seq", 4);
    let early = Model::load_onnx_with(&onnx, &options).expect("binds at import");
    let model = symbolic(LoadedModel::load_onnx(&onnx).expect("imports"));
    let late = model.bind(&options).expect("binds");
    assert_eq!(early, late);
    // Binding the model itself (its weights moved, not copied) gives the same.
    let moved = model.into_bound(&options).expect("binds");
    assert_eq!(moved, early);
    let by_shape =
        Model::load_onnx_with(&onnx, &ImportOptions::default().shape("input_ids", [1, 4]))
            .expect("binds at import");
    assert_eq!(by_shape, early);
}

fn dim(d: &str) -> Dimension {
    match d.parse::<i64>() {
        Ok(size) => Dimension {
            dim_value: Some(size),
            dim_param: None,
        },
        Err(_) if d == "?" => Dimension {
            dim_value: None,
            dim_param: None,
        },
        Err(_) => Dimension {
            dim_value: None,
            dim_param: Some(d.to_owned()),
        },
    }
}

fn value(name: &str, dims: &[&str]) -> ValueInfoProto {
    ValueInfoProto {
        name: name.to_owned(),
        r#type: Some(TypeProto {
            tensor_type: Some(TensorTypeProto {
                elem_type: 1,
                shape: Some(TensorShapeProto {
                    dim: dims.iter().map(|d| dim(d)).collect(),
                }),
            }),
        }),
    }
}

fn node(op: &str, inputs: &[&str], output: &str) -> NodeProto {
    NodeProto {
        op_type: op.to_owned(),
        input: inputs.iter().map(|s| (*s).to_owned()).collect(),
        output: vec![output.to_owned()],
        ..Default::default()
    }
}

/// An ONNX model of `nodes` with graph inputs and outputs `(name, dims)` (f32; a dim is a
/// size, a name, or `?`), and int64 initializers.
fn onnx(
    nodes: Vec<NodeProto>,
    inputs: &[(&str, &[&str])],
    outputs: &[(&str, &[&str])],
    initializers: &[(&str, Vec<i64>)],
) -> Vec<u8> {
    ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: 17,
        }],
        graph: Some(GraphProto {
            name: "hand_built".to_owned(),
            node: nodes,
            input: inputs.iter().map(|(n, d)| value(n, d)).collect(),
            output: outputs.iter().map(|(n, d)| value(n, d)).collect(),
            initializer: initializers
                .iter()
                .map(|(name, data)| TensorProto {
                    name: (*name).to_owned(),
                    dims: vec![data.len() as i64],
                    data_type: 7,
                    int64_data: data.clone(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        ..Default::default()
    }
    .encode_to_vec()
}

/// `x: f32[batch, 4] + y: f32[batch, 4]`.
fn add_model() -> SymbolicModel {
    let bytes = onnx(
        vec![node("Add", &["x", "y"], "z")],
        &[("x", &["batch", "4"]), ("y", &["batch", "4"])],
        &[("z", &["batch", "4"])],
        &[],
    );
    symbolic(LoadedModel::from_onnx(&bytes).expect("imports"))
}

fn bind_error(model: &SymbolicModel, options: ImportOptions) -> String {
    model.bind(&options).expect_err("must fail").to_string()
}

fn assert_contains(message: &str, parts: &[&str]) {
    for part in parts {
        assert!(message.contains(part), "`{part}` in: {message}");
    }
}

#[test]
fn an_unbound_dim_is_an_error_naming_the_dim_the_input_and_how_to_bind_it() {
    let model = add_model();
    assert_eq!(
        model.inputs[0].dims,
        [Dim::Named("batch".into()), Dim::Size(4)]
    );
    let err = bind_error(&model, ImportOptions::default());
    assert_contains(
        &err,
        &[
            "value `x`: dimension 0 (`batch`) is symbolic and not bound",
            "input `y`: dimension 0 (`batch`) is symbolic and not bound",
            "`--shape batch=<size>`",
            "`--shape x=<batch>x4`",
        ],
    );
    // The command line: the model file compiles only with the dim bound.
    let dir = TempDir::new("unbound");
    let file = dir.0.join("add.pto");
    model.save(&file).expect("saves");
    let file = file.to_str().expect("utf-8");
    let err = pto_cli::run(["pto", "compile", file])
        .unwrap_err()
        .to_string();
    assert_contains(&err, &["`batch`", "input", "--shape batch="]);
    let out = pto_cli::run(["pto", "run", file, "--shape", "batch=3"]).expect("runs");
    assert!(out.contains("f32[3, 4]"), "{out}");
}

#[test]
fn a_binding_that_conflicts_names_both_sides() {
    let model = add_model();
    // With a static dim.
    let err = bind_error(&model, ImportOptions::default().shape("x", [2, 5]));
    assert_contains(
        &err,
        &[
            "value `x`",
            "dimension 1 is declared 4",
            "given for it is [2, 5]",
        ],
    );
    // With the same dim of another input.
    let err = bind_error(
        &model,
        ImportOptions::default()
            .shape("x", [2, 4])
            .shape("y", [3, 4]),
    );
    assert_contains(
        &err,
        &[
            "`batch` is 3 by the shape [3, 4] given for input `y`",
            "but 2 by the shape [2, 4] given for input `x`",
        ],
    );
    // With a dim bound by name.
    let err = bind_error(
        &model,
        ImportOptions::default().shape("x", [2, 4]).dim("batch", 7),
    );
    assert_contains(
        &err,
        &[
            "`batch` is 7 by",
            "but 2 by the shape [2, 4] given for input `x`",
        ],
    );
    // Agreeing bindings are fine.
    let bound = model
        .bind(&ImportOptions::default().shape("x", [2, 4]).dim("batch", 2))
        .expect("agrees");
    assert_eq!(
        bound.graph.values[bound.graph.outputs[0]].ty.shape,
        Shape::from([2, 4])
    );
}

#[test]
fn binding_a_dim_the_model_does_not_have_is_refused_with_its_dims() {
    let model = add_model();
    let err = bind_error(&model, ImportOptions::default().dim("seq", 8));
    assert_contains(
        &err,
        &[
            "value `seq`",
            "neither an input nor a symbolic dim",
            "its symbolic dims: batch",
        ],
    );
    // `--shape seq=8` on the command line, and a dim given a whole shape.
    let err = bind_error(&model, ImportOptions::default().shape("seq", [8]));
    assert_contains(&err, &["`seq`", "its symbolic dims: batch"]);
    let err = bind_error(&model, ImportOptions::default().shape("batch", [1, 8]));
    assert_contains(&err, &["is a symbolic dim of the model", "one size"]);
    // A static model has no dims to bind.
    let bytes = onnx(
        vec![node("Relu", &["x"], "y")],
        &[("x", &["2", "4"])],
        &[("y", &["2", "4"])],
        &[],
    );
    let LoadedModel::Static(model) = LoadedModel::from_onnx(&bytes).expect("imports") else {
        panic!("static");
    };
    let err = LoadedModel::Static(model.clone())
        .bind(&ImportOptions::default().dim("batch", 1))
        .unwrap_err()
        .to_string();
    assert_contains(
        &err,
        &["`batch`", "its symbolic dims: none, every dim is static"],
    );
    let same = LoadedModel::Static(model.clone())
        .bind(&ImportOptions::default().shape("x", [2, 4]))
        .expect("its own shape");
    assert_eq!(same, model);
}

#[test]
fn an_unnamed_dim_binds_by_its_inputs_shape() {
    let bytes = onnx(
        vec![node("Relu", &["x"], "y")],
        &[("x", &["?", "4"])],
        &[("y", &["?", "4"])],
        &[],
    );
    let model = symbolic(LoadedModel::from_onnx(&bytes).expect("imports"));
    assert_eq!(model.inputs[0].to_string(), "x f32[?, 4]");
    assert!(model.dims().is_empty());
    let err = bind_error(&model, ImportOptions::default());
    assert_contains(
        &err,
        &["dimension 0 (unnamed) is symbolic", "`--shape x=<d0>x4`"],
    );
    let bound = model
        .bind(&ImportOptions::default().shape("x", [6, 4]))
        .expect("binds");
    assert_eq!(
        bound.graph.values[bound.graph.outputs[0]].ty.shape,
        Shape::from([6, 4])
    );
}

/// A declared output dim named like an input's dim must get that dim's size: a Reshape
/// to a fixed `[2, -1]` keeps `batch` only when it is 2.
#[test]
fn an_output_dim_of_an_input_dims_name_is_checked() {
    let bytes = onnx(
        vec![node("Reshape", &["x", "target"], "y")],
        &[("x", &["batch", "4"])],
        &[("y", &["batch", "cols"])],
        &[("target", vec![2, -1])],
    );
    let model = symbolic(LoadedModel::from_onnx(&bytes).expect("imports"));
    assert_eq!(model.outputs[0].to_string(), "y f32[batch, cols]");
    model
        .bind(&ImportOptions::default().dim("batch", 2))
        .expect("batch 2 keeps batch");
    let err = bind_error(&model, ImportOptions::default().dim("batch", 4));
    assert_contains(
        &err,
        &[
            "value `y`",
            "dimension 0 is `batch` = 4",
            "its op infers [2, 8]",
        ],
    );
}

/// The command line: `pto import` keeps the dims symbolic, `inspect` shows them, `compile`
/// and `run` bind them with `--shape`, by name or by an input's shape.
#[test]
fn the_command_line_keeps_dims_symbolic_until_they_are_bound() {
    let gpt2 = fixture("gpt2_tiny.onnx");
    let gpt2 = gpt2.to_str().expect("utf-8 path");
    let dir = TempDir::new("cli");
    let file = dir.0.join("gpt2.pto");
    let file = file.to_str().expect("utf-8 path");
    let out = pto_cli::run(["pto", "import", gpt2, "-o", file]).expect("imports");
    assert_contains(
        &out,
        &[
            "inputs:  input_ids i64[batch, seq]",
            "outputs: logits f32[batch, seq, 64]",
            "symbolic dims: batch, seq",
        ],
    );
    let out = pto_cli::run(["pto", "inspect", file]).expect("inspects");
    assert_contains(
        &out,
        &["input_ids i64[batch, seq]", "logits f32[batch, seq, 64]"],
    );
    let err = pto_cli::run(["pto", "compile", file])
        .unwrap_err()
        .to_string();
    assert_contains(
        &err,
        &[
            "`input_ids`",
            "`batch`",
            "`seq`",
            "--shape batch=<size>,seq=<size>",
        ],
    );
    for shape in [["--shape", "batch=1,seq=6"], ["--shape", "input_ids=1x6"]] {
        let out = pto_cli::run([
            "pto", "compile", file, shape[0], shape[1], "--target", "sim",
        ])
        .expect("compiles");
        assert!(out.contains("logits f32[1, 6, 64]"), "{out}");
    }
    let out =
        pto_cli::run(["pto", "run", file, "--shape", "seq=3", "--shape", "batch=2"]).expect("runs");
    assert!(out.contains("f32[2, 3, 64]"), "{out}");
    let err = pto_cli::run(["pto", "compile", file, "--shape", "seq=4,batch=1,seq=5"])
        .unwrap_err()
        .to_string();
    assert_contains(
        &err,
        &["value `seq`: `--shape` gives it twice, [4] and [5]"],
    );
    let err = pto_cli::run(["pto", "compile", file, "--shape", "batch=1,seq=4,heads=2"])
        .unwrap_err()
        .to_string();
    assert_contains(&err, &["`heads`", "its symbolic dims: batch, seq"]);
    // Fusing and writing ONNX need the dims bound.
    let err = pto_cli::run(["pto", "inspect", file, "--fuse"])
        .unwrap_err()
        .to_string();
    assert_contains(
        &err,
        &["symbolic dims (batch, seq)", "`--fuse`", "--shape batch="],
    );
    let onnx_out = dir.0.join("out.onnx");
    let err = pto_cli::run([
        "pto",
        "export",
        file,
        "-o",
        onnx_out.to_str().expect("utf-8"),
    ])
    .unwrap_err()
    .to_string();
    assert_contains(&err, &["writing it as ONNX"]);
    // `--shape` at import binds early: the file is static, of format version 1.
    let fixed = dir.0.join("fixed.pto");
    pto_cli::run([
        "pto",
        "import",
        gpt2,
        "--shape",
        "batch=1,seq=8",
        "-o",
        fixed.to_str().expect("utf-8"),
    ])
    .expect("imports");
    let model = Model::load(&fixed).expect("a static model file");
    assert_eq!(
        model.graph.values[model.graph.outputs[0]].ty.to_string(),
        "f32[1, 8, 64]"
    );
}

/// A file of format version 1 (every file written before symbolic models) loads as before,
/// through either loader.
#[test]
fn a_version_1_file_still_loads() {
    let bytes = onnx(
        vec![node("Relu", &["x"], "y")],
        &[("x", &["2", "4"])],
        &[("y", &["2", "4"])],
        &[],
    );
    let model = pto_onnx::from_onnx(&bytes).expect("imports");
    let saved = model.to_bytes().expect("saves");
    let header_len = u64::from_le_bytes(saved[..8].try_into().expect("8 bytes")) as usize;
    let header: BTreeMap<String, serde_json::Value> =
        serde_json::from_slice(&saved[8..8 + header_len]).expect("json");
    assert_eq!(header["__metadata__"]["format_version"], "1");
    let LoadedModel::Static(loaded) = LoadedModel::from_bytes(&saved).expect("loads") else {
        panic!("static");
    };
    assert_eq!(loaded, Model::from_bytes(&saved).expect("loads"));
}

/// The header of a safetensors file, edited by `edit`.
fn edit_header(bytes: &[u8], edit: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let len = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")) as usize;
    let mut header: serde_json::Value = serde_json::from_slice(&bytes[8..8 + len]).expect("json");
    edit(&mut header);
    let mut text = header.to_string().into_bytes();
    text.resize(text.len().next_multiple_of(8), b' ');
    let mut out = (text.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&text);
    out.extend_from_slice(&bytes[8 + len..]);
    out
}

/// A symbolic model file whose entries disagree with its ONNX graph is refused naming the
/// entry; no bytes make loading or binding panic.
#[test]
fn a_broken_symbolic_model_file_is_an_error_never_a_panic() {
    let model = symbolic(LoadedModel::load_onnx(fixture("gpt2_tiny.onnx")).expect("imports"));
    let bytes = model.to_bytes().expect("saves");
    let edited = edit_header(&bytes, |h| {
        h["__metadata__"]["inputs"] =
            r#"[{"name":"input_ids","dtype":"i64","dims":[1,"seq"]}]"#.into();
    });
    let err = LoadedModel::from_bytes(&edited).unwrap_err().to_string();
    assert_contains(&err, &["the `inputs` entry", "input_ids i64[batch, seq]"]);
    let edited = edit_header(&bytes, |h| h["__metadata__"]["onnx"] = "0g".into());
    let err = LoadedModel::from_bytes(&edited).unwrap_err().to_string();
    assert_contains(&err, &["the `onnx` entry", "not a hex digit"]);

    let options = ImportOptions::default().dim("batch", 1).dim("seq", 2);
    let mut rng = pto_op::SplitMix64::new(12);
    let cases: usize = std::env::var("PTO_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let (mut loaded, mut bound) = (0, 0);
    for _ in 0..cases {
        let mut mutated = bytes.clone();
        for _ in 0..1 + rng.next_u64() % 4 {
            let at = (rng.next_u64() % mutated.len() as u64) as usize;
            mutated[at] = rng.next_u64() as u8;
        }
        if let Ok(model) = LoadedModel::from_bytes(&mutated) {
            loaded += 1;
            if model.bind(&options).is_ok() {
                bound += 1;
            }
        }
    }
    println!("{cases} mutated files: {loaded} loaded, {bound} bound");
}

/// A size int64 cannot hold, given through the library (the command line refuses it as it
/// parses `--shape`), is said to be too large, naming the input or dim and the limit: it was
/// reported as "symbolic or unknown".
#[test]
fn a_size_past_int64_is_too_large_not_unknown() {
    let model = add_model();
    let huge = 1usize << 63;
    let err = bind_error(&model, ImportOptions::default().shape("x", [huge, 4]));
    assert_contains(
        &err,
        &[
            "value `x`",
            "dimension 0 of the shape given for it, 9223372036854775808, is more than the \
             9223372036854775807 an ONNX dim (int64) can be",
        ],
    );
    let err = bind_error(&model, ImportOptions::default().dim("batch", huge));
    assert_contains(
        &err,
        &["`batch`", "is bound to 9223372036854775808, more than the"],
    );
}
