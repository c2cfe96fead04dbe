//! Validation of kernel programs: the typing rules of the tile language.
//!
//! [`validate`] checks a whole [`Program`]; the builder applies the same per-instruction
//! rules (the `pub(crate)` functions below) while it traces, so a kernel author sees an
//! error at the call that broke a rule, and a hand-edited text kernel is held to exactly
//! the same rules when it is parsed.
//!
//! The rules:
//! - every tile is defined by exactly one instruction, before it is used; tiles defined in a
//!   loop body (and the loop's params) are not visible after the loop, only its `results`;
//!   every tile in [`Program::tiles`] is defined and every loop variable `0..vars` is
//!   defined by exactly one loop, and is used only inside it;
//! - loads go from GM to UB or L1, with the global's dtype and rank; stores go from UB or
//!   L0C to an output global of the same dtype and rank; offsets have the global's rank;
//! - vector instructions (`full`, `iota`, `unary`, `binary`, `compare`, `select`, `cast`,
//!   `reduce`) read and write UB; element-wise operands have one dtype and shapes that
//!   broadcast (numpy rules) to the result's shape; transcendental functions and `mean`
//!   need a float dtype; arithmetic is not defined on bool;
//! - moves: L1 -> L0A, L1 -> L0B, UB -> L1, L0C -> UB (may convert to a float dtype),
//!   L0C -> L1, with the same shape;
//! - matmul: `a` f16/bf16/f32 `[m, k]` in L0A, `b` of the same dtype `[k, n]` (`[n, k]`
//!   when `transpose_b`) in L0B, result and accumulator f32 `[m, n]` in L0C;
//! - L0A/L0B/L0C tiles are rank 2 with dims that are multiples of 16 (the cube fractal);
//! - every tile has dims of at least 1; index divisions by the constant 0 are errors (a
//!   symbolic divisor is allowed; where it is 0, [`Index::eval`] gives 0).

use core::fmt;

use crate::dtype::DType;
use crate::error::OpError;

use super::ir::{
    BinaryOp, CmpOp, GlobalDecl, GlobalId, GlobalRole, Index, Inst, MemLevel, Operand, Program,
    ReduceOp, TileId, TileType, UnaryOp, VarId,
};

/// The side of a cube fractal: L0 tiles have dims that are multiples of it.
pub const CUBE_FRACTAL: usize = 16;

/// A program that breaks a rule of the tile language.
///
/// ```
/// use pto_op::kernel::ir::{Program, Inst, TileId};
/// use pto_op::kernel::validate::validate;
/// let program = Program {
///     op: "doc.bad".into(), grid: 1, globals: vec![], tiles: vec![], vars: 0,
///     body: vec![Inst::Cast { dst: TileId(0), src: TileId(1) }],
/// };
/// let err = validate(&program).unwrap_err();
/// assert_eq!(err.to_string(), "op `doc.bad`: inst 0 (cast): %1 has no type (the program has 0 tiles)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("op `{op}`: {}{message}", Location { path, inst: inst.as_deref() })]
pub struct ValidationError {
    /// The op the program belongs to.
    pub op: String,
    /// Where the instruction is: its index in the program body, then in each enclosing
    /// loop's body (`[3, 2]` is printed `inst 3.2`). Empty for the program as a whole.
    pub path: Vec<usize>,
    /// The instruction, as described in messages (`binary add`, `matmul`).
    pub inst: Option<String>,
    /// What is wrong.
    pub message: String,
}

struct Location<'a> {
    path: &'a [usize],
    inst: Option<&'a str>,
}

impl fmt::Display for Location<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            return Ok(());
        }
        f.write_str("inst ")?;
        for (i, step) in self.path.iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            write!(f, "{step}")?;
        }
        match self.inst {
            Some(inst) => write!(f, " ({inst}): "),
            None => f.write_str(": "),
        }
    }
}

impl From<ValidationError> for OpError {
    fn from(e: ValidationError) -> OpError {
        let location = Location {
            path: &e.path,
            inst: e.inst.as_deref(),
        }
        .to_string();
        OpError::Invalid {
            op: Some(e.op),
            input: None,
            message: format!("{location}{}", e.message),
        }
    }
}

