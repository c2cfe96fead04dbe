//! Two shape sweeps registered for one op are an error naming both registrations.

use pto_op::sweep::{self, SweepDef};

pto_op::register_sweep!(
    FIRST,
    SweepDef {
        op: "test.swept",
        sizes: || sweep::rows_cols(|r, c| vec![vec![r, c]]),
        location: pto_op::source_location!(),
    }
);

pto_op::register_sweep!(
    SECOND,
    SweepDef {
        op: "test.swept",
        sizes: sweep::matmul,
        location: pto_op::source_location!(),
    }
);

#[test]
fn two_sweeps_of_one_op_name_both_places() {
    let err = sweep::sweeps().unwrap_err();
    assert_eq!(err.key, "`test.swept`");
    // Both places, in source order.
    assert_eq!([err.first.line, err.second.line], [10, 19], "{err}");
    let message = err.to_string();
    assert!(
        message.starts_with("two shape sweep registrations of `test.swept`: one in sweeps ("),
        "{message}"
    );
    assert!(
        message.ends_with("; remove one of them (an op has one sweep)"),
        "{message}"
    );
    assert!(message.contains("tests/tests/sweeps.rs:10)"), "{message}");
    assert!(message.contains("tests/tests/sweeps.rs:19)"), "{message}");
    assert!(sweep::find("std.add").is_err());
}

#[test]
fn the_size_tables_give_twelve_f16_sizes_smallest_first() {
    let matmul = sweep::matmul();
    assert_eq!(matmul.len(), 12);
    assert_eq!(matmul[0][0].to_string(), "f16[1, 512]");
    assert_eq!(matmul[0][1].to_string(), "f16[512, 512]");
    let rows = sweep::rows_cols(|r, c| vec![vec![r, c], vec![c]]);
    assert_eq!(rows[11][1].to_string(), "f16[4096]");
}
