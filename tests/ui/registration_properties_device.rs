use pto_op::prelude::*;

#[op_properties(op = "std.add", device = "kirin9030")]
fn add_properties(info: &OpInvokeInfo) -> PerformanceProperties {
    info.memory_access_properties()
}

fn main() {}
