//! The estimator against the tile simulator: accuracy over the ops' registered sweeps,
//! and calibration (see [`pto_estimator::accuracy`] and [`pto_estimator::calibration`]).
//!
//! The simulator times each case without executing it ([`Sim::time_call`]): only time
//! matters, and the schedule does not depend on data.

use std::collections::HashMap;
use std::path::Path;

use pto_estimator::accuracy::{AccuracyReport, Case, Split, measure, sweep};
use pto_estimator::calibration::{CalibrationReport, calibrated, fit_report, write_profile};
use pto_estimator::{EstimateError, Estimator};
use pto_op::{DeviceProfile, registry};

use pto_backends::sim::Sim;

/// Times cases on the simulator, each once.
struct SimReference {
    sim: Sim,
    seconds: HashMap<String, Result<f64, String>>,
}

impl SimReference {
    /// The simulator of `device` (its calibration plays no part in the simulation).
    fn new(device: &DeviceProfile) -> SimReference {
        SimReference {
            sim: Sim::new(device.clone()),
            seconds: HashMap::new(),
        }
    }

    fn name(&self) -> String {
        "the tile simulator".to_owned()
    }

    fn time(&mut self, case: &Case) -> Result<f64, String> {
        let key = format!("{case:?}");
        if let Some(known) = self.seconds.get(&key) {
            return known.clone();
        }
        let timed = registry::find(&case.op)
            .map_err(|e| e.to_string())
            .and_then(|op| {
                self.sim
                    .time_call(op, &case.inputs, &case.attrs)
                    .map_err(|e| e.to_string())
            })
            .map(|report| report.seconds);
        self.seconds.insert(key, timed.clone());
        timed
    }

    fn measure(
        &mut self,
        cases: &[Case],
        device: &DeviceProfile,
    ) -> Result<AccuracyReport, EstimateError> {
        let mut estimator = Estimator::linked(device)?;
        let name = self.name();
        measure(&name, cases, &mut estimator, &mut |case| self.time(case))
    }
}

/// `device` without its calibration.
fn uncalibrated(device: &DeviceProfile) -> DeviceProfile {
    let mut plain = device.clone();
    plain.calibration.clear();
    plain
}

/// The estimates of `cases` on `device` (calibrated if its profile is) against the
/// simulator of `device`.
///
/// # Errors
///
/// The estimator's error, or a case whose op is not linked or rejects its inputs. A case
/// the simulator cannot run is reported as skipped, with the reason.
pub fn accuracy(device: &DeviceProfile, cases: &[Case]) -> Result<AccuracyReport, EstimateError> {
    SimReference::new(device).measure(cases, device)
}

/// Fits a correction for every op of the training sweep on `device` against the
/// simulator, writes `device` with that calibration to `output` (atomically), and reports
/// the held-out sweep's accuracy before and after.
///
/// `training` and `held_out` are the sweeps (normally [`sweep`] of [`Split::Training`] and
/// [`Split::HeldOut`]).
///
/// # Errors
///
/// As [`accuracy`]; [`EstimateError::Write`] when `output` cannot be written.
pub fn calibrate(
    device: &DeviceProfile,
    training: &[Case],
    held_out: &[Case],
    output: &Path,
    provenance: &str,
) -> Result<CalibrationReport, EstimateError> {
    let plain = uncalibrated(device);
    let mut reference = SimReference::new(&plain);
    let fitted = reference.measure(training, &plain)?;
    let training_cases = fitted
        .cases
        .iter()
        .filter(|c| c.reference_seconds.is_some())
        .count();
    let profile = calibrated(&plain, fit_report(&fitted), provenance);
    write_profile(&profile, output)?;
    Ok(CalibrationReport {
        file: output.display().to_string(),
        training_cases,
        calibration: profile.calibration.clone(),
        before: reference.measure(held_out, &plain)?,
        after: reference.measure(held_out, &profile)?,
    })
}

/// The sweeps of every linked op with a kernel and a registered sweep: (training,
/// held-out).
///
/// # Errors
///
/// As [`sweep`].
pub fn standard_sweeps() -> Result<(Vec<Case>, Vec<Case>), EstimateError> {
    Ok((sweep(Split::Training)?, sweep(Split::HeldOut)?))
}
