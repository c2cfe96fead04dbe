//! The custom-op package (feature `device`): its layout, every kernel compiling on the host,
//! the atomic rewrite, the fingerprint check, and the `pto package` verb without a CANN
//! toolkit.
//!
//! The packaged models are the built-in decoder block (f32), the same block in f16, and
//! `pipeline` (gelu_affine -> rms_norm -> softmax).

#![cfg(feature = "device")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use pto_backends::ascendc::Soc;
use pto_backends::ascendc::package::{
    self, MANIFEST_FILE, Manifest, PackageError, check_package, write_package,
};
use pto_backends::compiler::compile;
use pto_backends::parity::compare_compiled;
use pto_op::target::TargetConfig;
use pto_op::{DType, Fingerprint, Graph, Model, Shape, Tensor};
// Links the example ops and models into this test.
use pto_examples as _;

/// A fresh directory under the target's temp dir, removed first if a previous run left it.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("package-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// The model packaged by these tests.
const MODEL: &str = "decoder-block";

fn packaged_model() -> Model {
    pto_examples::models::decoder_block::build().expect("the decoder block builds")
}

/// A model Kirin can deploy: the pipeline's ops run on the vector unit only (Kirin's cube
/// has no float accumulator and no L0C -> UB path: the decoder block's cube kernels are
/// refused for Kirin, `the_decoder_block_is_refused_for_kirin`).
fn kirin_model() -> Model {
    pto_examples::models::pipeline::build().expect("the pipeline builds")
}

/// `demo.rms_norm` alone over `[rows, 64]` of `dtype`.
fn rms_norm_model(dtype: DType, rows: usize) -> Model {
    let graph = Graph::new();
    let x = graph.input("x", Shape::from([rows, 64]), dtype);
    let gain = graph
        .weight("g", Tensor::zeros(Shape::from([64]), dtype))
        .expect("weight");
    let y = pto_examples::rms_norm::apply(&x, &gain, &pto_examples::rms_norm::Params { eps: 1e-6 })
        .expect("traced");
    graph.output(&y);
    graph.to_model("norm").expect("model")
}

/// The decoder block of `pto_examples::models::decoder_block` in f16 (the built-in one is
/// f32), weights seeded.
fn decoder_block_f16() -> Model {
    use pto_examples::{flash_attention, rms_norm, swiglu};
    use pto_op::ops::{add, matmul};
    let dtype = DType::F16;
    let graph = Graph::new();
    let (seq, d_model, d_hidden) = (64, 64, 128);
    let x = graph.input("x", Shape::from([seq, d_model]), dtype);
    let weight = |name: &str, rows: usize, cols: usize, seed: u64| {
        let bound = 1.0 / (rows as f64).sqrt();
        graph
            .weight(
                name,
                Tensor::random_uniform([rows, cols], dtype, seed, -bound, bound),
            )
            .expect("weight")
    };
    let gain = |name: &str, seed: u64| {
        graph
            .weight(
                name,
                Tensor::random_uniform([d_model], dtype, seed, 0.5, 1.5),
            )
            .expect("gain")
    };
    let norm = rms_norm::Params { eps: 1e-6 };
    let mm = matmul::Params {};
    let h = rms_norm::apply(&x, &gain("g_attn", 1), &norm).expect("norm");
    let q = matmul::apply(&h, &weight("w_q", d_model, d_model, 2), &mm).expect("q");
    let k = matmul::apply(&h, &weight("w_k", d_model, d_model, 3), &mm).expect("k");
    let v = matmul::apply(&h, &weight("w_v", d_model, d_model, 4), &mm).expect("v");
    let attention = flash_attention::apply(
        &q,
        &k,
        &v,
        &flash_attention::Params {
            causal: true,
            scale: 0.0,
        },
    )
    .expect("attention");
    let attended = matmul::apply(&attention, &weight("w_o", d_model, d_model, 5), &mm).expect("o");
    let residual = add::apply(&x, &attended, &add::Params {}).expect("residual");
    let m = rms_norm::apply(&residual, &gain("g_mlp", 6), &norm).expect("norm");
    let mlp = swiglu::apply(
        &m,
        &weight("w_gate", d_model, d_hidden, 7),
        &weight("w_up", d_model, d_hidden, 8),
        &weight("w_down", d_hidden, d_model, 9),
        &swiglu::Params {},
    )
    .expect("mlp");
    let y = add::apply(&residual, &mlp, &add::Params {}).expect("y");
    graph.output(&y);
    graph.to_model("decoder-block-f16").expect("model")
}

fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// The siblings of `dir` whose names start with `.<name>.`: staging or old packages.
fn leftovers(dir: &Path) -> Vec<String> {
    let name = dir
        .file_name()
        .expect("named")
        .to_string_lossy()
        .into_owned();
    std::fs::read_dir(dir.parent().expect("has a parent"))
        .expect("readable parent")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&format!(".{name}.")))
        .collect()
}

#[test]
fn the_package_has_the_msopgen_layout() {
    let dir = scratch("layout").join("pipeline");
    let manifest = write_package(&kirin_model(), Soc::Kirin9030, &dir).expect("written");
    let ops: Vec<&str> = manifest.ops.iter().map(|o| o.op.as_str()).collect();
    assert_eq!(ops, ["demo.gelu_affine", "demo.rms_norm", "demo.softmax"]);
    assert_eq!(manifest.soc, "kirin9030");
    assert_eq!(manifest.soc_version, "Kirin9030");
    assert_eq!(manifest.cann_version, pto_backends::ascendc::CANN_VERSION);
    for op in &manifest.ops {
        let stem = &op.stem;
        for file in [
            format!("op_host/{stem}.cpp"),
            format!("op_host/{stem}_infer.h"),
            format!("op_host/{stem}_tiling.h"),
            format!("op_kernel/{stem}.cpp"),
            format!("op_kernel/{stem}_tiling.h"),
            format!("op_graph/{stem}_proto.h"),
            format!("framework/onnx_plugin/{stem}_plugin.cc"),
        ] {
            assert!(dir.join(&file).is_file(), "{file} missing");
            assert!(op.files.contains_key(&file), "{file} not in the manifest");
        }
        let def = pto_op::registry::find(&op.op).expect("linked");
        assert_eq!(op.fingerprint, def.fingerprint());
        let host = read(&dir, &format!("op_host/{stem}.cpp"));
        assert!(
            host.contains("this->AICore().AddConfig(\"kirin9030\");"),
            "{host}"
        );
        assert!(host.contains(&format!("OP_ADD({});", op.op_type)), "{host}");
        assert!(host.contains(&format!("{stem}::InferShapes(")), "{host}");
        for input in def.inputs {
            assert!(
                host.contains(&format!("this->Input(\"{input}\")")),
                "{input}"
            );
        }
        let proto = read(&dir, &format!("op_graph/{stem}_proto.h"));
        assert!(
            proto.contains(&format!("REG_OP({})", op.op_type)),
            "{proto}"
        );
        assert!(
            proto.contains(&format!(".OP_END_FACTORY_REG({})", op.op_type)),
            "{proto}"
        );
        let plugin = read(&dir, &format!("framework/onnx_plugin/{stem}_plugin.cc"));
        for part in [
            format!("REGISTER_CUSTOM_OP(\"{}\")", op.op_type),
            ".FrameworkType(ONNX)".to_owned(),
            format!(".OriginOpType(\"{}\")", op.origin_op_type),
            ".ParseParamsByOperatorFn(".to_owned(),
        ] {
            assert!(plugin.contains(&part), "{part} not in {plugin}");
        }
        for param in def.params {
            assert!(
                plugin.contains(&format!("\"{}\"", param.name)),
                "{}",
                param.name
            );
        }
    }
    // The ONNX export's domain and op type: `demo.rms_norm` is op_type `rms_norm` of domain
    // `demo`, opset 1.
    assert_eq!(manifest.ops[1].origin_op_type, "demo::1::rms_norm");
    assert_eq!(manifest.ops[1].op_type, "DemoRmsNorm");
    // Kirin has no bf16: no dtype list offers it.
    for op in &manifest.ops {
        let host = read(&dir, &format!("op_host/{}.cpp", op.stem));
        assert!(!host.contains("DT_BF16"), "{}", op.op);
    }
    let presets = read(&dir, "CMakePresets.json");
    assert!(presets.contains("\"ASCEND_COMPUTE_UNIT\""), "{presets}");
    assert!(presets.contains("\"kirin9030\""), "{presets}");
    assert!(read(&dir, "build.sh").contains("--soc_version=Kirin9030"));
    let written: Manifest =
        serde_json::from_str(&read(&dir, MANIFEST_FILE)).expect("the manifest parses");
    assert_eq!(written, manifest);
    println!("{manifest}");
}

