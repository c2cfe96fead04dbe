//! The checker: walks a whole program, in order, tracking which tiles and loop variables
//! are defined and visible, and applies each instruction's type rule ([`super::typing`]) and
//! the index rules ([`super::index`]) where they occur.

use super::index::{check_index, index_range};
use super::rules::{MAX_LOOP_DEPTH, Rule, ValidationError, describe};
use super::typing::{
    Arg, arg_reduce, binary, byte_size, cast, check_tile, compare, extract, full, iota, load,
    logic, matmul, move_to, not, reduce, reshape, select, store, top_k, unary,
};
use super::work::{Work, WorkCulprit, block_work, inst_work};
use crate::ir::{
    GlobalDecl, GlobalId, IdVec, Index, Inst, Operand, Program, TileId, TileType, VarId,
};

/// Checks every rule of the tile language (see the module docs) on `program`, its work
/// against the process's [`work_budget`](super::work_budget).
///
/// # Errors
///
/// The first rule broken, located at its instruction.
pub fn validate(program: &Program) -> Result<(), ValidationError> {
    validate_within(program, super::work_budget()).map(|_| ())
}

/// Checks every rule of the tile language on `program`, its work against `budget`, and
/// gives its work (see [`work`](super::work)).
///
/// # Errors
///
/// The first rule broken, located at its instruction.
pub fn validate_within(program: &Program, budget: u64) -> Result<u64, ValidationError> {
    let program_error = |rule: Rule| ValidationError {
        op: program.op.clone(),
        path: Vec::new(),
        inst: None,
        rule: Box::new(rule),
    };
    if program.grid == 0 {
        return Err(program_error(Rule::EmptyGrid));
    }
    for (i, global) in program.globals.iter().enumerate() {
        if byte_size(&global.shape, global.dtype).is_none_or(|b| b > isize::MAX as u64) {
            return Err(program_error(Rule::GlobalTooLarge {
                global: i,
                name: global.name.clone(),
                dtype: global.dtype,
                shape: global.shape.clone(),
            }));
        }
    }
    let storage_only = program
        .globals
        .iter()
        .enumerate()
        .map(|(i, g)| (format!("global @{i} `{}`", g.name), g.dtype))
        .chain(
            program
                .tiles
                .iter()
                .enumerate()
                .map(|(i, t)| (format!("tile %{i}"), t.dtype)),
        )
        .find(|(_, dtype)| dtype.is_storage_only());
    if let Some((what, dtype)) = storage_only {
        return Err(program_error(Rule::StorageOnlyDType { what, dtype }));
    }
    // Counted without recursion, before `vars` sizes anything.
    let (mut loops, mut blocks) = (0usize, vec![program.body.as_slice()]);
    while let Some(block) = blocks.pop() {
        for inst in block {
            if let Inst::Loop { body, .. } = inst {
                loops += 1;
                blocks.push(body);
            }
        }
    }
    if program.vars as usize > loops {
        return Err(program_error(Rule::TooManyVars {
            vars: program.vars,
            loops,
        }));
    }
    let grid = i128::try_from(program.grid).unwrap_or(i128::MAX);
    let mut checker = Checker {
        program,
        defined: IdVec::filled(program.tiles.len(), false),
        visible: IdVec::filled(program.tiles.len(), false),
        var_defined: IdVec::filled(program.vars as usize, false),
        var_live: IdVec::filled(program.vars as usize, false),
        var_range: IdVec::filled(program.vars as usize, (0, 0)),
        pid_range: (0, grid.saturating_sub(1).min(i64::MAX as i128)),
        path: Vec::new(),
    };
    checker.block(&program.body)?;
    if let Some(id) = checker.defined.iter().position(|d| !d) {
        return Err(program_error(Rule::TileNeverDefined { tile: id as u32 }));
    }
    if let Some(var) = checker.var_defined.iter().position(|d| !d) {
        return Err(program_error(Rule::VarNeverDefined {
            var: var as u32,
            vars: program.vars,
        }));
    }
    // Last: the loops are known to nest within their limit.
    check_work(program, budget)
}

struct Checker<'p> {
    program: &'p Program,
    defined: IdVec<TileId, bool>,
    visible: IdVec<TileId, bool>,
    var_defined: IdVec<VarId, bool>,
    var_live: IdVec<VarId, bool>,
    /// The values each loop variable takes (its loop's `0..count`, as a closed range).
    var_range: IdVec<VarId, (i128, i128)>,
    /// The program ids, `0..grid` as a closed range.
    pid_range: (i128, i128),
    path: Vec<usize>,
}

