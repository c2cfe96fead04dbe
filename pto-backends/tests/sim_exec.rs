//! Functional execution of hand-written kernel programs against hand-computed values.

mod common;

use common::*;
use pto_backends::sim::SimError;
use pto_backends::sim::exec::execute;
use pto_op::kernel::ir::*;
use pto_op::{DType, Tensor};

fn f32s(shape: &[usize], values: &[f32]) -> Tensor {
    Tensor::from_vec(shape.to_vec(), values.to_vec()).expect("test data")
}

fn out(program: &pto_op::kernel::ValidProgram, inputs: &[&Tensor]) -> Vec<f32> {
    let outputs = execute(program, inputs).expect("executes");
    outputs[0].to_f32_array().iter().copied().collect()
}

#[test]
fn masked_loads_and_stores_cover_shapes_that_do_not_divide_the_tile() {
    // y = x * 10 + 1 over [5, 3] with [4, 4] tiles: the second program's tile is mostly
    // outside, and every tile has a masked fourth column.
    let mut b = Builder::new("t.affine", 2);
    let x = b.input("x", &[5, 3], DType::F32);
    let y = b.output("y", &[5, 3], DType::F32);
    let t = b.tile(&[4, 4], DType::F32, MemLevel::Ub);
    let s = b.tile(&[4, 4], DType::F32, MemLevel::Ub);
    let r = b.tile(&[4, 4], DType::F32, MemLevel::Ub);
    let rows = mul(Index::ProgramId, c(4));
    b.push(load(t, x, vec![rows.clone(), c(0)], 0.0));
    b.push(binary(s, BinaryOp::Mul, tile(t), scalar(10.0)));
    b.push(binary(r, BinaryOp::Add, tile(s), scalar(1.0)));
    b.push(store(y, vec![rows, c(0)], r));
    let xs: Vec<f32> = (0..15).map(|v| v as f32).collect();
    let expected: Vec<f32> = xs.iter().map(|v| v * 10.0 + 1.0).collect();
    assert_eq!(out(&b.finish(), &[&f32s(&[5, 3], &xs)]), expected);
}

#[test]
fn loads_pad_outside_the_tensor() {
    // sum of x[-1..3] with pad 5: 5 + 1 + 2 + 3.
    let mut b = Builder::new("t.pad", 1);
    let x = b.input("x", &[3], DType::F32);
    let y = b.output("y", &[1], DType::F32);
    let t = b.tile(&[4], DType::F32, MemLevel::Ub);
    let s = b.tile(&[1], DType::F32, MemLevel::Ub);
    b.push(load(t, x, vec![c(-1)], 5.0));
    b.push(Inst::Reduce {
        dst: s,
        op: ReduceOp::Sum,
        src: t,
        axis: 0,
    });
    b.push(store(y, vec![c(0)], s));
    assert_eq!(
        out(&b.finish(), &[&f32s(&[3], &[1.0, 2.0, 3.0])]),
        vec![11.0]
    );
}

