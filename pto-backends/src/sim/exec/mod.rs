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
//!
//! One file per instruction family, each a method of the interpreter per instruction:
//! `movement` (load, store, move, extract), `vector` (element-wise, compare, select, cast,
//! reduce, logic, reshape), `order` (index reductions, top-k), `cube` (matmul); the loop, the one control instruction, is here with the
//! dispatch. `machine` is the interpreter's state, `data` how tiles hold their elements,
//! `integer` the checked integer arithmetic.

use std::rc::Rc;

use pto_op::Tensor;
use pto_op::kernel::ValidProgram;
use pto_op::kernel::ir::{GlobalId, GlobalRole, IdVec, Inst, Program, TileId, VarId};

use super::error::SimError;
use data::Data;
use machine::Machine;

mod cube;
mod data;
mod integer;
mod machine;
mod movement;
mod order;
mod vector;

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
///     globals: vec![global("x", GlobalRole::Input), global("y", GlobalRole::Output)].into(),
///     tiles: vec![tile.clone(), tile].into(),
///     vars: 0,
///     body: vec![
///         Inst::Load { dst: TileId::new(0), src: GlobalId::new(0), offsets: vec![Index::Const(0)], pad: 0.0 },
///         Inst::Binary { dst: TileId::new(1), op: BinaryOp::Add, lhs: Operand::Tile(TileId::new(0)), rhs: Operand::Scalar(1.0) },
///         Inst::Store { dst: GlobalId::new(1), offsets: vec![Index::Const(0)], src: TileId::new(1) },
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
        env: IdVec::filled(program.tiles.len(), None),
        vars: IdVec::filled(program.vars as usize, 0),
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

/// The program's globals: the inputs checked against their declarations and converted,
/// the outputs zero.
fn check_inputs(program: &Program, inputs: &[&Tensor]) -> Result<IdVec<GlobalId, Data>, SimError> {
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
    let mut globals = IdVec::new();
    for decl in &program.globals {
        match decl.role {
            GlobalRole::Output => {
                globals.push(Data::zeros(&decl.shape, decl.dtype));
            }
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

impl Machine<'_> {
    fn run_body(&mut self, body: &[Inst]) -> Result<(), SimError> {
        for inst in body {
            self.run(inst)?;
        }
        Ok(())
    }

    /// Runs one instruction, numbered in program order, with the method of its family.
    fn run(&mut self, inst: &Inst) -> Result<(), SimError> {
        self.inst += 1;
        match inst {
            Inst::Load {
                dst,
                src,
                offsets,
                pad,
            } => self.run_load(*dst, *src, offsets, *pad),
            Inst::Store { dst, offsets, src } => self.run_store(*dst, offsets, *src),
            Inst::Move { dst, src } => self.run_move(*dst, *src),
            Inst::Extract { dst, src, offsets } => self.run_extract(*dst, *src, offsets),
            Inst::Full { dst, value } => self.run_full(*dst, *value),
            Inst::Iota { dst, axis, start } => self.run_iota(inst, *dst, *axis, start),
            Inst::Unary { dst, op, src } => self.run_unary(inst, *dst, *op, *src),
            Inst::Binary { dst, op, lhs, rhs } => self.run_binary(inst, *dst, *op, lhs, rhs),
            Inst::Compare { dst, op, lhs, rhs } => self.run_compare(*dst, *op, lhs, rhs),
            Inst::Select {
                dst,
                cond,
                on_true,
                on_false,
            } => self.run_select(*dst, *cond, on_true, on_false),
            Inst::Cast { dst, src } => self.run_cast(*dst, *src),
            Inst::Reduce { dst, op, src, axis } => self.run_reduce(inst, *dst, *op, *src, *axis),
            Inst::ArgReduce { dst, op, src, axis } => self.run_arg_reduce(*dst, *op, *src, *axis),
            Inst::TopK {
                values,
                indices,
                src,
                k,
            } => self.run_top_k(*values, *indices, *src, *k),
            Inst::Logic { dst, op, lhs, rhs } => self.run_logic(*dst, *op, *lhs, *rhs),
            Inst::Not { dst, src } => self.run_not(*dst, *src),
            Inst::Reshape { dst, src } => self.run_reshape(*dst, *src),
            Inst::Matmul {
                dst,
                a,
                b,
                acc,
                transpose_b,
            } => self.run_matmul(*dst, *a, *b, *acc, *transpose_b),
            Inst::Loop {
                var,
                count,
                init,
                params,
                body,
                yields,
                results,
            } => {
                let carried = self.run_loop(*var, *count, init, params, body, yields)?;
                for (result, value) in results.iter().zip(carried) {
                    self.bind(*result, value);
                }
                Ok(())
            }
        }
    }

    /// `count` iterations of `body`, `var` counting them from 0; the carried tiles `params`
    /// hold `init`'s values in the first iteration and the previous iteration's `yields`
    /// after. Returns the carried values after the last iteration (the loop's results).
    fn run_loop(
        &mut self,
        var: VarId,
        count: usize,
        init: &[TileId],
        params: &[TileId],
        body: &[Inst],
        yields: &[TileId],
    ) -> Result<Vec<Rc<Data>>, SimError> {
        let mut carried: Vec<_> = init.iter().map(|t| self.shared(*t)).collect();
        let first = self.inst;
        for iteration in 0..count {
            self.vars[var] = iteration as i64;
            for (param, value) in params.iter().zip(carried.drain(..)) {
                self.bind(*param, value);
            }
            // The body's instructions keep their numbers in every iteration.
            self.inst = first;
            self.run_body(body)?;
            carried = yields.iter().map(|t| self.shared(*t)).collect();
        }
        self.inst = first + Inst::count(body);
        Ok(carried)
    }
}
