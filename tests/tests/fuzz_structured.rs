//! Structure-aware fuzzing of everything a user hands the tools: ONNX files, model files,
//! kernel texts and `--inputs` files (issue 11 item 10).
//!
//! Byte flips (the fuzz tests of `onnx.rs`, `model_file.rs` and `inputs_file.rs`) mostly
//! break a file's framing and stop at the loader. These fuzzers decode valid seed files,
//! edit their *fields* — protobuf fields of ONNX, JSON fields of a model file's graph,
//! schemas and tensor header, kernel text tokens and lines, `--inputs` header entries and
//! element values — with interesting values (0, -1, 2^31, 2^53 + 1, 2^62, `i64::MIN`,
//! NaN, infinities, empty and duplicated names, huge counts), re-encode them, and take each
//! case as far as it goes: load, `pto inspect`, `pto estimate`, compile for cpu and sim, run
//! on both (kernel texts: validate, buffer plan, schedule, execute on the simulator; with
//! `--features device` also the Ascend C lowering). Every stage must return `Ok` or `Err`:
//! a panic is a finding (the case's seed is printed for replay), an abort or a stack
//! overflow ends the test process, a hang shows as a test that never ends.
//!
//! Runs are capped: a case runs only when the compile report's activations plus weights,
//! and every value, stay within [`RUN_CAP_BYTES`], and a kernel text's globals within
//! [`GLOBAL_ELEMENTS_CAP`]. Cases over the cap still go through load, inspect, estimate and
//! compile. Kernel work is not capped here: the process's kernel work budget is lowered to
//! [`FUZZ_WORK_BUDGET`], so validation refuses every kernel over it (that refusal is what
//! is tested) and every kernel it accepts is executed.
//!
//! `PTO_FUZZ_CASES` sets the cases per fuzzer (default [`CI_CASES`]), `PTO_FUZZ_SEED` the
//! stream; each prints its counts per stage. Run them in a debug build (overflow checks on):
//!
//! ```text
//! PTO_FUZZ_CASES=250000 cargo test -p pto-tests --test fuzz_structured -- --nocapture --test-threads 1
//! ```

mod common;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use prost::Message;
use pto_backends::compiler::{CompiledModel, compile};
use pto_backends::sim::{SimOptions, Simulator};
use pto_examples as _;
use pto_onnx::proto::{
    AttributeProto, Dimension, ModelProto, NodeProto, TensorProto, ValueInfoProto,
};
use pto_onnx::{from_onnx, to_onnx};
use pto_op::kernel::ir::Program;
use pto_op::kernel::text::ParseError;
use pto_op::kernel::text::parse;
use pto_op::kernel::validate::Rule;
use pto_op::ops;
use pto_op::prelude::*;

use common::run_cap::within_run_cap;
use pto_op::tensor::SplitMix64;
use pto_op::{DeviceProfile, Model, TensorType, registry};

/// The largest model a case runs: activations plus weights, and any one value, in bytes.
/// (Until the run's memory budget of issue 11 item 2 lands, this is the harness's cap.)
const RUN_CAP_BYTES: u64 = 1 << 20;

/// The kernel work budget of this process (`pto_op::kernel::validate::set_work_budget`),
/// in instruction executions: kernels within it run in milliseconds in a debug build.
const FUZZ_WORK_BUDGET: u64 = 1 << 14;

/// The most elements of all a kernel text's globals, which the simulator allocates.
const GLOBAL_ELEMENTS_CAP: u128 = 1 << 20;

/// Lowers the process's kernel work budget to [`FUZZ_WORK_BUDGET`]; every fuzzer calls it
/// first, so the budget is the same whichever runs first.
fn fuzz_work_budget() {
    pto_op::kernel::validate::set_work_budget(FUZZ_WORK_BUDGET);
}

/// The cases per fuzzer without `PTO_FUZZ_CASES`, as CI runs them: enough that the model
/// file fuzzer, from the default seed, finds the zero-element value with a dim above int64
/// (`f32[0, 2^64 - 2]`, case 1149 before the fix of issue 31 item 7), and few enough that
/// the four run in about 15 s on two idle cores in a debug build (30 s on busy ones).
const CI_CASES: u64 = 2000;

/// `name` from the environment as a number, else `default`.
fn knob(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(default)
}

// ---------------------------------------------------------------------------------------
// Interesting values.

const INTERESTING_INTS: &[i64] = &[
    0,
    1,
    -1,
    2,
    -2,
    3,
    7,
    8,
    16,
    255,
    256,
    65_535,
    65_536,
    1 << 24,
    (1 << 24) + 1,
    i32::MAX as i64,
    1 << 31,
    (1 << 31) + 1,
    i32::MIN as i64,
    (i32::MIN as i64) - 1,
    u32::MAX as i64,
    1 << 32,
    1 << 53,
    (1 << 53) + 1,
    1 << 62,
    (1 << 62) + 1,
    i64::MAX,
    i64::MIN,
    i64::MIN + 1,
    1_000_000_000_000,
];

const INTERESTING_FLOATS: &[f64] = &[
    0.0,
    -0.0,
    1.0,
    -1.0,
    0.5,
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f32::MAX as f64,
    f32::MIN_POSITIVE as f64,
    1e-45,
    f64::MAX,
    f64::MIN_POSITIVE,
    65_504.0,
    65_520.0,
    16_777_217.0,
    4_611_686_018_427_387_904.0,
    1e30,
    -1e30,
];

/// A random pick from `items` (not empty).
fn pick<'a, T>(rng: &mut SplitMix64, items: &'a [T]) -> &'a T {
    &items[rng.below(items.len())]
}

/// An interesting integer: from the table, one off it, or small.
fn int(rng: &mut SplitMix64) -> i64 {
    match rng.below(6) {
        0 => rng.below(9) as i64 - 2,
        1 => pick(rng, INTERESTING_INTS).wrapping_add(rng.below(3) as i64 - 1),
        _ => *pick(rng, INTERESTING_INTS),
    }
}

fn float(rng: &mut SplitMix64) -> f64 {
    match rng.below(4) {
        0 => int(rng) as f64,
        _ => *pick(rng, INTERESTING_FLOATS),
    }
}

/// How many edits a case makes: one most often, so that more cases get past the loader.
fn edits(rng: &mut SplitMix64) -> usize {
    match rng.below(8) {
        0 => 3,
        1 | 2 => 2,
        _ => 1,
    }
}

/// A size for repeated edits: mostly small, sometimes large.
fn count(rng: &mut SplitMix64) -> usize {
    match rng.below(8) {
        0 => 64 + rng.below(1_000),
        _ => rng.below(4),
    }
}

/// A string that names nothing, names something twice, or is odd.
fn odd_string(rng: &mut SplitMix64, known: &[String]) -> String {
    match rng.below(6) {
        0 => String::new(),
        1 => " ".to_owned(),
        2 => "x".repeat(1 + rng.below(5_000)),
        3 => "\u{0}é/../\u{202e}".to_owned(),
        _ if !known.is_empty() => pick(rng, known).clone(),
        _ => "ghost".to_owned(),
    }
}