#[test]
fn binary_compare_and_select_broadcast_like_numpy() {
    // a [2, 3] + b [1, 3]; then where(a > 2, sum, -1).
    let mut bl = Builder::new("t.broadcast", 1);
    let a = bl.input("a", &[2, 3], DType::F32);
    let b = bl.input("b", &[1, 3], DType::F32);
    let y = bl.output("y", &[2, 3], DType::F32);
    let ta = bl.tile(&[2, 3], DType::F32, MemLevel::Ub);
    let tb = bl.tile(&[1, 3], DType::F32, MemLevel::Ub);
    let sum = bl.tile(&[2, 3], DType::F32, MemLevel::Ub);
    let gt = bl.tile(&[2, 3], DType::Bool, MemLevel::Ub);
    let sel = bl.tile(&[2, 3], DType::F32, MemLevel::Ub);
    bl.push(load(ta, a, vec![c(0), c(0)], 0.0));
    bl.push(load(tb, b, vec![c(0), c(0)], 0.0));
    bl.push(binary(sum, BinaryOp::Add, tile(ta), tile(tb)));
    bl.push(Inst::Compare {
        dst: gt,
        op: CmpOp::Gt,
        lhs: tile(ta),
        rhs: scalar(2.0),
    });
    bl.push(Inst::Select {
        dst: sel,
        cond: gt,
        on_true: tile(sum),
        on_false: scalar(-1.0),
    });
    bl.push(store(y, vec![c(0), c(0)], sel));
    let av = f32s(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let bv = f32s(&[1, 3], &[10.0, 20.0, 30.0]);
    assert_eq!(
        out(&bl.finish(), &[&av, &bv]),
        vec![-1.0, -1.0, 33.0, 14.0, 25.0, 36.0]
    );
}

#[test]
fn reductions_keep_the_axis() {
    for (op, axis, shape, expected) in [
        (ReduceOp::Sum, 1, [2, 1], vec![6.0, 15.0]),
        (ReduceOp::Max, 0, [1, 3], vec![4.0, 5.0, 6.0]),
        (ReduceOp::Min, 1, [2, 1], vec![1.0, 4.0]),
        (ReduceOp::Mean, 0, [1, 3], vec![2.5, 3.5, 4.5]),
    ] {
        let mut b = Builder::new("t.reduce", 1);
        let x = b.input("x", &[2, 3], DType::F32);
        let y = b.output("y", &shape, DType::F32);
        let t = b.tile(&[2, 3], DType::F32, MemLevel::Ub);
        let r = b.tile(&shape, DType::F32, MemLevel::Ub);
        b.push(load(t, x, vec![c(0), c(0)], 0.0));
        b.push(Inst::Reduce {
            dst: r,
            op,
            src: t,
            axis,
        });
        b.push(store(y, vec![c(0), c(0)], r));
        let xs = f32s(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        assert_eq!(out(&b.finish(), &[&xs]), expected, "{op:?} axis {axis}");
    }
}

#[test]
fn matmul_transposes_b_adds_the_accumulator_and_converts_out_of_l0c() {
    // p = a @ b^T, then y = a @ b^T + p (= 2 a b^T), out as f16 through UB; one fractal.
    const N: usize = 16;
    let mut bl = Builder::new("t.matmul", 1);
    let a = bl.input("a", &[N, N], DType::F16);
    let b = bl.input("b", &[N, N], DType::F16);
    let y = bl.output("y", &[N, N], DType::F16);
    let a1 = bl.tile(&[N, N], DType::F16, MemLevel::L1);
    let b1 = bl.tile(&[N, N], DType::F16, MemLevel::L1);
    let a0 = bl.tile(&[N, N], DType::F16, MemLevel::L0A);
    let b0 = bl.tile(&[N, N], DType::F16, MemLevel::L0B);
    let acc = bl.tile(&[N, N], DType::F32, MemLevel::L0C);
    let prod = bl.tile(&[N, N], DType::F32, MemLevel::L0C);
    let res = bl.tile(&[N, N], DType::F16, MemLevel::Ub);
    bl.push(load(a1, a, vec![c(0), c(0)], 0.0));
    bl.push(load(b1, b, vec![c(0), c(0)], 0.0));
    bl.push(Inst::Move { dst: a0, src: a1 });
    bl.push(Inst::Move { dst: b0, src: b1 });
    bl.push(Inst::Matmul {
        dst: acc,
        a: a0,
        b: b0,
        acc: None,
        transpose_b: true,
    });
    bl.push(Inst::Matmul {
        dst: prod,
        a: a0,
        b: b0,
        acc: Some(acc),
        transpose_b: true,
    });
    bl.push(Inst::Move {
        dst: res,
        src: prod,
    });
    bl.push(store(y, vec![c(0), c(0)], res));
    let a_of = |i: usize, k: usize| ((i + k) % 3) as f64;
    let b_of = |j: usize, k: usize| ((j * k) % 2) as f64;
    let av = Tensor::from_f64_fn([N, N], DType::F16, |i| a_of(i[0], i[1]));
    let bv = Tensor::from_f64_fn([N, N], DType::F16, |i| b_of(i[0], i[1]));
    let y = execute(&bl.finish(), &[&av, &bv]).expect("executes");
    assert_eq!(y[0].dtype(), DType::F16);
    // Small integers: exact in f16.
    let expected: Vec<f64> = (0..N * N)
        .map(|e| {
            let (i, j) = (e / N, e % N);
            2.0 * (0..N).map(|k| a_of(i, k) * b_of(j, k)).sum::<f64>()
        })
        .collect();
    assert_eq!(y[0].to_f64_vec(), expected);
}

#[test]
fn a_loop_carries_tiles_and_indexes_with_its_variable() {
    // y[r] = sum over 4 column blocks of x[r, 2j..2j+2] + iota(j), carried in acc.
    let mut b = Builder::new("t.loop", 1);
    let x = b.input("x", &[2, 8], DType::F32);
    let y = b.output("y", &[2, 2], DType::F32);
    let init = b.tile(&[2, 2], DType::F32, MemLevel::Ub);
    let acc = b.tile(&[2, 2], DType::F32, MemLevel::Ub);
    let t = b.tile(&[2, 2], DType::F32, MemLevel::Ub);
    let iota = b.tile(&[1, 2], DType::F32, MemLevel::Ub);
    let partial = b.tile(&[2, 2], DType::F32, MemLevel::Ub);
    let next = b.tile(&[2, 2], DType::F32, MemLevel::Ub);
    let result = b.tile(&[2, 2], DType::F32, MemLevel::Ub);
    let j = b.var();
    b.push(Inst::Full {
        dst: init,
        value: 0.0,
    });
    b.push(Inst::Loop {
        var: j,
        count: 4,
        init: vec![init],
        params: vec![acc],
        body: vec![
            load(t, x, vec![c(0), mul(Index::Var(j), c(2))], 0.0),
            Inst::Iota {
                dst: iota,
                axis: 1,
                start: Index::Var(j),
            },
            binary(partial, BinaryOp::Add, tile(t), tile(iota)),
            binary(next, BinaryOp::Add, tile(acc), tile(partial)),
        ],
        yields: vec![next],
        results: vec![result],
    });
    b.push(store(y, vec![c(0), c(0)], result));
    let xs: Vec<f32> = (0..16).map(|v| v as f32).collect();
    // Row 0, col 0: 0+2+4+6 plus iota starts 0+1+2+3 = 18; col 1: 1+3+5+7 + (1+2+3+4) = 26.
    // Row 1 adds 8 per block: +32.
    assert_eq!(
        out(&b.finish(), &[&f32s(&[2, 8], &xs)]),
        vec![18.0, 26.0, 50.0, 58.0]
    );
}

#[test]
fn f16_tiles_round_after_every_instruction() {
    // 1 + 2^-11 is not an f16: an f16 add stays 1, an f32 add does not.
    for (dtype, expected) in [(DType::F16, 1.0), (DType::F32, 1.0 + 2f64.powi(-11))] {
        let mut b = Builder::new("t.round", 1);
        let x = b.input("x", &[1], dtype);
        let y = b.output("y", &[1], DType::F32);
        let t = b.tile(&[1], dtype, MemLevel::Ub);
        let s = b.tile(&[1], dtype, MemLevel::Ub);
        let w = b.tile(&[1], DType::F32, MemLevel::Ub);
        b.push(load(t, x, vec![c(0)], 0.0));
        b.push(binary(s, BinaryOp::Add, tile(t), scalar(2f64.powi(-11))));
        b.push(Inst::Cast { dst: w, src: s });
        b.push(store(y, vec![c(0)], w));
        let one = Tensor::from_f64_fn([1], dtype, |_| 1.0);
        let y = execute(&b.finish(), &[&one]).expect("executes");
        assert_eq!(y[0].to_f64_vec(), vec![expected], "{dtype}");
    }
}

#[test]
fn unary_ops_and_integer_casts() {
    type Reference = fn(f32) -> f32;
    let cases: [(UnaryOp, Reference); 6] = [
        (UnaryOp::Exp, f32::exp),
        (UnaryOp::Rsqrt, |v| 1.0 / v.sqrt()),
        (UnaryOp::Relu, |v| v.max(0.0)),
        (UnaryOp::Sigmoid, |v| 1.0 / (1.0 + (-v).exp())),
        (UnaryOp::Silu, |v| v / (1.0 + (-v).exp())),
        (UnaryOp::Square, |v| v * v),
    ];
    let xs = [0.25f32, 1.5, 4.0];
    for (op, f) in cases {
        let mut b = Builder::new("t.unary", 1);
        let x = b.input("x", &[3], DType::F32);
        let y = b.output("y", &[3], DType::F32);
        let t = b.tile(&[3], DType::F32, MemLevel::Ub);
        let r = b.tile(&[3], DType::F32, MemLevel::Ub);
        b.push(load(t, x, vec![c(0)], 0.0));
        b.push(Inst::Unary { dst: r, op, src: t });
        b.push(store(y, vec![c(0)], r));
        let expected: Vec<f32> = xs.iter().map(|v| f(*v)).collect();
        assert_eq!(out(&b.finish(), &[&f32s(&[3], &xs)]), expected, "{op:?}");
    }
    // Casts to integers truncate toward zero.
    let mut b = Builder::new("t.cast", 1);
    let x = b.input("x", &[3], DType::F32);
    let y = b.output("y", &[3], DType::I32);
    let t = b.tile(&[3], DType::F32, MemLevel::Ub);
    let r = b.tile(&[3], DType::I32, MemLevel::Ub);
    b.push(load(t, x, vec![c(0)], 0.0));
    b.push(Inst::Cast { dst: r, src: t });
    b.push(store(y, vec![c(0)], r));
    let y = execute(&b.finish(), &[&f32s(&[3], &[1.9, -1.9, 7.0])]).expect("executes");
    assert_eq!(y[0].to_vec::<i32>().expect("i32"), vec![1, -1, 7]);
}

#[test]
fn math_functions_against_hand_computed_values() {
    let xs = [-1.5f32, -0.25, 0.0, 2.0];
    let cases: [(UnaryOp, [f32; 4]); 6] = [
        (UnaryOp::Floor, [-2.0, -1.0, 0.0, 2.0]),
        (UnaryOp::Ceil, [-1.0, -0.0, 0.0, 2.0]),
        (UnaryOp::Exp2, [0.353_553_38, 0.840_896_4, 1.0, 4.0]),
        (UnaryOp::Sin, [-0.997_495, -0.247_404, 0.0, 0.909_297_4]),
        (UnaryOp::Cos, [0.070_737_2, 0.968_912_4, 1.0, -0.416_146_84]),
        (UnaryOp::Erf, [-0.966_105_1, -0.276_326_4, 0.0, 0.995_322_3]),
    ];
    for (op, expected) in cases {
        let mut b = Builder::new("t.math", 1);
        let x = b.input("x", &[4], DType::F32);
        let y = b.output("y", &[4], DType::F32);
        let t = b.tile(&[4], DType::F32, MemLevel::Ub);
        let r = b.tile(&[4], DType::F32, MemLevel::Ub);
        b.push(load(t, x, vec![c(0)], 0.0));
        b.push(Inst::Unary { dst: r, op, src: t });
        b.push(store(y, vec![c(0)], r));
        let got = out(&b.finish(), &[&f32s(&[4], &xs)]);
        for (g, e) in got.iter().zip(expected) {
            assert!(
                (g - e).abs() <= 3e-7,
                "{op:?}: got {got:?}, expected {expected:?}"
            );
        }
    }
    // log2 and pow of a tile by a scalar, both ways round.
    let mut b = Builder::new("t.pow", 1);
    let x = b.input("x", &[3], DType::F32);
    let y = b.output("y", &[3], DType::F32);
    let t = b.tile(&[3], DType::F32, MemLevel::Ub);
    let (p, q, l, s) = (
        b.tile(&[3], DType::F32, MemLevel::Ub),
        b.tile(&[3], DType::F32, MemLevel::Ub),
        b.tile(&[3], DType::F32, MemLevel::Ub),
        b.tile(&[3], DType::F32, MemLevel::Ub),
    );
    b.push(load(t, x, vec![c(0)], 0.0));
    b.push(binary(p, BinaryOp::Pow, tile(t), scalar(2.0)));
    b.push(binary(q, BinaryOp::Pow, scalar(2.0), tile(t)));
    b.push(Inst::Unary {
        dst: l,
        op: UnaryOp::Log2,
        src: q,
    });
    b.push(binary(s, BinaryOp::Add, tile(p), tile(l)));
    b.push(store(y, vec![c(0)], s));
    // x^2 + log2(2^x) = x^2 + x.
    assert_eq!(
        out(&b.finish(), &[&f32s(&[3], &[0.5, 3.0, -2.0])]),
        vec![0.75, 12.0, 2.0]
    );
}

#[test]
fn rem_takes_the_sign_of_the_dividend_and_mod_that_of_the_divisor() {
    let a = [7.0f32, -7.0, 7.0, -7.0, 6.0, 5.0];
    let d = [3.0f32, 3.0, -3.0, -3.0, 3.0, 0.0];
    for dtype in [DType::I32, DType::F32] {
        for (op, expected) in [
            (BinaryOp::Rem, [1.0f32, -1.0, 1.0, -1.0, 0.0, f32::NAN]),
            (BinaryOp::Mod, [1.0f32, 2.0, -2.0, -1.0, 0.0, f32::NAN]),
        ] {
            let mut b = Builder::new("t.rem", 1);
            let x = b.input("x", &[6], dtype);
            let y = b.input("y", &[6], dtype);
            let z = b.output("z", &[6], dtype);
            let (tx, ty, tz) = (
                b.tile(&[6], dtype, MemLevel::Ub),
                b.tile(&[6], dtype, MemLevel::Ub),
                b.tile(&[6], dtype, MemLevel::Ub),
            );
            b.push(load(tx, x, vec![c(0)], 0.0));
            b.push(load(ty, y, vec![c(0)], 0.0));
            b.push(binary(tz, op, tile(tx), tile(ty)));
            b.push(store(z, vec![c(0)], tz));
            let inputs = [f32s(&[6], &a).cast(dtype), f32s(&[6], &d).cast(dtype)];
            let program = b.finish();
            if dtype == DType::I32 {
                // By zero: an error for integers, as the CPU's integer division.
                let err = execute(&program, &[&inputs[0], &inputs[1]]).unwrap_err();
                assert_eq!(
                    err.to_string(),
                    format!(
                        "op `t.rem`: inst 2 (binary of i32): 5 {} 0: division by zero",
                        op.name()
                    )
                );
                let nonzero = [
                    f32s(&[6], &a).cast(dtype),
                    f32s(&[6], &[3.0, 3.0, -3.0, -3.0, 3.0, 1.0]).cast(dtype),
                ];
                let got = out(&program, &[&nonzero[0], &nonzero[1]]);
                assert_eq!(got[..5], expected[..5], "{op:?} on {dtype}");
            } else {
                let got = out(&program, &[&inputs[0], &inputs[1]]);
                assert_eq!(got[..5], expected[..5], "{op:?} on {dtype}");
                // By zero: NaN for floats.
                assert!(got[5].is_nan(), "{op:?} on {dtype}: {}", got[5]);
            }
        }
    }
}

#[test]
fn inputs_that_do_not_match_the_globals_are_named() {
    let mut b = Builder::new("t.inputs", 1);
    let x = b.input("x", &[4], DType::F16);
    let y = b.output("y", &[4], DType::F16);
    let t = b.tile(&[4], DType::F16, MemLevel::Ub);
    b.push(load(t, x, vec![c(0)], 0.0));
    b.push(store(y, vec![c(0)], t));
    let program = b.finish();
    let wrong_dtype = Tensor::zeros([4], DType::F32);
    let err = execute(&program, &[&wrong_dtype]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "op `t.inputs`: input `x`: the program expects dtype f16, got f32"
    );
    let wrong_shape = Tensor::zeros([5], DType::F16);
    let err = execute(&program, &[&wrong_shape]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "op `t.inputs`: input `x`: the program expects shape [4], got [5]"
    );
    let err = execute(&program, &[]).unwrap_err();
    assert!(matches!(
        err,
        SimError::InputCount {
            expected: 1,
            actual: 0,
            ..
        }
    ));
}

#[test]
fn a_program_reading_an_undefined_tile_never_reaches_the_simulator() {
    let mut b = Builder::new("t.undefined", 1);
    let y = b.output("y", &[4], DType::F32);
    let t = b.tile(&[4], DType::F32, MemLevel::Ub);
    b.push(store(y, vec![c(0)], t));
    // The simulator takes a ValidProgram, and validation names the instruction.
    let err = b.finish_unchecked().validate().unwrap_err();
    assert_eq!(
        err.to_string(),
        "op `t.undefined`: inst 0 (store): %0 is used before it is defined"
    );
}

#[test]
fn relu_propagates_nan() {
    let mut b = Builder::new("t.relu_nan", 1);
    let x = b.input("x", &[3], DType::F32);
    let y = b.output("y", &[3], DType::F32);
    let t = b.tile(&[3], DType::F32, MemLevel::Ub);
    let r = b.tile(&[3], DType::F32, MemLevel::Ub);
    b.push(load(t, x, vec![c(0)], 0.0));
    b.push(Inst::Unary {
        dst: r,
        op: UnaryOp::Relu,
        src: t,
    });
    b.push(store(y, vec![c(0)], r));
    let y = out(&b.finish(), &[&f32s(&[3], &[f32::NAN, -1.0, 2.0])]);
    assert!(y[0].is_nan(), "{y:?}");
    assert_eq!(&y[1..], &[0.0, 2.0]);
}

/// Runs the kernel text `body` (after a header declaring `x: {dtype}[4]` input and
/// `y: {out}[4]` output) on `x`.
fn run_text(dtype: &str, out: &str, body: &str, x: Tensor) -> Result<Vec<i64>, SimError> {
    let text = format!(
        "kernel t.ints grid 1\nglobal @0 x: {dtype}[4] input\nglobal @1 y: {out}[4] output\n\
         %0: {dtype}[4]@ub = load @0[0] pad 0.0\n{body}"
    );
    let program = pto_op::kernel::text::parse(&text).expect("a valid text");
    let outputs = execute(&program, &[&x])?;
    Ok(outputs[0]
        .cast(DType::I64)
        .to_vec::<i64>()
        .expect("i64 elements"))
}

fn ints(values: [i64; 4], dtype: DType) -> Tensor {
    Tensor::from_vec([4], values.to_vec())
        .expect("test data")
        .cast(dtype)
}

#[test]
fn integer_tiles_are_exact_past_2_pow_53() {
    // y = (x + 1) + iota(2^53 + 1): every element past 2^53, where an f64 rounds.
    let p53 = 1i64 << 53;
    let x = ints([p53 + 1, 1 << 62, -(1 << 62) - 1, 5], DType::I64);
    let y = run_text(
        "i64",
        "i64",
        "%1: i64[4]@ub = binary add %0, 1.0\n\
         %2: i64[4]@ub = iota axis 0 start 9007199254740993\n\
         %3: i64[4]@ub = binary add %1, %2\n\
         %4: i64[4]@ub = binary sub %3, %0\n\
         %5: i64[4]@ub = binary min %4, %3\n\
         store @1[0], %3\n",
        x,
    )
    .expect("runs");
    assert_eq!(
        y,
        vec![
            (p53 + 2) + (p53 + 1),
            ((1 << 62) + 1) + (p53 + 2),
            (-(1 << 62)) + (p53 + 3),
            6 + (p53 + 4)
        ]
    );
}

#[test]
fn integer_overflow_and_division_by_zero_are_errors_naming_the_instruction() {
    let i32s = |v: [i64; 4]| ints(v, DType::I32);
    let min32 = i64::from(i32::MIN);
    let error = |dtype: &str, body: &str, x: Tensor| {
        run_text(dtype, dtype, body, x)
            .expect_err("overflows")
            .to_string()
    };
    assert_eq!(
        error(
            "i32",
            "%1: i32[4]@ub = unary neg %0\nstore @1[0], %1\n",
            i32s([1, min32, 2, 3])
        ),
        "op `t.ints`: inst 1 (unary of i32): neg -2147483648 = 2147483648 overflows i32"
    );
    assert_eq!(
        error(
            "i64",
            "%1: i64[4]@ub = unary abs %0\nstore @1[0], %1\n",
            ints([1, i64::MIN, 2, 3], DType::I64)
        ),
        "op `t.ints`: inst 1 (unary of i64): abs -9223372036854775808 = 9223372036854775808 \
         overflows i64"
    );
    assert_eq!(
        error(
            "i32",
            "%1: i32[4]@ub = unary square %0\nstore @1[0], %1\n",
            i32s([46_341, 0, 0, 0])
        ),
        "op `t.ints`: inst 1 (unary of i32): square 46341 = 2147488281 overflows i32"
    );
    assert_eq!(
        error(
            "i32",
            "%1: i32[1]@ub = reduce sum %0 axis 0\n%2: i32[4]@ub = binary add %0, %1\n\
             store @1[0], %2\n",
            i32s([1 << 30, 1 << 30, 0, 0])
        ),
        "op `t.ints`: inst 1 (reduce of i32): a sum along axis 0 = 2147483648 overflows i32"
    );
    assert_eq!(
        error(
            "i32",
            "%1: i32[4]@ub = iota axis 0 start 2147483646\nstore @1[0], %1\n",
            i32s([0; 4])
        ),
        "op `t.ints`: inst 1 (iota of i32): 2147483646 + 2 = 2147483648 overflows i32"
    );
    assert_eq!(
        error(
            "i32",
            "%1: i32[4]@ub = binary div 7.0, %0\nstore @1[0], %1\n",
            i32s([1, 2, 0, 3])
        ),
        "op `t.ints`: inst 1 (binary of i32): 7 / 0: division by zero"
    );
    assert_eq!(
        error(
            "i32",
            "%1: i32[4]@ub = binary div %0, -1.0\nstore @1[0], %1\n",
            i32s([1, min32, 0, 3])
        ),
        "op `t.ints`: inst 1 (binary of i32): -2147483648 / -1 = 2147483648 overflows i32"
    );
    // Inside a loop, the body's instruction keeps its number in every iteration.
    assert_eq!(
        error(
            "i32",
            "loop i0 in 0..40 carry(%1: i32[4]@ub = %0) {\n\
             %2: i32[4]@ub = binary mul %1, 2.0\n\
             yield %2\n\
             } -> (%3: i32[4]@ub)\nstore @1[0], %3\n",
            i32s([1, 0, 0, 0])
        ),
        "op `t.ints`: inst 2 (binary of i32): 1073741824 * 2 = 2147483648 overflows i32"
    );
}

#[test]
fn u64_tiles_are_exact_past_i64_max() {
    let big = [(1u64 << 63) + 5, u64::MAX - 1, 1 << 53, 0];
    let x = Tensor::from_vec([4], big.to_vec()).expect("test data");
    let body = "%1: u64[4]@ub = binary add %0, 1.0\nstore @1[0], %1\n";
    let text = format!(
        "kernel t.u64 grid 1\nglobal @0 x: u64[4] input\nglobal @1 y: u64[4] output\n\
         %0: u64[4]@ub = load @0[0] pad 0.0\n{body}"
    );
    let program = pto_op::kernel::text::parse(&text).expect("a valid text");
    let y = execute(&program, &[&x]).expect("runs");
    assert_eq!(
        y[0].to_vec::<u64>().expect("u64"),
        big.iter().map(|v| v + 1).collect::<Vec<_>>()
    );
    let over = Tensor::from_vec([4], vec![u64::MAX, 0, 0, 0]).expect("test data");
    assert_eq!(
        execute(&program, &[&over]).unwrap_err().to_string(),
        "op `t.u64`: inst 1 (binary of u64): 18446744073709551615 + 1 = 18446744073709551616 \
         overflows u64"
    );
}

#[test]
fn integer_constants_saturate_and_casts_keep_the_low_bits_as_on_cpu() {
    // A pad of -inf is the lowest i32; a scalar past i32 saturates.
    let text = "kernel t.pad grid 1\nglobal @0 x: i32[3] input\nglobal @1 y: i32[4] output\n\
                %0: i32[4]@ub = load @0[0] pad -inf\n\
                %1: i32[4]@ub = binary max %0, -1e20\n\
                store @1[0], %1\n";
    let program = pto_op::kernel::text::parse(text).expect("valid");
    let x = Tensor::from_vec([3], vec![5i32, -6, 7]).expect("test data");
    let y = execute(&program, &[&x]).expect("runs");
    assert_eq!(y[0].to_vec::<i32>().expect("i32"), vec![5, -6, 7, i32::MIN]);
    // i64 -> i32 keeps the low bits, as Tensor::cast (the CPU reference of std.cast).
    let x = ints([(1 << 32) + 5, -1, (1 << 31) + 1, 1 << 53], DType::I64);
    let y = run_text(
        "i64",
        "i32",
        "%1: i32[4]@ub = cast %0\nstore @1[0], %1\n",
        x.clone(),
    )
    .expect("runs");
    let cpu = x
        .cast(DType::I32)
        .cast(DType::I64)
        .to_vec::<i64>()
        .expect("i64");
    assert_eq!(y, cpu);
    assert_eq!(y, vec![5, -1, i64::from(i32::MIN) + 1, 0]);
}

/// Found by the kernel-text fuzz (`tests/tests/fuzz_structured.rs`): a valid offset near
/// `i64::MAX` plus the tile's size overflowed in the masked window of a load or store.
#[test]
fn loads_and_stores_at_offsets_near_the_ends_of_i64_are_masked() {
    for offset in [i64::MAX, i64::MAX - 2, i64::MIN, i64::MIN + 3] {
        let text = format!(
            "kernel t.far grid 1\nglobal @0 x: f32[3] input\nglobal @1 y: f32[4] output\n\
             %0: f32[4]@ub = load @0[{offset}] pad 7.0\n\
             store @1[{offset}], %0\n\
             store @1[0], %0\n"
        );
        let program = pto_op::kernel::text::parse(&text).expect("a valid text");
        let x = f32s(&[3], &[1.0, 2.0, 3.0]);
        assert_eq!(out(&program, &[&x]), vec![7.0; 4], "offset {offset}");
    }
}
