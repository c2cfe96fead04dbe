//! Vector instructions: constants and ranges, element-wise unary and binary arithmetic,
//! compares, selects, casts and reductions along an axis.

use std::rc::Rc;

use ndarray::{ArrayD, ArrayViewD, Axis, IxDyn, Zip, aview0};
use pto_op::DType;
use pto_op::kernel::ir::{
    BinaryOp, CmpOp, Index, Inst, LogicOp, Operand, ReduceOp, TileId, UnaryOp,
};

use super::data::{Data, float_scalar, integer_scalar, is_integer, round_in_place};
use super::integer::{FirstError, in_range, integer_binary, symbol};
use super::machine::Machine;
use crate::sim::error::SimError;

/// An element-wise operand after lookup.
enum Arg<'a, T> {
    Tile(&'a ArrayD<T>),
    Scalar(T),
}

impl Machine<'_> {
    fn float_arg(&self, operand: &Operand, dtype: DType) -> Result<Arg<'_, f32>, SimError> {
        Ok(match operand {
            Operand::Tile(t) => Arg::Tile(self.floats(*t)?),
            Operand::Scalar(s) => Arg::Scalar(float_scalar(*s, dtype)),
        })
    }

    fn integer_arg(&self, operand: &Operand, dtype: DType) -> Result<Arg<'_, i128>, SimError> {
        Ok(match operand {
            Operand::Tile(t) => Arg::Tile(self.integers(*t)?),
            Operand::Scalar(s) => Arg::Scalar(integer_scalar(*s, dtype)),
        })
    }

    /// The dtype of element-wise operands: the tile operand's, or `fallback` when both are
    /// scalars.
    fn operand_dtype(&self, a: &Operand, b: &Operand, fallback: DType) -> DType {
        match (a, b) {
            (Operand::Tile(t), _) | (_, Operand::Tile(t)) => self.program.tile_type(*t).dtype,
            _ => fallback,
        }
    }

    /// `full`: every element `value`, converted to the tile's dtype.
    pub(super) fn run_full(&mut self, dst: TileId, value: f64) -> Result<(), SimError> {
        let dst_ty = self.program.tile_type(dst);
        let shape = IxDyn(&dst_ty.shape);
        if is_integer(dst_ty.dtype) {
            let v = integer_scalar(value, dst_ty.dtype);
            self.bind(dst, Rc::new(Data::I(ArrayD::from_elem(shape, v))));
        } else {
            let data = ArrayD::from_elem(shape, value as f32);
            self.define_floats(dst, data, dst_ty.dtype);
        }
        Ok(())
    }

    /// `iota`: `start` plus the element's index along `axis`.
    pub(super) fn run_iota(
        &mut self,
        inst: &Inst,
        dst: TileId,
        axis: usize,
        start: &Index,
    ) -> Result<(), SimError> {
        let dst_ty = self.program.tile_type(dst);
        let start = self.eval(start)?;
        let shape = IxDyn(&dst_ty.shape);
        if is_integer(dst_ty.dtype) {
            let failed = FirstError::default();
            let dtype = dst_ty.dtype;
            let data = ArrayD::from_shape_fn(shape, |i| {
                let offset = i[axis] as i128;
                let exact = Ok(i128::from(start) + offset);
                failed.take(in_range(exact, dtype, || format!("{start} + {offset}")))
            });
            self.define_integers(inst, dst, data, failed)?;
        } else {
            let data = ArrayD::from_shape_fn(shape, |i| start as f32 + i[axis] as f32);
            self.define_floats(dst, data, dst_ty.dtype);
        }
        Ok(())
    }

    /// A unary instruction: `op` of every element of `src`.
    pub(super) fn run_unary(
        &mut self,
        inst: &Inst,
        dst: TileId,
        op: UnaryOp,
        src: TileId,
    ) -> Result<(), SimError> {
        let dtype = self.program.tile_type(dst).dtype;
        match self.value(src) {
            Data::F(x) => {
                let data = unary(op, x);
                self.define_floats(dst, data, dtype);
            }
            Data::I(x) => {
                let failed = FirstError::default();
                let name = op.name();
                let data = x.mapv(|v| {
                    let exact = match op {
                        UnaryOp::Neg => v.checked_neg(),
                        UnaryOp::Abs => v.checked_abs(),
                        UnaryOp::Square => v.checked_mul(v),
                        UnaryOp::Relu => Some(v.max(0)),
                        _ => None,
                    }
                    .ok_or_else(|| format!("{name} {v} overflows i128"));
                    failed.take(in_range(exact, dtype, || format!("{name} {v}")))
                });
                self.define_integers(inst, dst, data, failed)?;
            }
        }
        Ok(())
    }

    /// A binary instruction: `lhs op rhs` element-wise, broadcast to `dst`'s shape.
    pub(super) fn run_binary(
        &mut self,
        inst: &Inst,
        dst: TileId,
        op: BinaryOp,
        lhs: &Operand,
        rhs: &Operand,
    ) -> Result<(), SimError> {
        let dst_ty = self.program.tile_type(dst);
        let shape = &dst_ty.shape;
        if is_integer(dst_ty.dtype) {
            let a = self.integer_arg(lhs, dst_ty.dtype)?;
            let b = self.integer_arg(rhs, dst_ty.dtype)?;
            let failed = FirstError::default();
            let data = zip2(shape, &a, &b, |x, y| {
                let exact = integer_binary(op, x, y);
                failed.take(in_range(exact, dst_ty.dtype, || {
                    format!("{x} {} {y}", symbol(op))
                }))
            });
            self.define_integers(inst, dst, data, failed)?;
        } else {
            let a = self.float_arg(lhs, dst_ty.dtype)?;
            let b = self.float_arg(rhs, dst_ty.dtype)?;
            let data = match op {
                BinaryOp::Add => zip2(shape, &a, &b, |x, y| x + y),
                BinaryOp::Sub => zip2(shape, &a, &b, |x, y| x - y),
                BinaryOp::Mul => zip2(shape, &a, &b, |x, y| x * y),
                BinaryOp::Div => zip2(shape, &a, &b, |x, y| x / y),
                BinaryOp::Max => zip2(shape, &a, &b, f32::max),
                BinaryOp::Min => zip2(shape, &a, &b, f32::min),
                BinaryOp::Pow => zip2(shape, &a, &b, f32::powf),
                BinaryOp::Rem => zip2(shape, &a, &b, |x, y| x % y),
                BinaryOp::Mod => zip2(shape, &a, &b, pto_op::ops::math::floor_mod),
            };
            self.define_floats(dst, data, dst_ty.dtype);
        }
        Ok(())
    }

    /// `compare`: the truth of `lhs op rhs` element-wise, as 0 or 1.
    pub(super) fn run_compare(
        &mut self,
        dst: TileId,
        op: CmpOp,
        lhs: &Operand,
        rhs: &Operand,
    ) -> Result<(), SimError> {
        let dst_ty = self.program.tile_type(dst);
        let shape = &dst_ty.shape;
        let truth = |t: bool| if t { 1.0 } else { 0.0 };
        let operands = self.operand_dtype(lhs, rhs, DType::F32);
        let data = if is_integer(operands) {
            let a = self.integer_arg(lhs, operands)?;
            let b = self.integer_arg(rhs, operands)?;
            compare(shape, &a, &b, op, truth)
        } else {
            let a = self.float_arg(lhs, operands)?;
            let b = self.float_arg(rhs, operands)?;
            compare(shape, &a, &b, op, truth)
        };
        self.define_floats(dst, data, dst_ty.dtype);
        Ok(())
    }

    /// `select`: `cond ? on_true : on_false` element-wise.
    pub(super) fn run_select(
        &mut self,
        dst: TileId,
        cond: TileId,
        on_true: &Operand,
        on_false: &Operand,
    ) -> Result<(), SimError> {
        let dst_ty = self.program.tile_type(dst);
        let cond = self.floats(cond)?;
        let data = if is_integer(dst_ty.dtype) {
            let t = self.integer_arg(on_true, dst_ty.dtype)?;
            let f = self.integer_arg(on_false, dst_ty.dtype)?;
            Data::I(select(&dst_ty.shape, cond, &t, &f))
        } else {
            let t = self.float_arg(on_true, dst_ty.dtype)?;
            let f = self.float_arg(on_false, dst_ty.dtype)?;
            let mut data = select(&dst_ty.shape, cond, &t, &f);
            round_in_place(&mut data, dst_ty.dtype);
            Data::F(data)
        };
        self.bind(dst, Rc::new(data));
        Ok(())
    }

    /// `cast`: `src` converted to `dst`'s dtype as [`Tensor::cast`](pto_op::Tensor::cast)
    /// converts.
    pub(super) fn run_cast(&mut self, dst: TileId, src: TileId) -> Result<(), SimError> {
        let to = self.program.tile_type(dst).dtype;
        let from = self.program.tile_type(src).dtype;
        let value = self.shared(src);
        let converted = if to == from {
            value
        } else {
            Rc::new(Data::of_tensor(&value.to_tensor(from).cast(to)))
        };
        self.bind(dst, converted);
        Ok(())
    }

    /// `logic`: `and` / `or` of two bool tiles, broadcasting.
    pub(super) fn run_logic(
        &mut self,
        dst: TileId,
        op: LogicOp,
        lhs: TileId,
        rhs: TileId,
    ) -> Result<(), SimError> {
        let dst_ty = self.program.tile_type(dst);
        let (a, b) = (self.floats(lhs)?, self.floats(rhs)?);
        let (a, b) = (Arg::Tile(a), Arg::Tile(b));
        let data = zip2(&dst_ty.shape, &a, &b, |x: f32, y: f32| {
            let (x, y) = (x != 0.0, y != 0.0);
            let truth = match op {
                LogicOp::And => x && y,
                LogicOp::Or => x || y,
            };
            if truth { 1.0 } else { 0.0 }
        });
        self.define_floats(dst, data, dst_ty.dtype);
        Ok(())
    }

    /// `not`: the bool tile negated.
    pub(super) fn run_not(&mut self, dst: TileId, src: TileId) -> Result<(), SimError> {
        let data = self.floats(src)?.mapv(|x| if x != 0.0 { 0.0 } else { 1.0 });
        self.define_floats(dst, data, self.program.tile_type(dst).dtype);
        Ok(())
    }

    /// `reshape`: the same elements in row-major order, in `dst`'s shape.
    pub(super) fn run_reshape(&mut self, dst: TileId, src: TileId) -> Result<(), SimError> {
        let shape = IxDyn(&self.program.tile_type(dst).shape);
        let reshaped = match self.value(src) {
            Data::F(a) => Data::F(reshaped(a, shape)),
            Data::I(a) => Data::I(reshaped(a, shape)),
        };
        self.bind(dst, Rc::new(reshaped));
        Ok(())
    }

    /// A reduction of `src` along `axis`, which `dst` keeps with size 1.
    pub(super) fn run_reduce(
        &mut self,
        inst: &Inst,
        dst: TileId,
        op: ReduceOp,
        src: TileId,
        axis: usize,
    ) -> Result<(), SimError> {
        let dtype = self.program.tile_type(dst).dtype;
        let ax = Axis(axis);
        match self.value(src) {
            Data::F(value) => {
                let reduced = match op {
                    ReduceOp::Sum => value.sum_axis(ax),
                    ReduceOp::Mean => value.sum_axis(ax) / value.len_of(ax).max(1) as f32,
                    ReduceOp::Max => value.fold_axis(ax, f32::NEG_INFINITY, |m, &x| m.max(x)),
                    ReduceOp::Min => value.fold_axis(ax, f32::INFINITY, |m, &x| m.min(x)),
                };
                self.define_floats(dst, reduced.insert_axis(ax), dtype);
            }
            Data::I(value) => {
                let failed = FirstError::default();
                let reduced = match op {
                    ReduceOp::Sum => value.fold_axis(ax, 0i128, |sum, &x| {
                        failed.take(
                            sum.checked_add(x)
                                .ok_or_else(|| format!("the sum {sum} + {x} overflows i128")),
                        )
                    }),
                    ReduceOp::Max => value.fold_axis(ax, i128::MIN, |m, &x| *m.max(&x)),
                    ReduceOp::Min => value.fold_axis(ax, i128::MAX, |m, &x| *m.min(&x)),
                    ReduceOp::Mean => {
                        failed.take(Err("mean of integers (a valid program has none)".to_owned()));
                        value.sum_axis(ax)
                    }
                };
                let reduced = reduced.mapv(|v| {
                    failed.take(in_range(Ok(v), dtype, || {
                        format!("a {} along axis {axis}", op.name())
                    }))
                });
                self.define_integers(inst, dst, reduced.insert_axis(ax), failed)?;
            }
        }
        Ok(())
    }
}

