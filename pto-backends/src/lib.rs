//! Execution targets of pto-op operators.
//!
//! - [`cpu`]: runs each op's `#[reference]`; the correctness baseline.

pub mod cpu;
