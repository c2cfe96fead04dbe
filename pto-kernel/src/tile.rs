//! `Tile`: a typed value of a kernel being traced, and the vector-unit instructions on it.

use core::ops::{Add, BitAnd, BitOr, Div, Mul, Neg, Not, Rem, Sub};
use std::cell::RefCell;
use std::rc::Rc;

use crate::dtype::DType;

use super::ir::{
    ArgOp, BinaryOp, CmpOp, Inst, LogicOp, MemLevel, Operand, ReduceOp, TileId, TileType, UnaryOp,
};
use super::trace::{State, normalize_axis};
use super::validate::typing::{self, Arg};

/// A tile of a kernel being traced: an SSA value with a shape, a dtype and a memory level.
/// Cloning is cheap (two reference counts); every operation records an instruction.
///
/// Element-wise arithmetic broadcasts like numpy and needs operands of one dtype (cast
/// first). An operation that breaks a rule cannot return an error from an operator, so
/// the first such error is recorded and returned by [`super::Kernel::finish`] and by the
/// next `Result`-returning `Kernel` method; its result is a stand-in tile.
///
/// ```
/// use pto_kernel::{Kernel, Tile};
/// use pto_kernel::DType;
///
/// let mut k = Kernel::new("doc.tile");
/// let x = k.full([8, 64], DType::F32, 2.0);
/// let inv = (x.square().mean(-1) + 1e-6).rsqrt();
/// assert_eq!(inv.shape(), &[8, 1]);
/// let y = &x * &inv;
/// assert_eq!(y.to_string(), "%5: f32[8, 64]@ub");
/// let masked = Tile::select(&y.gt(0.0), &y, f64::NEG_INFINITY);
/// assert_eq!(masked.dtype(), DType::F32);
///
/// let h = k.full([8, 32], DType::F16, 1.0);
/// let _ = &x + &h;
/// assert_eq!(
///     k.finish().unwrap_err().to_string(),
///     "op `doc.tile`: binary add: dtypes f32[8, 64]@ub and f16[8, 32]@ub differ: \
///      cast an operand with `.cast(..)` first"
/// );
/// ```
#[derive(Clone)]
pub struct Tile {
    id: TileId,
    ty: Rc<TileType>,
    state: Rc<RefCell<State>>,
}

impl core::fmt::Debug for Tile {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Tile({}: {})", self.id, self.ty)
    }
}

impl core::fmt::Display for Tile {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}: {}", self.id, self.ty)
    }
}

/// An operand of an element-wise operation: a tile or a scalar.
#[derive(Debug, Clone)]
pub enum TileOrScalar {
    /// A tile.
    Tile(Tile),
    /// A scalar, converted to the other operand's dtype.
    Scalar(f64),
}

/// What element-wise operations accept as an operand: tiles and numbers.
pub trait IntoOperand {
    /// The operand.
    fn into_operand(self) -> TileOrScalar;
}

impl IntoOperand for Tile {
    fn into_operand(self) -> TileOrScalar {
        TileOrScalar::Tile(self)
    }
}

impl IntoOperand for &Tile {
    fn into_operand(self) -> TileOrScalar {
        TileOrScalar::Tile(self.clone())
    }
}

impl IntoOperand for f64 {
    fn into_operand(self) -> TileOrScalar {
        TileOrScalar::Scalar(self)
    }
}

impl IntoOperand for f32 {
    fn into_operand(self) -> TileOrScalar {
        TileOrScalar::Scalar(self.into())
    }
}

impl IntoOperand for i32 {
    fn into_operand(self) -> TileOrScalar {
        TileOrScalar::Scalar(self.into())
    }
}

/// The scalar types arithmetic operators accept beside a tile.
pub trait IntoScalar: Copy {
    /// The value as an f64 (exact for f32).
    fn into_f64(self) -> f64;
}

impl IntoScalar for f32 {
    fn into_f64(self) -> f64 {
        self.into()
    }
}

impl IntoScalar for f64 {
    fn into_f64(self) -> f64 {
        self
    }
}

