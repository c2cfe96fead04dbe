//! Functional execution: runs a kernel program for every program id over real data.
//!
//! Tile values are `ArrayD<f32>` rounded to the tile's dtype after every instruction (f16
//! and bf16 round to nearest-even, integers truncate toward zero and saturate, bool is 0 or
//! 1), so an f16 kernel sees f16 precision as f16 hardware would. Integer values beyond
//! 2^24 lose precision in the f32 carrier. Every instruction is a whole-array ndarray
//! operation; index expressions are evaluated once per executed instruction.
//!
//! Math functions evaluate in f32 (`erf` in f64, [`pto_op::ops::math::erf`]) and then
//! round to the dtype. `rem` is truncated (`a - trunc(a / b) * b`, the sign of `a`, f32's
//! `%`), `mod` floored (`a - floor(a / b) * b`, the sign of `b`); an integer `rem` or `mod`
//! by 0 gives NaN in the carrier, which rounds to 0.

use std::rc::Rc;

use half::{bf16, f16};
use ndarray::linalg::general_mat_mul;
use ndarray::{Array2, ArrayD, ArrayViewD, Axis, Ix2, IxDyn, Slice, Zip, aview0};
use pto_op::kernel::ValidProgram;
use pto_op::kernel::ir::{
    BinaryOp, CmpOp, GlobalRole, Index, Inst, Operand, Program, ReduceOp, TileId, UnaryOp,
};
use pto_op::{DType, Tensor};

use super::SimError;

/// Runs `program` for every program id `0..grid` on `inputs` (the program's input globals,
/// in order) and returns its output globals, zero where no store wrote.
///
/// The program's validity (every tile declared, defined once before it is read, operand
/// types that fit their instructions and broadcast to their results) is what its type
/// guarantees: only the inputs are checked here. Offsets evaluate at run time; tiles
/// reaching past a tensor's edge are masked, not errors.
///
/// ```
/// use pto_backends::sim::exec::execute;
/// use pto_op::kernel::ir::*;
/// use pto_op::{DType, Tensor};
///
/// // y = x + 1 over a [3] tensor, in one tile of 4 (the fourth element is masked).
/// let global = |name: &str, role| GlobalDecl { name: name.into(), shape: vec![3], dtype: DType::F32, role };
/// let tile = TileType { shape: vec![4], dtype: DType::F32, level: MemLevel::Ub };
/// let program = Program {
///     op: "doc.add_one".into(),
///     grid: 1,
///     globals: vec![global("x", GlobalRole::Input), global("y", GlobalRole::Output)],
///     tiles: vec![tile.clone(), tile],
///     vars: 0,
///     body: vec![
///         Inst::Load { dst: TileId(0), src: GlobalId(0), offsets: vec![Index::Const(0)], pad: 0.0 },
///         Inst::Binary { dst: TileId(1), op: BinaryOp::Add, lhs: Operand::Tile(TileId(0)), rhs: Operand::Scalar(1.0) },
///         Inst::Store { dst: GlobalId(1), offsets: vec![Index::Const(0)], src: TileId(1) },
///     ],
/// };
/// let x = Tensor::from_vec([3], vec![1.0f32, 2.0, 3.0]).unwrap();
/// let y = execute(&program.validate().unwrap(), &[&x]).unwrap();
/// assert_eq!(y[0].to_vec::<f32>().unwrap(), vec![2.0, 3.0, 4.0]);
/// ```
pub fn execute(program: &ValidProgram, inputs: &[&Tensor]) -> Result<Vec<Tensor>, SimError> {
    let globals = check_inputs(program, inputs)?;
    let mut machine = Machine {
        program,
        globals,
        env: vec![None; program.tiles.len()],
        vars: vec![0; program.vars as usize],
        program_id: 0,
    };
    for program_id in 0..program.grid {
        machine.program_id = program_id as i64;
        machine.env.iter_mut().for_each(|slot| *slot = None);
        machine.run_body(&program.body)?;
    }
    Ok(program
        .globals
        .iter()
        .zip(machine.globals)
        .filter(|(decl, _)| decl.role == GlobalRole::Output)
        .map(|(decl, data)| Tensor::from_array(data).cast(decl.dtype))
        .collect())
}