#[test]
fn every_generated_kernel_of_the_decoder_block_compiles_on_the_host() {
    let dir = scratch("compile").join("pkg");
    let manifest = write_package(&packaged_model(), Soc::Ascend910B, &dir).expect("written");
    compile_kernels(&dir, &manifest);
}

/// Kirin's cube has half x half -> half (and, on the X90, int8 -> int32) only, and no
/// L0C -> UB path (Mmad.md, tables 11 and 12; Fixpipe（L0C到UB数据搬运）.md): the decoder
/// block's f32 and f16 cube kernels are refused at package time, naming the SoC, the call
/// and the source, and nothing is written.
#[test]
fn the_decoder_block_is_refused_for_kirin() {
    for (model, soc, call) in [
        (
            packaged_model(),
            Soc::Kirin9030,
            "Mmad(float x float -> float L0C)",
        ),
        (
            decoder_block_f16(),
            Soc::Kirin9030,
            "Mmad(half x half -> float L0C)",
        ),
        (
            packaged_model(),
            Soc::KirinX90,
            "Mmad(float x float -> float L0C)",
        ),
    ] {
        let dir = scratch(&format!("kirin-refused-{soc}")).join("pkg");
        let err = write_package(&model, soc, &dir).expect_err("no such cube on Kirin");
        let text = err.to_string();
        assert!(matches!(err, PackageError::Lower { .. }), "{text}");
        for part in [
            call,
            &format!("does not exist on {soc}"),
            "Mmad.md",
            "demo.flash_attention",
        ] {
            assert!(text.contains(part), "{part:?} not in {text}");
        }
        assert!(!dir.exists(), "a refused package writes nothing");
    }
}

#[test]
fn the_pipelines_kernels_compile_on_the_host() {
    let dir = scratch("compile-pipeline").join("pkg");
    let pipeline = pto_examples::models::pipeline::build().expect("the pipeline builds");
    let manifest = write_package(&pipeline, Soc::Kirin9030, &dir).expect("written");
    let ops: Vec<&str> = manifest.ops.iter().map(|o| o.op.as_str()).collect();
    assert_eq!(ops, ["demo.gelu_affine", "demo.rms_norm", "demo.softmax"]);
    compile_kernels(&dir, &manifest);
}

/// Compiles every `op_kernel/<stem>.cpp` of the package against the host implementation of
/// the Ascend C API, with the SoC profile's buffer sizes; prints lines per op and the time.
fn compile_kernels(dir: &Path, manifest: &Manifest) {
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("../pto-backends/ascendc/include");
    let compiler = std::env::var("CXX").unwrap_or_else(|_| "g++".to_owned());
    // The host implementation checks buffer capacities against the SoC's profile.
    let buffers = pto_op::DeviceProfile::resolve(&manifest.soc)
        .expect("the SoC's profile")
        .buffers;
    let defines = [
        ("UB", buffers.ub),
        ("L1", buffers.l1),
        ("L0A", buffers.l0a),
        ("L0B", buffers.l0b),
        ("L0C", buffers.l0c),
    ]
    .map(|(name, bytes)| format!("-DASCENDC_HOST_{name}_BYTES={bytes}"));
    // What the SoC's API has, as the `ascendc-host` target gives it (the capability table).
    let soc = Soc::from_profile_name(&manifest.soc).expect("the package's SoC");
    let soc_dir = dir.with_extension("soc");
    std::fs::create_dir_all(&soc_dir).expect("a directory for the SoC header");
    std::fs::write(
        soc_dir.join(pto_backends::ascendc::capability::HOST_HEADER),
        pto_backends::ascendc::capability::host_header(soc),
    )
    .expect("the SoC header");
    let started = Instant::now();
    for op in &manifest.ops {
        let source = dir.join(format!("op_kernel/{}.cpp", op.stem));
        let output = Command::new(&compiler)
            .args(["-std=c++17", "-fsyntax-only", "-Wall"])
            .args(&defines)
            .arg("-I")
            .arg(&include)
            .arg("-I")
            .arg(&soc_dir)
            .arg("-I")
            .arg(dir.join("op_kernel"))
            .arg(&source)
            .output()
            .unwrap_or_else(|e| panic!("running {compiler}: {e} (scripts/test installs g++)"));
        assert!(
            output.status.success(),
            "{} does not compile:\n{}",
            source.display(),
            String::from_utf8_lossy(&output.stderr)
        );
        println!("{:<22} {:>5} generated lines", op.op, op.lines());
    }
    println!(
        "{} kernels compiled (-fsyntax-only) in {:.2?}",
        manifest.ops.len(),
        started.elapsed()
    );
}

