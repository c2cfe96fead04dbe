//! The framework's default models of a few standard ops, where counting the kernel (or the
//! whole of every input) would be wrong. Registered with `default`, so any user
//! registration beats them.

use pto_op::prelude::*;

/// A reshape changes a tensor's shape, not its data: it costs the per-op fixed cost only.
#[op_estimator(op = "std.reshape", default)]
fn reshape(_info: &OpInvokeInfo, device: &DeviceProfile) -> Estimate {
    Estimate::seconds(device.estimator.static_seconds)
}

/// A gather (an embedding lookup) reads the gathered rows and the indices, not the whole
/// table, and writes its output.
#[op_properties(op = "std.gather", default)]
fn gather(info: &OpInvokeInfo) -> PerformanceProperties {
    let output: u64 = info.outputs.iter().map(|t| t.bytes()).sum();
    let indices: u64 = info.inputs.iter().skip(1).map(|t| t.bytes()).sum();
    PerformanceProperties {
        memory_read_bytes: output + indices,
        memory_write_bytes: output,
        ..PerformanceProperties::default()
    }
}
