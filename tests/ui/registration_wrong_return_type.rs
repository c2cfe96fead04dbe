use pto_op::prelude::*;

#[op_estimator(op = "std.add")]
fn add_time(_info: &OpInvokeInfo, _device: &DeviceProfile) -> f64 {
    1e-6
}

fn main() {}
