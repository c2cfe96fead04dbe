//! Calibration: per op and device, a fitted correction of the estimate, from reference
//! (simulator) times of a training sweep.
//!
//! The model is [`OpCalibration`]: `t = exp(a) * t_est^b`, fitted by least squares on
//! `ln t = a + b ln t_est` (see its documentation for why). The fitted corrections go into
//! the profile's `calibration` section, which [`crate::Estimator`] applies.
//!
//! ```
//! use pto_estimator::calibration::fit;
//! // Times that are exactly 3 * t^0.9.
//! let points: Vec<(f64, f64)> = [1e-6, 1e-5, 1e-4].iter().map(|&t: &f64| (t, 3.0 * t.powf(0.9))).collect();
//! let c = fit(&points).unwrap();
//! assert!((c.exponent - 0.9).abs() < 1e-9 && (c.log_scale - 3.0_f64.ln()).abs() < 1e-9);
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use pto_op::table::column_width;
use pto_op::{DeviceProfile, OpCalibration};
use serde::Serialize;

use crate::EstimateError;
use crate::accuracy::AccuracyReport;

/// The least-squares fit of `ln reference = a + b ln estimate` over `(estimate, reference)`
/// pairs in seconds; pairs that are not both positive are left out. One usable pair (or
/// pairs with a single estimate) gives a constant factor (`b = 1`); none gives `None`.
pub fn fit(points: &[(f64, f64)]) -> Option<OpCalibration> {
    let logs: Vec<(f64, f64)> = points
        .iter()
        .filter(|(e, r)| *e > 0.0 && *r > 0.0 && e.is_finite() && r.is_finite())
        .map(|(e, r)| (e.ln(), r.ln()))
        .collect();
    let n = logs.len() as f64;
    if logs.is_empty() {
        return None;
    }
    let mean_x = logs.iter().map(|(x, _)| x).sum::<f64>() / n;
    let mean_y = logs.iter().map(|(_, y)| y).sum::<f64>() / n;
    let sxx: f64 = logs.iter().map(|(x, _)| (x - mean_x).powi(2)).sum();
    let sxy: f64 = logs.iter().map(|(x, y)| (x - mean_x) * (y - mean_y)).sum();
    // Estimates that (nearly) coincide say nothing about the slope.
    let exponent = if sxx > 1e-12 { sxy / sxx } else { 1.0 };
    Some(OpCalibration {
        log_scale: mean_y - exponent * mean_x,
        exponent,
        cases: logs.len(),
    })
}

/// The correction of every op of `training` (a report of uncalibrated estimates against
/// the reference) that has at least one timed case.
pub fn fit_report(training: &AccuracyReport) -> BTreeMap<String, OpCalibration> {
    let mut points: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for case in &training.cases {
        if let Some(reference) = case.reference_seconds {
            points
                .entry(case.op.clone())
                .or_default()
                .push((case.estimated_seconds, reference));
        }
    }
    points
        .into_iter()
        .filter_map(|(op, points)| fit(&points).map(|c| (op, c)))
        .collect()
}

/// `device` with `calibration` in place of its own, and a note saying where it came from.
pub fn calibrated(
    device: &DeviceProfile,
    calibration: BTreeMap<String, OpCalibration>,
    provenance: &str,
) -> DeviceProfile {
    let mut profile = device.clone();
    profile.calibration = calibration;
    profile.notes.retain(|n| !n.starts_with("calibration: "));
    profile.notes.push(format!("calibration: {provenance}"));
    profile
}

/// Writes `profile` as JSON to `path`, atomically.
///
/// # Errors
///
/// [`EstimateError::Write`] when the file cannot be written, [`EstimateError::Io`] when the
/// profile cannot be turned into JSON.
pub fn write_profile(profile: &DeviceProfile, path: &Path) -> Result<(), EstimateError> {
    let text = profile.to_json().map_err(|e| EstimateError::Io {
        file: path.to_owned(),
        source: std::io::Error::other(e),
    })?;
    Ok(pto_op::fs::write_atomic(
        path,
        format!("{text}\n").as_bytes(),
    )?)
}

/// What `pto calibrate` prints: the fitted corrections, and the accuracy on the held-out
/// sweep before and after them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CalibrationReport {
    /// The calibrated profile's file.
    pub file: String,
    /// Timed cases of the training sweep the fits used.
    pub training_cases: usize,
    /// The fitted correction of each op.
    pub calibration: BTreeMap<String, OpCalibration>,
    /// Held-out accuracy, uncalibrated.
    pub before: AccuracyReport,
    /// Held-out accuracy, calibrated.
    pub after: AccuracyReport,
}

impl core::fmt::Display for CalibrationReport {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let percent =
            |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{:.1}%", v * 100.0));
        writeln!(
            f,
            "calibrated {} op(s) of {} on {} training case(s) against {}; wrote {}",
            self.calibration.len(),
            self.before.device,
            self.training_cases,
            self.before.reference,
            self.file
        )?;
        writeln!(
            f,
            "held-out error, before -> after calibration (t = exp(a) * t_est^b):"
        )?;
        let op_w = column_width("overall", self.before.ops.iter().map(|op| op.op.as_str()));
        writeln!(
            f,
            "{:<op_w$} {:>5} {:>8} {:>8} {:>8} {:>8} {:>8} {:>6}",
            "op", "cases", "median", "max", "median'", "max'", "a", "b"
        )?;
        for (before, after) in self.before.ops.iter().zip(&self.after.ops) {
            let fitted = self.calibration.get(&before.op);
            writeln!(
                f,
                "{:<op_w$} {:>5} {:>8} {:>8} {:>8} {:>8} {:>8} {:>6}",
                before.op,
                before.cases,
                percent(before.median_error),
                percent(before.max_error),
                percent(after.median_error),
                percent(after.max_error),
                fitted.map_or_else(|| "-".to_owned(), |c| format!("{:.3}", c.log_scale)),
                fitted.map_or_else(|| "-".to_owned(), |c| format!("{:.3}", c.exponent)),
            )?;
        }
        write!(
            f,
            "{:<op_w$} {:>5} {:>8} {:>8} {:>8}",
            "overall",
            self.before.cases.len(),
            percent(self.before.median_error),
            "",
            percent(self.after.median_error)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fit_recovers_known_parameters_from_noisy_data() {
        // t = exp(-1.5) * t_est^1.1, times 1 +- 2% in a fixed pattern.
        let noise = [1.02, 0.98, 1.0, 1.01, 0.99, 1.0, 0.985, 1.015];
        let points: Vec<(f64, f64)> = noise
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let estimate = 1e-6 * 3f64.powi(i as i32);
                (estimate, (-1.5 + 1.1 * estimate.ln()).exp() * n)
            })
            .collect();
        let c = fit(&points).unwrap();
        assert!((c.exponent - 1.1).abs() < 0.01, "{c:?}");
        assert!((c.log_scale + 1.5).abs() < 0.15, "{c:?}");
        assert_eq!(c.cases, 8);
        for (estimate, reference) in points {
            assert!((c.apply(estimate) / reference - 1.0).abs() < 0.03);
        }
    }

    #[test]
    fn one_point_or_one_estimate_is_a_constant_factor() {
        let c = fit(&[(2e-6, 5e-6), (2e-6, 5e-6)]).unwrap();
        assert_eq!(c.exponent, 1.0);
        assert!((c.apply(4e-6) - 10e-6).abs() < 1e-15);
        assert_eq!(fit(&[(0.0, 1.0), (1.0, -1.0)]), None);
    }
}
