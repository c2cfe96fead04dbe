//! Builder errors: what an author sees when a kernel breaks a rule.

use crate::dtype::DType;
use crate::error::OpError;
use crate::shape::Shape;

use super::super::ir::{Inst, MemLevel};
use super::super::{Kernel, Tile};
use super::{causal_attention, matmul_k_loop, rms_norm};

fn message(result: Result<impl core::fmt::Debug, OpError>) -> String {
    match result {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_sample_kernels_trace() -> Result<(), OpError> {
    assert_eq!(rms_norm()?.body.len(), 12);
    let matmul = matmul_k_loop()?;
    assert_eq!((matmul.grid, matmul.vars), (2, 1));
    let attention = causal_attention()?;
    let Some(Inst::Loop { init, body, .. }) = attention
        .body
        .iter()
        .find(|i| matches!(i, Inst::Loop { .. }))
    else {
        panic!("no loop");
    };
    assert_eq!(init.len(), 3);
    assert!(body.iter().any(|i| matches!(i, Inst::Select { .. })));
    Ok(())
}

#[test]
fn shapes_that_do_not_broadcast_are_reported_at_finish() {
    let mut k = Kernel::new("t.bcast");
    let a = k.full([8, 64], DType::F32, 1.0);
    let b = k.full([8, 32], DType::F32, 1.0);
    let c = &a + &b;
    // The stand-in result keeps tracing going; later instructions are not reported.
    let _ = c.exp() * &b;
    assert_eq!(
        message(k.finish()),
        "op `t.bcast`: binary add: shapes f32[8, 64]@ub and f32[8, 32]@ub do not broadcast"
    );
}

#[test]
fn a_recorded_error_stops_the_next_result_method() {
    let mut k = Kernel::new("t.stop");
    let y = k.output("y", Shape::from([8]), DType::F32);
    let a = k.full([8], DType::I32, 1.0);
    let e = a.exp();
    assert_eq!(
        message(k.store(&y, [0], &e)),
        "op `t.stop`: unary exp: exp needs a float dtype, got i32[8]@ub: \
         cast with `.cast(DType::F32)` first"
    );
}

#[test]
fn mixed_dtypes_ask_for_a_cast() {
    let mut k = Kernel::new("t.dtype");
    let a = k.full([4, 4], DType::F32, 1.0);
    let b = k.full([4], DType::F16, 1.0);
    let _ = a.max(&b);
    assert_eq!(
        message(k.finish()),
        "op `t.dtype`: binary max: dtypes f32[4, 4]@ub and f16[4]@ub differ: \
         cast an operand with `.cast(..)` first"
    );
}

#[test]
fn stores_need_an_output_of_the_tiles_dtype_and_rank() {
    let mut k = Kernel::new("t.store");
    let x = k.input("x", Shape::from([8, 8]), DType::F16);
    let y = k.output("y", Shape::from([8, 8]), DType::F16);
    let t = k.full([8, 8], DType::F16, 0.0);
    assert_eq!(
        message(k.store(&x, [0, 0], &t)),
        "op `t.store`: store: global `x` is an input; stores write outputs only"
    );
    let wide = t.cast(DType::F32);
    assert_eq!(
        message(k.store(&y, [0, 0], &wide)),
        "op `t.store`: store: output `y` is f16, but the tile is f32[8, 8]@ub: \
         cast the tile to f16 first"
    );
    assert_eq!(
        message(k.store(&y, [0], &t)),
        "op `t.store`: store: output `y` has rank 2, but the store has 1 offsets and the \
         tile f16[8, 8]@ub (one offset per dim; the tile has the output's rank, or drops its \
         leading dims)"
    );
}

#[test]
fn matmul_checks_levels_shapes_and_the_fractal() {
    let mut k = Kernel::new("t.mm");
    let a = k.full([16, 32], DType::F16, 1.0);
    assert_eq!(
        message(k.matmul(&a, &a, None, false)),
        "op `t.mm`: matmul: a must be in l1 or l0a and b in l1 or l0b (load them with \
         load_l1, move them with to_l1, to_l0a, to_l0b or extract), got f16[16, 32]@ub and \
         f16[16, 32]@ub"
    );
    let a1 = a.to_l1();
    assert_eq!(
        message(k.matmul(&a1, &a1, None, false)),
        "op `t.mm`: matmul: shapes f16[16, 32]@l0a and f16[16, 32]@l0b do not multiply: \
         a is [m, k] and b is [k, n], but a has k = 32 and b has k = 16"
    );
    let c = k.matmul(&a1, &a1, None, true);
    assert_eq!(c.as_ref().map(Tile::shape).ok(), Some(&[16, 16][..]));
    let odd = k.full([8, 32], DType::F16, 1.0).to_l1();
    assert_eq!(
        message(k.matmul(&odd, &a1, None, true)),
        "op `t.mm`: matmul: f16[8, 32]@l0a: dims [8, 32] must be multiples of 16 in l0a \
         (the cube works on 16x16 fractals)"
    );
    let wrong_acc = k.full([16, 16], DType::F32, 0.0);
    assert_eq!(
        message(k.matmul(&a1, &a1, Some(&wrong_acc), true)),
        "op `t.mm`: matmul: the accumulator must be f32[16, 16]@l0c, got f32[16, 16]@ub"
    );
}

#[test]
fn folds_check_what_they_yield() {
    let mut k = Kernel::new("t.fold");
    let a = k.full([4], DType::F32, 0.0);
    let b = k.full([4], DType::F16, 0.0);
    let err = k.fold(3, &[a, b], |_, _, c| Ok(vec![c[1].clone(), c[0].clone()]));
    assert_eq!(
        message(err),
        "op `t.fold`: fold: yield 0 is f16[4]@ub, but the carried tile is f32[4]@ub: \
         yield the same type"
    );
    let mut k2 = Kernel::new("t.fold");
    let a2 = k2.full([4], DType::F32, 0.0);
    let err = k2.fold(3, &[a2], |_, _, c| Ok(vec![c[0].clone(), c[0].clone()]));
    assert_eq!(
        message(err),
        "op `t.fold`: fold: the body yields 2 tile(s) for 1 carried"
    );
    // A kernel that goes on after a failed fold still fails, with the first error.
    assert_eq!(
        message(k.finish()),
        "op `t.fold`: fold: yield 0 is f16[4]@ub, but the carried tile is f32[4]@ub: \
         yield the same type"
    );
}

#[test]
fn tiles_and_loop_variables_do_not_escape_their_fold() {
    let mut k = Kernel::new("t.scope");
    let y = k.output("y", Shape::from([4]), DType::F32);
    let a = k.full([4], DType::F32, 0.0);
    let mut leaked = None;
    let mut var = None;
    let _ = k.fold(2, std::slice::from_ref(&a), |_, i, c| {
        leaked = Some(c[0].exp());
        var = Some(i);
        Ok(vec![c[0].clone()])
    });
    let (Some(leaked), Some(var)) = (leaked, var) else {
        panic!("the body did not run");
    };
    assert_eq!(
        message(k.store(&y, [0], &leaked)),
        "op `t.scope`: store: %2 was defined in a fold body that has ended: use the fold's results"
    );
    assert_eq!(
        message(k.store(&y, [var], &a)),
        "op `t.scope`: store: loop variable i0 is used outside its loop"
    );
    let _ = &leaked + &a;
    assert!(message(k.finish()).starts_with("op `t.scope`: binary add: %2 was defined"));

    let mut k = Kernel::new("t.scope");
    let a = k.full([4], DType::F32, 0.0);
    let err = k.fold(2, std::slice::from_ref(&a), |k, _, c| {
        let inner = k.fold(2, &[], |_, _, _| Ok(vec![]))?;
        assert!(inner.is_empty());
        let mut hidden = None;
        k.fold(1, &[], |_, _, _| {
            hidden = Some(c[0].exp());
            Ok(vec![])
        })?;
        Ok(hidden.into_iter().collect())
    });
    assert_eq!(
        message(err),
        "op `t.scope`: fold: a yield is not visible: %2 was defined in a fold body that has \
         ended: use the fold's results"
    );
}

#[test]
fn nested_folds_trace_into_nested_loops() -> Result<(), OpError> {
    let mut k = Kernel::new("t.nest");
    let x = k.input("x", Shape::from([64, 64]), DType::F32);
    let y = k.output("y", Shape::from([64, 1]), DType::F32);
    let rows = k.fold(4, &[], |k, r, _| {
        let zero = k.full([16, 1], DType::F32, 0.0);
        let total = k.fold(4, &[zero], |k, c, acc| {
            let t = k.load(&x, (r * 16, c * 16), [16, 16])?;
            Ok(vec![&acc[0] + t.sum(-1)])
        })?;
        k.store(&y, (r * 16, 0), &total[0])?;
        Ok(vec![])
    })?;
    assert!(rows.is_empty());
    let program = k.finish()?;
    let Inst::Loop { body, var, .. } = &program.body[0] else {
        panic!("not a loop");
    };
    assert_eq!(var.index(), 0);
    assert!(matches!(&body[1], Inst::Loop { var, .. } if var.index() == 1));
    assert_eq!(program.vars, 2);
    Ok(())
}

#[test]
fn reductions_take_negative_axes_and_keep_dims() {
    let mut k = Kernel::new("t.reduce");
    let a = k.full([2, 3, 4], DType::F32, 1.0);
    assert_eq!(a.sum(-1).shape(), &[2, 3, 1]);
    assert_eq!(a.max_axis(0).shape(), &[1, 3, 4]);
    assert_eq!(a.min_axis(-2).shape(), &[2, 1, 4]);
    let _ = a.mean(3);
    assert_eq!(
        message(k.finish()),
        "op `t.reduce`: reduce mean: axis 3 is out of range for rank 3"
    );
}

#[test]
fn moves_between_levels() {
    let mut k = Kernel::new("t.move");
    let a = k.full([16, 16], DType::F16, 1.0).to_l1();
    assert_eq!(a.level(), MemLevel::L1);
    let _ = a.to_ub(DType::F32);
    assert_eq!(
        message(k.finish()),
        "op `t.move`: move to ub: cannot move f16[16, 16]@l1 to ub: moves go l1 -> l0a, \
         l1 -> l0b, ub -> l1, l0c -> ub and l0c -> l1"
    );
}

#[test]
fn tracing_hundreds_of_instructions_is_fast() -> Result<(), OpError> {
    // Not a timing assert: a guard against quadratic work, which would make this take
    // seconds instead of milliseconds.
    let mut k = Kernel::new("t.long");
    let mut t = k.full([8, 64], DType::F32, 1.0);
    let total = k.fold(8, &[t.clone()], |_, _, c| {
        let mut x = c[0].clone();
        for _ in 0..5000 {
            x = (&x * 0.5 + 1.0).relu();
        }
        Ok(vec![x])
    })?;
    t = &total[0] + &t;
    assert_eq!(t.shape(), &[8, 64]);
    let program = k.finish()?;
    // init, param, the body, result, the final add.
    assert_eq!(program.tiles.len(), 1 + 1 + 15000 + 1 + 1);
    Ok(())
}

#[test]
fn a_tile_may_drop_the_leading_dims_of_its_global() {
    let mut k = Kernel::new("t.batch");
    let x = k.input("x", Shape::from([3, 40, 64]), DType::F32);
    let y = k.output("y", Shape::from([3, 40, 64]), DType::F32);
    // One matrix of the batch, as a rank-2 tile; offsets still name every dim.
    let t = k
        .load(&x, (2, 16, 0), [16, 64])
        .expect("a rank-2 tile of a rank-3 global");
    assert_eq!(t.shape(), &[16, 64]);
    k.store(&y, (2, 16, 0), &t).expect("stored into one matrix");
    assert!(k.finish().is_ok());

    let mut k = Kernel::new("t.batch");
    let x = k.input("x", Shape::from([3, 40, 64]), DType::F32);
    assert_eq!(
        message(k.load(&x, (0, 0), [16, 64])),
        "op `t.batch`: load: global `x` has rank 3, but the load has 2 offsets and a rank 2 \
         tile (one offset per dim; the tile has the global's rank, or drops its leading dims)"
    );
    let mut k = Kernel::new("t.batch");
    let x = k.input("x", Shape::from([40, 64]), DType::F32);
    assert_eq!(
        message(k.load(&x, (0, 0), [1, 16, 64])),
        "op `t.batch`: load: global `x` has rank 2, but the load has 2 offsets and a rank 3 \
         tile (one offset per dim; the tile has the global's rank, or drops its leading dims)"
    );
    let mut k = Kernel::new("t.batch");
    let x = k.input("x", Shape::from([40, 64]), DType::F32);
    let y = k.output("y", Shape::from([40, 64]), DType::F32);
    let s = k.full([] as [usize; 0], DType::F32, 1.0);
    assert_eq!(
        message(k.store(&y, (0, 0), &s)),
        "op `t.batch`: store: output `y` has rank 2, but the store has 2 offsets and the tile \
         f32[]@ub (one offset per dim; the tile has the output's rank, or drops its leading dims)"
    );
    let _ = x;
}
