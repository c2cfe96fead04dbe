//! Many workloads of one model at once: a grid of batches, lengths and group sizes, each
//! estimated on its own thread's estimator, over every core.

use serde::Serialize;

use super::config::LlmConfig;
use super::workload::Workload;
use super::{LlmReport, estimate};
use crate::{EstimateError, Estimator};

/// One axis of a sweep: a workload field and its values (`batch=1,8,32`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Axis {
    /// `batch`, `seq`, `context` or `tp`.
    pub field: String,
    /// Its values.
    pub values: Vec<usize>,
}

impl std::str::FromStr for Axis {
    type Err = String;

    /// `FIELD=V1,V2,...`, FIELD one of `batch`, `seq`, `context`, `tp`.
    fn from_str(text: &str) -> Result<Axis, String> {
        let (field, values) = text
            .split_once('=')
            .ok_or_else(|| format!("`{text}`: expected FIELD=V1,V2,... (e.g. batch=1,8,32)"))?;
        if !["batch", "seq", "context", "tp"].contains(&field) {
            return Err(format!(
                "`{field}`: a sweep varies batch, seq, context or tp"
            ));
        }
        let values = values
            .split(',')
            .map(|v| {
                v.trim()
                    .parse::<usize>()
                    .map_err(|e| format!("`{v}` in `{text}`: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Axis {
            field: field.to_owned(),
            values,
        })
    }
}

/// Every workload of the grid `axes` spans around `base`, the first axis slowest.
pub fn grid(base: &Workload, axes: &[Axis]) -> Vec<Workload> {
    let mut workloads = vec![base.clone()];
    for axis in axes {
        workloads = workloads
            .iter()
            .flat_map(|w| {
                axis.values.iter().map(move |&value| {
                    let mut w = w.clone();
                    match axis.field.as_str() {
                        "batch" => w.batch = value,
                        "seq" => w.seq = value,
                        "context" => w.context = value,
                        _ => w.tp = value,
                    }
                    w
                })
            })
            .collect();
    }
    workloads
}

/// One point of a sweep: its workload, and its report or why it has none.
#[derive(Debug, Serialize)]
pub struct SweepPoint {
    /// The workload.
    pub workload: Workload,
    /// Its estimate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report: Option<LlmReport>,
    /// Why it could not be estimated (heads that `tp` does not divide, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Estimates every workload on `device`, split over the machine's cores (one estimator
/// per thread, so each thread's cache serves its own share), in the order given.
///
/// # Errors
///
/// Only the linked registry's error; a workload that does not fit the model is a point
/// with its `error`.
pub fn sweep(
    config: &LlmConfig,
    workloads: &[Workload],
    device: &pto_op::DeviceProfile,
) -> Result<Vec<SweepPoint>, EstimateError> {
    let chain = crate::chain::Chain::linked()?;
    let threads = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(workloads.len().max(1));
    let chunk = workloads.len().div_ceil(threads).max(1);
    let mut points: Vec<SweepPoint> = Vec::with_capacity(workloads.len());
    std::thread::scope(|scope| {
        let handles: Vec<_> = workloads
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    let mut estimator = Estimator::new(chain, device);
                    part.iter()
                        .map(|w| match estimate(config, w, &mut estimator) {
                            Ok(report) => SweepPoint {
                                workload: w.clone(),
                                report: Some(report),
                                error: None,
                            },
                            Err(e) => SweepPoint {
                                workload: w.clone(),
                                report: None,
                                error: Some(e.to_string()),
                            },
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for handle in handles {
            match handle.join() {
                Ok(part) => points.extend(part),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
    });
    Ok(points)
}

/// The sweep as a table: one row per point, its time, tokens per second and memory.
pub fn table(points: &[SweepPoint]) -> String {
    let mut out = format!(
        "{:>7} {:>6} {:>8} {:>3} {:>12} {:>12} {:>11}  memory\n",
        "phase", "batch", "length", "tp", "time (ms)", "tokens/s", "peak (MiB)"
    );
    for point in points {
        let w = &point.workload;
        let length = match w.phase {
            super::Phase::Prefill => w.seq,
            super::Phase::Decode => w.context,
        };
        let head = format!(
            "{:>7} {:>6} {:>8} {:>3}",
            w.phase.to_string(),
            w.batch,
            length,
            w.tp
        );
        match (&point.report, &point.error) {
            (Some(r), _) => {
                let seconds = r.report.total_seconds;
                let tokens = match w.phase {
                    super::Phase::Prefill => w.batch * w.seq,
                    super::Phase::Decode => w.batch,
                };
                let fits = match r.memory.fits() {
                    Some(true) => "fits",
                    Some(false) => "does not fit",
                    None => "-",
                };
                out.push_str(&format!(
                    "{head} {:>12.3} {:>12.1} {:>11.1}  {fits}\n",
                    seconds * 1e3,
                    tokens as f64 / seconds,
                    r.memory.peak_bytes as f64 / (1u64 << 20) as f64
                ));
            }
            (None, error) => {
                out.push_str(&format!("{head}  {}\n", error.as_deref().unwrap_or("")));
            }
        }
    }
    out.pop();
    out
}
