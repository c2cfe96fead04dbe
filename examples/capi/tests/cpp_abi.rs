//! The examples' C ABI library, `libpto_examples_capi.so`, called from C++ exactly as a
//! package's op_host calls it (through the generated `<stem>_infer.h` headers), for every op
//! of the decoder block, against the Rust `infer`; and a refused input whose message comes
//! back across the ABI. Needs a C++ compiler (`CXX`, else `g++`), hence the feature `device`.

#![cfg(feature = "device")]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use pto_backends::ascendc::package::{cpp_literal, inference_sources, stem_name};
use pto_op::{Attributes, TensorType};

/// The library's file name.
const LIBRARY: &str = "libpto_examples_capi.so";

/// [`LIBRARY`] as cargo built it for this test (beside the test binary, or one up).
fn capi_library_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe.parent().expect("in a directory").to_path_buf();
    [
        deps.clone(),
        deps.parent().map(PathBuf::from).unwrap_or(deps),
    ]
    .into_iter()
    .find(|d| d.join(LIBRARY).is_file())
    .unwrap_or_else(|| panic!("cargo builds {LIBRARY} (crate-type cdylib) next to the test"))
}

/// Compiles `dir/main.cpp` (headers in `dir/op_host`) against the library and runs it;
/// returns its output.
fn compile_and_run(dir: &Path) -> String {
    let lib = capi_library_dir();
    let compiler = std::env::var("CXX").unwrap_or_else(|_| "g++".to_owned());
    let built = Command::new(&compiler)
        .args([
            "-std=c++17",
            "-Wall",
            "-Wextra",
            "-Werror",
            "main.cpp",
            "-Iop_host",
            "-o",
            "main",
        ])
        .arg(format!("-L{}", lib.display()))
        .arg("-lpto_examples_capi")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("running {compiler}: {e} (scripts/test installs g++)"));
    assert!(
        built.status.success(),
        "main.cpp does not build:\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let run = Command::new(dir.join("main")).output().expect("main runs");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    String::from_utf8_lossy(&run.stdout).into_owned()
}

