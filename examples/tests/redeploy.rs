//! Redeploying an edited kernel of a package (feature `device`): a text edit (the flash
//! attention's query block halved) is checked and deployed, the next run uses it; broken edits
//! are refused and change nothing; an Ascend C edit is compiled, checked and marked; and a
//! redeploy killed with SIGKILL at any point leaves the old package or the new one, never a
//! mix.
//!
//! The kill test's rounds: `PTO_REDEPLOY_KILL_ROUNDS` (default 12).

#![cfg(feature = "device")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pto_backends::ascendc::Soc;
use pto_backends::ascendc::package::{
    KernelOrigin, MANIFEST_FILE, RedeployError, RedeployOptions, check_package, read_manifest,
    redeploy, with_package_kernels, write_package,
};
use pto_backends::compiler::{KernelSource, NodeRuns, compile};
use pto_backends::parity::compare_compiled;
use pto_op::target::TargetConfig;
use pto_op::{DType, DeviceProfile, Graph, Model, Shape, Tensor};
// Links the example ops and models into this test.
use pto_examples as _;

mod kernel_edits;
use kernel_edits::flash_block_32;

/// A fresh directory under the target's temp dir, removed first if a previous run left it.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("redeploy-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Every file of the package in `dir` but its editable kernel texts (`*.pto`), by path.
fn deployed_files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, files: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).expect("readable") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                walk(root, &path, files);
            } else if path.extension().is_none_or(|e| e != "pto") {
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

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).expect("readable")
}

/// `demo.rms_norm` over `[64, 64]` f32 in one block of 64 rows, or (`rows` 32) in two of 32.
fn rms_norm_rows(text: &str, rows: usize) -> String {
    let (grid, from, to) = match rows {
        32 => ("grid 2", "[64, ", "[32, "),
        _ => ("grid 1", "[32, ", "[64, "),
    };
    text.lines()
        .map(|line| {
            let line = if line.starts_with("kernel ") {
                format!("{} {grid}", line.rsplitn(3, ' ').nth(2).unwrap_or(line))
            } else if line.starts_with('%') {
                let at = |l: String| {
                    l.replace(&format!("{from}64]@"), &format!("{to}64]@"))
                        .replace(&format!("{from}1]@"), &format!("{to}1]@"))
                };
                let load = match rows {
                    32 => line.replace("load @0[0, 0]", "load @0[pid * 32, 0]"),
                    _ => line.replace("load @0[pid * 32, 0]", "load @0[0, 0]"),
                };
                at(load)
            } else if line.starts_with("store") {
                match rows {
                    32 => line.replace("@2[0, 0]", "@2[pid * 32, 0]"),
                    _ => line.replace("@2[pid * 32, 0]", "@2[0, 0]"),
                }
            } else {
                line.to_owned()
            };
            line + "\n"
        })
        .collect()
}

fn rms_norm_model() -> Model {
    let graph = Graph::new();
    let x = graph.input("x", Shape::from([64, 64]), DType::F32);
    let gain = graph
        .weight("g", Tensor::random(Shape::from([64]), DType::F32, 5))
        .expect("weight");
    let y = pto_examples::rms_norm::apply(&x, &gain, &pto_examples::rms_norm::Params { eps: 1e-6 })
        .expect("traced");
    graph.output(&y);
    graph.to_model("norm").expect("model")
}

/// The simulator on the 910B's profile: the flash attention's package is the 910B's (Kirin
/// has no float cube path), and its kernels are sized for that SoC.
fn sim_910b() -> TargetConfig {
    TargetConfig::new("sim").on(DeviceProfile::builtin("ascend910b").expect("a built-in profile"))
}

