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
//!   broadcast (numpy rules) to the result's shape; transcendental functions (also sin,
//!   cos, erf, exp2, log2), `floor`, `ceil`, `pow` and `mean` need a float dtype; `rem`
//!   and `mod` take integers and floats; arithmetic is not defined on bool;
//! - moves: L1 -> L0A, L1 -> L0B, UB -> L1, L0C -> UB (may convert to a float dtype),
//!   L0C -> L1, with the same shape;
//! - matmul: `a` f16/bf16/f32 `[m, k]` in L0A, `b` of the same dtype `[k, n]` (`[n, k]`
//!   when `transpose_b`) in L0B, result and accumulator f32 `[m, n]` in L0C;
//! - L0A/L0B/L0C tiles are rank 2 with dims that are multiples of 16 (the cube fractal);
//! - every tile has dims of at least 1; index divisions by the constant 0 are errors (a
//!   symbolic divisor is allowed; where it is 0, [`Index::eval`] gives 0);
//! - limits that keep hostile programs from crashing the tools: loops nest at most
//!   [`MAX_LOOP_DEPTH`] deep, index expressions at most [`MAX_INDEX_DEPTH`] deep, no index
//!   can overflow an `i64` for any program id in `0..grid` and loop-variable values in
//!   `0..count` (checked with interval arithmetic), a tile holds at most [`MAX_TILE_BYTES`]
//!   and a global's byte size fits in an `isize`; `vars` is at most the number of loops.

use core::fmt;

use crate::dtype::DType;
use crate::error::OpError;

use super::ir::{
    BinaryOp, CmpOp, GlobalDecl, GlobalId, GlobalRole, Index, Inst, MemLevel, Operand, Program,
    ReduceOp, TileId, TileType, UnaryOp, VarId,
};

/// The side of a cube fractal: L0 tiles have dims that are multiples of it.
pub const CUBE_FRACTAL: usize = 16;

/// How deep loops may nest (real kernels nest a handful; the limit keeps every recursive
/// pass over a program within its stack).
pub const MAX_LOOP_DEPTH: usize = 16;

/// How deep an index expression may nest, counting each operation and parenthesis (a flat
/// sum of `n` terms is `n - 1` deep).
pub const MAX_INDEX_DEPTH: usize = 64;

/// The largest tile, in bytes: far above any on-core buffer, small enough that its size
/// arithmetic cannot overflow.
pub const MAX_TILE_BYTES: u64 = 1 << 32;

/// A program that breaks a rule of the tile language.
///
/// ```
/// use pto_kernel::ir::{Program, Inst, TileId};
/// use pto_kernel::validate::validate;
/// let program = Program {
///     op: "doc.bad".into(), grid: 1, globals: vec![], tiles: vec![], vars: 0,
///     body: vec![Inst::Cast { dst: TileId(0), src: TileId(1) }],
/// };
/// let err = validate(&program).unwrap_err();
/// assert_eq!(err.to_string(), "op `doc.bad`: inst 0 (cast): %1 has no type (the program has 0 tiles)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("op `{op}`: {}{rule}", Location { path, inst: inst.as_deref() })]
pub struct ValidationError {
    /// The op the program belongs to.
    pub op: String,
    /// Where the instruction is: its index in the program body, then in each enclosing
    /// loop's body (`[3, 2]` is printed `inst 3.2`). Empty for the program as a whole.
    pub path: Vec<usize>,
    /// The instruction, as described in messages (`binary add`, `matmul`).
    pub inst: Option<String>,
    /// The rule broken.
    pub rule: Box<Rule>,
}

