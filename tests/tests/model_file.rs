//! The model file: save/load round trips, the errors of broken files, atomic saves, and a
//! fuzz test that no bytes make loading panic.

use std::collections::BTreeMap;
use std::path::PathBuf;

use pto_op::op::TensorType;
use pto_op::schema::{Implementations, ParamSchema, TensorSchema};
use pto_op::tensor::SplitMix64;
use pto_op::{
    AttrType, AttrValue, DType, Fingerprint, Graph, GraphDef, Model, ModelFileError, NodeDef,
    OpSchema, Shape, Tensor, ValueDef, ValueKind,
};

/// A fresh directory for one test, removed by [`TempDir`]'s drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(test: &str) -> TempDir {
        let dir =
            std::env::temp_dir().join(format!("pto-model-file-{}-{test}", std::process::id()));
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

/// A traced model: rms_norm of an input with a weight.
fn rms_norm_model() -> Model {
    let graph = Graph::new();
    let x = graph.input("x", Shape::from([4, 16]), DType::F32);
    let gamma = graph
        .weight("gamma", Tensor::random([16], DType::F32, 1))
        .expect("unique name");
    let y = pto_examples::rms_norm::apply(&x, &gamma, &Default::default()).expect("traces");
    graph.output(&y);
    graph.to_model("rms").expect("a valid model")
}

fn schema(name: &str, inputs: &[&str], outputs: &[&str], params: &[(&str, AttrType)]) -> OpSchema {
    let tensors = |names: &[&str]| names.iter().map(|n| TensorSchema::named(*n)).collect();
    OpSchema {
        name: name.to_owned(),
        version: 2,
        doc: format!("Test op {name}."),
        inputs: tensors(inputs),
        outputs: tensors(outputs),
        params: params
            .iter()
            .map(|&(name, ty)| ParamSchema {
                name: name.to_owned(),
                ty,
                default: None,
            })
            .collect(),
        implements: Implementations {
            kernel: false,
            estimator: true,
            properties: false,
        },
        tolerances: BTreeMap::new(),
        fingerprint: Fingerprint::of_signature(name),
    }
}