// ---------------------------------------------------------------------------------------
// Seeds: small models covering the standard ops, custom ops, integer arithmetic.

fn tensor<T: pto_op::Element>(dims: &[usize], values: Vec<T>) -> Tensor {
    Tensor::from_vec(dims.to_vec(), values).expect("a seed tensor fits its shape")
}

/// Gather (i64 indices) -> layer_norm -> matmul + bias -> activations -> softmax.
fn mlp_seed() -> Result<Model, OpError> {
    let g = Graph::new();
    // Rank-2 activations: the sim's matmul kernel takes rank 2.
    let tokens = g.input("tokens", Shape::from([6]), DType::I64);
    let embedding = g.weight("embedding", Tensor::random([8, 4], DType::F32, 1))?;
    let gamma = g.weight("gamma", Tensor::random([4], DType::F32, 2))?;
    let beta = g.weight("beta", Tensor::random([4], DType::F32, 3))?;
    let w = g.weight("w", Tensor::random([4, 6], DType::F32, 4))?;
    let b = g.weight("b", Tensor::random([6], DType::F32, 5))?;
    let e = ops::gather::apply(&embedding, &tokens, &ops::gather::Params { axis: 0 })?;
    let h = ops::layer_norm::apply(&e, &gamma, &beta, &ops::layer_norm::Params { eps: 1e-5 })?;
    let up = ops::matmul::apply(&h, &w, &Default::default())?;
    let u = ops::add::apply(&up, &b, &Default::default())?;
    let a = ops::gelu::apply(
        &u,
        &ops::gelu::Params {
            approximate: "tanh".to_owned(),
        },
    )?;
    let s = ops::sigmoid::apply(&u, &Default::default())?;
    let m = ops::mul::apply(&a, &s, &Default::default())?;
    let r = ops::relu::apply(&m, &Default::default())?;
    let y = ops::softmax::apply(&r, &ops::softmax::Params { axis: -1 })?;
    let n = ops::rms_norm::apply(
        &y,
        &g.weight("rms", Tensor::random([6], DType::F32, 6))?,
        &ops::rms_norm::Params { eps: 1e-6 },
    )?;
    g.output(&n);
    g.to_model("mlp_seed")
}

/// Transpose, reshape, concat, slice, reductions, casts.
fn shape_seed() -> Result<Model, OpError> {
    let g = Graph::new();
    let x = g.input("x", Shape::from([2, 3, 4]), DType::F32);
    let side = g.weight("side", Tensor::random([4, 2], DType::F32, 11))?;
    let t = ops::transpose::apply(
        &x,
        &ops::transpose::Params {
            perm: vec![2, 0, 1],
        },
    )?;
    let r = ops::reshape::apply(
        &t,
        &ops::reshape::Params {
            shape: vec![0, -1],
            allowzero: false,
        },
    )?;
    let c = ops::concat::apply(&r, &side, &ops::concat::Params { axis: 1 })?;
    let s = ops::slice::apply(
        &c,
        &ops::slice::Params {
            starts: vec![1, -10],
            ends: vec![-1, 100],
            axes: vec![0, 1],
            steps: Vec::new(),
        },
    )?;
    g.output(&ops::reduce_sum::apply(
        &s,
        &ops::reduce_sum::Params {
            axes: vec![0],
            keepdims: false,
        },
    )?);
    g.output(&ops::reduce_mean::apply(
        &x,
        &ops::reduce_mean::Params {
            axes: vec![1, -1],
            keepdims: true,
        },
    )?);
    let half = ops::cast::apply(
        &x,
        &ops::cast::Params {
            to: "f16".into(),
            saturate: true,
            round_mode: "up".into(),
        },
    )?;
    let ints = ops::cast::apply(
        &half,
        &ops::cast::Params {
            to: "i32".into(),
            saturate: true,
            round_mode: "up".into(),
        },
    )?;
    g.output(&ops::add::apply(&ints, &ints, &Default::default())?);
    g.output(&ops::gather::apply(
        &x,
        &g.weight("idx", tensor(&[2], vec![-1i32, 1]))?,
        &ops::gather::Params { axis: -1 },
    )?);
    g.to_model("shape_seed")
}

/// Integer arithmetic with broadcasting: i32 and i64 add, sub, mul, reduce_sum.
fn integer_seed() -> Result<Model, OpError> {
    let g = Graph::new();
    let a = g.input("a", Shape::from([3, 4]), DType::I32);
    let b = g.weight("b", tensor(&[4], vec![1i32, -2, 1 << 24, i32::MAX]))?;
    let c = g.input("c", Shape::from([2, 1]), DType::I64);
    let d = g.weight("d", tensor(&[1, 3], vec![1i64 << 53, -1, 7]))?;
    g.output(&ops::add::apply(&a, &b, &Default::default())?);
    g.output(&ops::mul::apply(&a, &b, &Default::default())?);
    g.output(&ops::sub::apply(&c, &d, &Default::default())?);
    g.output(&ops::reduce_sum::apply(
        &ops::mul::apply(&c, &d, &Default::default())?,
        &ops::reduce_sum::Params {
            axes: vec![-1],
            keepdims: false,
        },
    )?);
    g.to_model("integer_seed")
}

/// Values with no elements: `x` passed straight through, so that one edit of its other
/// dim reaches a run (any node would re-infer its output and refuse the edit), and one
/// through a node.
fn empty_seed() -> Result<Model, OpError> {
    let g = Graph::new();
    let x = g.input("x", Shape::from([0, 4]), DType::F32);
    g.output(&x);
    let y = g.input("y", Shape::from([3, 0]), DType::F32);
    g.output(&ops::neg::apply(&y, &Default::default())?);
    g.to_model("empty_seed")
}

/// The seed models: the four above and the example models small enough to run.
fn seed_models() -> Vec<Model> {
    let mut models = vec![
        mlp_seed().expect("the MLP seed traces"),
        shape_seed().expect("the shape seed traces"),
        integer_seed().expect("the integer seed traces"),
        empty_seed().expect("the empty seed traces"),
    ];
    for name in ["pipeline", "mixed"] {
        let def = pto_op::models::find_builtin(name)
            .expect("the registry is sound")
            .expect("pto-examples registers the model");
        models.push((def.build)().expect("the example model builds"));
    }
    models
}

// ---------------------------------------------------------------------------------------
// The pipeline every model case goes through.

thread_local! {
    /// Where the last panic of this thread happened.
    static PANIC_PLACE: std::cell::Cell<Option<String>> = const { std::cell::Cell::new(None) };
    /// Whether this thread runs a case, whose panics are counted rather than printed.
    static IN_CASE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Replaces the panic hook, once, by one that records where a panic happened instead of
/// printing a backtrace per case.
fn quiet_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_CASE.with(std::cell::Cell::get) {
                return default(info);
            }
            let place = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()))
                .unwrap_or_default();
            PANIC_PLACE.with(|p| p.set(Some(place)));
        }));
    });
}

