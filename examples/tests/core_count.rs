//! A kernel that sizes its grid with `k.core_count()`: the simulator and the estimator
//! trace it with their device profile's `ai_cores`, a plain trace with one core.

use pto_backends::sim::Sim;
use pto_examples::unary_math;
use pto_op::prelude::*;
use pto_op::{Attributes, OpInvokeInfo, TensorType};

fn x_type() -> TensorType {
    // Rows of 256 f32 make 16-row tiles: 32 of them, more than any profile's cores.
    TensorType {
        shape: Shape::from([512, 256]),
        dtype: DType::F32,
    }
}

fn profile(name: &str) -> DeviceProfile {
    DeviceProfile::builtin(name).expect("a built-in profile")
}

#[test]
fn plain_traces_use_one_core_and_device_traces_the_profiles_cores() {
    let def = unary_math::def();
    let attrs = Attributes::default();
    let plain = def.trace_kernel(&[x_type()], &attrs).expect("traces");
    assert_eq!(plain.grid, pto_op::kernel::UNKNOWN_DEVICE_CORES);
    for name in ["ascend910b", "kirin9030"] {
        let cores = profile(name).ai_cores as usize;
        let traced = def
            .trace_kernel_on(&[x_type()], &attrs, cores)
            .expect("traces");
        assert_eq!(traced.grid, cores, "{name}");
    }
}

#[test]
fn the_simulator_runs_one_program_per_core_of_its_profile() {
    for name in ["ascend910b", "kirin9030"] {
        let device = profile(name);
        let report = Sim::new(device.clone())
            .time_call(unary_math::def(), &[x_type()], &Attributes::default())
            .expect("times");
        let busy = report.per_core_cycles.iter().filter(|c| **c > 0).count();
        assert_eq!(busy, device.ai_cores as usize, "{name}: {report:?}");
    }
}

#[test]
fn the_estimator_times_the_kernel_traced_for_its_device() {
    let device = profile("ascend910b");
    let def = unary_math::def();
    let info = OpInvokeInfo {
        op: def.name.to_owned(),
        inputs: vec![x_type()],
        outputs: vec![x_type()],
        attrs: Attributes::default(),
    };
    let derived = pto_estimator::derive::default_properties(Some(def), &info, &device);
    let on_device = derived.pipeline_seconds.expect("a pipe model");
    let one_core = def
        .trace_kernel(&[x_type()], &Attributes::default())
        .expect("traces");
    let single = pto_estimator::pipes::pipeline_seconds(&one_core, &device).expect("a pipe model");
    assert!(
        on_device * 4.0 < single,
        "24 cores ({on_device} s) should beat one ({single} s) by far"
    );
}