/// The program's globals as f32 arrays: the inputs checked against their declarations and
/// converted, the outputs zero.
fn check_inputs(program: &Program, inputs: &[&Tensor]) -> Result<Vec<ArrayD<f32>>, SimError> {
    let declared = program
        .globals
        .iter()
        .filter(|g| g.role == GlobalRole::Input)
        .count();
    if declared != inputs.len() {
        return Err(SimError::InputCount {
            op: program.op.clone(),
            expected: declared,
            actual: inputs.len(),
        });
    }
    let mut given = inputs.iter();
    let mut globals = Vec::with_capacity(program.globals.len());
    for decl in &program.globals {
        match decl.role {
            GlobalRole::Output => globals.push(ArrayD::zeros(IxDyn(&decl.shape))),
            GlobalRole::Input => {
                let Some(tensor) = given.next() else {
                    unreachable!("the number of inputs was checked above")
                };
                let mismatch =
                    |what: &str, expected: String, actual: String| SimError::InputMismatch {
                        op: program.op.clone(),
                        global: decl.name.clone(),
                        what: what.to_owned(),
                        expected,
                        actual,
                    };
                if tensor.dims() != decl.shape.as_slice() {
                    return Err(mismatch(
                        "shape",
                        format!("{:?}", decl.shape),
                        format!("{:?}", tensor.dims()),
                    ));
                }
                if tensor.dtype() != decl.dtype {
                    return Err(mismatch(
                        "dtype",
                        decl.dtype.to_string(),
                        tensor.dtype().to_string(),
                    ));
                }
                globals.push(tensor.to_f32_array());
            }
        }
    }
    Ok(globals)
}

/// Rounds every element to the nearest value of `dtype` (see the module docs).
pub(crate) fn round_in_place(data: &mut ArrayD<f32>, dtype: DType) {
    match dtype {
        // The simulator holds f64 tiles in f32, as the cores do not compute in f64.
        DType::F32 | DType::F64 => {}
        DType::F16 => data.mapv_inplace(|x| f16::from_f32(x).to_f32()),
        DType::BF16 => data.mapv_inplace(|x| bf16::from_f32(x).to_f32()),
        DType::Bool => data.mapv_inplace(|x| if x != 0.0 { 1.0 } else { 0.0 }),
        DType::I32
        | DType::I64
        | DType::I8
        | DType::U8
        | DType::I16
        | DType::U16
        | DType::U32
        | DType::U64 => {
            let (low, high) = integer_range(dtype);
            data.mapv_inplace(|x| {
                if x.is_nan() {
                    0.0
                } else {
                    x.trunc().clamp(low, high)
                }
            });
        }
    }
}

/// `value` rounded to `dtype`, as [`round_in_place`] rounds elements.
pub(crate) fn round_scalar(value: f64, dtype: DType) -> f32 {
    let mut one = ArrayD::from_elem(IxDyn(&[]), value as f32);
    round_in_place(&mut one, dtype);
    one.iter().copied().next().unwrap_or(0.0)
}

fn integer_range(dtype: DType) -> (f32, f32) {
    match dtype {
        DType::I8 => (i8::MIN as f32, i8::MAX as f32),
        DType::U8 => (0.0, u8::MAX as f32),
        DType::I32 => (i32::MIN as f32, i32::MAX as f32),
        DType::I16 => (i16::MIN as f32, i16::MAX as f32),
        DType::U16 => (0.0, u16::MAX as f32),
        DType::U32 => (0.0, u32::MAX as f32),
        DType::U64 => (0.0, u64::MAX as f32),
        _ => (i64::MIN as f32, i64::MAX as f32),
    }
}

/// The interpreter's state for one program id.
struct Machine<'p> {
    program: &'p ValidProgram,
    /// Every global by `GlobalId`, as f32.
    globals: Vec<ArrayD<f32>>,
    /// Tile values by `TileId`; shared so that same-dtype moves copy nothing.
    env: Vec<Option<Rc<ArrayD<f32>>>>,
    /// Loop variable values by `VarId`.
    vars: Vec<i64>,
    program_id: i64,
}

/// An element-wise operand after lookup.
enum Arg<'a> {
    Tile(&'a ArrayD<f32>),
    Scalar(f32),
}