/// How an instruction is named in messages: the mnemonic, with the function for the
/// families that have one (`binary add`, `reduce mean`).
pub fn describe(inst: &Inst) -> String {
    match inst {
        Inst::Unary { op, .. } => format!("unary {}", op.name()),
        Inst::Binary { op, .. } => format!("binary {}", op.name()),
        Inst::Compare { op, .. } => format!("compare {}", op.name()),
        Inst::Reduce { op, .. } => format!("reduce {}", op.name()),
        other => other.mnemonic().to_owned(),
    }
}

/// A [`Program`] that follows every rule of the tile language: only [`Program::validate`]
/// (and what calls it: tracing, [`parse`](super::text::parse), deserializing) makes one, so
/// code that takes it need not check again that tiles are declared and defined before
/// use, that operands have the types their instructions need, or that the grid is not
/// empty. Read it as a [`Program`] (it derefs to one); [`ValidProgram::into_program`]
/// gives the program back for editing, which then needs validating again.
///
/// It serializes as the program it holds and deserializes only from a valid one; it prints
/// as the program's text form.
///
/// ```
/// use pto_op::kernel::ir::Program;
/// let program = Program {
///     op: "doc.empty".into(), grid: 1, globals: vec![], tiles: vec![], vars: 0, body: vec![],
/// };
/// let valid = program.clone().validate().unwrap();
/// assert_eq!(valid.grid, 1);
/// assert_eq!(*valid, program);
/// let json = serde_json::to_string(&valid).unwrap();
/// assert!(serde_json::from_str::<pto_op::kernel::ValidProgram>(&json.replace("\"grid\":1", "\"grid\":0")).is_err());
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(transparent)]
pub struct ValidProgram(Program);

impl ValidProgram {
    /// The program.
    pub fn program(&self) -> &Program {
        &self.0
    }

    /// The program, for editing; validate it again to get a `ValidProgram` back.
    pub fn into_program(self) -> Program {
        self.0
    }

    /// The type of tile `id`, which a valid program declares for every tile its
    /// instructions name.
    ///
    /// # Panics
    ///
    /// When `id` is not a tile of this program (a tile of another program).
    pub fn tile_type(&self, id: TileId) -> &TileType {
        &self.0.tiles[id.0 as usize]
    }
}

impl core::ops::Deref for ValidProgram {
    type Target = Program;

    fn deref(&self) -> &Program {
        &self.0
    }
}

impl AsRef<Program> for ValidProgram {
    fn as_ref(&self) -> &Program {
        &self.0
    }
}

impl From<ValidProgram> for Program {
    fn from(valid: ValidProgram) -> Program {
        valid.0
    }
}

impl TryFrom<Program> for ValidProgram {
    type Error = ValidationError;

    fn try_from(program: Program) -> Result<ValidProgram, ValidationError> {
        program.validate()
    }
}

impl PartialEq<Program> for ValidProgram {
    fn eq(&self, other: &Program) -> bool {
        self.0 == *other
    }
}

impl PartialEq<ValidProgram> for Program {
    fn eq(&self, other: &ValidProgram) -> bool {
        *self == other.0
    }
}

impl fmt::Display for ValidProgram {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<'de> serde::Deserialize<'de> for ValidProgram {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Program::deserialize(deserializer)?
            .validate()
            .map_err(serde::de::Error::custom)
    }
}

impl Program {
    /// Checks every rule of the tile language (see [the module docs](self)) and gives the
    /// program as a [`ValidProgram`].
    ///
    /// # Errors
    ///
    /// The first rule broken, located at its instruction.
    pub fn validate(self) -> Result<ValidProgram, ValidationError> {
        validate(&self)?;
        Ok(ValidProgram(self))
    }
}

/// Checks every rule of the tile language (see the module docs) on `program`.
pub fn validate(program: &Program) -> Result<(), ValidationError> {
    let program_error = |message: String| ValidationError {
        op: program.op.clone(),
        path: Vec::new(),
        inst: None,
        message,
    };
    if program.grid == 0 {
        return Err(program_error(
            "grid 0: a kernel needs at least one block program".to_owned(),
        ));
    }
    let mut checker = Checker {
        program,
        defined: vec![false; program.tiles.len()],
        visible: vec![false; program.tiles.len()],
        var_defined: vec![false; program.vars as usize],
        var_live: vec![false; program.vars as usize],
        path: Vec::new(),
    };
    checker.block(&program.body)?;
    if let Some(id) = checker.defined.iter().position(|d| !d) {
        return Err(program_error(format!(
            "tile %{id} has a type but no instruction defines it"
        )));
    }
    if let Some(var) = checker.var_defined.iter().position(|d| !d) {
        return Err(program_error(format!(
            "loop variable i{var} is declared (vars = {}) but no loop defines it",
            program.vars
        )));
    }
    Ok(())
}