impl TileOrScalar {
    fn arg(&self) -> Arg<'_> {
        match self {
            TileOrScalar::Tile(t) => Arg::Tile(&t.ty),
            TileOrScalar::Scalar(_) => Arg::Scalar,
        }
    }

    fn operand(&self) -> Operand {
        match self {
            TileOrScalar::Tile(t) => Operand::Tile(t.id),
            TileOrScalar::Scalar(v) => Operand::Scalar(*v),
        }
    }

    fn tile(&self) -> Option<&Tile> {
        match self {
            TileOrScalar::Tile(t) => Some(t),
            TileOrScalar::Scalar(_) => None,
        }
    }
}

impl Tile {
    pub(crate) fn new(id: TileId, ty: TileType, state: Rc<RefCell<State>>) -> Tile {
        Tile {
            id,
            ty: Rc::new(ty),
            state,
        }
    }

    pub(crate) fn belongs_to(&self, state: &Rc<RefCell<State>>) -> bool {
        Rc::ptr_eq(&self.state, state)
    }

    /// Its SSA id in the traced program.
    pub fn id(&self) -> TileId {
        self.id
    }

    /// Its type: shape, dtype and level.
    pub fn ty(&self) -> &TileType {
        &self.ty
    }

    /// Its dimensions.
    pub fn shape(&self) -> &[usize] {
        &self.ty.shape
    }

    /// Its element type.
    pub fn dtype(&self) -> DType {
        self.ty.dtype
    }

    /// The memory level it lives in.
    pub fn level(&self) -> MemLevel {
        self.ty.level
    }

    /// Records the instruction `make(dst)` with result type `ty`, after checking that the
    /// `operands` belong to this kernel and are visible; on an error, records it (prefixed
    /// with `what`) and returns a stand-in of type `fallback`.
    fn derive(
        &self,
        what: &dyn Fn() -> String,
        operands: &[&Tile],
        fallback: &TileType,
        ty: Result<TileType, String>,
        make: &dyn Fn(TileId) -> Inst,
    ) -> Tile {
        let mut state = self.state.borrow_mut();
        let checked = operands
            .iter()
            .try_for_each(|t| {
                if t.belongs_to(&self.state) {
                    state.check_visible(t.id)
                } else {
                    Err(format!("{} belongs to another kernel", t.id))
                }
            })
            .and(ty)
            .and_then(|ty| Ok(typing::check_tile(&ty).map(|()| ty)?));
        let (id, ty) = match checked {
            Ok(ty) => (state.define(ty.clone(), Some(make)), ty),
            Err(message) => {
                state.record(format!("{}: {message}", what()));
                (state.define(fallback.clone(), None), fallback.clone())
            }
        };
        Tile::new(id, ty, Rc::clone(&self.state))
    }

    fn unary(&self, op: UnaryOp) -> Tile {
        let src = self.id;
        self.derive(
            &|| format!("unary {}", op.name()),
            &[self],
            &self.ty,
            typing::unary(op, &self.ty).map_err(String::from),
            &|dst| Inst::Unary { dst, op, src },
        )
    }

    /// `op(lhs, rhs)` where either side may be a scalar; `anchor` is a tile operand.
    fn binary_of(anchor: &Tile, op: BinaryOp, lhs: TileOrScalar, rhs: TileOrScalar) -> Tile {
        let fallback = fallback_of(&lhs, &rhs, anchor);
        let tiles: Vec<&Tile> = [lhs.tile(), rhs.tile()].into_iter().flatten().collect();
        let (l, r) = (lhs.operand(), rhs.operand());
        anchor.derive(
            &|| format!("binary {}", op.name()),
            &tiles,
            &fallback,
            typing::binary(op, lhs.arg(), rhs.arg()).map_err(String::from),
            &|dst| Inst::Binary {
                dst,
                op,
                lhs: l,
                rhs: r,
            },
        )
    }