/// A broken rule of the tile language: one variant per rule, with the values that broke
/// it. Its `Display` is the message (which does not name the instruction: a
/// [`ValidationError`] or the tracing builder adds where it happened).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Rule {
    /// The grid is empty.
    #[error("grid 0: a kernel needs at least one block program")]
    EmptyGrid,
    /// A tile in [`Program::tiles`] that no instruction defines.
    #[error("tile %{tile} has a type but no instruction defines it")]
    TileNeverDefined {
        /// The tile's id.
        tile: u32,
    },
    /// A loop variable in `0..vars` that no loop defines.
    #[error("loop variable i{var} is declared (vars = {vars}) but no loop defines it")]
    VarNeverDefined {
        /// The variable's id.
        var: u32,
        /// The program's `vars`.
        vars: u32,
    },
    /// More loop variables than loops.
    #[error("vars = {vars}, but the program has only {loops} loop(s) to define them")]
    TooManyVars {
        /// The program's `vars`.
        vars: u32,
        /// How many loops the program has.
        loops: usize,
    },
    /// Loops nested deeper than [`MAX_LOOP_DEPTH`].
    #[error("loops nest {depth} deep: at most {MAX_LOOP_DEPTH} are allowed")]
    LoopTooDeep {
        /// The depth reached.
        depth: usize,
    },
    /// An index expression nested deeper than [`MAX_INDEX_DEPTH`].
    #[error("an index expression nests more than {MAX_INDEX_DEPTH} deep")]
    IndexTooDeep,
    /// An index step whose value can leave the `i64` range.
    #[error(
        "index arithmetic can overflow: `{op}` of a value in [{}, {}] and one in [{}, {}] \
         does not fit in an i64",
        lhs.0, lhs.1, rhs.0, rhs.1
    )]
    IndexOverflow {
        /// The operation (`+`, `-`, `*`, `/`, `%`).
        op: &'static str,
        /// The range of the left operand's values.
        lhs: (i64, i64),
        /// The range of the right operand's values.
        rhs: (i64, i64),
    },
    /// A tile whose byte size exceeds [`MAX_TILE_BYTES`].
    #[error("{ty}: the tile is larger than {MAX_TILE_BYTES} bytes")]
    TileTooLarge {
        /// The type.
        ty: TileType,
    },
    /// A global whose byte size does not fit in an `isize`.
    #[error("global @{global} `{name}`: {dtype}{shape:?} is too large to address")]
    GlobalTooLarge {
        /// The global's id.
        global: usize,
        /// Its name.
        name: String,
        /// Its dtype.
        dtype: DType,
        /// Its shape.
        shape: Vec<usize>,
    },
    /// A global or tile of a dtype pto-op stores but computes nothing in
    /// ([`DType::is_storage_only`]: the 8- and 4-bit floats, the 4- and 2-bit integers).
    #[error(
        "{what} is {dtype}, which kernels do not compute in (pto-op stores and casts it \
         only): give the kernel f16/f32 or i8/i32 and convert with std.cast outside it"
    )]
    StorageOnlyDType {
        /// The global (`global @0 \`x\``) or tile (`tile %3`).
        what: String,
        /// Its dtype.
        dtype: DType,
    },
    /// An instruction names a tile without a type.
    #[error("{tile} has no type (the program has {tiles} tiles)")]
    UndeclaredTile {
        /// The tile.
        tile: TileId,
        /// How many tiles the program declares.
        tiles: usize,
    },
    /// A tile read after the loop body that defined it ended.
    #[error(
        "{tile} is not visible here: it was defined in a loop body that has ended \
         (use the loop's results)"
    )]
    NotVisible {
        /// The tile.
        tile: TileId,
    },
    /// A tile read before any instruction defines it.
    #[error("{tile} is used before it is defined")]
    UsedBeforeDefined {
        /// The tile.
        tile: TileId,
    },
    /// A tile defined by two instructions.
    #[error("{tile} is defined twice")]
    DefinedTwice {
        /// The tile.
        tile: TileId,
    },
    /// A defined tile whose type breaks a rule of its own.
    #[error("tile {tile} {problem}")]
    BadTileType {
        /// The tile.
        tile: TileId,
        /// The rule its type breaks (a tile type's own rules: on core, non-empty, cube
        /// fractals).
        problem: Box<Rule>,
    },
    /// A tile declared with another type than its instruction gives.
    #[error("{tile} is declared {declared}, but the instruction gives {expected}")]
    DeclaredTypeDiffers {
        /// The tile.
        tile: TileId,
        /// Its type in [`Program::tiles`].
        declared: TileType,
        /// The type the instruction gives.
        expected: TileType,
    },
    /// An instruction names a global the program does not have.
    #[error("global {global} does not exist (the program has {globals} globals)")]
    UndeclaredGlobal {
        /// The global.
        global: GlobalId,
        /// How many globals the program has.
        globals: usize,
    },
    /// A loop's carried-tile lists differ in length.
    #[error(
        "init, params, yields and results must have one entry per carried tile, \
         got {init}, {params}, {yields} and {results}"
    )]
    LoopArity {
        /// Length of `init`.
        init: usize,
        /// Length of `params`.
        params: usize,
        /// Length of `yields`.
        yields: usize,
        /// Length of `results`.
        results: usize,
    },
    /// A loop defines a variable outside `0..vars`.
    #[error("loop variable {var} does not exist (vars = {vars})")]
    UndeclaredLoopVar {
        /// The variable.
        var: VarId,
        /// The program's `vars`.
        vars: u32,
    },
    /// Two loops define the same variable.
    #[error("loop variable {var} is defined twice")]
    LoopVarDefinedTwice {
        /// The variable.
        var: VarId,
    },
    /// A loop param whose type differs from its initial value's.
    #[error("carried tile {param} is {ty}, but its initial value is {init}")]
    CarriedTypeDiffers {
        /// The param.
        param: TileId,
        /// Its type.
        ty: TileType,
        /// The initial value's type.
        init: TileType,
    },
    /// A yielded tile whose type differs from the carried tile's.
    #[error("yield {tile} is {ty}, but the carried tile's type is {carried}")]
    YieldTypeDiffers {
        /// The yielded tile.
        tile: TileId,
        /// Its type.
        ty: TileType,
        /// The carried tile's type.
        carried: TileType,
    },
    /// A loop result whose type differs from the carried tile's.
    #[error("result {tile} is {ty}, but the carried tile's type is {carried}")]
    ResultTypeDiffers {
        /// The result.
        tile: TileId,
        /// Its type.
        ty: TileType,
        /// The carried tile's type.
        carried: TileType,
    },
    /// An index uses a loop variable outside its loop.
    #[error("loop variable {var} is used outside its loop")]
    VarOutsideLoop {
        /// The variable.
        var: VarId,
    },
    /// An index uses a loop variable that does not exist.
    #[error("loop variable {var} does not exist (there are {vars})")]
    UnknownVar {
        /// The variable.
        var: VarId,
        /// How many variables there are.
        vars: usize,
    },
    /// An index divides by the constant 0.
    #[error("an index divides by the constant 0")]
    DivisionByZero,
    /// A tile type in global memory.
    #[error("{ty}: tiles live on core, not in gm")]
    TileInGm {
        /// The type.
        ty: TileType,
    },
    /// A tile type with a dim of 0.
    #[error("{ty}: every dim must be at least 1")]
    EmptyDim {
        /// The type.
        ty: TileType,
    },
    /// A cube tile (L0A/L0B/L0C) that is not rank 2.
    #[error("{ty}: cube tiles ({}) are rank 2, got rank {}", ty.level, ty.shape.len())]
    CubeRank {
        /// The type.
        ty: TileType,
    },
    /// A cube tile with dims that are not multiples of the fractal.
    #[error(
        "{ty}: dims {:?} must be multiples of {CUBE_FRACTAL} in {} \
         (the cube works on {CUBE_FRACTAL}x{CUBE_FRACTAL} fractals)",
        ty.shape, ty.level
    )]
    CubeFractal {
        /// The type.
        ty: TileType,
    },
    /// An element-wise instruction with scalar operands only.
    #[error("needs at least one tile operand to give the result its type")]
    NoTileOperand,
    /// A vector operand outside UB.
    #[error("operand {ty} is in {}, but the vector unit works on ub", ty.level)]
    NotInUb {
        /// The operand's type.
        ty: TileType,
    },
    /// Element-wise operands of different dtypes.
    #[error(
        "dtypes {} differ: cast an operand with `.cast(..)` first",
        TypeList(types)
    )]
    DtypesDiffer {
        /// The operands' types.
        types: Vec<TileType>,
    },
    /// Element-wise operands whose shapes do not broadcast.
    #[error("shapes {} do not broadcast", TypeList(types))]
    NoBroadcast {
        /// The operands' types.
        types: Vec<TileType>,
    },
    /// A function that is not defined on bool operands.
    #[error("{function} is not defined on bool ({ty})")]
    BoolOperand {
        /// The function (`exp`, `sum`).
        function: &'static str,
        /// The operand's type.
        ty: TileType,
    },
    /// A function that needs a float operand.
    #[error("{function} needs a float dtype, got {ty}: cast with `.cast(DType::F32)` first")]
    FloatOnly {
        /// The function (`exp`, `mean`).
        function: &'static str,
        /// The operand's type.
        ty: TileType,
    },
    /// Binary arithmetic on bool tiles.
    #[error("{function} is not defined on bool tiles")]
    BoolArithmetic {
        /// The function.
        function: &'static str,
    },
    /// A load into a level other than UB or L1.
    #[error("loads go to ub or l1, not {level}")]
    LoadLevel {
        /// The level.
        level: MemLevel,
    },
    /// A load with other than one offset per dim of the global, or a tile of higher rank
    /// than the global's (or rank 0 from a ranked global).
    #[error(
        "global `{global}` has rank {rank}, but the load has {offsets} offsets and a rank \
         {tile_rank} tile (one offset per dim; the tile has the global's rank, or drops its \
         leading dims)"
    )]
    LoadRank {
        /// The global's name.
        global: String,
        /// Its rank.
        rank: usize,
        /// The number of offsets.
        offsets: usize,
        /// The tile's rank.
        tile_rank: usize,
    },
    /// A store to an input global.
    #[error("global `{global}` is an input; stores write outputs only")]
    StoreToInput {
        /// The global's name.
        global: String,
    },
    /// A store from a level other than UB or L0C.
    #[error("stores read ub or l0c, but the tile {ty} is in {}", ty.level)]
    StoreLevel {
        /// The stored tile's type.
        ty: TileType,
    },
    /// A store of a tile whose dtype differs from the output's.
    #[error("output `{global}` is {dtype}, but the tile is {ty}: cast the tile to {dtype} first")]
    StoreDtype {
        /// The output's name.
        global: String,
        /// Its dtype.
        dtype: DType,
        /// The stored tile's type.
        ty: TileType,
    },
    /// A store with other than one offset per dim of the output, or a tile of higher rank
    /// than the output's (or rank 0 into a ranked output).
    #[error(
        "output `{global}` has rank {rank}, but the store has {offsets} offsets and the tile \
         {ty} (one offset per dim; the tile has the output's rank, or drops its leading dims)"
    )]
    StoreRank {
        /// The output's name.
        global: String,
        /// Its rank.
        rank: usize,
        /// The number of offsets.
        offsets: usize,
        /// The stored tile's type.
        ty: TileType,
    },
    /// An iota axis beyond the shape's rank.
    #[error("axis {axis} is out of range for shape {shape:?} of rank {}", shape.len())]
    IotaAxis {
        /// The axis.
        axis: usize,
        /// The shape.
        shape: Vec<usize>,
    },
    /// An iota of bool.
    #[error("iota counts in an integer or float dtype, not bool")]
    IotaBool,
    /// A select whose condition is not bool.
    #[error("the condition must be a bool tile, got {cond}")]
    ConditionNotBool {
        /// The condition's type.
        cond: TileType,
    },
    /// A select whose condition does not broadcast with its values.
    #[error("the condition {cond} does not broadcast with the values' shape {shape:?}")]
    ConditionNoBroadcast {
        /// The condition's type.
        cond: TileType,
        /// The values' broadcast shape.
        shape: Vec<usize>,
    },
    /// A reduction axis beyond the operand's rank.
    #[error("axis {axis} is out of range for {ty} of rank {}", ty.shape.len())]
    ReduceAxis {
        /// The axis.
        axis: usize,
        /// The operand's type.
        ty: TileType,
    },
    /// A move along a path the core does not have.
    #[error(
        "cannot move {src} to {level}: moves go l1 -> l0a, l1 -> l0b, ub -> l1, \
         l0c -> ub and l0c -> l1"
    )]
    MovePath {
        /// The moved tile's type.
        src: TileType,
        /// The destination level.
        level: MemLevel,
    },
    /// An extract that is not an L1 sub-tile copied to L0A or L0B of the same dtype and
    /// rank, at offsets that are multiples of 16 and within the source.
    #[error(
        "cannot extract {dst} at {offsets:?} of {src}: extracts copy a sub-tile of an l1 tile \
         to l0a or l0b, same dtype and rank, at offsets that are multiples of 16, within \
         the source"
    )]
    Extract {
        /// The source tile's type.
        src: TileType,
        /// The declared sub-tile's type.
        dst: TileType,
        /// The offsets.
        offsets: Vec<usize>,
    },
    /// A move that converts the dtype where it cannot.
    #[error(
        "cannot convert {src} to {dtype} while moving to {level}: only l0c -> ub \
         converts, to a float dtype"
    )]
    MoveConvert {
        /// The moved tile's type.
        src: TileType,
        /// The destination dtype.
        dtype: DType,
        /// The destination level.
        level: MemLevel,
    },
    /// Matmul operands outside L0A / L0B.
    #[error("a must be in l0a and b in l0b, got {a} and {b}")]
    MatmulLevels {
        /// `a`'s type.
        a: TileType,
        /// `b`'s type.
        b: TileType,
    },
    /// Matmul operands of different or unsupported dtypes.
    #[error("a and b must have the same dtype, f16, bf16 or f32, got {a} and {b}")]
    MatmulDtypes {
        /// `a`'s type.
        a: TileType,
        /// `b`'s type.
        b: TileType,
    },
    /// Matmul operands that are not matrices.
    #[error("a and b must be rank 2, got {a} and {b}")]
    MatmulRank {
        /// `a`'s type.
        a: TileType,
        /// `b`'s type.
        b: TileType,
    },
    /// Matmul operands whose inner dimensions differ.
    #[error(
        "shapes {a} and {b} do not multiply: a is [m, k] and b is {}, \
         but a has k = {a_k} and b has k = {b_k}",
        if *transpose_b { "[n, k]" } else { "[k, n]" }
    )]
    MatmulInner {
        /// `a`'s type.
        a: TileType,
        /// `b`'s type.
        b: TileType,
        /// Whether `b` is transposed.
        transpose_b: bool,
        /// `a`'s k.
        a_k: usize,
        /// `b`'s k.
        b_k: usize,
    },
    /// A matmul accumulator of another type than the product.
    #[error("the accumulator must be {expected}, got {actual}")]
    Accumulator {
        /// The product's type.
        expected: TileType,
        /// The accumulator's type.
        actual: TileType,
    },
}

