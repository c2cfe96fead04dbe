//! The simulator refuses a program whose Ascend C kernel would not fit UB though its live
//! tiles do: a compare of a key row against a limit column (flash attention's mask)
//! broadcasts both to f32 temporaries of the compared shape in the kernel, which the live
//! tiles do not show. The simulator's figure is the lowering's, byte for byte.
#![cfg(feature = "device")]

use pto_backends::ascendc::{Soc, lower_program};
use pto_backends::sim::{SimError, memory};
use pto_op::DeviceProfile;
use pto_op::kernel::text::parse;

/// `y = select(keys <= limit, x, -1e30)` on `rows` x 128 f32.
fn masked(rows: usize) -> pto_op::kernel::ValidProgram {
    let text = format!(
        "kernel t.mask grid 1\n\
         global @0 x: f32[{rows}, 128] input\n\
         global @1 y: f32[{rows}, 128] output\n\
         %0: f32[{rows}, 128]@ub = load @0[0, 0] pad 0.0\n\
         %1: f32[1, 128]@ub = iota axis 1 start 0\n\
         %2: f32[{rows}, 1]@ub = iota axis 0 start 0\n\
         %3: bool[{rows}, 128]@ub = compare le %1, %2\n\
         %4: f32[{rows}, 128]@ub = select %3, %0, -1e30\n\
         store @1[0, 0], %4\n"
    );
    parse(&text).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_kernel_over_ub_is_refused_by_the_simulator_with_the_lowerings_bytes() {
    let profile = DeviceProfile::builtin("kirin9030").expect("built-in profile");
    let limit = profile.buffers.ub;
    let program = masked(64);
    // The live tiles fit: x, the mask, y and the two iotas.
    let live = program
        .program()
        .tiles
        .iter()
        .map(|t| t.bytes() as u64)
        .sum::<u64>();
    assert!(live < limit, "{live} live bytes of {limit}");
    let lowered = lower_program(&program, "t.mask", Soc::Kirin9030, &profile)
        .expect_err("the kernel holds two f32 broadcasts of [64, 128] more")
        .to_string();
    let err = memory::plan(&program, &profile, true).expect_err("the simulator refuses it");
    let SimError::KernelUb {
        needed,
        limit: l,
        detail,
        ..
    } = &err
    else {
        panic!("not the kernel's UB: {err}");
    };
    assert_eq!(*l, limit);
    assert!(*needed > limit);
    assert!(
        lowered.contains(&format!("reserves {needed} bytes of UB")) && lowered.contains(detail),
        "the lowering: {lowered}\nthe simulator: {err}"
    );
    // Three quarters of the rows fit both.
    let program = masked(48);
    memory::plan(&program, &profile, true).expect("the simulator runs it");
    let lowered = lower_program(&program, "t.mask", Soc::Kirin9030, &profile).expect("lowers");
    assert!(lowered.buffer_bytes.ub <= limit);
}
