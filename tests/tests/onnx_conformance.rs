//! The ONNX conformance suite: every ONNX backend node test (`onnx/backend/test/data/node/*`,
//! shipped inside the `onnx` pip package) whose nodes are all operators that import reads
//! ([`pto_onnx::imported_op_types`]) is imported, compiled and run on `cpu` and on `sim`
//! with each of its test data sets, and compared with the expected outputs.
//!
//! Graph inputs that feed a param (Reshape's shape, Slice's starts, the axes of a
//! reduction: [`pto_onnx::param_inputs`]) are bound to each data set's values at import
//! ([`pto_onnx::ImportOptions::constants`]), as pto-op compiles static shapes; the other
//! inputs are given to the run.
//!
//! Prints the per-op counts (attempted / pass cpu / pass sim) and the totals. Fails when a
//! test fails that `onnx_conformance_failures.txt` does not list (a regression), when a
//! listed test passes (the list is stale: shorten it), or when a pass rate falls below its
//! floor. Each line of the list is `test<TAB>stage<TAB>refusal`, the stage being `import`
//! (refused by import, so on both targets), `cpu`, `sim` or `cpu+sim`.
//!
//! Knobs: `PTO_CONFORMANCE_FILTER=text` runs only the tests whose name contains `text` (the
//! list is then checked for those only, and the floors not at all);
//! `PTO_CONFORMANCE_BLESS=1` rewrites the list from this run's failures.
//!
//! Needs the `onnx` package of `requirements-test.txt` (`scripts/test` installs it) to find
//! the test data; without it the test fails, unless `PTO_SKIP_PYTHON=1` is set explicitly.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use prost::Message;
use pto_backends::compiler::compile;
use pto_onnx::proto::{ModelProto, ValueInfoProto};
use pto_onnx::{
    ImportOptions, from_onnx, from_onnx_with, imported_op_types, param_inputs, tensor_from_onnx,
    tensor_of_value,
};
use pto_op::{DType, Model, Tensor, Tolerance};

use common::python::python;

/// The lowest share of attempted tests that must pass on cpu, from the measured result.
const FLOOR_CPU: f64 = 0.98;
/// The lowest share of attempted tests that must pass on sim, from the measured result.
const FLOOR_SIM: f64 = 0.98;

/// The checked-in list of the tests expected to fail.
fn failures_file() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/onnx_conformance_failures.txt")
}

/// The node test directory of the installed `onnx` package.
fn node_tests() -> Option<PathBuf> {
    let out = python(
        "import onnx, os; print(os.path.join(os.path.dirname(onnx.__file__), \
         'backend', 'test', 'data', 'node'))",
        &[] as &[&str],
    )?;
    Some(PathBuf::from(out.trim()))
}

/// The tolerance of the ONNX backend tests (`rtol 1e-3`, `atol 1e-7`), loosened to the
/// project's default for the dtype (16-bit floats); exact for integers and bool.
fn tolerance(dtype: DType) -> Tolerance {
    if dtype.is_float() {
        Tolerance::new(1e-3, 1e-7).looser(Tolerance::for_dtype(dtype))
    } else {
        Tolerance::for_dtype(dtype)
    }
}

/// One test's data set: inputs in graph input order, expected outputs in graph output order.
struct DataSet {
    name: String,
    inputs: Vec<Tensor>,
    outputs: Vec<Tensor>,
}

/// The `.pb` files `prefix_0.pb`, `prefix_1.pb`, ... of `dir`, read in index order as the
/// values `infos` declare (a value that is not a tensor is refused by name).
fn read_tensors(dir: &Path, prefix: &str, infos: &[ValueInfoProto]) -> Result<Vec<Tensor>, String> {
    let mut tensors = Vec::new();
    for index in 0.. {
        let path = dir.join(format!("{prefix}_{index}.pb"));
        if !path.exists() {
            break;
        }
        let bytes = fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let read = match infos.get(index) {
            Some(info) => tensor_of_value(&bytes, info),
            None => tensor_from_onnx(&bytes),
        };
        let (_, tensor) = read.map_err(|e| format!("test data {prefix}_{index}.pb: {e}"))?;
        tensors.push(tensor);
    }
    Ok(tensors)
}