/// `a`'s elements in row-major order in `shape` (a valid program keeps their count).
fn reshaped<T: Copy>(a: &ArrayD<T>, shape: IxDyn) -> ArrayD<T> {
    let elements: Vec<T> = a.iter().copied().collect();
    ArrayD::from_shape_vec(shape, elements).expect("a reshape keeps the number of elements")
}

fn unary(op: UnaryOp, x: &ArrayD<f32>) -> ArrayD<f32> {
    match op {
        UnaryOp::Neg => x.mapv(|v| -v),
        UnaryOp::Abs => x.mapv(f32::abs),
        UnaryOp::Exp => x.mapv(f32::exp),
        UnaryOp::Ln => x.mapv(f32::ln),
        UnaryOp::Sqrt => x.mapv(f32::sqrt),
        UnaryOp::Rsqrt => x.mapv(|v| 1.0 / v.sqrt()),
        UnaryOp::Recip => x.mapv(|v| 1.0 / v),
        UnaryOp::Square => x.mapv(|v| v * v),
        UnaryOp::Relu => x.mapv(|v| if v < 0.0 { 0.0 } else { v }), // NaN stays NaN
        UnaryOp::Tanh => x.mapv(f32::tanh),
        UnaryOp::Sigmoid => x.mapv(|v| 1.0 / (1.0 + (-v).exp())),
        UnaryOp::Gelu => x.mapv(|v| {
            const SQRT_2_OVER_PI: f32 = 0.797_884_6;
            0.5 * v * (1.0 + (SQRT_2_OVER_PI * (v + 0.044_715 * v * v * v)).tanh())
        }),
        UnaryOp::Silu => x.mapv(|v| v / (1.0 + (-v).exp())),
        UnaryOp::Sin => x.mapv(f32::sin),
        UnaryOp::Cos => x.mapv(f32::cos),
        UnaryOp::Floor => x.mapv(f32::floor),
        UnaryOp::Ceil => x.mapv(f32::ceil),
        UnaryOp::Erf => x.mapv(|v| pto_op::ops::math::erf(f64::from(v)) as f32),
        UnaryOp::Exp2 => x.mapv(f32::exp2),
        UnaryOp::Log2 => x.mapv(f32::log2),
    }
}