/// A model built by hand: a weight of every dtype of 8 bits or more (f4e2m1 has its own
/// test, the 4- and 2-bit integers safetensors lacks; a scalar among them), three nodes, and attributes of
/// every type. No op runs on all these dtypes, and the file does not care.
fn every_dtype_model() -> Model {
    let mut graph = GraphDef::default();
    let mut add = |name: &str, shape: Shape, dtype: DType, kind: ValueKind| {
        graph.values.push(ValueDef {
            name: name.to_owned(),
            ty: TensorType { shape, dtype },
            kind,
        });
        graph.values.len() - 1
    };
    let x = add("x", Shape::from([2, 3]), DType::F32, ValueKind::Input);
    let mask = add("mask", Shape::from([3]), DType::Bool, ValueKind::Input);
    let mut weights = BTreeMap::new();
    let mut weight_ids = Vec::new();
    let stored = DType::ALL.into_iter().filter(|d| d.bits() >= 8);
    for (seed, dtype) in stored.enumerate() {
        let shape = Shape::from([seed % 3 + 1, 2]);
        let name = format!("w_{dtype}");
        weight_ids.push(add(&name, shape.clone(), dtype, ValueKind::Weight));
        weights.insert(name, Tensor::random(shape, dtype, seed as u64));
    }
    weight_ids.push(add(
        "w_scalar",
        Shape::scalar(),
        DType::I64,
        ValueKind::Weight,
    ));
    weights.insert("w_scalar".to_owned(), Tensor::scalar(-7i64));
    let y = add("n0.y", Shape::from([2, 3]), DType::F32, ValueKind::Node);
    let (a, b) = (
        add("n1.a", Shape::from([2, 3]), DType::BF16, ValueKind::Node),
        add("n1.b", Shape::from([3]), DType::I8, ValueKind::Node),
    );
    let z = add("n2.z", Shape::from([2, 3]), DType::F16, ValueKind::Node);

    let every_attr: pto_op::Attributes = [
        ("f32", AttrValue::F32(-0.25)),
        ("f64", AttrValue::F64(1e-300)),
        ("i32", AttrValue::I32(i32::MIN)),
        ("i64", AttrValue::I64(i64::MAX)),
        ("bool", AttrValue::Bool(true)),
        (
            "string",
            AttrValue::String("ünïcode \"quoted\"\n".to_owned()),
        ),
        ("i64s", AttrValue::I64s(vec![-1, 0, 1 << 40])),
        (
            "f32s",
            AttrValue::F32s(vec![0.1, f32::MAX, f32::MIN_POSITIVE]),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let node = |op: &str, inputs: Vec<usize>, outputs: Vec<usize>, attrs| NodeDef {
        name: String::new(),
        op: op.to_owned(),
        version: 2,
        fingerprint: Fingerprint::of_signature(op),
        inputs,
        outputs,
        attrs,
    };
    let params: Vec<(&str, AttrType)> = every_attr
        .iter()
        .map(|(k, v)| (k.as_str(), v.ty()))
        .collect();
    graph.nodes = vec![
        node(
            "test.every_attr",
            vec![x, weight_ids[0]],
            vec![y],
            every_attr.clone(),
        ),
        node("test.split", vec![y, mask], vec![a, b], Default::default()),
        node(
            "test.every_attr",
            vec![a, weight_ids[2]],
            vec![z],
            every_attr.clone(),
        ),
    ];
    graph.inputs = vec![x, mask];
    graph.weights = weight_ids;
    graph.outputs = vec![z, b];
    let schemas = [
        schema("test.every_attr", &["x", "w"], &["y"], &params),
        schema("test.split", &["x", "mask"], &["a", "b"], &[]),
    ]
    .into_iter()
    .map(|s| (s.name.clone(), s))
    .collect();
    Model {
        name: "every dtype".to_owned(),
        graph,
        weights,
        schemas,
        kernels: Vec::new(),
    }
}

/// `model` with its weight `name` replaced by `tensor` (the graph's type follows).
fn with_weight(model: &Model, name: &str, tensor: Tensor) -> Model {
    let mut model = model.clone();
    let id = model
        .graph
        .values
        .iter()
        .position(|v| v.name == name)
        .expect("the weight");
    model.graph.values[id].ty = tensor.tensor_type();
    model.weights.insert(name.to_owned(), tensor);
    model
}

#[test]
fn low_precision_float_weights_round_trip_and_sub_byte_integers_are_refused() {
    let model = rms_norm_model();
    let gamma = model.weights["gamma"].clone();
    // An f8 weight: stored as safetensors' F8_* dtype, bit for bit; an f4e2m1 weight as
    // `F4`, packed two to a byte, the first element in the low nibble.
    for dtype in [
        DType::F8E4M3FN,
        DType::F8E5M2FNUZ,
        DType::F8E8M0,
        DType::F4E2M1,
    ] {
        let weight = gamma.cast(dtype);
        let m = with_weight(&model, "gamma", weight.clone());
        let bytes = m.to_bytes().expect("serializes");
        let loaded = Model::from_bytes(&bytes).expect("loads");
        assert_eq!(loaded.weights["gamma"], weight, "{dtype}");
        assert_eq!(loaded.weights["gamma"].to_le_bytes(), weight.to_le_bytes());
        let (header, data) = split(&bytes);
        let stored = if dtype == DType::F4E2M1 {
            assert_eq!(header["gamma"]["dtype"], "F4");
            assert_eq!(header["gamma"]["shape"], serde_json::json!([16]));
            // 16 elements in 8 bytes, element 2i in the low nibble of byte i.
            let unpacked = weight.to_le_bytes();
            let packed: Vec<u8> = unpacked.chunks(2).map(|p| p[0] | p[1] << 4).collect();
            assert_eq!(packed, weight.to_packed_le_bytes());
            packed
        } else {
            weight.to_le_bytes()
        };
        assert_eq!(data, stored.as_slice(), "{dtype}");
    }
    // Sub-byte integers: refused, naming the weight, its dtype and what to do.
    let i4 = with_weight(&model, "gamma", gamma.cast(DType::I4));
    let err = i4.to_bytes().unwrap_err();
    assert!(
        matches!(&err, ModelFileError::UnsupportedDType { tensor, dtype: DType::I4, .. } if tensor == "gamma"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "model file: tensor `gamma` is i4, which safetensors has no dtype for: model files and \
         safetensors outputs hold every dtype but i4, u4, i2 and u2; cast it (e.g. to i8 or \
         f16) first"
    );
}

#[test]
fn f4e2m1_weights_round_trip_packed_and_an_odd_count_is_refused() {
    // A model of every shape of f4 weight: more elements than one write chunk (1 MiB), a
    // scalar-free even count, every one of the 16 bit patterns.
    let graph = Graph::new();
    let x = graph.input("x", Shape::from([2]), DType::F32);
    let patterns: Vec<f32> = (0u8..16)
        .map(|bits| {
            let magnitude = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0][usize::from(bits & 7)];
            if bits & 8 == 0 { magnitude } else { -magnitude }
        })
        .collect();
    let every_pattern = Tensor::from_vec([4, 4], patterns)
        .unwrap()
        .cast(DType::F4E2M1);
    graph
        .weight("every_pattern", every_pattern.clone())
        .unwrap();
    let large = Tensor::random([3, 700_001 * 2 / 3 + 1], DType::F32, 7).cast(DType::F4E2M1);
    assert!(large.numel() > 1 << 20 && large.numel().is_multiple_of(2));
    graph.weight("large", large.clone()).unwrap();
    graph.output(&x);
    let model = graph.to_model("f4").unwrap();
    let dir = TempDir::new("f4");
    let path = dir.0.join("f4.pto");
    model.save(&path).expect("saves");
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes, model.to_bytes().unwrap());
    let (header, data) = split(&bytes);
    assert_eq!(header["large"]["dtype"], "F4");
    // 1-byte tensors by name: `every_pattern` (8 bytes) then `large`.
    assert_eq!(
        header["every_pattern"]["data_offsets"],
        serde_json::json!([0, 8])
    );
    assert_eq!(&data[..8], every_pattern.to_packed_le_bytes().as_slice());
    assert_eq!(&data[8..], large.to_packed_le_bytes().as_slice());
    let loaded = Model::load(&path).expect("loads");
    assert_eq!(loaded.weights["every_pattern"], every_pattern);
    assert_eq!(loaded.weights["large"], large);

    // An odd count: safetensors' F4 holds whole bytes only.
    let odd = with_weight(
        &rms_norm_model(),
        "gamma",
        Tensor::zeros([3, 5], DType::F4E2M1),
    );
    let err = odd.save(dir.0.join("odd.pto")).unwrap_err();
    assert!(
        matches!(&err, ModelFileError::OddPackedCount { tensor, .. } if tensor == "gamma"),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "model file `{}`: tensor `gamma` is f4e2m1[3, 5], an odd number of elements: \
             safetensors packs f4e2m1 two to a byte (`F4`) and holds only whole bytes; pad it \
             to an even number of elements, or cast it (e.g. to f8e4m3fn or f16) first",
            dir.0.join("odd.pto").display()
        )
    );
    assert!(!dir.0.join("odd.pto").exists());
    // A file that declares an odd f4 count: an error naming the tensor, not a panic.
    let broken = edit_header(&bytes, |header| {
        header["every_pattern"]["shape"] = serde_json::json!([3, 5]);
    });
    let err = load_error(&broken);
    assert!(
        err.contains("every_pattern") && err.contains("no whole number of bytes"),
        "{err}"
    );
}

