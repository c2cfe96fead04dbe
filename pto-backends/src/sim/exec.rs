//! Functional execution: runs a kernel program for every program id over real data.
//!
//! Float and bool tiles are `ArrayD<f32>` rounded to the tile's dtype after every
//! instruction (f16 and bf16 round to nearest-even, bool is 0 or 1), so an f16 kernel sees
//! f16 precision as f16 hardware would; f64 tiles are held in f32, as the cores compute
//! in f32. Integer tiles (i8 to i64, u8 to u64) are `ArrayD<i128>` and exact: arithmetic is checked, and a result outside the tile's dtype (`add`, `sub`,
//! `mul`, `neg`, `abs`, `square`, `sum`, `iota`), or an integer `div`, `rem` or `mod` by
//! zero, is a [`SimError::IntegerArithmetic`] naming the op, the instruction and the
//! operands, the error the CPU reference raises (never a wrapped or saturated value).
//! Every instruction is a whole-array ndarray operation; index expressions are evaluated
//! once per executed instruction.
//!
//! Constants (scalar operands, `full` values, load pads) convert to an integer dtype by
//! truncating toward zero and saturating (`-inf` is the dtype's lowest value, NaN 0).
//! `cast` converts as [`Tensor::cast`] does, the CPU reference of `std.cast`: integers to
//! integers keep the low bits (two's complement), floats to integers truncate toward zero
//! and saturate.
//!
//! Math functions evaluate in f32 (`erf` in f64, [`pto_op::ops::math::erf`]) and then
//! round to the dtype. `rem` is truncated (`a - trunc(a / b) * b`, the sign of `a`, f32's
//! `%`), `mod` floored (`a - floor(a / b) * b`, the sign of `b`); integer `div` truncates
//! toward zero.

use std::cell::Cell;
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
        inst: 0,
    };
    for program_id in 0..program.grid {
        machine.program_id = program_id as i64;
        machine.env.iter_mut().for_each(|slot| *slot = None);
        machine.inst = 0;
        machine.run_body(&program.body)?;
    }
    Ok(program
        .globals
        .iter()
        .zip(machine.globals)
        .filter(|(decl, _)| decl.role == GlobalRole::Output)
        .map(|(decl, data)| data.into_tensor(decl.dtype))
        .collect())
}

/// The elements of a tile or a global: floats and bool (0 or 1) in f32, integers exactly
/// in i128 (which holds every integer dtype, u64 included).
#[derive(Debug, Clone)]
enum Data {
    F(ArrayD<f32>),
    I(ArrayD<i128>),
}

/// Whether `dtype` is held in i128.
fn is_integer(dtype: DType) -> bool {
    matches!(
        dtype,
        DType::I8
            | DType::U8
            | DType::I16
            | DType::U16
            | DType::I32
            | DType::U32
            | DType::I64
            | DType::U64
    )
}

impl Data {
    fn of_tensor(tensor: &Tensor) -> Data {
        if !is_integer(tensor.dtype()) {
            return Data::F(tensor.to_f32_array());
        }
        // u64 as is; every other integer dtype through i64, exactly.
        let wide = if tensor.dtype() == DType::U64 {
            tensor.view::<u64>().map(|v| v.mapv(i128::from))
        } else {
            tensor
                .cast(DType::I64)
                .view::<i64>()
                .map(|v| v.mapv(i128::from))
        };
        match wide {
            Ok(values) => Data::I(values),
            Err(_) => Data::F(tensor.to_f32_array()),
        }
    }

    fn zeros(shape: &[usize], dtype: DType) -> Data {
        if is_integer(dtype) {
            Data::I(ArrayD::zeros(IxDyn(shape)))
        } else {
            Data::F(ArrayD::zeros(IxDyn(shape)))
        }
    }

    /// The elements as a tensor of `dtype` (exact: integer results were checked to fit).
    fn into_tensor(self, dtype: DType) -> Tensor {
        match self {
            Data::F(a) => Tensor::from_array(a).cast(dtype),
            Data::I(a) if dtype == DType::U64 => Tensor::from_array(a.mapv(|v| v as u64)),
            Data::I(a) => Tensor::from_array(a.mapv(|v| v as i64)).cast(dtype),
        }
    }

