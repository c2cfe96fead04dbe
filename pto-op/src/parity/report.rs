//! The outcome of one parity check ([`ParityReport`]).

use core::fmt;

use crate::tensor::Comparison;

/// The outcome of one parity check: each output's comparison of the kernel's values (actual)
/// with the reference's (expected).
#[derive(Debug, Clone, PartialEq)]
pub struct ParityReport {
    /// The op's name.
    pub op: String,
    /// The target that ran the kernel (`sim`).
    pub kernel_target: String,
    /// The target that ran the reference (`cpu`).
    pub reference_target: String,
    /// The case, inputs named ([`ParityCase::describe`](super::ParityCase::describe)).
    pub case: String,
    /// Each output's name and comparison, in the op's output order.
    pub outputs: Vec<(String, Comparison)>,
}

impl ParityReport {
    /// True when every output agrees within its tolerance.
    pub fn passed(&self) -> bool {
        self.outputs.iter().all(|(_, c)| c.passed())
    }
}

/// `parity of `demo.rms_norm` (sim vs cpu) failed for x=f16[5, 33], seed 0: output `y`:
/// 12 of 165 elements differ (...); first at [3, 17]: actual 0.5123, expected 0.4811`.
/// A failed report names only the outputs that differ.
impl fmt::Display for ParityReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let passed = self.passed();
        write!(
            f,
            "parity of `{}` ({} vs {}) {} for {}",
            self.op,
            self.kernel_target,
            self.reference_target,
            if passed { "passed" } else { "failed" },
            self.case
        )?;
        let shown = self.outputs.iter().filter(|(_, c)| passed || !c.passed());
        for (i, (name, comparison)) in shown.enumerate() {
            let separator = if i == 0 { ":" } else { ";" };
            write!(f, "{separator} output `{name}`: {comparison}")?;
        }
        Ok(())
    }
}