#[test]
fn op_host_prototypes_and_plugins_compile_against_stand_ins_of_the_cann_headers() {
    // `package_stubs/` declares the documented op_host, REG_OP, plug-in registration and
    // nlohmann::json names (not those libraries' headers): this checks the generated C++ is
    // well-formed and names the API as documented, not that CANN accepts it.
    let root = scratch("op-host");
    let mut manifests = Vec::new();
    let pipeline = pto_examples::models::pipeline::build().expect("the pipeline builds");
    for (name, model, soc) in [
        ("block", packaged_model(), Soc::Ascend910B),
        ("block-f16", decoder_block_f16(), Soc::Ascend910B),
        ("pipeline", pipeline, Soc::Kirin9030),
    ] {
        let dir = root.join(name);
        manifests.push((write_package(&model, soc, &dir).expect("written"), dir));
    }
    let stubs = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/package_stubs");
    let compiler = std::env::var("CXX").unwrap_or_else(|_| "g++".to_owned());
    for (op, dir) in manifests
        .iter()
        .flat_map(|(m, dir)| m.ops.iter().map(move |op| (op, dir)))
    {
        for source in [
            format!("op_host/{}.cpp", op.stem),
            format!("op_graph/{}_proto.h", op.stem),
            format!("framework/onnx_plugin/{}_plugin.cc", op.stem),
        ] {
            let output = Command::new(&compiler)
                .args([
                    "-std=c++17",
                    "-fsyntax-only",
                    "-Wall",
                    "-Wextra",
                    "-x",
                    "c++",
                ])
                .arg("-I")
                .arg(&stubs)
                .arg("-I")
                .arg(stubs.join("nlohmann"))
                // The stand-in of json.hpp, which framework/CMakeLists.txt fetches.
                .arg("-I")
                .arg(stubs.join("nlohmann"))
                .arg("-I")
                .arg(dir.join("op_host"))
                .arg("-I")
                .arg(dir.join("framework/onnx_plugin"))
                .arg(dir.join(&source))
                .output()
                .unwrap_or_else(|e| panic!("running {compiler}: {e}"));
            assert!(
                output.status.success(),
                "{source} does not compile:\n{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }
}

#[test]
fn the_f16_decoder_block_packages_and_its_kernels_compile() {
    let dir = scratch("decoder-f16").join("pkg");
    let manifest = write_package(&decoder_block_f16(), Soc::Ascend910B, &dir).expect("written");
    let ops: Vec<&str> = manifest.ops.iter().map(|o| o.op.as_str()).collect();
    assert_eq!(
        ops,
        ["demo.rms_norm", "demo.flash_attention", "demo.swiglu"]
    );
    compile_kernels(&dir, &manifest);
    println!("{manifest}");
}

#[test]
fn a_failed_write_leaves_the_previous_package() {
    let root = scratch("atomic");
    let dir = root.join("pkg");
    let first = write_package(&kirin_model(), Soc::Kirin9030, &dir).expect("written");
    let before = read(&dir, MANIFEST_FILE);
    // A second write replaces it whole, leaving nothing beside it.
    write_package(&kirin_model(), Soc::KirinX90, &dir).expect("rewritten");
    assert!(read(&dir, MANIFEST_FILE).contains("\"kirinx90\""));
    assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));
    write_package(&kirin_model(), Soc::Kirin9030, &dir).expect("rewritten");
    assert_eq!(read(&dir, MANIFEST_FILE), before);
    // A bf16 model does not lower for Kirin: the write fails and the package stays.
    let err = write_package(&rms_norm_model(DType::BF16, 64), Soc::Kirin9030, &dir)
        .expect_err("no bf16 on Kirin");
    assert!(matches!(err, PackageError::Lower { .. }), "{err}");
    assert!(err.to_string().contains("kirin9030"), "{err}");
    assert_eq!(read(&dir, MANIFEST_FILE), before);
    assert_eq!(package::read_manifest(&dir).expect("readable"), first);
    assert!(leftovers(&dir).is_empty(), "{:?}", leftovers(&dir));
}

#[test]
fn the_package_refuses_a_model_whose_ops_changed() {
    let dir = scratch("check").join("pkg");
    let model = packaged_model();
    write_package(&model, Soc::Ascend910B, &dir).expect("written");
    check_package(&model, &dir).expect("the same model matches");

    // An op whose signature changed since packaging.
    let mut changed = model.clone();
    let node = changed
        .graph
        .nodes
        .iter_mut()
        .find(|n| n.op == "demo.swiglu")
        .expect("the block uses swiglu");
    node.fingerprint = Fingerprint(node.fingerprint.0 ^ 1);
    let err = check_package(&changed, &dir).expect_err("fingerprints differ");
    assert!(
        matches!(err, PackageError::FingerprintMismatch { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("demo.swiglu"), "{err}");

    // Another shape than packaged.
    let err =
        check_package(&rms_norm_model(DType::F32, 32), &dir).expect_err("32 rows are not packaged");
    assert!(matches!(err, PackageError::MissingInstance { .. }), "{err}");
    assert!(err.to_string().contains("f32[32, 64]"), "{err}");
}

#[test]
fn pto_package_writes_checks_and_says_when_it_cannot_build() {
    let pto = env!("CARGO_BIN_EXE_pto");
    let root = scratch("cli");
    let dir = root.join("decoder");
    let out = Command::new(pto)
        .args(["package", MODEL, "--device", "ascend910b", "-o"])
        .arg(&dir)
        .arg("--build")
        .env_remove(package::TOOLKIT_ENV)
        .output()
        .expect("pto runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no CANN toolkit"), "{stderr}");
    assert!(stderr.contains("ASCEND_HOME_PATH"), "{stderr}");
    assert!(
        dir.join("op_kernel/demo_rms_norm.cpp").is_file(),
        "sources not written"
    );
    assert!(!dir.join("build_out").exists(), "nothing built");

    let out = Command::new(pto)
        .args(["package", MODEL, "--check"])
        .arg(&dir)
        .output()
        .expect("pto runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("matches model `decoder-block`"));

    let out = Command::new(pto)
        .args(["package", MODEL, "--device", "kirinx90", "--check"])
        .arg(&dir)
        .output()
        .expect("pto runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("is for ascend910b, not kirinx90"),
        "{stderr}"
    );
}

/// Every file of the package in `dir`, by path.
fn package_files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, files: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).expect("readable") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                walk(root, &path, files);
            } else {
                let name = path
                    .strip_prefix(root)
                    .expect("inside")
                    .display()
                    .to_string();
                files.insert(name, std::fs::read(&path).expect("readable"));
            }
        }
    }
    let mut files = BTreeMap::new();
    walk(dir, dir, &mut files);
    files
}

