//! The Kirin lowering of every linked op's kernel, on its parity cases, is held to a snapshot
//! of digests (`snapshots/kirin_kernels.txt`): a change to the lowering that alters the
//! generated Ascend C of a coupled-architecture SoC shows here, op by op. After an intended
//! change, rewrite the snapshot with `PTO_UPDATE_SNAPSHOTS=1`.
#![cfg(feature = "device")]

use std::fmt::Write as _;

use pto_backends::ascendc::{Soc, lower};
use pto_op::TensorType;
// Links the example ops (and pto-team-b's) into this test.
use pto_examples as _;

/// FNV-1a, 64 bits: a stable digest of a generated source.
fn digest(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// One line per (SoC, op, case): the digests of the kernel source and tiling header, or
/// the lowering error's first words.
fn lowered(socs: &[Soc]) -> String {
    let mut ops = pto_op::registry::ops().expect("the registry");
    ops.sort_by_key(|op| op.name);
    let mut out = String::new();
    for soc in socs {
        for op in &ops {
            if op.kernel.is_none() {
                continue;
            }
            for (i, case) in (op.parity_cases)().iter().enumerate() {
                let inputs: Vec<TensorType> = case.inputs.clone();
                let line = match lower(op, &inputs, &case.attrs, *soc) {
                    Ok(k) => format!(
                        "{:016x} {:016x}",
                        digest(&k.kernel_source),
                        digest(&k.tiling_header)
                    ),
                    Err(e) => format!("error: {}", e.to_string().replace('\n', " ")),
                };
                let _ = writeln!(out, "{soc} {} case {i}: {line}", op.name);
            }
        }
    }
    out
}

#[test]
fn the_kirin_lowering_of_every_linked_kernel_matches_its_snapshot() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/snapshots/kirin_kernels.txt"
    );
    let now = lowered(&[Soc::Kirin9030, Soc::KirinX90]);
    if std::env::var_os("PTO_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(path, &now).expect("writing the snapshot");
        return;
    }
    let expected = std::fs::read_to_string(path).expect("the snapshot");
    let lines = now.lines().count();
    assert!(lines > 20, "only {lines} kernels lowered");
    for (a, b) in expected.lines().zip(now.lines()) {
        assert_eq!(a, b, "the Kirin lowering changed");
    }
    assert_eq!(
        expected.lines().count(),
        lines,
        "the set of lowered kernels changed"
    );
}
