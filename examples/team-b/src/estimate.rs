//! Team B's performance model of its op, registered from this crate: the estimator chain
//! of any program that links pto-team-b picks it up, with no change to the framework.

use pto_op::TensorType;
use pto_op::prelude::*;

/// `teamb.scaled_tanh` streams `x` in and `y` out once, and its vector work overlaps the
/// transfer. Per element, in f32: two casts and two scalings at the simple rate, one
/// `tanh` at the transcendental rate. The roofline would count the same work at the simple
/// rate only, and underestimate the `tanh`.
#[op_estimator(op = "teamb.scaled_tanh")]
fn scaled_tanh(info: &OpInvokeInfo, device: &DeviceProfile) -> Estimate {
    let bytes: u64 = info
        .inputs
        .iter()
        .chain(&info.outputs)
        .map(TensorType::bytes)
        .sum();
    let elements: usize = info.outputs.iter().map(|t| t.shape.numel()).sum();
    let params = device.estimator;
    let memory_seconds = bytes as f64 / (device.memory_bandwidth * params.memory_efficiency);
    // Repeats of the vector unit over f32 elements, on every core at once.
    let repeats = elements as f64 * 4.0 / device.vector_bytes_per_repeat;
    let cycles_per_repeat = 4.0 * device.vector_cycles_per_repeat.simple
        + device.vector_cycles_per_repeat.transcendental;
    let vector_seconds = repeats * cycles_per_repeat
        / (f64::from(device.ai_cores) * device.clock_hz * params.vector_efficiency);
    Estimate::seconds(memory_seconds.max(vector_seconds) + params.static_seconds)
}