struct Checker<'p> {
    program: &'p Program,
    defined: Vec<bool>,
    visible: Vec<bool>,
    var_defined: Vec<bool>,
    var_live: Vec<bool>,
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
                    Failure::Here(message) => self.error(inst, message),
                    Failure::Nested(error) => error,
                })?;
            self.path.pop();
        }
        Ok(defined)
    }

    fn error(&self, inst: &Inst, message: String) -> ValidationError {
        ValidationError {
            op: self.program.op.clone(),
            path: self.path.clone(),
            inst: Some(describe(inst)),
            message,
        }
    }

    fn tile(&self, id: TileId) -> Result<&'p TileType, String> {
        self.program.tile(id).ok_or_else(|| {
            format!(
                "{id} has no type (the program has {} tiles)",
                self.program.tiles.len()
            )
        })
    }

    fn use_tile(&self, id: TileId) -> Result<&'p TileType, String> {
        let ty = self.tile(id)?;
        let i = id.0 as usize;
        if self.visible[i] {
            Ok(ty)
        } else if self.defined[i] {
            Err(format!(
                "{id} is not visible here: it was defined in a loop body that has ended \
                 (use the loop's results)"
            ))
        } else {
            Err(format!("{id} is used before it is defined"))
        }
    }

    fn use_operand(&self, operand: &Operand) -> Result<Arg<'p>, String> {
        match operand {
            Operand::Tile(id) => self.use_tile(*id).map(Arg::Tile),
            Operand::Scalar(_) => Ok(Arg::Scalar),
        }
    }

    fn define(&mut self, id: TileId, defined: &mut Vec<TileId>) -> Result<&'p TileType, String> {
        let ty = self.tile(id)?;
        let i = id.0 as usize;
        if self.defined[i] {
            return Err(format!("{id} is defined twice"));
        }
        check_tile(ty).map_err(|e| format!("tile {id} {e}"))?;
        self.defined[i] = true;
        self.visible[i] = true;
        defined.push(id);
        Ok(ty)
    }

    /// Defines `dst` and checks that its declared type is the one the rule gives.
    fn define_as(
        &mut self,
        dst: TileId,
        expected: TileType,
        defined: &mut Vec<TileId>,
    ) -> Result<(), String> {
        let declared = self.define(dst, defined)?;
        if *declared != expected {
            return Err(format!(
                "{dst} is declared {declared}, but the instruction gives {expected}"
            ));
        }
        Ok(())
    }

    fn global(&self, id: GlobalId) -> Result<&'p GlobalDecl, String> {
        self.program.global(id).ok_or_else(|| {
            format!(
                "global {id} does not exist (the program has {} globals)",
                self.program.globals.len()
            )
        })
    }

    fn index(&self, index: &Index) -> Result<(), String> {
        check_index(index, &self.var_live)
    }

    fn offsets(&self, offsets: &[Index]) -> Result<(), String> {
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
            Inst::Move { dst, src } => {
                let src = self.use_tile(*src)?;
                let declared = self.tile(*dst)?;
                let expected = move_to(src, declared.level, declared.dtype)?;
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
                count: _,
                init,
                params,
                body,
                yields,
                results,
            } => self.loop_inst(*var, [init, params, yields, results], body, defined),
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
            return Err(Failure::Here(format!(
                "init, params, yields and results must have one entry per carried tile, \
                 got {}, {}, {} and {}",
                init.len(),
                params.len(),
                yields.len(),
                results.len()
            )));
        }
        let v = var.0 as usize;
        match self.var_defined.get(v) {
            None => Err(format!(
                "loop variable {var} does not exist (vars = {})",
                self.program.vars
            ))?,
            Some(true) => Err(format!("loop variable {var} is defined twice"))?,
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
                Err(format!(
                    "carried tile {param} is {ty}, but its initial value is {init_ty}"
                ))?;
            }
        }
        self.var_defined[v] = true;
        self.var_live[v] = true;
        scope.extend(self.block(body).map_err(Failure::Nested)?);
        for (yielded, init_ty) in yields.iter().zip(&init_types) {
            let ty = self.use_tile(*yielded)?;
            if ty != *init_ty {
                Err(format!(
                    "yield {yielded} is {ty}, but the carried tile's type is {init_ty}"
                ))?;
            }
        }
        for id in scope {
            self.visible[id.0 as usize] = false;
        }
        self.var_live[v] = false;
        for (result, init_ty) in results.iter().zip(&init_types) {
            let ty = self.define(*result, defined)?;
            if ty != *init_ty {
                Err(format!(
                    "result {result} is {ty}, but the carried tile's type is {init_ty}"
                ))?;
            }
        }
        Ok(())
    }
}

