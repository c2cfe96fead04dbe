//! Kernels shipped with a model: the model file and ONNX carry each kernel instance in its
//! text form, a compiled model runs them (the report says so), an edited one runs as edited,
//! and one whose key no longer matches the linked op is refused.

use pto_backends::compiler::{CompileError, KernelSource, NodeRuns, compile};
use pto_backends::parity::compare_compiled;
use pto_op::{Fingerprint, Model};
// Links the example ops and models into this test.
use pto_examples as _;

mod kernel_edits;
use kernel_edits::flash_block_32;

fn decoder_block() -> Model {
    pto_examples::models::decoder_block::build().expect("the decoder block builds")
}

fn flash_node(model: &Model) -> usize {
    model
        .graph
        .nodes
        .iter()
        .position(|n| n.op == "demo.flash_attention")
        .expect("the block has an attention")
}

#[test]
fn a_saved_model_ships_its_kernels_and_runs_them() {
    let model = decoder_block();
    assert!(model.kernels.is_empty(), "a traced model ships nothing yet");
    let loaded = Model::from_bytes(&model.to_bytes().expect("saves")).expect("loads");
    // One per distinct (op, input types, params): rms_norm, matmul, flash_attention, add,
    // swiglu.
    let mut ops: Vec<&str> = loaded.kernels.iter().map(|k| k.op.as_str()).collect();
    ops.sort_unstable();
    assert_eq!(
        ops,
        [
            "demo.flash_attention",
            "demo.rms_norm",
            "demo.swiglu",
            "std.add",
            "std.matmul"
        ]
    );
    assert!(loaded.kernels.iter().all(|k| !k.edited()));
    let from_onnx =
        pto_onnx::from_onnx(&pto_onnx::to_onnx(&model).expect("exports")).expect("imports");
    assert_eq!(from_onnx.kernels, loaded.kernels);

    let compiled = compile(&loaded, "sim").expect("compiles");
    let report = compiled.report();
    assert_eq!((report.kernels_traced, report.kernels_shipped), (0, 5));
    for node in &report.nodes {
        assert!(
            matches!(
                node.runs,
                NodeRuns::Kernel {
                    source: KernelSource::Shipped,
                    ..
                }
            ),
            "{node:?}"
        );
    }
    assert!(report.to_string().contains("kernel: shipped (grid 1)"));
    // The shipped kernels are the linked ones, traced: the same outputs and times.
    let inputs = compiled.random_inputs(3);
    let fresh = compile(&model, "sim").expect("compiles");
    let (a, b) = (
        compiled.run(&inputs).expect("runs"),
        fresh.run(&inputs).expect("runs"),
    );
    assert_eq!(a.outputs, b.outputs);
    assert_eq!(a.node_times, b.node_times);
}

#[test]
fn an_edited_shipped_kernel_runs_as_edited_through_the_model_file_and_onnx() {
    let model = decoder_block();
    let node = flash_node(&model);
    let mut shipped = model.with_traced_kernels();
    let kernel = shipped
        .kernels
        .iter_mut()
        .find(|k| k.op == "demo.flash_attention")
        .expect("shipped");
    kernel.text = flash_block_32(&kernel.text);
    assert!(kernel.edited());

    for loaded in [
        Model::from_bytes(&shipped.to_bytes().expect("saves")).expect("loads"),
        pto_onnx::from_onnx(&pto_onnx::to_onnx(&shipped).expect("exports")).expect("imports"),
    ] {
        let compiled = compile(&loaded, "sim").expect("compiles");
        let report = compiled.report();
        assert_eq!(
            report.nodes[node].runs,
            NodeRuns::Kernel {
                grid: 2,
                source: KernelSource::ShippedEdited
            }
        );
        assert_eq!((report.kernels_shipped, report.kernels_edited), (5, 1));
        assert!(
            report
                .to_string()
                .contains("demo.flash_attention kernel: shipped (edited), grid 2"),
            "{report}"
        );
        let reference = compile(&loaded, "cpu").expect("compiles");
        let inputs = compiled.random_inputs(1);
        let parity = compare_compiled(&compiled, &reference, &inputs).expect("runs");
        assert!(parity.passed(), "{parity}");
        let edited = compiled.run(&inputs).expect("runs").node_times[node].clone();
        let original = compile(&model, "sim")
            .expect("compiles")
            .run(&inputs)
            .expect("runs")
            .node_times[node]
            .clone();
        assert_ne!(edited.cycles, original.cycles, "the edit changes the time");
    }
}