/// Counts per outcome, the panics found, and the slowest case.
#[derive(Default)]
struct Tally {
    outcomes: BTreeMap<&'static str, u64>,
    panics: Vec<String>,
    slowest: (Duration, u64),
}

impl Tally {
    fn case(&mut self, case: u64, case_seed: u64, run: impl FnOnce() -> &'static str) {
        if let Ok(replay) = std::env::var("PTO_FUZZ_REPLAY") {
            // Only the case asked for, panicking as usual (with a backtrace if asked).
            if replay.trim_start_matches("0x") == format!("{case_seed:x}") {
                eprintln!("replaying case seed {case_seed:#x}: {}", run());
            }
            *self.outcomes.entry("skipped while replaying").or_default() += 1;
            return;
        }
        quiet_panics();
        let start = Instant::now();
        IN_CASE.with(|c| c.set(true));
        let result = catch_unwind(AssertUnwindSafe(run));
        IN_CASE.with(|c| c.set(false));
        match result {
            Ok(outcome) => *self.outcomes.entry(outcome).or_default() += 1,
            Err(payload) => {
                let place = PANIC_PLACE.with(|p| p.take()).unwrap_or_default();
                let message = payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default();
                self.panics.push(format!(
                    "case {case} (case seed {case_seed:#x}) at {place}: {message}"
                ));
            }
        }
        let took = start.elapsed();
        if took > self.slowest.0 {
            self.slowest = (took, case_seed);
        }
    }

    /// Prints the counts and fails on any panic.
    fn finish(self, fuzzer: &str, cases: u64, seed: u64, start: Instant) {
        let mut line = format!(
            "{fuzzer}: {cases} cases in {:.1?}, slowest {:.1?} (case seed {:#x}), {} panic(s);",
            start.elapsed(),
            self.slowest.0,
            self.slowest.1,
            self.panics.len()
        );
        for (outcome, n) in &self.outcomes {
            let _ = write!(line, " {outcome}: {n};");
        }
        eprintln!("{line}");
        // Panics hooked by the test harness print their own message; the seeds replay them.
        assert!(
            self.panics.is_empty(),
            "{fuzzer}: {} panic(s); replay one with PTO_FUZZ_SEED={seed} PTO_FUZZ_CASES={cases} \
             PTO_FUZZ_REPLAY=<case seed>:\n{}",
            self.panics.len(),
            self.panics.join("\n")
        );
        assert_eq!(self.outcomes.values().sum::<u64>(), cases);
    }
}

/// A scratch directory for the case files, removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("pto_fuzz_{name}_{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("can create a temp dir");
        Scratch(dir)
    }

    fn write(&self, file: &str, bytes: &[u8]) -> String {
        let path = self.0.join(file);
        std::fs::write(&path, bytes).expect("can write a temp file");
        path.to_string_lossy().into_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `pto VERB ...` in process; the result is either, only a panic matters.
fn cli(args: &[&str]) -> bool {
    let mut all = vec!["pto"];
    all.extend_from_slice(args);
    pto_cli::run(all).is_ok()
}

/// Takes a loaded `model` (written at `path`) through inspect, estimate, compile and run on
/// cpu and sim, and says how far it got.
fn exercise(model: Result<Model, String>, path: &str, seed: u64) -> &'static str {
    let Ok(model) = model else {
        return "refused at load";
    };
    cli(&["inspect", path]);
    cli(&["inspect", path, "--json"]);
    cli(&["estimate", path]);
    let config = |target: &str| {
        pto_cli::edge::target_config(target, None).expect("the default device is built in")
    };
    let Ok(cpu) = compile(&model, config("cpu")) else {
        return "refused at compile";
    };
    if !within_run_cap(&cpu, RUN_CAP_BYTES) {
        return "compiled, over the run cap";
    }
    let inputs = cpu.random_inputs(seed);
    let cpu_ok = cpu.run(&inputs).is_ok();
    let sim_ok = compile(&model, config("sim")).is_ok_and(|sim| sim.run(&inputs).is_ok());
    match (cpu_ok, sim_ok) {
        (true, true) => "ran on cpu and sim",
        (true, false) => "ran on cpu, refused on sim",
        (false, true) => "refused on cpu, ran on sim",
        (false, false) => "refused at run",
    }
}

// ---------------------------------------------------------------------------------------
// ONNX: protobuf field edits.

const ONNX_OPS: &[&str] = &[
    "Add",
    "Sub",
    "Mul",
    "Div",
    "MatMul",
    "Gemm",
    "Relu",
    "Reshape",
    "Transpose",
    "Concat",
    "Slice",
    "Gather",
    "Cast",
    "Softmax",
    "ReduceSum",
    "ReduceMean",
    "Sigmoid",
    "Tanh",
    "Erf",
    "Sqrt",
    "Pow",
    "Where",
    "Expand",
    "Unsqueeze",
    "Squeeze",
    "Constant",
    "Identity",
    "LayerNormalization",
    "Gelu",
    "Nope",
];

/// Every value name of `proto`'s graph.
fn value_names(proto: &ModelProto) -> Vec<String> {
    let Some(g) = &proto.graph else {
        return Vec::new();
    };
    g.node
        .iter()
        .flat_map(|n| n.input.iter().chain(&n.output).cloned())
        .chain(g.initializer.iter().map(|t| t.name.clone()))
        .chain(g.input.iter().chain(&g.output).map(|v| v.name.clone()))
        .collect()
}

fn edit_dims(rng: &mut SplitMix64, dims: &mut Vec<i64>) {
    match rng.below(5) {
        0 => dims.push(int(rng)),
        1 => {
            dims.pop();
        }
        2 => dims.extend(std::iter::repeat_n(1, count(rng))),
        _ if !dims.is_empty() => {
            let at = rng.below(dims.len());
            dims[at] = int(rng);
        }
        _ => dims.push(int(rng)),
    }
}

fn edit_value_info(rng: &mut SplitMix64, v: &mut ValueInfoProto, names: &[String]) {
    let Some(tt) = v.r#type.as_mut().and_then(|t| t.tensor_type.as_mut()) else {
        v.name = odd_string(rng, names);
        return;
    };
    match rng.below(6) {
        0 => tt.elem_type = int(rng) as i32,
        1 => tt.shape = None,
        2 => v.name = odd_string(rng, names),
        _ => {
            let shape = tt.shape.get_or_insert_with(Default::default);
            let mut dims: Vec<i64> = shape
                .dim
                .iter()
                .map(|d| d.dim_value.unwrap_or(-1))
                .collect();
            edit_dims(rng, &mut dims);
            shape.dim = dims
                .into_iter()
                .map(|d| Dimension {
                    dim_value: (d != -1 || rng.below(2) == 0).then_some(d),
                    dim_param: (d == -1).then(|| "batch".to_owned()),
                })
                .collect();
        }
    }
}

