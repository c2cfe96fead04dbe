//! Any operator crate deploys without touching the framework: a package's C ABI library is
//! built from the package's own `capi/` crate, which links the crates defining its ops.
//!
//! The scratch crate is made as `scripts/new-op-crate-check` makes one (the crate
//! docs/new-op-crate.md builds, `examples/template`), in a temporary directory outside the
//! workspace, its path dependencies pointed at this checkout. Its own `pto` packages its
//! model; the package's `capi/build.sh` builds the library; a C program calls it for the
//! crate's op. Nothing in the package names a directory of the machine that made it.
#![cfg(feature = "device")]

use std::path::{Path, PathBuf};
use std::process::Command;

use pto_backends::ascendc::Soc;
use pto_backends::ascendc::package::{PackageError, read_manifest, write_package};
use pto_op::prelude::*;
// Links the example ops and models into this test.
use pto_examples as _;

/// An op defined in a test, not a library crate: no C ABI library can link it.
#[custom_op(name = "testonly.negate")]
pub mod negate {
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
        Ok(Tensor::from_array(x.to_f32_array().mapv(|v| -v)).cast(x.dtype()))
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pto-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// The checkout this test belongs to.
fn checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("examples/ is in the checkout")
        .to_path_buf()
}

#[test]
fn a_package_of_an_op_outside_a_library_crate_is_refused_naming_the_op() {
    let graph = Graph::new();
    let x = graph.input("x", Shape::from([4, 8]), DType::F32);
    let y = negate::apply(&x, &Default::default()).expect("traces");
    let z = pto_examples::gelu_affine::apply(&y, &Default::default()).expect("traces");
    graph.output(&z);
    let model = graph.to_model("negated").expect("builds");
    let dir = scratch("capi-refused");
    let err = write_package(&model, Soc::Ascend910B, &dir.join("pkg")).expect_err("refused");
    assert!(
        matches!(err, PackageError::OpsOutsideALibrary { ref ops } if ops.len() == 1),
        "{err}"
    );
    let message = err.to_string();
    assert!(
        message.contains("`testonly.negate` (examples/tests/capi_crate.rs:")
            && message.contains("would not answer for them")
            && !message.contains("demo.gelu_affine"),
        "{message}"
    );
    assert!(!dir.join("pkg").exists(), "nothing written");
    std::fs::remove_dir_all(&dir).expect("removes the scratch directory");
}

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("reads the directory") {
        let path = entry.expect("an entry").path();
        match path.is_dir() {
            true => out.extend(files(&path)),
            false => out.push(path),
        }
    }
    out
}

