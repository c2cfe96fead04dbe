//! `pto fidelity`: the tile simulator against public measurements of Ascend hardware.
//!
//! The cases are data: `fidelity/cases.json` at the root of the workspace, one entry per
//! measurement (adding a case is adding an entry). Every case names its source (a public
//! repository file, with the built-in device profile its cases are simulated on), the
//! cores the measurement used, the op and its input shapes. The simulator traces the op's
//! `#[kernel]` for those cores and times it on the profile with `ai_cores` set to the cores
//! used (the other cores of the chip were idle in the measurement, so the cores in use
//! share the memory and L2 bandwidth as in the cost model). Nothing is fitted to these
//! cases: the profile's numbers carry their own citations, and a case outside the target
//! says so in the table.
//!
//! The table is kept in `docs/fidelity.md`; a test checks the page against this command's
//! output, so it cannot go stale.

use core::fmt;

use pto_backends::sim::{SimOptions, Simulator};
use pto_op::kernel::ir::Pipe;
use pto_op::{Attributes, DType, DeviceProfile, TensorType, registry};
use serde::{Deserialize, Serialize};

use crate::error::CliError;

/// The target: every case's simulated time within 25% of the measured one.
pub const TARGET: f64 = 0.25;

/// The cases file, built in.
const CASES_JSON: &str = include_str!("../../fidelity/cases.json");

/// The cases file: where the measurements come from, and the measurements.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Cases {
    /// What the file holds (for its reader; not read).
    #[serde(rename = "about")]
    _about: Vec<String>,
    /// The sources, in the order of the summary under the table.
    sources: Vec<FidelitySource>,
    /// The measurements, in the order of the table.
    cases: Vec<Measurement>,
}

/// Where a set of measurements comes from.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FidelitySource {
    /// The name cases give as their `source`.
    pub id: String,
    /// The public file.
    pub file: String,
    /// The built-in device profile its cases are simulated on.
    pub device: String,
    /// What it measured, for its line under the table.
    pub summary: String,
    /// How it measured.
    pub about: String,
    /// Where the timer ran: on the host around the launch, or on the device.
    pub timing: Timing,
    /// Why its measurements are no reliable reference, when they are not: its cases are
    /// shown apart and not counted against the target.
    #[serde(default)]
    pub unreliable: Option<String>,
}

/// Where a source's timer ran, which says whether its times include the kernel's launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Timing {
    /// Timed on the host around the launch (stream events around back-to-back launches):
    /// the simulated time adds the profile's launch cost
    /// ([`pto_backends::sim::SimReport::total_seconds`]).
    Host,
    /// Timed on the device (a profiler's task time): the kernel alone.
    Device,
    /// The source does not say: not known to include the launch, so timed as the kernel
    /// alone.
    Unstated,
}

/// One public measurement.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Measurement {
    /// Short name of the case.
    case: String,
    /// The `id` of its source.
    source: String,
    /// The op simulated.
    op: String,
    /// Its input shapes (f16 each).
    inputs: Vec<Vec<usize>>,
    /// Cores the measurement used.
    cores: u32,
    /// Measured time, in microseconds.
    measured_us: f64,
    /// Floating-point operations of the case (for TFLOPS).
    flops: f64,
}

/// The device profile of the measurements (the README's A2 / A3 runs and the GEMM's A3):
/// the report's `device`.
pub const DEVICE: &str = "ascend910b";

/// The profile of the Ascend 910B2 measurements (the PyTorch demo's warm runs and the
/// S0 = S1 table): the 910B1 profile at the 910B2's 1.8 GHz.
pub const DEVICE_910B2: &str = "ascend910b2";