/// The model file as the writer before streaming saves built it, in memory: kept to check
/// that the streaming writer gives the same bytes.
fn reference_bytes(model: &Model) -> Vec<u8> {
    let metadata = BTreeMap::from([
        ("format", "pto-model".to_owned()),
        ("format_version", "1".to_owned()),
        ("name", model.name.clone()),
        ("graph", serde_json::to_string(&model.graph).expect("JSON")),
        (
            "schemas",
            serde_json::to_string(&model.schemas).expect("JSON"),
        ),
        (
            "kernels",
            serde_json::to_string(&model.with_traced_kernels().kernels).expect("JSON"),
        ),
    ]);
    reference_safetensors(&metadata, &model.weights)
}

/// The former `write_safetensors`, for the dtypes it wrote (8 bits and more).
fn reference_safetensors(
    metadata: &BTreeMap<&str, String>,
    weights: &BTreeMap<String, Tensor>,
) -> Vec<u8> {
    let mut order: Vec<(&String, &Tensor)> = weights.iter().collect();
    order.sort_by(|(a_name, a), (b_name, b)| {
        let alignment = |t: &Tensor| t.dtype().size_bytes();
        alignment(b)
            .cmp(&alignment(a))
            .then_with(|| a_name.cmp(b_name))
    });
    let mut header = serde_json::Map::new();
    header.insert("__metadata__".to_owned(), serde_json::json!(metadata));
    let mut data = Vec::new();
    for (name, tensor) in order {
        let dtype = match tensor.dtype() {
            DType::F8E4M3FN => "F8_E4M3".to_owned(),
            DType::F8E4M3FNUZ => "F8_E4M3FNUZ".to_owned(),
            DType::F8E5M2 => "F8_E5M2".to_owned(),
            DType::F8E5M2FNUZ => "F8_E5M2FNUZ".to_owned(),
            DType::F8E8M0 => "F8_E8M0".to_owned(),
            other => other.to_string().to_uppercase(),
        };
        let start = data.len();
        data.extend_from_slice(&tensor.to_le_bytes());
        header.insert(
            name.clone(),
            serde_json::json!({
                "dtype": dtype,
                "shape": tensor.dims(),
                "data_offsets": [start, data.len()],
            }),
        );
    }
    let mut header = serde_json::Value::Object(header).to_string().into_bytes();
    header.resize(header.len().next_multiple_of(8), b' ');
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&(header.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&header);
    bytes.extend_from_slice(&data);
    bytes
}