fn edit_tensor(rng: &mut SplitMix64, t: &mut TensorProto, names: &[String]) {
    match rng.below(9) {
        0 | 1 => edit_dims(rng, &mut t.dims),
        2 => t.data_type = *pick(rng, &[0, 1, 2, 3, 5, 6, 7, 9, 10, 11, 16, 99, -1]),
        3 => {
            let len = t.raw_data.len();
            t.raw_data.truncate(rng.below(len + 1));
        }
        4 => t.raw_data.extend(std::iter::repeat_n(0xff, 1 + count(rng))),
        5 => {
            // Element values: interesting integers for int64 data (Reshape's shape,
            // Gather's indices, Slice's bounds), NaN and friends for floats.
            if t.data_type == 7 && t.raw_data.len() >= 8 {
                let at = 8 * rng.below(t.raw_data.len() / 8);
                t.raw_data[at..at + 8].copy_from_slice(&int(rng).to_le_bytes());
            } else if t.raw_data.len() >= 4 {
                let at = 4 * rng.below(t.raw_data.len() / 4);
                let v = if t.data_type == 6 {
                    int(rng) as i32
                } else {
                    (float(rng) as f32).to_bits() as i32
                };
                t.raw_data[at..at + 4].copy_from_slice(&v.to_le_bytes());
            } else {
                t.int64_data.push(int(rng));
            }
        }
        6 => {
            // The same elements in a typed field instead of (or as well as) the bytes.
            if rng.below(2) == 0 {
                t.raw_data.clear();
            }
            let n = count(rng);
            match rng.below(3) {
                0 => t.int64_data = (0..n).map(|_| int(rng)).collect(),
                1 => t.int32_data = (0..n).map(|_| int(rng) as i32).collect(),
                _ => t.float_data = (0..n).map(|_| float(rng) as f32).collect(),
            }
        }
        7 => t.data_location = int(rng) as i32,
        _ => t.name = odd_string(rng, names),
    }
}

fn edit_attribute(rng: &mut SplitMix64, a: &mut AttributeProto, names: &[String]) {
    match rng.below(10) {
        0 => a.i = Some(int(rng)),
        1 => a.f = Some(float(rng) as f32),
        2 => {
            if a.ints.is_empty() || rng.below(3) == 0 {
                a.ints.push(int(rng));
            } else {
                let at = rng.below(a.ints.len());
                a.ints[at] = int(rng);
            }
        }
        3 => a.ints = (0..count(rng)).map(|_| int(rng)).collect(),
        4 => a.floats = (0..count(rng)).map(|_| float(rng) as f32).collect(),
        5 => a.s = Some(odd_string(rng, names).into_bytes()),
        6 => a.r#type = rng.below(16) as i32,
        7 => a.name = odd_string(rng, &[a.name.clone(), "axis".into(), "perm".into()]),
        8 => {
            a.ints.clear();
            a.floats.clear();
            a.i = None;
            a.f = None;
            a.s = None;
        }
        _ => {
            let mut t = TensorProto {
                dims: vec![int(rng)],
                data_type: 7,
                ..Default::default()
            };
            t.int64_data = (0..count(rng)).map(|_| int(rng)).collect();
            a.t = Some(t);
        }
    }
}

fn edit_node(rng: &mut SplitMix64, n: &mut NodeProto, names: &[String]) {
    match rng.below(10) {
        0..=2 => {
            if n.attribute.is_empty() || rng.below(4) == 0 {
                n.attribute.push(AttributeProto {
                    name: pick(
                        rng,
                        &["axis", "perm", "to", "eps", "epsilon", "axes", "shape"],
                    )
                    .to_string(),
                    r#type: rng.below(10) as i32,
                    i: Some(int(rng)),
                    ..Default::default()
                });
            }
            let at = rng.below(n.attribute.len());
            if rng.below(5) == 0 {
                let copy = n.attribute[at].clone();
                n.attribute.push(copy);
            } else {
                edit_attribute(rng, &mut n.attribute[at], names);
            }
        }
        3 => {
            if n.input.is_empty() || rng.below(3) == 0 {
                n.input.push(odd_string(rng, names));
            } else {
                let at = rng.below(n.input.len());
                n.input[at] = odd_string(rng, names);
            }
        }
        4 => {
            if !n.input.is_empty() {
                n.input.remove(rng.below(n.input.len()));
            }
        }
        5 => {
            if n.output.is_empty() || rng.below(3) == 0 {
                n.output.push(odd_string(rng, names));
            } else {
                let at = rng.below(n.output.len());
                n.output[at] = odd_string(rng, names);
            }
        }
        6 => n.op_type = pick(rng, ONNX_OPS).to_string(),
        7 => {
            n.domain = pick(
                rng,
                &[
                    "",
                    "ai.onnx",
                    "std",
                    "demo",
                    "teamb",
                    "nope",
                    "com.microsoft",
                ],
            )
            .to_string()
        }
        8 => {
            if !n.metadata_props.is_empty() {
                let at = rng.below(n.metadata_props.len());
                let number = int(rng).to_string();
                n.metadata_props[at].value = odd_string(rng, &[number]);
            }
        }
        _ => n.name = odd_string(rng, names),
    }
}

/// One to three field edits of `proto`.
fn mutate_onnx(rng: &mut SplitMix64, proto: &mut ModelProto) {
    let names = value_names(proto);
    for _ in 0..edits(rng) {
        let choice = rng.below(20);
        if choice == 0 {
            match rng.below(3) {
                0 => proto.ir_version = int(rng),
                1 if !proto.opset_import.is_empty() => {
                    let at = rng.below(proto.opset_import.len());
                    proto.opset_import[at].version = int(rng);
                }
                _ => proto.opset_import.clear(),
            }
            continue;
        }
        let Some(g) = proto.graph.as_mut() else {
            return;
        };
        match choice {
            1..=8 if !g.node.is_empty() => {
                let at = rng.below(g.node.len());
                edit_node(rng, &mut g.node[at], &names);
            }
            9 | 10 if !g.initializer.is_empty() => {
                let at = rng.below(g.initializer.len());
                edit_tensor(rng, &mut g.initializer[at], &names);
            }
            11 if !g.input.is_empty() => {
                let at = rng.below(g.input.len());
                edit_value_info(rng, &mut g.input[at], &names);
            }
            12 if !g.output.is_empty() => {
                let at = rng.below(g.output.len());
                edit_value_info(rng, &mut g.output[at], &names);
            }
            13 if !g.node.is_empty() => {
                // Duplicate a node (twice-defined outputs), or many (huge counts).
                let at = rng.below(g.node.len());
                let copy = g.node[at].clone();
                let times = if rng.below(8) == 0 { 2_000 } else { 1 };
                for _ in 0..times {
                    g.node.insert(rng.below(g.node.len() + 1), copy.clone());
                }
            }
            14 if !g.node.is_empty() => {
                g.node.remove(rng.below(g.node.len()));
            }
            15 if g.node.len() > 1 => {
                let (a, b) = (rng.below(g.node.len()), rng.below(g.node.len()));
                g.node.swap(a, b);
            }
            16 => match rng.below(3) {
                0 if !g.input.is_empty() => {
                    let copy = g.input[rng.below(g.input.len())].clone();
                    g.input.push(copy);
                }
                1 if !g.output.is_empty() => {
                    g.output.remove(rng.below(g.output.len()));
                }
                _ if !g.initializer.is_empty() => {
                    let copy = g.initializer[rng.below(g.initializer.len())].clone();
                    g.initializer.push(copy);
                }
                _ => {}
            },
            17 if !g.node.is_empty() => {
                // A constant node with an interesting tensor feeding a node's input.
                let name = format!("k{}", rng.below(1_000));
                let mut t = TensorProto {
                    data_type: *pick(rng, &[1, 6, 7]),
                    ..Default::default()
                };
                edit_dims(rng, &mut t.dims);
                t.int64_data = (0..count(rng)).map(|_| int(rng)).collect();
                let at = rng.below(g.node.len());
                let node = &mut g.node[at];
                if node.input.is_empty() {
                    node.input.push(name.clone());
                } else {
                    let i = rng.below(node.input.len());
                    node.input[i] = name.clone();
                }
                g.node.insert(
                    at,
                    NodeProto {
                        output: vec![name],
                        op_type: "Constant".into(),
                        attribute: vec![AttributeProto {
                            name: "value".into(),
                            r#type: 4,
                            t: Some(t),
                            ..Default::default()
                        }],
                        ..Default::default()
                    },
                );
            }
            _ if !g.value_info.is_empty() => {
                let at = rng.below(g.value_info.len());
                edit_value_info(rng, &mut g.value_info[at], &names);
            }
            _ => {}
        }
    }
}

