//! The simulator and the Ascend C lowering run one program per op, instance and device
//! profile: the lowering of an op (`ascendc::lower`, what `ascendc-host` and a package
//! build) is the lowering of the very program the simulator runs for the same call
//! (`Sim::program`), for every linked kernel's parity cases and every registered shape sweep
//! (the std ops' and the examples'), on coupled (kirin9030, kirinx90) and split
//! (ascend910b) profiles; and what the simulator runs, the lowering does not refuse. Both trace through `OpDef::trace_kernel_for`; a target that traced with other
//! capacities (no device, or UB without the split core's vector cores) gets other tiles,
//! another grid, and so another Ascend C source here.
#![cfg(feature = "device")]

use pto_backends::ascendc::{Soc, lower, lower_program};
use pto_backends::sim::Sim;
use pto_op::{Attributes, DeviceProfile, OpDef, TensorType};
// Links the example ops (and pto-team-b's) into this test.
use pto_examples as _;

/// Every (op, inputs, attrs) to check: the parity cases of every linked kernel and the
/// sizes of every registered sweep (default attrs).
fn instances() -> Vec<(&'static OpDef, Vec<TensorType>, Attributes)> {
    let mut ops = pto_op::registry::ops().expect("the registry");
    ops.sort_by_key(|op| op.name);
    let mut out = Vec::new();
    for op in ops.iter().filter(|op| op.kernel.is_some()) {
        for case in (op.parity_cases)() {
            out.push((*op, case.inputs.clone(), case.attrs.clone()));
        }
    }
    for sweep in pto_op::sweep::sweeps().expect("unique sweeps") {
        let op = pto_op::registry::find(sweep.op).expect("a sweep's op is linked");
        for inputs in (sweep.sizes)() {
            out.push((op, inputs, Attributes::new()));
        }
    }
    out
}

/// The differences between the lowering of `op` and the lowering of the simulator's
/// program for the same call on `soc`, one line each.
/// Also the count refused for a call path the SoC lacks.
fn differences(soc: Soc) -> (usize, usize, Vec<String>) {
    let profile = DeviceProfile::builtin(soc.profile_name()).expect("a built-in profile");
    let sim = Sim::new(profile.clone());
    let mut compared = 0;
    let mut refused = 0;
    let mut differ = Vec::new();
    for (op, inputs, attrs) in instances() {
        let call = op.call_text(&inputs, &attrs);
        // A kernel that does not cover the instance runs on neither target.
        let Ok(program) = sim.program(op, &inputs, &attrs) else {
            continue;
        };
        let lowered = match lower(op, &inputs, &attrs, soc) {
            Ok(lowered) => lowered,
            // A dtype the SoC cannot hold (bf16 on Kirin): the CPU runs the op there.
            Err(e) if e.is_unsupported_dtype() => continue,
            // A call path the SoC lacks (a matmul on Kirin: no float L0C, no L0C -> UB):
            // refused by the capability table, by name. The simulator still prices it (it
            // models the core's units, not the API's paths).
            Err(e) if e.is_unsupported_on_soc() => {
                let message = e.to_string();
                if !(message.contains("Mmad(") && message.contains(&soc.to_string())) {
                    differ.push(format!("{soc} {call}: refused without the call: {message}"));
                }
                refused += 1;
                continue;
            }
            Err(e) => {
                // The simulator runs what the lowering refuses only if it also refuses it.
                if sim.time_call(op, &inputs, &attrs).is_ok() {
                    differ.push(format!(
                        "{soc} {call}: the simulator runs it, the lowering: {e}"
                    ));
                }
                continue;
            }
        };
        let of_sim = lower_program(&program, &call, soc, &profile)
            .expect("the simulator's program lowers, as the op's does");
        compared += 1;
        if of_sim.kernel_source != lowered.kernel_source || of_sim.grid != lowered.grid {
            differ.push(format!(
                "{soc} {call}: the lowering runs grid {} ({} bytes of source), the simulator's \
                 program grid {} ({} bytes)",
                lowered.grid,
                lowered.kernel_source.len(),
                of_sim.grid,
                of_sim.kernel_source.len()
            ));
        }
    }
    (compared, refused, differ)
}

#[test]
fn the_lowering_runs_the_simulators_program_on_kirin9030() {
    let (compared, refused, differ) = differences(Soc::Kirin9030);
    assert!(compared > 50, "only {compared} instances lowered");
    // Every kernel with a matmul: no cube path on Kirin (docs/deploying.md).
    assert!(refused > 10, "only {refused} cube kernels refused");
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

#[test]
fn the_lowering_runs_the_simulators_program_on_kirinx90() {
    let (compared, refused, differ) = differences(Soc::KirinX90);
    assert!(compared > 50, "only {compared} instances lowered");
    // Every kernel with a matmul: no cube path on Kirin (docs/deploying.md).
    assert!(refused > 10, "only {refused} cube kernels refused");
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

#[test]
fn the_lowering_runs_the_simulators_program_on_ascend910b() {
    let (compared, refused, differ) = differences(Soc::Ascend910B);
    assert!(compared > 50, "only {compared} instances lowered");
    assert_eq!(refused, 0, "the 910B has every path the lowering takes");
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// Flash attention sizes its query block from the vector cores of a split core (128 rows,
/// 64 on each vector core on ascend910b): the simulator's program and the lowering's have
/// 128-row blocks there, 64 on kirin9030 (whose lowering refuses it: no cube path), and the
/// 910B lowering splits those rows between the two vector cores.
#[test]
fn flash_attention_has_the_split_cores_query_block_on_both_targets() {
    let op = pto_op::registry::find("demo.flash_attention").expect("linked");
    let t = |rows: usize| TensorType {
        shape: pto_op::Shape::from([rows, 64]),
        dtype: pto_op::DType::F16,
    };
    let inputs = [t(512), t(512), t(512)];
    let attrs = Attributes::new();
    for (soc, grid) in [(Soc::Kirin9030, 8), (Soc::Ascend910B, 4)] {
        let profile = DeviceProfile::builtin(soc.profile_name()).expect("a built-in profile");
        let program = Sim::new(profile)
            .program(op, &inputs, &attrs)
            .expect("traces");
        assert_eq!(program.grid, grid, "{soc}: the simulator's grid");
        match lower(op, &inputs, &attrs, soc) {
            Ok(lowered) => assert_eq!(lowered.grid as usize, grid, "{soc}: the lowering's grid"),
            Err(e) => assert!(
                soc != Soc::Ascend910B && e.is_unsupported_on_soc(),
                "{soc}: {e}"
            ),
        }
    }
    let lowered = lower(op, &inputs, &attrs, Soc::Ascend910B).expect("lowers");
    assert!(
        lowered.kernel_source.contains("aivRow"),
        "the 910B lowering splits the block's rows between its vector cores"
    );
}