    /// The elements as a tensor of `dtype` without a copy of floats rounded already.
    fn to_tensor(&self, dtype: DType) -> Tensor {
        self.clone().into_tensor(dtype)
    }
}

/// The program's globals: the inputs checked against their declarations and converted,
/// the outputs zero.
fn check_inputs(program: &Program, inputs: &[&Tensor]) -> Result<Vec<Data>, SimError> {
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
            GlobalRole::Output => globals.push(Data::zeros(&decl.shape, decl.dtype)),
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
                globals.push(Data::of_tensor(tensor));
            }
        }
    }
    Ok(globals)
}

/// Rounds every element of a float or bool tile to the nearest value of `dtype`.
fn round_in_place(data: &mut ArrayD<f32>, dtype: DType) {
    match dtype {
        DType::F16 => data.mapv_inplace(|x| f16::from_f32(x).to_f32()),
        DType::BF16 => data.mapv_inplace(|x| bf16::from_f32(x).to_f32()),
        DType::Bool => data.mapv_inplace(|x| if x != 0.0 { 1.0 } else { 0.0 }),
        // f64 tiles are held in f32, as the cores do not compute in f64.
        _ => {}
    }
}

/// A float constant rounded to a float or bool `dtype`.
fn float_scalar(value: f64, dtype: DType) -> f32 {
    let mut one = ArrayD::from_elem(IxDyn(&[]), value as f32);
    round_in_place(&mut one, dtype);
    one.iter().copied().next().unwrap_or(0.0)
}

/// The range of an integer dtype.
fn integer_range(dtype: DType) -> (i128, i128) {
    match dtype {
        DType::I8 => (i8::MIN.into(), i8::MAX.into()),
        DType::U8 => (0, u8::MAX.into()),
        DType::I16 => (i16::MIN.into(), i16::MAX.into()),
        DType::U16 => (0, u16::MAX.into()),
        DType::I32 => (i32::MIN.into(), i32::MAX.into()),
        DType::U32 => (0, u32::MAX.into()),
        DType::U64 => (0, u64::MAX.into()),
        _ => (i64::MIN.into(), i64::MAX.into()),
    }
}

/// A constant converted to an integer `dtype`: truncated toward zero and saturated
/// (`as` saturates, NaN gives 0).
fn integer_scalar(value: f64, dtype: DType) -> i128 {
    let (low, high) = integer_range(dtype);
    (value as i128).clamp(low, high)
}

/// Whether `value` is in `dtype`'s range.
fn fits(value: i128, dtype: DType) -> bool {
    let (low, high) = integer_range(dtype);
    (low..=high).contains(&value)
}

/// `exact` (the exact result of `what`, or why there is none) when it fits `dtype`.
fn in_range(
    exact: Result<i128, String>,
    dtype: DType,
    what: impl FnOnce() -> String,
) -> Result<i128, String> {
    let value = exact?;
    if fits(value, dtype) {
        Ok(value)
    } else {
        Err(format!("{} = {value} overflows {dtype}", what()))
    }
}

/// The exact integer result of `op`, or why there is none (before the dtype's range check).
fn integer_binary(op: BinaryOp, x: i128, y: i128) -> Result<i128, String> {
    let overflow = |symbol: &str| format!("{x} {symbol} {y} overflows i128");
    let by_zero = |symbol: &str| format!("{x} {symbol} 0: division by zero");
    match op {
        BinaryOp::Add => x.checked_add(y).ok_or_else(|| overflow("+")),
        BinaryOp::Sub => x.checked_sub(y).ok_or_else(|| overflow("-")),
        BinaryOp::Mul => x.checked_mul(y).ok_or_else(|| overflow("*")),
        BinaryOp::Div if y == 0 => Err(by_zero("/")),
        BinaryOp::Div => x.checked_div(y).ok_or_else(|| overflow("/")),
        BinaryOp::Max => Ok(x.max(y)),
        BinaryOp::Min => Ok(x.min(y)),
        BinaryOp::Rem if y == 0 => Err(by_zero("rem")),
        // i128::MIN rem -1 is 0; `%` would overflow computing it.
        BinaryOp::Rem => Ok(x.checked_rem(y).unwrap_or(0)),
        BinaryOp::Mod if y == 0 => Err(by_zero("mod")),
        BinaryOp::Mod => {
            let r = x.checked_rem(y).unwrap_or(0);
            Ok(if r != 0 && (r < 0) != (y < 0) {
                r + y
            } else {
                r
            })
        }
        BinaryOp::Pow => Err("pow of integers (a valid program has none)".to_owned()),
    }
}