impl<'p> Checker<'p> {
    /// Checks a block and returns the tiles it defined, so a loop can hide them after its
    /// body.
    fn block(&mut self, body: &'p [Inst]) -> Result<Vec<TileId>, ValidationError> {
        let mut defined = Vec::new();
        for (i, inst) in body.iter().enumerate() {
            self.path.push(i);
            self.inst(inst, &mut defined)
                .map_err(|failure| match failure {
                    Failure::Here(rule) => self.error(inst, rule),
                    Failure::Nested(error) => error,
                })?;
            self.path.pop();
        }
        Ok(defined)
    }

    fn error(&self, inst: &Inst, rule: Rule) -> ValidationError {
        ValidationError {
            op: self.program.op.clone(),
            path: self.path.clone(),
            inst: Some(describe(inst)),
            rule: Box::new(rule),
        }
    }

    fn tile(&self, id: TileId) -> Result<&'p TileType, Rule> {
        self.program.tile(id).ok_or(Rule::UndeclaredTile {
            tile: id,
            tiles: self.program.tiles.len(),
        })
    }

    fn use_tile(&self, id: TileId) -> Result<&'p TileType, Rule> {
        let ty = self.tile(id)?;
        if self.visible[id] {
            Ok(ty)
        } else if self.defined[id] {
            Err(Rule::NotVisible { tile: id })
        } else {
            Err(Rule::UsedBeforeDefined { tile: id })
        }
    }

    fn use_operand(&self, operand: &Operand) -> Result<Arg<'p>, Rule> {
        match operand {
            Operand::Tile(id) => self.use_tile(*id).map(Arg::Tile),
            Operand::Scalar(_) => Ok(Arg::Scalar),
        }
    }

    fn define(&mut self, id: TileId, defined: &mut Vec<TileId>) -> Result<&'p TileType, Rule> {
        let ty = self.tile(id)?;
        if self.defined[id] {
            return Err(Rule::DefinedTwice { tile: id });
        }
        check_tile(ty).map_err(|problem| Rule::BadTileType {
            tile: id,
            problem: Box::new(problem),
        })?;
        self.defined[id] = true;
        self.visible[id] = true;
        defined.push(id);
        Ok(ty)
    }

    /// Defines `dst` and checks that its declared type is the one the rule gives.
    fn define_as(
        &mut self,
        dst: TileId,
        expected: TileType,
        defined: &mut Vec<TileId>,
    ) -> Result<(), Rule> {
        let declared = self.define(dst, defined)?;
        if *declared != expected {
            return Err(Rule::DeclaredTypeDiffers {
                tile: dst,
                declared: declared.clone(),
                expected,
            });
        }
        Ok(())
    }

    fn global(&self, id: GlobalId) -> Result<&'p GlobalDecl, Rule> {
        self.program.global(id).ok_or(Rule::UndeclaredGlobal {
            global: id,
            globals: self.program.globals.len(),
        })
    }

    fn index(&self, index: &Index) -> Result<(), Rule> {
        check_index(index, &self.var_live)?;
        index_range(index, self.pid_range, &self.var_range).map(|_| ())
    }

    fn offsets(&self, offsets: &[Index]) -> Result<(), Rule> {
        offsets.iter().try_for_each(|o| self.index(o))
    }

    fn inst(&mut self, inst: &'p Inst, defined: &mut Vec<TileId>) -> Result<(), Failure> {
        match inst {
            Inst::Load {
                dst,
                src,
                offsets,
                pad: _,
            } => {
                let global = self.global(*src)?;
                self.offsets(offsets)?;
                let declared = self.tile(*dst)?;
                let expected = load(global, offsets.len(), &declared.shape, declared.level)?;
                Ok(self.define_as(*dst, expected, defined)?)
            }
            Inst::Store { dst, offsets, src } => {
                let global = self.global(*dst)?;
                self.offsets(offsets)?;
                let src = self.use_tile(*src)?;
                Ok(store(global, offsets.len(), src)?)
            }
            Inst::Full { dst, value: _ } => {
                let declared = self.tile(*dst)?;
                let expected = full(&declared.shape, declared.dtype);
                Ok(self.define_as(*dst, expected, defined)?)
            }
            Inst::Iota { dst, axis, start } => {
                self.index(start)?;
                let declared = self.tile(*dst)?;
                let expected = iota(&declared.shape, *axis, declared.dtype)?;
                Ok(self.define_as(*dst, expected, defined)?)
            }
            Inst::Unary { dst, op, src } => {
                let expected = unary(*op, self.use_tile(*src)?)?;
                Ok(self.define_as(*dst, expected, defined)?)
            }
            Inst::Binary { dst, op, lhs, rhs } => {
                let expected = binary(*op, self.use_operand(lhs)?, self.use_operand(rhs)?)?;
                Ok(self.define_as(*dst, expected, defined)?)
            }
            Inst::Compare { dst, op, lhs, rhs } => {
                let expected = compare(*op, self.use_operand(lhs)?, self.use_operand(rhs)?)?;
                Ok(self.define_as(*dst, expected, defined)?)
            }
            Inst::Select {
                dst,
                cond,
                on_true,
                on_false,
            } => {
                let expected = select(
                    self.use_tile(*cond)?,
                    self.use_operand(on_true)?,
                    self.use_operand(on_false)?,
                )?;
                Ok(self.define_as(*dst, expected, defined)?)
            }
            Inst::Cast { dst, src } => {
                let src = self.use_tile(*src)?;
                let expected = cast(src, self.tile(*dst)?.dtype)?;
                Ok(self.define_as(*dst, expected, defined)?)
            }
            Inst::Reduce { dst, op, src, axis } => {
                let expected = reduce(*op, self.use_tile(*src)?, *axis)?;
                Ok(self.define_as(*dst, expected, defined)?)
            }
            Inst::ArgReduce { dst, op, src, axis } => {
                let expected = arg_reduce(*op, self.use_tile(*src)?, *axis)?;
                Ok(self.define_as(*dst, expected, defined)?)
            }
            Inst::Logic { dst, op, lhs, rhs } => {
                let expected = logic(*op, self.use_tile(*lhs)?, self.use_tile(*rhs)?)?;
                Ok(self.define_as(*dst, expected, defined)?)
            }
            Inst::Not { dst, src } => {
                let expected = not(self.use_tile(*src)?)?;
                Ok(self.define_as(*dst, expected, defined)?)
            }
            Inst::TopK {
                values,
                indices,
                src,
                k,
            } => {
                let (value_ty, index_ty) = top_k(self.use_tile(*src)?, *k)?;
                self.define_as(*values, value_ty, defined)?;
                Ok(self.define_as(*indices, index_ty, defined)?)
            }
            Inst::Reshape { dst, src } => {
                let src = self.use_tile(*src)?;
                let expected = reshape(src, &self.tile(*dst)?.shape)?;
                Ok(self.define_as(*dst, expected, defined)?)
            }
            Inst::Move { dst, src } => {
                let src = self.use_tile(*src)?;
                let declared = self.tile(*dst)?;
                let expected = move_to(src, declared.level, declared.dtype)?;
                Ok(self.define_as(*dst, expected, defined)?)
            }
            Inst::Extract { dst, src, offsets } => {
                let src = self.use_tile(*src)?;
                let declared = self.tile(*dst)?;
                let expected = extract(src, declared, offsets)?;
                Ok(self.define_as(*dst, expected, defined)?)
            }
            Inst::Matmul {
                dst,
                a,
                b,
                acc,
                transpose_b,
            } => {
                let acc = acc.map(|acc| self.use_tile(acc)).transpose()?;
                let expected = matmul(self.use_tile(*a)?, self.use_tile(*b)?, acc, *transpose_b)?;
                Ok(self.define_as(*dst, expected, defined)?)
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
                // `path` holds one index per enclosing block: this loop's depth.
                let depth = self.path.len();
                if depth > MAX_LOOP_DEPTH {
                    return Err(Failure::Here(Rule::LoopTooDeep { depth }));
                }
                if let Some(range) = self.var_range.get_mut(*var) {
                    let last = i128::try_from(*count)
                        .unwrap_or(i128::MAX)
                        .saturating_sub(1);
                    *range = (0, last.clamp(0, i64::MAX as i128));
                }
                self.loop_inst(*var, [init, params, yields, results], body, defined)
            }
        }
    }

    /// Checks a loop: `lists` are its init, params, yields and results.
    fn loop_inst(
        &mut self,
        var: VarId,
        lists: [&[TileId]; 4],
        body: &'p [Inst],
        defined: &mut Vec<TileId>,
    ) -> Result<(), Failure> {
        let [init, params, yields, results] = lists;
        let arity = init.len();
        if params.len() != arity || yields.len() != arity || results.len() != arity {
            return Err(Failure::Here(Rule::LoopArity {
                init: init.len(),
                params: params.len(),
                yields: yields.len(),
                results: results.len(),
            }));
        }
        match self.var_defined.get(var) {
            None => Err(Rule::UndeclaredLoopVar {
                var,
                vars: self.program.vars,
            })?,
            Some(true) => Err(Rule::LoopVarDefinedTwice { var })?,
            Some(false) => {}
        }
        let init_types = init
            .iter()
            .map(|t| self.use_tile(*t))
            .collect::<Result<Vec<_>, _>>()?;
        let mut scope = Vec::new();
        for (param, init_ty) in params.iter().zip(&init_types) {
            let ty = self.define(*param, &mut scope)?;
            if ty != *init_ty {
                Err(Rule::CarriedTypeDiffers {
                    param: *param,
                    ty: ty.clone(),
                    init: (*init_ty).clone(),
                })?;
            }
        }
        self.var_defined[var] = true;
        self.var_live[var] = true;
        scope.extend(self.block(body).map_err(Failure::Nested)?);
        for (yielded, init_ty) in yields.iter().zip(&init_types) {
            let ty = self.use_tile(*yielded)?;
            if ty != *init_ty {
                Err(Rule::YieldTypeDiffers {
                    tile: *yielded,
                    ty: ty.clone(),
                    carried: (*init_ty).clone(),
                })?;
            }
        }
        for id in scope {
            self.visible[id] = false;
        }
        self.var_live[var] = false;
        for (result, init_ty) in results.iter().zip(&init_types) {
            let ty = self.define(*result, defined)?;
            if ty != *init_ty {
                Err(Rule::ResultTypeDiffers {
                    tile: *result,
                    ty: ty.clone(),
                    carried: (*init_ty).clone(),
                })?;
            }
        }
        Ok(())
    }
}

