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
    assert!(
        err.to_string()
            .starts_with("no execution target `tpu`; linked targets: cpu"),
        "{err}"
    );
}