    fn binary(&self, op: BinaryOp, rhs: impl IntoOperand) -> Tile {
        Tile::binary_of(
            self,
            op,
            TileOrScalar::Tile(self.clone()),
            rhs.into_operand(),
        )
    }

    fn compare(&self, op: CmpOp, rhs: impl IntoOperand) -> Tile {
        let rhs = rhs.into_operand();
        let mut fallback = fallback_of(&TileOrScalar::Tile(self.clone()), &rhs, self);
        fallback.dtype = DType::Bool;
        let tiles: Vec<&Tile> = [Some(self), rhs.tile()].into_iter().flatten().collect();
        let (l, r) = (Operand::Tile(self.id), rhs.operand());
        self.derive(
            &|| format!("compare {}", op.name()),
            &tiles,
            &fallback,
            typing::compare(op, Arg::Tile(&self.ty), rhs.arg()).map_err(String::from),
            &|dst| Inst::Compare {
                dst,
                op,
                lhs: l,
                rhs: r,
            },
        )
    }

    fn reduce(&self, op: ReduceOp, axis: isize) -> Tile {
        let src = self.id;
        let checked = normalize_axis(axis, self.ty.shape.len())
            .and_then(|axis| Ok((axis, typing::reduce(op, &self.ty, axis)?)));
        let reduced_axis = checked.as_ref().map_or(0, |(axis, _)| *axis);
        self.derive(
            &|| format!("reduce {}", op.name()),
            &[self],
            &self.ty,
            checked.map(|(_, ty)| ty),
            &|dst| Inst::Reduce {
                dst,
                op,
                src,
                axis: reduced_axis,
            },
        )
    }

    fn move_to(&self, what: &str, level: MemLevel, dtype: DType) -> Tile {
        let src = self.id;
        let fallback = TileType {
            shape: self.ty.shape.clone(),
            dtype,
            level,
        };
        self.derive(
            &|| what.to_owned(),
            &[self],
            &fallback,
            typing::move_to(&self.ty, level, dtype).map_err(String::from),
            &|dst| Inst::Move { dst, src },
        )
    }

    /// `-x`.
    pub fn neg(&self) -> Tile {
        self.unary(UnaryOp::Neg)
    }

    /// `|x|`.
    pub fn abs(&self) -> Tile {
        self.unary(UnaryOp::Abs)
    }

    /// `e^x` (float).
    pub fn exp(&self) -> Tile {
        self.unary(UnaryOp::Exp)
    }

    /// `ln x` (float).
    pub fn ln(&self) -> Tile {
        self.unary(UnaryOp::Ln)
    }

    /// `sqrt x` (float).
    pub fn sqrt(&self) -> Tile {
        self.unary(UnaryOp::Sqrt)
    }

    /// `1 / sqrt x` (float).
    pub fn rsqrt(&self) -> Tile {
        self.unary(UnaryOp::Rsqrt)
    }

    /// `1 / x` (float).
    pub fn recip(&self) -> Tile {
        self.unary(UnaryOp::Recip)
    }

    /// `x * x`.
    pub fn square(&self) -> Tile {
        self.unary(UnaryOp::Square)
    }

    /// `max(x, 0)`.
    pub fn relu(&self) -> Tile {
        self.unary(UnaryOp::Relu)
    }

    /// `tanh x` (float).
    pub fn tanh(&self) -> Tile {
        self.unary(UnaryOp::Tanh)
    }

    /// `1 / (1 + e^-x)` (float).
    pub fn sigmoid(&self) -> Tile {
        self.unary(UnaryOp::Sigmoid)
    }

    /// GELU, tanh form (float).
    pub fn gelu(&self) -> Tile {
        self.unary(UnaryOp::Gelu)
    }

    /// `x * sigmoid(x)` (float).
    pub fn silu(&self) -> Tile {
        self.unary(UnaryOp::Silu)
    }

    /// `sin x`, radians (float).
    pub fn sin(&self) -> Tile {
        self.unary(UnaryOp::Sin)
    }

    /// `cos x`, radians (float).
    pub fn cos(&self) -> Tile {
        self.unary(UnaryOp::Cos)
    }