/// `arg` as an array view (`scalar` is where a scalar operand's value lives).
fn base_view<'a, T>(arg: &'a Arg<'_, T>, scalar: &'a T) -> ArrayViewD<'a, T> {
    match arg {
        Arg::Tile(t) => t.view(),
        Arg::Scalar(_) => aview0(scalar).into_dyn(),
    }
}

/// `view` broadcast to `shape`, which validation guarantees it can be (the result's shape
/// is the broadcast of its operands').
fn broadcast_to<'a, T>(view: &'a ArrayViewD<'_, T>, shape: &[usize]) -> ArrayViewD<'a, T> {
    view.broadcast(IxDyn(shape))
        .expect("a valid program's operands broadcast to the result's shape")
}

/// `f` applied element-wise to `a` and `b` broadcast to `shape`.
fn zip2<T: Copy + Default, U>(
    shape: &[usize],
    a: &Arg<'_, T>,
    b: &Arg<'_, T>,
    f: impl Fn(T, T) -> U,
) -> ArrayD<U> {
    match (a, b) {
        (Arg::Tile(x), Arg::Scalar(s)) if x.shape() == shape => x.map(|&v| f(v, *s)),
        (Arg::Scalar(s), Arg::Tile(y)) if y.shape() == shape => y.map(|&v| f(*s, v)),
        _ => {
            let (sa, sb) = (scalar_of(a), scalar_of(b));
            let (base_a, base_b) = (base_view(a, &sa), base_view(b, &sb));
            let x = broadcast_to(&base_a, shape);
            let y = broadcast_to(&base_b, shape);
            Zip::from(&x).and(&y).map_collect(|&p, &q| f(p, q))
        }
    }
}