/// The data sets of the test in `dir`, whose graph inputs (initializers left out) and
/// outputs are `inputs` and `outputs`.
fn data_sets(
    dir: &Path,
    inputs: &[ValueInfoProto],
    outputs: &[ValueInfoProto],
) -> Result<Vec<DataSet>, String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("test_data_set_"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let set = dir.join(&name);
            Ok(DataSet {
                inputs: read_tensors(&set, "input", inputs)?,
                outputs: read_tensors(&set, "output", outputs)?,
                name,
            })
        })
        .collect()
}

/// Why a test fails on `target`, or `None` when every data set matches: each data set runs
/// on its model (one model for all, unless inputs are bound per set).
fn run_on(cases: &[(Model, DataSet)], target: &str) -> Option<String> {
    for (model, set) in cases {
        let compiled = match compile(model, target) {
            Ok(c) => c,
            Err(e) => return Some(format!("compile: {e}")),
        };
        let result = match compiled.run(&set.inputs) {
            Ok(r) => r,
            Err(e) => return Some(format!("{}: run: {e}", set.name)),
        };
        if result.outputs.len() != set.outputs.len() {
            return Some(format!(
                "{}: {} output(s), expected {}",
                set.name,
                result.outputs.len(),
                set.outputs.len()
            ));
        }
        for (k, (actual, expected)) in result.outputs.iter().zip(&set.outputs).enumerate() {
            if actual.dtype() != expected.dtype() {
                return Some(format!(
                    "{}: output {k} is {}, expected {}",
                    set.name,
                    actual.dtype(),
                    expected.dtype()
                ));
            }
            match actual.compare(expected, tolerance(expected.dtype())) {
                Ok(c) if c.passed() => {}
                Ok(c) => return Some(format!("{}: output {k}: {c}", set.name)),
                Err(e) => return Some(format!("{}: output {k}: {e}", set.name)),
            }
        }
    }
    None
}

/// The outcome of one test.
struct Outcome {
    /// The op type of its nodes, or `(several ops)`.
    ops: String,
    /// `(stage, refusal)` when it fails somewhere.
    failure: Option<(String, String)>,
    cpu: bool,
    sim: bool,
}

/// The positions (in the graph's input list, initializers left out) of the graph inputs
/// that feed a param of a node ([`pto_onnx::param_inputs`]): import needs their values.
fn bound_inputs(proto: &ModelProto) -> Vec<usize> {
    let Some(graph) = &proto.graph else {
        return Vec::new();
    };
    let initializers: BTreeSet<&str> = graph.initializer.iter().map(|i| i.name.as_str()).collect();
    let params: BTreeSet<&str> = graph
        .node
        .iter()
        .flat_map(|n| {
            param_inputs(&n.op_type)
                .into_iter()
                .filter_map(|i| n.input.get(i).map(String::as_str))
        })
        .collect();
    graph
        .input
        .iter()
        .filter(|i| !initializers.contains(i.name.as_str()))
        .enumerate()
        .filter(|(_, i)| params.contains(i.name.as_str()))
        .map(|(k, _)| k)
        .collect()
}

