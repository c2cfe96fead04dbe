//! Mutation fuzzing of every kind of file a user hands the tools (issue 31): model files,
//! ONNX files, kernel text, device profiles, `--inputs` files and (with `--features device`)
//! package manifests. Each case is a valid seed file with 1-8 byte-level mutations (bit
//! flips, interesting bytes, inserted, deleted or duplicated runs, a number rewritten to an
//! interesting one, a splice from another seed, truncation), taken as far as it goes: load,
//! `inspect`, `estimate`, compile and a run on cpu and sim; a kernel text through parse,
//! schedule and the simulator; a profile through `estimate`, `compile` and a run on sim; a
//! manifest through `package --check` and `run --kernels`.
//!
//! Unlike the structured fuzzer (`fuzz_structured.rs`), which edits fields and catches
//! panics in its own process, each fuzzer here runs its cases in a **child process** that it
//! watches, so all three failures are found and named with the case that caused them:
//!
//! - a **panic** (caught in the child, which goes on);
//! - an **abort** (the child dies: a stack overflow, an allocation failure, a signal);
//! - a **hang** (a case runs longer than `PTO_FUZZ_HANG_S`, 30 s by default: the child is
//!   killed).
//!
//! The child then restarts after the case. The child runs under an address-space limit
//! (`ulimit -v`, [`CHILD_ADDRESS_SPACE_KIB`]) so a case cannot take the machine's memory,
//! and a lowered kernel work budget ([`FUZZ_WORK_BUDGET`]) so a kernel the budget accepts
//! runs in milliseconds. A case's run stops at the compile report's activations plus
//! weights of [`RUN_CAP_BYTES`].
//!
//! `PTO_FUZZ_CASES` sets the cases per fuzzer (small by default, for CI), `PTO_FUZZ_SEED`
//! the stream, `PTO_FUZZ_HANG_S` the hang limit; `PTO_FUZZ_REPLAY=<case seed>` runs that one
//! case in this process, panicking as usual. A million cases:
//!
//! ```text
//! PTO_FUZZ_CASES=1000000 cargo test -p pto-tests --test fuzz_mutation -- --nocapture --test-threads 1
//! ```

#![cfg(unix)]

mod common;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use pto_backends::compiler::{CompiledModel, compile};
use pto_backends::sim::{SimOptions, Simulator};
use pto_examples as _;
use pto_onnx::OnnxFile as _;
use pto_op::kernel::text::parse;
use pto_op::prelude::*;

use common::run_cap::within_run_cap;
use pto_op::tensor::SplitMix64;
use pto_op::{DeviceProfile, Model};

/// The largest model a case runs: activations plus weights, and any one value, in bytes.
const RUN_CAP_BYTES: u64 = 1 << 22;

/// The kernel work budget of the child (`pto_op::kernel::validate::set_work_budget`), in
/// instruction executions: a kernel within it runs in milliseconds in a debug build.
const FUZZ_WORK_BUDGET: u64 = 1 << 16;

/// The child's address-space limit: far above what a case within the caps needs, far below
/// the machine's memory.
const CHILD_ADDRESS_SPACE_KIB: u64 = 8 << 20;

/// The built-in models whose files, kernels and inputs are the seeds.
const SEED_MODELS: &[&str] = &["pipeline", "mixed", "decoder-block"];

/// The built-in profiles that are the seeds of the profile fuzzer.
const SEED_PROFILES: &[&str] = &["kirin9030", "ascend910b"];

/// `name` from the environment as a number, else `default`.
fn knob(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(default)
}

/// The cases per fuzzer: `PTO_FUZZ_CASES`, else a count that keeps CI short.
fn cases() -> u64 {
    knob("PTO_FUZZ_CASES", 1000)
}

/// The seed of case `case` of the stream `seed`: independent of where a child starts.
fn case_seed(seed: u64, case: u64) -> u64 {
    SplitMix64::new(seed ^ case.wrapping_mul(0x9e37_79b9_7f4a_7c15)).next_u64()
}

// ---------------------------------------------------------------------------------------
// Mutations.

const INTERESTING_BYTES: &[u8] = &[0x00, 0x01, 0x7f, 0x80, 0xff, b'-', b'9', b'"', b'{', b']'];

