//! The kernels of the standard ops (`pto_op::ops`) against their references: each case
//! runs the reference on `cpu` and the kernel on `sim` (kirin9030) on the same seeded
//! inputs, and with the feature `device` also on `ascendc-host` (the kernel lowered to
//! Ascend C, compiled against the host implementation of the API and run). The std ops
//! live in pto-op, which cannot link the targets, so their parity cases are this table
//! rather than `#[parity]` attributes.

use pto_backends::cpu::Cpu;
use pto_backends::sim::Sim;
use pto_op::parity::{ParityCase, check_parity};
use pto_op::{
    AttrValue, Attributes, DType, DeviceProfile, Executor, OpDef, Shape, TensorType, ops,
};

/// `f32[dims]`, `f16[dims]`, ...
fn ty(dtype: DType, dims: &[usize]) -> TensorType {
    TensorType {
        shape: Shape::from(dims),
        dtype,
    }
}

/// One case per dtype in `dtypes`, for inputs of `shapes` and params `attrs`.
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
                ranges: Vec::new(),
                seed: shapes.len() as u64 + shapes.iter().map(|s| s.len() as u64).sum::<u64>(),
                tolerance: None,
            };
            (def, case)
        })
        .collect()
}

/// Runs every case on every kernel target, printing each report, and fails listing those
/// that did not pass.
fn check_all(table: Vec<(&'static OpDef, ParityCase)>) {
    let profile = DeviceProfile::builtin("kirin9030").expect("built-in profile");
    let sim = Sim::new(profile);
    let mut failures = Vec::new();
    for (def, case) in &table {
        check_one(def, case, &sim, &mut failures);
        #[cfg(feature = "device")]
        check_on_host(def, case, &mut failures);
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        table.len(),
        failures.join("\n")
    );
}

/// Checks `case` with the kernel on `target` against the reference on the CPU.
fn check_one(
    def: &'static OpDef,
    case: &ParityCase,
    target: &dyn Executor,
    failures: &mut Vec<String>,
) {
    match check_parity(def, case, &Cpu, target) {
        Ok(report) => {
            println!("{report}");
            if !report.passed() {
                failures.push(report.to_string());
            }
        }
        Err(e) => failures.push(format!(
            "{} on {} for {}: {e}",
            def.name,
            target.target(),
            case.describe(def.inputs)
        )),
    }
}

/// Checks `case` on `ascendc-host` (kirin9030). An instance the SoC cannot hold (i64 or
/// bf16 on Kirin) is declined, and only those may be; a kernel that needs a call path Kirin
/// lacks (a matmul: no float L0C there) is refused by the capability table, and checked on
/// the 910B's host instead.
#[cfg(feature = "device")]
fn check_on_host(def: &'static OpDef, case: &ParityCase, failures: &mut Vec<String>) {
    use pto_backends::ascendc::{AscendcHost, Soc, lower};
    use pto_op::Lowering;
    let host = AscendcHost::on(None);
    match host.prepare(def, &case.inputs, &case.attrs) {
        Ok(Lowering::Declined { .. }) => {
            let declinable = case
                .inputs
                .iter()
                .any(|t| matches!(t.dtype, DType::I64 | DType::BF16));
            let not_on_kirin = lower(def, &case.inputs, &case.attrs, Soc::Kirin9030)
                .is_err_and(|e| e.is_unsupported_on_soc());
            println!(
                "declined on ascendc-host: {} for {}{}",
                def.name,
                case.describe(def.inputs),
                if not_on_kirin {
                    " (not on kirin9030: checked on ascend910b)"
                } else {
                    ""
                }
            );
            if not_on_kirin {
                let ascend = DeviceProfile::builtin("ascend910b").expect("a built-in profile");
                check_one(def, case, &AscendcHost::on(Some(&ascend)), failures);
            } else if !declinable {
                failures.push(format!(
                    "{} declined on ascendc-host for {}",
                    def.name,
                    case.describe(def.inputs)
                ));
            }
        }
        Ok(_) => check_one(def, case, &host, failures),
        Err(e) => failures.push(format!(
            "{} on ascendc-host for {}: {e}",
            def.name,
            case.describe(def.inputs)
        )),
    }
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
        // Same shape, a whole tile and an edge tile.
        table.extend(cases(def, &[&[64, 256], &[64, 256]], &[]));
        table.extend(cases(def, &[&[37, 100], &[37, 100]], &[]));
        // Row broadcast [.., n] with [n], and the other general broadcasts.
        table.extend(cases(def, &[&[2, 13, 48], &[48]], &[]));
        table.extend(cases(def, &[&[33], &[5, 33]], &[]));
        table.extend(cases(def, &[&[7, 1], &[1, 30]], &[]));
        table.extend(cases(def, &[&[3, 70, 1], &[70, 20]], &[]));
    }
    // Rows too long for the UB in f32 (kirin9030: 4 x 43 KiB > 118 KiB) run in column
    // chunks, the last one masked: same shape, a row broadcast, a column broadcast, and rank
    // 1. The tiling is shared by every element-wise kernel, so one op covers it.
    let mul = ops::mul::def();
    table.extend(cases(mul, &[&[3, 11008], &[3, 11008]], &[]));
    table.extend(cases(mul, &[&[2, 11008], &[11008]], &[]));
    table.extend(cases(mul, &[&[5, 1], &[1, 9000]], &[]));
    table.extend(cases(mul, &[&[9000], &[9000]], &[]));
    // Powers (negative bases with fractional exponents give NaN on both sides).
    let pow = ops::pow::def();
    table.extend(cases(pow, &[&[64, 256], &[64, 256]], &[]));
    table.extend(cases(pow, &[&[2, 13, 48], &[48]], &[]));
    table.extend(cases(pow, &[&[37, 100], &[1]], &[]));
    // Element-wise max and min, broadcast.
    for def in [ops::max::def(), ops::min::def()] {
        table.extend(cases(def, &[&[64, 256], &[64, 256]], &[]));
        table.extend(cases(def, &[&[2, 13, 48], &[48]], &[]));
        table.extend(cases(def, &[&[7, 1], &[1, 30]], &[]));
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
        ops::neg::def(),
        ops::sqrt::def(),
        ops::tanh::def(),
        ops::exp::def(),
        ops::erf::def(),
        ops::reciprocal::def(),
    ] {
        table.extend(cases(def, &[&[64, 256]], &[]));
        table.extend(cases(def, &[&[3, 37, 100]], &[]));
        table.extend(cases(def, &[&[77]], &[]));
    }
    // Column chunks (see the binary ops), for the activation with the most temporaries.
    table.extend(cases(ops::silu::def(), &[&[2, 11008]], &[]));
    table.extend(cases(ops::gelu::def(), &[&[2, 11008]], &[]));
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
fn batch_matmul_kernel_matches_its_reference() {
    let batch_matmul = ops::batch_matmul::def();
    let mut table = Vec::new();
    // Attention's shapes: heads of whole tiles, and of edge tiles (rows and K not multiples
    // of 16, so each matrix's edges are masked inside the batch).
    table.extend(cases(
        batch_matmul,
        &[&[2, 4, 64, 32], &[2, 4, 32, 64]],
        &[],
    ));
    table.extend(cases(batch_matmul, &[&[1, 3, 9, 20], &[1, 3, 20, 9]], &[]));
    // Several output tiles and K stages per matrix.
    table.extend(cases(batch_matmul, &[&[2, 150, 300], &[2, 300, 140]], &[]));
    // Broadcast batch dims: a shared, b shared, both broadcast, and ranks that differ.
    table.extend(cases(batch_matmul, &[&[1, 3, 17, 8], &[2, 1, 8, 5]], &[]));
    table.extend(cases(batch_matmul, &[&[3, 10, 24], &[24, 7]], &[]));
    table.extend(cases(batch_matmul, &[&[10, 24], &[2, 3, 24, 7]], &[]));
    check_all(table);
}

#[test]
fn kernels_explain_what_they_do_not_support() {
    let trace = |def: &'static OpDef, inputs: &[TensorType], attrs: Attributes| {
        def.trace_kernel(inputs, &attrs)
            .expect_err("the kernel refuses")
            .to_string()
    };
    assert_eq!(
        trace(
            ops::softmax::def(),
            &[ty(DType::F32, &[4, 8])],
            Attributes::from([("axis".to_owned(), AttrValue::I64(0))]),
        ),
        "op `std.softmax`: param `axis`: the kernel takes the last axis (-1 or 1), got 0: \
         transpose the axis to the end, or run on the cpu target"
    );
    assert_eq!(
        trace(
            ops::matmul::def(),
            &[ty(DType::F16, &[2, 4, 8]), ty(DType::F16, &[8, 16])],
            Attributes::new(),
        ),
        "op `std.matmul`: input `a`: the kernel takes a rank-2 a, got shape [2, 4, 8]: \
         reshape the batch into the rows, [B * m, k]"
    );
    assert_eq!(
        trace(
            ops::div::def(),
            &[ty(DType::I32, &[4, 8]), ty(DType::I32, &[4, 8])],
            Attributes::new(),
        ),
        "op `std.div`: input `a`: the kernel divides floats only, got i32: integer division \
         runs on the cpu target"
    );
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
                    ranges: Vec::new(),
                    seed: 5,
                    tolerance: None,
                },
            ));
        }
    }
    check_all(table);
}
