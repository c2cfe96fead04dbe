//! The work budget: how many instructions a kernel may execute over its whole grid.
//!
//! Nothing in the typing rules bounds `grid N` or `loop i in 0..N`, and the simulator runs
//! every block program and unrolls every loop, so a hand-edited `grid 18446744073709551615`
//! would run for ever. Validation therefore counts a program's **work**, the instructions it
//! executes over the whole grid, and refuses a program whose work is over the budget:
//!
//! - an instruction counts 1 each time it runs;
//! - a loop counts 1 per iteration (its overhead), besides its body, so
//!   `loop i in 0..N { b }` counts `N x (1 + work(b))`, and a loop of 0 iterations 0;
//! - the program counts `grid x (1 + work(body))`: a block program counts 1 (its start)
//!   besides its instructions, so `grid 2147483648` over an empty body is over the budget
//!   too (the mutation fuzzer found the simulator spinning through one).
//!
//! The budget is process-wide: [`DEFAULT_WORK_BUDGET`] unless a program sets another with
//! [`set_work_budget`] (the `pto` command line does from `PTO_WORK_BUDGET`).
//! [`Program::validate_within`](crate::ir::Program::validate_within) validates against a
//! budget of its own.
//!
//! ```
//! use pto_kernel::text::parse;
//! let text = "kernel t grid 18446744073709551615\n\
//!             global @0 y: f32[4] output\n\
//!             %0: f32[4]@ub = full 1.0\n\
//!             store @0[0], %0\n";
//! let err = parse(text).unwrap_err().to_string();
//! assert!(err.contains("grid 18446744073709551615 x 3 instruction(s) per block program"), "{err}");
//! assert!(err.contains("over the kernel work budget of 268435456"), "{err}");
//! ```

use core::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::ir::{Inst, VarId};

/// The default work budget, in instruction executions: 2^28 (268,435,456), some 250 times
/// the largest kernel of the built-in models and sweeps (`pto estimate llama-7b-prefill`'s
/// prefill kernels and `pto accuracy`'s sweeps stay under 10^6), and a bound on the
/// simulator's time, which grows with the work: a debug build executes some 20,000
/// instructions of `[32, 256]` f32 tiles a second.
pub const DEFAULT_WORK_BUDGET: u64 = 1 << 28;

static WORK_BUDGET: AtomicU64 = AtomicU64::new(DEFAULT_WORK_BUDGET);

/// Sets the process's work budget, which every later validation checks (see the module
/// docs); a program that needs more than [`DEFAULT_WORK_BUDGET`] raises it here once, at
/// its start.
pub fn set_work_budget(budget: u64) {
    WORK_BUDGET.store(budget, Ordering::Relaxed);
}

/// The process's work budget: [`DEFAULT_WORK_BUDGET`] unless [`set_work_budget`] set
/// another.
pub fn work_budget() -> u64 {
    WORK_BUDGET.load(Ordering::Relaxed)
}

/// A count of instruction executions, or more than a `u64` holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Work(pub Option<u64>);

impl fmt::Display for Work {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(work) => write!(f, "{work}"),
            None => write!(f, "more than {}", u64::MAX),
        }
    }
}

impl Work {
    /// The count as a number to compare: a count past `u64` above every other.
    pub(super) fn key(self) -> u128 {
        self.0.map_or(u128::MAX, u128::from)
    }

    pub(super) fn over(self, budget: u64) -> bool {
        self.0.is_none_or(|work| work > budget)
    }

    pub(super) fn times(self, factor: Work) -> Work {
        match (self.0, factor.0) {
            // Nothing runs: the other factor does not matter, however large.
            (Some(0), _) | (_, Some(0)) => Work(Some(0)),
            (Some(a), Some(b)) => Work(a.checked_mul(b)),
            _ => Work(None),
        }
    }
}

/// What makes a program's work too large: the grid, or the loop whose own work alone is
/// over the budget (the innermost such loop).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkCulprit {
    /// The grid times one block program's work.
    Grid {
        /// The program's grid.
        grid: usize,
        /// The work of one block program (its instructions, and 1 for the program).
        per_program: Work,
    },
    /// A loop: its iterations times their work, times how often the loop runs.
    Loop {
        /// The loop's variable.
        var: VarId,
        /// Its iterations.
        count: usize,
        /// The work of one iteration (its body, and 1 for the iteration itself).
        per_iteration: Work,
        /// How many times the loop runs: the grid times the iterations of the loops
        /// around it.
        runs: Work,
    },
}

impl fmt::Display for WorkCulprit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkCulprit::Grid { grid, per_program } => write!(
                f,
                "grid {grid} x {per_program} instruction(s) per block program"
            ),
            WorkCulprit::Loop {
                var,
                count,
                per_iteration,
                runs,
            } => write!(
                f,
                "loop {var} in 0..{count} x {per_iteration} instruction(s) per iteration x \
                 {runs} run(s) of the loop (the grid times the loops around it)"
            ),
        }
    }
}

/// The work of one execution of `body` (see the module docs).
pub(super) fn block_work(body: &[Inst]) -> Work {
    Work(
        body.iter()
            .try_fold(0u64, |sum, inst| sum.checked_add(inst_work(inst).0?)),
    )
}

pub(super) fn inst_work(inst: &Inst) -> Work {
    match inst {
        Inst::Loop { count, body, .. } => {
            let per_iteration = Work(block_work(body).0.and_then(|w| w.checked_add(1)));
            Work(u64::try_from(*count).ok()).times(per_iteration)
        }
        _ => Work(Some(1)),
    }
}