/// Why an instruction failed: a message about it, or an error already located deeper (in a
/// loop body).
enum Failure {
    Here(String),
    Nested(ValidationError),
}

impl From<String> for Failure {
    fn from(message: String) -> Failure {
        Failure::Here(message)
    }
}

// The typing rules, one per instruction: the result type for the operand types, or what is
// wrong. Messages do not name the instruction; the caller (builder or checker) does.

/// The type of an operand of an element-wise instruction.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Arg<'a> {
    Tile(&'a TileType),
    Scalar,
}

/// Checks that an index uses only the loop variables live here (`live[v]`) and does not
/// divide by the constant 0.
pub(crate) fn check_index(index: &Index, live: &[bool]) -> Result<(), String> {
    match index {
        Index::Const(_) | Index::ProgramId => Ok(()),
        Index::Var(v) => match live.get(v.0 as usize) {
            Some(true) => Ok(()),
            Some(false) => Err(format!("loop variable {v} is used outside its loop")),
            None => Err(format!(
                "loop variable {v} does not exist (there are {})",
                live.len()
            )),
        },
        Index::Div(_, b) | Index::Rem(_, b) if **b == Index::Const(0) => {
            Err("an index divides by the constant 0".to_owned())
        }
        Index::Add(a, b)
        | Index::Sub(a, b)
        | Index::Mul(a, b)
        | Index::Div(a, b)
        | Index::Rem(a, b)
        | Index::Min(a, b)
        | Index::Max(a, b) => {
            check_index(a, live)?;
            check_index(b, live)
        }
    }
}

/// Checks a tile type on its own: non-empty dims, an on-core level, cube-fractal shapes in
/// L0A/L0B/L0C.
pub(crate) fn check_tile(ty: &TileType) -> Result<(), String> {
    if ty.level == MemLevel::Gm {
        return Err(format!("{ty}: tiles live on core, not in gm"));
    }
    if ty.shape.contains(&0) {
        return Err(format!("{ty}: every dim must be at least 1"));
    }
    if matches!(ty.level, MemLevel::L0A | MemLevel::L0B | MemLevel::L0C) {
        if ty.shape.len() != 2 {
            return Err(format!(
                "{ty}: cube tiles ({}) are rank 2, got rank {}",
                ty.level,
                ty.shape.len()
            ));
        }
        if ty.shape.iter().any(|d| d % CUBE_FRACTAL != 0) {
            return Err(format!(
                "{ty}: dims {:?} must be multiples of {CUBE_FRACTAL} in {} \
                 (the cube works on {CUBE_FRACTAL}x{CUBE_FRACTAL} fractals)",
                ty.shape, ty.level
            ));
        }
    }
    Ok(())
}

