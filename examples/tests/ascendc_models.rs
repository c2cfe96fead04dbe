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

/// The f16 block (`decoder-block-f16`) passes `pto parity` on `ascendc-host` on the coupled
/// Kirin and the split 910B lowerings: every node's kernel rounds where its reference does
/// (flash attention's probabilities meet `v` in f16 on both), so the output is the CPU's
/// within the f16 tolerance (bit for bit on the default inputs).
#[test]
fn the_f16_decoder_block_passes_pto_parity_on_ascendc_host() {
    for device in ["kirin9030", "ascend910b"] {
        let args = [
            "pto",
            "parity",
            "decoder-block-f16",
            "--target",
            "ascendc-host",
            "--device",
            device,
        ];
        if let Err(error) = pto_cli::run(args) {
            panic!("{device}: {error}");
        }
    }
}

/// The same check fails on one real error of one op: flash attention's scale 1% off in the
/// model run on `ascendc-host` (the CPU runs the block as built).
#[test]
fn the_f16_decoder_block_parity_fails_on_a_one_op_error() {
    use pto_backends::compiler::compile;
    use pto_backends::parity::compare_compiled;
    use pto_op::attr::AttrValue;
    use pto_op::target::TargetConfig;

    let def = find_builtin("decoder-block-f16")
        .expect("unique names")
        .expect("a model");
    let model = (def.build)().expect("builds");
    let mut wrong = model.clone();
    let node = wrong
        .graph
        .nodes
        .iter_mut()
        .find(|n| n.op == "demo.flash_attention")
        .expect("the block attends");
    // 1 / sqrt(64), 1% larger.
    node.attrs
        .insert("scale".to_owned(), AttrValue::F32(0.125 * 1.01));
    let reference = compile(&model, "cpu").expect("compiles");
    for device in ["kirin9030", "ascend910b"] {
        let profile = pto_op::DeviceProfile::builtin(device).expect("a built-in profile");
        let host = TargetConfig::new("ascendc-host").on(profile);
        let right = compile(&model, host.clone()).expect("compiles");
        let inputs = reference.random_inputs(0);
        let parity = compare_compiled(&right, &reference, &inputs).expect("runs");
        assert!(parity.passed(), "{device}: {parity}");
        let checked = compile(&wrong, host).expect("compiles");
        let parity = compare_compiled(&checked, &reference, &inputs).expect("runs");
        println!("{device}: {parity}");
        assert!(
            !parity.passed(),
            "{device}: a 1% error in the attention scale passed"
        );
    }
}
