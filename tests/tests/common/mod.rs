//! Helpers shared by the integration test files that include them with `mod common;`.

pub mod python;
