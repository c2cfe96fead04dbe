//! Transformers exported by torch's ONNX exporter (`scripts/make_fixtures.py`: GPT-2-,
//! BERT- and Llama-style, random weights) import, compile and run on cpu and sim, and match
//! the outputs onnxruntime computed when the fixtures were made; onnxruntime, when
//! installed, computes them again from the committed file.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::python::python;
use pto_backends::compiler::compile;
use pto_cli::tensor_file::read_safetensors;
use pto_examples as _;
use pto_onnx::OnnxFile;
use pto_onnx::{ImportOptions, OnnxError};
use pto_op::{Model, Shape, Tensor, Tolerance};

/// The outputs of a float model exported in f32, against onnxruntime's: the sums are in
/// another order (and the sim's kernels tile them), so a few ulps of the largest values.
const TOLERANCE: Tolerance = Tolerance {
    rtol: 1e-4,
    atol: 1e-4,
};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("fixtures/onnx/{name}"))
}

/// The fixture's inputs and onnxruntime's outputs, by ONNX name.
fn io(name: &str) -> BTreeMap<String, Tensor> {
    read_safetensors(&fixture(&format!("{name}.io.safetensors"))).expect("the fixture's io file")
}

const RERUN: &str = r#"import sys, json, numpy as np, onnxruntime as ort
s = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
feeds = {i.name: np.load(p) for i, p in zip(s.get_inputs(), sys.argv[2:])}
print(json.dumps({o.name: v.astype(np.float64).ravel().tolist() for o, v in zip(s.get_outputs(), s.run(None, feeds))}))
"#;

/// The ONNX names of the fixture's outputs, in order.
fn output_names(name: &str) -> &'static [&'static str] {
    match name {
        "bert_tiny" => &["last_hidden_state", "pooler_output"],
        _ => &["logits"],
    }
}

