//! The estimator's pipe model and the simulator time kernels with one cost model
//! (`pto_op::kernel::cost`): on the same program and profile, every pipe is busy for the
//! same cycles in both, and on straight-line code the estimator's bound is exactly the
//! simulator's busy cycles laid end to end, plus the latencies that follow a pipe
//! occupation on a profile with a pipe model (the 910B ones).

use std::collections::BTreeMap;

use pto_backends::sim::{memory, schedule};
use pto_estimator::pipes;
use pto_op::kernel::ValidProgram;
use pto_op::kernel::cost::CostModel;
use pto_op::kernel::ir::{Inst, Pipe};
use pto_op::{Attributes, DType, DeviceProfile, Shape, TensorType};

fn t(shape: &[usize], dtype: DType) -> TensorType {
    TensorType {
        shape: Shape::from(shape.to_vec()),
        dtype,
    }
}

/// Traced std kernels: element-wise (straight-line), softmax and matmul (loops).
fn programs() -> Vec<ValidProgram> {
    let f16 = |s: &[usize]| t(s, DType::F16);
    let cases: Vec<(&str, Vec<TensorType>)> = vec![
        ("std.add", vec![f16(&[64, 4096]), f16(&[64, 4096])]),
        ("std.div", vec![f16(&[256, 1024]), f16(&[256, 1024])]),
        ("std.gelu", vec![f16(&[256, 1024])]),
        ("std.silu", vec![f16(&[3, 1000])]),
        ("std.softmax", vec![t(&[128, 512], DType::F32)]),
        ("std.matmul", vec![f16(&[128, 256]), f16(&[256, 192])]),
    ];
    cases
        .into_iter()
        .map(|(name, inputs)| {
            pto_op::registry::find(name)
                .expect("std op is linked")
                .trace_kernel(&inputs, &Attributes::default())
                .unwrap_or_else(|e| panic!("{name} traces: {e}"))
        })
        .collect()
}

fn simulated_busy(program: &ValidProgram, profile: &DeviceProfile) -> BTreeMap<Pipe, f64> {
    let plan = memory::plan(program, profile, true).expect("fits the device");
    schedule::schedule(program, profile, &plan, 0)
        .expect("schedules")
        .busy
}

fn has_loop(body: &[Inst]) -> bool {
    body.iter().any(|inst| matches!(inst, Inst::Loop { .. }))
}

fn assert_same_busy(
    op: &str,
    device: &str,
    estimated: &BTreeMap<Pipe, f64>,
    simulated: &BTreeMap<Pipe, f64>,
) {
    for pipe in Pipe::ALL {
        let e = estimated.get(&pipe).copied().unwrap_or(0.0);
        let s = simulated.get(&pipe).copied().unwrap_or(0.0);
        assert!(
            (e - s).abs() <= 1e-9 * e.abs().max(s.abs()),
            "{op} on {device}: {pipe} busy {e} cycles in the pipe model, {s} in the simulator"
        );
    }
}

#[test]
fn every_pipe_is_busy_for_the_same_cycles_in_the_estimator_and_the_simulator() {
    for device in DeviceProfile::builtin_names() {
        let profile = DeviceProfile::builtin(device).expect("built-in");
        for program in programs() {
            let estimated = pipes::pipe_cycles(&program, &profile).expect("costs");
            let simulated = simulated_busy(&program, &profile);
            assert_same_busy(&program.op, device, &estimated, &simulated);
        }
    }
}

#[test]
fn on_straight_line_code_the_estimate_is_the_simulated_busy_cycles_end_to_end() {
    let mut straight = 0;
    for device in DeviceProfile::builtin_names() {
        let profile = DeviceProfile::builtin(device).expect("built-in");
        for program in programs().into_iter().filter(|p| !has_loop(&p.body)) {
            straight += 1;
            let simulated = simulated_busy(&program, &profile);
            // Each instruction's latency after its pipe occupation (0 without a pipe
            // model): laid end to end, every one is waited for.
            let costs = CostModel::new(&profile, &program);
            let latencies: f64 = program
                .body
                .iter()
                .flat_map(|inst| costs.placement(&program, inst).expect("costs").parts())
                .map(|part| part.cost.latency)
                .sum();
            if profile.pipe_model.is_none() {
                assert_eq!(latencies, 0.0, "{device}");
            }
            let serial: f64 = simulated.values().sum::<f64>() + latencies;
            let cores = (profile.ai_cores as usize).min(program.grid).max(1);
            let programs_per_core = program.grid.div_ceil(cores) as f64;
            let estimated = pipes::pipeline_seconds(&program, &profile).expect("costs")
                * profile.clock_hz
                / programs_per_core;
            assert!(
                (estimated - serial).abs() <= 1e-9 * serial,
                "{} on {device}: the pipe model gives {estimated} cycles per block program, \
                 the simulator's pipes are busy {serial} cycles in all",
                program.op
            );
        }
    }
    assert!(straight >= 3, "only {straight} straight-line cases");
}
