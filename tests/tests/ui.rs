//! Compile-fail cases of `#[custom_op]` and of the registration macros (`#[op_estimator]`,
//! `#[op_properties]`, in `ui/registration_*.rs`): what an author sees from rustc for each
//! kind of mistake. One misuse per file in `ui/`, with the expected output beside it in a
//! `.stderr` file.
//!
//! To regenerate the `.stderr` files after changing a message or adding a case:
//!
//! ```text
//! TRYBUILD=overwrite cargo test -p pto-tests --test ui
//! ```
//!
//! Then read every `.stderr` that changed: each must point (`^^^`) at the offending token
//! with a message an op author understands, show only the intended error(s), and hold no
//! warnings. Overwriting accepts whatever rustc printed, right or wrong.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("ui/*.rs");
}
