//! The verbs of the performance model: `estimate`, `accuracy`, `calibrate`.

use std::path::{Path, PathBuf};

use pto_estimator::Estimator;
use pto_estimator::report::ModelReport;
use pto_estimator::roofline::Peaks;

use crate::accuracy::{accuracy, calibrate, standard_sweeps};
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