fn run(command: &mut Command, what: &str) -> String {
    let output = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        output.status.success(),
        "{what}: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The C program: the library answers for the scratch crate's op (its fingerprint, its shape
/// rule: l2_normalize keeps the shape), for a standard op, and not for an op it does not link.
const PROGRAM: &str = r#"
#include <inttypes.h>
#include <stdio.h>
#include "pto_capi.h"

int main(void) {
    char error[256] = {0};
    uint64_t fingerprint = 0;
    if (pto_op_fingerprint("myops.l2_normalize", &fingerprint, error, sizeof error) != PTO_OK) {
        printf("fingerprint failed: %s\n", error);
        return 1;
    }
    printf("fingerprint %016" PRIx64 "\n", fingerprint);
    PtoShape in = {2, {32, 64}};
    PtoShape out[2];
    size_t n = 0;
    int32_t status = pto_infer_shapes("myops.l2_normalize", &in, 1, "{\"eps\":{\"f32\":1e-06}}",
                                      out, 2, &n, error, sizeof error);
    if (status != PTO_OK) {
        printf("infer failed %d: %s\n", status, error);
        return 1;
    }
    printf("shape %zu %u %" PRId64 " %" PRId64 "\n", n, out[0].rank, out[0].dims[0], out[0].dims[1]);
    printf("relu %d\n", pto_op_fingerprint("std.relu", &fingerprint, error, sizeof error));
    printf("demo %d\n", pto_op_fingerprint("demo.rms_norm", &fingerprint, error, sizeof error));
    return 0;
}
"#;

#[test]
fn a_scratch_crate_outside_the_workspace_deploys_its_own_op() {
    let root = checkout();
    let dir = scratch("capi-crate");
    let krate = dir.join("my-ops");
    // The template is the crate docs/new-op-crate.md builds; its path dependencies point at
    // this checkout, as the guide's `cargo add --path "$PTO/..."` does.
    for file in ["Cargo.toml", "src/lib.rs", "src/model.rs", "src/main.rs"] {
        let text = std::fs::read_to_string(root.join("examples/template").join(file))
            .expect("the template");
        let text = text.replace("../../", &format!("{}/", root.display()));
        let path = krate.join(file);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(&path, text).expect("writes");
    }
    std::fs::copy(root.join("Cargo.lock"), krate.join("Cargo.lock")).expect("the lock file");
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let cargo = || {
        let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
        cargo
            .env("CARGO_TARGET_DIR", &target)
            .env("CARGO_NET_OFFLINE", "true")
            .env_remove("RUSTFLAGS");
        cargo
    };

    let package = dir.join("pkg");
    let pto_package = |extra: &[&str], crate_dir: &Path, out: &Path| {
        let mut command = cargo();
        command
            .current_dir(&krate)
            .args(["run", "--quiet", "--features", "device", "--"])
            .args(["package", "my-ops-demo", "--device", "ascend910b"])
            .args(extra)
            .arg("-o")
            .arg(out)
            .env("PTO_CRATE_MY_OPS", crate_dir)
            .env("PTO_CARGO_PROFILE", "dev");
        command
    };
    run(
        &mut pto_package(&[], &krate, &package),
        "the crate's pto package",
    );
    // Nothing in the package names this machine's directories.
    let home = std::env::var("HOME").unwrap_or_default();
    let machine: Vec<String> = [root.display().to_string(), dir.display().to_string(), home]
        .into_iter()
        .filter(|p| p.len() > 1)
        .collect();
    for file in files(&package) {
        let text = String::from_utf8_lossy(&std::fs::read(&file).expect("reads")).into_owned();
        for path in &machine {
            assert!(
                !text.contains(path.as_str()),
                "{} names `{path}`",
                file.display()
            );
        }
    }
    // `--capi`: the package's library built and asked for every op's fingerprint (building
    // writes capi/Cargo.toml from this machine's directories: a build product, as build_out/).
    let packaged = run(
        &mut pto_package(&["--capi"], &krate, &package),
        "the crate's pto package --capi",
    );
    assert!(
        packaged.contains("libpto_capi_my_ops_demo.so` answers for every op"),
        "{packaged}"
    );
    let lib_rs = std::fs::read_to_string(package.join("capi/src/lib.rs")).expect("capi");
    assert!(lib_rs.contains("use my_ops as _;"), "{lib_rs}");

    // The package's library, built from its own crate.
    let built = run(
        Command::new("bash")
            .arg(package.join("capi/build.sh"))
            .env("PTO_SOURCE", &root)
            .env("PTO_CRATE_MY_OPS", &krate)
            .env("PTO_CARGO_PROFILE", "dev")
            .env("CARGO_TARGET_DIR", &target)
            .env("CARGO_NET_OFFLINE", "true")
            .env_remove("RUSTFLAGS"),
        "capi/build.sh",
    );
    let library = PathBuf::from(built.lines().last().expect("the library's path"));
    assert!(
        library.ends_with("libpto_capi_my_ops_demo.so") && library.is_file(),
        "{built}"
    );

    let program = dir.join("check.c");
    std::fs::write(&program, PROGRAM).expect("writes");
    let exe = dir.join("check");
    let lib_dir = library.parent().expect("a directory");
    run(
        Command::new("cc")
            .arg(&program)
            .arg("-I")
            .arg(package.join("op_host"))
            .arg("-L")
            .arg(lib_dir)
            .arg("-lpto_capi_my_ops_demo")
            .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
            .arg("-o")
            .arg(&exe),
        "cc",
    );
    let answer = run(&mut Command::new(&exe), "the C program");
    let manifest = read_manifest(&package).expect("the manifest");
    let op = manifest
        .ops
        .iter()
        .find(|op| op.op == "myops.l2_normalize")
        .expect("packaged");
    // The fingerprint the package was made with; the shape l2_normalize keeps; std.relu from
    // pto-op (PTO_OK = 0); an op the library does not link (PTO_UNKNOWN_OP = 2, pto_capi.h).
    assert_eq!(
        answer,
        format!(
            "fingerprint {:016x}\nshape 1 2 32 64\nrelu 0\ndemo 2\n",
            op.fingerprint.0
        )
    );

    // The library built from another crate of that name, whose op is not this package's:
    // `pto package --capi` refuses, naming the op.
    let other = dir.join("other");
    for file in ["Cargo.toml", "src/lib.rs", "src/model.rs", "src/main.rs"] {
        let text = std::fs::read_to_string(krate.join(file)).expect("the crate");
        let path = other.join(file);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        std::fs::write(
            &path,
            text.replace("myops.l2_normalize", "myops.l2_normalize_old"),
        )
        .expect("writes");
    }
    std::fs::copy(krate.join("Cargo.lock"), other.join("Cargo.lock")).expect("the lock file");
    let refused = cargo()
        .current_dir(&krate)
        .args(["run", "--quiet", "--features", "device", "--"])
        .args([
            "package",
            "my-ops-demo",
            "--device",
            "ascend910b",
            "--capi",
            "-o",
        ])
        .arg(dir.join("pkg2"))
        .env("PTO_CRATE_MY_OPS", &other)
        .env("PTO_CARGO_PROFILE", "dev")
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(
        stderr.contains("does not answer for every op of the package: `myops.l2_normalize` (status 2: PTO_UNKNOWN_OP"),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).expect("removes the scratch directory");
}