/// The ONNX seeds: the seed models exported, and (in `heavy`) the real exported
/// transformers of `tests/fixtures/onnx` (GPT-2, BERT and Llama style, from
/// `torch.onnx.export`) with their symbolic input dims made static (1, 8), so that every
/// stage takes them as they are.
fn onnx_seeds() -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let light = seed_models()
        .iter()
        .map(|m| to_onnx(m).expect("a seed model exports"))
        .collect();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/onnx");
    let heavy = ["gpt2_tiny", "bert_tiny", "llama_tiny"]
        .iter()
        .map(|name| {
            let bytes = std::fs::read(dir.join(format!("{name}.onnx"))).expect("a fixture");
            let mut proto = ModelProto::decode(bytes.as_slice()).expect("a fixture decodes");
            for input in proto.graph.iter_mut().flat_map(|g| g.input.iter_mut()) {
                let dims = input
                    .r#type
                    .iter_mut()
                    .filter_map(|t| t.tensor_type.as_mut())
                    .filter_map(|t| t.shape.as_mut())
                    .flat_map(|s| s.dim.iter_mut());
                for (axis, dim) in dims.enumerate() {
                    if dim.dim_param.take().is_some() {
                        dim.dim_value = Some(if axis == 0 { 1 } else { 8 });
                    }
                }
            }
            let bytes = proto.encode_to_vec();
            if let Err(e) = from_onnx(&bytes) {
                panic!("the fixture {name} with static dims must import: {e}");
            }
            bytes
        })
        .collect();
    (light, heavy)
}

fn onnx_case(
    rng: &mut SplitMix64,
    (light, heavy): &(Vec<Vec<u8>>, Vec<Vec<u8>>),
    scratch: &Scratch,
) -> &'static str {
    // One case in eight edits a real transformer (each costs ten light ones).
    let seeds = if rng.below(8) == 0 { heavy } else { light };
    let mut proto = ModelProto::decode(pick(rng, seeds).as_slice()).expect("a seed decodes");
    mutate_onnx(rng, &mut proto);
    let bytes = proto.encode_to_vec();
    let path = scratch.write("case.onnx", &bytes);
    exercise(
        from_onnx(&bytes).map_err(|e| e.to_string()),
        &path,
        rng.next_u64(),
    )
}

#[test]
fn fuzz_onnx_fields() {
    fuzz_work_budget();
    let (cases, seed) = (
        knob("PTO_FUZZ_CASES", CI_CASES),
        knob("PTO_FUZZ_SEED", 0x5eed),
    );
    let seeds = onnx_seeds();
    let scratch = Scratch::new("onnx");
    let (start, mut seeds_rng, mut tally) =
        (Instant::now(), SplitMix64::new(seed), Tally::default());
    for case in 0..cases {
        let case_seed = seeds_rng.next_u64();
        tally.case(case, case_seed, || {
            onnx_case(&mut SplitMix64::new(case_seed), &seeds, &scratch)
        });
    }
    tally.finish("onnx fields", cases, seed, start);
}

// ---------------------------------------------------------------------------------------
// JSON: one generic field mutator for model-file graphs and schemas, safetensors headers.

/// Every path (keys and indices) of `value`, parents before children.
fn json_paths(value: &serde_json::Value, at: &mut Vec<PathStep>, out: &mut Vec<Vec<PathStep>>) {
    out.push(at.clone());
    match value {
        serde_json::Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                at.push(PathStep::Index(i));
                json_paths(item, at, out);
                at.pop();
            }
        }
        serde_json::Value::Object(map) => {
            for (k, item) in map {
                at.push(PathStep::Key(k.clone()));
                json_paths(item, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

#[derive(Clone)]
enum PathStep {
    Key(String),
    Index(usize),
}

fn json_at<'a>(value: &'a mut serde_json::Value, path: &[PathStep]) -> &'a mut serde_json::Value {
    path.iter().fold(value, |v, step| match step {
        PathStep::Key(k) => &mut v[k.as_str()],
        PathStep::Index(i) => &mut v[*i],
    })
}

/// Strings of `value`, to duplicate names with.
fn json_strings(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(items) => items.iter().for_each(|v| json_strings(v, out)),
        serde_json::Value::Object(map) => map.iter().for_each(|(k, v)| {
            out.push(k.clone());
            json_strings(v, out);
        }),
        _ => {}
    }
}