const INTERESTING_NUMBERS: &[&str] = &[
    "0",
    "-1",
    "1",
    "65535",
    "2147483648",
    "4294967296",
    "9223372036854775807",
    "18446744073709551615",
    "1e308",
    "1e-300",
    "-0",
    "NaN",
    "inf",
    "0.5",
];

fn below(rng: &mut SplitMix64, n: usize) -> usize {
    (rng.next_u64() % n.max(1) as u64) as usize
}

/// A run of ASCII digits (with a sign) in `bytes`, picked at random: where numbers are.
fn number_span(rng: &mut SplitMix64, bytes: &[u8]) -> Option<(usize, usize)> {
    let starts: Vec<usize> = (0..bytes.len())
        .filter(|&i| bytes[i].is_ascii_digit() && (i == 0 || !bytes[i - 1].is_ascii_digit()))
        .collect();
    let &start = starts.get(below(rng, starts.len()))?;
    let end = (start..bytes.len())
        .find(|&i| !(bytes[i].is_ascii_digit() || bytes[i] == b'.'))
        .unwrap_or(bytes.len());
    Some((start, end))
}

/// `seed` with 1-8 mutations (mostly few); `others` are the other seeds of the kind, for splices.
fn mutate(rng: &mut SplitMix64, seed: &[u8], others: &[Vec<u8>]) -> Vec<u8> {
    let mut bytes = seed.to_vec();
    // Mostly one or two mutations, which keep a file loadable more often; up to eight.
    let most = 1 + below(rng, 8);
    for _ in 0..1 + below(rng, most) {
        let len = bytes.len();
        match below(rng, 9) {
            0 if len > 0 => {
                let i = below(rng, len);
                bytes[i] ^= 1 << below(rng, 8);
            }
            1 if len > 0 => {
                let i = below(rng, len);
                bytes[i] = INTERESTING_BYTES[below(rng, INTERESTING_BYTES.len())];
            }
            2 => {
                let at = below(rng, len + 1);
                let run = vec![
                    INTERESTING_BYTES[below(rng, INTERESTING_BYTES.len())];
                    1 + below(rng, 16)
                ];
                bytes.splice(at..at, run);
            }
            3 if len > 0 => {
                let at = below(rng, len);
                let end = (at + 1 + below(rng, 64)).min(len);
                bytes.drain(at..end);
            }
            4 if len > 0 => {
                let at = below(rng, len);
                let end = (at + 1 + below(rng, 256)).min(len);
                let run = bytes[at..end].to_vec();
                let to = below(rng, len + 1);
                bytes.splice(to..to, run);
            }
            5 | 6 => {
                if let Some((start, end)) = number_span(rng, &bytes) {
                    let number = INTERESTING_NUMBERS[below(rng, INTERESTING_NUMBERS.len())];
                    bytes.splice(start..end, number.bytes());
                }
            }
            7 if !others.is_empty() => {
                let other = &others[below(rng, others.len())];
                if !other.is_empty() {
                    let at = below(rng, other.len());
                    let end = (at + 1 + below(rng, 512)).min(other.len());
                    let to = below(rng, len + 1);
                    let cut = (to + (end - at)).min(len);
                    bytes.splice(to..cut, other[at..end].iter().copied());
                }
            }
            8 if len > 0 => bytes.truncate(below(rng, len)),
            _ => {}
        }
    }
    bytes
}

// ---------------------------------------------------------------------------------------
// Seeds.

fn built_in(name: &str) -> Model {
    let def = pto_op::models::find_builtin(name)
        .expect("the registry is sound")
        .unwrap_or_else(|| panic!("built-in model `{name}`"));
    (def.build)().expect("a built-in model builds")
}

fn config(target: &str, profile: Option<&Path>) -> pto_op::target::TargetConfig {
    let device = profile.map(|p| p.to_str().expect("UTF-8 path"));
    pto_cli::edge::target_config(target, device).expect("the target's device loads")
}

/// The dtype name of a safetensors header.
fn safetensors_dtype(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "F32",
        DType::F16 => "F16",
        DType::BF16 => "BF16",
        DType::I32 => "I32",
        DType::I64 => "I64",
        other => panic!("a seed model input of dtype {other}"),
    }
}