/// numpy broadcasting of two shapes.
pub(crate) fn broadcast(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let rank = a.len().max(b.len());
    let dim = |s: &[usize], i: usize| (i + s.len()).checked_sub(rank).map_or(1, |j| s[j]);
    (0..rank)
        .map(|i| match (dim(a, i), dim(b, i)) {
            (x, y) if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect()
}

fn list_types(types: &[&TileType]) -> String {
    match types {
        [] => String::new(),
        [only] => only.to_string(),
        [init @ .., last] => {
            let init: Vec<String> = init.iter().map(|t| t.to_string()).collect();
            format!("{} and {last}", init.join(", "))
        }
    }
}

/// The common shape and dtype of element-wise operands (at least one a tile, all in UB).
fn elementwise(args: &[Arg<'_>]) -> Result<(Vec<usize>, DType), String> {
    let tiles: Vec<&TileType> = args
        .iter()
        .filter_map(|a| match a {
            Arg::Tile(t) => Some(*t),
            Arg::Scalar => None,
        })
        .collect();
    let Some(first) = tiles.first() else {
        return Err("needs at least one tile operand to give the result its type".to_owned());
    };
    if let Some(t) = tiles.iter().find(|t| t.level != MemLevel::Ub) {
        return Err(format!(
            "operand {t} is in {}, but the vector unit works on ub",
            t.level
        ));
    }
    if tiles.iter().any(|t| t.dtype != first.dtype) {
        return Err(format!(
            "dtypes {} differ: cast an operand with `.cast(..)` first",
            list_types(&tiles)
        ));
    }
    let mut shape = first.shape.clone();
    for t in &tiles[1..] {
        shape = broadcast(&shape, &t.shape)
            .ok_or_else(|| format!("shapes {} do not broadcast", list_types(&tiles)))?;
    }
    Ok((shape, first.dtype))
}

fn ub(shape: Vec<usize>, dtype: DType) -> TileType {
    TileType {
        shape,
        dtype,
        level: MemLevel::Ub,
    }
}

/// Whether a unary function is only defined on floats.
fn float_only(op: UnaryOp) -> bool {
    !matches!(
        op,
        UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Square | UnaryOp::Relu
    )
}

fn expect_ub(ty: &TileType) -> Result<(), String> {
    if ty.level == MemLevel::Ub {
        Ok(())
    } else {
        Err(format!(
            "operand {ty} is in {}, but the vector unit works on ub",
            ty.level
        ))
    }
}

fn expect_numeric(ty: &TileType, what: &str) -> Result<(), String> {
    if ty.dtype == DType::Bool {
        Err(format!("{what} is not defined on bool ({ty})"))
    } else {
        Ok(())
    }
}

pub(crate) fn load(
    global: &GlobalDecl,
    offsets: usize,
    shape: &[usize],
    level: MemLevel,
) -> Result<TileType, String> {
    if !matches!(level, MemLevel::Ub | MemLevel::L1) {
        return Err(format!("loads go to ub or l1, not {level}"));
    }
    let rank = global.shape.len();
    if offsets != rank || shape.len() != rank {
        return Err(format!(
            "global `{}` has rank {rank}, but the load has {offsets} offsets and a rank {} tile",
            global.name,
            shape.len()
        ));
    }
    Ok(TileType {
        shape: shape.to_vec(),
        dtype: global.dtype,
        level,
    })
}

pub(crate) fn store(global: &GlobalDecl, offsets: usize, src: &TileType) -> Result<(), String> {
    if global.role != GlobalRole::Output {
        return Err(format!(
            "global `{}` is an input; stores write outputs only",
            global.name
        ));
    }
    if !matches!(src.level, MemLevel::Ub | MemLevel::L0C) {
        return Err(format!(
            "stores read ub or l0c, but the tile {src} is in {}",
            src.level
        ));
    }
    if src.dtype != global.dtype {
        return Err(format!(
            "output `{}` is {}, but the tile is {src}: cast the tile to {} first",
            global.name, global.dtype, global.dtype
        ));
    }
    let rank = global.shape.len();
    if offsets != rank || src.shape.len() != rank {
        return Err(format!(
            "output `{}` has rank {rank}, but the store has {offsets} offsets and the tile {src}",
            global.name
        ));
    }
    Ok(())
}

pub(crate) fn full(shape: &[usize], dtype: DType) -> TileType {
    ub(shape.to_vec(), dtype)
}

pub(crate) fn iota(shape: &[usize], axis: usize, dtype: DType) -> Result<TileType, String> {
    if axis >= shape.len() {
        return Err(format!(
            "axis {axis} is out of range for shape {shape:?} of rank {}",
            shape.len()
        ));
    }
    if dtype == DType::Bool {
        return Err("iota counts in an integer or float dtype, not bool".to_owned());
    }
    Ok(ub(shape.to_vec(), dtype))
}

pub(crate) fn unary(op: UnaryOp, src: &TileType) -> Result<TileType, String> {
    expect_ub(src)?;
    expect_numeric(src, op.name())?;
    if float_only(op) && !src.dtype.is_float() {
        return Err(format!(
            "{} needs a float dtype, got {src}: cast with `.cast(DType::F32)` first",
            op.name()
        ));
    }
    Ok(src.clone())
}

pub(crate) fn binary(op: BinaryOp, lhs: Arg<'_>, rhs: Arg<'_>) -> Result<TileType, String> {
    let (shape, dtype) = elementwise(&[lhs, rhs])?;
    if dtype == DType::Bool {
        return Err(format!("{} is not defined on bool tiles", op.name()));
    }
    Ok(ub(shape, dtype))
}

pub(crate) fn compare(_op: CmpOp, lhs: Arg<'_>, rhs: Arg<'_>) -> Result<TileType, String> {
    let (shape, _) = elementwise(&[lhs, rhs])?;
    Ok(ub(shape, DType::Bool))
}

pub(crate) fn select(
    cond: &TileType,
    on_true: Arg<'_>,
    on_false: Arg<'_>,
) -> Result<TileType, String> {
    expect_ub(cond)?;
    if cond.dtype != DType::Bool {
        return Err(format!("the condition must be a bool tile, got {cond}"));
    }
    let (shape, dtype) = elementwise(&[on_true, on_false])?;
    let shape = broadcast(&cond.shape, &shape).ok_or_else(|| {
        format!("the condition {cond} does not broadcast with the values' shape {shape:?}")
    })?;
    Ok(ub(shape, dtype))
}

pub(crate) fn cast(src: &TileType, dtype: DType) -> Result<TileType, String> {
    expect_ub(src)?;
    Ok(ub(src.shape.clone(), dtype))
}

pub(crate) fn reduce(op: ReduceOp, src: &TileType, axis: usize) -> Result<TileType, String> {
    expect_ub(src)?;
    expect_numeric(src, op.name())?;
    if axis >= src.shape.len() {
        return Err(format!(
            "axis {axis} is out of range for {src} of rank {}",
            src.shape.len()
        ));
    }
    if op == ReduceOp::Mean && !src.dtype.is_float() {
        return Err(format!(
            "mean needs a float dtype, got {src}: cast with `.cast(DType::F32)` first"
        ));
    }
    let mut shape = src.shape.clone();
    shape[axis] = 1;
    Ok(ub(shape, src.dtype))
}

pub(crate) fn move_to(src: &TileType, level: MemLevel, dtype: DType) -> Result<TileType, String> {
    use MemLevel::{L0A, L0B, L0C, L1, Ub};
    let allowed = matches!(
        (src.level, level),
        (L1, L0A) | (L1, L0B) | (Ub, L1) | (L0C, Ub) | (L0C, L1)
    );
    if !allowed {
        return Err(format!(
            "cannot move {src} to {level}: moves go l1 -> l0a, l1 -> l0b, ub -> l1, \
             l0c -> ub and l0c -> l1"
        ));
    }
    let converts = (src.level, level) == (L0C, Ub);
    if dtype != src.dtype && !(converts && dtype.is_float()) {
        return Err(format!(
            "cannot convert {src} to {dtype} while moving to {level}: only l0c -> ub \
             converts, to a float dtype"
        ));
    }
    Ok(TileType {
        shape: src.shape.clone(),
        dtype,
        level,
    })
}

pub(crate) fn matmul(
    a: &TileType,
    b: &TileType,
    acc: Option<&TileType>,
    transpose_b: bool,
) -> Result<TileType, String> {
    if a.level != MemLevel::L0A || b.level != MemLevel::L0B {
        return Err(format!("a must be in l0a and b in l0b, got {a} and {b}"));
    }
    if !matches!(a.dtype, DType::F16 | DType::BF16 | DType::F32) || a.dtype != b.dtype {
        return Err(format!(
            "a and b must have the same dtype, f16, bf16 or f32, got {a} and {b}"
        ));
    }
    let (&[m, k], &[b0, b1]) = (a.shape.as_slice(), b.shape.as_slice()) else {
        return Err(format!("a and b must be rank 2, got {a} and {b}"));
    };
    let (bk, n) = if transpose_b { (b1, b0) } else { (b0, b1) };
    if k != bk {
        let layout = if transpose_b { "[n, k]" } else { "[k, n]" };
        return Err(format!(
            "shapes {a} and {b} do not multiply: a is [m, k] and b is {layout}, \
             but a has k = {k} and b has k = {bk}"
        ));
    }
    let result = TileType {
        shape: vec![m, n],
        dtype: DType::F32,
        level: MemLevel::L0C,
    };
    if let Some(acc) = acc
        && *acc != result
    {
        return Err(format!("the accumulator must be {result}, got {acc}"));
    }
    Ok(result)
}