#[test]
fn a_shipped_kernel_that_no_longer_fits_the_linked_op_is_refused() {
    let model = decoder_block().with_traced_kernels();
    let node = flash_node(&model);
    let at = model
        .kernels
        .iter()
        .position(|k| k.op == "demo.flash_attention")
        .expect("shipped");

    // The op's signature changed since the kernel was shipped.
    let mut changed = model.clone();
    changed.kernels[at].fingerprint = Fingerprint(0x1234);
    let err = compile(&changed, "sim").expect_err("refused");
    assert!(matches!(err, CompileError::ShippedKernel { node: n, .. } if n == node));
    let message = err.to_string();
    assert!(
        message.contains("traced against fingerprint 0000000000001234")
            && message.contains("re-export the model"),
        "{message}"
    );

    // An edit that does not parse: the line and column.
    let mut broken = model.clone();
    broken.kernels[at].text = broken.kernels[at].text.replace("unary exp", "unary expp");
    let message = compile(&broken, "sim").expect_err("refused").to_string();
    assert!(
        message.contains("the kernel text does not parse: line 26, column 31: unknown unary"),
        "{message}"
    );

    // An edit of another instance's types.
    let mut other = model.clone();
    other.kernels[at].text = other.kernels[at]
        .text
        .replace("global @0 q: f32[64, 64]", "global @0 q: f32[32, 64]");
    let message = compile(&other, "sim").expect_err("refused").to_string();
    assert!(message.contains("does not fit the instance"), "{message}");

    // The CPU reference needs no kernel: the model still runs there.
    compile(&broken, "cpu").expect("the cpu target runs references");
}

/// `demo.rope` sizes its grid from the core count. Exported, its kernel is traced without a
/// device (grid 1); loaded and compiled for a multi-core profile, the unedited kernel is
/// traced again for the device and runs with the grid the op's own kernel gets, while an
/// edited one runs as written.
#[test]
fn an_unedited_shipped_kernel_is_traced_for_the_target_device() {
    use pto_op::prelude::*;
    use pto_op::target::TargetConfig;

    let graph = Graph::new();
    let x = graph.input("x", Shape::from([256, 64]), DType::F32);
    let params = pto_examples::rope::Params {
        base: 10000.0,
        seq_len: 0,
    };
    let y = pto_examples::rope::apply(&x, &params).expect("rope traces");
    graph.output(&y);
    let model = graph.to_model("rope").expect("the model builds");
    let loaded = Model::from_bytes(&model.to_bytes().expect("saves")).expect("loads");
    assert_eq!(loaded.kernels.len(), 1);
    assert!(
        loaded.kernels[0]
            .text
            .starts_with("kernel demo.rope grid 1"),
        "traced without a device: {}",
        loaded.kernels[0].text.lines().next().unwrap_or_default()
    );

    let ascend = pto_op::DeviceProfile::builtin("ascend910b").expect("built in");
    assert!(ascend.ai_cores >= 2, "a multi-core profile");
    let grid = |model: &Model| {
        let compiled =
            compile(model, TargetConfig::new("sim").on(ascend.clone())).expect("compiles");
        compiled.report().nodes[0].runs
    };
    let NodeRuns::Kernel { grid: own, .. } = grid(&model) else {
        panic!("rope runs its kernel");
    };
    assert!(own > 1, "the op's own kernel on ascend910b: grid {own}");
    assert_eq!(
        grid(&loaded),
        NodeRuns::Kernel {
            grid: own,
            source: KernelSource::Shipped
        }
    );

    // An edit (here, of layout only) runs as written: grid 1.
    let mut edited = loaded.clone();
    edited.kernels[0].text.push('\n');
    assert!(edited.kernels[0].edited());
    assert_eq!(
        grid(&edited),
        NodeRuns::Kernel {
            grid: 1,
            source: KernelSource::ShippedEdited
        }
    );
}