/// One row of the table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FidelityCase {
    /// The case.
    pub case: String,
    /// The device profile it is simulated on.
    pub device: String,
    /// The public file of the measurement.
    pub source: String,
    /// Cores used.
    pub cores: u32,
    /// Measured time, in microseconds.
    pub measured_us: f64,
    /// Simulated time, in microseconds: the kernel's, plus its launch for a host-timed
    /// source.
    pub simulated_us: f64,
    /// The launch in `simulated_us`, in microseconds (0 for a device-timed source).
    pub launch_us: f64,
    /// `simulated_us / measured_us`: above 1, the simulator is slower than the device.
    pub ratio: f64,
    /// Measured TFLOPS.
    pub measured_tflops: f64,
    /// Simulated TFLOPS.
    pub simulated_tflops: f64,
    /// The simulator's busiest pipe.
    pub bound: Pipe,
    /// Share of the simulated time the cube is busy.
    pub cube_utilisation: f64,
    /// Bytes the simulated kernel hands between the cube and the vector cores through GM,
    /// over all cores (each written and read back once).
    pub handoff_bytes: u64,
    /// Whether its source is a reliable reference (see [`FidelitySource::unreliable`]):
    /// only reliable cases count against the target.
    pub reliable: bool,
}

impl FidelityCase {
    /// Whether the ratio is within [`TARGET`].
    pub fn within_target(&self) -> bool {
        (self.ratio - 1.0).abs() <= TARGET
    }
}

/// The whole table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FidelityReport {
    /// The device profile.
    pub device: String,
    /// The rows, in the order of the sources' tables.
    pub cases: Vec<FidelityCase>,
    /// Where the measurements come from, in the order of the summary under the table.
    #[serde(skip)]
    pub sources: Vec<FidelitySource>,
}

/// The cases of `fidelity/cases.json`.
fn cases() -> Result<Cases, CliError> {
    serde_json::from_str(CASES_JSON).map_err(|e| CliError::Fidelity {
        case: "fidelity/cases.json".to_owned(),
        message: e.to_string(),
    })
}

/// Simulates every public case of `fidelity/cases.json` on its source's built-in profile:
/// [`DEVICE`], or [`DEVICE_910B2`] for the measurements made on an Ascend 910B2.
///
/// # Errors
///
/// [`CliError::Fidelity`] naming the case when its source is not in the file, its op is not
/// linked, does not trace or does not simulate; [`CliError::Device`] if a profile does not
/// load.
pub fn report() -> Result<FidelityReport, CliError> {
    let Cases { sources, cases, .. } = cases()?;
    let profiles = sources
        .iter()
        .map(|s| DeviceProfile::builtin(&s.device))
        .collect::<Result<Vec<_>, _>>()?;
    let cases = cases
        .iter()
        .map(|m| {
            let Some(at) = sources.iter().position(|s| s.id == m.source) else {
                return Err(CliError::Fidelity {
                    case: m.case.clone(),
                    message: format!("no source `{}` in fidelity/cases.json", m.source),
                });
            };
            simulate(&profiles[at], &sources[at], m)
        })
        .collect::<Result<_, _>>()?;
    Ok(FidelityReport {
        device: DEVICE.to_owned(),
        cases,
        sources,
    })
}

fn simulate(
    profile: &DeviceProfile,
    source: &FidelitySource,
    m: &Measurement,
) -> Result<FidelityCase, CliError> {
    let fail = |message: String| CliError::Fidelity {
        case: m.case.clone(),
        message,
    };
    let op = registry::find(&m.op).map_err(|e| fail(e.to_string()))?;
    let inputs: Vec<TensorType> = m
        .inputs
        .iter()
        .map(|shape| TensorType {
            shape: pto_op::Shape::from(shape.clone()),
            dtype: DType::F16,
        })
        .collect();
    let mut device = profile.clone();
    device.ai_cores = m.cores;
    let program = op
        .trace_kernel_for(&inputs, &Attributes::default(), &device)
        .map_err(|e| fail(e.to_string()))?;
    let report = Simulator::new(device, SimOptions::default())
        .time(&program)
        .map_err(|e| fail(e.to_string()))?;
    let launch_us = match source.timing {
        Timing::Host => report.launch_seconds * 1e6,
        Timing::Device | Timing::Unstated => 0.0,
    };
    let simulated_us = report.seconds * 1e6 + launch_us;
    Ok(FidelityCase {
        case: m.case.clone(),
        device: profile.name.clone(),
        source: source.file.clone(),
        cores: m.cores,
        measured_us: m.measured_us,
        simulated_us,
        launch_us,
        ratio: simulated_us / m.measured_us,
        measured_tflops: m.flops / m.measured_us * 1e-6,
        simulated_tflops: m.flops / simulated_us * 1e-6,
        bound: report.bound,
        cube_utilisation: report.utilisation(Pipe::M),
        handoff_bytes: report.handoff_bytes,
        reliable: source.unreliable.is_none(),
    })
}