    /// The largest integer not above `x`, in the tile's float dtype (no cast needed).
    pub fn floor(&self) -> Tile {
        self.unary(UnaryOp::Floor)
    }

    /// The smallest integer not below `x`, in the tile's float dtype.
    pub fn ceil(&self) -> Tile {
        self.unary(UnaryOp::Ceil)
    }

    /// The error function `erf x` (float).
    pub fn erf(&self) -> Tile {
        self.unary(UnaryOp::Erf)
    }

    /// `2^x` (float).
    pub fn exp2(&self) -> Tile {
        self.unary(UnaryOp::Exp2)
    }

    /// `log2 x` (float).
    pub fn log2(&self) -> Tile {
        self.unary(UnaryOp::Log2)
    }

    /// `x ^ exponent`, a tile or a scalar, broadcasting (float). A negative base with a
    /// non-integer exponent gives NaN.
    pub fn pow(&self, exponent: impl IntoOperand) -> Tile {
        self.binary(BinaryOp::Pow, exponent)
    }

    /// `base ^ x`: a scalar raised to each element (float), e.g. RoPE's
    /// `theta ^ (-2i / d)`.
    pub fn exp_base(&self, base: impl IntoScalar) -> Tile {
        Tile::binary_of(
            self,
            BinaryOp::Pow,
            TileOrScalar::Scalar(base.into_f64()),
            TileOrScalar::Tile(self.clone()),
        )
    }

    /// The remainder of division truncated toward zero, with the sign of `x` (Rust's `%`,
    /// C's `fmod`, `torch.fmod`): `-7 rem 3 = -1`. Integers and floats; also the `%`
    /// operator.
    pub fn rem(&self, divisor: impl IntoOperand) -> Tile {
        self.binary(BinaryOp::Rem, divisor)
    }

    /// The remainder of floor division, with the sign of the divisor (Python's `%`,
    /// `numpy.mod`, `torch.remainder`): `-7 mod 3 = 2`, `7 mod -3 = -2`. Integers and
    /// floats.
    pub fn modulo(&self, divisor: impl IntoOperand) -> Tile {
        self.binary(BinaryOp::Mod, divisor)
    }

    /// The tile converted to `dtype` (in UB).
    pub fn cast(&self, dtype: DType) -> Tile {
        let src = self.id;
        let fallback = TileType {
            dtype,
            ..(*self.ty).clone()
        };
        self.derive(
            &|| "cast".to_owned(),
            &[self],
            &fallback,
            typing::cast(&self.ty, dtype).map_err(String::from),
            &|dst| Inst::Cast { dst, src },
        )
    }

    /// Element-wise maximum with a tile or a scalar, broadcasting.
    pub fn max(&self, other: impl IntoOperand) -> Tile {
        self.binary(BinaryOp::Max, other)
    }

    /// Element-wise minimum with a tile or a scalar, broadcasting.
    pub fn min(&self, other: impl IntoOperand) -> Tile {
        self.binary(BinaryOp::Min, other)
    }

    /// `self == other`, a bool tile.
    pub fn eq(&self, other: impl IntoOperand) -> Tile {
        self.compare(CmpOp::Eq, other)
    }

    /// `self != other`, a bool tile.
    pub fn ne(&self, other: impl IntoOperand) -> Tile {
        self.compare(CmpOp::Ne, other)
    }

    /// `self < other`, a bool tile.
    pub fn lt(&self, other: impl IntoOperand) -> Tile {
        self.compare(CmpOp::Lt, other)
    }

    /// `self <= other`, a bool tile.
    pub fn le(&self, other: impl IntoOperand) -> Tile {
        self.compare(CmpOp::Le, other)
    }

    /// `self > other`, a bool tile.
    pub fn gt(&self, other: impl IntoOperand) -> Tile {
        self.compare(CmpOp::Gt, other)
    }

    /// `self >= other`, a bool tile.
    pub fn ge(&self, other: impl IntoOperand) -> Tile {
        self.compare(CmpOp::Ge, other)
    }