/// A model of two `demo.rope` nodes of one instance, exported and loaded, lowered on `sim`
/// (ascend910b) through an executor that counts the shipped programs it prepares: one
/// instance, one preparation (check, trace for the device, timing), two shipped nodes.
#[test]
fn a_shipped_kernel_is_prepared_once_per_instance() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use pto_backends::compiler::{check_types, lower, resolve};
    use pto_backends::sim::Sim;
    use pto_op::kernel::ValidProgram;
    use pto_op::prelude::*;
    use pto_op::{Attributes, DeviceProfile, Execution, Executor, Lowering, OpDef, TensorType};

    struct Counting {
        sim: Sim,
        programs: AtomicUsize,
    }

    impl Executor for Counting {
        fn target(&self) -> &str {
            "counting-sim"
        }

        fn execute(
            &self,
            op: &'static OpDef,
            inputs: &[&Tensor],
            attrs: &Attributes,
        ) -> Result<Execution, OpError> {
            self.sim.execute(op, inputs, attrs)
        }

        fn device_profile(&self) -> Option<&DeviceProfile> {
            self.sim.device_profile()
        }

        fn runs_programs(&self) -> bool {
            true
        }

        fn prepare_program(
            &self,
            op: &'static OpDef,
            inputs: &[TensorType],
            attrs: &Attributes,
            program: &ValidProgram,
        ) -> Result<Option<Lowering>, OpError> {
            self.programs.fetch_add(1, Ordering::Relaxed);
            self.sim.prepare_program(op, inputs, attrs, program)
        }
    }

    let graph = Graph::new();
    let params = pto_examples::rope::Params {
        base: 10000.0,
        seq_len: 0,
    };
    for name in ["q", "k"] {
        let x = graph.input(name, Shape::from([256, 64]), DType::F32);
        graph.output(&pto_examples::rope::apply(&x, &params).expect("rope traces"));
    }
    let model = graph.to_model("two_ropes").expect("the model builds");
    let loaded = Model::from_bytes(&model.to_bytes().expect("saves")).expect("loads");
    assert_eq!(loaded.kernels.len(), 1, "one instance ships one kernel");

    let executor = Counting {
        sim: Sim::new(DeviceProfile::builtin("ascend910b").expect("built in")),
        programs: AtomicUsize::new(0),
    };
    let ops = resolve(&loaded).expect("resolves");
    let types = check_types(&loaded, &ops).expect("checks");
    let lowered = lower(&loaded, &executor, &ops, &types).expect("lowers");
    assert_eq!(executor.programs.load(Ordering::Relaxed), 1);
    assert_eq!(lowered.shipped, 1);
    assert!(
        lowered.runs.iter().all(|runs| matches!(
            runs,
            NodeRuns::Kernel {
                grid: 2..,
                source: KernelSource::Shipped
            }
        )),
        "{:?}",
        lowered.runs
    );
}

