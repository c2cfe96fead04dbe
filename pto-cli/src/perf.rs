//! The verbs of the performance model: `estimate`, `accuracy`, `calibrate`.

use std::path::{Path, PathBuf};

use pto_estimator::Estimator;
use pto_estimator::llm::{self, LlmConfig, Phase, Quant, Workload, sweep};
use pto_estimator::report::ModelReport;
use pto_estimator::roofline::Peaks;

use crate::accuracy::{accuracy, calibrate, standard_sweeps};
use crate::args::{PhaseArg, QuantArg, ServingArgs};
use crate::edge;
use crate::error::CliError;
use crate::load::load_graph;
use crate::output::render;

/// `pto estimate MODEL`: the model report on the device, and the plot and trace files
/// asked for.
pub(crate) fn estimate(
    model: &str,
    load: &crate::args::LoadArgs,
    device: Option<&str>,
    plot: Option<&Path>,
    trace: Option<&Path>,
    json: bool,
) -> Result<String, CliError> {
    let (name, graph) = if crate::load::names_builtin(model) {
        load_graph(model, load)?
    } else {
        // A model file is checked as `pto compile` checks it: an op whose signature changed
        // since the model was built, or recorded types the op no longer gives, are refused.
        let file = crate::load::load_model(model, load)?;
        let ops = pto_backends::compiler::resolve(&file)?;
        pto_backends::compiler::check_types(&file, &ops)?;
        (file.name, file.graph)
    };
    let device = edge::device(device)?;
    // A kernel that does not fit the device's buffers cannot run there: the estimator's
    // buffer check (the simulator's) says so, and the report prices the call as memory
    // traffic.
    let mut estimator = Estimator::linked(&device)?;
    let report = ModelReport::of_graph(&name, &graph, &mut estimator)?;
    if let Some(path) = plot {
        report.write_plot(path, &Peaks::of(&device))?;
    }
    if let Some(path) = trace {
        report.write_trace(path)?;
    }
    render(&report, json)
}

/// `pto estimate --llm CONFIG.json`: one serving step (or a sweep of them) of the LLM the
/// config describes, on one device of its tensor-parallel group.
pub(crate) fn estimate_llm(
    config_path: &Path,
    serving: &ServingArgs,
    device: Option<&str>,
    plot: Option<&Path>,
    trace: Option<&Path>,
    json: bool,
) -> Result<String, CliError> {
    let config = LlmConfig::load(config_path)?;
    let name = config_path
        .parent()
        .and_then(Path::file_name)
        .filter(|_| config_path.file_name().is_some_and(|f| f == "config.json"))
        .or_else(|| config_path.file_stem())
        .map_or_else(
            || config.model_type.clone(),
            |n| n.to_string_lossy().into_owned(),
        );
    let workload = Workload {
        name,
        phase: match serving.phase {
            PhaseArg::Prefill => Phase::Prefill,
            PhaseArg::Decode => Phase::Decode,
        },
        batch: serving.batch,
        seq: serving.seq,
        context: serving.context,
        tp: serving.tp,
        quant: match serving.quant {
            QuantArg::None => Quant::None,
            QuantArg::W8a8 => Quant::W8A8,
            QuantArg::W4a16 => Quant::W4A16,
        },
    };
    let device = edge::device(device)?;
    if !serving.sweep.is_empty() {
        let points = sweep::sweep(&config, &sweep::grid(&workload, &serving.sweep), &device)?;
        return if json {
            Ok(serde_json::to_string_pretty(&points)?)
        } else {
            Ok(sweep::table(&points))
        };
    }
    let mut estimator = Estimator::linked(&device)?;
    let mut report = llm::estimate(&config, &workload, &mut estimator)?;
    if serving.max_batch {
        let capacity = report.memory.capacity_bytes.ok_or_else(|| {
            CliError::from(pto_estimator::EstimateError::Workload {
                model: workload.name.clone(),
                message: format!(
                    "`--max-batch` needs the device's memory, and `{}` has no node profile",
                    device.name
                ),
            })
        })?;
        report.max_batch = Some(llm::max_batch(&config, &workload, capacity)?);
    }
    if let Some(path) = plot {
        report.report.write_plot(path, &Peaks::of(&device))?;
    }
    if let Some(path) = trace {
        report.report.write_trace(path)?;
    }
    render(&report, json)
}

/// `pto accuracy`: the estimator against the simulator on the held-out sweep.
pub(crate) fn accuracy_report(
    device: Option<&str>,
    cases: bool,
    json: bool,
) -> Result<String, CliError> {
    let profile = edge::device(device)?;
    let (_, held_out) = standard_sweeps()?;
    let report = accuracy(&profile, &held_out)?;
    if json || !cases {
        render(&report, json)
    } else {
        Ok(format!("{report}\n\n{}", report.case_table()))
    }
}

/// `pto calibrate`: fits on the training sweep, writes the calibrated profile, reports
/// the held-out sweep before and after.
pub(crate) fn calibrate_report(
    device: Option<&str>,
    output: Option<&Path>,
    json: bool,
) -> Result<String, CliError> {
    let profile = edge::device(device)?;
    let output = output.map_or_else(
        || PathBuf::from(format!("{}.calibrated.json", profile.name)),
        Path::to_path_buf,
    );
    let (training, held_out) = standard_sweeps()?;
    let provenance = format!(
        "fitted by `pto calibrate --device {}` against the tile simulator on the training \
         sweep (pto_estimator::accuracy::sweep(Split::Training))",
        device.unwrap_or(&profile.name)
    );
    let report = calibrate(&profile, &training, &held_out, &output, &provenance)?;
    render(&report, json)
}