fn run_test(dir: &Path, ops: String) -> Outcome {
    let fail = |stage: &str, why: String| Outcome {
        ops: ops.clone(),
        failure: Some((stage.to_owned(), one_line(&why))),
        cpu: false,
        sim: false,
    };
    let bytes = match fs::read(dir.join("model.onnx")) {
        Ok(b) => b,
        Err(e) => return fail("import", e.to_string()),
    };
    let proto = match ModelProto::decode(bytes.as_slice()) {
        Ok(p) => p,
        Err(e) => return fail("import", e.to_string()),
    };
    let bound = bound_inputs(&proto);
    let (inputs, outputs): (Vec<ValueInfoProto>, Vec<ValueInfoProto>) =
        proto.graph.as_ref().map_or_else(Default::default, |g| {
            let initializers: BTreeSet<&str> =
                g.initializer.iter().map(|i| i.name.as_str()).collect();
            let inputs = g
                .input
                .iter()
                .filter(|i| !initializers.contains(i.name.as_str()))
                .cloned()
                .collect();
            (inputs, g.output.clone())
        });
    let names: Vec<String> = inputs.iter().map(|i| i.name.clone()).collect();
    let sets = match data_sets(dir, &inputs, &outputs) {
        Ok(s) => s,
        Err(e) => return fail("import", e),
    };
    let mut cases = Vec::new();
    let mut shared: Option<Model> = None;
    for set in sets {
        let model = if bound.is_empty() {
            match &shared {
                Some(m) => m.clone(),
                None => match from_onnx(&bytes) {
                    Ok(m) => shared.insert(m).clone(),
                    Err(e) => return fail("import", e.to_string()),
                },
            }
        } else {
            // Params given as graph inputs: bound to this data set's values at import.
            let mut options = ImportOptions::default();
            for &k in &bound {
                if let (Some(name), Some(value)) = (names.get(k), set.inputs.get(k)) {
                    options = options.constant(name.clone(), value.clone());
                }
            }
            match from_onnx_with(&bytes, &options) {
                Ok(m) => m,
                Err(e) => return fail("import", e.to_string()),
            }
        };
        let inputs = set
            .inputs
            .into_iter()
            .enumerate()
            .filter(|(k, _)| !bound.contains(k))
            .map(|(_, t)| t)
            .collect();
        cases.push((
            model,
            DataSet {
                name: set.name,
                inputs,
                outputs: set.outputs,
            },
        ));
    }
    let cpu = run_on(&cases, "cpu");
    let sim = run_on(&cases, "sim");
    let failure = match (&cpu, &sim) {
        (None, None) => None,
        (Some(c), None) => Some(("cpu".to_owned(), one_line(c))),
        (None, Some(s)) => Some(("sim".to_owned(), one_line(s))),
        (Some(c), Some(s)) if c == s => Some(("cpu+sim".to_owned(), one_line(c))),
        (Some(c), Some(s)) => Some((
            "cpu+sim".to_owned(),
            one_line(&format!("cpu: {c} | sim: {s}")),
        )),
    };
    Outcome {
        ops,
        failure,
        cpu: cpu.is_none(),
        sim: sim.is_none(),
    }
}

/// `text` on one line, without tabs (a line of the failures list).
fn one_line(text: &str) -> String {
    text.replace(['\n', '\t'], " ")
}

/// The op types of the model's nodes if import claims them all.
fn claimed_ops(path: &Path, claimed: &BTreeSet<&str>) -> Option<String> {
    let bytes = fs::read(path).ok()?;
    let proto = ModelProto::decode(bytes.as_slice()).ok()?;
    let graph = proto.graph?;
    let ops: BTreeSet<String> = graph.node.iter().map(|n| n.op_type.clone()).collect();
    let all_claimed = graph.node.iter().all(|n| {
        (n.domain.is_empty() || n.domain == "ai.onnx") && claimed.contains(n.op_type.as_str())
    });
    let mut shown: Vec<&str> = ops
        .iter()
        .map(String::as_str)
        .filter(|o| *o != "Constant")
        .collect();
    if shown.is_empty() {
        shown.push("Constant");
    }
    let group = match shown.as_slice() {
        [one] => (*one).to_owned(),
        // The expanded forms of ONNX functions (`*_expanded`): a subgraph of several ops.
        _ => "(several ops)".to_owned(),
    };
    (all_claimed && !graph.node.is_empty()).then_some(group)
}

fn parse_failures(text: &str) -> BTreeMap<String, (String, String)> {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut parts = l.splitn(3, '\t');
            let test = parts.next().unwrap_or_default().to_owned();
            let stage = parts.next().unwrap_or_default().to_owned();
            let why = parts.next().unwrap_or_default().to_owned();
            (test, (stage, why))
        })
        .collect()
}