#[test]
fn the_streamed_save_writes_the_bytes_of_the_former_in_memory_writer() {
    let dir = TempDir::new("streamed");
    // Weights larger than one write chunk (1 MiB) and of no whole number of chunks, in
    // every dtype of at least 8 bits, and the traced example model.
    let mut large = every_dtype_model();
    for (seed, (name, tensor)) in large.weights.clone().into_iter().enumerate() {
        if tensor.dims().len() == 2 {
            let big = Tensor::random([tensor.dims()[0], 300_001], tensor.dtype(), seed as u64);
            large = with_weight(&large, &name, big);
        }
    }
    for model in [rms_norm_model(), every_dtype_model(), large] {
        let reference = reference_bytes(&model);
        assert_eq!(model.to_bytes().unwrap(), reference, "{}", model.name);
        let path = dir.0.join("model.pto");
        model.save(&path).expect("saves");
        assert!(std::fs::read(&path).unwrap() == reference, "{}", model.name);
    }
    // The run outputs' safetensors files too.
    let tensors = rms_norm_model().weights;
    assert_eq!(
        pto_op::model::file::safetensors_bytes(&tensors).unwrap(),
        reference_safetensors(&BTreeMap::new(), &tensors)
    );
}

#[test]
fn save_then_load_round_trips_bit_exactly() {
    let dir = TempDir::new("round-trip");
    for model in [rms_norm_model(), every_dtype_model()] {
        let path = dir.0.join(format!("{}.pto", model.name));
        model.save(&path).expect("saves");
        let loaded = Model::load(&path).expect("loads");
        // The file ships a kernel for every kernel instance, traced at save.
        assert_eq!(loaded, model.with_traced_kernels());
        let bytes = model.to_bytes().expect("serializes");
        assert_eq!(loaded.to_bytes().expect("serializes"), bytes);
        assert_eq!(std::fs::read(&path).expect("readable"), bytes);
    }
    // Only the model files are left: no temporary files.
    assert_eq!(std::fs::read_dir(&dir.0).expect("listable").count(), 2);
}

#[test]
fn the_file_is_plain_safetensors_with_the_documented_metadata() {
    let bytes = rms_norm_model().to_bytes().expect("serializes");
    let (header, _) = split(&bytes);
    let metadata = &header["__metadata__"];
    assert_eq!(metadata["format"], "pto-model");
    assert_eq!(metadata["format_version"], "1");
    assert_eq!(metadata["name"], "rms");
    let graph: GraphDef =
        serde_json::from_str(metadata["graph"].as_str().expect("a string")).expect("JSON");
    assert_eq!(graph.nodes[0].op, "demo.rms_norm");
    assert_eq!(header["gamma"]["dtype"], "F32");
    assert_eq!(header["gamma"]["shape"], serde_json::json!([16]));
    assert_eq!(header["gamma"]["data_offsets"], serde_json::json!([0, 64]));
}

/// The JSON header and the tensor data of a model file.
fn split(bytes: &[u8]) -> (serde_json::Value, &[u8]) {
    let length = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")) as usize;
    let header = serde_json::from_slice(&bytes[8..8 + length]).expect("a JSON header");
    (header, &bytes[8 + length..])
}

