//! The estimator against the simulator, and calibration, over the example and std ops.

use pto_cli::accuracy::{accuracy, calibrate};
use pto_estimator::Estimator;
use pto_estimator::accuracy::{Case, Split, sweep};
use pto_op::{DeviceProfile, registry};

// Links the example ops.
use pto_examples as _;

fn kirin() -> DeviceProfile {
    DeviceProfile::builtin("kirin9030").expect("built-in profile")
}

/// The first `per_op` cases of each op of `split`.
fn small(split: Split, per_op: usize) -> Vec<Case> {
    let all = sweep(split).expect("one sweep per op");
    let mut kept: Vec<Case> = Vec::new();
    for case in all {
        if kept.iter().filter(|c| c.op == case.op).count() < per_op {
            kept.push(case);
        }
    }
    kept
}

#[test]
fn accuracy_on_a_small_sweep_has_every_op_timed() {
    let report = accuracy(&kirin(), &small(Split::HeldOut, 2)).expect("accuracy runs");
    let ops: Vec<&str> = report.ops.iter().map(|o| o.op.as_str()).collect();
    for op in [
        "demo.gelu_affine",
        "demo.rms_norm",
        "demo.softmax",
        "demo.matmul",
        "demo.flash_attention",
        "demo.swiglu",
        "std.matmul",
        "std.add",
        "std.softmax",
        "std.rms_norm",
        "std.layer_norm",
        "std.gelu",
    ] {
        assert!(ops.contains(&op), "{op} missing from {ops:?}");
        assert!(report.to_string().contains(op));
    }
    assert!(
        report.ops.iter().all(|o| o.cases == 2 && o.skipped == 0),
        "{report}"
    );
    assert!(report.median_error.is_some());
}

#[test]
fn a_calibrated_profile_round_trips_and_changes_its_ops_only() {
    let dir = std::env::temp_dir().join(format!("pto-calibration-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let file = dir.join("kirin9030.calibrated.json");
    let training: Vec<Case> = small(Split::Training, 3)
        .into_iter()
        .filter(|c| c.op == "std.add")
        .collect();
    let held_out: Vec<Case> = small(Split::HeldOut, 2)
        .into_iter()
        .filter(|c| c.op == "std.add")
        .collect();
    let report = calibrate(&kirin(), &training, &held_out, &file, "test").expect("calibrates");
    assert_eq!(report.calibration.keys().collect::<Vec<_>>(), ["std.add"]);

    let loaded = DeviceProfile::resolve(&file.display().to_string()).expect("loads back");
    // serde_json prints the shortest decimal that reads back within an ulp or so.
    let (fitted, read) = (
        &report.calibration["std.add"],
        &loaded.calibration["std.add"],
    );
    assert!((fitted.log_scale - read.log_scale).abs() <= 1e-12 * fitted.log_scale.abs());
    assert!((fitted.exponent - read.exponent).abs() <= 1e-12 * fitted.exponent.abs());
    assert_eq!(loaded.name, "kirin9030");
    std::fs::remove_dir_all(&dir).expect("clean up");

    let plain = kirin();
    let (mut before, mut after) = (
        Estimator::linked(&plain).expect("estimator"),
        Estimator::linked(&loaded).expect("estimator"),
    );
    for case in [&held_out[0], &small(Split::HeldOut, 1)[0]] {
        let info = registry::find(&case.op)
            .expect("linked")
            .invoke_info(&case.inputs, &case.attrs)
            .expect("valid");
        let (b, a) = (
            before.estimate(&info).expect("estimates"),
            after.estimate(&info).expect("estimates"),
        );
        if case.op == "std.add" {
            assert!(a.calibrated && !b.calibrated);
            assert_ne!(a.seconds, b.seconds);
        } else {
            assert_eq!(a, b, "{} is not calibrated", case.op);
        }
    }
}