/// Why an instruction failed: a message about it, or an error already located deeper (in a
/// loop body).
enum Failure {
    Here(Rule),
    Nested(ValidationError),
}

impl From<Rule> for Failure {
    fn from(rule: Rule) -> Failure {
        Failure::Here(rule)
    }
}

/// The work of `program` over its whole grid, when it is within `budget`.
///
/// # Errors
///
/// [`Rule::WorkOverBudget`], at the loop whose own work is over the budget (the innermost
/// one), else for the program as a whole, naming the grid.
fn check_work(program: &Program, budget: u64) -> Result<u64, ValidationError> {
    // A block program costs 1 besides its instructions (the simulator starts each one), so a
    // huge grid of empty programs is over the budget too.
    let per_program = Work(block_work(&program.body).0.and_then(|w| w.checked_add(1)));
    let grid = Work(u64::try_from(program.grid).ok());
    let total = grid.times(per_program);
    if let Some(work) = total.0.filter(|work| *work <= budget) {
        return Ok(work);
    }
    // Descend into the loop that weighs most while its own work is over the budget.
    let (mut body, mut runs) = (program.body.as_slice(), grid);
    let (mut path, mut at, mut work) = (Vec::new(), None, total);
    let mut culprit = WorkCulprit::Grid {
        grid: program.grid,
        per_program,
    };
    while let Some((i, inst, loop_work)) = body
        .iter()
        .enumerate()
        .map(|(i, inst)| (i, inst, runs.times(inst_work(inst))))
        .filter(|(_, inst, loop_work)| matches!(inst, Inst::Loop { .. }) && loop_work.over(budget))
        .max_by_key(|(_, _, loop_work)| loop_work.key())
    {
        let Inst::Loop {
            var,
            count,
            body: inner,
            ..
        } = inst
        else {
            unreachable!("only loops are kept");
        };
        path.push(i);
        (at, work) = (Some(inst), loop_work);
        culprit = WorkCulprit::Loop {
            var: *var,
            count: *count,
            per_iteration: Work(block_work(inner).0.and_then(|w| w.checked_add(1))),
            runs,
        };
        runs = runs.times(Work(u64::try_from(*count).ok()));
        body = inner;
    }
    Err(ValidationError {
        op: program.op.clone(),
        path,
        inst: at.map(describe),
        rule: Box::new(Rule::WorkOverBudget {
            culprit,
            work,
            budget,
        }),
    })
}
