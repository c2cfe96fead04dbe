//! The math functions (sin, cos, floor, ceil, erf, exp2, log2, pow, rem, mod): tracing,
//! text round trip, dtype rules and cost classes; the device's core count; `Idx: Copy`.

use crate::device::VectorCosts;
use crate::dtype::DType;
use crate::error::OpError;
use crate::shape::Shape;

use super::super::ir::{BinaryOp, Inst, Program, UnaryOp};
use super::super::text::parse;
use super::super::{Idx, Kernel, Tile, UNKNOWN_DEVICE_CORES};

fn message(result: Result<impl core::fmt::Debug, OpError>) -> String {
    match result {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.to_string(),
    }
}

/// Every new function once, on f32 tiles of `[4, 16]`.
fn every_function() -> Result<Program, OpError> {
    let mut k = Kernel::new("t.math");
    let x = k.input("x", Shape::from([4, 16]), DType::F32);
    let y = k.output("y", Shape::from([4, 16]), DType::F32);
    let t = k.load(&x, [0, 0], [4, 16])?;
    let unary = t.sin() + t.cos() + t.floor() + t.ceil() + t.erf() + t.exp2() + t.abs().log2();
    let binary = t.pow(2.0) + t.exp_base(10.0) + t.rem(0.75) + t.modulo(&t) + &t % 3.0;
    k.store(&y, [0, 0], &(unary + binary))?;
    Ok(k.finish()?.into_program())
}

fn all_insts(program: &Program) -> Vec<&Inst> {
    program.body.iter().collect()
}

#[test]
fn every_function_traces_prints_and_parses_back() -> Result<(), OpError> {
    let program = every_function()?;
    let text = program.to_string();
    for name in [
        "unary sin",
        "unary cos",
        "unary floor",
        "unary ceil",
        "unary erf",
        "unary exp2",
        "unary log2",
        "binary pow %0, 2.0",
        "binary pow 10.0, %0",
        "binary rem %0, 0.75",
        "binary mod %0, %0",
        "binary rem %0, 3.0",
    ] {
        assert!(text.contains(name), "`{name}` missing from\n{text}");
    }
    let parsed = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(parsed, program);
    assert_eq!(parsed.to_string(), text);
    // Every name parses back to its function.
    for op in UnaryOp::ALL {
        let line = format!(
            "kernel t grid 1\n%0: f32[4]@ub = full 1.0\n%1: f32[4]@ub = unary {} %0\n",
            op.name()
        );
        let Inst::Unary { op: parsed, .. } = parse(&line)
            .unwrap_or_else(|e| panic!("{}: {e}", op.name()))
            .body[1]
        else {
            panic!("not a unary: {line}")
        };
        assert_eq!(parsed, op);
    }
    for op in BinaryOp::ALL {
        let line = format!(
            "kernel t grid 1\n%0: f32[4]@ub = full 1.0\n%1: f32[4]@ub = binary {} %0, 2.0\n",
            op.name()
        );
        let Inst::Binary { op: parsed, .. } = parse(&line)
            .unwrap_or_else(|e| panic!("{}: {e}", op.name()))
            .body[1]
        else {
            panic!("not a binary: {line}")
        };
        assert_eq!(parsed, op);
    }
    Ok(())
}

#[test]
fn float_functions_reject_integers_and_rem_mod_take_them() {
    type Make = fn(&Tile) -> Tile;
    let float_only: [(&str, Make); 8] = [
        ("unary sin", Tile::sin),
        ("unary cos", Tile::cos),
        ("unary floor", Tile::floor),
        ("unary ceil", Tile::ceil),
        ("unary erf", Tile::erf),
        ("unary exp2", Tile::exp2),
        ("unary log2", Tile::log2),
        ("binary pow", |t| t.pow(t)),
    ];
    for (what, make) in float_only {
        let mut k = Kernel::new("t.int");
        let t = k.full([8], DType::I32, 3.0);
        let _ = make(&t);
        let name = what.split(' ').nth(1).unwrap_or(what);
        assert_eq!(
            message(k.finish()),
            format!(
                "op `t.int`: {what}: {name} needs a float dtype, got i32[8]@ub: \
                 cast with `.cast(DType::F32)` first"
            )
        );
    }
    let mut k = Kernel::new("t.int_rem");
    let y = k.output("y", Shape::from([8]), DType::I32);
    let t = k.full([8], DType::I32, -7.0);
    let r = t.rem(3) + t.modulo(&t) + &t % 2.0;
    k.store(&y, [0], &r).expect("rem and mod take integers");
    assert!(k.finish().is_ok());
    let mut k = Kernel::new("t.bool_rem");
    let b = k.full([8], DType::Bool, 1.0);
    let _ = b.rem(&b);
    assert_eq!(
        message(k.finish()),
        "op `t.bool_rem`: binary rem: rem is not defined on bool tiles"
    );
}

#[test]
fn cost_classes_of_the_math_functions() -> Result<(), OpError> {
    let costs = VectorCosts {
        simple: 1.0,
        transcendental: 10.0,
        reduce: 100.0,
    };
    let program = every_function()?;
    let mut seen = 0;
    for inst in all_insts(&program) {
        let expected = match inst {
            Inst::Unary { op, .. } => match op {
                UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Abs => 1.0,
                _ => 10.0,
            },
            Inst::Binary { op, .. } => match op {
                BinaryOp::Add => 1.0,
                _ => 10.0,
            },
            _ => continue,
        };
        assert_eq!(inst.cycles_per_repeat(&costs), expected, "{inst:?}");
        seen += 1;
    }
    assert_eq!(seen, 8 + 5 + 11);
    Ok(())
}

#[test]
fn a_kernel_sees_the_core_count_it_is_traced_for() -> Result<(), OpError> {
    let trace = |k: Kernel| -> Result<usize, OpError> {
        let mut k = k;
        let cores = k.core_count();
        k.grid(cores)?;
        Ok(k.finish()?.grid)
    };
    assert_eq!(trace(Kernel::new("t.cores"))?, UNKNOWN_DEVICE_CORES);
    assert_eq!(trace(Kernel::new("t.cores").with_core_count(24))?, 24);
    assert_eq!(Kernel::new("t.cores").with_core_count(0).core_count(), 1);
    Ok(())
}

#[test]
fn idx_is_copy_and_equal_expressions_are_one() {
    let pid = Idx::program_id();
    let a = pid * 8 + 1;
    let b = a; // a copy, `a` stays usable
    assert_eq!(a, b);
    assert_eq!(a, Idx::program_id() * 8 + 1);
    assert!(core::ptr::eq(a.index(), (pid * 8 + 1).index()));
    assert_ne!(a, pid * 8 + 2);
    assert_eq!((a % 4).eval(3, &[]), Ok(1));
}