/// One to three edits of fields of `doc`: numbers to interesting numbers, strings to
/// duplicated or odd names, arrays emptied, grown, shrunk or with an element duplicated,
/// object keys dropped, any field to null or another type.
fn mutate_json(rng: &mut SplitMix64, doc: &mut serde_json::Value) {
    use serde_json::{Value, json};
    let mut strings = Vec::new();
    json_strings(doc, &mut strings);
    for _ in 0..edits(rng) {
        let mut paths = Vec::new();
        json_paths(doc, &mut Vec::new(), &mut paths);
        // Leaves are where the values are: prefer them.
        let path = pick(rng, &paths).clone();
        let target = json_at(doc, &path);
        let interesting_number = |rng: &mut SplitMix64| match rng.below(3) {
            0 => serde_json::Number::from_f64(float(rng)).map_or(Value::Null, Value::Number),
            1 => json!(u64::MAX - rng.below(2) as u64),
            _ => json!(int(rng)),
        };
        match target {
            Value::Number(_) => *target = interesting_number(rng),
            Value::String(_) => {
                *target = match rng.below(5) {
                    0 => json!(int(rng).to_string()),
                    1 => json!(pick(
                        rng,
                        &["NaN", "inf", "-inf", "f32", "i64", "bool", "ub"]
                    )),
                    _ => Value::String(odd_string(rng, &strings)),
                }
            }
            Value::Array(items) => match rng.below(6) {
                0 => items.clear(),
                1 if !items.is_empty() => {
                    items.remove(rng.below(items.len()));
                }
                2 if !items.is_empty() => {
                    let copy = items[rng.below(items.len())].clone();
                    items.insert(rng.below(items.len() + 1), copy);
                }
                3 if !items.is_empty() => {
                    let copy = items[rng.below(items.len())].clone();
                    items.extend(std::iter::repeat_n(copy, count(rng)));
                }
                _ => items.push(interesting_number(rng)),
            },
            Value::Object(map) => {
                if !map.is_empty() && rng.below(2) == 0 {
                    let key = map
                        .keys()
                        .nth(rng.below(map.len()))
                        .cloned()
                        .unwrap_or_default();
                    map.remove(&key);
                } else {
                    map.insert(odd_string(rng, &strings), interesting_number(rng));
                }
            }
            Value::Bool(b) => *b = !*b,
            Value::Null => *target = interesting_number(rng),
        }
        if rng.below(12) == 0 {
            *json_at(doc, &path) = match rng.below(4) {
                0 => Value::Null,
                1 => json!([]),
                2 => json!({}),
                _ => json!(-1),
            };
        }
    }
}

/// A safetensors file: the header JSON and the data after it.
fn split_safetensors(bytes: &[u8]) -> (serde_json::Value, Vec<u8>) {
    let n = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")) as usize;
    let header = serde_json::from_slice(&bytes[8..8 + n]).expect("a seed header is JSON");
    (header, bytes[8 + n..].to_vec())
}

fn join_safetensors(header: &serde_json::Value, data: &[u8]) -> Vec<u8> {
    let mut text = serde_json::to_vec(header).expect("JSON serializes");
    // safetensors pads the header with spaces to a multiple of 8.
    while !text.len().is_multiple_of(8) {
        text.push(b' ');
    }
    let mut bytes = (text.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(&text);
    bytes.extend_from_slice(data);
    bytes
}

/// Edits the model file `bytes` through its structure: the graph JSON (most often), the
/// schemas JSON, the tensor entries of the header, or the data's length.
fn mutate_model_file(rng: &mut SplitMix64, bytes: &[u8]) -> Vec<u8> {
    let (mut header, mut data) = split_safetensors(bytes);
    match rng.below(10) {
        0..=5 => edit_embedded_json(rng, &mut header, "graph"),
        6 => edit_embedded_json(rng, &mut header, "schemas"),
        7 => {
            let meta = &mut header["__metadata__"];
            mutate_json(rng, meta);
        }
        8 => mutate_json(rng, &mut header),
        _ => {
            if rng.below(2) == 0 {
                data.truncate(rng.below(data.len() + 1));
            } else {
                data.extend(std::iter::repeat_n(0, 1 + count(rng)));
            }
        }
    }
    join_safetensors(&header, &data)
}

fn edit_embedded_json(rng: &mut SplitMix64, header: &mut serde_json::Value, key: &str) {
    let Some(text) = header["__metadata__"][key].as_str() else {
        return;
    };
    let Ok(mut doc) = serde_json::from_str::<serde_json::Value>(text) else {
        return;
    };
    mutate_json(rng, &mut doc);
    header["__metadata__"][key] = serde_json::Value::String(doc.to_string());
}

#[test]
fn fuzz_model_file_fields() {
    fuzz_work_budget();
    let (cases, seed) = (
        knob("PTO_FUZZ_CASES", CI_CASES),
        knob("PTO_FUZZ_SEED", 0x5eed),
    );
    let seeds: Vec<Vec<u8>> = seed_models()
        .iter()
        .map(|m| m.to_bytes().expect("a seed model serializes"))
        .collect();
    let scratch = Scratch::new("model");
    let (start, mut seeds_rng, mut tally) =
        (Instant::now(), SplitMix64::new(seed), Tally::default());
    for case in 0..cases {
        let case_seed = seeds_rng.next_u64();
        tally.case(case, case_seed, || {
            let rng = &mut SplitMix64::new(case_seed);
            let seed_file = pick(rng, &seeds).clone();
            let bytes = mutate_model_file(rng, &seed_file);
            let path = scratch.write("case.pto", &bytes);
            exercise(
                Model::from_bytes(&bytes).map_err(|e| e.to_string()),
                &path,
                rng.next_u64(),
            )
        });
    }
    tally.finish("model file fields", cases, seed, start);
}

// ---------------------------------------------------------------------------------------
// `--inputs` files: header entries and element values.

/// A valid `--inputs` file for `compiled`'s inputs, random values.
fn inputs_file(compiled: &CompiledModel, seed: u64) -> Vec<u8> {
    let mut header = serde_json::Map::new();
    let mut data = Vec::new();
    for (input, tensor) in compiled.inputs().iter().zip(compiled.random_inputs(seed)) {
        let bytes = tensor.to_le_bytes();
        let dtype = match input.ty.dtype {
            DType::F32 => "F32",
            DType::F16 => "F16",
            DType::BF16 => "BF16",
            DType::I32 => "I32",
            DType::I64 => "I64",
            DType::I8 => "I8",
            DType::U8 => "U8",
            DType::Bool => "BOOL",
            DType::I16 => "I16",
            DType::U16 => "U16",
            DType::U32 => "U32",
            DType::U64 => "U64",
            DType::F64 => "F64",
            DType::F8E4M3FN => "F8_E4M3",
            DType::F8E4M3FNUZ => "F8_E4M3FNUZ",
            DType::F8E5M2 => "F8_E5M2",
            DType::F8E5M2FNUZ => "F8_E5M2FNUZ",
            DType::F8E8M0 => "F8_E8M0",
            dtype @ (DType::F4E2M1 | DType::I4 | DType::U4 | DType::I2 | DType::U2) => {
                panic!("an input of dtype {dtype}: safetensors files cannot hold it")
            }
        };
        header.insert(
            input.name.clone(),
            serde_json::json!({
                "dtype": dtype,
                "shape": input.ty.shape.dims(),
                "data_offsets": [data.len(), data.len() + bytes.len()],
            }),
        );
        data.extend_from_slice(&bytes);
    }
    join_safetensors(&serde_json::Value::Object(header), &data)
}

/// Element values: interesting integers or floats written over random elements, by the
/// width the header declares for the first tensor.
fn poke_values(rng: &mut SplitMix64, header: &serde_json::Value, data: &mut [u8]) {
    let width = match header
        .as_object()
        .and_then(|m| m.values().next())
        .and_then(|t| t["dtype"].as_str())
    {
        Some("I64") => 8,
        Some("F16" | "BF16") => 2,
        Some("I8" | "U8" | "BOOL") => 1,
        _ => 4,
    };
    for _ in 0..=count(rng) {
        if data.len() < width {
            return;
        }
        let at = width * rng.below(data.len() / width);
        let v = int(rng);
        let bytes: Vec<u8> = match (width, rng.below(2)) {
            (8, _) => v.to_le_bytes().to_vec(),
            (4, 0) => (float(rng) as f32).to_le_bytes().to_vec(),
            (4, _) => (v as i32).to_le_bytes().to_vec(),
            (2, _) => half::f16::from_f64(float(rng)).to_le_bytes().to_vec(),
            _ => vec![v as u8],
        };
        data[at..at + width].copy_from_slice(&bytes);
    }
}

#[test]
fn fuzz_inputs_file_fields() {
    fuzz_work_budget();
    let (cases, seed) = (
        knob("PTO_FUZZ_CASES", CI_CASES),
        knob("PTO_FUZZ_SEED", 0x5eed),
    );
    let scratch = Scratch::new("inputs");
    let cpu = pto_cli::edge::target_config("cpu", None).expect("the default device");
    // Each seed model as a model file, with a valid inputs file.
    let seeds: Vec<(String, Vec<u8>)> = seed_models()
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let path = scratch.write(&format!("seed{i}.pto"), &m.to_bytes().expect("serializes"));
            let compiled = compile(m, cpu.clone()).expect("a seed model compiles");
            (path, inputs_file(&compiled, i as u64))
        })
        .collect();
    let (start, mut seeds_rng, mut tally) =
        (Instant::now(), SplitMix64::new(seed), Tally::default());
    for case in 0..cases {
        let case_seed = seeds_rng.next_u64();
        tally.case(case, case_seed, || {
            let rng = &mut SplitMix64::new(case_seed);
            let (model, file) = pick(rng, &seeds);
            let (mut header, mut data) = split_safetensors(file);
            match rng.below(4) {
                0 => mutate_json(rng, &mut header),
                1 => poke_values(rng, &header, &mut data),
                2 => {
                    mutate_json(rng, &mut header);
                    poke_values(rng, &header, &mut data);
                }
                _ => {
                    if rng.below(2) == 0 {
                        data.truncate(rng.below(data.len() + 1));
                    } else {
                        data.extend(std::iter::repeat_n(0, 1 + count(rng)));
                    }
                }
            }
            let path = scratch.write("inputs.safetensors", &join_safetensors(&header, &data));
            if pto_cli::tensor_file::read_safetensors(Path::new(&path)).is_err() {
                return "refused at load";
            }
            let cpu = cli(&["run", model, "--inputs", &path, "--target", "cpu"]);
            let sim = cli(&["run", model, "--inputs", &path, "--target", "sim"]);
            match (cpu, sim) {
                (true, true) => "ran on cpu and sim",
                (true, false) => "ran on cpu, refused on sim",
                (false, true) => "refused on cpu, ran on sim",
                (false, false) => "refused at run",
            }
        });
    }
    tally.finish("inputs file fields", cases, seed, start);
}

