//! Accuracy of the estimator against a reference timing (the tile simulator, in practice):
//! shape sweeps of the ops with kernels, the error of each case, and the median and
//! largest error of each op.
//!
//! The sweeps are the ops' own: each op (or its crate) registers one with
//! [`pto_op::register_sweep!`], and [`sweep`] takes every linked op that has a kernel and a
//! sweep. This crate names no op.
//!
//! This crate does not depend on the simulator: the reference is any function from a
//! [`Case`] to seconds (`pto accuracy` passes `pto_backends::sim::Sim::time_call`).
//!
//! ```
//! use pto_estimator::accuracy::{Split, measure, sweep};
//! let kirin = pto_op::DeviceProfile::builtin("kirin9030").unwrap();
//! let mut estimator = pto_estimator::Estimator::linked(&kirin).unwrap();
//! let adds: Vec<_> = sweep(Split::HeldOut).unwrap().into_iter().filter(|c| c.op == "std.add").collect();
//! // A reference that times every case at 1 ms.
//! let report = measure("1 ms", &adds, &mut estimator, &mut |_| Ok(1e-3)).unwrap();
//! assert_eq!((report.ops.len(), report.ops[0].cases), (1, 6));
//! assert!(report.median_error.unwrap() > 0.0);
//! ```

use pto_op::table::column_width;
use pto_op::{Attributes, TensorType, registry};
use serde::Serialize;

use crate::chain::Source;
use crate::{EstimateError, Estimator};

/// One call of an op in a sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Case {
    /// The op.
    pub op: String,
    /// Its input types.
    pub inputs: Vec<TensorType>,
    /// Its params (defaults for those not given).
    pub attrs: Attributes,
}

impl Case {
    /// The input shapes, `[m, k] x [k, n]`.
    pub fn shapes(&self) -> String {
        self.inputs
            .iter()
            .map(|t| t.shape.to_string())
            .collect::<Vec<_>>()
            .join(" x ")
    }
}

/// Which half of the standard sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    /// The sizes calibration fits on.
    Training,
    /// Other sizes, between and beyond the training ones: where accuracy is reported.
    HeldOut,
}

impl core::fmt::Display for Split {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.pad(match self {
            Split::Training => "training",
            Split::HeldOut => "held-out",
        })
    }
}

/// The cases of `split` of every linked op that has a kernel and a registered sweep (see
/// [`pto_op::sweep`]), ordered by op name, default params: for each op, every other of its
/// sizes (the even ones for training, the odd ones held out), so both halves span small
/// to large and neither contains the other's sizes.
///
/// # Errors
///
/// [`EstimateError::Sweep`] when two sweeps name one op; [`EstimateError::Registry`] when
/// the op registry is broken.
pub fn sweep(split: Split) -> Result<Vec<Case>, EstimateError> {
    let first = match split {
        Split::Training => 0,
        Split::HeldOut => 1,
    };
    let registry = registry::registry()?;
    let mut cases = Vec::new();
    for sweep in pto_op::sweep::sweeps().map_err(EstimateError::Sweep)? {
        if !registry.find(sweep.op).is_ok_and(|op| op.kernel.is_some()) {
            continue;
        }
        for inputs in (sweep.sizes)().into_iter().skip(first).step_by(2) {
            cases.push(Case {
                op: sweep.op.to_owned(),
                inputs,
                attrs: Attributes::new(),
            });
        }
    }
    Ok(cases)
}

/// One case: the reference's time, the estimate, and the error.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseAccuracy {
    /// The op.
    pub op: String,
    /// Its input shapes.
    pub shapes: String,
    /// The estimate without the launch cost ([`crate::OpEstimate::kernel_seconds`]: the
    /// simulator times one kernel and models no launch), in seconds.
    pub estimated_seconds: f64,
    /// The link of the chain that answered.
    pub source: Source,
    /// Whether the device's calibration corrected the estimate.
    pub calibrated: bool,
    /// The reference's time, in seconds; `None` when it could not time the case.
    pub reference_seconds: Option<f64>,
    /// `|estimate - reference| / reference`.
    pub error: Option<f64>,
    /// Why the case has no reference time.
    pub skipped: Option<String>,
}

/// The errors of one op over its cases.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpAccuracy {
    /// The op.
    pub op: String,
    /// Cases with a reference time.
    pub cases: usize,
    /// Cases without one.
    pub skipped: usize,
    /// Median error.
    pub median_error: Option<f64>,
    /// Largest error.
    pub max_error: Option<f64>,
    /// `source` of its estimates (`, calibrated` when corrected).
    pub source: String,
}

/// The accuracy of one device's estimates over a sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AccuracyReport {
    /// The device profile's name.
    pub device: String,
    /// What the estimates were compared with.
    pub reference: String,
    /// Every case, in sweep order.
    pub cases: Vec<CaseAccuracy>,
    /// Every op, in sweep order.
    pub ops: Vec<OpAccuracy>,
    /// The median error over every case with a reference time.
    pub median_error: Option<f64>,
}

