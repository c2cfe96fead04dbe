//! The kernels of the standard ops on the `ascendc-host` target: lowered to Ascend C,
//! compiled against the host implementation of the API and run, against their references.
//! The cases are those of `tests/tests/std_ops_parity.rs` (the `sim` table).
#![cfg(feature = "device")]

use pto_backends::ascendc::AscendcHost;
use pto_backends::cpu::Cpu;
use pto_op::parity::{ParityCase, check_parity};
use pto_op::{AttrValue, Attributes, DType, Executor, Lowering, OpDef, Shape, TensorType, ops};

fn ty(dtype: DType, dims: &[usize]) -> TensorType {
    TensorType {
        shape: Shape::from(dims),
        dtype,
    }
}

fn cases(
    def: &'static OpDef,
    shapes: &[&[usize]],
    attrs: &[(&str, AttrValue)],
) -> Vec<(&'static OpDef, ParityCase)> {
    [DType::F32, DType::F16]
        .into_iter()
        .map(|dtype| {
            let case = ParityCase {
                inputs: shapes.iter().map(|dims| ty(dtype, dims)).collect(),
                attrs: attrs
                    .iter()
                    .map(|(name, value)| ((*name).to_owned(), value.clone()))
                    .collect::<Attributes>(),
                seed: shapes.len() as u64 + shapes.iter().map(|s| s.len() as u64).sum::<u64>(),
                tolerance: None,
            };
            (def, case)
        })
        .collect()
}

/// Runs every case on `ascendc-host`; an instance the SoC cannot hold (i64 on Kirin) is
/// declined, and only those dtypes may be. Fails listing the cases that did not pass.
fn check_all(table: Vec<(&'static OpDef, ParityCase)>) {
    let host = AscendcHost::on(None);
    let mut failures = Vec::new();
    for (def, case) in &table {
        match host.prepare(def, &case.inputs, &case.attrs) {
            Ok(Lowering::NoKernel) => {
                let declinable = case
                    .inputs
                    .iter()
                    .any(|t| matches!(t.dtype, DType::I64 | DType::BF16));
                println!("declined: {} for {}", def.name, case.describe(def.inputs));
                if !declinable {
                    failures.push(format!(
                        "{} declined {}",
                        def.name,
                        case.describe(def.inputs)
                    ));
                }
                continue;
            }
            Ok(_) => {}
            Err(e) => {
                failures.push(format!(
                    "{} for {}: {e}",
                    def.name,
                    case.describe(def.inputs)
                ));
                continue;
            }
        }
        match check_parity(def, case, &Cpu, &host) {
            Ok(report) => {
                println!("{report}");
                if !report.passed() {
                    failures.push(report.to_string());
                }
            }
            Err(e) => failures.push(format!(
                "{} for {}: {e}",
                def.name,
                case.describe(def.inputs)
            )),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        table.len(),
        failures.join("\n")
    );
}

#[test]
fn binary_arithmetic_kernels_match_their_references() {
    let mut table = Vec::new();
    for def in [
        ops::add::def(),
        ops::sub::def(),
        ops::mul::def(),
        ops::div::def(),
    ] {
        table.extend(cases(def, &[&[64, 256], &[64, 256]], &[]));
        table.extend(cases(def, &[&[37, 100], &[37, 100]], &[]));
        table.extend(cases(def, &[&[2, 13, 48], &[48]], &[]));
        table.extend(cases(def, &[&[33], &[5, 33]], &[]));
        table.extend(cases(def, &[&[7, 1], &[1, 30]], &[]));
        table.extend(cases(def, &[&[3, 70, 1], &[70, 20]], &[]));
    }
    check_all(table);
}

#[test]
fn activation_kernels_match_their_references() {
    let mut table = Vec::new();
    for def in [
        ops::relu::def(),
        ops::sigmoid::def(),
        ops::silu::def(),
        ops::gelu::def(),
    ] {
        table.extend(cases(def, &[&[64, 256]], &[]));
        table.extend(cases(def, &[&[3, 37, 100]], &[]));
        table.extend(cases(def, &[&[77]], &[]));
    }
    let tanh = || [("approximate", AttrValue::String("tanh".to_owned()))];
    table.extend(cases(ops::gelu::def(), &[&[64, 256]], &tanh()));
    table.extend(cases(ops::gelu::def(), &[&[13, 100]], &tanh()));
    check_all(table);
}

#[test]
fn row_kernels_match_their_references() {
    let mut table = Vec::new();
    let softmax = ops::softmax::def();
    table.extend(cases(softmax, &[&[16, 128]], &[]));
    table.extend(cases(softmax, &[&[2, 9, 77]], &[]));
    table.extend(cases(softmax, &[&[13, 40]], &[("axis", AttrValue::I64(1))]));
    let layer_norm = ops::layer_norm::def();
    table.extend(cases(layer_norm, &[&[32, 256], &[256], &[256]], &[]));
    table.extend(cases(
        layer_norm,
        &[&[2, 13, 100], &[100], &[100]],
        &[("eps", AttrValue::F32(1e-3))],
    ));
    let rms_norm = ops::rms_norm::def();
    table.extend(cases(rms_norm, &[&[32, 256], &[256]], &[]));
    table.extend(cases(
        rms_norm,
        &[&[2, 7, 48], &[48]],
        &[("eps", AttrValue::F32(1e-5))],
    ));
    check_all(table);
}

#[test]
fn matmul_kernel_matches_its_reference() {
    let matmul = ops::matmul::def();
    let mut table = Vec::new();
    table.extend(cases(matmul, &[&[64, 128], &[128, 64]], &[]));
    table.extend(cases(matmul, &[&[100, 70], &[70, 50]], &[]));
    table.extend(cases(matmul, &[&[130, 300], &[300, 90]], &[]));
    table.extend(cases(matmul, &[&[5, 3], &[3, 7]], &[]));
    check_all(table);
}

#[test]
fn integer_arithmetic_kernels_are_exact() {
    let mut table = Vec::new();
    for def in [ops::add::def(), ops::sub::def(), ops::mul::def()] {
        for dtype in [DType::I32, DType::I64] {
            table.push((
                def,
                ParityCase {
                    inputs: vec![ty(dtype, &[9, 40]), ty(dtype, &[40])],
                    attrs: Attributes::new(),
                    seed: 5,
                    tolerance: None,
                },
            ));
        }
    }
    check_all(table);
}
