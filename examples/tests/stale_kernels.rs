//! Stale versus edited shipped kernels: a model records, for each shipped kernel, the digest
//! of its text as traced and the digest of what the linked op traced to at export. Compile
//! and run say `kernel: shipped`, `kernel: shipped (edited)` (the text is not the one
//! traced) or `kernel: shipped (stale: the op's kernel changed since export)` (the linked
//! op now traces to another text), and `--kernels linked|shipped` decides which runs.
//!
//! A kernel changed since export is made as the model file would hold it: the file of a
//! model exported while `demo.flash_attention` traced to another kernel (the flash kernel
//! re-blocked to 32 rows, grid 2), both digests those of that text. The linked op traces to
//! its own kernel (grid 1), so that shipped kernel is stale.

use std::path::PathBuf;
use std::process::Command;

use pto_backends::compiler::{KernelSource, NodeRuns, compile};
use pto_op::Model;
use pto_op::model::Staleness;
use pto_op::model::kernels::text_digest;
// Links the example ops and models into this test.
use pto_examples as _;

mod kernel_edits;
use kernel_edits::flash_block_32;

const STALE: &str = "kernel: shipped (stale: the op's kernel changed since export), grid 2";

/// The decoder block with its kernels traced, and the index of the flash attention's kernel
/// and node.
fn shipped_block() -> (Model, usize, usize) {
    let model = pto_examples::models::decoder_block::build()
        .expect("the decoder block builds")
        .with_traced_kernels();
    let kernel = model
        .kernels
        .iter()
        .position(|k| k.op == "demo.flash_attention")
        .expect("shipped");
    let node = model
        .graph
        .nodes
        .iter()
        .position(|n| n.op == "demo.flash_attention")
        .expect("the block has an attention");
    (model, kernel, node)
}

/// The model as exported while the op traced to the re-blocked kernel.
fn exported_before_the_change() -> (Model, usize, usize) {
    let (mut model, at, node) = shipped_block();
    let kernel = &mut model.kernels[at];
    kernel.text = flash_block_32(&kernel.text);
    kernel.traced_digest = text_digest(&kernel.text);
    kernel.linked_digest = Some(kernel.traced_digest.clone());
    (model, at, node)
}

fn source_of(model: &Model, node: usize) -> NodeRuns {
    let loaded = Model::from_bytes(&model.to_bytes().expect("saves")).expect("loads");
    compile(&loaded, "sim").expect("compiles").report().nodes[node].runs
}

#[test]
fn an_export_records_what_the_linked_op_traced_to() {
    let (model, at, node) = shipped_block();
    let kernel = &model.kernels[at];
    assert_eq!(
        kernel.linked_digest.as_deref(),
        Some(&*kernel.traced_digest)
    );
    let def = pto_op::registry::find("demo.flash_attention").expect("linked");
    assert_eq!(kernel.staleness(def, None), Staleness::Current);
    let loaded = Model::from_bytes(&model.to_bytes().expect("saves")).expect("loads");
    assert_eq!(loaded.kernels[at].linked_digest, kernel.linked_digest);
    let report = compile(&loaded, "sim").expect("compiles").report().clone();
    assert_eq!(
        report.nodes[node].runs,
        NodeRuns::Kernel {
            grid: 1,
            source: KernelSource::Shipped
        }
    );
    assert_eq!((report.kernels_edited, report.kernels_stale), (0, 0));
    assert!(
        report
            .to_string()
            .contains("demo.flash_attention kernel: shipped (grid 1)"),
        "{report}"
    );
}

#[test]
fn an_edited_kernel_whose_op_did_not_change_is_edited_not_stale() {
    let (mut model, at, node) = shipped_block();
    model.kernels[at].text = flash_block_32(&model.kernels[at].text);
    assert_eq!(
        source_of(&model, node),
        NodeRuns::Kernel {
            grid: 2,
            source: KernelSource::ShippedEdited
        }
    );
    let report = compile(&model, "sim")
        .expect("compiles")
        .report()
        .to_string();
    assert!(
        report.contains("demo.flash_attention kernel: shipped (edited), grid 2")
            && report.contains("5 shipped (1 edited)"),
        "{report}"
    );
}

#[test]
fn a_kernel_the_op_no_longer_traces_to_is_stale_and_runs_as_shipped() {
    let (model, at, node) = exported_before_the_change();
    assert!(
        !model.kernels[at].edited(),
        "the text is the one traced then"
    );
    assert_eq!(
        source_of(&model, node),
        NodeRuns::Kernel {
            grid: 2,
            source: KernelSource::ShippedStale
        }
    );
    let report = compile(&model, "sim").expect("compiles").report().clone();
    assert_eq!(report.kernels_stale, 1);
    let text = report.to_string();
    assert!(
        text.contains(&format!("demo.flash_attention {STALE}")) && text.contains("(1 stale)"),
        "{text}"
    );
}

#[test]
fn an_edited_kernel_of_a_changed_op_is_both() {
    let (mut model, at, node) = exported_before_the_change();
    model.kernels[at].text.push('\n');
    assert!(model.kernels[at].edited());
    assert_eq!(
        source_of(&model, node),
        NodeRuns::Kernel {
            grid: 2,
            source: KernelSource::ShippedEditedStale
        }
    );
    let report = compile(&model, "sim")
        .expect("compiles")
        .report()
        .to_string();
    assert!(
        report.contains(
            "kernel: shipped (edited; stale: the op's kernel changed since export), grid 2"
        ) && report.contains("(1 edited, 1 stale)"),
        "{report}"
    );
}

