//! The verbs that compile and run a model on a target: `compile`, `run`, `parity`.

use std::io::{IsTerminal, Write};
use std::path::Path;

use pto_backends::compiler::{
    CompiledModel, NodeRuns, NodeTime, RunError, RunResult, ValueInfo, compile, compile_owned,
};
use pto_backends::parity::compare_compiled;
use pto_op::name::quoted;
use pto_op::target::TargetConfig;
use pto_op::{Model, Tensor, TensorType};
use serde::Serialize;

use crate::args::{BudgetArg, InputArgs, KernelsArg, KernelsChoice, LoadArgs, TargetArgs};
use crate::edge;
use crate::error::CliError;
use crate::load::load_model;
use crate::output::render;
use crate::tensor_file::{read_safetensors, write_tensors};

/// The model MODEL compiled for the target and device the arguments name.
fn compiled(model: &str, load: &LoadArgs, target: &TargetArgs) -> Result<CompiledModel, CliError> {
    let model = load_model(model, load)?;
    let (model, device) =
        with_package_kernels(model, &target.package, target.device.device.clone())?;
    let config = edge::target_config(
        &edge::target_name(target.target.as_deref()),
        device.as_deref(),
    )?;
    let compiled = compile_owned(model, within(config, &target.budget))?;
    note_stale_kernels(&compiled);
    Ok(compiled)
}

/// `model` with the kernels `--kernels` asks for, and the device to run on: `device` as
/// given, else (without PTO_DEVICE) a package's, since its kernels were lowered and sized
/// for its SoC. `linked` sets the shipped kernels aside. The one loader of `compile`, `run`
/// and `parity`.
fn with_package_kernels(
    mut model: Model,
    package: &KernelsArg,
    device: Option<String>,
) -> Result<(Model, Option<String>), CliError> {
    match &package.kernels {
        None | Some(KernelsChoice::Shipped) => Ok((model, device)),
        Some(KernelsChoice::Linked) => {
            model.kernels.clear();
            Ok((model, device))
        }
        Some(KernelsChoice::Package(dir)) => package_kernels(model, dir, device),
    }
}

#[cfg(feature = "device")]
fn package_kernels(
    model: Model,
    dir: &Path,
    device: Option<String>,
) -> Result<(Model, Option<String>), CliError> {
    let device = match device {
        None if std::env::var_os(edge::DEVICE_ENV).is_none() => {
            Some(pto_backends::ascendc::package::read_manifest(dir)?.soc)
        }
        device => device,
    };
    let (model, edits) = pto_backends::ascendc::package::load_package_kernels(&model, dir)?;
    // A kernel edited in the package runs only once it passed parity: say which.
    for edit in edits {
        eprintln!("note: `{}`: {edit}", dir.display());
    }
    Ok((model, device))
}

/// Without the device feature no package value parses (see `parse_kernels`).
#[cfg(not(feature = "device"))]
fn package_kernels(
    model: Model,
    _dir: &Path,
    device: Option<String>,
) -> Result<(Model, Option<String>), CliError> {
    Ok((model, device))
}

/// A note on stderr for each node that runs a stale shipped kernel: what runs, and how to
/// run the op's current kernel instead.
fn note_stale_kernels(compiled: &CompiledModel) {
    for node in &compiled.report().nodes {
        if let NodeRuns::Kernel { source, .. } = node.runs
            && source.stale()
        {
            eprintln!(
                "note: node {} `{}`: {}; the shipped kernel runs (`--kernels linked` runs \
                 the op's current kernel)",
                node.node, node.op, node.runs
            );
        }
    }
}

/// `config` within the budget the arguments give, if any.
fn within(config: TargetConfig, budget: &BudgetArg) -> TargetConfig {
    match budget.max_memory {
        Some(budget) => config.within(budget),
        None => config,
    }
}

/// `pto compile MODEL`: the compile report.
pub(crate) fn compile_report(
    model: &str,
    load: &LoadArgs,
    target: &TargetArgs,
    json: bool,
) -> Result<String, CliError> {
    render(compiled(model, load, target)?.report(), json)
}

