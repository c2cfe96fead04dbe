//! A package turned against its user (issue 31, feature `device`): a package of `pipeline`
//! (gelu_affine -> rms_norm -> softmax) is written with the real `pto` binary, then tampered
//! with, and every tampering is refused by name or is harmless.
//!
//! Each `pto` run has a 60 s watchdog, so a regression that blocks (on a FIFO, say) fails
//! rather than hangs.

#![cfg(feature = "device")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use pto_backends::ascendc::package::MANIFEST_FILE;
use pto_op::model::kernels::text_digest;

/// The packaged model: three custom ops, each one instance.
const MODEL: &str = "pipeline";

/// How long one `pto` run may take before the test fails it.
const WATCHDOG: Duration = Duration::from_secs(60);

/// A fresh directory under the target's temp dir, removed first if a previous run left it.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("tampered-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// The output of `pto ARGS` run in `cwd`, killed and failed after [`WATCHDOG`].
fn pto(cwd: &Path, args: &[&str]) -> Output {
    pto_command(
        cwd,
        Command::new(env!("CARGO_BIN_EXE_pto")).args(args),
        args,
    )
}

/// The output of `command` (a `pto` run, described by `args`), under the watchdog.
fn pto_command(cwd: &Path, command: &mut Command, args: &[&str]) -> Output {
    let mut child = command
        .current_dir(cwd)
        .env_remove("PTO_DEVICE")
        .env_remove("PTO_TARGET")
        .env("XDG_CACHE_HOME", cwd.join("cache"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let started = Instant::now();
    while child.try_wait().expect("waitable").is_none() {
        if started.elapsed() > WATCHDOG {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`pto {}` ran for over {WATCHDOG:?}: killed", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("its output")
}

/// Stdout and stderr of a run, for messages and matching.
fn text(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr)
}

/// A fresh package of [`MODEL`] at `<scratch>/pkg`: the scratch directory and the package.
fn package(name: &str) -> (PathBuf, PathBuf) {
    let root = scratch(name);
    let out = pto(&root, &["package", MODEL, "-o", "pkg"]);
    assert!(out.status.success(), "pto package: {}", text(&out));
    let dir = root.join("pkg");
    (root, dir)
}

/// Edits the manifest of the package in `dir` as JSON.
fn edit_manifest(dir: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let path = dir.join(MANIFEST_FILE);
    let mut manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("readable"))
            .expect("a JSON manifest");
    edit(&mut manifest);
    std::fs::write(
        &path,
        serde_json::to_string_pretty(&manifest).expect("serialized"),
    )
    .expect("written");
}

/// Replaces `from` by `to` in the deployed kernel (the manifest's) of op number `op`;
/// with `forge_digest`, records the edited text's digest as the traced one, as a tamperer who
/// read the source would.
fn edit_deployed_kernel(dir: &Path, op: usize, from: &str, to: &str, forge_digest: bool) {
    edit_manifest(dir, |manifest| {
        let kernel = &mut manifest["ops"][op]["kernels"][0];
        let text = kernel["text"].as_str().expect("a kernel text");
        assert!(
            text.contains(from),
            "op {op}'s kernel has no `{from}`:\n{text}"
        );
        let edited = text.replace(from, to);
        if forge_digest {
            kernel["traced_digest"] = text_digest(&edited).into();
        }
        kernel["text"] = edited.into();
    });
}

/// The ops of [`MODEL`]'s package, in the manifest's order.
const GELU_AFFINE: usize = 0;
const RMS_NORM: usize = 1;

/// `demo.rms_norm`'s epsilon (1e-6 as f32) in its traced kernel.
const RMS_NORM_EPS: &str = "binary add %5, 9.999999974752427e-7";

#[test]
fn a_deployed_kernel_edited_with_a_wrong_constant_is_refused_under_kernels_with_its_parity() {
    let (root, dir) = package("wrong-constant");
    let ran = pto(
        &root,
        &["run", MODEL, "--target", "sim", "--kernels", "pkg"],
    );
    assert!(ran.status.success(), "as packaged: {}", text(&ran));
    for forge_digest in [false, true] {
        edit_deployed_kernel(
            &dir,
            RMS_NORM,
            RMS_NORM_EPS,
            "binary add %5, 0.5",
            forge_digest,
        );
        for verb in ["run", "compile"] {
            let out = pto(&root, &[verb, MODEL, "--target", "sim", "--kernels", "pkg"]);
            let message = text(&out);
            assert!(!out.status.success(), "{verb} ran the edit: {message}");
            for part in [
                "op `demo.rms_norm`, instance 0 (x=f32[64, 256], gamma=f32[256], eps=1e-6)",
                "it was edited",
                "parity of `demo.rms_norm` (sim vs cpu) failed",
                "max abs error",
                "atol 1e-5",
            ] {
                assert!(message.contains(part), "{verb}: no `{part}` in: {message}");
            }
            assert!(!message.contains("simulated"), "{verb} ran: {message}");
        }
        edit_deployed_kernel(&dir, RMS_NORM, "binary add %5, 0.5", RMS_NORM_EPS, false);
    }
}

#[test]
fn a_deployed_kernel_edited_to_an_equivalent_one_runs_after_passing_parity() {
    let (root, dir) = package("equivalent");
    // The same epsilon, written another way.
    edit_deployed_kernel(
        &dir,
        RMS_NORM,
        RMS_NORM_EPS,
        "binary add %5, 0.000001",
        false,
    );
    let out = pto(
        &root,
        &["run", MODEL, "--target", "sim", "--kernels", "pkg"],
    );
    let message = text(&out);
    assert!(out.status.success(), "{message}");
    assert!(
        message.contains(
            "op `demo.rms_norm`, instance 0 (x=f32[64, 256], gamma=f32[256], eps=1e-6): kernel \
             edited, parity passed"
        ),
        "{message}"
    );
    assert!(message.contains("demo.rms_norm"), "{message}");
    assert!(
        !message.contains("demo.gelu_affine`, instance"),
        "{message}"
    );
}

#[test]
fn check_lists_every_tampered_op() {
    let (root, dir) = package("check-all");
    let out = pto(&root, &["package", MODEL, "--check", "pkg"]);
    assert!(out.status.success(), "as packaged: {}", text(&out));
    edit_deployed_kernel(&dir, RMS_NORM, RMS_NORM_EPS, "binary add %5, 0.5", false);
    edit_deployed_kernel(
        &dir,
        GELU_AFFINE,
        "binary mul %1, 0.5",
        "binary mul %1, 2.0",
        false,
    );
    let out = pto(&root, &["package", MODEL, "--check", "pkg"]);
    let message = text(&out);
    assert!(!out.status.success(), "{message}");
    assert!(message.contains("2 problems"), "{message}");
    for op in ["demo.gelu_affine", "demo.rms_norm"] {
        assert!(
            message.contains(&format!("- the package in `pkg`: op `{op}`, instance 0")),
            "no line for {op}: {message}"
        );
        assert!(
            message.contains(&format!("parity of `{op}` (sim vs cpu) failed")),
            "{message}"
        );
    }
}