/// `bytes` with the header changed by `edit`.
fn edit_header(bytes: &[u8], edit: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    let (mut header, data) = split(bytes);
    edit(&mut header);
    let header = serde_json::to_vec(&header).expect("JSON");
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(&header);
    out.extend_from_slice(data);
    out
}

/// `bytes` with the graph in the metadata changed by `edit`.
fn edit_graph(bytes: &[u8], edit: impl FnOnce(&mut GraphDef)) -> Vec<u8> {
    edit_header(bytes, |header| {
        let entry = &mut header["__metadata__"]["graph"];
        let mut graph: GraphDef =
            serde_json::from_str(entry.as_str().expect("a string")).expect("a GraphDef");
        edit(&mut graph);
        *entry = serde_json::to_string(&graph).expect("JSON").into();
    })
}

fn load_error(bytes: &[u8]) -> String {
    Model::from_bytes(bytes).expect_err("must fail").to_string()
}

#[test]
fn an_unknown_format_version_says_which_and_what_to_do() {
    let bytes = rms_norm_model().to_bytes().expect("serializes");
    let newer = edit_header(&bytes, |h| h["__metadata__"]["format_version"] = "3".into());
    assert_eq!(
        load_error(&newer),
        "model file: format version `3` is not supported: this pto-op reads versions 1 and 2 \
         (a model with symbolic dims); load the file with the pto-op that wrote it, or \
         rebuild the model and save it with this one"
    );
    let dir = TempDir::new("version");
    let path = dir.0.join("newer.pto");
    std::fs::write(&path, &newer).expect("writable");
    let err = Model::load(&path).expect_err("must fail").to_string();
    assert!(
        err.starts_with(&format!(
            "model file `{}`: format version `3`",
            path.display()
        )),
        "{err}"
    );
    let other = edit_header(&bytes, |h| h["__metadata__"]["format"] = "gguf".into());
    assert_eq!(
        load_error(&other),
        "model file: not a pto model file: its `__metadata__.format` is `gguf`, not `pto-model`"
    );
}

#[test]
fn a_truncated_file_says_where_it_ends() {
    let bytes = rms_norm_model().to_bytes().expect("serializes");
    let len = bytes.len();
    assert_eq!(
        load_error(&bytes[..len - 10]),
        format!(
            "model file: truncated: the tensor data ends at byte {len}, but the file has {} \
             bytes",
            len - 10
        )
    );
    assert_eq!(
        load_error(&bytes[..100]),
        format!(
            "model file: truncated: the header ends at byte {}, but the file has 100 bytes",
            len - 64
        )
    );
    assert_eq!(
        load_error(&bytes[..3]),
        "model file: truncated: the 8-byte header length ends at byte 8, but the file has 3 \
         bytes"
    );
}

#[test]
fn a_weight_of_the_wrong_size_names_it_with_both_types() {
    let bytes = rms_norm_model().to_bytes().expect("serializes");
    let wrong = edit_graph(&bytes, |g| g.values[1].ty.shape = Shape::from([32]));
    assert_eq!(
        load_error(&wrong),
        "model file: weight `gamma`: the graph says f32[32] (128 bytes), but its tensor is \
         f32[16] (64 bytes)"
    );
    let f8_tensor = edit_header(&bytes, |h| {
        h["gamma"]["dtype"] = "C64".into();
        h["gamma"]["shape"] = serde_json::json!([8]);
    });
    assert_eq!(
        load_error(&f8_tensor),
        "model file: weight `gamma`: the graph says f32[16] (64 bytes), but its tensor is \
         C64[8], a safetensors dtype pto-op does not support"
    );
    let inconsistent = edit_header(&bytes, |h| h["gamma"]["shape"] = serde_json::json!([15]));
    assert_eq!(
        load_error(&inconsistent),
        "model file: corrupt safetensors data: tensor `gamma`: F32[15] takes 60 bytes, but its \
         data_offsets [0, 64] span 64 bytes"
    );
}

