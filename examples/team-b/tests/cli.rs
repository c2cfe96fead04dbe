//! Team B's own `pto` binary runs accuracy and calibration over team B's ops (and the std
//! ops), with no example op linked: the engine names no op, each op brings its sweep.

use std::process::Command;

fn pto() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pto-team-b"));
    // The device comes from the arguments, not from whoever runs the tests.
    command.env_remove("PTO_DEVICE").env_remove("PTO_TARGET");
    command
}

/// The op names of a report's `ops` array.
fn ops(report: &serde_json::Value) -> Vec<String> {
    report["ops"]
        .as_array()
        .expect("an ops array")
        .iter()
        .map(|op| op["op"].as_str().expect("an op name").to_owned())
        .collect()
}

#[test]
fn accuracy_runs_over_team_bs_ops_through_its_own_cli() {
    let out = pto()
        .args(["accuracy", "--device", "kirin9030", "--json"])
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let ops = ops(&report);
    assert!(ops.contains(&"teamb.scaled_tanh".to_owned()), "{ops:?}");
    assert!(ops.iter().all(|op| !op.starts_with("demo.")), "{ops:?}");
    let tanh = report["ops"]
        .as_array()
        .and_then(|all| all.iter().find(|op| op["op"] == "teamb.scaled_tanh"))
        .expect("scaled_tanh's row");
    // Six held-out sizes of its own sweep, each timed by the simulator.
    assert_eq!(
        (tanh["cases"].as_u64(), tanh["skipped"].as_u64()),
        (Some(6), Some(0)),
        "{tanh}"
    );
    // Its estimate comes from team B's own `#[op_estimator]`.
    assert_eq!(tanh["source"], "user estimator", "{tanh}");
}

#[test]
fn calibrate_fits_team_bs_ops_through_its_own_cli() {
    let dir = std::env::temp_dir().join(format!("pto-team-b-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary directory");
    let file = dir.join("kirin9030.calibrated.json");
    let out = pto()
        .args(["calibrate", "--device", "kirin9030", "--json", "-o"])
        .arg(&file)
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert!(
        report["calibration"]["teamb.scaled_tanh"]["exponent"].is_number(),
        "{}",
        report["calibration"]
    );
    assert!(ops(&report["after"]).contains(&"teamb.scaled_tanh".to_owned()));

    // The calibrated profile is a device the same binary takes.
    let profile = pto_op::DeviceProfile::resolve(&file.display().to_string()).expect("loads");
    assert!(profile.calibration.contains_key("teamb.scaled_tanh"));
    let out = pto()
        .args(["accuracy", "--json", "--device"])
        .arg(&file)
        .output()
        .expect("the binary runs");
    assert!(out.status.success());
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let tanh = report["ops"]
        .as_array()
        .and_then(|all| all.iter().find(|op| op["op"] == "teamb.scaled_tanh"))
        .expect("scaled_tanh's row")
        .clone();
    assert!(
        tanh["source"]
            .as_str()
            .is_some_and(|s| s.ends_with("calibrated")),
        "{tanh}"
    );
    std::fs::remove_dir_all(&dir).expect("clean up");
}
