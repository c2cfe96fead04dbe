//! Execution targets of pto-op operators.
//!
//! - [`cpu`]: runs each op's `#[reference]`; the correctness baseline.
//! - [`sim`]: the tile simulator; runs each op's `#[kernel]` on a device profile.

pub mod cpu;
pub mod sim;
