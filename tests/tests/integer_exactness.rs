//! Integers are exact on every target, with the CPU reference's overflow errors (issue 11
//! item 7): i32 values past 2^24 (where an f32 carrier rounds) and i64 values past 2^53
//! (where an f64 one does), through the integer kernels of `std.add`, `std.sub` and
//! `std.mul` on `cpu`, `sim` and, with the feature `device`, `ascendc-host` (kirin9030 and
//! ascend910b; i64, which no SoC of the lowering holds, is declined there and runs on the
//! CPU reference). Every output is compared bit for bit with the value computed here in
//! i64, and every overflow must be an error on every target, never a wrapped or saturated
//! value.

use pto_backends::compiler::{NodeRuns, compile};
use pto_op::target::TargetConfig;
use pto_op::{DType, DeviceProfile, Graph, Shape, Tensor, ops};

/// The targets, each with whether its integer kernels must run (not fall back).
fn targets() -> Vec<(TargetConfig, bool)> {
    let on = |name: &str, device: &str| {
        TargetConfig::new(name).on(DeviceProfile::builtin(device).expect("a built-in profile"))
    };
    #[allow(unused_mut)]
    let mut all = vec![
        (TargetConfig::new("cpu"), false),
        (on("sim", "kirin9030"), true),
    ];
    #[cfg(feature = "device")]
    {
        all.push((on("ascendc-host", "kirin9030"), true));
        all.push((on("ascendc-host", "ascend910b"), true));
    }
    all
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Add,
    Sub,
    Mul,
}

impl Op {
    fn exact(self, a: i64, b: i64) -> Option<i64> {
        match self {
            Op::Add => a.checked_add(b),
            Op::Sub => a.checked_sub(b),
            Op::Mul => a.checked_mul(b),
        }
    }
}

/// `op(a, b)` on `target`: the output as i64, or the error; and how the node ran.
fn run(
    op: Op,
    dtype: DType,
    a: &[i64],
    b: &[i64],
    target: &TargetConfig,
) -> (Result<Vec<i64>, String>, NodeRuns) {
    let tensor = |values: &[i64]| {
        Tensor::from_vec([values.len()], values.to_vec())
            .expect("a vector")
            .cast(dtype)
    };
    let g = Graph::new();
    let x = g.input("a", Shape::from([a.len()]), dtype);
    let y = g.input("b", Shape::from([b.len()]), dtype);
    let z = match op {
        Op::Add => ops::add::apply(&x, &y, &Default::default()),
        Op::Sub => ops::sub::apply(&x, &y, &Default::default()),
        Op::Mul => ops::mul::apply(&x, &y, &Default::default()),
    }
    .expect("traces");
    g.output(&z);
    let model = g.to_model("ints").expect("a model");
    let compiled = compile(&model, target.clone()).expect("compiles");
    let runs = compiled.report().nodes[0].runs;
    let result = compiled
        .run(&[tensor(a), tensor(b)])
        .map(|r| {
            r.outputs[0]
                .cast(DType::I64)
                .to_vec::<i64>()
                .expect("i64 elements")
        })
        .map_err(|e| e.to_string());
    (result, runs)
}

/// Checks `op` on `a`, `b` (whose results fit `dtype`) on every target, exactly.
fn assert_exact(op: Op, dtype: DType, a: &[i64], b: &[i64]) {
    let expected: Vec<i64> = a
        .iter()
        .zip(b)
        .map(|(x, y)| op.exact(*x, *y).expect("the case's results fit"))
        .collect();
    for (target, kernel) in targets() {
        let (got, runs) = run(op, dtype, a, b, &target);
        let declined = dtype == DType::I64 && target.name == "ascendc-host";
        if kernel && !declined {
            assert!(
                matches!(runs, NodeRuns::Kernel { .. }),
                "{op:?} {dtype} on {}: ran as {runs}",
                target.name
            );
        }
        assert_eq!(
            got.as_deref(),
            Ok(expected.as_slice()),
            "{op:?} of {dtype} on {} ({runs})",
            target.name
        );
    }
}