/// A safetensors file of `compiled`'s inputs, random values from `seed`.
fn inputs_file(compiled: &CompiledModel, seed: u64) -> Vec<u8> {
    let mut header = serde_json::Map::new();
    let mut data = Vec::new();
    for (input, tensor) in compiled.inputs().iter().zip(compiled.random_inputs(seed)) {
        let bytes = tensor.to_le_bytes();
        header.insert(
            input.name.clone(),
            serde_json::json!({
                "dtype": safetensors_dtype(input.ty.dtype),
                "shape": input.ty.shape.dims(),
                "data_offsets": [data.len(), data.len() + bytes.len()],
            }),
        );
        data.extend_from_slice(&bytes);
    }
    let mut header = serde_json::Value::Object(header).to_string().into_bytes();
    header.resize(header.len().next_multiple_of(8), b' ');
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend(header);
    file.extend(data);
    file
}

/// The kinds of file fuzzed, each with how to make its seeds and how to take a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    ModelFile,
    Onnx,
    KernelText,
    Profile,
    Inputs,
    #[cfg(feature = "device")]
    Manifest,
    /// The supervisor's own test: case 1 panics, case 2 aborts, case 3 hangs.
    Canary,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::ModelFile => "model_file",
            Kind::Onnx => "onnx",
            Kind::KernelText => "kernel_text",
            Kind::Profile => "profile",
            Kind::Inputs => "inputs",
            #[cfg(feature = "device")]
            Kind::Manifest => "manifest",
            Kind::Canary => "canary",
        }
    }

    /// The file name a case is written to.
    fn file(self) -> &'static str {
        match self {
            Kind::ModelFile => "case.pto",
            Kind::Onnx => "case.onnx",
            Kind::KernelText => "case.kernel",
            Kind::Profile => "case.json",
            Kind::Inputs => "case.safetensors",
            #[cfg(feature = "device")]
            Kind::Manifest => "pkg/pto_package.json",
            Kind::Canary => "case.bin",
        }
    }

    fn seeds(self, scratch: &Path) -> Vec<Vec<u8>> {
        // Only a package is written to the scratch directory.
        #[cfg(not(feature = "device"))]
        let _ = scratch;
        let models = || SEED_MODELS.iter().map(|name| built_in(name));
        match self {
            Kind::ModelFile => models()
                .map(|m| m.to_bytes().expect("a built-in model serializes"))
                .collect(),
            Kind::Onnx => models()
                .map(|m| pto_onnx::to_onnx(&m).expect("a built-in model exports"))
                .collect(),
            Kind::KernelText => models()
                .flat_map(|m| m.with_traced_kernels().kernels)
                .map(|k| k.text.into_bytes())
                .collect(),
            Kind::Profile => SEED_PROFILES
                .iter()
                .map(|name| {
                    let profile = DeviceProfile::builtin(name).expect("built in");
                    serde_json::to_vec_pretty(&profile).expect("a profile serializes")
                })
                .collect(),
            Kind::Inputs => {
                let model = built_in(SEED_MODELS[0]);
                let compiled = compile(&model, config("cpu", None)).expect("compiles");
                (0..3).map(|seed| inputs_file(&compiled, seed)).collect()
            }
            #[cfg(feature = "device")]
            Kind::Manifest => {
                let dir = scratch.join("seed-pkg");
                let dir_text = dir.to_str().expect("UTF-8 path");
                pto_cli::run(["pto", "package", SEED_MODELS[0], "-o", dir_text])
                    .expect("the seed package is written");
                vec![std::fs::read(dir.join("pto_package.json")).expect("its manifest")]
            }
            Kind::Canary => vec![b"canary".to_vec()],
        }
        .into_iter()
        .inspect(|bytes| assert!(!bytes.is_empty(), "{self:?}: an empty seed"))
        .collect()
    }

    /// Takes one mutated file (written at `path`) as far as it goes; says how far.
    fn case(self, path: &Path, seed: u64) -> &'static str {
        let text = path.to_str().expect("UTF-8 path");
        match self {
            Kind::ModelFile => exercise(Model::load(path).map_err(|e| e.to_string()), text, seed),
            Kind::Onnx => exercise(
                Model::load_onnx(path).map_err(|e| e.to_string()),
                text,
                seed,
            ),
            Kind::KernelText => kernel_case(path, seed),
            Kind::Profile => profile_case(path, seed),
            Kind::Inputs => {
                let run = |target: &str| {
                    cli(&["run", SEED_MODELS[0], "--target", target, "--inputs", text])
                };
                match (run("cpu"), run("sim")) {
                    (true, true) => "ran on cpu and sim",
                    (false, false) => "refused",
                    _ => "ran on one target",
                }
            }
            #[cfg(feature = "device")]
            Kind::Manifest => {
                let dir = path.parent().expect("in the package");
                let dir = dir.to_str().expect("UTF-8 path");
                let checked = cli(&["package", SEED_MODELS[0], "--check", dir]);
                let ran = cli(&["run", SEED_MODELS[0], "--kernels", dir, "--target", "sim"]);
                match (checked, ran) {
                    (true, true) => "matches and runs",
                    (false, false) => "refused",
                    _ => "refused by one",
                }
            }
            Kind::Canary => match std::fs::metadata(path).map(|m| m.len()) {
                _ if seed == case_seed(CANARY_SEED, 1) => panic!("the canary panics"),
                _ if seed == case_seed(CANARY_SEED, 2) => std::process::abort(),
                _ if seed == case_seed(CANARY_SEED, 3) => loop {
                    std::thread::sleep(Duration::from_secs(1));
                },
                _ => "sang",
            },
        }
    }
}

