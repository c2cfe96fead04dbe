//! The graph compiler refuses models that no longer fit the linked ops, and says why.

use pto_backends::compiler::{CompileError, compile};
use pto_examples::{gelu_affine, rms_norm};
use pto_op::prelude::*;
use pto_op::schema::TensorSchema;
use pto_op::{AttrType, Fingerprint, Model};

fn model() -> Model {
    let graph = Graph::new();
    let x = graph.input("x", Shape::from([4, 32]), DType::F32);
    let gamma = graph
        .weight("gamma", Tensor::random([32], DType::F32, 1))
        .expect("a new weight name");
    let y = gelu_affine::apply(&x, &gelu_affine::Params::default()).expect("a valid call");
    let z = rms_norm::apply(&y, &gamma, &rms_norm::Params::default()).expect("a valid call");
    graph.output(&z);
    graph.to_model("tiny").expect("linked ops")
}

#[test]
fn an_op_whose_param_changed_type_is_named_with_the_change() {
    // A model built when `scale` was an f64: its schema and its node say so.
    let mut old = model();
    let schema = old.schemas.get_mut("demo.gelu_affine").unwrap();
    schema.params[0].ty = AttrType::F64;
    old.graph.nodes[0].fingerprint =
        Fingerprint::of_signature("demo.gelu_affine(x) -> (y) params(scale: f64, bias: f32)");
    let err = compile(&old, "cpu").unwrap_err();
    assert!(matches!(err, CompileError::SchemaChanged { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "op `demo.gelu_affine` changed since the model was built: param `scale` was f64, \
         is now f32; rebuild (re-export) the model against the linked op, or link the op's \
         old version"
    );
}

#[test]
fn every_kind_of_signature_change_is_listed() {
    let mut old = model();
    let schema = old.schemas.get_mut("demo.rms_norm").unwrap();
    schema.version = 0;
    schema.inputs[1].name = "weight".into();
    schema.outputs.push(TensorSchema::named("inv_rms"));
    schema.params[0].name = "epsilon".into();
    let err = compile(&old, "sim").unwrap_err();
    assert_eq!(
        err.to_string(),
        "op `demo.rms_norm` changed since the model was built: version was 0, is now 1; \
         input 1 was `weight`, is now `gamma`; output `inv_rms` was removed; \
         param `epsilon: f32` was removed; param `eps: f32` was added; rebuild (re-export) \
         the model against the linked op, or link the op's old version"
    );
}

#[test]
fn a_node_traced_against_another_signature_is_refused() {
    let mut old = model();
    old.graph.nodes[1].fingerprint = Fingerprint(7);
    let err = compile(&old, "cpu").unwrap_err();
    assert!(
        err.to_string().starts_with(
            "op `demo.rms_norm` changed since the model was built: node 1 was traced against \
             version 1 (fingerprint 0000000000000007)"
        ),
        "{err}"
    );
}

#[test]
fn recorded_types_are_checked_against_the_ops_rules() {
    let mut old = model();
    let y = old.graph.nodes[0].outputs[0];
    old.graph.values[y].ty.dtype = DType::F16;
    let err = compile(&old, "cpu").unwrap_err();
    assert_eq!(
        err.to_string(),
        "model `tiny`: node 0 (`demo.gelu_affine`): value `n0.y` is recorded as f16[4, 32], \
         but the op's rules now give f32[4, 32]"
    );
    // The next node's rules then see inputs they reject.
    let mut old = model();
    let x = old.graph.inputs[0];
    old.graph.values[x].ty.shape = Shape::from([4, 16]);
    let err = compile(&old, "cpu").unwrap_err();
    assert_eq!(
        err.to_string(),
        "model `tiny`: node 0 (`demo.gelu_affine`): value `n0.y` is recorded as f32[4, 32], \
         but the op's rules now give f32[4, 16]"
    );
}

#[test]
fn unknown_ops_and_targets_are_named() {
    let mut old = model();
    old.graph.nodes[1].op = "demo.rms_nrom".into();
    let err = compile(&old, "cpu").unwrap_err();
    assert_eq!(
        err.to_string(),
        "model `tiny`: node 1: no op named `demo.rms_nrom` is registered; did you mean \
         demo.rms_norm?"
    );
    let err = compile(&model(), "npu").unwrap_err();
    assert!(
        err.to_string().starts_with("no execution target `npu`"),
        "{err}"
    );
}

/// Imported nodes keep their ONNX names (`NodeDef::name`): every error about a node gives
/// the name beside the index, so a user finds the node in the file they imported.
#[test]
fn errors_about_a_named_node_give_its_name() {
    let named = |edit: &dyn Fn(&mut Model)| {
        let mut m = model();
        m.graph.nodes[0].name = "act".into();
        m.graph.nodes[1].name = "norm".into();
        edit(&mut m);
        compile(&m, "cpu").unwrap_err().to_string()
    };
    assert_eq!(
        named(&|m| m.graph.nodes[1].op = "demo.rms_nrom".into()),
        "model `tiny`: node 1 `norm`: no op named `demo.rms_nrom` is registered; did you mean \
         demo.rms_norm?"
    );
    let y = model().graph.nodes[0].outputs[0];
    assert_eq!(
        named(&|m| m.graph.values[y].ty.dtype = DType::F16),
        "model `tiny`: node 0 `act` (`demo.gelu_affine`): value `n0.y` is recorded as \
         f16[4, 32], but the op's rules now give f32[4, 32]"
    );
    assert_eq!(
        named(&|m| {
            m.schemas.remove("demo.rms_norm");
        }),
        "model `tiny`: node 1 `norm` calls `demo.rms_norm`, but the model records no schema of it"
    );
    let stale = named(&|m| m.graph.nodes[0].version += 1);
    assert!(
        stale.contains("node 0 `act` was traced against version"),
        "{stale}"
    );

    let graph = Graph::new();
    let x = graph.input("x", Shape::from([4, 32]), DType::F32);
    let (mean, _rstd) = pto_examples::moments::apply(&x, &pto_examples::moments::Params::default())
        .expect("a valid call");
    graph.output(&mean);
    let mut model = graph.to_model("moments").expect("linked ops");
    model.graph.nodes[0].name = "stats".into();
    assert_eq!(
        compile(&model, "kernels-only").unwrap_err().to_string(),
        "model `moments`: node 0 `stats`: op `demo.moments` has no kernel, and target \
         `kernels-only` has no fallback to run its reference"
    );
}

/// A target that runs kernels only: the simulator, without a fallback.
struct KernelsOnly(pto_backends::sim::Sim);

impl Executor for KernelsOnly {
    fn target(&self) -> &str {
        "kernels-only"
    }

    fn execute(
        &self,
        op: &'static pto_op::OpDef,
        inputs: &[&Tensor],
        attrs: &Attributes,
    ) -> Result<pto_op::Execution, OpError> {
        self.0.execute(op, inputs, attrs)
    }

    fn prepare(
        &self,
        op: &'static pto_op::OpDef,
        inputs: &[pto_op::TensorType],
        attrs: &Attributes,
    ) -> Result<pto_op::Lowering, OpError> {
        self.0.prepare(op, inputs, attrs)
    }
}

#[pto_op::__private::linkme::distributed_slice(pto_op::__private::TARGETS)]
#[linkme(crate = pto_op::__private::linkme)]
static KERNELS_ONLY: pto_op::target::TargetDef = pto_op::target::TargetDef {
    name: "kernels-only",
    description: "the simulator without a fallback",
    make: |device| Box::new(KernelsOnly(pto_backends::sim::Sim::on(device))),
    source: pto_op::source_location!(),
};

#[test]
fn an_op_without_a_kernel_needs_the_targets_fallback() {
    let graph = Graph::new();
    let x = graph.input("x", Shape::from([4, 32]), DType::F32);
    let (mean, _rstd) = pto_examples::moments::apply(&x, &pto_examples::moments::Params::default())
        .expect("a valid call");
    graph.output(&mean);
    let model = graph.to_model("moments").expect("linked ops");

    // The simulator's fallback is the CPU reference.
    let compiled = compile(&model, "sim").expect("compiles");
    assert_eq!(compiled.report().fallbacks, ["demo.moments"]);
    compiled.run(&compiled.random_inputs(0)).expect("runs");

    let err = compile(&model, "kernels-only").unwrap_err();
    assert!(matches!(err, CompileError::NoFallback { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "model `moments`: node 0: op `demo.moments` has no kernel, and target `kernels-only` \
         has no fallback to run its reference"
    );
}

#[test]
fn a_target_configuration_picks_the_device_from_the_api() {
    use pto_op::target::TargetConfig;
    let model = model();
    let inputs = compile(&model, "cpu").unwrap().random_inputs(1);
    let simulated = |config: TargetConfig| -> f64 {
        let compiled = compile(&model, config).expect("compiles");
        let result = compiled.run(&inputs).expect("runs");
        result.node_times.iter().map(|t| t.seconds).sum()
    };
    let ascend = DeviceProfile::builtin("ascend910b").unwrap();
    let kirin = DeviceProfile::builtin("kirin9030").unwrap();
    let on_ascend = simulated(TargetConfig::new("sim").on(ascend));
    let on_kirin = simulated(TargetConfig::new("sim").on(kirin));
    assert_eq!(
        simulated(TargetConfig::new("sim")),
        on_kirin,
        "kirin9030 is the default"
    );
    assert_ne!(on_ascend, on_kirin);
}

#[test]
fn a_broken_graph_is_refused_with_the_graphs_own_check() {
    // A node reading a value before any node produces it: the node order is not topological.
    let mut old = model();
    old.graph.nodes.swap(0, 1);
    let err = compile(&old, "cpu").unwrap_err();
    let CompileError::InvalidGraph { source, .. } = &err else {
        panic!("expected an invalid graph, got {err}");
    };
    assert_eq!(old.graph.validate().unwrap_err(), *source);
    assert_eq!(
        err.to_string(),
        "model `tiny`: invalid graph: node 0 (`demo.rms_norm`) input 0 reads value 2 `n0.y` \
         before anything produces it"
    );

    // An output id past the values.
    let mut old = model();
    old.graph.outputs.push(99);
    let err = compile(&old, "cpu").unwrap_err();
    assert!(
        err.to_string()
            .ends_with("graph output 1 refers to value 99, but the graph has 4 values (ids 0..4)"),
        "{err}"
    );
}

/// The names of a model (its own, its inputs', its values') come from a file: the
/// compiler's and the runner's errors show them escaped (issue 31 item 11).
#[test]
fn names_in_compile_and_run_errors_are_escaped() {
    let graph = Graph::new();
    let x = graph.input("x\u{202e}", Shape::from([2, 4]), DType::F32);
    graph.output(&pto_op::ops::neg::apply(&x, &Default::default()).expect("traces"));
    let model = graph.to_model("m\u{1b}[2J").expect("a model");
    let compiled = compile(&model, "cpu").expect("compiles");
    let error = compiled
        .run(&[Tensor::zeros(Shape::from([3]), DType::F32)])
        .unwrap_err()
        .to_string();
    assert_eq!(
        error,
        "model `m\\u{1b}[2J`: input `x\\u{202e}`: expected f32[2, 4], got f32[3]"
    );
}

/// A kernel that does not cover a node's params (std.softmax's kernel takes the last axis;
/// one over axis 0 runs on the fallback) is said to be refused, with the kernel's own reason,
/// on `sim` as on `ascendc-host`: it was reported as "fallback: no kernel".
#[test]
fn sim_says_why_a_kernel_does_not_cover_a_node() {
    let g = Graph::new();
    let x = g.input("x", Shape::from([4, 8]), DType::F32);
    let y = pto_op::ops::softmax::apply(&x, &pto_op::ops::softmax::Params { axis: 0 }).unwrap();
    g.output(&y);
    let model = g.to_model("softmax_axis0").unwrap();
    let compiled = compile(&model, "sim").expect("compiles, the softmax on the fallback");
    let report = compiled.report();
    let reason = report.nodes[0]
        .declined
        .as_deref()
        .expect("the kernel's reason is kept");
    assert!(
        reason.contains("the kernel takes the last axis"),
        "{reason}"
    );
    let text = report.to_string();
    assert!(
        text.contains("reference (fallback: kernel refused, see below)")
            && text.contains(&format!(
                "node 0 `std.softmax`: the sim lowering refused the op's kernel: {reason}"
            )),
        "{text}"
    );
}

/// A kernel whose tiles do not fit the device's buffers (a softmax row of 16,384 f32 on
/// kirin9030's 118 KiB UB) is refused when the model compiles for `sim`, with the error its
/// run gives: compile used to report success and only `run` failed.
#[test]
fn compile_refuses_a_kernel_over_the_buffers_with_the_error_run_gives() {
    use pto_op::target::TargetConfig;
    let g = Graph::new();
    let x = g.input("x", Shape::from([4, 16384]), DType::F32);
    let y = pto_op::ops::softmax::apply(&x, &pto_op::ops::softmax::Params { axis: -1 }).unwrap();
    g.output(&y);
    let model = g.to_model("wide_softmax").unwrap();
    let kirin = DeviceProfile::builtin("kirin9030").expect("built in");
    let Err(err) = compile(&model, TargetConfig::new("sim").on(kirin.clone())) else {
        panic!("a softmax row of 16,384 f32 compiled for kirin9030's UB");
    };
    let err = err.to_string();
    assert!(
        err.contains("op `std.softmax`")
            && err.contains("exceeds the kirin9030 limit of 120832 bytes"),
        "{err}"
    );
    // What a run of the kernel on the simulator says, called directly.
    let sim = pto_backends::sim::Sim::new(kirin);
    let input = Tensor::zeros([4, 16384], DType::F32);
    let Err(run_err) = pto_op::Executor::execute(
        &sim,
        pto_op::ops::softmax::def(),
        &[&input],
        &pto_op::ops::softmax::Params { axis: -1 }.to_attributes(),
    ) else {
        panic!("a softmax row of 16,384 f32 ran in kirin9030's UB");
    };
    let run_err = run_err.to_string();
    let detail = run_err
        .split_once("inst ")
        .map(|(_, rest)| rest)
        .expect("the run's error names the instruction");
    assert!(err.contains(detail), "compile: {err}\nrun: {run_err}");
    // A width that fits compiles and runs.
    let g = Graph::new();
    let x = g.input("x", Shape::from([4, 1024]), DType::F32);
    g.output(&pto_op::ops::softmax::apply(&x, &Default::default()).unwrap());
    let model = g.to_model("softmax").unwrap();
    let kirin = DeviceProfile::builtin("kirin9030").expect("built in");
    compile(&model, TargetConfig::new("sim").on(kirin)).expect("fits");
}