/// The 910B2 is a 910B at 1.8 GHz: `pto package --device ascend910b2` writes the 910B's
/// package, whose kernels compile on the host and, run by `ascendc-host` on the 910B2
/// profile, match the CPU.
#[test]
fn the_910b2_packages_as_the_910b_and_its_kernels_pass_host_parity() {
    let root = scratch("ascend910b2");
    let dir = root.join("b2");
    let out = Command::new(env!("CARGO_BIN_EXE_pto"))
        .args(["package", MODEL, "--device", "ascend910b2", "-o"])
        .arg(&dir)
        .output()
        .expect("pto runs");
    assert!(out.status.success(), "{out:?}");
    let model = packaged_model();
    let manifest = write_package(&model, Soc::Ascend910B, &root.join("b")).expect("written");
    assert_eq!(manifest.soc, "ascend910b");
    assert_eq!(package_files(&dir), package_files(&root.join("b")));
    compile_kernels(&dir, &manifest);

    let shipped = package::with_package_kernels(&model, &dir).expect("the model's package");
    let b2 = pto_op::DeviceProfile::builtin("ascend910b2").expect("built in");
    let host = compile(&shipped, TargetConfig::new("ascendc-host").on(b2)).expect("compiles");
    let cpu = compile(&shipped, "cpu").expect("compiles");
    for seed in [0, 1] {
        let parity = compare_compiled(&host, &cpu, &host.random_inputs(seed)).expect("runs");
        assert!(parity.passed(), "{parity}");
    }
}

