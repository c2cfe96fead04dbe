//! The standard ops' fast CPU paths, one file per op family as in `pto_op::ops`: f32 only
//! (other dtypes decline and run the reference), registered here with
//! [`pto_op::register_cpu_kernel!`] beside the target that runs them.

mod elementwise;
mod linalg;
mod normalization;
mod reduce;
mod shape_ops;
#[cfg(test)]
mod tests;