fn shape_init(types: &[TensorType]) -> String {
    types
        .iter()
        .map(|t| {
            let dims = t.shape.dims();
            format!(
                "{{{}, {{{}}}}}",
                dims.len(),
                if dims.is_empty() {
                    "0".to_owned()
                } else {
                    dims.iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn expected_line(k: usize, outputs: &[TensorType]) -> String {
    let shapes = outputs
        .iter()
        .map(|t| {
            let dims = t.shape.dims();
            format!(
                "{}:{}",
                dims.len(),
                dims.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            )
        })
        .collect::<Vec<_>>()
        .join(";");
    let dtypes = outputs
        .iter()
        .map(|t| t.dtype.onnx_code().to_string())
        .collect::<Vec<_>>()
        .join(",");
    format!("case {k} shapes 0 {shapes} dtypes 0 {dtypes}")
}

#[test]
fn cpp_infers_like_rust_for_every_op_of_the_decoder_block() {
    let model = pto_examples::models::decoder_block::build().expect("the block builds");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("capi-cpp");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");

    // Every distinct call of the block: op, input types, params.
    let mut cases: Vec<(&'static pto_op::OpDef, Vec<TensorType>, Attributes)> = Vec::new();
    for node in &model.graph.nodes {
        let def = pto_op::registry::find(&node.op).expect("linked");
        let inputs: Vec<TensorType> = node
            .inputs
            .iter()
            .map(|&id| model.graph.values[id].ty.clone())
            .collect();
        if !cases
            .iter()
            .any(|(d, i, a)| d.name == def.name && *i == inputs && *a == node.attrs)
        {
            cases.push((def, inputs, node.attrs.clone()));
        }
    }
    let mut headers = BTreeMap::new();
    for (def, _, _) in &cases {
        for (path, text) in inference_sources(def) {
            headers.insert(path, text);
        }
    }
    for (path, text) in &headers {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().expect("nested")).expect("dir");
        std::fs::write(&path, text).expect("header written");
    }

    let mut main = String::from("#include <cstdio>\n#include <string>\n\n");
    for (def, _, _) in &cases {
        let _ = writeln!(main, "#include \"{}_infer.h\"", stem_name(def.name));
    }
    main.push_str("\nint main()\n{\n");
    let mut expected = Vec::new();
    for (k, (def, inputs, attrs)) in cases.iter().enumerate() {
        let ns = format!("pto_package::{}", stem_name(def.name));
        let _ = writeln!(main, "    {{\n        {ns}::Params params;");
        for (name, value) in attrs {
            let _ = writeln!(main, "        params.{name}_ = {};", cpp_literal(value));
        }
        let codes = inputs
            .iter()
            .map(|t| t.dtype.onnx_code().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let _ = writeln!(
            main,
            "        PtoShape in[{ns}::kNumInputs] = {{{}}};\n        \
             int32_t codes[{ns}::kNumInputs] = {{{codes}}};\n        \
             PtoShape out[{ns}::kNumOutputs];\n        int32_t out_codes[{ns}::kNumOutputs];\n        \
             std::string error;\n        \
             const int32_t s = {ns}::InferShapes(in, params, out, &error);\n        \
             std::printf(\"case {k} shapes %d \", s);\n        \
             for (size_t o = 0; o < {ns}::kNumOutputs; ++o) {{\n            \
             std::printf(\"%s%u:\", o ? \";\" : \"\", out[o].rank);\n            \
             for (uint32_t d = 0; d < out[o].rank; ++d) {{\n                \
             std::printf(\"%s%lld\", d ? \",\" : \"\", static_cast<long long>(out[o].dims[d]));\n            }}\n        }}\n        \
             const int32_t t = {ns}::InferDtypes(codes, params, out_codes, &error);\n        \
             std::printf(\" dtypes %d \", t);\n        \
             for (size_t o = 0; o < {ns}::kNumOutputs; ++o) {{\n            \
             std::printf(\"%s%d\", o ? \",\" : \"\", out_codes[o]);\n        }}\n        \
             std::printf(\"\\n\");\n    }}",
            shape_init(inputs)
        );
        let outputs = def.infer(inputs, attrs).expect("the block's calls infer");
        expected.push(expected_line(k, &outputs));
    }
    // A refused input: rms_norm's gamma of the wrong length.
    main.push_str(
        "    {\n        pto_package::demo_rms_norm::Params params;\n        \
         PtoShape in[2] = {{2, {64, 64}}, {1, {32}}};\n        PtoShape out[1];\n        \
         std::string error;\n        \
         const int32_t s = pto_package::demo_rms_norm::InferShapes(in, params, out, &error);\n        \
         std::printf(\"error %d %s\\n\", s, error.c_str());\n    }\n    return 0;\n}\n",
    );
    std::fs::write(dir.join("main.cpp"), &main).expect("main.cpp written");

    let stdout = compile_and_run(&dir);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), expected.len() + 1, "{stdout}");
    for (line, want) in lines.iter().zip(&expected) {
        assert_eq!(line, want);
    }
    let error = lines.last().expect("the error line");
    assert!(
        error.starts_with("error 4 "),
        "PTO_REJECTED expected: {error}"
    );
    assert!(error.contains("demo.rms_norm"), "the op is named: {error}");
    assert!(error.contains("32"), "the wrong length is named: {error}");
    println!(
        "{} calls of {} ops agree; {error}",
        expected.len(),
        headers.len() - 2
    );
}

/// Every function of `pto_capi.h` is exported by the library: the version, an op's
/// fingerprint (the Rust one), and the whole-type `pto_infer`, which op_host does not call.
#[test]
fn every_function_of_the_header_is_exported() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("capi-header");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("op_host")).expect("scratch dir");
    std::fs::write(dir.join("op_host/pto_capi.h"), pto_capi::HEADER).expect("header written");
    std::fs::write(
        dir.join("main.cpp"),
        r#"#include <cinttypes>
#include <cstdio>

#include "pto_capi.h"

int main()
{
    std::printf("version %s\n", pto_capi_version());
    uint64_t fingerprint = 0;
    char error[256] = {0};
    int32_t s = pto_op_fingerprint("demo.rms_norm", &fingerprint, error, sizeof error);
    std::printf("fingerprint %d %016" PRIx64 "\n", s, fingerprint);
    s = pto_op_fingerprint("demo.nope", &fingerprint, error, sizeof error);
    std::printf("unknown %d %s\n", s, error);
    PtoTensorDesc in[2] = {{1, 2, {64, 32}}, {1, 1, {32}}};
    PtoTensorDesc out[1];
    size_t n = 0;
    s = pto_infer("demo.rms_norm", in, 2, "{\"eps\":{\"f32\":1e-6}}", out, 1, &n, error,
                  sizeof error);
    std::printf("infer %d %zu %d %u %lld %lld\n", s, n, out[0].dtype, out[0].rank,
                static_cast<long long>(out[0].dims[0]), static_cast<long long>(out[0].dims[1]));
    return 0;
}
"#,
    )
    .expect("main.cpp written");
    let stdout = compile_and_run(&dir);
    let lines: Vec<&str> = stdout.lines().collect();
    // pto-capi is of the workspace's version, as this crate.
    assert_eq!(lines[0], format!("version {}", env!("CARGO_PKG_VERSION")));
    let rms_norm = pto_op::registry::find("demo.rms_norm").expect("linked");
    assert_eq!(
        lines[1],
        format!("fingerprint 0 {}", rms_norm.fingerprint())
    );
    assert!(
        lines[2].starts_with("unknown 2 "),
        "PTO_UNKNOWN_OP: {}",
        lines[2]
    );
    assert!(lines[2].contains("demo.nope"), "{}", lines[2]);
    assert_eq!(lines[3], "infer 0 1 1 2 64 32");
}