#[test]
fn onnx_backend_node_tests_of_the_imported_ops() {
    let Some(root) = node_tests() else {
        return;
    };
    let filter = std::env::var("PTO_CONFORMANCE_FILTER").ok();
    let claimed: BTreeSet<&str> = imported_op_types().into_iter().collect();
    let mut tests: Vec<String> = fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| filter.as_deref().is_none_or(|f| n.contains(f)))
        .collect();
    tests.sort();

    let mut outcomes: BTreeMap<String, Outcome> = BTreeMap::new();
    for test in &tests {
        let dir = root.join(test);
        let Some(ops) = claimed_ops(&dir.join("model.onnx"), &claimed) else {
            continue;
        };
        outcomes.insert(test.clone(), run_test(&dir, ops));
    }

    // Per op: attempted / pass cpu / pass sim.
    let mut per_op: BTreeMap<&str, (usize, usize, usize)> = BTreeMap::new();
    for o in outcomes.values() {
        let e = per_op.entry(o.ops.as_str()).or_default();
        e.0 += 1;
        e.1 += usize::from(o.cpu);
        e.2 += usize::from(o.sim);
    }
    let attempted = outcomes.len();
    let pass_cpu = outcomes.values().filter(|o| o.cpu).count();
    let pass_sim = outcomes.values().filter(|o| o.sim).count();
    let mut table = String::new();
    let width = per_op.keys().map(|k| k.len()).max().unwrap_or(2).max(2);
    let _ = writeln!(
        table,
        "{:<width$} {:>9} {:>8} {:>8}",
        "op", "attempted", "pass cpu", "pass sim"
    );
    for (op, (a, c, s)) in &per_op {
        let _ = writeln!(table, "{op:<width$} {a:>9} {c:>8} {s:>8}");
    }
    let percent = |n: usize| 100.0 * n as f64 / attempted.max(1) as f64;
    let _ = writeln!(
        table,
        "{:<width$} {attempted:>9} {pass_cpu:>8} {pass_sim:>8}   ({:.1}% cpu, {:.1}% sim)",
        "total",
        percent(pass_cpu),
        percent(pass_sim)
    );
    eprintln!("ONNX backend node tests of the imported ops:\n{table}");

    let failures: BTreeMap<String, (String, String)> = outcomes
        .iter()
        .filter_map(|(t, o)| o.failure.clone().map(|f| (t.clone(), f)))
        .collect();
    if std::env::var("PTO_CONFORMANCE_BLESS").as_deref() == Ok("1") {
        let mut text = String::from(
            "# The ONNX backend node tests expected to fail (tests/tests/onnx_conformance.rs):\n\
             # test<TAB>stage<TAB>refusal. Regenerate with PTO_CONFORMANCE_BLESS=1.\n",
        );
        for (test, (stage, why)) in &failures {
            let _ = writeln!(text, "{test}\t{stage}\t{why}");
        }
        pto_op::fs::write_atomic(failures_file(), text.as_bytes()).expect("the list is written");
        eprintln!(
            "wrote {} failures to {}",
            failures.len(),
            failures_file().display()
        );
        return;
    }

    let listed_text = fs::read_to_string(failures_file()).unwrap_or_default();
    let listed: BTreeMap<String, (String, String)> = parse_failures(&listed_text)
        .into_iter()
        .filter(|(t, _)| filter.as_deref().is_none_or(|f| t.contains(f)))
        .collect();
    let mut problems = Vec::new();
    for (test, (stage, why)) in &failures {
        match listed.get(test) {
            None => problems.push(format!("NEW FAILURE {test} ({stage}): {why}")),
            Some((listed_stage, _)) if listed_stage != stage => problems.push(format!(
                "{test}: fails at `{stage}`, listed at `{listed_stage}`: {why}"
            )),
            Some(_) => {}
        }
    }
    for test in listed.keys() {
        if !failures.contains_key(test) {
            let state = if outcomes.contains_key(test) {
                "passes now"
            } else {
                "is no longer attempted"
            };
            problems.push(format!("{test} {state}: remove it from the list"));
        }
    }
    assert!(
        problems.is_empty(),
        "{} differ(s) from {} (PTO_CONFORMANCE_BLESS=1 rewrites it):\n{}",
        problems.len(),
        failures_file().display(),
        problems.join("\n")
    );
    if filter.is_none() {
        let (cpu, sim) = (
            pass_cpu as f64 / attempted.max(1) as f64,
            pass_sim as f64 / attempted.max(1) as f64,
        );
        assert!(
            cpu >= FLOOR_CPU,
            "cpu pass rate {cpu:.3} < floor {FLOOR_CPU}"
        );
        assert!(
            sim >= FLOOR_SIM,
            "sim pass rate {sim:.3} < floor {FLOOR_SIM}"
        );
    }
}