/// A model file written before kernels recorded what the linked op traced to (no
/// `linked_digest`) loads: an unedited kernel's own text is what the op traced to, so it is
/// `shipped` or `stale` as before; an edited one reports `shipped (edited)`, its staleness
/// unknown.
#[test]
fn an_older_model_file_without_the_linked_digest_loads() {
    let older = |mut model: Model| {
        for kernel in &mut model.kernels {
            kernel.linked_digest = None;
        }
        model
    };
    let (current, _, node) = shipped_block();
    let current = older(current);
    let bytes = current.to_bytes().expect("saves");
    assert!(
        !String::from_utf8_lossy(&bytes).contains("linked_digest"),
        "written as before"
    );
    assert_eq!(
        source_of(&current, node),
        NodeRuns::Kernel {
            grid: 1,
            source: KernelSource::Shipped
        }
    );

    let (stale, at, node) = exported_before_the_change();
    let stale = older(stale);
    assert_eq!(
        source_of(&stale, node),
        NodeRuns::Kernel {
            grid: 2,
            source: KernelSource::ShippedStale
        }
    );

    let mut edited = stale.clone();
    edited.kernels[at].text.push('\n');
    let def = pto_op::registry::find("demo.flash_attention").expect("linked");
    assert_eq!(edited.kernels[at].staleness(def, None), Staleness::Unknown);
    assert_eq!(
        source_of(&edited, node),
        NodeRuns::Kernel {
            grid: 2,
            source: KernelSource::ShippedEdited
        }
    );
}

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("pto-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        Scratch(dir)
    }

    fn write(&self, name: &str, model: &Model) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, model.to_bytes().expect("saves")).expect("writes");
        path.to_str().expect("a UTF-8 path").to_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `pto` (this crate's binary) with `args`: its stdout and stderr.
fn pto(args: &[&str]) -> (String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_pto"))
        .args(args)
        .env_remove("PTO_TARGET")
        .env_remove("PTO_DEVICE")
        .output()
        .expect("pto runs");
    assert!(
        output.status.success(),
        "pto {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn flash_line(report: &str) -> &str {
    report
        .lines()
        .find(|line| line.contains("demo.flash_attention"))
        .unwrap_or_default()
}

/// `pto compile` and `pto run` say a stale kernel runs; `--kernels shipped` (the default)
/// runs it, `--kernels linked` runs the op's current kernel, with its time.
#[test]
fn the_kernels_policy_decides_which_runs() {
    let (model, _, node) = exported_before_the_change();
    let scratch = Scratch::new("stale-kernels");
    let file = scratch.write("stale.pto", &model);
    let sim = ["--target", "sim"];
    let args = |verb: &'static str, policy: &[&'static str]| -> Vec<String> {
        [verb, file.as_str()]
            .iter()
            .chain(&sim)
            .chain(policy)
            .map(|s| (*s).to_owned())
            .collect()
    };
    let run = |verb, policy: &[&'static str]| {
        let args = args(verb, policy);
        pto(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };

    for policy in [&[][..], &["--kernels", "shipped"]] {
        let (report, notes) = run("compile", policy);
        assert!(flash_line(&report).contains(STALE), "{policy:?}: {report}");
        let expected_note = format!("note: node {node} `demo.flash_attention`: {STALE}");
        assert!(notes.contains(&expected_note), "{notes}");
        let (_, notes) = run("run", policy);
        assert!(
            notes.contains(&expected_note) && notes.contains("`--kernels linked` runs"),
            "{notes}"
        );
    }

    let (report, notes) = run("compile", &["--kernels", "linked"]);
    assert!(
        flash_line(&report).contains("demo.flash_attention kernel (grid 1)")
            && report.contains("5 kernel(s) traced, no fallbacks")
            && !notes.contains("stale"),
        "{report}\n{notes}"
    );
    // The linked kernel is the op's own: the same time as the model compiled afresh.
    let times = |model: &Model| {
        let compiled = compile(model, "sim").expect("compiles");
        compiled
            .run(&compiled.random_inputs(0))
            .expect("runs")
            .node_times[node]
            .cycles
    };
    let mut linked = model.clone();
    linked.kernels.clear();
    let fresh = pto_examples::models::decoder_block::build().expect("builds");
    assert_eq!(times(&linked), times(&fresh));
    assert_ne!(
        times(&model),
        times(&fresh),
        "the stale kernel is another kernel"
    );
}

#[test]
fn a_kernels_value_that_is_no_policy_is_a_directory_or_refused() {
    let scratch = Scratch::new("kernels-value");
    let file = scratch.write("block.pto", &shipped_block().0);
    let error = pto_cli::run(["pto", "compile", &file, "--kernels", "newest"])
        .expect_err("refused")
        .to_string();
    if cfg!(feature = "device") {
        // A package directory that is not there.
        assert!(error.contains("newest"), "{error}");
    } else {
        assert!(
            error.contains("`newest` is neither `linked` nor `shipped`"),
            "{error}"
        );
    }
}