/// The stream of the canary's cases.
const CANARY_SEED: u64 = 0xca7a;

/// `pto VERB ...` in process; the result is either, only a panic, abort or hang matters.
fn cli(args: &[&str]) -> bool {
    let mut all = vec!["pto"];
    all.extend_from_slice(args);
    pto_cli::run(all).is_ok()
}

/// A loaded model (at `path`) through inspect, estimate, compile and a run on cpu and sim.
fn exercise(model: Result<Model, String>, path: &str, seed: u64) -> &'static str {
    let Ok(model) = model else {
        return "refused at load";
    };
    cli(&["inspect", path]);
    cli(&["estimate", path]);
    let Ok(cpu) = compile(&model, config("cpu", None)) else {
        return "refused at compile";
    };
    if !within_run_cap(&cpu, RUN_CAP_BYTES) {
        return "compiled, over the run cap";
    }
    let inputs = cpu.random_inputs(seed);
    let cpu_ok = cpu.run(&inputs).is_ok();
    let sim_ok = compile(&model, config("sim", None)).is_ok_and(|sim| sim.run(&inputs).is_ok());
    match (cpu_ok, sim_ok) {
        (true, true) => "ran on cpu and sim",
        (false, false) => "refused at run",
        _ => "ran on one target",
    }
}

/// A kernel text through parse (validation), the cost model, the schedule and a run on
/// the simulator.
fn kernel_case(path: &Path, seed: u64) -> &'static str {
    let Ok(bytes) = pto_op::fs::read_regular(path, pto_op::fs::FileKind::KernelSource) else {
        return "refused at read";
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return "refused: not UTF-8";
    };
    let Ok(program) = parse(&text) else {
        return "refused at parse";
    };
    let globals: u128 = program
        .globals
        .iter()
        .map(|g| {
            g.shape
                .iter()
                .fold(1u128, |a, &d| a.saturating_mul(d as u128))
        })
        .fold(0, u128::saturating_add);
    if globals.saturating_mul(8) > u128::from(RUN_CAP_BYTES) {
        return "valid, globals over the run cap";
    }
    let profile = DeviceProfile::builtin("kirin9030").expect("built in");
    let _ = pto_op::kernel::cost::CostModel::new(&profile, &program).busy(&program, &program.body);
    let sim = Simulator::new(profile, SimOptions::default());
    if sim.time(&program).is_err() {
        return "valid, refused by the schedule";
    }
    let inputs: Vec<Tensor> = program
        .globals
        .iter()
        .filter(|g| g.role == pto_op::kernel::ir::GlobalRole::Input)
        .zip(0u64..)
        .map(|(g, i)| Tensor::random(g.shape.clone(), g.dtype, seed.wrapping_add(i)))
        .collect();
    let refs: Vec<&Tensor> = inputs.iter().collect();
    match sim.run(&program, &refs) {
        Ok(_) => "executed on the simulator",
        Err(_) => "valid, refused at execution",
    }
}

