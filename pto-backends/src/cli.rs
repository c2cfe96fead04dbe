//! The `pto` command line, as a library: any operator crate gets the whole tool with
//!
//! ```ignore
//! use my_ops as _; // links the crate's ops (and models it registers)
//! fn main() -> std::process::ExitCode {
//!     pto_backends::cli::main()
//! }
//! ```
//!
//! Subcommands: `ops`, `models`, `export`, `compile`, `run`, `parity`, `estimate`,
//! `estimators`, `accuracy`, `calibrate`, `inspect`; `--json`
//! on every report. A MODEL argument is an ONNX or model file (`pto export` writes both),
//! else the
//! name of a built-in model (see [`crate::models`]). The target is `--target`, else
//! `PTO_TARGET`, else `cpu`.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use pto_op::{AttrValue, Model, Tensor, TensorType};
use serde::Serialize;

use crate::buffers::{BufferPlan, human_bytes};
use crate::compiler::{
    CompileError, CompiledModel, NodeTime, RunError, ValueInfo, choose_target, compile,
};
use crate::models::{builtin_models, find_builtin};
use crate::parity::{ParityError, compare_compiled};
use crate::tensor_file::{TensorFileError, read_safetensors};

/// Describe, compile, run and compare pto-op models on any linked target.
#[derive(Debug, Parser)]
#[command(
    name = "pto",
    version,
    about = "Operators described once: list them, and export, compile, run, compare and inspect models on a target (cpu, sim)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the linked ops (`--json`: their schemas).
    Ops {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the built-in models.
    Models {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write a model to an ONNX file (`.onnx`) or a model file (any other name: one
    /// safetensors file of weights, graph and op schemas).
    Export {
        /// A model file or a built-in model's name.
        model: String,
        /// The file to write (atomically).
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Compile a model for a target and print the compile report: nodes, what runs each,
    /// kernels and fallbacks, peak activation and weight memory.
    Compile {
        /// A model file or a built-in model's name.
        model: String,
        /// The target (default: PTO_TARGET, else cpu).
        #[arg(long)]
        target: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run a model: a summary of each output and the per-node timing table.
    Run {
        /// A model file or a built-in model's name.
        model: String,
        /// The target (default: PTO_TARGET, else cpu).
        #[arg(long)]
        target: Option<String>,
        #[command(flatten)]
        inputs: InputArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run a model on a target and on a reference target with the same inputs and compare
    /// every output.
    Parity {
        /// A model file or a built-in model's name.
        model: String,
        /// The target checked.
        #[arg(long, default_value = "sim")]
        target: String,
        /// The target it is checked against.
        #[arg(long, default_value = "cpu")]
        reference: String,
        #[command(flatten)]
        inputs: InputArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Estimate a model's time on a device: per-op table (time, share, bound, source),
    /// totals, weight and peak activation memory.
    Estimate {
        /// A model file or a built-in model's name.
        model: String,
        /// A built-in device profile's name, or a profile file.
        #[arg(long, default_value = "kirin9030")]
        device: String,
        /// Write the roofline plot as SVG to this file (atomically).
        #[arg(long, value_name = "FILE.svg")]
        plot: Option<PathBuf>,
        /// Write the timeline as a Chrome trace to this file (atomically).
        #[arg(long, value_name = "FILE.json")]
        trace: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// List every estimator and properties registration: op, device, level, kind, source,
    /// and whether it is in force.
    Estimators {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// The estimator against the tile simulator on the held-out shape sweep of every op
    /// with a kernel: per op the median and largest error, and the overall median.
    Accuracy {
        /// A built-in device profile's name, or a profile file (a calibrated one is
        /// estimated calibrated).
        #[arg(long, default_value = "kirin9030")]
        device: String,
        /// Print every case too.
        #[arg(long)]
        cases: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Fit per-op corrections of the estimator to the simulator on the training sweep,
    /// write the calibrated profile, and print the held-out error before and after.
    Calibrate {
        /// A built-in device profile's name, or a profile file.
        #[arg(long, default_value = "kirin9030")]
        device: String,
        /// The calibrated profile to write (atomically); default `NAME.calibrated.json` in
        /// the current directory.
        #[arg(short, long, value_name = "FILE.json")]
        output: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show a model: inputs, weights, outputs, nodes with their shapes and dtypes, memory.
    Inspect {
        /// A model file or a built-in model's name.
        model: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
struct InputArgs {
    /// Read the inputs, by name, from a safetensors file.
    #[arg(long, value_name = "FILE.safetensors")]
    inputs: Option<PathBuf>,
    /// Random inputs from this seed (the default, with seed 0).
    #[arg(long, value_name = "SEED", conflicts_with = "inputs")]
    random: Option<u64>,
}

/// An error of the command line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    /// The arguments do not parse (or ask for help or the version).
    #[error("{0}")]
    Usage(#[from] clap::Error),
    /// Two built-in models share a name.
    #[error(transparent)]
    DuplicateModel(#[from] Box<pto_op::registration::DuplicateRegistration>),
    /// No model file or built-in model of that name.
    #[error("no model file `{name}` and no built-in model of that name; built-in models: {known}")]
    UnknownModel {
        /// The name asked for.
        name: String,
        /// The built-in models' names.
        known: String,
    },
    /// A model's builder failed.
    #[error("building model `{name}`: {message}")]
    Build {
        /// The model.
        name: String,
        /// The builder's error.
        message: String,
    },
    /// A model file could not be read or written.
    #[error(transparent)]
    ModelFile(#[from] pto_op::model::ModelFileError),
    /// An ONNX file could not be read or written.
    #[error(transparent)]
    Onnx(#[from] pto_op::onnx::OnnxError),
    /// The registry of ops is broken (two ops share a name).
    #[error(transparent)]
    Registry(#[from] pto_op::RegistryError),
    /// Compiling failed.
    #[error(transparent)]
    Compile(#[from] CompileError),
    /// Running failed.
    #[error(transparent)]
    Run(#[from] RunError),
    /// Comparing failed.
    #[error(transparent)]
    Parity(#[from] ParityError),
    /// An input file could not be read.
    #[error(transparent)]
    Inputs(#[from] TensorFileError),
    /// A model's parity check found outputs that differ (the report says which).
    #[error("{0}")]
    ParityFailed(String),
    /// A device profile could not be loaded.
    #[error(transparent)]
    Device(#[from] pto_op::DeviceError),
    /// Estimating failed.
    #[error(transparent)]
    Estimate(#[from] pto_estimator::EstimateError),
    /// A report could not be printed as JSON.
    #[error("printing JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// Runs the command line on the process's arguments: prints the report on stdout, an error
/// on stderr, and returns the exit code (2 for usage errors, 1 for other failures).
pub fn main() -> ExitCode {
    match run(std::env::args_os()) {
        Ok(report) => {
            // A closed pipe (`pto ops | head`) is not a failure of the command.
            let _ = writeln!(std::io::stdout(), "{report}");
            ExitCode::SUCCESS
        }
        Err(CliError::Usage(e)) => {
            // clap formats help, version and usage errors itself.
            let _ = e.print();
            ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2))
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the command line on `args` (the first is the program's name) and returns the
/// report it would print.
///
/// ```
/// use pto_backends as _;
/// let out = pto_backends::cli::run(["pto", "models"]).unwrap();
/// assert!(out.starts_with("built-in models"));
/// ```
///
/// # Errors
///
/// A [`CliError`]: bad arguments, an unknown model, a failing compile or run, or a parity
/// check whose outputs differ.
pub fn run<I, T>(args: I) -> Result<String, CliError>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = Cli::try_parse_from(args)?;
    match cli.command {
        Command::Ops { json } => ops(json),
        Command::Models { json } => models(json),
        Command::Export {
            model,
            output,
            json,
        } => {
            let model = load_model(&model)?;
            if is_onnx(&output) {
                model.save_onnx(&output)?;
            } else {
                model.save(&output)?;
            }
            let exported = Exported {
                model: model.name.clone(),
                file: output.display().to_string(),
                nodes: model.graph.nodes.len(),
                ops: model.schemas.keys().cloned().collect(),
                weight_bytes: model.weight_bytes(),
            };
            render(&exported, json)
        }
        Command::Compile {
            model,
            target,
            json,
        } => {
            let model = load_model(&model)?;
            let compiled = compile(&model, &choose_target(target.as_deref()))?;
            render(compiled.report(), json)
        }
        Command::Run {
            model,
            target,
            inputs,
            json,
        } => {
            let model = load_model(&model)?;
            let compiled = compile(&model, &choose_target(target.as_deref()))?;
            let (values, source) = input_values(&compiled, &inputs)?;
            let result = run_with_progress_line(&compiled, &values)?;
            let summary = RunSummary {
                model: model.name.clone(),
                target: compiled.target().to_owned(),
                inputs: source,
                outputs: compiled
                    .outputs()
                    .into_iter()
                    .zip(&result.outputs)
                    .map(|(info, tensor)| OutputSummary::of(info, tensor))
                    .collect(),
                node_times: result.node_times.clone(),
            };
            if json {
                Ok(serde_json::to_string_pretty(&summary)?)
            } else {
                Ok(format!("{summary}{}", result.timing_table().trim_end()))
            }
        }
        Command::Parity {
            model,
            target,
            reference,
            inputs,
            json,
        } => {
            let model = load_model(&model)?;
            let checked = compile(&model, &target)?;
            let expected = compile(&model, &reference)?;
            let (values, _) = input_values(&checked, &inputs)?;
            let parity = compare_compiled(&checked, &expected, &values)?;
            let report = render(&parity, json)?;
            if parity.passed() {
                Ok(report)
            } else {
                Err(CliError::ParityFailed(report))
            }
        }
        Command::Estimate {
            model,
            device,
            plot,
            trace,
            json,
        } => {
            let (name, graph) = load_graph(&model)?;
            let device = pto_op::DeviceProfile::resolve(&device)?;
            let mut estimator = pto_estimator::Estimator::linked(&device)?;
            let report =
                pto_estimator::report::ModelReport::of_graph(&name, &graph, &mut estimator)?;
            if let Some(path) = plot {
                report.write_plot(&path, &pto_estimator::roofline::Peaks::of(&device))?;
            }
            if let Some(path) = trace {
                report.write_trace(&path)?;
            }
            render(&report, json)
        }
        Command::Estimators { json } => estimators(json),
        Command::Accuracy {
            device,
            cases,
            json,
        } => {
            let profile = pto_op::DeviceProfile::resolve(&device)?;
            let (_, held_out) = crate::accuracy::standard_sweeps();
            let report = crate::accuracy::accuracy(&profile, &held_out)?;
            if json || !cases {
                render(&report, json)
            } else {
                Ok(format!("{report}\n\n{}", report.case_table()))
            }
        }
        Command::Calibrate {
            device,
            output,
            json,
        } => {
            let profile = pto_op::DeviceProfile::resolve(&device)?;
            let output = output
                .unwrap_or_else(|| PathBuf::from(format!("{}.calibrated.json", profile.name)));
            let (training, held_out) = crate::accuracy::standard_sweeps();
            let provenance = format!(
                "fitted by `pto calibrate --device {device}` against the tile simulator on the \
                 training sweep (pto_estimator::accuracy::sweep(Split::Training))"
            );
            let report =
                crate::accuracy::calibrate(&profile, &training, &held_out, &output, &provenance)?;
            render(&report, json)
        }
        Command::Inspect { model, json } => render(&Inspection::of(&load_model(&model)?), json),
    }
}

/// A report as JSON or as its `Display` text.
fn render<R: Serialize + core::fmt::Display>(report: &R, json: bool) -> Result<String, CliError> {
    if json {
        Ok(serde_json::to_string_pretty(report)?)
    } else {
        Ok(report.to_string())
    }
}

/// True for a path that names an ONNX file.
fn is_onnx(path: &std::path::Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("onnx"))
}

/// The model a MODEL argument names: an ONNX or model file if one exists at that path,
/// else a built-in model.
fn load_model(name: &str) -> Result<Model, CliError> {
    let path = std::path::Path::new(name);
    if path.is_file() {
        return Ok(if is_onnx(path) {
            Model::load_onnx(path)?
        } else {
            Model::load(path)?
        });
    }
    let def = find_builtin(name)?.ok_or_else(|| CliError::UnknownModel {
        name: name.to_owned(),
        known: match builtin_models().unwrap_or_default().as_slice() {
            [] => "none (link a crate that registers some)".to_owned(),
            all => all.iter().map(|m| m.name).collect::<Vec<_>>().join(", "),
        },
    })?;
    (def.build)().map_err(|e| CliError::Build {
        name: def.name.to_owned(),
        message: e.to_string(),
    })
}

/// The graph a MODEL argument names, for estimation: a built-in model's weights need not
/// exist (see [`crate::models::ModelDef::describe`]).
fn load_graph(name: &str) -> Result<(String, pto_op::GraphDef), CliError> {
    if !std::path::Path::new(name).is_file()
        && let Some(def) = find_builtin(name)?
    {
        let graph = def.graph().map_err(|e| CliError::Build {
            name: def.name.to_owned(),
            message: e.to_string(),
        })?;
        return Ok((def.name.to_owned(), graph));
    }
    let model = load_model(name)?;
    Ok((model.name, model.graph))
}

fn estimators(json: bool) -> Result<String, CliError> {
    let all = pto_estimator::chain::Chain::linked()?.registrations();
    if json {
        return Ok(serde_json::to_string_pretty(&all)?);
    }
    let mut out = format!(
        "{} registration(s)\n{:<22} {:<11} {:<8} {:<11} {:<9} {:<9} source",
        all.len(),
        "op",
        "device",
        "level",
        "kind",
        "override",
        "in force"
    );
    for r in all {
        out.push_str(&format!(
            "\n{:<22} {:<11} {:<8} {:<11} {:<9} {:<9} {}",
            r.op,
            r.device.as_deref().unwrap_or("all"),
            r.level,
            r.kind,
            if r.overrides { "yes" } else { "no" },
            if r.in_force { "yes" } else { "NO" },
            r.source
        ));
    }
    Ok(out)
}

/// The inputs the arguments ask for, and where they come from, for the report.
fn input_values(
    compiled: &CompiledModel,
    args: &InputArgs,
) -> Result<(Vec<Tensor>, String), CliError> {
    match &args.inputs {
        Some(path) => {
            let named = read_safetensors(path)?;
            Ok((compiled.order_inputs(named)?, path.display().to_string()))
        }
        None => {
            let seed = args.random.unwrap_or(0);
            Ok((compiled.random_inputs(seed), format!("random, seed {seed}")))
        }
    }
}

/// A progress bar: `[#########-----------] 9/20 std.matmul`.
fn progress_bar(done: usize, total: usize, label: &str) -> String {
    const WIDTH: usize = 20;
    let filled = (done * WIDTH)
        .checked_div(total)
        .unwrap_or(WIDTH)
        .min(WIDTH);
    format!(
        "[{}{}] {done}/{total} {label}",
        "#".repeat(filled),
        "-".repeat(WIDTH - filled)
    )
}

/// Runs, with a progress bar on stderr when it is a terminal.
fn run_with_progress_line(
    compiled: &CompiledModel,
    inputs: &[Tensor],
) -> Result<crate::compiler::RunResult, RunError> {
    let total = compiled.report().nodes.len();
    let mut stderr = std::io::stderr();
    if !stderr.is_terminal() {
        return compiled.run(inputs);
    }
    let result = compiled.run_with_progress(inputs, &mut |node, op| {
        let _ = write!(stderr, "\r\x1b[2K{}", progress_bar(node + 1, total, op));
        let _ = stderr.flush();
    });
    let _ = write!(stderr, "\r\x1b[2K");
    result
}

fn ops(json: bool) -> Result<String, CliError> {
    let ops = pto_op::registry::ops()?;
    if json {
        let schemas: Vec<pto_op::OpSchema> = ops.iter().map(|op| op.schema()).collect();
        return Ok(serde_json::to_string_pretty(&schemas)?);
    }
    let mut out = format!("{} linked op(s)\n", ops.len());
    for op in ops {
        let params: Vec<String> = op
            .params
            .iter()
            .map(|p| format!("{}: {}", p.name, p.ty))
            .collect();
        out.push_str(&format!(
            "{:<22} v{}  ({}) -> ({})  params({})  {}\n",
            op.name,
            op.version,
            op.inputs.join(", "),
            op.outputs.join(", "),
            params.join(", "),
            if op.kernel.is_some() {
                "kernel"
            } else {
                "reference only"
            }
        ));
    }
    Ok(out.trim_end().to_owned())
}

fn models(json: bool) -> Result<String, CliError> {
    #[derive(Serialize)]
    struct Entry {
        name: &'static str,
        description: &'static str,
    }
    let all: Vec<Entry> = builtin_models()?
        .into_iter()
        .map(|m| Entry {
            name: m.name,
            description: m.description,
        })
        .collect();
    if json {
        return Ok(serde_json::to_string_pretty(&all)?);
    }
    let mut out = format!("built-in models ({})", all.len());
    for m in all {
        out.push_str(&format!("\n{:<16} {}", m.name, m.description));
    }
    Ok(out)
}

/// What `pto export` prints.
#[derive(Debug, Serialize)]
struct Exported {
    model: String,
    file: String,
    nodes: usize,
    ops: Vec<String>,
    weight_bytes: u64,
}

impl core::fmt::Display for Exported {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "exported model `{}` to {}: {} node(s) of {} op(s) ({}), weights {}",
            self.model,
            self.file,
            self.nodes,
            self.ops.len(),
            self.ops.join(", "),
            human_bytes(self.weight_bytes)
        )
    }
}

/// What `pto run` prints: where the inputs came from, a summary of each output, the
/// node times.
#[derive(Debug, Serialize)]
struct RunSummary {
    model: String,
    target: String,
    inputs: String,
    outputs: Vec<OutputSummary>,
    node_times: Vec<NodeTime>,
}

impl core::fmt::Display for RunSummary {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        writeln!(
            f,
            "model `{}` on target `{}`, inputs: {}",
            self.model, self.target, self.inputs
        )?;
        for o in &self.outputs {
            writeln!(
                f,
                "output `{}` {}: min {:.4}, max {:.4}, mean {:.4}, first {:?}",
                o.name, o.ty, o.min, o.max, o.mean, o.first
            )?;
        }
        Ok(())
    }
}

/// One output, summarized.
#[derive(Debug, Serialize)]
struct OutputSummary {
    name: String,
    #[serde(rename = "type")]
    ty: TensorType,
    min: f64,
    max: f64,
    mean: f64,
    first: Vec<f64>,
}

impl OutputSummary {
    fn of(info: ValueInfo, tensor: &Tensor) -> OutputSummary {
        let values = tensor.to_f64_vec();
        let count = values.len().max(1) as f64;
        OutputSummary {
            name: info.name,
            ty: info.ty,
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            mean: values.iter().sum::<f64>() / count,
            first: values
                .iter()
                .take(4)
                .map(|v| (v * 1e4).round() / 1e4)
                .collect(),
        }
    }
}

/// What `pto inspect` prints: the model's values, nodes and memory, without a target.
#[derive(Debug, Serialize)]
struct Inspection {
    model: String,
    inputs: Vec<ValueInfo>,
    weights: Vec<ValueInfo>,
    outputs: Vec<ValueInfo>,
    nodes: Vec<InspectedNode>,
    peak_activation_bytes: u64,
    weight_bytes: u64,
}

#[derive(Debug, Serialize)]
struct InspectedNode {
    node: usize,
    op: String,
    attrs: BTreeMap<String, AttrValue>,
    inputs: Vec<ValueInfo>,
    outputs: Vec<ValueInfo>,
    live_bytes: u64,
}

impl Inspection {
    fn of(model: &Model) -> Inspection {
        let graph = &model.graph;
        let info = |id: &usize| {
            graph.values.get(*id).map(|v| ValueInfo {
                name: v.name.clone(),
                ty: v.ty.clone(),
            })
        };
        let plan = BufferPlan::of(graph);
        Inspection {
            model: model.name.clone(),
            inputs: graph.inputs.iter().filter_map(info).collect(),
            weights: graph.weights.iter().filter_map(info).collect(),
            outputs: graph.outputs.iter().filter_map(info).collect(),
            nodes: graph
                .nodes
                .iter()
                .enumerate()
                .map(|(index, node)| InspectedNode {
                    node: index,
                    op: node.op.clone(),
                    attrs: node.attrs.clone(),
                    inputs: node.inputs.iter().filter_map(info).collect(),
                    outputs: node.outputs.iter().filter_map(info).collect(),
                    live_bytes: plan.live_bytes.get(index).copied().unwrap_or(0),
                })
                .collect(),
            peak_activation_bytes: plan.peak_activation_bytes,
            weight_bytes: plan.weight_bytes,
        }
    }
}

impl core::fmt::Display for Inspection {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let list = |values: &[ValueInfo]| {
            values
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        writeln!(f, "model `{}`", self.model)?;
        writeln!(f, "inputs:  {}", list(&self.inputs))?;
        writeln!(f, "weights: {}", list(&self.weights))?;
        writeln!(f, "outputs: {}", list(&self.outputs))?;
        for node in &self.nodes {
            let attrs: Vec<String> = node.attrs.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let names = |values: &[ValueInfo]| {
                values
                    .iter()
                    .map(|v| v.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            writeln!(
                f,
                "{:>4}  {:<22} ({}) -> {}  [{}]  live {}",
                node.node,
                node.op,
                names(&node.inputs),
                list(&node.outputs),
                attrs.join(", "),
                human_bytes(node.live_bytes)
            )?;
        }
        write!(
            f,
            "peak activation memory {}, weights {}",
            human_bytes(self.peak_activation_bytes),
            human_bytes(self.weight_bytes)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::progress_bar;

    #[test]
    fn the_progress_bar_fills_with_the_nodes_done() {
        assert_eq!(progress_bar(0, 4, "a"), "[--------------------] 0/4 a");
        assert_eq!(
            progress_bar(1, 4, "std.matmul"),
            "[#####---------------] 1/4 std.matmul"
        );
        assert_eq!(progress_bar(4, 4, "b"), "[####################] 4/4 b");
        assert_eq!(
            progress_bar(0, 0, "empty"),
            "[####################] 0/0 empty"
        );
    }
}