/// Compares `estimator`'s estimate of each case with `reference`'s time. A case the
/// reference cannot time (an error message) is kept, as skipped, with the message.
///
/// # Errors
///
/// The estimator's error, or [`EstimateError::Model`] for a case whose op is not linked or
/// whose inputs its shape rules reject.
pub fn measure(
    reference_name: &str,
    cases: &[Case],
    estimator: &mut Estimator<'_>,
    reference: &mut dyn FnMut(&Case) -> Result<f64, String>,
) -> Result<AccuracyReport, EstimateError> {
    let mut rows = Vec::with_capacity(cases.len());
    for case in cases {
        let info = registry::find(&case.op)?
            .invoke_info(&case.inputs, &case.attrs)
            .map_err(|e| EstimateError::Model {
                model: format!("accuracy sweep, {} {}", case.op, case.shapes()),
                message: e.to_string(),
            })?;
        let estimated = estimator.estimate(&info)?;
        let (reference_seconds, skipped) = match reference(case) {
            Ok(seconds) if seconds > 0.0 => (Some(seconds), None),
            Ok(seconds) => (None, Some(format!("reference time {seconds} s"))),
            Err(message) => (None, Some(message)),
        };
        rows.push(CaseAccuracy {
            op: case.op.clone(),
            shapes: case.shapes(),
            estimated_seconds: estimated.kernel_seconds(),
            source: estimated.source,
            calibrated: estimated.calibrated,
            error: reference_seconds.map(|r| (estimated.kernel_seconds() - r).abs() / r),
            reference_seconds,
            skipped,
        });
    }
    let mut by_op: Vec<(String, Vec<&CaseAccuracy>)> = Vec::new();
    for row in &rows {
        match by_op.iter_mut().find(|(op, _)| *op == row.op) {
            Some((_, members)) => members.push(row),
            None => by_op.push((row.op.clone(), vec![row])),
        }
    }
    let ops = by_op
        .into_iter()
        .map(|(op, members)| {
            let errors: Vec<f64> = members.iter().filter_map(|r| r.error).collect();
            let mut sources: Vec<String> = members.iter().map(|r| source_words(r)).collect();
            sources.dedup();
            OpAccuracy {
                op,
                cases: errors.len(),
                skipped: members.len() - errors.len(),
                median_error: median(&errors),
                max_error: errors.iter().copied().reduce(f64::max),
                source: sources.join(" / "),
            }
        })
        .collect();
    let all: Vec<f64> = rows.iter().filter_map(|r| r.error).collect();
    Ok(AccuracyReport {
        device: estimator.device().name.clone(),
        reference: reference_name.to_owned(),
        median_error: median(&all),
        cases: rows,
        ops,
    })
}

fn source_words(row: &CaseAccuracy) -> String {
    if row.calibrated {
        format!("{}, calibrated", row.source)
    } else {
        row.source.to_string()
    }
}

/// The median of `values` (the mean of the middle two for an even count); `None` when
/// empty.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

fn percent(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{:.1}%", v * 100.0))
}

impl core::fmt::Display for AccuracyReport {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        writeln!(
            f,
            "estimator (kernel time, launch cost excluded) vs {} on {}: {} case(s), median error {}",
            self.reference,
            self.device,
            self.cases.len(),
            percent(self.median_error)
        )?;
        let op_w = column_width("overall", self.ops.iter().map(|op| op.op.as_str()));
        writeln!(
            f,
            "{:<op_w$} {:>5} {:>8} {:>8}  source",
            "op", "cases", "median", "max"
        )?;
        for op in &self.ops {
            let skipped = if op.skipped > 0 {
                format!(" ({} skipped)", op.skipped)
            } else {
                String::new()
            };
            writeln!(
                f,
                "{:<op_w$} {:>5} {:>8} {:>8}  {}{skipped}",
                op.op,
                op.cases,
                percent(op.median_error),
                percent(op.max_error),
                op.source
            )?;
        }
        write!(
            f,
            "{:<op_w$} {:>5} {:>8}",
            "overall",
            self.cases.len(),
            percent(self.median_error)
        )?;
        for case in self.cases.iter().filter(|c| c.skipped.is_some()) {
            write!(
                f,
                "\nskipped {} {}: {}",
                case.op,
                case.shapes,
                case.skipped.as_deref().unwrap_or_default()
            )?;
        }
        Ok(())
    }
}

impl AccuracyReport {
    /// Every case as a table: shapes, reference and estimated time, error.
    pub fn case_table(&self) -> String {
        let op_w = column_width("op", self.cases.iter().map(|c| c.op.as_str()));
        let shapes_w = column_width("shapes", self.cases.iter().map(|c| c.shapes.as_str()));
        let mut out = format!(
            "{:<op_w$} {:<shapes_w$} {:>12} {:>12} {:>8}",
            "op", "shapes", "ref (us)", "est (us)", "error"
        );
        for c in &self.cases {
            out.push_str(&format!(
                "\n{:<op_w$} {:<shapes_w$} {:>12} {:>12.3} {:>8}",
                c.op,
                c.shapes,
                c.reference_seconds
                    .map_or_else(|| "-".to_owned(), |s| format!("{:.3}", s * 1e6)),
                c.estimated_seconds * 1e6,
                percent(c.error)
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_halves_share_no_case_and_cover_every_swept_op_six_times() {
        let (training, held_out) = (
            sweep(Split::Training).unwrap(),
            sweep(Split::HeldOut).unwrap(),
        );
        assert!(training.iter().all(|c| !held_out.contains(c)));
        // The std ops with kernels and a sweep register twelve sizes each, next to the ops.
        let ops = [
            "std.add",
            "std.exp",
            "std.gelu",
            "std.layer_norm",
            "std.matmul",
            "std.max",
            "std.rms_norm",
            "std.softmax",
        ];
        for op in ops {
            for half in [&training, &held_out] {
                assert_eq!(half.iter().filter(|c| c.op == op).count(), 6, "{op}");
            }
        }
        assert!(training.iter().all(|c| ops.contains(&c.op.as_str())));
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
    }
}
