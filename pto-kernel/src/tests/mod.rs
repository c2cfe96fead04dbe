//! Tests of the tile language: kernels traced with the builder, their validation and their
//! text form.

mod builder;
mod cost;
mod generate;
mod hostile;
mod math;
mod text;
mod validate;

use crate::dtype::DType;
use crate::error::OpError;
use crate::shape::Shape;

use super::ValidProgram;
use super::{Kernel, Tile};

/// y = x * rsqrt(mean(x^2, last axis) + eps) * gamma, 8 rows per block program.
pub(super) fn rms_norm() -> Result<ValidProgram, OpError> {
    let mut k = Kernel::new("demo.rms_norm");
    let x = k.input("x", Shape::from([32, 64]), DType::F16);
    let gamma = k.input("gamma", Shape::from([64]), DType::F16);
    let y = k.output("y", Shape::from([32, 64]), DType::F16);
    let (rows, cols) = x.dims2()?;
    let tr = 8;
    k.grid(rows.div_ceil(tr))?;
    let r0 = k.program_id() * tr;
    let xt = k.load(&x, (r0, 0), [tr, cols])?.cast(DType::F32);
    let inv = (xt.square().mean(-1) + 1e-6).rsqrt();
    let g = k.load(&gamma, [0], [cols])?.cast(DType::F32);
    k.store(&y, (r0, 0), &(xt * inv * g).cast(y.dtype()))?;
    k.finish()
}

/// c = a @ b with a K-loop: the first block peeled, the rest accumulated in L0C.
pub(super) fn matmul_k_loop() -> Result<ValidProgram, OpError> {
    let mut k = Kernel::new("demo.matmul");
    let a = k.input("a", Shape::from([64, 128]), DType::F16);
    let b = k.input("b", Shape::from([128, 32]), DType::F16);
    let c = k.output("c", Shape::from([64, 32]), DType::F16);
    let (tm, tk) = (32, 32);
    k.grid(2)?;
    let m0 = k.program_id() * tm;
    let a0 = k.load_l1(&a, (m0, 0), [tm, tk])?;
    let b0 = k.load_l1(&b, [0, 0], [tk, 32])?;
    let first = k.matmul(&a0, &b0, None, false)?;
    let sum = k.fold(128 / tk - 1, &[first], |k, i, acc| {
        let k0 = (i + 1) * tk;
        let at = k.load_l1(&a, (m0, k0), [tm, tk])?;
        let bt = k.load_l1(&b, (k0, 0), [tk, 32])?;
        Ok(vec![k.matmul(&at, &bt, Some(&acc[0]), false)?])
    })?;
    k.store(&c, (m0, 0), &sum[0].to_ub(DType::F16))?;
    k.finish()
}

/// Causal attention, one 16-row query block per program: online softmax over 32-key
/// blocks with three carried tiles (running max, running sum, accumulator).
pub(super) fn causal_attention() -> Result<ValidProgram, OpError> {
    let mut k = Kernel::new("demo.flash_attention");
    let q = k.input("q", Shape::from([64, 32]), DType::F16);
    let keys = k.input("k", Shape::from([64, 32]), DType::F16);
    let v = k.input("v", Shape::from([64, 32]), DType::F16);
    let out = k.output("out", Shape::from([64, 32]), DType::F16);
    let (tq, tk, d) = (16, 32, 32);
    k.grid(64 / tq)?;
    let q0 = k.program_id() * tq;
    let qt = k.load_l1(&q, (q0, 0), [tq, d])?;
    let m = k.full([tq, 1], DType::F32, f64::NEG_INFINITY);
    let l = k.full([tq, 1], DType::F32, 0.0);
    let acc = k.full([tq, d], DType::F32, 0.0);
    let scale = 1.0 / (d as f64).sqrt();
    let carried = k.fold(64 / tk, &[m, l, acc], |k, i, c| {
        let (m, l, acc) = (&c[0], &c[1], &c[2]);
        let k0 = i * tk;
        let kt = k.load_l1(&keys, (k0, 0), [tk, d])?;
        let s = k.matmul(&qt, &kt, None, true)?.to_ub(DType::F32) * scale;
        let rows = k.iota([tq, tk], 0, q0, DType::I32);
        let cols = k.iota([tq, tk], -1, k0, DType::I32);
        let s = Tile::select(&cols.le(&rows), &s, f64::NEG_INFINITY);
        let m_new = m.max(s.max_axis(-1));
        let p = (&s - &m_new).exp();
        let alpha = (m - &m_new).exp();
        let l_new = l * &alpha + p.sum(-1);
        let vt = k.load_l1(&v, (k0, 0), [tk, d])?;
        let pv = k.matmul(&p.cast(DType::F16).to_l1(), &vt, None, false)?;
        Ok(vec![m_new, l_new, acc * &alpha + pv.to_ub(DType::F32)])
    })?;
    let o = (&carried[2] / &carried[1]).cast(DType::F16);
    k.store(&out, (q0, 0), &o)?;
    k.finish()
}
