//! What a broken rule of the tile language is: the [`Rule`] (one variant per rule, with the
//! values that broke it), the [`ValidationError`] that locates it at an instruction, and the
//! limits some rules name.

use core::fmt;

use super::work::{Work, WorkCulprit};
use crate::dtype::DType;
use crate::error::OpError;
use crate::ir::{GlobalId, Inst, MemLevel, TileId, TileType, VarId};

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
///     op: "doc.bad".into(), grid: 1, globals: vec![].into(), tiles: vec![].into(), vars: 0,
///     body: vec![Inst::Cast { dst: TileId::new(0), src: TileId::new(1) }],
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
    /// A program that executes more instructions than the work budget allows (see
    /// [`work`](super::work)).
    #[error(
        "the kernel does too much work: {culprit} is {work} instruction executions, over \
         the kernel work budget of {budget} (PTO_WORK_BUDGET=N raises it on the `pto` \
         command line, pto_kernel::validate::set_work_budget in a program)"
    )]
    WorkOverBudget {
        /// The grid, or the loop, whose work is over the budget.
        culprit: WorkCulprit,
        /// Its work.
        work: Work,
        /// The budget.
        budget: u64,
    },
    /// A tile in [`Program::tiles`](crate::ir::Program::tiles) that no instruction defines.
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
        /// Its type in [`Program::tiles`](crate::ir::Program::tiles).
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
    /// A logical function of a tile that is not bool.
    #[error("{function} takes bool tiles, got {ty}: compare first (`.ne(0.0)`)")]
    NotBool {
        /// The function (`and`, `or`, `not`).
        function: &'static str,
        /// The operand's type.
        ty: TileType,
    },
    /// A top-k whose `k` is not in `1..=` the row's length.
    #[error(
        "topk takes 1 to {} element(s) of each row of {ty}, not k = {k}",
        ty.shape.last().copied().unwrap_or(0)
    )]
    TopKCount {
        /// The `k` asked for.
        k: usize,
        /// The operand's type.
        ty: TileType,
    },
    /// A reshape to a shape of another number of elements.
    #[error(
        "cannot reshape {src} to {shape:?}: {} element(s) against {}",
        src.numel(),
        shape.iter().product::<usize>()
    )]
    ReshapeCount {
        /// The operand's type.
        src: TileType,
        /// The shape asked for.
        shape: Vec<usize>,
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
        Inst::ArgReduce { op, .. } => format!("argreduce {}", op.name()),
        Inst::Logic { op, .. } => format!("logic {}", op.name()),
        other => other.mnemonic().to_owned(),
    }
}