/// A device profile through `estimate`, `compile --target sim` and a run on sim.
fn profile_case(path: &Path, _seed: u64) -> &'static str {
    let text = path.to_str().expect("UTF-8 path");
    if DeviceProfile::load(path).is_err() {
        // The CLI must refuse it too, without a panic.
        cli(&["estimate", SEED_MODELS[0], "--device", text]);
        return "refused at load";
    }
    let estimated = cli(&["estimate", SEED_MODELS[0], "--device", text]);
    let compiled = cli(&[
        "compile",
        SEED_MODELS[0],
        "--target",
        "sim",
        "--device",
        text,
    ]);
    let ran = cli(&["run", SEED_MODELS[0], "--target", "sim", "--device", text]);
    match (estimated, compiled, ran) {
        (true, true, true) => "estimated, compiled and ran",
        (_, _, true) => "ran",
        (_, true, false) => "compiled, refused at run",
        _ => "loaded, refused after",
    }
}

// ---------------------------------------------------------------------------------------
// The child: runs cases, says which it is on.

thread_local! {
    static PANIC_PLACE: std::cell::Cell<Option<String>> = const { std::cell::Cell::new(None) };
}

/// A panic hook that records where a panic happened instead of printing a backtrace.
fn quiet_panics() {
    std::panic::set_hook(Box::new(|info| {
        let place = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        PANIC_PLACE.with(|p| p.set(Some(place)));
    }));
}

/// A scratch directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("pto_mutation_{name}_{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("can create a temp dir");
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes case `case_seed`'s file of `kind` into `scratch` (for a manifest: into a fresh
/// copy of the seed package) and returns its path.
fn write_case(kind: Kind, scratch: &Path, seeds: &[Vec<u8>], case_seed: u64) -> PathBuf {
    let mut rng = SplitMix64::new(case_seed);
    let seed = &seeds[below(&mut rng, seeds.len())];
    let bytes = mutate(&mut rng, seed, seeds);
    let path = scratch.join(kind.file());
    #[cfg(feature = "device")]
    if kind == Kind::Manifest {
        let pkg = scratch.join("pkg");
        let _ = std::fs::remove_dir_all(&pkg);
        copy_tree(&scratch.join("seed-pkg"), &pkg);
    }
    std::fs::write(&path, bytes).expect("can write a case file");
    path
}

#[cfg(feature = "device")]
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("can create a dir");
    for entry in std::fs::read_dir(from).expect("listable") {
        let entry = entry.expect("an entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("can copy");
        }
    }
}

/// The child's loop: cases `start..end`, each announced on stderr before it runs
/// (`@case N SEED`) and reported after (`@ok N OUTCOME` or `@panic N SEED PLACE: MESSAGE`);
/// `@done` at the end.
fn child(kind: Kind, seed: u64, start: u64, end: u64) {
    pto_op::kernel::validate::set_work_budget(FUZZ_WORK_BUDGET);
    let scratch = Scratch::new(kind.name());
    let seeds = kind.seeds(&scratch.0);
    quiet_panics();
    for case in start..end {
        let case_seed = case_seed(seed, case);
        eprintln!("@case {case} {case_seed:#x}");
        let result = catch_unwind(AssertUnwindSafe(|| {
            let path = write_case(kind, &scratch.0, &seeds, case_seed);
            kind.case(&path, case_seed)
        }));
        match result {
            Ok(outcome) => eprintln!("@ok {case} {outcome}"),
            Err(payload) => {
                let place = PANIC_PLACE.with(|p| p.take()).unwrap_or_default();
                let message = payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default()
                    .replace('\n', " | ");
                eprintln!("@panic {case} {case_seed:#x} {place}: {message}");
            }
        }
    }
    eprintln!("@done");
}