impl Machine<'_> {
    fn run_body(&mut self, body: &[Inst]) -> Result<(), SimError> {
        for inst in body {
            self.run(inst)?;
        }
        Ok(())
    }

    /// The value of `tile`: a valid program defines every tile before it reads it.
    fn value(&self, tile: TileId) -> &ArrayD<f32> {
        self.env[tile.0 as usize]
            .as_deref()
            .expect("a valid program defines a tile before reading it")
    }

    fn shared(&self, tile: TileId) -> Rc<ArrayD<f32>> {
        Rc::clone(
            self.env[tile.0 as usize]
                .as_ref()
                .expect("a valid program defines a tile before reading it"),
        )
    }

    fn arg(&self, operand: &Operand, scalar_dtype: DType) -> Arg<'_> {
        match operand {
            Operand::Tile(t) => Arg::Tile(self.value(*t)),
            Operand::Scalar(s) => Arg::Scalar(round_scalar(*s, scalar_dtype)),
        }
    }

    /// The dtype a scalar operand converts to: the other operand's, or `fallback` when
    /// both are scalars.
    fn scalar_dtype(&self, other: &Operand, fallback: DType) -> DType {
        match other {
            Operand::Tile(t) => self.program.tile_type(*t).dtype,
            Operand::Scalar(_) => fallback,
        }
    }

    fn offsets(&self, offsets: &[Index]) -> Result<Vec<i64>, SimError> {
        offsets.iter().map(|i| self.eval(i)).collect()
    }

    /// The value of an index here, checked.
    fn eval(&self, index: &Index) -> Result<i64, SimError> {
        index
            .eval(self.program_id, &self.vars)
            .map_err(|source| SimError::IndexOverflow {
                op: self.program.op.clone(),
                source,
            })
    }

    /// Gives `tile` an already rounded value (loop params and results).
    fn bind(&mut self, tile: TileId, value: Rc<ArrayD<f32>>) {
        self.env[tile.0 as usize] = Some(value);
    }

    fn define(&mut self, tile: TileId, mut data: ArrayD<f32>, dtype: DType) {
        round_in_place(&mut data, dtype);
        self.env[tile.0 as usize] = Some(Rc::new(data));
    }

    fn run(&mut self, inst: &Inst) -> Result<(), SimError> {
        let program = self.program;
        let ty = |t: TileId| program.tile_type(t);
        match inst {
            Inst::Load {
                dst,
                src,
                offsets,
                pad,
            } => {
                let dst_ty = ty(*dst);
                let offsets = self.offsets(offsets)?;
                let global = &self.globals[src.0 as usize];
                let data = load(
                    global,
                    &offsets,
                    &dst_ty.shape,
                    round_scalar(*pad, dst_ty.dtype),
                );
                let from = self.program.global(*src).map(|g| g.dtype);
                if from == Some(dst_ty.dtype) {
                    // Already representable in the tile's dtype: the pad was rounded above.
                    self.env[dst.0 as usize] = Some(Rc::new(data));
                } else {
                    self.define(*dst, data, dst_ty.dtype);
                }
            }
            Inst::Store { dst, offsets, src } => {
                let offsets = self.offsets(offsets)?;
                let value = self.shared(*src);
                store(&mut self.globals[dst.0 as usize], &offsets, &value)
            }
            Inst::Full { dst, value } => {
                let dst_ty = ty(*dst);
                let data = ArrayD::from_elem(IxDyn(&dst_ty.shape), *value as f32);
                let dtype = dst_ty.dtype;
                self.define(*dst, data, dtype);
            }
            Inst::Iota { dst, axis, start } => {
                let dst_ty = ty(*dst);
                let start = self.eval(start)? as f32;
                let axis = *axis;
                let data = ArrayD::from_shape_fn(IxDyn(&dst_ty.shape), |i| start + i[axis] as f32);
                let dtype = dst_ty.dtype;
                self.define(*dst, data, dtype);
            }
            Inst::Unary { dst, op, src } => {
                let dtype = ty(*dst).dtype;
                let data = unary(*op, self.value(*src));
                self.define(*dst, data, dtype);
            }
            Inst::Binary { dst, op, lhs, rhs } => {
                let dst_ty = ty(*dst);
                let a = self.arg(lhs, self.scalar_dtype(rhs, dst_ty.dtype));
                let b = self.arg(rhs, self.scalar_dtype(lhs, dst_ty.dtype));
                let shape = &dst_ty.shape;
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
                self.define(*dst, data, dst_ty.dtype);
            }
            Inst::Compare { dst, op, lhs, rhs } => {
                let dst_ty = ty(*dst);
                let a = self.arg(lhs, self.scalar_dtype(rhs, DType::F32));
                let b = self.arg(rhs, self.scalar_dtype(lhs, DType::F32));
                let shape = &dst_ty.shape;
                let truth = |t: bool| if t { 1.0 } else { 0.0 };
                let data = match op {
                    CmpOp::Eq => zip2(shape, &a, &b, |x, y| truth(x == y)),
                    CmpOp::Ne => zip2(shape, &a, &b, |x, y| truth(x != y)),
                    CmpOp::Lt => zip2(shape, &a, &b, |x, y| truth(x < y)),
                    CmpOp::Le => zip2(shape, &a, &b, |x, y| truth(x <= y)),
                    CmpOp::Gt => zip2(shape, &a, &b, |x, y| truth(x > y)),
                    CmpOp::Ge => zip2(shape, &a, &b, |x, y| truth(x >= y)),
                };
                self.define(*dst, data, dst_ty.dtype);
            }
            Inst::Select {
                dst,
                cond,
                on_true,
                on_false,
            } => {
                let dst_ty = ty(*dst);
                let cond = self.value(*cond);
                let t = self.arg(on_true, dst_ty.dtype);
                let f = self.arg(on_false, dst_ty.dtype);
                let data = select(&dst_ty.shape, cond, &t, &f);
                self.define(*dst, data, dst_ty.dtype);
            }
            Inst::Cast { dst, src } => {
                let dtype = ty(*dst).dtype;
                let data = self.value(*src).clone();
                self.define(*dst, data, dtype);
            }
            Inst::Reduce { dst, op, src, axis } => {
                let dtype = ty(*dst).dtype;
                let value = self.value(*src);
                let ax = Axis(*axis);
                let reduced = match op {
                    ReduceOp::Sum => value.sum_axis(ax),
                    ReduceOp::Mean => value.sum_axis(ax) / value.len_of(ax).max(1) as f32,
                    ReduceOp::Max => value.fold_axis(ax, f32::NEG_INFINITY, |m, &x| m.max(x)),
                    ReduceOp::Min => value.fold_axis(ax, f32::INFINITY, |m, &x| m.min(x)),
                };
                self.define(*dst, reduced.insert_axis(ax), dtype);
            }
            Inst::Move { dst, src } => {
                let dst_dtype = ty(*dst).dtype;
                let src_dtype = ty(*src).dtype;
                let value = self.shared(*src);
                if dst_dtype == src_dtype {
                    self.env[dst.0 as usize] = Some(value);
                } else {
                    self.define(*dst, (*value).clone(), dst_dtype);
                }
            }
            Inst::Extract { dst, src, offsets } => {
                let dst_ty = ty(*dst);
                let value = self.value(*src);
                let part = value.slice_each_axis(|axis| {
                    let start = offsets[axis.axis.index()];
                    ndarray::Slice::from(start..start + dst_ty.shape[axis.axis.index()])
                });
                self.define(*dst, part.to_owned(), dst_ty.dtype);
            }
            Inst::Matmul {
                dst,
                a,
                b,
                acc,
                transpose_b,
            } => {
                let dtype = ty(*dst).dtype;
                let data = self.matmul(*a, *b, *acc, *transpose_b);
                self.define(*dst, data, dtype);
            }
            Inst::Loop {
                var,
                count,
                init,
                params,
                body,
                yields,
                results,
            } => {
                let mut carried: Vec<_> = init.iter().map(|t| self.shared(*t)).collect();
                let var_slot = var.0 as usize;
                for iteration in 0..*count {
                    self.vars[var_slot] = iteration as i64;
                    for (param, value) in params.iter().zip(carried.drain(..)) {
                        self.bind(*param, value);
                    }
                    self.run_body(body)?;
                    carried = yields.iter().map(|t| self.shared(*t)).collect();
                }
                for (result, value) in results.iter().zip(carried) {
                    self.bind(*result, value);
                }
            }
        }
        Ok(())
    }

    /// `a @ b (+ acc)`: a valid program gives matrices whose inner dimensions agree and an
    /// accumulator of the product's shape.
    fn matmul(&self, a: TileId, b: TileId, acc: Option<TileId>, transpose_b: bool) -> ArrayD<f32> {
        let matrix = |t: TileId| {
            self.value(t)
                .view()
                .into_dimensionality::<Ix2>()
                .expect("a valid program's cube tiles are rank 2")
        };
        let a2 = matrix(a);
        let b2 = matrix(b);
        let b2 = if transpose_b { b2.reversed_axes() } else { b2 };
        let (m, n) = (a2.dim().0, b2.dim().1);
        let (mut out, beta) = match acc {
            Some(acc) => (matrix(acc).to_owned(), 1.0),
            None => (Array2::zeros((m, n)), 0.0),
        };
        general_mat_mul(1.0, &a2, &b2, beta, &mut out);
        out.into_dyn()
    }
}

