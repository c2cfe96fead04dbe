use pto_op::prelude::*;

#[op_estimator(op = "std.add")]
fn add_time(info: OpInvokeInfo, _device: &DeviceProfile) -> Estimate {
    Estimate::seconds(info.inputs.len() as f64 * 1e-6)
}

fn main() {}