/// The symbol of `op` in messages.
fn symbol(op: BinaryOp) -> &'static str {
    match op {
        BinaryOp::Add => "+",
        BinaryOp::Sub => "-",
        BinaryOp::Mul => "*",
        BinaryOp::Div => "/",
        other => other.name(),
    }
}

/// The interpreter's state for one program id.
struct Machine<'p> {
    program: &'p ValidProgram,
    /// Every global by `GlobalId`.
    globals: Vec<Data>,
    /// Tile values by `TileId`; shared so that same-dtype moves copy nothing.
    env: Vec<Option<Rc<Data>>>,
    /// Loop variable values by `VarId`.
    vars: Vec<i64>,
    program_id: i64,
    /// The number of the instruction running, in program order (loop bodies after their
    /// loop), for messages.
    inst: usize,
}

/// An element-wise operand after lookup.
enum Arg<'a, T> {
    Tile(&'a ArrayD<T>),
    Scalar(T),
}

/// The first failure of an element-wise integer instruction.
#[derive(Default)]
struct FirstError(Cell<Option<String>>);

impl FirstError {
    /// `result`'s value, recording its error (the first one) as 0.
    fn take(&self, result: Result<i128, String>) -> i128 {
        result.unwrap_or_else(|e| {
            let first = self.0.take().unwrap_or(e);
            self.0.set(Some(first));
            0
        })
    }
}