/// The expected outputs: onnxruntime's, computed now from the committed ONNX file when
/// onnxruntime is installed (and checked equal to the recorded ones), else the recorded.
fn expected(name: &str, model: &Model, io: &BTreeMap<String, Tensor>) -> Vec<Tensor> {
    let g = &model.graph;
    let recorded: Vec<Tensor> = output_names(name)
        .iter()
        .map(|&output| io[output].clone())
        .collect();
    assert_eq!(recorded.len(), g.outputs.len(), "{name}: outputs");
    let dir = std::env::temp_dir().join(format!("pto-real-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut args = vec![fixture(&format!("{name}.onnx"))];
    for &id in &g.inputs {
        let path = dir.join(format!("{id}.npy"));
        let bytes = pto_cli::tensor_file::npy_bytes(&io[&g.values[id].name]).expect("npy");
        std::fs::write(&path, bytes).expect("writes");
        args.push(path);
    }
    if let Some(out) = python(RERUN, &args) {
        let rerun: BTreeMap<String, Vec<f64>> = serde_json::from_str(out.trim()).expect("json");
        for (output, recorded) in output_names(name).iter().zip(&recorded) {
            let now = &rerun[*output];
            let then = recorded.to_f64_vec();
            let worst = now
                .iter()
                .zip(&then)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            assert!(
                worst <= 1e-5,
                "{name}: this onnxruntime differs from the recorded outputs by {worst}"
            );
        }
    }
    recorded
}

/// Runs `model` on `target` with the fixture's inputs; the largest absolute error against
/// onnxruntime over the outputs.
fn max_error(name: &str, model: &Model, target: &str) -> f64 {
    let io = io(name);
    let expected = expected(name, model, &io);
    let compiled = compile(model, target).unwrap_or_else(|e| panic!("{name} on {target}: {e}"));
    let report = compiled.report();
    if target == "sim" {
        // The products (attention's batched ones too), norms, softmaxes and element-wise
        // ops run their kernels; the shape ops run on the CPU reference.
        for op in ["std.matmul", "std.batch_matmul", "std.softmax", "std.add"] {
            assert!(
                !report.fallbacks.iter().any(|f| f == op),
                "{name}: {op} falls back: {:?}",
                report.fallbacks
            );
        }
        assert!(report.kernels_traced >= 5, "{name}: {report:?}");
    }
    println!(
        "{name} on {target}: {} nodes, {} kernels traced, fallbacks {:?}",
        report.nodes.len(),
        report.kernels_traced,
        report.fallbacks
    );
    let inputs: Vec<Tensor> = model
        .graph
        .inputs
        .iter()
        .map(|&id| io[&model.graph.values[id].name].clone())
        .collect();
    let outputs = compiled
        .run(&inputs)
        .unwrap_or_else(|e| panic!("{name} on {target}: {e}"))
        .outputs;
    let mut worst: f64 = 0.0;
    for (actual, expected) in outputs.iter().zip(&expected) {
        let c = actual.compare(expected, TOLERANCE).expect("same shape");
        assert_eq!(
            c.mismatches, 0,
            "{name} on {target}: {c:?} against onnxruntime"
        );
        worst = worst.max(c.max_abs_error);
    }
    println!("{name} on {target}: max |error| vs onnxruntime {worst:.3e}");
    worst
}

fn import(name: &str, options: &ImportOptions) -> Model {
    Model::load_onnx_with(fixture(&format!("{name}.onnx")), options)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn gpt2_shapes() -> ImportOptions {
    ImportOptions::default().shape("input_ids", [1, 8])
}

#[test]
fn gpt2_style_export_matches_onnxruntime_on_cpu_and_sim() {
    let model = import("gpt2_tiny", &gpt2_shapes());
    for target in ["cpu", "sim"] {
        max_error("gpt2_tiny", &model, target);
    }
}

#[test]
fn bert_style_export_matches_onnxruntime_on_cpu_and_sim() {
    let model = import("bert_tiny", &ImportOptions::default());
    for target in ["cpu", "sim"] {
        max_error("bert_tiny", &model, target);
    }
}

#[test]
fn llama_style_export_matches_onnxruntime_on_cpu_and_sim() {
    let model = import("llama_tiny", &ImportOptions::default());
    for target in ["cpu", "sim"] {
        max_error("llama_tiny", &model, target);
    }
}

#[test]
fn a_symbolic_dim_left_unbound_is_an_error_naming_the_input_and_the_dim() {
    let err = Model::load_onnx(fixture("gpt2_tiny.onnx")).unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(err.content(), OnnxError::Value { .. }),
        "{message}"
    );
    for part in [
        "`input_ids`",
        "dimension 0",
        "`batch`",
        "--shape input_ids=",
    ] {
        assert!(message.contains(part), "{part} in: {message}");
    }
}

#[test]
fn symbolic_dims_bind_to_other_sizes_and_the_shape_computations_follow() {
    let model = import(
        "gpt2_tiny",
        &ImportOptions::default().shape("input_ids", [2, 5]),
    );
    let g = &model.graph;
    let logits = &g.values[g.outputs[0]];
    assert_eq!(logits.ty.shape, Shape::from([2, 5, 64]));
    let compiled = compile(&model, "cpu").expect("compiles");
    let ids = Tensor::from_vec([2, 5], vec![1i64, 2, 3, 4, 5, 6, 7, 8, 9, 10]).unwrap();
    assert_eq!(
        compiled.run(&[ids]).expect("runs").outputs[0].shape(),
        Shape::from([2, 5, 64])
    );
    let err = Model::load_onnx_with(
        fixture("gpt2_tiny.onnx"),
        &ImportOptions::default().shape("input_ids", [1, 8, 1]),
    )
    .unwrap_err();
    assert!(err.to_string().contains("rank 2"), "{err}");
}

#[test]
fn the_llama_style_export_fused_into_the_demo_ops_matches_onnxruntime_on_sim() {
    let model = import("llama_tiny", &ImportOptions::default());
    let (fused, applied) = pto_op::fusion::fuse(&model).expect("fuses");
    let names: Vec<(&str, usize)> = applied
        .iter()
        .map(|f| (f.fusion.as_str(), f.nodes))
        .collect();
    // Per layer: the two RMSNorms (7 nodes each), attention (2 heads: q @ k^T, its
    // scaling, the causal mask, softmax and @ v: 6 nodes) and the SwiGLU block (11 nodes);
    // then the final RMSNorm.
    let layer = [
        ("demo.rms_norm", 7),
        ("demo.flash_attention", 6),
        ("demo.rms_norm", 7),
        ("demo.swiglu", 11),
    ];
    let expected: Vec<(&str, usize)> = layer
        .iter()
        .chain(&layer)
        .copied()
        .chain([("demo.rms_norm", 7)])
        .collect();
    assert_eq!(names, expected);
    for op in ["demo.rms_norm", "demo.flash_attention", "demo.swiglu"] {
        assert!(fused.graph.nodes.iter().any(|n| n.op == op), "{op}");
    }
    for target in ["cpu", "sim"] {
        max_error("llama_tiny", &fused, target);
    }
    // On sim the demo ops run their kernels, none falls back.
    let report = compile(&fused, "sim").expect("compiles").report().clone();
    for op in ["demo.rms_norm", "demo.flash_attention", "demo.swiglu"] {
        assert!(
            !report.fallbacks.iter().any(|f| f == op),
            "{op}: {report:?}"
        );
    }
}

#[test]
fn the_gpt2_style_attention_fuses_with_its_merged_transpose_and_still_matches() {
    let model = import("gpt2_tiny", &gpt2_shapes());
    let (fused, applied) = pto_op::fusion::fuse(&model).expect("fuses");
    // torch writes GPT-2's k^T as one transpose (perm [0, 2, 3, 1]) of k before its heads
    // are split off, and its causal mask as two slices of a buffer (`bias[:t, :t]`): per
    // layer, attention (q @ k^T, its scaling, the two slices of the mask, the mask's add,
    // softmax and @ v: 8 nodes) becomes flash attention per head. LayerNorm and GELU have no
    // pattern.
    let names: Vec<(&str, usize)> = applied
        .iter()
        .map(|f| (f.fusion.as_str(), f.nodes))
        .collect();
    assert_eq!(
        names,
        [("demo.flash_attention", 8), ("demo.flash_attention", 8)]
    );
    let heads = fused
        .graph
        .nodes
        .iter()
        .filter(|n| n.op == "demo.flash_attention")
        .count();
    assert_eq!(heads, 2 * 2, "2 layers of 2 heads");
    for target in ["cpu", "sim"] {
        max_error("gpt2_tiny", &fused, target);
    }
    let report = compile(&fused, "sim").expect("compiles").report().clone();
    assert!(
        !report.fallbacks.iter().any(|f| f == "demo.flash_attention"),
        "{report:?}"
    );
}

#[test]
fn fusion_leaves_the_models_without_its_patterns_alone() {
    let model = import("bert_tiny", &ImportOptions::default());
    let (fused, applied) = pto_op::fusion::fuse(&model).expect("fuses");
    // BERT uses LayerNorm and GELU (no pattern), and a padding mask computed at run time
    // from `attention_mask`, which flash attention does not take: nothing matches.
    assert_eq!(applied, []);
    assert_eq!(fused.graph.nodes.len(), model.graph.nodes.len());
}

/// The names of a model's graph outputs, in order.
fn graph_output_names(model: &Model) -> Vec<String> {
    let g = &model.graph;
    g.outputs
        .iter()
        .map(|&id| g.values[id].name.clone())
        .collect()
}

#[test]
fn fusion_keeps_the_names_of_the_outputs_and_of_every_node_it_does_not_replace() {
    for (name, options) in [
        ("bert_tiny", ImportOptions::default()),
        ("gpt2_tiny", gpt2_shapes()),
        ("llama_tiny", ImportOptions::default()),
    ] {
        let model = import(name, &options);
        let (fused, applied) = pto_op::fusion::fuse(&model).expect("fuses");
        // The file's output names (`output_names`, as onnx reads the file), fused or not.
        assert_eq!(graph_output_names(&fused), output_names(name), "{name}");
        let g = &fused.graph;
        let names: std::collections::BTreeSet<&str> =
            g.values.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(
            names.len(),
            g.values.len(),
            "{name}: value names are unique"
        );
        // Every node left as it was keeps its name and its outputs' names.
        let replaced: usize = applied.iter().map(|f| f.nodes).sum();
        // (An ONNX node imported as several std ops names each of them.)
        let node_outputs = |m: &Model| -> Vec<(String, Vec<String>)> {
            let g = &m.graph;
            g.nodes
                .iter()
                .filter(|n| !n.name.is_empty())
                .map(|n| {
                    let outputs = n.outputs.iter().map(|&id| g.values[id].name.clone());
                    (n.name.clone(), outputs.collect())
                })
                .collect()
        };
        let original: std::collections::BTreeSet<(String, Vec<String>)> =
            node_outputs(&model).into_iter().collect();
        let kept = node_outputs(&fused);
        assert_eq!(kept.len(), model.graph.nodes.len() - replaced, "{name}");
        for node in &kept {
            assert!(
                original.contains(node),
                "{name}: {node:?} is not as imported"
            );
        }
        if applied.is_empty() {
            // Nothing fused: the same nodes reading and writing the same names (the
            // weights are added in the order of their first use).
            let named = |m: &Model| -> Vec<(String, Vec<String>, Vec<String>)> {
                let g = &m.graph;
                let names =
                    |ids: &[usize]| ids.iter().map(|&id| g.values[id].name.clone()).collect();
                g.nodes
                    .iter()
                    .map(|n| (n.name.clone(), names(&n.inputs), names(&n.outputs)))
                    .collect()
            };
            assert_eq!(
                named(&fused),
                named(&model),
                "{name}: nothing fused, nothing renamed"
            );
        }
    }
}

/// `pto run --fuse --outputs DIR` writes one `NAME.npy` per output under the file's names.
#[test]
fn run_with_fuse_writes_the_outputs_under_the_files_names() {
    let dir = std::env::temp_dir().join(format!("pto-real-fuse-outputs-{}", std::process::id()));
    for (name, shape) in [
        ("bert_tiny", None),
        ("llama_tiny", None),
        ("gpt2_tiny", Some("input_ids=1x8")),
    ] {
        let out = dir.join(name);
        let model = fixture(&format!("{name}.onnx"));
        let mut args = vec!["pto", "run", model.to_str().expect("utf-8 path"), "--fuse"];
        args.extend(shape.iter().flat_map(|s| ["--shape", s]));
        args.extend([
            "--random",
            "0",
            "--outputs",
            out.to_str().expect("utf-8 path"),
        ]);
        let report = pto_cli::run(args).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut written: Vec<String> = std::fs::read_dir(&out)
            .expect("the outputs directory")
            .map(|e| {
                e.expect("an entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        written.sort();
        let mut expected: Vec<String> = output_names(name)
            .iter()
            .map(|n| format!("{n}.npy"))
            .collect();
        expected.sort();
        assert_eq!(written, expected, "{name}: {report}");
    }
    std::fs::remove_dir_all(&dir).expect("removes the scratch directory");
}

#[test]
fn the_command_line_imports_fuses_and_binds_shapes() {
    let llama = fixture("llama_tiny.onnx");
    let llama = llama.to_str().expect("utf-8 path");
    let out = pto_cli::run(["pto", "import", llama, "--fuse"]).expect("imports");
    for line in [
        "fused 9 match(es), 147 -> 121 node(s):",
        "  2 x demo.flash_attention (replacing 6 nodes each)",
        "  5 x demo.rms_norm (replacing 7 nodes each)",
        "  2 x demo.swiglu (replacing 11 nodes each)",
    ] {
        assert!(out.contains(line), "{line} in:\n{out}");
    }
    let plain = pto_cli::run(["pto", "import", llama]).expect("imports");
    assert!(plain.contains("fused: nothing"), "{plain}");
    let out =
        pto_cli::run(["pto", "compile", llama, "--fuse", "--target", "sim"]).expect("compiles");
    assert!(out.contains("demo.swiglu"), "{out}");

    let gpt2 = fixture("gpt2_tiny.onnx");
    let gpt2 = gpt2.to_str().expect("utf-8 path");
    let err = pto_cli::run(["pto", "run", gpt2]).unwrap_err().to_string();
    assert!(
        err.contains("`input_ids`") && err.contains("`batch`") && err.contains("--shape"),
        "{err}"
    );
    let out = pto_cli::run(["pto", "run", gpt2, "--shape", "input_ids=2x3"]).expect("runs");
    assert!(out.contains("f32[2, 3, 64]"), "{out}");
    let err = pto_cli::run(["pto", "run", gpt2, "--shape", "input_ids=2xbig"])
        .unwrap_err()
        .to_string();
    assert!(err.contains("dim `big`"), "{err}");
    // A dim no int64 holds is refused as too large, with the limit, not passed on.
    let err = pto_cli::run([
        "pto",
        "run",
        gpt2,
        "--shape",
        "input_ids=0x18446744073709551615",
    ])
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("dim `18446744073709551615` of `input_ids=0x18446744073709551615` is too large: a dim is at most 9223372036854775807"),
        "{err}"
    );
}