/// The per-axis overlap of a tile at `offsets` with a tensor of shape `dims`: for each
/// axis, the range inside the tile and the range inside the tensor; `None` if they do not
/// overlap.
type Overlap = Vec<((usize, usize), (usize, usize))>;

/// A valid program gives one offset per dim and tiles of the tensor's rank.
fn overlap(dims: &[usize], offsets: &[i64], tile: &[usize]) -> Option<Overlap> {
    debug_assert!(offsets.len() == dims.len() && tile.len() == dims.len());
    let mut ranges = Vec::with_capacity(dims.len());
    for ((&dim, &offset), &size) in dims.iter().zip(offsets).zip(tile) {
        let start = offset.max(0);
        let end = (offset + size as i64).min(dim as i64);
        if start >= end {
            return None;
        }
        let in_tile = ((start - offset) as usize, (end - offset) as usize);
        ranges.push((in_tile, (start as usize, end as usize)));
    }
    Some(ranges)
}

fn slice_of(ranges: &[(usize, usize)]) -> impl Fn(ndarray::AxisDescription) -> Slice + '_ {
    |ax| {
        let (start, end) = ranges[ax.axis.index()];
        Slice::from(start..end)
    }
}

/// A masked load: the `tile`-shaped window of `global` at `offsets`, `pad` outside it.
fn load(global: &ArrayD<f32>, offsets: &[i64], tile: &[usize], pad: f32) -> ArrayD<f32> {
    let Some(ranges) = overlap(global.shape(), offsets, tile) else {
        return ArrayD::from_elem(IxDyn(tile), pad);
    };
    let (in_tile, in_global): (Vec<_>, Vec<_>) = ranges.into_iter().unzip();
    let window = global.slice_each_axis(slice_of(&in_global));
    if window.shape() == tile {
        return window.to_owned();
    }
    let mut out = ArrayD::from_elem(IxDyn(tile), pad);
    out.slice_each_axis_mut(slice_of(&in_tile)).assign(&window);
    out
}