/// The truth of `op` element-wise, as 0 or 1.
fn compare<T: Copy + Default + PartialOrd>(
    shape: &[usize],
    a: &Arg<'_, T>,
    b: &Arg<'_, T>,
    op: CmpOp,
    truth: impl Fn(bool) -> f32,
) -> ArrayD<f32> {
    match op {
        CmpOp::Eq => zip2(shape, a, b, |x, y| truth(x == y)),
        CmpOp::Ne => zip2(shape, a, b, |x, y| truth(x != y)),
        CmpOp::Lt => zip2(shape, a, b, |x, y| truth(x < y)),
        CmpOp::Le => zip2(shape, a, b, |x, y| truth(x <= y)),
        CmpOp::Gt => zip2(shape, a, b, |x, y| truth(x > y)),
        CmpOp::Ge => zip2(shape, a, b, |x, y| truth(x >= y)),
    }
}

fn scalar_of<T: Copy + Default>(arg: &Arg<'_, T>) -> T {
    match arg {
        Arg::Tile(_) => T::default(),
        Arg::Scalar(s) => *s,
    }
}

/// `cond ? on_true : on_false` element-wise, all broadcast to `shape`.
fn select<T: Copy + Default>(
    shape: &[usize],
    cond: &ArrayD<f32>,
    on_true: &Arg<'_, T>,
    on_false: &Arg<'_, T>,
) -> ArrayD<T> {
    let (st, sf) = (scalar_of(on_true), scalar_of(on_false));
    let (base_t, base_f) = (base_view(on_true, &st), base_view(on_false, &sf));
    let cond = cond.view();
    let c = broadcast_to(&cond, shape);
    let t = broadcast_to(&base_t, shape);
    let f = broadcast_to(&base_f, shape);
    Zip::from(&c)
        .and(&t)
        .and(&f)
        .map_collect(|&c, &t, &f| if c != 0.0 { t } else { f })
}
