//! The crates' layers, as Cargo resolves them: what each crate builds below it.
//!
//! - pto-types depends on no other pto crate; pto-kernel only on pto-types; neither builds
//!   pto-op.
//! - An operator crate that uses no ONNX depends on pto-op alone, and pto-op's normal
//!   dependencies hold neither the ONNX crate nor `prost` (nor the CPU target's `gemm`).
//! - pto-capi, the C ABI library a deployment's own crate calls, depends on no operator crate.
//!
//! And within each layer crate, the targets, the command line and the examples no two files
//! depend on each other (`scripts/module-cycles`).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// The names of the packages `package` builds (normal dependencies, every feature off but the
/// defaults), itself included.
fn normal_dependencies(package: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let output = Command::new(cargo)
        .current_dir(&workspace)
        .args([
            "tree",
            "--offline",
            "-e",
            "normal",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .args(["-p", package])
        .output()
        .expect("cargo tree runs");
    assert!(
        output.status.success(),
        "cargo tree -p {package}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

fn pto_crates(deps: &BTreeSet<String>) -> Vec<&str> {
    deps.iter()
        .map(String::as_str)
        .filter(|d| d.starts_with("pto-") || *d == "my-ops")
        .collect()
}

#[test]
fn the_types_and_kernel_layers_build_nothing_above_them() {
    assert_eq!(pto_crates(&normal_dependencies("pto-types")), ["pto-types"]);
    assert_eq!(
        pto_crates(&normal_dependencies("pto-kernel")),
        ["pto-kernel", "pto-types"]
    );
}

#[test]
fn an_operator_crate_without_onnx_builds_neither_onnx_nor_prost() {
    let deps = normal_dependencies("pto-op");
    for absent in ["pto-onnx", "prost", "gemm", "pto-backends", "pto-estimator"] {
        assert!(
            !deps.contains(absent),
            "pto-op builds `{absent}`: {:?}",
            pto_crates(&deps)
        );
    }
}

#[test]
fn the_c_abi_library_depends_on_no_operator_crate() {
    let deps = normal_dependencies("pto-capi");
    let operator_crates = ["pto-examples", "pto-team-b", "my-ops"];
    let found: Vec<_> = operator_crates
        .iter()
        .filter(|c| deps.contains(**c))
        .collect();
    assert!(
        found.is_empty(),
        "pto-capi builds operator crates {found:?}"
    );
}

/// The crates whose files are checked for cycles: the layer crates, the targets, the command
/// line and the examples.
const LAYER_CRATES: &[&str] = &[
    "pto-types",
    "pto-kernel",
    "pto-op",
    "pto-op-macros",
    "pto-onnx",
    "pto-estimator",
    "pto-capi",
    "pto-backends",
    "pto-cli",
    "examples",
];

#[test]
fn no_two_files_of_a_layer_crate_depend_on_each_other() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let output = Command::new("python3")
        .arg(workspace.join("scripts/module-cycles"))
        .args(LAYER_CRATES.iter().map(|c| workspace.join(c)))
        .output()
        .expect("python3 runs scripts/module-cycles");
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