// ---------------------------------------------------------------------------------------
// The parent: watches children.

/// What the children found, and the outcome counts.
#[derive(Default)]
struct Findings {
    outcomes: BTreeMap<String, u64>,
    panics: Vec<String>,
    aborts: Vec<String>,
    hangs: Vec<String>,
}

/// A line of a child's stderr, or its end.
enum Line {
    Text(String),
    End,
}

/// Runs cases `0..cases` of `kind` (stream `seed`) in children of the test `test`,
/// restarting after an abort or a hang (a case over `hang`), and returns what they found.
fn supervise(kind: Kind, test: &str, seed: u64, cases: u64, hang: Duration) -> Findings {
    let mut findings = Findings::default();
    let mut next = 0;
    while next < cases {
        let mut child = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "ulimit -v {CHILD_ADDRESS_SPACE_KIB} && exec \"$0\" \"$@\""
            ))
            .arg(std::env::current_exe().expect("the test binary"))
            .args([test, "--exact", "--nocapture", "--test-threads", "1"])
            .env("PTO_FUZZ_CHILD", format!("{seed}:{next}:{cases}"))
            .env_remove("PTO_DEVICE")
            .env_remove("PTO_TARGET")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the child starts");
        let stderr = child.stderr.take().expect("piped");
        let (send, receive) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if send.send(Line::Text(line)).is_err() {
                    return;
                }
            }
            let _ = send.send(Line::End);
        });
        let mut current: Option<(u64, String)> = None;
        let mut tail: Vec<String> = Vec::new();
        let (mut done, mut hung) = (false, false);
        loop {
            match receive.recv_timeout(hang) {
                Ok(Line::Text(line)) => {
                    let mut words = line.splitn(3, ' ');
                    match (words.next(), words.next(), words.next()) {
                        (Some("@case"), Some(case), Some(case_seed)) => {
                            let case = case.parse().expect("a case number");
                            current = Some((case, case_seed.to_owned()));
                            next = case + 1;
                            tail.clear();
                        }
                        (Some("@ok"), Some(_), Some(outcome)) => {
                            *findings.outcomes.entry(outcome.to_owned()).or_default() += 1;
                            current = None;
                        }
                        (Some("@panic"), Some(case), Some(rest)) => {
                            findings.panics.push(format!("case {case}: {rest}"));
                            current = None;
                        }
                        (Some("@done"), _, _) => done = true,
                        _ => {
                            tail.push(line);
                            if tail.len() > 40 {
                                tail.remove(0);
                            }
                        }
                    }
                }
                Ok(Line::End) => break,
                Err(_) => {
                    let _ = child.kill();
                    let (case, case_seed) = current.take().unwrap_or((next, "?".to_owned()));
                    findings.hangs.push(format!(
                        "case {case} (case seed {case_seed}) still runs after {hang:?}"
                    ));
                    next = case + 1;
                    hung = true;
                    break;
                }
            }
        }
        let status = child.wait().expect("the child ends");
        if let Some((case, case_seed)) = current {
            findings.aborts.push(format!(
                "case {case} (case seed {case_seed}): the child ended ({status}); its last \
                 words: {}",
                tail.join(" | ")
            ));
            next = case + 1;
        } else if !done && !hung {
            panic!(
                "the child of {} ended ({status}) before its first case: {}",
                kind.name(),
                tail.join(" | ")
            );
        }
    }
    findings
}