impl FidelityReport {
    /// The reliable cases within [`TARGET`] and the reliable cases.
    pub fn reliable_within_target(&self) -> (usize, usize) {
        let reliable = self.cases.iter().filter(|c| c.reliable);
        let (within, all) = reliable.fold((0, 0), |(w, a), c| {
            (w + usize::from(c.within_target()), a + 1)
        });
        (within, all)
    }

    /// The table of `cases`.
    fn table<'a>(
        f: &mut fmt::Formatter<'_>,
        cases: impl Iterator<Item = &'a FidelityCase>,
    ) -> fmt::Result {
        writeln!(
            f,
            "| case | profile | measured (us) | simulated (us) | of which launch (us) | \
             sim / measured | measured TFLOPS | simulated TFLOPS | sim bound | sim cube busy | \
             sim hand-off (MiB) | within 25% |"
        )?;
        writeln!(
            f,
            "|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---|"
        )?;
        for c in cases {
            writeln!(
                f,
                "| {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {:.0}% | {:.0} | {} |",
                c.case,
                c.device,
                c.measured_us,
                c.simulated_us,
                c.launch_us,
                c.ratio,
                c.measured_tflops,
                c.simulated_tflops,
                c.bound,
                c.cube_utilisation * 100.0,
                c.handoff_bytes as f64 / f64::from(1 << 20),
                if c.within_target() { "yes" } else { "**no**" }
            )?;
        }
        Ok(())
    }

    /// The line of `source` under a table: its cases within the target.
    fn source_line(&self, f: &mut fmt::Formatter<'_>, source: &FidelitySource) -> fmt::Result {
        let cases: Vec<_> = self
            .cases
            .iter()
            .filter(|c| c.source == source.file)
            .collect();
        let within = cases.iter().filter(|c| c.within_target()).count();
        writeln!(
            f,
            "- {}: {within} of {} ({})",
            source.summary,
            cases.len(),
            source.file
        )
    }
}

impl fmt::Display for FidelityReport {
    /// Markdown: the table of the reliable cases, how many are within the target, then each
    /// unreliable source's cases apart with the reason, not counted.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        FidelityReport::table(f, self.cases.iter().filter(|c| c.reliable))?;
        let (within, reliable) = self.reliable_within_target();
        writeln!(f)?;
        writeln!(
            f,
            "{within} of {reliable} reliable cases within 25% on `{}` (`{DEVICE_910B2}` for \
             the 910B2 measurements):",
            self.device
        )?;
        writeln!(f)?;
        for source in self.sources.iter().filter(|s| s.unreliable.is_none()) {
            self.source_line(f, source)?;
        }
        for source in &self.sources {
            let Some(reason) = &source.unreliable else {
                continue;
            };
            writeln!(f)?;
            writeln!(
                f,
                "Not counted, an unreliable reference: {} ({}). {reason}",
                source.summary, source.file
            )?;
            writeln!(f)?;
            FidelityReport::table(f, self.cases.iter().filter(|c| c.source == source.file))?;
            writeln!(f)?;
            self.source_line(f, source)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::cases;

    #[test]
    fn the_cases_file_reads_and_every_case_names_a_source() {
        let file = cases().unwrap();
        let ids: Vec<&str> = file.sources.iter().map(|s| s.id.as_str()).collect();
        for (at, id) in ids.iter().enumerate() {
            assert!(!ids[..at].contains(id), "source `{id}` twice");
        }
        let files: Vec<&str> = file.sources.iter().map(|s| s.file.as_str()).collect();
        for (at, f) in files.iter().enumerate() {
            assert!(!files[..at].contains(f), "two sources of file `{f}`");
        }
        for case in &file.cases {
            assert!(ids.contains(&case.source.as_str()), "{}", case.case);
            assert!(case.cores > 0 && case.measured_us > 0.0 && case.flops > 0.0);
        }
    }
}