/// `pto run MODEL`: each output summarized, and the per-node timing table.
pub(crate) fn run(
    model: &str,
    load: &LoadArgs,
    target: &TargetArgs,
    inputs: &InputArgs,
    outputs: Option<&Path>,
    json: bool,
) -> Result<String, CliError> {
    let compiled = compiled(model, load, target)?;
    let (values, source) = input_values(&compiled, inputs)?;
    let result = run_with_progress_line(&compiled, &values)?;
    let written = match outputs {
        Some(path) => {
            let named: Vec<(String, Tensor)> = compiled
                .outputs()
                .into_iter()
                .zip(&result.outputs)
                .map(|(info, tensor)| (info.name, tensor.clone()))
                .collect();
            Some(write_tensors(path, &named)?)
        }
        None => None,
    };
    let summary = RunSummary {
        written,
        model: compiled.model().name.clone(),
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

/// Where `pto parity` runs: the target checked and the reference, on one device, within
/// one memory budget.
pub(crate) struct ParityTargets<'a> {
    pub target: &'a str,
    pub reference: &'a str,
    pub device: Option<String>,
    pub budget: &'a BudgetArg,
    /// The package whose kernels both targets run, if any.
    pub package: &'a KernelsArg,
}

/// `pto parity MODEL`: every output on `target` against `reference`, both on `device`.
pub(crate) fn parity(
    model: &str,
    load: &LoadArgs,
    targets: &ParityTargets<'_>,
    inputs: &InputArgs,
    json: bool,
) -> Result<String, CliError> {
    let model = load_model(model, load)?;
    let (model, device) = with_package_kernels(model, targets.package, targets.device.clone())?;
    let config = |name: &str| -> Result<TargetConfig, CliError> {
        Ok(within(
            edge::target_config(name, device.as_deref())?,
            targets.budget,
        ))
    };
    let checked = compile(&model, config(targets.target)?)?;
    note_stale_kernels(&checked);
    let expected = compile(&model, config(targets.reference)?)?;
    let (values, _) = input_values(&checked, inputs)?;
    let parity = compare_compiled(&checked, &expected, &values)?;
    let report = render(&parity, json)?;
    if parity.passed() {
        Ok(report)
    } else {
        Err(CliError::ParityFailed { report })
    }
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
) -> Result<RunResult, RunError> {
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

/// What `pto run` prints: where the inputs came from, a summary of each output, the
/// node times.
#[derive(Debug, Serialize)]
struct RunSummary {
    /// What `--outputs` wrote.
    #[serde(skip_serializing_if = "Option::is_none")]
    written: Option<String>,
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
            "model {} on target `{}`, inputs: {}",
            quoted(&self.model),
            self.target,
            self.inputs
        )?;
        for o in &self.outputs {
            let name = quoted(&o.name);
            // No values have no min or max (the folds' infinities are no answer).
            if o.count == 0 {
                writeln!(f, "output {name} {}: empty (0 elements)", o.ty)?;
                continue;
            }
            if o.nan == o.count {
                writeln!(
                    f,
                    "output {name} {}: all {} values are NaN, first {:?}",
                    o.ty, o.count, o.first
                )?;
                continue;
            }
            write!(
                f,
                "output {name} {}: min {:.4}, max {:.4}, mean {:.4}, first {:?}",
                o.ty, o.min, o.max, o.mean, o.first
            )?;
            if o.nan > 0 {
                write!(
                    f,
                    " ({} of {} values are NaN: min and max are of the others)",
                    o.nan, o.count
                )?;
            }
            writeln!(f)?;
        }
        if let Some(written) = &self.written {
            writeln!(f, "wrote {written}")?;
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
    /// The mean of all values: NaN when any is.
    mean: f64,
    first: Vec<f64>,
    /// How many values there are.
    count: usize,
    /// How many are NaN (which `min` and `max` skip).
    nan: usize,
}

impl OutputSummary {
    /// The summary of `tensor`, in one pass over its elements (no copy of them: the run's
    /// peak memory is the plan's, not twice the largest output).
    fn of(info: ValueInfo, tensor: &Tensor) -> OutputSummary {
        let (mut min, mut max, mut sum) = (f64::INFINITY, f64::NEG_INFINITY, 0.0);
        let (mut count, mut nan) = (0usize, 0usize);
        let mut first = Vec::with_capacity(4);
        tensor.for_each_f64(|v| {
            min = min.min(v);
            max = max.max(v);
            sum += v;
            nan += usize::from(v.is_nan());
            if first.len() < 4 {
                first.push((v * 1e4).round() / 1e4);
            }
            count += 1;
        });
        OutputSummary {
            name: info.name,
            ty: info.ty,
            min,
            max,
            mean: sum / count.max(1) as f64,
            first,
            count,
            nan,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::progress_bar;

    #[test]
    fn the_summary_says_when_values_are_nan() {
        use pto_op::{DType, Shape, Tensor};
        let tensor = Tensor::from_vec([4], vec![1.0f32, f32::NAN, -2.0, f32::NAN]).unwrap();
        let info = super::ValueInfo {
            name: "y".to_owned(),
            ty: pto_op::TensorType {
                shape: Shape::from([4]),
                dtype: DType::F32,
            },
        };
        let summary = super::RunSummary {
            written: None,
            model: "m".to_owned(),
            target: "cpu".to_owned(),
            inputs: "random".to_owned(),
            outputs: vec![super::OutputSummary::of(info, &tensor)],
            node_times: vec![],
        };
        let text = summary.to_string();
        assert!(
            text.contains(
                "min -2.0000, max 1.0000, mean NaN, first [1.0, NaN, -2.0, NaN] (2 of 4 \
                 values are NaN: min and max are of the others)"
            ),
            "{text}"
        );
    }

    fn summary_of(tensor: &pto_op::Tensor) -> String {
        let info = super::ValueInfo {
            name: "y".to_owned(),
            ty: pto_op::TensorType {
                shape: tensor.shape(),
                dtype: tensor.dtype(),
            },
        };
        super::RunSummary {
            written: None,
            model: "m".to_owned(),
            target: "cpu".to_owned(),
            inputs: "random".to_owned(),
            outputs: vec![super::OutputSummary::of(info, tensor)],
            node_times: vec![],
        }
        .to_string()
    }

    #[test]
    fn an_empty_output_says_so_instead_of_infinite_bounds() {
        use pto_op::{DType, Shape, Tensor};
        let empty = Tensor::zeros(Shape::from([0, 4]), DType::F32);
        assert_eq!(
            summary_of(&empty),
            "model `m` on target `cpu`, inputs: random\noutput `y` f32[0, 4]: empty (0 \
             elements)\n"
        );
        let nan = Tensor::from_vec([2], vec![f32::NAN, f32::NAN]).unwrap();
        assert_eq!(
            summary_of(&nan),
            "model `m` on target `cpu`, inputs: random\noutput `y` f32[2]: all 2 values are \
             NaN, first [NaN, NaN]\n"
        );
    }

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
