use pto_op::prelude::*;

#[op_estimator(device = "kirin9030")]
fn add_time(_info: &OpInvokeInfo, _device: &DeviceProfile) -> Estimate {
    Estimate::seconds(1e-6)
}

fn main() {}
