//! Unit tests of the registration macros on `proc_macro2` tokens.

use proc_macro2::TokenStream;
use quote::quote;

use super::{Kind, registration};

fn errors(kind: Kind, args: TokenStream, item: TokenStream) -> Vec<String> {
    let out = registration(kind, args, item).to_string();
    out.split("compile_error !")
        .skip(1)
        .map(|s| s.split('"').nth(1).unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn a_good_estimator_registers_the_function_with_its_device() {
    let out = registration(
        Kind::Estimator,
        quote!(op = "demo.rms_norm", device = "kirin9030", override),
        quote!(
            fn estimate(info: &OpInvokeInfo, dev: &DeviceProfile) -> Estimate {
                Estimate::seconds(1.0)
            }
        ),
    )
    .to_string();
    assert!(!out.contains("compile_error"), "{out}");
    assert!(out.contains("ESTIMATORS"), "{out}");
    assert!(out.contains("Some (\"kirin9030\")"), "{out}");
    assert!(out.contains("overrides : true"), "{out}");
    assert!(out.contains("Level :: User"), "{out}");
    assert!(out.contains("estimate : estimate"), "{out}");
}

#[test]
fn default_marks_a_framework_registration() {
    let out = registration(
        Kind::Properties,
        quote!(op = "std.gather", default),
        quote!(
            fn gather(info: &pto_op::OpInvokeInfo) -> pto_op::PerformanceProperties {
                info.memory_access_properties()
            }
        ),
    )
    .to_string();
    assert!(out.contains("PROPERTIES"), "{out}");
    assert!(out.contains("Level :: Default"), "{out}");
}

#[test]
fn every_mistake_is_reported_at_once() {
    let found = errors(
        Kind::Estimator,
        quote!(device = "kirin9030", speed = "fast"),
        quote!(
            fn estimate(info: OpInvokeInfo, dev: &DeviceProfile) -> f64 {
                1.0
            }
        ),
    );
    assert_eq!(found.len(), 4, "{found:?}");
    assert!(found[0].starts_with("unknown key `speed`"), "{found:?}");
    assert!(found[1].contains("needs the op it is for"), "{found:?}");
    assert!(
        found[2].starts_with("expected `&OpInvokeInfo` here"),
        "{found:?}"
    );
    assert!(found[3].starts_with("expected `Estimate`"), "{found:?}");
}

#[test]
fn properties_take_no_device_and_one_parameter() {
    let found = errors(
        Kind::Properties,
        quote!(op = "std.add", device = "kirin9030"),
        quote!(
            fn props(info: &OpInvokeInfo, dev: &DeviceProfile) -> PerformanceProperties {
                info.memory_access_properties()
            }
        ),
    );
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].contains("`device` is not a key"), "{found:?}");
    assert!(
        found[1].contains("takes 1 parameter(s), got 2"),
        "{found:?}"
    );
}

#[test]
fn flags_take_no_value_and_keys_are_given_once() {
    let found = errors(
        Kind::Estimator,
        quote!(op = "a.b", op = "a.c", override = "yes"),
        quote!(
            fn e(i: &OpInvokeInfo, d: &DeviceProfile) -> Estimate {
                Estimate::seconds(0.0)
            }
        ),
    );
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].contains("`op` is given twice"), "{found:?}");
    assert!(found[1].contains("`override` is a flag"), "{found:?}");
}