    /// `cond ? on_true : on_false` element-wise, broadcasting; at least one of the values
    /// is a tile (it gives the dtype).
    pub fn select(cond: &Tile, on_true: impl IntoOperand, on_false: impl IntoOperand) -> Tile {
        let (on_true, on_false) = (on_true.into_operand(), on_false.into_operand());
        let mut fallback = fallback_of(&on_true, &on_false, cond);
        fallback.shape = typing::broadcast(&cond.ty.shape, &fallback.shape)
            .unwrap_or_else(|| cond.ty.shape.clone());
        let tiles: Vec<&Tile> = [Some(cond), on_true.tile(), on_false.tile()]
            .into_iter()
            .flatten()
            .collect();
        let (c, t, f) = (cond.id, on_true.operand(), on_false.operand());
        cond.derive(
            &|| "select".to_owned(),
            &tiles,
            &fallback,
            typing::select(&cond.ty, on_true.arg(), on_false.arg()).map_err(String::from),
            &|dst| Inst::Select {
                dst,
                cond: c,
                on_true: t,
                on_false: f,
            },
        )
    }

    /// The sum along `axis` (negative counts from the end), kept with size 1.
    pub fn sum(&self, axis: isize) -> Tile {
        self.reduce(ReduceOp::Sum, axis)
    }

    /// The maximum along `axis`, kept with size 1.
    pub fn max_axis(&self, axis: isize) -> Tile {
        self.reduce(ReduceOp::Max, axis)
    }

    /// The minimum along `axis`, kept with size 1.
    pub fn min_axis(&self, axis: isize) -> Tile {
        self.reduce(ReduceOp::Min, axis)
    }

    /// The mean along `axis` (float), kept with size 1.
    pub fn mean(&self, axis: isize) -> Tile {
        self.reduce(ReduceOp::Mean, axis)
    }

    fn arg_reduce(&self, op: ArgOp, axis: isize) -> Tile {
        let src = self.id;
        let checked = normalize_axis(axis, self.ty.shape.len())
            .and_then(|axis| Ok((axis, typing::arg_reduce(op, &self.ty, axis)?)));
        let reduced_axis = checked.as_ref().map_or(0, |(axis, _)| *axis);
        let fallback = TileType {
            dtype: DType::I32,
            ..(*self.ty).clone()
        };
        self.derive(
            &|| format!("argreduce {}", op.name()),
            &[self],
            &fallback,
            checked.map(|(_, ty)| ty),
            &|dst| Inst::ArgReduce {
                dst,
                op,
                src,
                axis: reduced_axis,
            },
        )
    }

    /// The index (i32) of the largest element along `axis` (negative counts from the
    /// end), kept with size 1; among equal elements the lowest index, a NaN counting as
    /// the largest (numpy's `argmax`).
    ///
    /// ```
    /// use pto_kernel::{DType, Kernel, Shape};
    /// let mut k = Kernel::new("doc.argmax");
    /// let x = k.input("x", Shape::from([8, 64]), DType::F16);
    /// let i = k.load(&x, [0, 0], [8, 64]).unwrap().argmax(-1);
    /// assert_eq!((i.shape(), i.dtype()), (&[8, 1][..], DType::I32));
    /// ```
    pub fn argmax(&self, axis: isize) -> Tile {
        self.arg_reduce(ArgOp::Max, axis)
    }

    /// The index (i32) of the smallest element along `axis`, kept with size 1; among
    /// equal elements the lowest index, a NaN counting as the smallest (numpy's `argmin`).
    pub fn argmin(&self, axis: isize) -> Tile {
        self.arg_reduce(ArgOp::Min, axis)
    }

    fn logic(&self, op: LogicOp, other: &Tile) -> Tile {
        let (lhs, rhs) = (self.id, other.id);
        let fallback = TileType {
            dtype: DType::Bool,
            level: MemLevel::Ub,
            ..(*self.ty).clone()
        };
        self.derive(
            &|| format!("logic {}", op.name()),
            &[self, other],
            &fallback,
            typing::logic(op, &self.ty, &other.ty).map_err(String::from),
            &|dst| Inst::Logic { dst, op, lhs, rhs },
        )
    }

