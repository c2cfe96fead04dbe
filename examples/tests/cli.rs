//! The `pto` command line on the built-in example models: through the library entry
//! point, and as the built binary.

use std::path::{Path, PathBuf};
use std::process::Command;

use pto_cli::{CliError, run};
// Links the example ops and models into this test.
use pto_examples as _;

#[test]
fn ops_json_lists_every_linked_schema() {
    let out = run(["pto", "ops", "--json"]).unwrap();
    let schemas: Vec<pto_op::OpSchema> = serde_json::from_str(&out).unwrap();
    let names: Vec<&str> = schemas.iter().map(|s| s.name.as_str()).collect();
    for name in ["demo.swiglu", "demo.flash_attention", "teamb.scaled_tanh"] {
        assert!(names.contains(&name), "{name} not in {names:?}");
    }
}

#[test]
fn compile_reports_nodes_kernels_fallbacks_and_memory() {
    let out = run(["pto", "compile", "mixed", "--target", "sim"]).unwrap();
    for part in [
        "model `mixed` compiled for target `sim`: 5 node(s), 4 kernel(s) traced",
        "demo.moments",
        "reference (fallback: no kernel)",
        "peak activation memory",
        "weights 64.5 KiB",
    ] {
        assert!(out.contains(part), "{part:?} not in:\n{out}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&run(["pto", "compile", "mixed", "--json"]).unwrap()).unwrap();
    assert_eq!(json["target"], "cpu");
    assert_eq!(json["nodes"][4]["runs"], "reference");
}

#[test]
fn run_on_sim_prints_outputs_and_a_timing_table() {
    let out = run([
        "pto",
        "run",
        "decoder-block",
        "--target",
        "sim",
        "--random",
        "3",
    ])
    .unwrap();
    for part in [
        "model `decoder-block` on target `sim`, inputs: random, seed 3",
        "output `n9.y` f32[64, 64]",
        "demo.swiglu",
        "simulated",
        "total simulated",
    ] {
        assert!(out.contains(part), "{part:?} not in:\n{out}");
    }
    let json: serde_json::Value = serde_json::from_str(
        &run(["pto", "run", "pipeline", "--target", "sim", "--json"]).unwrap(),
    )
    .unwrap();
    assert_eq!(json["node_times"][0]["kind"], "simulated");
    assert!(
        json["node_times"][0]["cycles"]
            .as_u64()
            .is_some_and(|c| c > 0)
    );
}

#[test]
fn parity_and_inspect_report_per_output_and_per_node() {
    let out = run(["pto", "parity", "decoder-block"]).unwrap();
    assert!(
        out.starts_with("parity of model `decoder-block` (sim vs cpu) passed"),
        "{out}"
    );
    assert!(
        out.contains("(from `std.add`): all 4096 elements match"),
        "{out}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&run(["pto", "parity", "mixed", "--json"]).unwrap()).unwrap();
    assert_eq!(json["outputs"].as_array().map(Vec::len), Some(3));
    let out = run(["pto", "inspect", "pipeline"]).unwrap();
    assert!(
        out.contains("(n0.y, gamma) -> n1.y f32[64, 256]  [eps=1e-6]"),
        "{out}"
    );
}

#[test]
fn mistakes_are_named() {
    let err = run(["pto", "run", "decoder_blok"]).unwrap_err();
    let names: Vec<&str> = pto_op::models::builtin_models()
        .expect("unique names")
        .iter()
        .map(|m| m.name)
        .collect();
    assert!(names.starts_with(&["decoder-block"]), "{names:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "no model file `decoder_blok` and no built-in model of that name; built-in models: {}",
            names.join(", ")
        )
    );
    let dir = std::env::temp_dir().join(format!("pto-cli-dir-model-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let dir_name = dir.to_str().expect("utf-8 temp dir").to_owned();
    for verb in ["run", "estimate", "inspect"] {
        let err = run(["pto", verb, dir_name.as_str()]).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "`{dir_name}` is a directory, not a model: give a model file in it or a \
                 built-in model's name"
            ),
            "{verb}"
        );
    }
    std::fs::remove_dir(&dir).expect("temp dir removed");
    let err = run(["pto", "compile", "pipeline", "--target", "gpu"]).unwrap_err();
    // With the feature `device`, the device targets are linked too.
    let linked = if cfg!(feature = "device") {
        "ascendc-host, cpu, kirin, sim"
    } else {
        "cpu, sim"
    };
    assert_eq!(
        err.to_string(),
        format!("no execution target `gpu`; linked targets: {linked}")
    );
    assert!(matches!(
        run(["pto", "frobnicate"]),
        Err(CliError::Usage(_))
    ));
}

/// The total simulated cycles of a `pto run --json` report.
fn simulated_cycles(run_json: &str) -> u64 {
    let json: serde_json::Value = serde_json::from_str(run_json).expect("JSON");
    json["node_times"]
        .as_array()
        .expect("a node_times array")
        .iter()
        .filter_map(|t| t["cycles"].as_u64())
        .sum()
}

#[test]
fn every_verb_that_runs_takes_a_device() {
    let run_on = |device: &[&str]| {
        let mut args = vec!["pto", "run", "pipeline", "--target", "sim", "--json"];
        args.extend(device);
        simulated_cycles(&run(args).unwrap())
    };
    let (default, kirin, ascend) = (
        run_on(&[]),
        run_on(&["--device", "kirin9030"]),
        run_on(&["--device", "ascend910b"]),
    );
    assert_eq!(
        default, kirin,
        "the sim target's default device is kirin9030"
    );
    assert!(ascend > 0 && ascend != kirin, "{ascend} vs {kirin}");

    // compile: the kernels must fit the device asked for; a device that does not exist is
    // an error naming it.
    let out = run([
        "pto",
        "compile",
        "mixed",
        "--target",
        "sim",
        "--device",
        "ascend910b",
    ])
    .unwrap();
    assert!(out.contains("compiled for target `sim`"), "{out}");
    let err = run([
        "pto", "compile", "mixed", "--target", "sim", "--device", "nope",
    ])
    .unwrap_err();
    assert!(
        matches!(err, CliError::Device(_)) && err.to_string().contains("`nope`"),
        "{err}"
    );

    // parity: the checked target runs on the device; the simulated time says which.
    let parity_on = |device: &str| {
        let json: serde_json::Value = serde_json::from_str(
            &run(["pto", "parity", "pipeline", "--device", device, "--json"]).unwrap(),
        )
        .unwrap();
        assert_eq!(json["outputs"][0]["comparison"]["mismatches"], 0, "{json}");
        json["simulated_seconds"].as_f64().unwrap()
    };
    assert_ne!(parity_on("kirin9030"), parity_on("ascend910b"));

    // estimate: the device's rates.
    let estimate_on = |device: &str| {
        let json: serde_json::Value = serde_json::from_str(
            &run(["pto", "estimate", "pipeline", "--device", device, "--json"]).unwrap(),
        )
        .unwrap();
        json["device"].as_str().unwrap().to_owned()
    };
    assert_eq!(estimate_on("ascend910b"), "ascend910b");
}

#[test]
fn the_binary_reads_pto_device_at_its_edge() {
    let pto = env!("CARGO_BIN_EXE_pto");
    let cycles = |env: Option<&str>, args: &[&str]| {
        let mut command = Command::new(pto);
        command
            .args(["run", "pipeline", "--target", "sim", "--json"])
            .args(args)
            .env_remove("PTO_DEVICE");
        if let Some(device) = env {
            command.env("PTO_DEVICE", device);
        }
        let out = command.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        simulated_cycles(&String::from_utf8_lossy(&out.stdout))
    };
    let ascend = cycles(None, &["--device", "ascend910b"]);
    assert_eq!(cycles(Some("ascend910b"), &[]), ascend);
    // The argument wins over the environment.
    assert_eq!(
        cycles(Some("ascend910b"), &["--device", "kirin9030"]),
        cycles(None, &[])
    );
}

#[test]
fn the_binary_runs_and_exits_with_the_right_code() {
    let pto = env!("CARGO_BIN_EXE_pto");
    let ok = Command::new(pto)
        .args(["run", "pipeline"])
        .env("PTO_TARGET", "sim")
        .output()
        .unwrap();
    assert!(ok.status.success(), "{ok:?}");
    let stdout = String::from_utf8_lossy(&ok.stdout);
    assert!(stdout.contains("on target `sim`"), "{stdout}");
    let failed = Command::new(pto)
        .args(["inspect", "nope"])
        .output()
        .unwrap();
    assert_eq!(failed.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&failed.stderr).starts_with("error: no model file `nope`"));
}

/// Runs the built binary with `args` and returns its exit code and stderr.
fn failing(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pto"))
        .args(args)
        .env_remove("PTO_DEVICE")
        .env_remove("PTO_TARGET")
        .output()
        .expect("the binary runs");
    assert!(out.stdout.is_empty(), "{out:?}");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn every_error_of_the_binary_prints_alike_and_says_each_reason_once() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli-errors");
    std::fs::create_dir_all(&dir).unwrap();
    let garbage = dir.join("garbage.pto");
    std::fs::write(&garbage, "not a model").unwrap();
    let garbage = garbage.to_str().unwrap();
    let missing_dir = dir.join("no-such-dir").join("m.pto");
    let missing_dir = missing_dir.to_str().unwrap();
    for args in [
        &["run", "nope"][..],
        &["inspect", garbage],
        &["run", "pipeline", "--inputs", garbage],
        &["export", "pipeline", "-o", missing_dir],
        &["estimate", "pipeline", "--device", "nope"],
        &["compile", "pipeline", "--target", "nope"],
    ] {
        let (code, stderr) = failing(args);
        assert_eq!(code, Some(1), "{args:?}: {stderr}");
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
        assert!(!stderr.contains("Error:"), "{args:?}: {stderr}");
        let lines: Vec<&str> = stderr.lines().collect();
        for (i, line) in lines.iter().enumerate().skip(1) {
            let cause = line
                .strip_prefix("  caused by: ")
                .unwrap_or_else(|| panic!("{args:?}: line {i} is not a cause: {stderr}"));
            assert!(
                !lines[..i].iter().any(|above| above.contains(cause)),
                "{args:?}: `{cause}` is printed twice: {stderr}"
            );
        }
    }
}

/// `pto package` of a model with an op that has no kernel: the reason (the op has no
/// kernel) is the top error's source, printed under it.
#[cfg(feature = "device")]
#[test]
fn the_binary_prints_the_cause_of_a_failed_package() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli-package-mixed");
    let _ = std::fs::remove_dir_all(&dir);
    let (code, stderr) = failing(&["package", "mixed", "-o", dir.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(
        stderr,
        "error: op `demo.moments`, instance [f32[64, 128]]: lowering for kirin9030 failed: op \
         `demo.moments`: tracing the kernel failed\n  caused by: op `demo.moments`: it has no \
         #[kernel], so it runs on the CPU reference only\n"
    );
}

#[test]
fn the_example_programs_print_errors_like_the_binary() {
    // A `main` returning `Result` prints `Error: {:?}` (a usage string in quotes, an error's
    // Debug form); the example programs end in `pto_cli::exit_code` instead.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let source = std::fs::read_to_string(&path).unwrap();
        if let Some(main) = source.find("fn main()") {
            let signature = &source[main..source[main..].find('{').unwrap() + main];
            assert!(
                !signature.contains("Result"),
                "{}: `{signature}` prints its errors as `Error: {{:?}}`",
                path.display()
            );
            assert!(source.contains("pto_cli::exit_code("), "{}", path.display());
            checked += 1;
        }
    }
    assert!(
        checked >= 7,
        "{checked} example programs in {}",
        dir.display()
    );
}

#[test]
fn an_exported_model_file_compiles_and_runs_like_the_built_in_model() {
    let dir = std::env::temp_dir().join(format!("pto-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("decoder-block.pto");
    let path = file.to_str().unwrap();
    let out = run(["pto", "export", "decoder-block", "-o", path]).unwrap();
    assert!(
        out.starts_with("exported model `decoder-block` to "),
        "{out}"
    );
    let from_file = run(["pto", "run", path, "--target", "sim", "--json"]).unwrap();
    let built_in = run(["pto", "run", "decoder-block", "--target", "sim", "--json"]).unwrap();
    assert_eq!(from_file, built_in);
    assert!(run(["pto", "parity", path]).unwrap().contains("passed"));
    let onnx = dir.join("decoder-block.onnx");
    let onnx = onnx.to_str().unwrap();
    run(["pto", "export", "decoder-block", "-o", onnx]).unwrap();
    let from_onnx = run(["pto", "run", onnx, "--target", "sim", "--json"]).unwrap();
    assert_eq!(from_onnx, built_in);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn estimate_takes_the_7b_model_without_its_weights() {
    let out = run([
        "pto",
        "estimate",
        "llama-7b-prefill",
        "--device",
        "kirin9030",
    ])
    .unwrap();
    assert!(
        out.starts_with("model `llama-7b-prefill` on `kirin9030`"),
        "{out}"
    );
    assert!(out.contains("weights 12852.5 MiB"), "{out}");
    let json: serde_json::Value =
        serde_json::from_str(&run(["pto", "estimate", "pipeline", "--json"]).unwrap()).unwrap();
    assert_eq!(json["ops"].as_array().map(Vec::len), Some(3));
    let listed = run(["pto", "estimators"]).unwrap();
    assert!(listed.contains("std.reshape"), "{listed}");
}

#[test]
fn run_reads_named_inputs_from_a_safetensors_file() {
    // The random inputs of seed 3, written as the file `--inputs` reads.
    let model = (pto_op::models::find_builtin("pipeline")
        .unwrap()
        .unwrap()
        .build)()
    .unwrap();
    let compiled = pto_backends::compiler::compile(&model, "cpu").unwrap();
    let x = compiled.random_inputs(3).remove(0);
    let bytes = x.to_le_bytes();
    let view =
        safetensors::tensor::TensorView::new(safetensors::Dtype::F32, x.dims().to_vec(), &bytes)
            .unwrap();
    let file =
        std::env::temp_dir().join(format!("pto-cli-inputs-{}.safetensors", std::process::id()));
    std::fs::write(&file, safetensors::serialize([("x", view)], None).unwrap()).unwrap();

    let from_file = run(["pto", "run", "pipeline", "--inputs", file.to_str().unwrap()]).unwrap();
    let from_seed = run(["pto", "run", "pipeline", "--random", "3"]).unwrap();
    let output_line = |out: &str| {
        out.lines()
            .find(|l| l.starts_with("output "))
            .map(str::to_owned)
    };
    assert!(
        from_file.contains(&format!("inputs: {}", file.display())),
        "{from_file}"
    );
    assert_eq!(output_line(&from_file), output_line(&from_seed));
    assert!(output_line(&from_file).is_some(), "{from_file}");

    // A file without the model's input is an error naming it.
    let view =
        safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![1], &[0; 4]).unwrap();
    std::fs::write(&file, safetensors::serialize([("y", view)], None).unwrap()).unwrap();
    let err = run(["pto", "run", "pipeline", "--inputs", file.to_str().unwrap()]).unwrap_err();
    assert!(
        err.to_string()
            .contains("input `x` (f32[64, 256]) is not given"),
        "{err}"
    );
    std::fs::remove_file(&file).unwrap();
}

/// The default memory budget heeds the process's address-space limit (issue 31 item 8):
/// under `ulimit -v` of 1 GiB, a model of 2 GiB of activations is refused by the budget,
/// naming the limit, instead of failing to allocate (without the limit, half of this
/// machine's memory would take it).
#[test]
fn the_default_budget_heeds_the_address_space_limit() {
    use pto_op::{DType, Graph, Shape};
    let graph = Graph::new();
    let x = graph.input("x", Shape::from([1 << 28]), DType::F32);
    graph.output(&pto_op::ops::neg::apply(&x, &Default::default()).unwrap());
    let dir = std::env::temp_dir().join(format!("pto-rlimit-as-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("two-gib.pto");
    std::fs::write(
        &file,
        graph.to_model("two-gib").unwrap().to_bytes().unwrap(),
    )
    .unwrap();
    let out = Command::new("bash")
        .arg("-c")
        .arg(r#"ulimit -v 1048576 && exec "$0" compile "$1""#)
        .arg(env!("CARGO_BIN_EXE_pto"))
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("more than the memory budget of")
            && stderr
                .contains("(what this process's address-space limit of 1.0 GiB leaves beyond the"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