/// Fuzzes `kind` as the knobs say and fails on any panic, abort or hang, naming each
/// case's seed.
fn fuzz_and_check(kind: Kind, test: &str) {
    let (cases, seed) = (cases(), knob("PTO_FUZZ_SEED", 0x5eed));
    let hang = Duration::from_secs(knob("PTO_FUZZ_HANG_S", 30));
    if let Ok(replay) = std::env::var("PTO_FUZZ_REPLAY") {
        let case_seed = u64::from_str_radix(replay.trim_start_matches("0x"), 16)
            .expect("PTO_FUZZ_REPLAY is a case seed in hex");
        pto_op::kernel::validate::set_work_budget(FUZZ_WORK_BUDGET);
        let scratch = Scratch::new(&format!("{}_replay", kind.name()));
        let seeds = kind.seeds(&scratch.0);
        let path = write_case(kind, &scratch.0, &seeds, case_seed);
        eprintln!("replaying {case_seed:#x}: {}", kind.case(&path, case_seed));
        return;
    }
    let started = Instant::now();
    let findings = supervise(kind, test, seed, cases, hang);
    let mut line = format!(
        "{}: {cases} cases in {:.1?}: {} panic(s), {} abort(s), {} hang(s);",
        kind.name(),
        started.elapsed(),
        findings.panics.len(),
        findings.aborts.len(),
        findings.hangs.len()
    );
    for (outcome, n) in &findings.outcomes {
        let _ = write!(line, " {outcome}: {n};");
    }
    eprintln!("{line}");
    let found: Vec<&str> = findings
        .panics
        .iter()
        .chain(&findings.aborts)
        .chain(&findings.hangs)
        .map(String::as_str)
        .collect();
    assert!(
        found.is_empty(),
        "{}: replay one with PTO_FUZZ_SEED={seed} PTO_FUZZ_REPLAY=<case seed> cargo test -p \
         pto-tests{} --test fuzz_mutation {test} -- --nocapture:\n{}",
        kind.name(),
        if cfg!(feature = "device") {
            " --features device"
        } else {
            ""
        },
        found.join("\n")
    );
    let counted = findings.outcomes.values().sum::<u64>();
    assert_eq!(counted, cases, "every case ends in an outcome");
}

/// The test body: the child's loop when this process is a child, else the parent's.
fn fuzz(kind: Kind, test: &str) {
    match std::env::var("PTO_FUZZ_CHILD") {
        Ok(range) => {
            let numbers: Vec<u64> = range
                .split(':')
                .map(|n| n.parse().expect("seed:start:end"))
                .collect();
            child(kind, numbers[0], numbers[1], numbers[2]);
        }
        Err(_) if kind == Kind::Canary => {}
        Err(_) => fuzz_and_check(kind, test),
    }
}

#[test]
fn mutate_model_files() {
    fuzz(Kind::ModelFile, "mutate_model_files");
}

#[test]
fn mutate_onnx_files() {
    fuzz(Kind::Onnx, "mutate_onnx_files");
}

#[test]
fn mutate_kernel_text() {
    fuzz(Kind::KernelText, "mutate_kernel_text");
}

#[test]
fn mutate_profiles() {
    fuzz(Kind::Profile, "mutate_profiles");
}

#[test]
fn mutate_inputs_files() {
    fuzz(Kind::Inputs, "mutate_inputs_files");
}

#[cfg(feature = "device")]
#[test]
fn mutate_package_manifests() {
    fuzz(Kind::Manifest, "mutate_package_manifests");
}

/// The supervisor finds what it is for: a case that panics, one that aborts the child and
/// one that hangs are each reported with their case, and the cases after them still run.
#[test]
fn the_supervisor_reports_panics_aborts_and_hangs() {
    const TEST: &str = "the_supervisor_reports_panics_aborts_and_hangs";
    if std::env::var("PTO_FUZZ_CHILD").is_ok() {
        return fuzz(Kind::Canary, TEST);
    }
    let findings = supervise(Kind::Canary, TEST, CANARY_SEED, 6, Duration::from_secs(3));
    let seed = |case| format!("{:#x}", case_seed(CANARY_SEED, case));
    assert_eq!(findings.panics.len(), 1, "{:?}", findings.panics);
    assert!(
        findings.panics[0].starts_with(&format!("case 1: {} ", seed(1)))
            && findings.panics[0].ends_with("the canary panics"),
        "{:?}",
        findings.panics
    );
    assert_eq!(findings.aborts.len(), 1, "{:?}", findings.aborts);
    assert!(
        findings.aborts[0].starts_with(&format!("case 2 (case seed {}): the child ended", seed(2))),
        "{:?}",
        findings.aborts
    );
    assert_eq!(
        findings.hangs,
        [format!(
            "case 3 (case seed {}) still runs after 3s",
            seed(3)
        )]
    );
    assert_eq!(findings.outcomes.get("sang"), Some(&3), "cases 0, 4 and 5");
}