/// A shipped kernel edited to a grid or a loop of 2^32 or 2^64 is refused at compile, and
/// by `pto run` and `pto compile` on the model file, with the work budget's error naming
/// the op and the grid or the loop: it neither runs for ever nor overflows a count.
#[test]
fn a_shipped_kernel_edited_past_the_work_budget_is_refused() {
    let model = pto_examples::models::pipeline::build()
        .expect("the pipeline builds")
        .with_traced_kernels();
    let at = model
        .kernels
        .iter()
        .position(|k| k.op == "demo.gelu_affine")
        .expect("shipped");
    // `kernel demo.gelu_affine grid 2`, then the globals, then the body.
    let text = model.kernels[at].text.clone();
    let (header, rest) = text.split_once('\n').expect("a header line");
    let body_at = rest.find("\n%").expect("a body") + 1;
    let in_loop = format!(
        "{header}\n{}loop i0 in 0..18446744073709551615 {{\n{}}}\n",
        &rest[..body_at],
        &rest[body_at..]
    );
    let regrid = |grid: &str| text.replacen(header, &header.replace("grid 2", grid), 1);
    let dir = std::env::temp_dir().join(format!("pto-work-budget-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    for (edit, expected) in [
        (
            regrid("grid 18446744073709551615"),
            "the kernel does too much work: grid 18446744073709551615 x 8 instruction(s) per \
             block program is more than 18446744073709551615 instruction executions",
        ),
        (
            regrid("grid 4294967296"),
            "the kernel does too much work: grid 4294967296 x 8 instruction(s) per block \
             program is 34359738368 instruction executions",
        ),
        (
            in_loop,
            "inst 0 (loop): the kernel does too much work: loop i0 in \
             0..18446744073709551615 x 8 instruction(s) per iteration x 2 run(s) of the loop",
        ),
    ] {
        let mut edited = model.clone();
        edited.kernels[at].text = edit;
        let message = compile(&edited, "sim").expect_err("refused").to_string();
        assert!(
            message.contains("op `demo.gelu_affine`")
                && message.contains(expected)
                && message.contains("over the kernel work budget of 268435456"),
            "{message}"
        );
        let path = dir.join("edited.pto");
        std::fs::write(&path, edited.to_bytes().expect("saves")).expect("writes");
        let path = path.to_str().expect("a UTF-8 path");
        for verb in ["run", "compile"] {
            let error = pto_cli::run(["pto", verb, path, "--target", "sim"])
                .expect_err("refused")
                .to_string();
            assert!(error.contains(expected), "{verb}: {error}");
        }
    }
    std::fs::remove_dir_all(&dir).expect("removes the scratch directory");
}

/// A kernel text with the instruction defining `%{tile}` deleted and its uses reading
/// `%{instead}`: the later ids keep their numbers, leaving a gap at `%{tile}`.
fn without_instruction(text: &str, tile: usize, instead: usize) -> String {
    let (defined, used) = (format!("%{tile}:"), format!("%{tile}"));
    let edited: String = text
        .lines()
        .filter(|line| !line.trim_start().starts_with(&defined))
        .map(|line| {
            let words: Vec<String> = line
                .split(' ')
                .map(|word| match word.strip_suffix(',') {
                    Some(w) if w == used => format!("%{instead},"),
                    _ if word == used => format!("%{instead}"),
                    _ => word.to_owned(),
                })
                .collect();
            words.join(" ") + "\n"
        })
        .collect();
    assert_eq!(
        edited.lines().count() + 1,
        text.lines().count(),
        "one line deleted"
    );
    edited
}

#[test]
fn a_shipped_kernel_with_an_instruction_deleted_runs_with_the_same_result() {
    let model = decoder_block();
    let mut shipped = model.with_traced_kernels();
    let kernel = shipped
        .kernels
        .iter_mut()
        .find(|k| k.op == "demo.rms_norm")
        .expect("shipped");
    // The gamma tile is f32 already: its cast to f32 copies it, so the product can read
    // the loaded tile (%2) and the cast (%3) goes, leaving %4..%10 as numbered.
    let cast = "%3: f32[64]@ub = cast %2";
    assert!(kernel.text.contains(cast), "{}", kernel.text);
    let edited = without_instruction(&kernel.text, 3, 2);
    assert!(!edited.contains("%3") && edited.contains("%10"), "{edited}");
    kernel.text = edited;
    assert!(kernel.edited());

    let dir = std::env::temp_dir().join(format!("pto-gap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let (original, gapped) = (dir.join("original.pto"), dir.join("gapped.pto"));
    std::fs::write(&original, model.to_bytes().expect("saves")).expect("writes");
    std::fs::write(&gapped, shipped.to_bytes().expect("saves")).expect("writes");
    let path = |file: &std::path::Path| file.to_str().expect("a UTF-8 path").to_owned();
    let pto = |args: &[&str]| {
        pto_cli::run(std::iter::once("pto").chain(args.iter().copied()))
            .unwrap_or_else(|e| panic!("pto {args:?}: {e}"))
    };
    let report = pto(&["compile", &path(&gapped), "--target", "sim"]);
    let norms: Vec<&str> = report
        .lines()
        .filter(|line| line.contains("demo.rms_norm"))
        .collect();
    assert!(
        !norms.is_empty()
            && norms
                .iter()
                .all(|line| line.contains("kernel: shipped (edited), grid 1")),
        "{report}"
    );
    // Every output value, written by `pto run --outputs`, is the same.
    let outputs = |model: &std::path::Path| {
        let written = dir.join("outputs.safetensors");
        pto(&[
            "run",
            &path(model),
            "--target",
            "sim",
            "--outputs",
            &path(&written),
        ]);
        std::fs::read(&written).expect("written")
    };
    assert_eq!(
        outputs(&gapped),
        outputs(&original),
        "the same outputs with the copy deleted"
    );
    std::fs::remove_dir_all(&dir).expect("removes the temp dir");
}