#[test]
fn an_edited_flash_attention_block_is_redeployed_and_the_next_run_uses_it() {
    let model = pto_examples::models::decoder_block::build().expect("builds");
    let node = model
        .graph
        .nodes
        .iter()
        .position(|n| n.op == "demo.flash_attention")
        .expect("an attention");
    let dir = scratch("flash").join("pkg");
    write_package(&model, Soc::Ascend910B, &dir).expect("packaged");
    let text_file = dir.join("op_kernel/demo_flash_attention.pto");
    let manifest = read_manifest(&dir).expect("a manifest");
    let packaged = manifest.op("demo.flash_attention").expect("packaged");
    assert!(
        packaged
            .files
            .contains_key("op_kernel/demo_flash_attention.pto")
    );
    assert_eq!(packaged.kernel_origin, KernelOrigin::Lowered);
    assert!(read(&text_file).contains(&packaged.kernels[0].text));

    // As packaged: the package's kernels run, unedited.
    let before = compile(
        &with_package_kernels(&model, &dir).expect("matches"),
        sim_910b(),
    )
    .expect("compiles");
    assert_eq!(
        before.report().nodes[node].runs,
        NodeRuns::Kernel {
            grid: 1,
            source: KernelSource::Shipped
        }
    );
    let inputs = before.random_inputs(7);
    let cycles_before = before.run(&inputs).expect("runs").node_times[node].cycles;

    // Nothing edited: nothing to do, nothing written.
    let files = deployed_files(&dir);
    let report = redeploy(&dir, &RedeployOptions::default()).expect("a no-op");
    assert!(report.ops.is_empty());
    assert!(report.to_string().starts_with("nothing to redeploy"));
    assert_eq!(deployed_files(&dir), files);

    // The edit: half the query block.
    std::fs::write(&text_file, flash_block_32(&read(&text_file))).expect("edited");
    let report = redeploy(&dir, &RedeployOptions::default()).expect("deployed");
    assert_eq!(report.ops.len(), 1);
    let op = &report.ops[0];
    assert_eq!(op.op, "demo.flash_attention");
    assert!(op.parity.iter().any(|c| c.starts_with("sim: ")), "{report}");
    assert!(
        op.parity.iter().any(|c| c.starts_with("ascendc-host: ")),
        "{report}"
    );
    let times = &op.instances[0];
    assert_eq!(Some(times.cycles_before), cycles_before);
    assert_ne!(times.cycles_after, times.cycles_before);
    let text = report.to_string();
    assert!(
        text.contains(&format!(
            "{} cycles ({:.2} us) -> {} cycles",
            times.cycles_before,
            times.seconds_before * 1e6,
            times.cycles_after
        )),
        "{text}"
    );
    // Every file of the op switched: the kernel, its tiling, op_host's tiling values.
    let after = deployed_files(&dir);
    for file in [
        "op_kernel/demo_flash_attention.cpp",
        "op_kernel/demo_flash_attention_tiling.h",
        "op_host/demo_flash_attention.cpp",
        MANIFEST_FILE,
    ] {
        assert_ne!(after[file], files[file], "{file} is regenerated");
    }
    for file in ["op_kernel/demo_rms_norm.cpp", "op_host/demo_swiglu.cpp"] {
        assert_eq!(after[file], files[file], "{file} is another op's");
    }
    check_package(&model, &dir).expect("still the model's package");

    // The next run uses it: the report says so, the time is the redeploy's, parity holds.
    let edited = with_package_kernels(&model, &dir).expect("matches");
    let compiled = compile(&edited, sim_910b()).expect("compiles");
    assert_eq!(
        compiled.report().nodes[node].runs,
        NodeRuns::Kernel {
            grid: 2,
            source: KernelSource::ShippedEdited
        }
    );
    assert!(
        compiled
            .report()
            .to_string()
            .contains("kernel: shipped (edited), grid 2")
    );
    let run = compiled.run(&inputs).expect("runs");
    assert_eq!(run.node_times[node].cycles, Some(times.cycles_after));
    let cpu = compile(&edited, "cpu").expect("compiles");
    let parity = compare_compiled(&compiled, &cpu, &inputs).expect("runs");
    assert!(parity.passed(), "{parity}");
    let deployed = deployed_files(&dir);

    // A broken edit: refused with the file, line and column; nothing changes; the deployed
    // kernel still runs.
    let good = read(&text_file);
    std::fs::write(&text_file, good.replace("unary exp", "unary expp")).expect("broken");
    let err = redeploy(&dir, &RedeployOptions::default()).expect_err("refused");
    let message = err.to_string();
    assert!(matches!(err, RedeployError::Kernel { .. }), "{message}");
    assert!(
        message.contains("op_kernel/demo_flash_attention.pto`: kernel 0")
            && message.contains("line 30, column 31: unknown unary function `expp`"),
        "{message}"
    );
    assert_eq!(deployed_files(&dir), deployed);

    // An edit that parses but computes something else: parity refuses it.
    std::fs::write(
        &text_file,
        good.replace("binary mul %14, 0.125", "binary mul %14, 0.25"),
    )
    .expect("wrong");
    let err = redeploy(&dir, &RedeployOptions::default()).expect_err("refused");
    assert!(matches!(err, RedeployError::Parity { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("parity of `demo.flash_attention` (sim vs cpu) failed"),
        "{err}"
    );
    assert_eq!(deployed_files(&dir), deployed);

    // A query block of 128 rows: the kernel no longer fits the instance's types.
    std::fs::write(
        &text_file,
        good.replace("[32, 64]@l1 = load @0", "[128, 64]@l1 = load @0"),
    )
    .expect("too big");
    let err = redeploy(&dir, &RedeployOptions::default()).expect_err("refused");
    assert!(matches!(err, RedeployError::Kernel { .. }), "{err}");
    assert_eq!(deployed_files(&dir), deployed);

    let rerun = compile(
        &with_package_kernels(&model, &dir).expect("matches"),
        sim_910b(),
    )
    .expect("compiles")
    .run(&inputs)
    .expect("runs");
    assert_eq!(rerun.node_times[node].cycles, Some(times.cycles_after));
    assert_eq!(rerun.outputs, run.outputs);
    // Only the package is left beside it: no staging or previous copies.
    assert_eq!(
        std::fs::read_dir(dir.parent().expect("a parent"))
            .expect("readable")
            .count(),
        1
    );
}

#[test]
fn an_edited_ascend_c_kernel_is_compiled_checked_shipped_and_marked() {
    let model = rms_norm_model();
    let dir = scratch("ascend-c").join("pkg");
    write_package(&model, Soc::Kirin9030, &dir).expect("packaged");
    let cpp_file = dir.join("op_kernel/demo_rms_norm.cpp");
    let text_file = dir.join("op_kernel/demo_rms_norm.pto");
    let cpp = read(&cpp_file);
    let epsilon = "Adds(t6, t5, 1e-6f, 1024);";
    assert!(cpp.contains(epsilon), "{cpp}");

    // A hand edit that breaks the C++: the compiler's message, nothing changes.
    let files = deployed_files(&dir);
    std::fs::write(&cpp_file, cpp.replace(epsilon, "Adds(t6, t5, 1e-6f, 1024)")).expect("edited");
    let err = redeploy(&dir, &RedeployOptions::default()).expect_err("refused");
    assert!(matches!(err, RedeployError::Host { .. }), "{err}");
    assert!(err.to_string().contains("demo_rms_norm.cpp"), "{err}");
    let mut unchanged = deployed_files(&dir);
    unchanged.insert(
        "op_kernel/demo_rms_norm.cpp".to_owned(),
        files["op_kernel/demo_rms_norm.cpp"].clone(),
    );
    assert_eq!(unchanged, files);

    // A hand edit that compiles but computes something else: host parity refuses it.
    std::fs::write(
        &cpp_file,
        cpp.replace(epsilon, "Adds(t6, t5, 1e-1f, 1024);"),
    )
    .expect("edited");
    let err = redeploy(&dir, &RedeployOptions::default()).expect_err("refused");
    assert!(
        err.to_string()
            .contains("parity of `demo.rms_norm` (ascendc-host vs cpu) failed"),
        "{err}"
    );
    assert_eq!(
        read_manifest(&dir).expect("read").ops[0].kernel_origin,
        KernelOrigin::Lowered
    );

    // A hand edit that holds: shipped, and marked.
    let tuned = cpp.replace(epsilon, "Adds(t6, t5, 1e-6f, 1024);  // tuned by hand");
    std::fs::write(&cpp_file, &tuned).expect("edited");
    let report = redeploy(&dir, &RedeployOptions::default()).expect("deployed");
    let op = &report.ops[0];
    assert_eq!(op.origin, KernelOrigin::EditedAscendC);
    assert!(op.parity.iter().all(|c| c.starts_with("ascendc-host: ")));
    assert!(!op.parity.is_empty());
    assert!(
        op.notes[0].contains("no longer describes the deployed kernel"),
        "{report}"
    );
    let manifest = read_manifest(&dir).expect("read");
    assert_eq!(manifest.ops[0].kernel_origin, KernelOrigin::EditedAscendC);
    assert_eq!(read(&cpp_file), tuned);

    // The next text edit says so, and replaces the hand edit only when asked.
    let text = read(&text_file);
    std::fs::write(&text_file, rms_norm_rows(&text, 32)).expect("edited");
    let err = redeploy(&dir, &RedeployOptions::default()).expect_err("refused");
    assert!(matches!(err, RedeployError::AscendCEdited { .. }), "{err}");
    assert!(err.to_string().contains("--replace-ascend-c"), "{err}");
    let options = RedeployOptions {
        replace_ascend_c: true,
        ..RedeployOptions::default()
    };
    let report = redeploy(&dir, &options).expect("deployed");
    assert_eq!(report.ops[0].origin, KernelOrigin::Lowered);
    assert!(report.ops[0].notes[0].contains("was replaced"), "{report}");
    assert!(!read(&cpp_file).contains("tuned by hand"));
    assert_ne!(
        report.ops[0].instances[0].cycles_after,
        report.ops[0].instances[0].cycles_before
    );
}

/// The environment variable that makes [`redeploy_child`] run: the package directory.
const CHILD_DIR: &str = "PTO_REDEPLOY_CHILD_DIR";

/// Not a test of its own: the child process of the kill test. It alternates the package's
/// `demo.rms_norm` kernel between blocks of 32 and 64 rows, redeploying each, until killed.
/// Replaces `path` by a FIFO (by `mkfifo`).
fn fifo_in_place_of(path: &Path) {
    std::fs::remove_file(path).expect("removed");
    let status = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

#[test]
fn a_fifo_in_place_of_the_kernel_text_is_refused_by_name_not_blocked_on() {
    let dir = scratch("fifo-text").join("pkg");
    write_package(&rms_norm_model(), Soc::Kirin9030, &dir).expect("packaged");
    let text_file = dir.join("op_kernel/demo_rms_norm.pto");
    fifo_in_place_of(&text_file);
    // A regression would block on opening the FIFO: the watchdog fails it instead.
    let (sender, receiver) = std::sync::mpsc::channel();
    let package = dir.clone();
    std::thread::spawn(move || {
        let _ = sender.send(redeploy(&package, &RedeployOptions::default()).map(|_| ()));
    });
    let result = receiver
        .recv_timeout(Duration::from_secs(30))
        .expect("the redeploy blocked on the FIFO for 30 s");
    let err = result.expect_err("a FIFO is no kernel text").to_string();
    assert!(
        err.contains("reading the kernel source")
            && err.contains(&text_file.display().to_string())
            && err.contains("a FIFO (named pipe)"),
        "{err}"
    );
}

#[test]
#[ignore = "the kill test's child process"]
fn redeploy_child() {
    let Some(dir) = std::env::var_os(CHILD_DIR).map(PathBuf::from) else {
        return;
    };
    let text_file = dir.join("op_kernel/demo_rms_norm.pto");
    loop {
        for rows in [32, 64] {
            let text = read(&text_file);
            std::fs::write(&text_file, rms_norm_rows(&text, rows)).expect("edited");
            redeploy(&dir, &RedeployOptions::default()).expect("deployed");
        }
    }
}

#[test]
fn a_redeploy_killed_at_any_point_leaves_the_old_or_the_new_package() {
    let rounds: u32 = std::env::var("PTO_REDEPLOY_KILL_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    let root = scratch("kill");
    let dir = root.join("pkg");
    write_package(&rms_norm_model(), Soc::Kirin9030, &dir).expect("packaged");
    let text_file = dir.join("op_kernel/demo_rms_norm.pto");
    let original_text = read(&text_file);

    // The package's possible states: as written, after the 32-row edit, after the edit back.
    let expected_copy = root.join("expected");
    write_package(&rms_norm_model(), Soc::Kirin9030, &expected_copy).expect("packaged");
    let copy_text = expected_copy.join("op_kernel/demo_rms_norm.pto");
    let mut states = vec![deployed_files(&expected_copy)];
    let started = Instant::now();
    for rows in [32, 64] {
        std::fs::write(&copy_text, rms_norm_rows(&read(&copy_text), rows)).expect("edited");
        redeploy(&expected_copy, &RedeployOptions::default()).expect("deployed");
        states.push(deployed_files(&expected_copy));
    }
    let one_redeploy = started.elapsed() / 2;
    assert_ne!(states[0], states[1]);
    assert_ne!(states[1], states[2]);

    let mut seen = [0u32; 3];
    for round in 0..rounds {
        let mut child = Command::new(std::env::current_exe().expect("the test binary"))
            .args(["--exact", "redeploy_child", "--ignored", "--test-threads=1"])
            .env(CHILD_DIR, &dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the child starts");
        // Kill points spread over about six redeploys, after the child's start-up; the
        // last round waits for a redeploy to land first, so the child is seen to work.
        let delay = Duration::from_millis(30) + one_redeploy * 6 * round / rounds.max(1);
        std::thread::sleep(delay);
        if round + 1 == rounds {
            let manifest = read(&dir.join(MANIFEST_FILE));
            let waiting = Instant::now();
            while read(&dir.join(MANIFEST_FILE)) == manifest
                && waiting.elapsed() < Duration::from_secs(120)
            {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        child.kill().expect("SIGKILL");
        child.wait().expect("reaped");
        let files = deployed_files(&dir);
        let state = states.iter().position(|s| *s == files).unwrap_or_else(|| {
            // Each file's matching states: a mix has files of different states.
            let by_file: Vec<(&String, Vec<usize>)> = files
                .keys()
                .map(|k| {
                    let matching = (0..states.len())
                        .filter(|&i| states[i].get(k) == files.get(k))
                        .collect::<Vec<_>>();
                    (k, matching)
                })
                .filter(|(_, matching)| matching.len() < states.len())
                .collect();
            panic!(
                "round {round} (killed after {delay:?}): the package is no state it can \
                     be in; the states each file matches: {by_file:?}"
            )
        });
        seen[state] += 1;
        // The deployed kernel is whole and runs.
        let model = with_package_kernels(&rms_norm_model(), &dir).expect("a whole package");
        compile(&model, "sim").expect("compiles");
        // The user's file may have been cut mid-write by the kill: restore a whole one.
        std::fs::write(&text_file, &original_text).expect("restored");
    }
    assert!(
        seen[1] + seen[2] > 0,
        "no redeploy of the child landed: {seen:?}"
    );
    // Litter of killed runs (staging copies) may stay beside the package, never inside it.
    for entry in std::fs::read_dir(&root).expect("readable") {
        let name = entry.expect("an entry").file_name();
        let name = name.to_string_lossy();
        assert!(
            name == "pkg" || name == "expected" || name.starts_with(".pkg."),
            "{name}"
        );
    }
    eprintln!(
        "kill test: {rounds} rounds; package states seen (as written, after the 32-row edit, \
         after the edit back; a state equal to an earlier one is counted there): {seen:?}"
    );
}

/// The code blocks of `docs/redeploying.md`'s worked example, in order: (language, text).
fn worked_example_blocks() -> Vec<(String, String)> {
    let page = include_str!("../../docs/redeploying.md");
    let start = page
        .find("## Redeploying an edited package: a worked example")
        .expect("the worked example's heading");
    let end = start
        + page[start..]
            .find("\n## ")
            .expect("a heading after the worked example");
    let mut blocks = Vec::new();
    let mut lines = page[start..end].lines();
    while let Some(line) = lines.next() {
        if let Some(language) = line.strip_prefix("```") {
            let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
            blocks.push((language.to_owned(), body.join("\n")));
        }
    }
    blocks
}

/// Runs a command of the docs (`pto ...`) in `dir` with the built binary; its stdout and
/// stderr, one after the other.
fn pto_in(dir: &Path, command: &str) -> String {
    let args = command
        .strip_prefix("pto ")
        .unwrap_or_else(|| panic!("not a pto command: {command}"));
    let out = Command::new(env!("CARGO_BIN_EXE_pto"))
        .args(args.split_whitespace())
        .current_dir(dir)
        .env_remove("PTO_DEVICE")
        .env_remove("PTO_TARGET")
        .output()
        .expect("the binary runs");
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// Every line of a quoted output block but the `...` elisions is a line of `output`, in
/// order.
fn assert_quoted(block: &str, output: &str, what: &str) {
    let mut rest = output.lines();
    for line in block.lines().filter(|l| l.trim() != "...") {
        assert!(
            rest.any(|l| l == line),
            "docs/redeploying.md is stale: {what} quotes\n{line}\nwhich is not (in this order) \
             in its output:\n{output}"
        );
    }
}

/// `docs/redeploying.md`'s worked example, run as written: each `sh` block's commands in a
/// fresh directory, each quoted output checked against what they print now, the diff against
/// the edit (`flash_block_32`), and the two refused edits (the typo `expp`, the scores scaled
/// by 0.25) against their `$ pto redeploy` blocks.
#[test]
fn the_docs_worked_example_prints_what_it_quotes() {
    let dir = scratch("docs-example");
    let kernel = dir.join("decoder_pkg/op_kernel/demo_flash_attention.pto");
    let mut output = String::new();
    let mut original = String::new();
    let mut good = String::new();
    // The edits the `$ pto redeploy` blocks refuse, in the page's order.
    let mut refused: &[(&str, &str)] = &[
        ("unary exp", "unary expp"),
        ("binary mul %14, 0.125", "binary mul %14, 0.25"),
    ];
    let mut checked = 0;
    for (language, block) in worked_example_blocks() {
        match language.as_str() {
            "sh" => {
                output = block.lines().map(|c| pto_in(&dir, c.trim())).collect();
            }
            "text" if block.starts_with(" // instance") => {
                // The edit, as a diff: `-` lines are the packaged kernel's, `+` lines the
                // edited one's, the others both's.
                original = read(&kernel);
                good = flash_block_32(&original);
                for line in block.lines().filter(|l| l.trim() != "...") {
                    let (texts, text): (&[&str], &str) = match line.split_at(1) {
                        ("-", text) => (&[&original], text),
                        ("+", text) => (&[&good], text),
                        (_, text) => (&[&original, &good], text),
                    };
                    for t in texts {
                        assert!(t.lines().any(|l| l == text), "the diff's `{line}`:\n{t}");
                    }
                }
                std::fs::write(&kernel, &good).expect("edited");
            }
            "text" if block.starts_with("$ pto ") => {
                let (command, quoted) = block.split_once('\n').expect("a command and its output");
                let ((from, to), next) = refused.split_first().expect("an edit for each");
                refused = next;
                assert!(good.contains(from), "{from}");
                std::fs::write(&kernel, good.replacen(from, to, 1)).expect("broken");
                assert_quoted(quoted, &pto_in(&dir, &command[2..]), command);
            }
            "text" => assert_quoted(&block, &output, "an output block"),
            other => panic!("a `{other}` block in the worked example"),
        }
        checked += 1;
    }
    assert!(!original.is_empty(), "the page shows the edit");
    assert!(refused.is_empty(), "the page shows both refused edits");
    assert_eq!(checked, 9, "the worked example's blocks");
}