/// A masked store: writes the part of `value` at `offsets` that lies inside `global`.
fn store(global: &mut ArrayD<f32>, offsets: &[i64], value: &ArrayD<f32>) {
    let Some(ranges) = overlap(global.shape(), offsets, value.shape()) else {
        return;
    };
    let (in_tile, in_global): (Vec<_>, Vec<_>) = ranges.into_iter().unzip();
    global
        .slice_each_axis_mut(slice_of(&in_global))
        .assign(&value.slice_each_axis(slice_of(&in_tile)));
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
fn base_view<'a>(arg: &'a Arg<'_>, scalar: &'a f32) -> ArrayViewD<'a, f32> {
    match arg {
        Arg::Tile(t) => t.view(),
        Arg::Scalar(_) => aview0(scalar).into_dyn(),
    }
}

/// `view` broadcast to `shape`, which validation guarantees it can be (the result's shape
/// is the broadcast of its operands').
fn broadcast_to<'a>(view: &'a ArrayViewD<'_, f32>, shape: &[usize]) -> ArrayViewD<'a, f32> {
    view.broadcast(IxDyn(shape))
        .expect("a valid program's operands broadcast to the result's shape")
}

/// `f` applied element-wise to `a` and `b` broadcast to `shape`.
fn zip2(shape: &[usize], a: &Arg<'_>, b: &Arg<'_>, f: impl Fn(f32, f32) -> f32) -> ArrayD<f32> {
    match (a, b) {
        (Arg::Tile(x), Arg::Scalar(s)) if x.shape() == shape => x.mapv(|v| f(v, *s)),
        (Arg::Scalar(s), Arg::Tile(y)) if y.shape() == shape => y.mapv(|v| f(*s, v)),
        _ => {
            let (sa, sb) = (scalar_of(a), scalar_of(b));
            let (base_a, base_b) = (base_view(a, &sa), base_view(b, &sb));
            let x = broadcast_to(&base_a, shape);
            let y = broadcast_to(&base_b, shape);
            Zip::from(&x).and(&y).map_collect(|&p, &q| f(p, q))
        }
    }
}

fn scalar_of(arg: &Arg<'_>) -> f32 {
    match arg {
        Arg::Tile(_) => 0.0,
        Arg::Scalar(s) => *s,
    }
}

/// `cond ? on_true : on_false` element-wise, all broadcast to `shape`.
fn select(
    shape: &[usize],
    cond: &ArrayD<f32>,
    on_true: &Arg<'_>,
    on_false: &Arg<'_>,
) -> ArrayD<f32> {
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