// ---------------------------------------------------------------------------------------
// Kernel text: token and line edits.

/// The kernel texts of the seed models' ops, traced for their nodes' types, plus texts
/// that use every instruction with integer tiles.
fn kernel_seeds() -> Vec<String> {
    let mut texts = vec![
        "kernel t.ints grid 2
global @0 x: i32[4, 8] input
global @1 y: i64[4, 8] input
global @2 z: i32[4, 8] output
global @3 w: i64[4, 1] output
%0: i32[2, 8]@ub = load @0[pid * 2, 0] pad 0.0
%1: i64[2, 8]@ub = load @1[pid * 2, 0] pad -1.0
%2: i32[2, 8]@ub = binary mul %0, 16777217.0
%3: i32[2, 8]@ub = binary add %2, %0
%4: i64[2, 8]@ub = cast %3
%5: i64[2, 8]@ub = binary mul %4, %1
%6: i64[2, 1]@ub = reduce sum %5 axis 1
%7: bool[2, 8]@ub = compare lt %0, 3.0
%8: i32[2, 8]@ub = select %7, %3, -7.0
%9: i32[2, 8]@ub = iota axis 1 start pid * 8 - 3
%10: i32[2, 8]@ub = binary rem %8, %9
store @2[pid * 2, 0], %10
store @3[pid * 2, 0], %6
"
        .to_owned(),
        "kernel t.loop grid 1
global @0 x: f32[16, 16] input
global @1 y: f32[16, 16] output
%0: f32[16, 16]@ub = load @0[0, 0] pad 0.0
loop i0 in 0..3 carry(%1: f32[16, 16]@ub = %0) {
  %2: f32[16, 16]@ub = unary exp %1
  %3: f32[16, 16]@ub = binary mod %2, 3.0
  yield %3
} -> (%4: f32[16, 16]@ub)
%5: f16[16, 16]@ub = cast %4
%6: f16[16, 16]@l1 = move %5
%7: f16[16, 16]@l0a = move %6
%8: f16[16, 16]@l0b = move %6
%9: f32[16, 16]@l0c = matmul %7, %8 transpose_b
%10: f32[16, 16]@ub = move %9
store @1[min(pid + 0, 0), max(0, 1 - 1)], %10
"
        .to_owned(),
    ];
    for model in seed_models() {
        let graph = &model.graph;
        for node in &graph.nodes {
            let Ok(op) = registry::find(&node.op) else {
                continue;
            };
            let types: Vec<TensorType> = node
                .inputs
                .iter()
                .filter_map(|&v| graph.values.get(v).map(|d| d.ty.clone()))
                .collect();
            if let Ok(program) = op.trace_kernel(&types, &node.attrs) {
                texts.push(program.to_string());
            }
        }
    }
    // Texts that fail to parse are still fine seeds (the first two are checked elsewhere).
    texts
}

const KERNEL_WORDS: &[&str] = &[
    "load",
    "full",
    "iota",
    "unary",
    "binary",
    "compare",
    "select",
    "cast",
    "reduce",
    "move",
    "matmul",
    "store",
    "loop",
    "yield",
    "carry",
    "pid",
    "f32",
    "f16",
    "bf16",
    "i32",
    "i64",
    "i8",
    "u8",
    "bool",
    "ub",
    "l1",
    "l0a",
    "l0b",
    "l0c",
    "add",
    "sub",
    "mul",
    "div",
    "max",
    "min",
    "pow",
    "rem",
    "mod",
    "exp",
    "ln",
    "sqrt",
    "sum",
    "mean",
    "lt",
    "eq",
    "axis",
    "start",
    "acc",
    "transpose_b",
    "input",
    "output",
    "global",
    "kernel",
    "grid",
    "pad",
    "NaN",
    "inf",
    "-inf",
    "1e308",
    "-0.0",
    "(",
    ")",
    "[",
    "]",
    ",",
    "*",
    "/",
    "%",
    "+",
    "-",
    "{",
    "}",
    "->",
    "=",
    ":",
    "@",
];