/// The message: the tracing builder records rule failures as text, prefixed with the call.
impl From<Rule> for String {
    fn from(rule: Rule) -> String {
        rule.to_string()
    }
}

/// Types listed as `a, b and c`.
struct TypeList<'a>(&'a [TileType]);

impl fmt::Display for TypeList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            [] => Ok(()),
            [only] => write!(f, "{only}"),
            [init @ .., last] => {
                for (i, t) in init.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{t}")?;
                }
                write!(f, " and {last}")
            }
        }
    }
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
            message: format!("{location}{}", e.rule),
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
/// use pto_kernel::ir::Program;
/// let program = Program {
///     op: "doc.empty".into(), grid: 1, globals: vec![], tiles: vec![], vars: 0, body: vec![],
/// };
/// let valid = program.clone().validate().unwrap();
/// assert_eq!(valid.grid, 1);
/// assert_eq!(*valid, program);
/// let json = serde_json::to_string(&valid).unwrap();
/// assert!(serde_json::from_str::<pto_kernel::ValidProgram>(&json.replace("\"grid\":1", "\"grid\":0")).is_err());
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
        defined: vec![false; program.tiles.len()],
        visible: vec![false; program.tiles.len()],
        var_defined: vec![false; program.vars as usize],
        var_live: vec![false; program.vars as usize],
        var_range: vec![(0, 0); program.vars as usize],
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
    Ok(())
}

