//! A performance model registered in another operator crate (team B's) joins the chain of
//! any program that links it: it answers for its op, says where it is written, and is
//! listed by `pto estimators`.

use pto_cli::run;
use pto_estimator::Estimator;
use pto_estimator::chain::{Chain, Kind, Source};
use pto_estimator::report::ModelReport;
use pto_op::{DType, DeviceProfile, Level, Shape, TensorType, registry};
// Links the example ops and models, and through them team B's crate.
use pto_examples as _;

const OP: &str = "teamb.scaled_tanh";

#[test]
fn the_chain_picks_team_b_s_estimator_and_points_at_its_source() {
    let choice = Chain::linked().unwrap().resolve(OP, "kirin9030").unwrap();
    assert_eq!(choice.source, Source::UserEstimator);
    let location = choice.location.unwrap();
    assert_eq!(location.file, "examples/team-b/src/estimate.rs");
    assert_eq!(location.module_path, "pto_team_b::estimate");

    let device = DeviceProfile::builtin("kirin9030").unwrap();
    let x = TensorType {
        shape: Shape::from([1024, 1024]),
        dtype: DType::F16,
    };
    let info = registry::find(OP)
        .unwrap()
        .invoke_info(&[x], &Default::default())
        .unwrap();
    let estimate = Estimator::linked(&device).unwrap().estimate(&info).unwrap();
    assert_eq!(estimate.source, Source::UserEstimator);
    assert!(
        estimate
            .location
            .unwrap()
            .contains("team-b/src/estimate.rs")
    );
    assert!(estimate.properties.is_none());
    // At least the transfer of 2 MiB in and 2 MiB out.
    let transfer =
        4.0 * (1 << 20) as f64 / (device.memory_bandwidth * device.estimator.memory_efficiency);
    assert!(estimate.seconds >= transfer, "{}", estimate.seconds);
}

#[test]
fn a_model_using_the_op_reports_team_b_s_estimator() {
    let device = DeviceProfile::builtin("kirin9030").unwrap();
    let graph = pto_op::models::find_builtin("mixed")
        .unwrap()
        .unwrap()
        .graph()
        .unwrap();
    let mut estimator = Estimator::linked(&device).unwrap();
    let report = ModelReport::of_graph("mixed", &graph, &mut estimator).unwrap();
    let row = report.ops.iter().find(|row| row.op == OP).unwrap();
    assert_eq!(row.source, Source::UserEstimator);
}

#[test]
fn pto_estimators_lists_it() {
    let listed = run(["pto", "estimators"]).unwrap();
    let line = listed.lines().find(|l| l.starts_with(OP)).unwrap();
    assert!(line.contains("examples/team-b/src/estimate.rs"), "{line}");
    let json: Vec<serde_json::Value> =
        serde_json::from_str(&run(["pto", "estimators", "--json"]).unwrap()).unwrap();
    let entry = json.iter().find(|r| r["op"] == OP).unwrap();
    assert_eq!(entry["kind"], serde_json::json!(Kind::Estimator));
    assert_eq!(entry["level"], serde_json::json!(Level::User));
    assert_eq!(entry["in_force"], true);
}
