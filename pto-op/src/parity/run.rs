//! What one parity test did on every target: a line per target, ran or skipped and why.

use core::fmt;

use super::ParityReport;

/// What [`assert_parity`](super::assert_parity) did with a case on one target.
#[derive(Debug, Clone, PartialEq)]
pub enum TargetOutcome {
    /// The kernel ran on the target and was compared with the reference.
    Ran(ParityReport),
    /// The target did not run the kernel, for the reason given.
    Skipped(String),
}

/// One target of a [`ParityRun`].
#[derive(Debug, Clone, PartialEq)]
pub struct TargetRun {
    /// The target, with its device where it has one (`ascendc-host on kirin9030`).
    pub target: String,
    /// What it did.
    pub outcome: TargetOutcome,
}

/// Every target a parity case was checked on or skipped on, in the order
/// [`assert_parity`](super::assert_parity) tried them.
///
/// ```text
/// parity of `demo.rms_norm` for x=f16[4, 64], gamma=f16[64], seed 7 (reference on cpu):
///   sim: ran, passed: output `y`: all 256 elements match (max abs error 4.9e-4, ...)
///   ascendc-host: skipped: not linked (needs pto-backends with its feature `device`)
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ParityRun {
    /// The op's name.
    pub op: String,
    /// The case, inputs named ([`ParityCase::describe`](super::ParityCase::describe)).
    pub case: String,
    /// The target that ran the reference (`cpu`).
    pub reference_target: String,
    /// One line per target.
    pub targets: Vec<TargetRun>,
}

impl ParityRun {
    /// True when every target that ran agreed with the reference.
    pub fn passed(&self) -> bool {
        self.ran().all(ParityReport::passed)
    }

    /// The reports of the targets that ran, in order.
    pub fn ran(&self) -> impl Iterator<Item = &ParityReport> {
        self.targets.iter().filter_map(|t| match &t.outcome {
            TargetOutcome::Ran(report) => Some(report),
            TargetOutcome::Skipped(_) => None,
        })
    }
}

impl fmt::Display for ParityRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "parity of `{}` for {} (reference on {}):",
            self.op, self.case, self.reference_target
        )?;
        for target in &self.targets {
            write!(f, "\n  {}: ", target.target)?;
            match &target.outcome {
                TargetOutcome::Ran(report) => {
                    let passed = report.passed();
                    write!(f, "ran, {}", if passed { "passed" } else { "failed" })?;
                    let shown = report.outputs.iter().filter(|(_, c)| passed || !c.passed());
                    for (i, (name, comparison)) in shown.enumerate() {
                        let separator = if i == 0 { ":" } else { ";" };
                        write!(f, "{separator} output `{name}`: {comparison}")?;
                    }
                }
                TargetOutcome::Skipped(why) => write!(f, "skipped: {why}")?,
            }
        }
        Ok(())
    }
}
