//! The registry sees ops from other crates, in a stable order, and explains unknown names.

// The documented way to keep an operator crate that this binary never names otherwise:
// without this line the linker may drop pto-examples, and its ops with it.
use pto_examples as _;

use pto_op::RegistryError;
use pto_op::registry;

#[test]
fn ops_from_a_separate_crate_are_registered() {
    let op = registry::find("demo.gelu_affine").expect("pto-examples' op is linked");
    assert_eq!(op.inputs, ["x"]);
    assert_eq!(op.outputs, ["y"]);
    assert!(op.source.file.ends_with("elementwise.rs"), "{}", op.source);
    assert!(registry::find("demo.moments").is_ok());
}

#[test]
fn iteration_is_ordered_by_name() {
    let names: Vec<&str> = registry::ops().unwrap().iter().map(|op| op.name).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
    assert!(names.contains(&"demo.gelu_affine") && names.contains(&"demo.moments"));
}

#[test]
fn an_unknown_name_suggests_close_ones() {
    let err = registry::find("demo.gelu_afine").unwrap_err();
    assert!(matches!(err, RegistryError::Unknown { .. }));
    assert_eq!(
        err.to_string(),
        "no op named `demo.gelu_afine` is registered; did you mean demo.gelu_affine?"
    );
    let far = registry::find("team.nothing_like_it")
        .unwrap_err()
        .to_string();
    assert!(far.contains("is the crate that defines it linked"), "{far}");
}

#[test]
fn targets_are_found_by_name() {
    use pto_backends as _;
    let cpu = pto_op::target::target("cpu").unwrap();
    assert_eq!(cpu.target(), "cpu");
    let err = pto_op::target::target("tpu").err().unwrap();
    let first = if cfg!(feature = "device") {
        "ascendc-host"
    } else {
        "cpu"
    };
    assert!(
        err.to_string().starts_with(&format!(
            "no execution target `tpu`; linked targets: {first}"
        )),
        "{err}"
    );
}

#[test]
fn two_targets_of_one_name_are_a_duplicate_naming_both_places() {
    use pto_backends as _;
    use pto_op::registration::check_unique;
    use pto_op::target::TargetDef;
    let cpu = pto_op::target::targets()
        .into_iter()
        .find(|t| t.name == "cpu")
        .expect("cpu is linked");
    let first = TargetDef {
        name: "npu",
        description: "one",
        make: cpu.make,
        source: pto_op::source_location!(),
    };
    let second = TargetDef {
        name: "npu",
        description: "another",
        make: cpu.make,
        source: pto_op::source_location!(),
    };
    let err = check_unique(&[second, first]).expect_err("two targets named npu");
    assert_eq!(
        err.first.line + 6,
        err.second.line,
        "in source order: {err}"
    );
    let message = err.to_string();
    assert!(
        message.starts_with("two target registrations of `npu`: one in registry ("),
        "{message}"
    );
    assert!(message.ends_with("; rename one of them"), "{message}");
    // The linked targets have unique names.
    assert!(check_unique(&pto_op::target::targets()).is_ok());
}