    /// `self && other` element-wise on bool tiles, broadcasting (also `&`).
    pub fn logical_and(&self, other: &Tile) -> Tile {
        self.logic(LogicOp::And, other)
    }

    /// `self || other` element-wise on bool tiles, broadcasting (also `|`).
    pub fn logical_or(&self, other: &Tile) -> Tile {
        self.logic(LogicOp::Or, other)
    }

    /// `!self` element-wise on a bool tile (also `!`).
    pub fn logical_not(&self) -> Tile {
        let src = self.id;
        self.derive(
            &|| "not".to_owned(),
            &[self],
            &self.ty,
            typing::not(&self.ty).map_err(String::from),
            &|dst| Inst::Not { dst, src },
        )
    }

    /// The `k` largest elements of each row (the last axis), descending, and their
    /// indices in the row (i32): two tiles whose last dim is `k`. Equal elements come in
    /// their order in the row (the lower index first) and a NaN counts as the largest
    /// (torch's `topk(k, sorted=True)`). The Ascend C lowering sorts each row with the
    /// vector unit's sort instructions (see the tile-language docs, "Sort and top-k").
    ///
    /// ```
    /// use pto_kernel::{DType, Kernel, Shape};
    /// let mut k = Kernel::new("doc.topk");
    /// let x = k.input("x", Shape::from([8, 1024]), DType::F16);
    /// let (values, indices) = k.load(&x, [0, 0], [8, 1024]).unwrap().top_k(8);
    /// assert_eq!((values.shape(), values.dtype()), (&[8, 8][..], DType::F16));
    /// assert_eq!((indices.shape(), indices.dtype()), (&[8, 8][..], DType::I32));
    /// ```
    pub fn top_k(&self, k: usize) -> (Tile, Tile) {
        let src = self.id;
        let mut shape = self.ty.shape.clone();
        if let Some(last) = shape.last_mut() {
            *last = k.max(1);
        }
        let fallback = |dtype| TileType {
            shape: shape.clone(),
            dtype,
            level: MemLevel::Ub,
        };
        let mut state = self.state.borrow_mut();
        let checked = state
            .check_visible(self.id)
            .and_then(|()| Ok(typing::top_k(&self.ty, k)?))
            .and_then(|(values, indices)| {
                typing::check_tile(&values)?;
                typing::check_tile(&indices)?;
                Ok((values, indices))
            });
        let (value_ty, index_ty, traced) = match checked {
            Ok((values, indices)) => (values, indices, true),
            Err(message) => {
                state.record(format!("topk: {message}"));
                (fallback(self.ty.dtype), fallback(DType::I32), false)
            }
        };
        // One instruction defines both tiles.
        let values = state.define(value_ty.clone(), None);
        let indices = state.define(index_ty.clone(), None);
        if traced {
            state.emit(Inst::TopK {
                values,
                indices,
                src,
                k,
            });
        }
        drop(state);
        (
            Tile::new(values, value_ty, Rc::clone(&self.state)),
            Tile::new(indices, index_ty, Rc::clone(&self.state)),
        )
    }

    /// The tile with another shape of the same number of elements, in row-major order:
    /// `[n]` to `[n, 1]` (a column, to broadcast along rows), `[n]` to `[1, n]`, `[a, b]`
    /// to `[a * b]`. UB tiles.
    ///
    /// ```
    /// use pto_kernel::{DType, Kernel, Shape};
    /// let mut k = Kernel::new("doc.reshape");
    /// let s = k.input("scale", Shape::from([64]), DType::F32);
    /// let column = k.load(&s, [0], [64]).unwrap().reshape([64, 1]);
    /// assert_eq!(column.shape(), &[64, 1]);
    /// ```
    pub fn reshape(&self, shape: impl AsRef<[usize]>) -> Tile {
        let src = self.id;
        let shape = shape.as_ref();
        let fallback = TileType {
            shape: shape.to_vec(),
            ..(*self.ty).clone()
        };
        self.derive(
            &|| format!("reshape to {shape:?}"),
            &[self],
            &fallback,
            typing::reshape(&self.ty, shape).map_err(String::from),
            &|dst| Inst::Reshape { dst, src },
        )
    }