#[test]
fn broken_graphs_and_weights_are_named() {
    let bytes = rms_norm_model().to_bytes().expect("serializes");
    let graph_error = |edit: fn(&mut GraphDef)| load_error(&edit_graph(&bytes, edit));
    assert_eq!(
        graph_error(|g| g.nodes[0].inputs[1] = 9),
        "model file: node 0 (`demo.rms_norm`) input 1 refers to value 9, but the graph has 3 \
         values (ids 0..3)"
    );
    assert_eq!(
        graph_error(|g| g.outputs.push(3)),
        "model file: graph output 1 refers to value 3, but the graph has 3 values (ids 0..3)"
    );
    assert_eq!(
        graph_error(|g| g.weights.clear()),
        "model file: invalid graph: node 0 (`demo.rms_norm`) input 1 reads value 1 `gamma` \
         before anything produces it"
    );
    assert_eq!(
        graph_error(|g| {
            let mut orphan = g.values[2].clone();
            orphan.name = "orphan".to_owned();
            g.values.push(orphan);
        }),
        "model file: invalid graph: value 3 `orphan` is neither a listed input, a listed \
         weight nor a node output"
    );
    assert_eq!(
        graph_error(|g| g.nodes[0].outputs = vec![0]),
        "model file: invalid graph: node 0 (`demo.rms_norm`) output 0 is value 0 `x`, which \
         is an input, not a node output"
    );
    assert_eq!(
        graph_error(|g| g.values[0].name = "gamma".to_owned()),
        "model file: invalid graph: two values are named `gamma`; value names are unique"
    );
    let extra = edit_header(&bytes, |h| {
        h["beta"] = serde_json::json!({"dtype": "F32", "shape": [0], "data_offsets": [64, 64]});
    });
    assert_eq!(
        load_error(&extra),
        "model file: tensor `beta` is not a weight of the graph; weights are gamma"
    );
    let missing = edit_header(&bytes, |h| {
        h.as_object_mut().expect("an object").remove("gamma");
    });
    // Without its 64 bytes of data, which nothing refers to any more.
    assert_eq!(
        load_error(&missing[..missing.len() - 64]),
        "model file: weight `gamma` of the graph has no tensor"
    );
    let bad_json = edit_header(&bytes, |h| h["__metadata__"]["schemas"] = "{".into());
    assert_eq!(
        load_error(&bad_json),
        "model file: the `schemas` entry of `__metadata__`: EOF while parsing an object at \
         line 1 column 1"
    );
}

/// A model file's graph is read, not traced, so its value sizes are checked on load like a
/// traced value's: before the fix, the types of such a file reached `pto estimate` and
/// overflowed there (byte sums of the roofline, the row tiling of a kernel, the memory
/// properties), found by the structure-aware fuzz (`fuzz_structured.rs`).
#[test]
fn values_too_large_for_a_tensor_are_refused_on_load() {
    let bytes = rms_norm_model().to_bytes().expect("serializes");
    let larger = "larger than the 17592186044416 bytes a tensor may have";
    let huge = [
        (vec![1usize << 62, 16], DType::F32, larger),
        (
            vec![usize::MAX, 2],
            DType::U8,
            "whose dim 0, 18446744073709551615, is more than the 9223372036854775807 a dim \
             may be (ONNX dims are int64)",
        ),
        (vec![1 << 20, 1 << 20, 1 << 20], DType::I64, larger),
        (vec![(1 << 42) + 1], DType::F32, larger),
    ];
    let dir = TempDir::new("too-large");
    for (dims, dtype, problem) in huge {
        for value in 0..3 {
            let edited = edit_graph(&bytes, |g| {
                g.values[value].ty = TensorType {
                    shape: Shape::new(dims.clone()),
                    dtype,
                };
            });
            let name = ["x", "gamma", "n0.y"][value];
            assert_eq!(
                load_error(&edited),
                format!(
                    "model file: invalid graph: value {value} `{name}` is {dtype}{}, {problem}",
                    Shape::new(dims.clone())
                )
            );
            let path = dir.0.join("huge.pto");
            std::fs::write(&path, &edited).expect("writable");
            let path = path.to_string_lossy().into_owned();
            for verb in [
                &["estimate", &path][..],
                &["inspect", &path],
                &["compile", &path],
            ] {
                let err = pto_cli::run(std::iter::once("pto").chain(verb.iter().copied()))
                    .expect_err("refused");
                assert!(err.to_string().contains(problem), "{err}");
            }
        }
    }
    // The largest tensor allowed still loads.
    let at_limit = edit_graph(&bytes, |g| {
        g.values[0].ty.shape = Shape::new(vec![1 << 38, 16]);
    });
    assert!(Model::from_bytes(&at_limit).is_ok());
}

