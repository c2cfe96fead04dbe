//! The example models on the `ascendc-host` target: every kernel lowered to Ascend C,
//! compiled against the host implementation of the API, run, and compared with the CPU
//! references, like `models.rs` does for `sim`.
#![cfg(feature = "device")]

use std::time::Instant;

use pto_backends::parity::check_model_parity;
use pto_op::models::{builtin_models, find_builtin};
// Links the example models (and their ops) into this test.
use pto_examples as _;

fn agrees_on_ascendc_host(name: &str) {
    let def = find_builtin(name).expect("unique names").expect("a model");
    let model = (def.build)().expect("builds");
    let start = Instant::now();
    let parity = check_model_parity(&model, "ascendc-host", "cpu", None, 7).expect("runs");
    let host = start.elapsed();
    let start = Instant::now();
    let sim = check_model_parity(&model, "sim", "cpu", None, 7).expect("runs");
    println!(
        "{parity}\n({name}: {host:.2?} on ascendc-host vs cpu, {:.2?} on sim vs cpu)",
        start.elapsed()
    );
    assert!(parity.passed(), "{parity}");
    assert!(sim.passed(), "{sim}");
}

#[test]
fn the_decoder_block_agrees_on_ascendc_host_and_cpu() {
    agrees_on_ascendc_host("decoder-block");
}

#[test]
fn every_other_example_model_agrees_on_ascendc_host_and_cpu() {
    for def in builtin_models().expect("unique names") {
        if def.describe.is_none() && def.name != "decoder-block" {
            agrees_on_ascendc_host(def.name);
        }
    }
}