    /// Moves an L1 tile to L0A, as the cube's left operand. A tile moved once before a
    /// loop stays resident there: [`Kernel::matmul`](super::Kernel::matmul) takes it as is
    /// in every iteration instead of moving it again.
    pub fn to_l0a(&self) -> Tile {
        self.move_to("move to l0a", MemLevel::L0A, self.ty.dtype)
    }

    /// Moves an L1 tile to L0B, as the cube's right operand (see [`Tile::to_l0a`]).
    pub fn to_l0b(&self) -> Tile {
        self.move_to("move to l0b", MemLevel::L0B, self.ty.dtype)
    }

    /// Copies the sub-tile of `shape` at `offsets` of this L1 tile to `level` (L0A or L0B):
    /// one K-step of a tile staged in L1 for several, fed to the cube without another
    /// load. Offsets are multiples of 16 and the sub-tile lies within the tile.
    ///
    /// ```
    /// use pto_kernel::{Kernel, ir::{Inst, MemLevel}};
    /// use pto_kernel::{DType, Shape};
    ///
    /// let mut k = Kernel::new("doc.extract");
    /// let a = k.input("a", Shape::from([32, 256]), DType::F16);
    /// let staged = k.load_l1(&a, [0, 0], [32, 256]).unwrap(); // four K-steps of 64
    /// let step = staged.extract(MemLevel::L0A, &[0, 128], &[32, 64]);
    /// assert_eq!((step.shape(), step.level()), (&[32, 64][..], MemLevel::L0A));
    /// let program = k.finish().unwrap();
    /// assert!(matches!(&program.body[1], Inst::Extract { offsets, .. } if offsets == &[0, 128]));
    ///
    /// let mut k = Kernel::new("doc.extract");
    /// let a = k.input("a", Shape::from([32, 256]), DType::F16);
    /// let staged = k.load_l1(&a, [0, 0], [32, 256]).unwrap();
    /// staged.extract(MemLevel::L0A, &[0, 8], &[32, 64]); // not a multiple of 16
    /// assert!(k.finish().unwrap_err().to_string().contains("cannot extract"));
    /// ```
    pub fn extract(&self, level: MemLevel, offsets: &[usize], shape: &[usize]) -> Tile {
        let src = self.id;
        let ty = TileType {
            shape: shape.to_vec(),
            dtype: self.ty.dtype,
            level,
        };
        let offsets = offsets.to_vec();
        self.derive(
            &|| format!("extract to {level}"),
            &[self],
            &ty,
            typing::extract(&self.ty, &ty, &offsets).map_err(|e| e.to_string()),
            &|dst| Inst::Extract {
                dst,
                src,
                offsets: offsets.clone(),
            },
        )
    }

    /// Moves a UB tile (vector results, to feed the cube) or an L0C accumulator to L1.
    pub fn to_l1(&self) -> Tile {
        self.move_to("move to l1", MemLevel::L1, self.ty.dtype)
    }

    /// Moves an L0C accumulator to UB, converting it to `dtype` (a float dtype).
    pub fn to_ub(&self, dtype: DType) -> Tile {
        self.move_to("move to ub", MemLevel::Ub, dtype)
    }
}

/// The type to give the stand-in result of a failed element-wise operation: the first tile
/// operand's.
fn fallback_of(lhs: &TileOrScalar, rhs: &TileOrScalar, anchor: &Tile) -> TileType {
    let first = lhs.tile().or(rhs.tile()).unwrap_or(anchor);
    TileType {
        level: MemLevel::Ub,
        ..(*first.ty).clone()
    }
}