struct Checker<'p> {
    program: &'p Program,
    defined: Vec<bool>,
    visible: Vec<bool>,
    var_defined: Vec<bool>,
    var_live: Vec<bool>,
    /// The values each loop variable takes (its loop's `0..count`, as a closed range).
    var_range: Vec<(i128, i128)>,
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
        let i = id.0 as usize;
        if self.visible[i] {
            Ok(ty)
        } else if self.defined[i] {
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
        let i = id.0 as usize;
        if self.defined[i] {
            return Err(Rule::DefinedTwice { tile: id });
        }
        check_tile(ty).map_err(|problem| Rule::BadTileType {
            tile: id,
            problem: Box::new(problem),
        })?;
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
                if let Some(range) = self.var_range.get_mut(var.0 as usize) {
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
        let v = var.0 as usize;
        match self.var_defined.get(v) {
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
        self.var_defined[v] = true;
        self.var_live[v] = true;
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
            self.visible[id.0 as usize] = false;
        }
        self.var_live[v] = false;
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

// The typing rules, one per instruction: the result type for the operand types, or what is
// wrong. Messages do not name the instruction; the caller (builder or checker) does.

/// The type of an operand of an element-wise instruction.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Arg<'a> {
    Tile(&'a TileType),
    Scalar,
}

/// Checks that an index uses only the loop variables live here (`live[v]`), does not
/// divide by the constant 0 and nests at most [`MAX_INDEX_DEPTH`] deep.
pub(crate) fn check_index(index: &Index, live: &[bool]) -> Result<(), Rule> {
    check_index_at(index, live, 0)
}

/// [`check_index`] for a subexpression `depth` deep: the recursion stops at the limit.
fn check_index_at(index: &Index, live: &[bool], depth: usize) -> Result<(), Rule> {
    if depth > MAX_INDEX_DEPTH {
        return Err(Rule::IndexTooDeep);
    }
    match index {
        Index::Const(_) | Index::ProgramId => Ok(()),
        Index::Var(v) => match live.get(v.0 as usize) {
            Some(true) => Ok(()),
            Some(false) => Err(Rule::VarOutsideLoop { var: *v }),
            None => Err(Rule::UnknownVar {
                var: *v,
                vars: live.len(),
            }),
        },
        Index::Div(_, b) | Index::Rem(_, b) if **b == Index::Const(0) => Err(Rule::DivisionByZero),
        Index::Add(a, b)
        | Index::Sub(a, b)
        | Index::Mul(a, b)
        | Index::Div(a, b)
        | Index::Rem(a, b)
        | Index::Min(a, b)
        | Index::Max(a, b) => {
            check_index_at(a, live, depth + 1)?;
            check_index_at(b, live, depth + 1)
        }
    }
}

/// The closed range of values `index` takes for program ids in `pid` and loop variables in
/// `vars[v]`, or the first step whose values can leave the `i64` range. Computed in `i128`
/// (every operand range fits in an `i64`, so no `i128` step overflows); `index` has passed
/// [`check_index`], so the recursion is at most [`MAX_INDEX_DEPTH`] deep.
fn index_range(
    index: &Index,
    pid: (i128, i128),
    vars: &[(i128, i128)],
) -> Result<(i128, i128), Rule> {
    let fits = |v: i128| i64::try_from(v).is_ok();
    let narrow = |r: (i128, i128)| (r.0 as i64, r.1 as i64);
    let (a, b, op) = match index {
        Index::Const(c) => return Ok((*c as i128, *c as i128)),
        Index::ProgramId => return Ok(pid),
        Index::Var(v) => return Ok(vars.get(v.0 as usize).copied().unwrap_or((0, 0))),
        Index::Add(a, b) => (a, b, "+"),
        Index::Sub(a, b) => (a, b, "-"),
        Index::Mul(a, b) => (a, b, "*"),
        Index::Div(a, b) => (a, b, "/"),
        Index::Rem(a, b) => (a, b, "%"),
        Index::Min(a, b) => (a, b, "min"),
        Index::Max(a, b) => (a, b, "max"),
    };
    let (a, b) = (index_range(a, pid, vars)?, index_range(b, pid, vars)?);
    let hull = |values: &[i128]| {
        let lo = values.iter().copied().min().unwrap_or(0);
        let hi = values.iter().copied().max().unwrap_or(0);
        (lo, hi)
    };
    let corners =
        |f: fn(i128, i128) -> i128| hull(&[f(a.0, b.0), f(a.0, b.1), f(a.1, b.0), f(a.1, b.1)]);
    let overflow = || Rule::IndexOverflow {
        op,
        lhs: narrow(a),
        rhs: narrow(b),
    };
    let result = match index {
        Index::Add(..) => (a.0 + b.0, a.1 + b.1),
        Index::Sub(..) => (a.0 - b.1, a.1 - b.0),
        Index::Mul(..) => corners(|x, y| x * y),
        Index::Min(..) => (a.0.min(b.0), a.1.min(b.1)),
        Index::Max(..) => (a.0.max(b.0), a.1.max(b.1)),
        Index::Div(..) => {
            // Euclidean division is floor division for a positive divisor and its negation
            // by `|b|` for a negative one; both are monotone, so the corners of each sign's
            // part of the divisor range bound it. A zero divisor gives 0.
            let mut values = Vec::with_capacity(9);
            if b.0 <= 0 && b.1 >= 0 {
                values.push(0);
            }
            if b.1 >= 1 {
                let lo = b.0.max(1);
                for (x, y) in [(a.0, lo), (a.0, b.1), (a.1, lo), (a.1, b.1)] {
                    values.push(x.div_euclid(y));
                }
            }
            if b.0 <= -1 {
                let hi = b.1.min(-1);
                for (x, y) in [(a.0, b.0), (a.0, hi), (a.1, b.0), (a.1, hi)] {
                    values.push(-x.div_euclid(-y));
                }
            }
            hull(&values)
        }
        Index::Rem(..) => {
            // `i64::MIN % -1` overflows in `i64` although its value, 0, fits.
            if a.0 == i64::MIN as i128 && b.0 <= -1 && b.1 >= -1 {
                return Err(overflow());
            }
            (0, (b.0.abs().max(b.1.abs()) - 1).max(0))
        }
        Index::Const(_) | Index::ProgramId | Index::Var(_) => unreachable!("returned above"),
    };
    if fits(result.0) && fits(result.1) {
        Ok(result)
    } else {
        Err(overflow())
    }
}

/// The byte size of a `dtype` array of `shape`, when it fits in a `u64`.
fn byte_size(shape: &[usize], dtype: DType) -> Option<u64> {
    shape
        .iter()
        .try_fold(dtype.size_bytes() as u64, |bytes, &d| {
            bytes.checked_mul(d as u64)
        })
}

/// Checks a tile type on its own: non-empty dims, an on-core level, cube-fractal shapes in
/// L0A/L0B/L0C.
pub(crate) fn check_tile(ty: &TileType) -> Result<(), Rule> {
    let rule = if ty.level == MemLevel::Gm {
        Rule::TileInGm { ty: ty.clone() }
    } else if ty.shape.contains(&0) {
        Rule::EmptyDim { ty: ty.clone() }
    } else if byte_size(&ty.shape, ty.dtype).is_none_or(|b| b > MAX_TILE_BYTES) {
        Rule::TileTooLarge { ty: ty.clone() }
    } else if !matches!(ty.level, MemLevel::L0A | MemLevel::L0B | MemLevel::L0C) {
        return Ok(());
    } else if ty.shape.len() != 2 {
        Rule::CubeRank { ty: ty.clone() }
    } else if ty.shape.iter().any(|d| d % CUBE_FRACTAL != 0) {
        Rule::CubeFractal { ty: ty.clone() }
    } else {
        return Ok(());
    };
    Err(rule)
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

/// The common shape and dtype of element-wise operands (at least one a tile, all in UB).
fn elementwise(args: &[Arg<'_>]) -> Result<(Vec<usize>, DType), Rule> {
    let tiles: Vec<&TileType> = args
        .iter()
        .filter_map(|a| match a {
            Arg::Tile(t) => Some(*t),
            Arg::Scalar => None,
        })
        .collect();
    let Some(first) = tiles.first() else {
        return Err(Rule::NoTileOperand);
    };
    if let Some(t) = tiles.iter().find(|t| t.level != MemLevel::Ub) {
        return Err(Rule::NotInUb { ty: (*t).clone() });
    }
    let types = || tiles.iter().map(|t| (*t).clone()).collect();
    if tiles.iter().any(|t| t.dtype != first.dtype) {
        return Err(Rule::DtypesDiffer { types: types() });
    }
    let mut shape = first.shape.clone();
    for t in &tiles[1..] {
        shape = broadcast(&shape, &t.shape).ok_or_else(|| Rule::NoBroadcast { types: types() })?;
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

/// Whether a unary function is only defined on floats: all but neg, abs, square and relu
/// (`floor` and `ceil` of an integer would be a copy).
fn float_only(op: UnaryOp) -> bool {
    !matches!(
        op,
        UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Square | UnaryOp::Relu
    )
}

fn expect_ub(ty: &TileType) -> Result<(), Rule> {
    if ty.level == MemLevel::Ub {
        Ok(())
    } else {
        Err(Rule::NotInUb { ty: ty.clone() })
    }
}

fn expect_numeric(ty: &TileType, function: &'static str) -> Result<(), Rule> {
    if ty.dtype == DType::Bool {
        Err(Rule::BoolOperand {
            function,
            ty: ty.clone(),
        })
    } else {
        Ok(())
    }
}

/// Whether a tile of rank `tile` may be loaded from (stored to) a global of rank `global`:
/// the same rank, or a lower one (not 0) whose tile covers one element of each leading dim
/// it drops (one matrix of a batch: `[m, k]` of a global `[b, m, k]`).
fn tile_rank_fits(tile: usize, global: usize) -> bool {
    tile == global || (1..global).contains(&tile)
}

pub(crate) fn load(
    global: &GlobalDecl,
    offsets: usize,
    shape: &[usize],
    level: MemLevel,
) -> Result<TileType, Rule> {
    if !matches!(level, MemLevel::Ub | MemLevel::L1) {
        return Err(Rule::LoadLevel { level });
    }
    let rank = global.shape.len();
    if offsets != rank || !tile_rank_fits(shape.len(), rank) {
        return Err(Rule::LoadRank {
            global: global.name.clone(),
            rank,
            offsets,
            tile_rank: shape.len(),
        });
    }
    Ok(TileType {
        shape: shape.to_vec(),
        dtype: global.dtype,
        level,
    })
}

pub(crate) fn store(global: &GlobalDecl, offsets: usize, src: &TileType) -> Result<(), Rule> {
    if global.role != GlobalRole::Output {
        return Err(Rule::StoreToInput {
            global: global.name.clone(),
        });
    }
    if !matches!(src.level, MemLevel::Ub | MemLevel::L0C) {
        return Err(Rule::StoreLevel { ty: src.clone() });
    }
    if src.dtype != global.dtype {
        return Err(Rule::StoreDtype {
            global: global.name.clone(),
            dtype: global.dtype,
            ty: src.clone(),
        });
    }
    let rank = global.shape.len();
    if offsets != rank || !tile_rank_fits(src.shape.len(), rank) {
        return Err(Rule::StoreRank {
            global: global.name.clone(),
            rank,
            offsets,
            ty: src.clone(),
        });
    }
    Ok(())
}

pub(crate) fn full(shape: &[usize], dtype: DType) -> TileType {
    ub(shape.to_vec(), dtype)
}

pub(crate) fn iota(shape: &[usize], axis: usize, dtype: DType) -> Result<TileType, Rule> {
    if axis >= shape.len() {
        return Err(Rule::IotaAxis {
            axis,
            shape: shape.to_vec(),
        });
    }
    if dtype == DType::Bool {
        return Err(Rule::IotaBool);
    }
    Ok(ub(shape.to_vec(), dtype))
}

pub(crate) fn unary(op: UnaryOp, src: &TileType) -> Result<TileType, Rule> {
    expect_ub(src)?;
    expect_numeric(src, op.name())?;
    if float_only(op) && !src.dtype.is_float() {
        return Err(Rule::FloatOnly {
            function: op.name(),
            ty: src.clone(),
        });
    }
    Ok(src.clone())
}

pub(crate) fn binary(op: BinaryOp, lhs: Arg<'_>, rhs: Arg<'_>) -> Result<TileType, Rule> {
    let (shape, dtype) = elementwise(&[lhs, rhs])?;
    if dtype == DType::Bool {
        return Err(Rule::BoolArithmetic {
            function: op.name(),
        });
    }
    let ty = ub(shape, dtype);
    if op == BinaryOp::Pow && !dtype.is_float() {
        return Err(Rule::FloatOnly {
            function: op.name(),
            ty,
        });
    }
    Ok(ty)
}

pub(crate) fn compare(_op: CmpOp, lhs: Arg<'_>, rhs: Arg<'_>) -> Result<TileType, Rule> {
    let (shape, _) = elementwise(&[lhs, rhs])?;
    Ok(ub(shape, DType::Bool))
}

pub(crate) fn select(
    cond: &TileType,
    on_true: Arg<'_>,
    on_false: Arg<'_>,
) -> Result<TileType, Rule> {
    expect_ub(cond)?;
    if cond.dtype != DType::Bool {
        return Err(Rule::ConditionNotBool { cond: cond.clone() });
    }
    let (shape, dtype) = elementwise(&[on_true, on_false])?;
    let shape = broadcast(&cond.shape, &shape).ok_or_else(|| Rule::ConditionNoBroadcast {
        cond: cond.clone(),
        shape: shape.clone(),
    })?;
    Ok(ub(shape, dtype))
}

pub(crate) fn cast(src: &TileType, dtype: DType) -> Result<TileType, Rule> {
    expect_ub(src)?;
    Ok(ub(src.shape.clone(), dtype))
}

pub(crate) fn reduce(op: ReduceOp, src: &TileType, axis: usize) -> Result<TileType, Rule> {
    expect_ub(src)?;
    expect_numeric(src, op.name())?;
    if axis >= src.shape.len() {
        return Err(Rule::ReduceAxis {
            axis,
            ty: src.clone(),
        });
    }
    if op == ReduceOp::Mean && !src.dtype.is_float() {
        return Err(Rule::FloatOnly {
            function: op.name(),
            ty: src.clone(),
        });
    }
    let mut shape = src.shape.clone();
    shape[axis] = 1;
    Ok(ub(shape, src.dtype))
}

pub(crate) fn move_to(src: &TileType, level: MemLevel, dtype: DType) -> Result<TileType, Rule> {
    use MemLevel::{L0A, L0B, L0C, L1, Ub};
    let allowed = matches!(
        (src.level, level),
        (L1, L0A) | (L1, L0B) | (Ub, L1) | (L0C, Ub) | (L0C, L1)
    );
    if !allowed {
        return Err(Rule::MovePath {
            src: src.clone(),
            level,
        });
    }
    let converts = (src.level, level) == (L0C, Ub);
    if dtype != src.dtype && !(converts && dtype.is_float()) {
        return Err(Rule::MoveConvert {
            src: src.clone(),
            dtype,
            level,
        });
    }
    Ok(TileType {
        shape: src.shape.clone(),
        dtype,
        level,
    })
}

/// The type of an extract of `dst`'s shape at `offsets` of `src` into `dst`'s level (see
/// [`Inst::Extract`]).
pub(crate) fn extract(src: &TileType, dst: &TileType, offsets: &[usize]) -> Result<TileType, Rule> {
    let fits = src.level == MemLevel::L1
        && matches!(dst.level, MemLevel::L0A | MemLevel::L0B)
        && src.dtype == dst.dtype
        && src.shape.len() == dst.shape.len()
        && offsets.len() == src.shape.len()
        && offsets
            .iter()
            .zip(&dst.shape)
            .zip(&src.shape)
            .all(|((o, d), s)| o % 16 == 0 && o.checked_add(*d).is_some_and(|end| end <= *s));
    if fits {
        Ok(dst.clone())
    } else {
        Err(Rule::Extract {
            src: src.clone(),
            dst: dst.clone(),
            offsets: offsets.to_vec(),
        })
    }
}

pub(crate) fn matmul(
    a: &TileType,
    b: &TileType,
    acc: Option<&TileType>,
    transpose_b: bool,
) -> Result<TileType, Rule> {
    let pair = || (a.clone(), b.clone());
    if a.level != MemLevel::L0A || b.level != MemLevel::L0B {
        let (a, b) = pair();
        return Err(Rule::MatmulLevels { a, b });
    }
    if !matches!(a.dtype, DType::F16 | DType::BF16 | DType::F32) || a.dtype != b.dtype {
        let (a, b) = pair();
        return Err(Rule::MatmulDtypes { a, b });
    }
    let (&[m, k], &[b0, b1]) = (a.shape.as_slice(), b.shape.as_slice()) else {
        let (a, b) = pair();
        return Err(Rule::MatmulRank { a, b });
    };
    let (bk, n) = if transpose_b { (b1, b0) } else { (b0, b1) };
    if k != bk {
        let (a, b) = pair();
        return Err(Rule::MatmulInner {
            a,
            b,
            transpose_b,
            a_k: k,
            b_k: bk,
        });
    }
    let result = TileType {
        shape: vec![m, n],
        dtype: DType::F32,
        level: MemLevel::L0C,
    };
    if let Some(acc) = acc
        && *acc != result
    {
        return Err(Rule::Accumulator {
            expected: result,
            actual: acc.clone(),
        });
    }
    Ok(result)
}