#[test]
fn target_kirin_fails_at_once_without_a_device_runtime() {
    let pto = env!("CARGO_BIN_EXE_pto");
    let empty = scratch("no-runtime");
    let out = Command::new(pto)
        .args(["run", "decoder-block", "--target", "kirin"])
        .env(pto_backends::kirin::RUNTIME_ENV, &empty)
        .output()
        .expect("pto runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    for part in [
        "no device runtime",
        "libhiai_foundation.so",
        "libneural_network_core.so",
        "libascendcl.so",
        &empty.display().to_string(),
    ] {
        assert!(stderr.contains(part), "{part:?} not in:\n{stderr}");
    }
    assert!(out.stdout.is_empty(), "no result printed");
}

#[test]
fn the_910b_package_declares_its_mix_kernels_workspace_and_kernel_type() {
    let dir = scratch("ascend910b").join("pkg");
    let manifest = write_package(&packaged_model(), Soc::Ascend910B, &dir).expect("written");
    let op = |name: &str| {
        manifest
            .ops
            .iter()
            .find(|o| o.op == name)
            .unwrap_or_else(|| panic!("{name} packaged"))
    };
    // Flash attention hands three f32 [64, 64] tiles between the cube and the vector cores:
    // three 16 KiB slots per launched block.
    let attention = &op("demo.flash_attention").tilings[0];
    assert_eq!(attention.kernel_type, "KERNEL_TYPE_MIX_AIC_1_2");
    assert_eq!(
        attention.workspace_bytes,
        3 * 64 * 64 * 4 * u64::from(attention.block_dim)
    );
    let rms = &op("demo.rms_norm").tilings[0];
    assert_eq!(
        (rms.kernel_type.as_str(), rms.workspace_bytes),
        ("KERNEL_TYPE_AIV_ONLY", 0)
    );
    let host = read(&dir, "op_host/demo_flash_attention.cpp");
    // The current template's tiling (asc-devkit docs/zh/guide/编程指南/高级编程/
    // Aclnn算子工程化开发/Host侧Tiling实现/使用标准CPP语法定义Tiling结构体.md): the struct
    // filled through GetTilingData<T>(), then the launch.
    let save = format!(
        "pto_package::SetLaunch(context, {}u, {}u)",
        attention.block_dim, attention.workspace_bytes
    );
    assert!(host.contains(&save), "{save:?} not in:\n{host}");
    assert!(
        host.contains("context->GetTilingData<DemoFlashAttentionTilingData>()"),
        "{host}"
    );
    let kernel = read(&dir, "op_kernel/demo_flash_attention.cpp");
    assert!(kernel.contains("KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);"));
    // The manifest round-trips the new fields.
    let text = read(&dir, MANIFEST_FILE);
    let back: Manifest = serde_json::from_str(&text).expect("the manifest parses");
    assert_eq!(back, manifest);
    compile_kernels(&dir, &manifest);
    // op_host compiles against the stand-ins of the CANN headers.
    let stubs = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/package_stubs");
    let compiler = std::env::var("CXX").unwrap_or_else(|_| "g++".to_owned());
    let output = Command::new(&compiler)
        .args([
            "-std=c++17",
            "-fsyntax-only",
            "-Wall",
            "-Wextra",
            "-x",
            "c++",
        ])
        .arg("-I")
        .arg(&stubs)
        .arg("-I")
        .arg(stubs.join("nlohmann"))
        .arg("-I")
        .arg(dir.join("op_host"))
        .arg(dir.join("op_host/demo_flash_attention.cpp"))
        .output()
        .unwrap_or_else(|e| panic!("running {compiler}: {e}"));
    assert!(
        output.status.success(),
        "op_host does not compile:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