macro_rules! tile_operator {
    ($Trait:ident, $method:ident, $op:expr) => {
        impl $Trait<&Tile> for &Tile {
            type Output = Tile;
            fn $method(self, rhs: &Tile) -> Tile {
                self.binary($op, rhs)
            }
        }

        impl $Trait<Tile> for &Tile {
            type Output = Tile;
            fn $method(self, rhs: Tile) -> Tile {
                self.binary($op, rhs)
            }
        }

        impl $Trait<&Tile> for Tile {
            type Output = Tile;
            fn $method(self, rhs: &Tile) -> Tile {
                self.binary($op, rhs)
            }
        }

        impl $Trait<Tile> for Tile {
            type Output = Tile;
            fn $method(self, rhs: Tile) -> Tile {
                self.binary($op, rhs)
            }
        }

        // Generic over the scalar type, so that a bare literal (`x * 2.0`) selects this
        // impl at once and falls back to f64.
        impl<S: IntoScalar> $Trait<S> for &Tile {
            type Output = Tile;
            fn $method(self, rhs: S) -> Tile {
                self.binary($op, rhs.into_f64())
            }
        }

        impl<S: IntoScalar> $Trait<S> for Tile {
            type Output = Tile;
            fn $method(self, rhs: S) -> Tile {
                self.binary($op, rhs.into_f64())
            }
        }

        // Scalars on the left are f32 only: with one type a bare literal (`2.0 * x`) infers.
        tile_operator!(@scalar $Trait, $method, $op, f32);
    };
    (@scalar $Trait:ident, $method:ident, $op:expr, $($float:ty),*) => {
        $(
            impl $Trait<&Tile> for $float {
                type Output = Tile;
                fn $method(self, rhs: &Tile) -> Tile {
                    Tile::binary_of(rhs, $op, self.into_operand(), rhs.into_operand())
                }
            }

            impl $Trait<Tile> for $float {
                type Output = Tile;
                fn $method(self, rhs: Tile) -> Tile {
                    Tile::binary_of(&rhs, $op, self.into_operand(), rhs.clone().into_operand())
                }
            }
        )*
    };
}

tile_operator!(Add, add, BinaryOp::Add);
tile_operator!(Sub, sub, BinaryOp::Sub);
tile_operator!(Mul, mul, BinaryOp::Mul);
tile_operator!(Div, div, BinaryOp::Div);
tile_operator!(Rem, rem, BinaryOp::Rem);

impl Neg for &Tile {
    type Output = Tile;
    fn neg(self) -> Tile {
        self.unary(UnaryOp::Neg)
    }
}

impl Neg for Tile {
    type Output = Tile;
    fn neg(self) -> Tile {
        self.unary(UnaryOp::Neg)
    }
}

// Logic on bool tiles: `&`, `|` and `!`, for tiles and references.
macro_rules! logic_op {
    ($Trait:ident, $method:ident, $logic:ident) => {
        impl $Trait<&Tile> for &Tile {
            type Output = Tile;
            fn $method(self, rhs: &Tile) -> Tile {
                self.$logic(rhs)
            }
        }
        impl $Trait<Tile> for &Tile {
            type Output = Tile;
            fn $method(self, rhs: Tile) -> Tile {
                self.$logic(&rhs)
            }
        }
        impl $Trait<&Tile> for Tile {
            type Output = Tile;
            fn $method(self, rhs: &Tile) -> Tile {
                (&self).$logic(rhs)
            }
        }
        impl $Trait<Tile> for Tile {
            type Output = Tile;
            fn $method(self, rhs: Tile) -> Tile {
                (&self).$logic(&rhs)
            }
        }
    };
}

logic_op!(BitAnd, bitand, logical_and);
logic_op!(BitOr, bitor, logical_or);

impl Not for &Tile {
    type Output = Tile;
    fn not(self) -> Tile {
        self.logical_not()
    }
}

impl Not for Tile {
    type Output = Tile;
    fn not(self) -> Tile {
        self.logical_not()
    }
}