/// A value with no elements is checked like any other: before the fix,
/// `f32[0, 18446744073709551615, 16]` was 0 bytes and passed the size check, then `pto run`
/// panicked in ndarray (cpu and sim) and `pto export` wrote the dim as -1, which the
/// import refuses.
#[test]
fn zero_element_values_with_huge_dims_are_refused_on_load() {
    let bytes = rms_norm_model().to_bytes().expect("serializes");
    let dim_problem = |axis: usize, dim: usize| {
        format!(
            "whose dim {axis}, {dim}, is more than the 9223372036854775807 a dim may be (ONNX \
             dims are int64)"
        )
    };
    let zero_element = "which has no elements, but whose nonzero dims make more than the \
                        17592186044416 bytes a tensor may have";
    let cases = [
        (vec![0, usize::MAX, 16], dim_problem(1, usize::MAX)),
        (vec![0, 1 << 63, 16], dim_problem(1, 1 << 63)),
        (vec![1 << 63, 0, 16], dim_problem(0, 1 << 63)),
        (vec![0, 1 << 62, 16], zero_element.to_owned()),
    ];
    let dir = TempDir::new("zero-element");
    for (dims, problem) in cases {
        let edited = edit_graph(&bytes, |g| {
            for value in [0, 2] {
                g.values[value].ty.shape = Shape::new(dims.clone());
            }
        });
        let shape = Shape::new(dims.clone());
        assert_eq!(
            load_error(&edited),
            format!("model file: invalid graph: value 0 `x` is f32{shape}, {problem}")
        );
        let path = dir.0.join("zero.pto");
        std::fs::write(&path, &edited).expect("writable");
        let path = path.to_string_lossy().into_owned();
        let onnx = dir.0.join("zero.onnx").to_string_lossy().into_owned();
        for verb in [
            &["run", &path, "--target", "cpu"][..],
            &["run", &path, "--target", "sim"],
            &["export", &path, "-o", &onnx],
        ] {
            let err = pto_cli::run(std::iter::once("pto").chain(verb.iter().copied()))
                .expect_err("refused");
            assert!(err.to_string().contains(&problem), "{verb:?}: {err}");
        }
    }
    // A zero-element value whose other dims are within the limits loads.
    let empty = edit_graph(&bytes, |g| {
        for value in [0, 2] {
            g.values[value].ty.shape = Shape::new(vec![0, 1 << 20, 16]);
        }
    });
    assert!(Model::from_bytes(&empty).is_ok());
}

/// A value name from a file is shown escaped in errors: C0 and C1 controls and the bidi
/// overrides and isolates print as `\u{..}`, never raw.
#[test]
fn names_with_control_and_bidi_characters_are_escaped_in_errors() {
    let bytes = rms_norm_model().to_bytes().expect("serializes");
    for (name, shown) in [
        ("x\u{202e}y", "x\\u{202e}y"),
        ("a\u{1b}[2Jb", "a\\u{1b}[2Jb"),
        ("\u{9b}\u{2067}", "\\u{9b}\\u{2067}"),
        ("tab\there", "tab\\u{9}here"),
    ] {
        let edited = edit_graph(&bytes, |g| {
            g.values[0].name = name.to_owned();
            g.values[1].name = name.to_owned();
        });
        assert_eq!(
            load_error(&edited),
            format!(
                "model file: invalid graph: two values are named `{shown}`; value names are unique"
            )
        );
    }
    let edited = edit_graph(&bytes, |g| {
        g.values[0].name = String::new();
        g.values[1].name = String::new();
    });
    assert_eq!(
        load_error(&edited),
        "model file: invalid graph: two values are named `` (an empty name); value names are \
         unique"
    );
}

#[test]
fn a_model_json_cannot_hold_is_not_written() {
    let mut model = rms_norm_model();
    model.graph.nodes[0]
        .attrs
        .insert("eps".to_owned(), AttrValue::F32(f32::NAN));
    assert_eq!(
        model.to_bytes().expect_err("must fail").to_string(),
        "model file: invalid graph: node 0 (`demo.rms_norm`) attribute `eps` = NaN is not \
         finite, and JSON cannot hold it"
    );
}