impl Machine<'_> {
    fn run_body(&mut self, body: &[Inst]) -> Result<(), SimError> {
        for inst in body {
            self.run(inst)?;
        }
        Ok(())
    }

    /// The value of `tile`: a valid program defines every tile before it reads it.
    fn value(&self, tile: TileId) -> &Data {
        self.env[tile.0 as usize]
            .as_deref()
            .expect("a valid program defines a tile before reading it")
    }

    fn shared(&self, tile: TileId) -> Rc<Data> {
        Rc::clone(
            self.env[tile.0 as usize]
                .as_ref()
                .expect("a valid program defines a tile before reading it"),
        )
    }

    /// A float tile's elements.
    fn floats(&self, tile: TileId) -> Result<&ArrayD<f32>, SimError> {
        match self.value(tile) {
            Data::F(a) => Ok(a),
            Data::I(_) => Err(self.mixed(tile)),
        }
    }

    /// An integer tile's elements.
    fn integers(&self, tile: TileId) -> Result<&ArrayD<i128>, SimError> {
        match self.value(tile) {
            Data::I(a) => Ok(a),
            Data::F(_) => Err(self.mixed(tile)),
        }
    }

    /// A tile held in the other carrier than its dtype's: a valid program gives none.
    fn mixed(&self, tile: TileId) -> SimError {
        SimError::Unsupported {
            op: self.program.op.clone(),
            message: format!(
                "inst {}: tile {tile} of type {} is read where another dtype is expected",
                self.inst.saturating_sub(1),
                self.program.tile_type(tile)
            ),
        }
    }

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
    fn bind(&mut self, tile: TileId, value: Rc<Data>) {
        self.env[tile.0 as usize] = Some(value);
    }

    fn define_floats(&mut self, tile: TileId, mut data: ArrayD<f32>, dtype: DType) {
        round_in_place(&mut data, dtype);
        self.env[tile.0 as usize] = Some(Rc::new(Data::F(data)));
    }

    /// Defines an integer tile from results checked to fit its dtype, unless computing
    /// them failed (`failed` holds the first failure).
    fn define_integers(
        &mut self,
        inst: &Inst,
        tile: TileId,
        data: ArrayD<i128>,
        failed: FirstError,
    ) -> Result<(), SimError> {
        if let Some(detail) = failed.0.take() {
            return Err(SimError::IntegerArithmetic {
                op: self.program.op.clone(),
                inst: self.inst - 1,
                mnemonic: inst.mnemonic().to_owned(),
                dtype: self.program.tile_type(tile).dtype,
                detail,
            });
        }
        self.env[tile.0 as usize] = Some(Rc::new(Data::I(data)));
        Ok(())
    }

    fn run(&mut self, inst: &Inst) -> Result<(), SimError> {
        self.inst += 1;
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
                let data = match &self.globals[src.0 as usize] {
                    Data::F(global) => {
                        let mut data = load(
                            global,
                            &offsets,
                            &dst_ty.shape,
                            float_scalar(*pad, dst_ty.dtype),
                        );
                        // A valid program loads a global of the tile's dtype: rounding
                        // changes nothing but the pad, rounded above.
                        if self.program.global(*src).map(|g| g.dtype) != Some(dst_ty.dtype) {
                            round_in_place(&mut data, dst_ty.dtype);
                        }
                        Data::F(data)
                    }
                    Data::I(global) => Data::I(load(
                        global,
                        &offsets,
                        &dst_ty.shape,
                        integer_scalar(*pad, dst_ty.dtype),
                    )),
                };
                if is_integer(dst_ty.dtype) != matches!(data, Data::I(_)) {
                    return Err(self.mixed(*dst));
                }
                self.env[dst.0 as usize] = Some(Rc::new(data));
            }
            Inst::Store { dst, offsets, src } => {
                let offsets = self.offsets(offsets)?;
                let value = self.shared(*src);
                match (&mut self.globals[dst.0 as usize], &*value) {
                    (Data::F(global), Data::F(v)) => store(global, &offsets, v),
                    (Data::I(global), Data::I(v)) => store(global, &offsets, v),
                    _ => return Err(self.mixed(*src)),
                }
            }
            Inst::Full { dst, value } => {
                let dst_ty = ty(*dst);
                let shape = IxDyn(&dst_ty.shape);
                if is_integer(dst_ty.dtype) {
                    let v = integer_scalar(*value, dst_ty.dtype);
                    self.bind(*dst, Rc::new(Data::I(ArrayD::from_elem(shape, v))));
                } else {
                    let data = ArrayD::from_elem(shape, *value as f32);
                    self.define_floats(*dst, data, dst_ty.dtype);
                }
            }
            Inst::Iota { dst, axis, start } => {
                let dst_ty = ty(*dst);
                let start = self.eval(start)?;
                let axis = *axis;
                let shape = IxDyn(&dst_ty.shape);
                if is_integer(dst_ty.dtype) {
                    let failed = FirstError::default();
                    let dtype = dst_ty.dtype;
                    let data = ArrayD::from_shape_fn(shape, |i| {
                        let offset = i[axis] as i128;
                        let exact = Ok(i128::from(start) + offset);
                        failed.take(in_range(exact, dtype, || format!("{start} + {offset}")))
                    });
                    self.define_integers(inst, *dst, data, failed)?;
                } else {
                    let data = ArrayD::from_shape_fn(shape, |i| start as f32 + i[axis] as f32);
                    self.define_floats(*dst, data, dst_ty.dtype);
                }
            }
            Inst::Unary { dst, op, src } => {
                let dtype = ty(*dst).dtype;
                match self.value(*src) {
                    Data::F(x) => {
                        let data = unary(*op, x);
                        self.define_floats(*dst, data, dtype);
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
                        self.define_integers(inst, *dst, data, failed)?;
                    }
                }
            }
            Inst::Binary { dst, op, lhs, rhs } => {
                let dst_ty = ty(*dst);
                let shape = &dst_ty.shape;
                if is_integer(dst_ty.dtype) {
                    let a = self.integer_arg(lhs, dst_ty.dtype)?;
                    let b = self.integer_arg(rhs, dst_ty.dtype)?;
                    let failed = FirstError::default();
                    let data = zip2(shape, &a, &b, |x, y| {
                        let exact = integer_binary(*op, x, y);
                        failed.take(in_range(exact, dst_ty.dtype, || {
                            format!("{x} {} {y}", symbol(*op))
                        }))
                    });
                    self.define_integers(inst, *dst, data, failed)?;
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
                    self.define_floats(*dst, data, dst_ty.dtype);
                }
            }
            Inst::Compare { dst, op, lhs, rhs } => {
                let dst_ty = ty(*dst);
                let shape = &dst_ty.shape;
                let truth = |t: bool| if t { 1.0 } else { 0.0 };
                let operands = self.operand_dtype(lhs, rhs, DType::F32);
                let data = if is_integer(operands) {
                    let a = self.integer_arg(lhs, operands)?;
                    let b = self.integer_arg(rhs, operands)?;
                    compare(shape, &a, &b, *op, truth)
                } else {
                    let a = self.float_arg(lhs, operands)?;
                    let b = self.float_arg(rhs, operands)?;
                    compare(shape, &a, &b, *op, truth)
                };
                self.define_floats(*dst, data, dst_ty.dtype);
            }
            Inst::Select {
                dst,
                cond,
                on_true,
                on_false,
            } => {
                let dst_ty = ty(*dst);
                let cond = self.floats(*cond)?;
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
                self.bind(*dst, Rc::new(data));
            }
            Inst::Cast { dst, src } => {
                let to = ty(*dst).dtype;
                let from = ty(*src).dtype;
                let value = self.shared(*src);
                let converted = if to == from {
                    value
                } else {
                    Rc::new(Data::of_tensor(&value.to_tensor(from).cast(to)))
                };
                self.bind(*dst, converted);
            }
            Inst::Reduce { dst, op, src, axis } => {
                let dtype = ty(*dst).dtype;
                let ax = Axis(*axis);
                match self.value(*src) {
                    Data::F(value) => {
                        let reduced = match op {
                            ReduceOp::Sum => value.sum_axis(ax),
                            ReduceOp::Mean => value.sum_axis(ax) / value.len_of(ax).max(1) as f32,
                            ReduceOp::Max => {
                                value.fold_axis(ax, f32::NEG_INFINITY, |m, &x| m.max(x))
                            }
                            ReduceOp::Min => value.fold_axis(ax, f32::INFINITY, |m, &x| m.min(x)),
                        };
                        self.define_floats(*dst, reduced.insert_axis(ax), dtype);
                    }
                    Data::I(value) => {
                        let failed = FirstError::default();
                        let reduced =
                            match op {
                                ReduceOp::Sum => value.fold_axis(ax, 0i128, |sum, &x| {
                                    failed.take(sum.checked_add(x).ok_or_else(|| {
                                        format!("the sum {sum} + {x} overflows i128")
                                    }))
                                }),
                                ReduceOp::Max => value.fold_axis(ax, i128::MIN, |m, &x| *m.max(&x)),
                                ReduceOp::Min => value.fold_axis(ax, i128::MAX, |m, &x| *m.min(&x)),
                                ReduceOp::Mean => {
                                    failed
                                        .take(Err("mean of integers (a valid program has none)"
                                            .to_owned()));
                                    value.sum_axis(ax)
                                }
                            };
                        let reduced = reduced.mapv(|v| {
                            failed.take(in_range(Ok(v), dtype, || {
                                format!("a {} along axis {axis}", op.name())
                            }))
                        });
                        self.define_integers(inst, *dst, reduced.insert_axis(ax), failed)?;
                    }
                }
            }
            Inst::Move { dst, src } => {
                let dst_dtype = ty(*dst).dtype;
                let src_dtype = ty(*src).dtype;
                let value = self.shared(*src);
                if dst_dtype == src_dtype {
                    self.bind(*dst, value);
                } else {
                    // Only L0C -> UB converts, to a float dtype.
                    let converted = Data::of_tensor(&value.to_tensor(src_dtype).cast(dst_dtype));
                    self.bind(*dst, Rc::new(converted));
                }
            }
            Inst::Extract { dst, src, offsets } => {
                let dst_ty = ty(*dst);
                let window = |axis: ndarray::AxisDescription| {
                    let start = offsets[axis.axis.index()];
                    ndarray::Slice::from(start..start + dst_ty.shape[axis.axis.index()])
                };
                let part = match self.value(*src) {
                    Data::F(value) => Data::F(value.slice_each_axis(window).to_owned()),
                    Data::I(value) => Data::I(value.slice_each_axis(window).to_owned()),
                };
                self.bind(*dst, Rc::new(part));
            }
            Inst::Matmul {
                dst,
                a,
                b,
                acc,
                transpose_b,
            } => {
                let dtype = ty(*dst).dtype;
                let data = self.matmul(*a, *b, *acc, *transpose_b)?;
                self.define_floats(*dst, data, dtype);
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
                let first = self.inst;
                for iteration in 0..*count {
                    self.vars[var_slot] = iteration as i64;
                    for (param, value) in params.iter().zip(carried.drain(..)) {
                        self.bind(*param, value);
                    }
                    // The body's instructions keep their numbers in every iteration.
                    self.inst = first;
                    self.run_body(body)?;
                    carried = yields.iter().map(|t| self.shared(*t)).collect();
                }
                self.inst = first + Inst::count(body);
                for (result, value) in results.iter().zip(carried) {
                    self.bind(*result, value);
                }
            }
        }
        Ok(())
    }

    /// `a @ b (+ acc)`: a valid program gives float matrices whose inner dimensions agree
    /// and an accumulator of the product's shape.
    fn matmul(
        &self,
        a: TileId,
        b: TileId,
        acc: Option<TileId>,
        transpose_b: bool,
    ) -> Result<ArrayD<f32>, SimError> {
        let matrix = |t: TileId| -> Result<_, SimError> {
            Ok(self
                .floats(t)?
                .view()
                .into_dimensionality::<Ix2>()
                .expect("a valid program's cube tiles are rank 2"))
        };
        let a2 = matrix(a)?;
        let b2 = matrix(b)?;
        let b2 = if transpose_b { b2.reversed_axes() } else { b2 };
        let (m, n) = (a2.dim().0, b2.dim().1);
        let (mut out, beta) = match acc {
            Some(acc) => (matrix(acc)?.to_owned(), 1.0),
            None => (Array2::zeros((m, n)), 0.0),
        };
        general_mat_mul(1.0, &a2, &b2, beta, &mut out);
        Ok(out.into_dyn())
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
        // Saturating: an offset near i64::MAX plus the tile's size lies past any tensor.
        let start = offset.max(0);
        let end = offset
            .saturating_add(i64::try_from(size).unwrap_or(i64::MAX))
            .min(i64::try_from(dim).unwrap_or(i64::MAX));
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

/// `tile` with the leading dims of size 1 that it drops of a global of rank `rank` (a tile
/// of lower rank covers one element of each).
fn with_dropped_dims(tile: &[usize], rank: usize) -> Vec<usize> {
    let mut dims = vec![1; rank.saturating_sub(tile.len())];
    dims.extend_from_slice(tile);
    dims
}

/// A masked load: the `tile`-shaped window of `global` at `offsets`, `pad` outside it (a
/// tile of lower rank than the global: the window of one element of its leading dims).
fn load<T: Copy>(global: &ArrayD<T>, offsets: &[i64], tile: &[usize], pad: T) -> ArrayD<T> {
    if tile.len() < global.ndim() {
        let full = with_dropped_dims(tile, global.ndim());
        let window = load(global, offsets, &full, pad);
        return window
            .to_shape(IxDyn(tile))
            .expect("dropping dims of size 1 keeps the elements")
            .into_owned();
    }
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

/// A masked store: writes the part of `value` at `offsets` that lies inside `global` (a
/// tile of lower rank than the global: into one element of its leading dims).
fn store<T: Copy>(global: &mut ArrayD<T>, offsets: &[i64], value: &ArrayD<T>) {
    if value.ndim() < global.ndim() {
        let full = with_dropped_dims(value.shape(), global.ndim());
        let value = value
            .to_shape(IxDyn(&full))
            .expect("adding dims of size 1 keeps the elements")
            .into_owned();
        return store(global, offsets, &value);
    }
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
