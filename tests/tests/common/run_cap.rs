//! The fuzzers' run cap: whether a compiled case is small enough to run.

use pto_backends::compiler::CompiledModel;
use pto_op::TensorType;

/// The bytes of `ty`, `u64::MAX` past it.
pub fn type_bytes(ty: &TensorType) -> u64 {
    ty.shape
        .dims()
        .iter()
        .try_fold(ty.dtype.size_bytes() as u64, |acc, &d| {
            acc.checked_mul(d as u64)
        })
        .unwrap_or(u64::MAX)
}

/// Whether a run of `compiled` stays within `cap` bytes: every value alone, and the compile
/// report's activations at their peak plus the weights.
pub fn within_run_cap(compiled: &CompiledModel, cap: u64) -> bool {
    let report = compiled.report();
    let values = report
        .nodes
        .iter()
        .flat_map(|n| n.inputs.iter().chain(&n.outputs))
        .chain(compiled.inputs().iter())
        .all(|v| type_bytes(&v.ty) <= cap);
    values
        && report
            .peak_activation_bytes
            .saturating_add(report.weight_bytes)
            <= cap
}