/// Offsets near `usize::MAX` overflow the safetensors crate's own size check (a panic in
/// debug builds); the model file rejects them first.
#[test]
fn offsets_beyond_any_file_are_an_error_not_a_panic() {
    let bytes = rms_norm_model().to_bytes().expect("serializes");
    let step = (usize::MAX - 64) / 8;
    let huge = edit_header(&bytes, |h| {
        for i in 0..8 {
            h[format!("t{i}")] = serde_json::json!({
                "dtype": "U8", "shape": [step], "data_offsets": [64 + i * step, 64 + (i + 1) * step]
            });
        }
    });
    let err = load_error(&huge);
    assert!(
        err.starts_with("model file: corrupt safetensors data: tensor `t7` ends at data offset"),
        "{err}"
    );
}

#[test]
fn a_failed_save_leaves_the_previous_file_intact() {
    let dir = TempDir::new("failed-save");
    let path = dir.0.join("model.pto");
    let model = rms_norm_model();
    model.save(&path).expect("saves");
    let before = std::fs::read(&path).expect("readable");

    let mut broken = model.clone();
    broken
        .weights
        .insert("gamma".to_owned(), Tensor::zeros([3], DType::F16));
    let err = broken.save(&path).expect_err("must fail").to_string();
    assert_eq!(
        err,
        format!(
            "model file `{}`: weight `gamma`: the graph says f32[16] (64 bytes), but its \
             tensor is f16[3] (6 bytes)",
            path.display()
        )
    );
    assert_eq!(std::fs::read(&path).expect("readable"), before);

    // A directory in the way is refused before anything is written.
    let occupied = dir.0.join("occupied.pto");
    std::fs::create_dir(&occupied).expect("can create a dir");
    let err = model.save(&occupied).expect_err("must fail").to_string();
    assert!(
        err.starts_with(&format!(
            "model file: writing `{}`: refusing to replace it: it is a directory, not a regular \
             file",
            occupied.display()
        )),
        "{err}"
    );
    let names: Vec<_> = std::fs::read_dir(&dir.0)
        .expect("listable")
        .map(|e| e.expect("an entry").file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert_eq!(
        Model::load(&path).expect("loads"),
        model.with_traced_kernels()
    );
}

/// Loading mutated model files never panics: each case flips 1-8 random bytes, truncates to a
/// random length, or both, and `from_bytes` must return `Ok` or `Err`.
///
/// 10,000 cases by default; run more, or replay a seed, with
/// `PTO_FUZZ_CASES=1000000 PTO_FUZZ_SEED=1234 cargo test -p pto-tests --test model_file --release fuzz`.
#[test]
fn fuzz_mutated_files_never_panic() {
    let env = |name, default| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(default)
    };
    let cases = env("PTO_FUZZ_CASES", 10_000);
    let seed = env("PTO_FUZZ_SEED", 0x5eed);
    let originals = [
        rms_norm_model().to_bytes().expect("serializes"),
        every_dtype_model().to_bytes().expect("serializes"),
    ];
    let mut seeds = SplitMix64::new(seed);
    let (mut loaded, mut panics) = (0u64, Vec::new());
    for case in 0..cases {
        let case_seed = seeds.next_u64();
        let mut rng = SplitMix64::new(case_seed);
        let mut bytes = originals[rng.below(originals.len())].clone();
        let mutation = rng.below(3);
        if mutation != 1 {
            for _ in 0..=rng.below(8) {
                let at = rng.below(bytes.len());
                // Half the digits become other digits: the JSON stays valid and the change
                // reaches the checks of ids, shapes, offsets and versions behind the parser.
                if bytes[at].is_ascii_digit() && rng.below(2) == 0 {
                    bytes[at] = b'0' + rng.below(10) as u8;
                } else {
                    bytes[at] ^= (rng.below(255) + 1) as u8;
                }
            }
        }
        if mutation != 0 {
            bytes.truncate(rng.below(bytes.len()));
        }
        match std::panic::catch_unwind(|| Model::from_bytes(&bytes)) {
            Ok(Ok(_)) => loaded += 1,
            Ok(Err(_)) => {}
            Err(_) => panics.push(format!("case {case} (case seed {case_seed:#x})")),
        }
    }
    assert!(
        panics.is_empty(),
        "from_bytes panicked; replay with PTO_FUZZ_SEED={seed} PTO_FUZZ_CASES=<case + 1>:\n{}",
        panics.join("\n")
    );
    // Flips in float weight data still load: the test reaches the end of the reader.
    assert!(
        loaded > 0,
        "no mutated file loaded; the mutations are too coarse"
    );
}