/// The text split into words and single punctuation marks, with the spacing kept.
fn tokens(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut word = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '%' | '@') {
            word.push(c);
        } else {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            out.push(c.to_string());
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

fn number_text(rng: &mut SplitMix64) -> String {
    match rng.below(3) {
        0 => format!("{:?}", float(rng)),
        1 => (u64::MAX - rng.below(3) as u64).to_string(),
        _ => int(rng).to_string(),
    }
}

/// One to three edits of a kernel text: numbers to interesting numbers, words to other
/// words, tokens dropped or repeated, lines dropped, repeated, swapped or borrowed from
/// another seed, indices nested deep or made long.
fn mutate_kernel_text(rng: &mut SplitMix64, text: &str, seeds: &[String]) -> String {
    let mut toks = tokens(text);
    for _ in 0..edits(rng) {
        if toks.is_empty() {
            break;
        }
        let at = rng.below(toks.len());
        match rng.below(12) {
            0..=3 => {
                // A number (or a numbered id) to an interesting number.
                let t = &toks[at];
                let prefix = match t.chars().next() {
                    Some(c @ ('%' | '@' | 'i')) if t.len() > 1 && t[1..].parse::<u64>().is_ok() => {
                        c.to_string()
                    }
                    _ => String::new(),
                };
                let digits = rng.below(toks.len());
                let at = (at..toks.len())
                    .chain(0..at)
                    .find(|&i| {
                        toks[i]
                            .trim_start_matches(['%', '@', 'i'])
                            .parse::<f64>()
                            .is_ok()
                    })
                    .unwrap_or(digits);
                let n = number_text(rng);
                toks[at] = format!("{prefix}{}", n.trim_start_matches('-'));
                if n.starts_with('-') && prefix.is_empty() {
                    toks[at] = n;
                }
            }
            4 | 5 => toks[at] = pick(rng, KERNEL_WORDS).to_string(),
            6 => {
                toks.remove(at);
            }
            7 => {
                let copy = toks[at].clone();
                toks.insert(at, copy);
            }
            8 => {
                // Whole lines: drop, repeat, swap, or borrow from another seed.
                let mut lines: Vec<String> = toks.concat().lines().map(str::to_owned).collect();
                if lines.is_empty() {
                    continue;
                }
                let l = rng.below(lines.len());
                match rng.below(4) {
                    0 => {
                        lines.remove(l);
                    }
                    1 => {
                        let copy = lines[l].clone();
                        for _ in 0..=count(rng) {
                            lines.insert(l, copy.clone());
                        }
                    }
                    2 => {
                        let m = rng.below(lines.len());
                        lines.swap(l, m);
                    }
                    _ => {
                        let other: Vec<&str> = pick(rng, seeds).lines().collect();
                        if !other.is_empty() {
                            lines.insert(l, pick(rng, &other).to_string());
                        }
                    }
                }
                toks = tokens(&(lines.join("\n") + "\n"));
            }
            9 => {
                // Deep or long index expressions.
                let depth = 1 + count(rng);
                let expr = match rng.below(3) {
                    0 => format!("{}pid{}", "(".repeat(depth), ")".repeat(depth)),
                    1 => format!("0{}", " + 1".repeat(depth)),
                    _ => format!("min(pid * {}, {})", number_text(rng), number_text(rng)),
                };
                toks[at] = expr;
            }
            10 => toks[at] = String::new(),
            _ => toks.insert(at, format!(" {} ", pick(rng, KERNEL_WORDS))),
        }
    }
    toks.concat()
}

/// The elements of all of `program`'s globals.
fn global_elements(program: &Program) -> u128 {
    program
        .globals
        .iter()
        .map(|g| {
            g.shape
                .iter()
                .fold(1u128, |a, &d| a.saturating_mul(d as u128))
        })
        .fold(0u128, u128::saturating_add)
}

fn kernel_case(rng: &mut SplitMix64, seeds: &[String], profile: &DeviceProfile) -> &'static str {
    let seed_text = pick(rng, seeds).clone();
    let text = mutate_kernel_text(rng, &seed_text, seeds);
    let program = match parse(&text) {
        Ok(program) => program,
        Err(ParseError::Invalid { error, .. })
            if matches!(*error.rule, Rule::WorkOverBudget { .. }) =>
        {
            return "refused at parse: over the work budget";
        }
        Err(_) => return "refused at parse",
    };
    // Printing and parsing again gives the same program.
    // (Compared as text: a NaN pad is not equal to itself.)
    let printed = program.to_string();
    let again = parse(&printed).expect("a printed valid program parses");
    assert_eq!(
        again.to_string(),
        printed,
        "print/parse round trip of\n{text}"
    );
    // The Ascend C lowering generates code from the types alone: any valid program.
    #[cfg(feature = "device")]
    {
        let _ = pto_backends::ascendc::lower_program(
            &program,
            "fuzz",
            pto_backends::ascendc::Soc::Kirin9030,
            profile,
        );
    }
    assert!(
        program.work() <= FUZZ_WORK_BUDGET,
        "validation let through a kernel over the work budget:\n{text}"
    );
    if global_elements(&program) > GLOBAL_ELEMENTS_CAP {
        return "valid, globals over the memory cap";
    }
    let _ = pto_op::kernel::cost::CostModel::new(profile, &program).busy(&program, &program.body);
    let sim = Simulator::new(profile.clone(), SimOptions::default());
    if sim.time(&program).is_err() {
        return "valid, refused by the buffer plan or schedule";
    }
    let inputs: Vec<Tensor> = program
        .globals
        .iter()
        .filter(|g| g.role == pto_op::kernel::ir::GlobalRole::Input)
        .zip(0u64..)
        .map(|(g, i)| Tensor::random(g.shape.clone(), g.dtype, rng.next_u64().wrapping_add(i)))
        .collect();
    let refs: Vec<&Tensor> = inputs.iter().collect();
    match sim.run(&program, &refs) {
        Ok(_) => "executed on the simulator",
        Err(_) => "valid, refused at execution",
    }
}

#[test]
fn fuzz_kernel_text() {
    fuzz_work_budget();
    let (cases, seed) = (
        knob("PTO_FUZZ_CASES", CI_CASES),
        knob("PTO_FUZZ_SEED", 0x5eed),
    );
    let seeds = kernel_seeds();
    for text in &seeds[..2] {
        if let Err(e) = parse(text) {
            panic!("a hand-written seed must parse: {e}\n{text}");
        }
    }
    let profile = DeviceProfile::builtin("kirin9030").expect("built in");
    let (start, mut seeds_rng, mut tally) =
        (Instant::now(), SplitMix64::new(seed), Tally::default());
    for case in 0..cases {
        let case_seed = seeds_rng.next_u64();
        tally.case(case, case_seed, || {
            kernel_case(&mut SplitMix64::new(case_seed), &seeds, &profile)
        });
    }
    tally.finish("kernel text", cases, seed, start);
}