/// Checks that `op` on `a`, `b` (some result outside `dtype`) is an error on every target.
fn assert_overflow_is_an_error(op: Op, dtype: DType, a: &[i64], b: &[i64]) {
    for (target, _) in targets() {
        let (got, runs) = run(op, dtype, a, b, &target);
        let err = got.expect_err(&format!(
            "{op:?} of {dtype} on {} ({runs}) must overflow",
            target.name
        ));
        assert!(
            err.contains("overflow"),
            "{op:?} of {dtype} on {}: {err}",
            target.name
        );
    }
}

const P24: i64 = 1 << 24;
const P53: i64 = 1 << 53;

#[test]
fn i32_arithmetic_past_2_pow_24_is_exact_on_every_target() {
    let a = [
        P24 + 1,
        P24 + 3,
        (1 << 30) + 7,
        -(1 << 30) - 9,
        i64::from(i32::MAX) - 2,
        i64::from(i32::MIN) + 5,
        123_456_789,
        -987_654_321,
    ];
    let b = [1, -P24 - 1, (1 << 30) - 11, -(1 << 30) + 13, 1, -4, 3, -5];
    assert_exact(Op::Add, DType::I32, &a, &b);
    assert_exact(Op::Sub, DType::I32, &a, &[-1, 2, 3, -4, -2, 5, 6, 7]);
    let a = [46_341, -46_340, P24 + 1, 3, 65_535, -(1 << 15), 7, 0];
    let b = [
        46_340,
        46_341,
        127,
        715_827_882,
        32_767,
        65_536,
        -306_783_378,
        i64::from(i32::MAX),
    ];
    assert_exact(Op::Mul, DType::I32, &a, &b);
}

#[test]
fn i64_arithmetic_past_2_pow_53_is_exact_on_every_target() {
    let a = [
        P53 + 1,
        P53 + 3,
        (1 << 62) + 7,
        -(1 << 62) - 9,
        i64::MAX - 2,
        i64::MIN + 5,
        1_234_567_890_123_456_789,
        -P53 - 1,
    ];
    let b = [1, -P53 - 1, (1 << 62) - 11, -(1 << 62) + 13, 1, -4, 3, -2];
    assert_exact(Op::Add, DType::I64, &a, &b);
    assert_exact(Op::Sub, DType::I64, &a, &[-1, 2, 3, -4, -2, 5, 6, 7]);
    let a = [
        (1 << 31) + 1,
        3_037_000_499,
        P53 + 1,
        -(1 << 31) - 1,
        3,
        1 << 32,
        -1,
        7,
    ];
    let b = [
        (1 << 31) - 1,
        3_037_000_499,
        511,
        (1 << 31) + 1,
        P53 + 1,
        (1 << 30) + 1,
        i64::MAX,
        -P53 - 3,
    ];
    assert_exact(Op::Mul, DType::I64, &a, &b);
}

#[test]
fn integer_overflow_is_an_error_on_every_target() {
    let max32 = i64::from(i32::MAX);
    let min32 = i64::from(i32::MIN);
    assert_overflow_is_an_error(Op::Add, DType::I32, &[1, max32], &[2, 1]);
    assert_overflow_is_an_error(Op::Sub, DType::I32, &[1, min32], &[2, 1]);
    assert_overflow_is_an_error(Op::Sub, DType::I32, &[0, 5], &[min32, 1]);
    assert_overflow_is_an_error(Op::Mul, DType::I32, &[65_536, 1], &[65_536, 1]);
    assert_overflow_is_an_error(Op::Mul, DType::I32, &[P24 + 1, 1], &[128, 1]);
    assert_overflow_is_an_error(Op::Add, DType::I64, &[1, i64::MAX], &[2, 1]);
    assert_overflow_is_an_error(Op::Sub, DType::I64, &[1, i64::MIN], &[2, 1]);
    assert_overflow_is_an_error(Op::Mul, DType::I64, &[1 << 32, 1], &[1 << 32, 1]);
    assert_overflow_is_an_error(Op::Mul, DType::I64, &[P53 + 1, 1], &[1024, 1]);
}

#[test]
fn the_simulator_names_the_op_the_instruction_and_the_operands() {
    let sim = TargetConfig::new("sim");
    let (got, _) = run(
        Op::Add,
        DType::I32,
        &[1, i64::from(i32::MAX)],
        &[2, 1],
        &sim,
    );
    let err = got.expect_err("overflows");
    assert!(
        err.contains("op `std.add`")
            && err.contains("(binary of i32): 2147483647 + 1 = 2147483648 overflows i32"),
        "{err}"
    );
}
