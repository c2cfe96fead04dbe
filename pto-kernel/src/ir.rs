//! The kernel IR: what tracing a `#[kernel]` produces, what the simulator executes and what
//! device lowering consumes.
//!
//! A [`Program`] is one block program, run once per grid index. Tiles are SSA values
//! ([`TileId`]) with a type: shape, dtype and the memory level they live in. Indices into
//! global tensors are symbolic integers ([`Index`]) over the program id and loop variables.
//! Every instruction runs on one pipe of the Da Vinci core ([`Pipe`]).

use core::fmt;

use serde::{Deserialize, Serialize};

use crate::dtype::DType;

mod entity;

pub use entity::{EntityId, GlobalId, IdVec, TileId, VarId};

/// A memory level of a Da Vinci AI core (or global memory).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemLevel {
    /// Global memory (HBM / DDR), where op inputs and outputs live.
    Gm,
    /// L1 buffer: staging for the cube unit.
    L1,
    /// L0A: the cube unit's left operand buffer.
    L0A,
    /// L0B: the cube unit's right operand buffer.
    L0B,
    /// L0C: the cube unit's accumulator buffer.
    L0C,
    /// Unified buffer: the vector unit's operands and results.
    Ub,
}

impl MemLevel {
    /// Every on-core level (not GM), in a fixed order.
    pub const ON_CORE: [MemLevel; 5] = [
        MemLevel::Ub,
        MemLevel::L1,
        MemLevel::L0A,
        MemLevel::L0B,
        MemLevel::L0C,
    ];

    /// The alignment of this level's pool of tiles, in bytes: a 32-byte UB block, a
    /// 512-byte cube fractal, 1024 bytes of L0C (GM has no pool: 1). A kernel that uses the
    /// level reserves a multiple of it there (the UB plan rounds each pool up to it), so a
    /// device profile's buffer must hold at least this much.
    ///
    /// ```
    /// use pto_kernel::ir::MemLevel;
    /// assert_eq!(MemLevel::Ub.pool_alignment(), 32);
    /// assert_eq!(MemLevel::L0C.pool_alignment(), 1024);
    /// ```
    pub const fn pool_alignment(self) -> u64 {
        match self {
            MemLevel::Ub => 32,
            MemLevel::L1 | MemLevel::L0A | MemLevel::L0B => 512,
            MemLevel::L0C => 1024,
            MemLevel::Gm => 1,
        }
    }

    /// The lowercase name used in the text form and messages.
    pub const fn name(self) -> &'static str {
        match self {
            MemLevel::Gm => "gm",
            MemLevel::L1 => "l1",
            MemLevel::L0A => "l0a",
            MemLevel::L0B => "l0b",
            MemLevel::L0C => "l0c",
            MemLevel::Ub => "ub",
        }
    }
}

impl fmt::Display for MemLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// A pipe of a Da Vinci core: instructions on different pipes run concurrently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Pipe {
    /// GM -> L1 / UB copies.
    Mte2,
    /// L1 -> L0A / L0B copies.
    Mte1,
    /// The vector unit.
    V,
    /// The cube unit (matrix multiply).
    M,
    /// UB -> GM / L1 copies.
    Mte3,
    /// L0C -> GM / L1 / UB (fixpipe).
    Fixp,
    /// The scalar unit: loop control, address computation, issue.
    S,
}

impl Pipe {
    /// Every pipe, in trace-lane order.
    pub const ALL: [Pipe; 7] = [
        Pipe::Mte2,
        Pipe::Mte1,
        Pipe::M,
        Pipe::V,
        Pipe::Fixp,
        Pipe::Mte3,
        Pipe::S,
    ];

    /// The lane name used in reports and traces (`MTE2`, `VECTOR`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Pipe::Mte2 => "MTE2",
            Pipe::Mte1 => "MTE1",
            Pipe::V => "VECTOR",
            Pipe::M => "CUBE",
            Pipe::Mte3 => "MTE3",
            Pipe::Fixp => "FIXP",
            Pipe::S => "SCALAR",
        }
    }
}

impl fmt::Display for Pipe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// A symbolic integer: offsets into global tensors and loop-dependent indices.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Index {
    /// A constant.
    Const(i64),
    /// The index of the block program in the grid.
    ProgramId,
    /// A loop variable.
    Var(VarId),
    /// Sum.
    Add(Box<Index>, Box<Index>),
    /// Difference.
    Sub(Box<Index>, Box<Index>),
    /// Product.
    Mul(Box<Index>, Box<Index>),
    /// Floor division.
    Div(Box<Index>, Box<Index>),
    /// Remainder (of floor division).
    Rem(Box<Index>, Box<Index>),
    /// Minimum.
    Min(Box<Index>, Box<Index>),
    /// Maximum.
    Max(Box<Index>, Box<Index>),
}

/// An index whose value does not fit in an `i64` (see [`Index::eval`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("index arithmetic overflows: {lhs} {op} {rhs} does not fit in an i64")]
pub struct IndexOverflow {
    /// The operation (`+`, `-`, `*`, `/`, `%`).
    pub op: &'static str,
    /// The left operand's value.
    pub lhs: i64,
    /// The right operand's value.
    pub rhs: i64,
}

impl Index {
    /// The value for one program id and loop-variable values (`vars[v.index()]` for `v`).
    /// Division by zero gives 0: a validated program never divides by the constant 0.
    ///
    /// # Errors
    ///
    /// [`IndexOverflow`] when a step does not fit in an `i64` (`i64::MIN / -1`, a product
    /// past 2^63). Validation refuses programs whose indices can overflow for any program
    /// id and loop-variable values they run with, so a validated program never sees this.
    pub fn eval(&self, program_id: i64, vars: &[i64]) -> Result<i64, IndexOverflow> {
        let checked = |op: &'static str, a: &Index, b: &Index, f: fn(i64, i64) -> Option<i64>| {
            let (lhs, rhs) = (a.eval(program_id, vars)?, b.eval(program_id, vars)?);
            f(lhs, rhs).ok_or(IndexOverflow { op, lhs, rhs })
        };
        match self {
            Index::Const(c) => Ok(*c),
            Index::ProgramId => Ok(program_id),
            Index::Var(v) => Ok(vars.get(v.index()).copied().unwrap_or(0)),
            Index::Add(a, b) => checked("+", a, b, i64::checked_add),
            Index::Sub(a, b) => checked("-", a, b, i64::checked_sub),
            Index::Mul(a, b) => checked("*", a, b, i64::checked_mul),
            Index::Div(a, b) => checked("/", a, b, |a, b| {
                if b == 0 {
                    Some(0)
                } else {
                    a.checked_div_euclid(b)
                }
            }),
            Index::Rem(a, b) => checked("%", a, b, |a, b| {
                if b == 0 {
                    Some(0)
                } else {
                    a.checked_rem_euclid(b)
                }
            }),
            Index::Min(a, b) => checked("min", a, b, |a, b| Some(a.min(b))),
            Index::Max(a, b) => checked("max", a, b, |a, b| Some(a.max(b))),
        }
    }
}

/// The type of a tile: shape, dtype and memory level.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TileType {
    /// Dimensions, outermost first.
    pub shape: Vec<usize>,
    /// Element type.
    pub dtype: DType,
    /// Where the tile lives.
    pub level: MemLevel,
}

impl TileType {
    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// Bytes of data (without alignment padding).
    pub fn bytes(&self) -> usize {
        self.numel() * self.dtype.size_bytes()
    }
}

impl fmt::Display for TileType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[", self.dtype)?;
        for (i, d) in self.shape.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{d}")?;
        }
        write!(f, "]@{}", self.level)
    }
}

/// Whether a global tensor is read or written by the op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GlobalRole {
    /// An op input: read only.
    Input,
    /// An op output: written by stores.
    Output,
}

/// A global tensor a program reads or writes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct GlobalDecl {
    /// The op's name for it (input or output name).
    pub name: String,
    /// Its shape.
    pub shape: Vec<usize>,
    /// Its dtype.
    pub dtype: DType,
    /// Input or output.
    pub role: GlobalRole,
}

/// Element-wise functions of one tile (vector unit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnaryOp {
    /// `-x`
    Neg,
    /// `|x|`
    Abs,
    /// `e^x`
    Exp,
    /// `ln x`
    Ln,
    /// `sqrt x`
    Sqrt,
    /// `1 / sqrt x`
    Rsqrt,
    /// `1 / x`
    Recip,
    /// `x * x`
    Square,
    /// `max(x, 0)`
    Relu,
    /// `tanh x`
    Tanh,
    /// `1 / (1 + e^-x)`
    Sigmoid,
    /// GELU, tanh form.
    Gelu,
    /// `x * sigmoid(x)`
    Silu,
    /// `sin x`, radians.
    Sin,
    /// `cos x`, radians.
    Cos,
    /// The largest integer not above `x` (the dtype stays a float).
    Floor,
    /// The smallest integer not below `x` (the dtype stays a float).
    Ceil,
    /// The error function, `2/sqrt(pi) * integral_0^x e^(-t^2) dt`.
    Erf,
    /// `2^x`
    Exp2,
    /// `log2 x`
    Log2,
}

impl UnaryOp {
    /// Every variant, in declaration order.
    pub const ALL: [UnaryOp; 20] = [
        UnaryOp::Neg,
        UnaryOp::Abs,
        UnaryOp::Exp,
        UnaryOp::Ln,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Recip,
        UnaryOp::Square,
        UnaryOp::Relu,
        UnaryOp::Tanh,
        UnaryOp::Sigmoid,
        UnaryOp::Gelu,
        UnaryOp::Silu,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::Erf,
        UnaryOp::Exp2,
        UnaryOp::Log2,
    ];

    /// The lowercase name used in the text form and messages.
    pub const fn name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg",
            UnaryOp::Abs => "abs",
            UnaryOp::Exp => "exp",
            UnaryOp::Ln => "ln",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Rsqrt => "rsqrt",
            UnaryOp::Recip => "recip",
            UnaryOp::Square => "square",
            UnaryOp::Relu => "relu",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Sigmoid => "sigmoid",
            UnaryOp::Gelu => "gelu",
            UnaryOp::Silu => "silu",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Floor => "floor",
            UnaryOp::Ceil => "ceil",
            UnaryOp::Erf => "erf",
            UnaryOp::Exp2 => "exp2",
            UnaryOp::Log2 => "log2",
        }
    }
}

/// Element-wise functions of two operands, with numpy broadcasting (vector unit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BinaryOp {
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a * b`
    Mul,
    /// `a / b`
    Div,
    /// `max(a, b)`
    Max,
    /// `min(a, b)`
    Min,
    /// `a ^ b` (floats).
    Pow,
    /// The remainder of division truncated toward zero: `a - trunc(a / b) * b`, with the
    /// sign of `a` (Rust's `%`, C's `fmod`, `torch.fmod`).
    Rem,
    /// The remainder of floor division: `a - floor(a / b) * b`, with the sign of `b`
    /// (Python's `%`, `numpy.mod`, `torch.remainder`).
    Mod,
}

impl BinaryOp {
    /// Every variant, in declaration order.
    pub const ALL: [BinaryOp; 9] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Max,
        BinaryOp::Min,
        BinaryOp::Pow,
        BinaryOp::Rem,
        BinaryOp::Mod,
    ];

    /// The lowercase name used in the text form and messages.
    pub const fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Max => "max",
            BinaryOp::Min => "min",
            BinaryOp::Pow => "pow",
            BinaryOp::Rem => "rem",
            BinaryOp::Mod => "mod",
        }
    }
}

/// Element-wise comparisons; the result is a bool tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CmpOp {
    /// `a == b`
    Eq,
    /// `a != b`
    Ne,
    /// `a < b`
    Lt,
    /// `a <= b`
    Le,
    /// `a > b`
    Gt,
    /// `a >= b`
    Ge,
}

impl CmpOp {
    /// Every variant, in declaration order.
    pub const ALL: [CmpOp; 6] = [
        CmpOp::Eq,
        CmpOp::Ne,
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
    ];

    /// The lowercase name used in the text form and messages.
    pub const fn name(self) -> &'static str {
        match self {
            CmpOp::Eq => "eq",
            CmpOp::Ne => "ne",
            CmpOp::Lt => "lt",
            CmpOp::Le => "le",
            CmpOp::Gt => "gt",
            CmpOp::Ge => "ge",
        }
    }
}

/// Reductions along one axis; the axis is kept with size 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReduceOp {
    /// Sum.
    Sum,
    /// Maximum.
    Max,
    /// Minimum.
    Min,
    /// Arithmetic mean.
    Mean,
}

impl ReduceOp {
    /// Every variant, in declaration order.
    pub const ALL: [ReduceOp; 4] = [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Mean];

    /// The lowercase name used in the text form and messages.
    pub const fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::Mean => "mean",
        }
    }
}

/// Index-returning reductions along one axis: the position of the extreme element, ties to
/// the lower index; the axis is kept with size 1 and the result is an i32 tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ArgOp {
    /// The index of the largest element (numpy's and torch's `argmax`: a NaN counts as the
    /// largest, the first one wins).
    Max,
    /// The index of the smallest element (`argmin`: a NaN counts as the smallest, the
    /// first one wins).
    Min,
}

impl ArgOp {
    /// Every variant, in declaration order.
    pub const ALL: [ArgOp; 2] = [ArgOp::Max, ArgOp::Min];

    /// The lowercase name used in the text form and messages (`max`, `min`).
    pub const fn name(self) -> &'static str {
        match self {
            ArgOp::Max => "max",
            ArgOp::Min => "min",
        }
    }

    /// The function's name (`argmax`, `argmin`), as in a profile's cost table.
    pub const fn function(self) -> &'static str {
        match self {
            ArgOp::Max => "argmax",
            ArgOp::Min => "argmin",
        }
    }
}

/// Logical functions of two bool tiles, broadcasting (vector unit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogicOp {
    /// `a && b`
    And,
    /// `a || b`
    Or,
}

impl LogicOp {
    /// Every variant, in declaration order.
    pub const ALL: [LogicOp; 2] = [LogicOp::And, LogicOp::Or];

    /// The lowercase name used in the text form and messages.
    pub const fn name(self) -> &'static str {
        match self {
            LogicOp::And => "and",
            LogicOp::Or => "or",
        }
    }
}

/// An operand of an element-wise instruction: a tile, or a scalar constant (params and
/// literals are known when the kernel is traced).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Operand {
    /// A tile.
    Tile(TileId),
    /// A scalar, broadcast to the other operand's shape and converted to its dtype.
    Scalar(f64),
}

/// One instruction. `dst` tiles are defined by exactly one instruction; their types are in
/// [`Program::tiles`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Inst {
    /// GM -> UB or L1: the tile at `offsets` of `src`, shape and level from `dst`'s type.
    /// Elements outside `src` read as `pad` (masked load at the tensor's edges).
    Load {
        /// The loaded tile.
        dst: TileId,
        /// The global tensor read.
        src: GlobalId,
        /// Offset of the tile's first element, one per dimension.
        offsets: Vec<Index>,
        /// The value of elements outside the tensor.
        pad: f64,
    },
    /// UB (or L0C) -> GM: writes `src` at `offsets` of `dst`; elements outside `dst` are
    /// dropped (masked store).
    Store {
        /// The global tensor written (an output).
        dst: GlobalId,
        /// Offset of the tile's first element, one per dimension.
        offsets: Vec<Index>,
        /// The stored tile.
        src: TileId,
    },
    /// A tile filled with one value.
    Full {
        /// The tile.
        dst: TileId,
        /// Its value.
        value: f64,
    },
    /// A tile whose elements are `start + i`, `i` the element's index along `axis`.
    Iota {
        /// The tile (an integer or float dtype).
        dst: TileId,
        /// The axis that counts.
        axis: usize,
        /// The first value.
        start: Index,
    },
    /// `dst = op(src)`.
    Unary {
        /// Result.
        dst: TileId,
        /// Function.
        op: UnaryOp,
        /// Argument.
        src: TileId,
    },
    /// `dst = op(lhs, rhs)`, broadcasting.
    Binary {
        /// Result.
        dst: TileId,
        /// Function.
        op: BinaryOp,
        /// Left operand.
        lhs: Operand,
        /// Right operand.
        rhs: Operand,
    },
    /// `dst = lhs op rhs`, a bool tile, broadcasting.
    Compare {
        /// Result (bool).
        dst: TileId,
        /// Comparison.
        op: CmpOp,
        /// Left operand.
        lhs: Operand,
        /// Right operand.
        rhs: Operand,
    },
    /// `dst = cond ? on_true : on_false`, broadcasting.
    Select {
        /// Result.
        dst: TileId,
        /// A bool tile.
        cond: TileId,
        /// Where `cond` holds.
        on_true: Operand,
        /// Where it does not.
        on_false: Operand,
    },
    /// `dst = src` converted to `dst`'s dtype.
    Cast {
        /// Result.
        dst: TileId,
        /// Argument.
        src: TileId,
    },
    /// `dst = op(src)` along `axis`, which is kept with size 1.
    Reduce {
        /// Result.
        dst: TileId,
        /// Reduction.
        op: ReduceOp,
        /// Argument.
        src: TileId,
        /// The reduced axis.
        axis: usize,
    },
    /// `dst = argop(src)` along `axis`, which is kept with size 1: the index (i32) of the
    /// largest or smallest element, the lowest index among equal ones.
    ArgReduce {
        /// Result (i32).
        dst: TileId,
        /// Which extreme.
        op: ArgOp,
        /// Argument (a numeric UB tile).
        src: TileId,
        /// The reduced axis.
        axis: usize,
    },
    /// `dst = lhs op rhs` on bool tiles, broadcasting.
    Logic {
        /// Result (bool).
        dst: TileId,
        /// Function.
        op: LogicOp,
        /// Left operand (bool).
        lhs: TileId,
        /// Right operand (bool).
        rhs: TileId,
    },
    /// `dst = !src` on a bool tile.
    Not {
        /// Result (bool).
        dst: TileId,
        /// Argument (bool).
        src: TileId,
    },
    /// The `k` largest elements of each row (along the last axis) of `src`, in descending
    /// order, into `values` (`src`'s dtype, the last dim `k`) and their positions in the
    /// row into `indices` (i32, the same shape); equal elements keep their order (the
    /// lower index first), a NaN counts as the largest (torch's `topk`).
    TopK {
        /// The largest values, descending.
        values: TileId,
        /// Their indices in the row (i32).
        indices: TileId,
        /// Argument (a numeric UB tile).
        src: TileId,
        /// How many per row, `1..=` the row's length.
        k: usize,
    },
    /// `dst = src` with another shape of the same number of elements, row-major order kept
    /// (`[n]` -> `[n, 1]` a column, `[n]` -> `[1, n]` a row, `[a, b]` -> `[a * b]`). UB
    /// tiles, same dtype.
    Reshape {
        /// Result.
        dst: TileId,
        /// Argument.
        src: TileId,
    },
    /// A copy between on-core levels (L1 -> L0A/L0B, UB -> L1, L0C -> UB/L1), same shape
    /// and dtype, except that L0C -> UB may convert the f32 accumulator to `dst`'s dtype.
    Move {
        /// The copy.
        dst: TileId,
        /// The source.
        src: TileId,
    },
    /// A sub-tile of an L1 tile copied to L0A or L0B on MTE1 (Ascend C's `LoadData`,
    /// pto-isa's `TEXTRACT`): `dst`'s shape at `offsets` of `src`. It feeds the cube one
    /// K-step of a tile staged in L1 for several.
    Extract {
        /// The sub-tile, in L0A or L0B.
        dst: TileId,
        /// The L1 tile.
        src: TileId,
        /// Offset of the sub-tile's first element in `src`, one per dimension, each a
        /// multiple of 16.
        offsets: Vec<usize>,
    },
    /// Cube: `dst = a @ b (+ acc)`, `a` in L0A `[m, k]`, `b` in L0B `[k, n]` (or `[n, k]`
    /// when `transpose_b`), `dst` and `acc` f32 `[m, n]` in L0C.
    Matmul {
        /// Result, in L0C.
        dst: TileId,
        /// Left operand, in L0A.
        a: TileId,
        /// Right operand, in L0B.
        b: TileId,
        /// An accumulator to add, in L0C.
        acc: Option<TileId>,
        /// Whether `b` is stored transposed.
        transpose_b: bool,
    },
    /// A counted loop with loop-carried tiles: `params` take the values of `init` in the
    /// first iteration and of `yields` in the next; after the last, `results` hold them.
    Loop {
        /// The loop variable, 0 to `count - 1`.
        var: VarId,
        /// Number of iterations (known when the kernel is traced).
        count: usize,
        /// Initial values of the carried tiles, defined before the loop.
        init: Vec<TileId>,
        /// The carried tiles inside the body.
        params: Vec<TileId>,
        /// The body.
        body: Vec<Inst>,
        /// The carried tiles' values at the end of an iteration, defined in the body.
        yields: Vec<TileId>,
        /// The carried tiles' final values, defined by the loop.
        results: Vec<TileId>,
    },
}

impl Inst {
    /// The short name of the instruction in the text form and messages.
    pub fn mnemonic(&self) -> &'static str {
        match self {
            Inst::Load { .. } => "load",
            Inst::Store { .. } => "store",
            Inst::Full { .. } => "full",
            Inst::Iota { .. } => "iota",
            Inst::Unary { .. } => "unary",
            Inst::Binary { .. } => "binary",
            Inst::Compare { .. } => "compare",
            Inst::Select { .. } => "select",
            Inst::Cast { .. } => "cast",
            Inst::Reduce { .. } => "reduce",
            Inst::ArgReduce { .. } => "argreduce",
            Inst::Logic { .. } => "logic",
            Inst::Not { .. } => "not",
            Inst::TopK { .. } => "topk",
            Inst::Reshape { .. } => "reshape",
            Inst::Move { .. } => "move",
            Inst::Extract { .. } => "extract",
            Inst::Matmul { .. } => "matmul",
            Inst::Loop { .. } => "loop",
        }
    }

    /// The tiles this instruction defines: its `dst` (a top-k its `values` then its
    /// `indices`), or for a loop its `params` (defined at the start of every iteration)
    /// then its `results` (defined after the last). The instructions of a loop's body
    /// define their own tiles; a store defines none.
    pub fn defs(&self) -> Tiles<'_> {
        match self {
            Inst::Load { dst, .. }
            | Inst::Full { dst, .. }
            | Inst::Iota { dst, .. }
            | Inst::Unary { dst, .. }
            | Inst::Binary { dst, .. }
            | Inst::Compare { dst, .. }
            | Inst::Select { dst, .. }
            | Inst::Cast { dst, .. }
            | Inst::Reduce { dst, .. }
            | Inst::ArgReduce { dst, .. }
            | Inst::Logic { dst, .. }
            | Inst::Not { dst, .. }
            | Inst::Reshape { dst, .. }
            | Inst::Move { dst, .. }
            | Inst::Extract { dst, .. }
            | Inst::Matmul { dst, .. } => Tiles::inline([Some(*dst), None, None]),
            Inst::TopK {
                values, indices, ..
            } => Tiles::inline([Some(*values), Some(*indices), None]),
            Inst::Store { .. } => Tiles::none(),
            Inst::Loop {
                params, results, ..
            } => Tiles::lists(params, results),
        }
    }

    /// The tiles this instruction reads, in operand order (scalar operands are not tiles).
    /// For a loop: its `init` (read before the first iteration) then its `yields` (read at
    /// the end of every iteration); the instructions of its body read their own tiles.
    pub fn uses(&self) -> Tiles<'_> {
        let tile = |o: &Operand| match o {
            Operand::Tile(t) => Some(*t),
            Operand::Scalar(_) => None,
        };
        match self {
            Inst::Load { .. } | Inst::Full { .. } | Inst::Iota { .. } => Tiles::none(),
            Inst::Store { src, .. }
            | Inst::Unary { src, .. }
            | Inst::Cast { src, .. }
            | Inst::Reduce { src, .. }
            | Inst::ArgReduce { src, .. }
            | Inst::Not { src, .. }
            | Inst::TopK { src, .. }
            | Inst::Reshape { src, .. }
            | Inst::Move { src, .. }
            | Inst::Extract { src, .. } => Tiles::inline([Some(*src), None, None]),
            Inst::Binary { lhs, rhs, .. } | Inst::Compare { lhs, rhs, .. } => {
                Tiles::inline([tile(lhs), tile(rhs), None])
            }
            Inst::Select {
                cond,
                on_true,
                on_false,
                ..
            } => Tiles::inline([Some(*cond), tile(on_true), tile(on_false)]),
            Inst::Logic { lhs, rhs, .. } => Tiles::inline([Some(*lhs), Some(*rhs), None]),
            Inst::Matmul { a, b, acc, .. } => Tiles::inline([Some(*a), Some(*b), *acc]),
            Inst::Loop { init, yields, .. } => Tiles::lists(init, yields),
        }
    }

    /// Whether this instruction copies data into an on-core buffer from elsewhere (a load
    /// or a move): its result is what a double-buffered loop keeps two of.
    pub fn is_copy_in(&self) -> bool {
        matches!(
            self,
            Inst::Load { .. } | Inst::Move { .. } | Inst::Extract { .. }
        )
    }

    /// The number of instructions in `body`, counting loop bodies (a loop counts itself
    /// too): instructions are numbered in this order in messages, depth first.
    pub fn count(body: &[Inst]) -> usize {
        body.iter()
            .map(|inst| match inst {
                Inst::Loop { body, .. } => 1 + Inst::count(body),
                _ => 1,
            })
            .sum()
    }

    /// Calls `f` with the number of each instruction of `body` in [`Inst::count`]'s order
    /// (depth first, a loop before its body), starting at `*at`, and the instruction;
    /// leaves `*at` past the last.
    pub fn visit(body: &[Inst], at: &mut usize, f: &mut dyn FnMut(usize, &Inst)) {
        for inst in body {
            f(*at, inst);
            *at += 1;
            if let Inst::Loop { body, .. } = inst {
                Inst::visit(body, at, f);
            }
        }
    }

    /// The pipe this instruction runs on, given the program's tile types.
    pub fn pipe(&self, program: &Program) -> Pipe {
        let level = |t: &TileId| program.tile(*t).map(|ty| ty.level);
        match self {
            Inst::Load { .. } => Pipe::Mte2,
            Inst::Store { src, .. } => match level(src) {
                Some(MemLevel::L0C) => Pipe::Fixp,
                _ => Pipe::Mte3,
            },
            Inst::Move { src, dst } => match (level(src), level(dst)) {
                (Some(MemLevel::L0C), _) => Pipe::Fixp,
                (Some(MemLevel::Ub), _) => Pipe::Mte3,
                (_, Some(MemLevel::Ub)) => Pipe::Mte2,
                _ => Pipe::Mte1,
            },
            Inst::Extract { .. } => Pipe::Mte1,
            Inst::Matmul { .. } => Pipe::M,
            Inst::Loop { .. } => Pipe::S,
            Inst::Full { .. }
            | Inst::Iota { .. }
            | Inst::Unary { .. }
            | Inst::Binary { .. }
            | Inst::Compare { .. }
            | Inst::Select { .. }
            | Inst::Cast { .. }
            | Inst::Reduce { .. }
            | Inst::ArgReduce { .. }
            | Inst::Logic { .. }
            | Inst::Not { .. }
            | Inst::TopK { .. }
            | Inst::Reshape { .. } => Pipe::V,
        }
    }

    /// The name of this vector instruction in a profile's per-op cost table
    /// ([`crate::device::PipeModel::vector_ops`]): a unary or binary function's name
    /// (`exp`, `add`, ...), `reduce_sum` / `reduce_max` / `reduce_min` / `reduce_mean`,
    /// `cast`, `select`, `full`, `compare`, `iota`, `argmax` / `argmin`, `and` / `or`,
    /// `not`, `topk` or `reshape`; `None` for an instruction that is not a vector one.
    ///
    /// ```
    /// use pto_kernel::ir::{Inst, ReduceOp, TileId};
    /// let r = Inst::Reduce { dst: TileId::new(1), op: ReduceOp::Sum, src: TileId::new(0), axis: 1 };
    /// assert_eq!(r.vector_op_name(), Some("reduce_sum"));
    /// ```
    pub fn vector_op_name(&self) -> Option<&'static str> {
        Some(match self {
            Inst::Unary { op, .. } => op.name(),
            Inst::Binary { op, .. } => op.name(),
            Inst::Reduce { op, .. } => match op {
                ReduceOp::Sum => "reduce_sum",
                ReduceOp::Max => "reduce_max",
                ReduceOp::Min => "reduce_min",
                ReduceOp::Mean => "reduce_mean",
            },
            Inst::Cast { .. } => "cast",
            Inst::Select { .. } => "select",
            Inst::Full { .. } => "full",
            Inst::Compare { .. } => "compare",
            Inst::Iota { .. } => "iota",
            Inst::ArgReduce { op, .. } => op.function(),
            Inst::Logic { op, .. } => op.name(),
            Inst::Not { .. } => "not",
            Inst::TopK { .. } => "topk",
            Inst::Reshape { .. } => "reshape",
            _ => return None,
        })
    }

    /// Every name [`Inst::vector_op_name`] can return.
    pub fn vector_op_names() -> Vec<&'static str> {
        let mut names: Vec<&'static str> = UnaryOp::ALL.iter().map(|o| o.name()).collect();
        names.extend(BinaryOp::ALL.iter().map(|o| o.name()));
        names.extend([
            "reduce_sum",
            "reduce_max",
            "reduce_min",
            "reduce_mean",
            "cast",
            "select",
            "full",
            "compare",
            "iota",
            "argmax",
            "argmin",
            "and",
            "or",
            "not",
            "topk",
            "reshape",
        ]);
        names
    }
}

/// The tiles an instruction defines or reads ([`Inst::defs`], [`Inst::uses`]), in order:
/// up to three operands of a plain instruction held inline, or two lists of a loop
/// borrowed from it, so asking allocates nothing.
#[derive(Debug, Clone)]
pub struct Tiles<'a> {
    inline: std::iter::Flatten<std::array::IntoIter<Option<TileId>, 3>>,
    lists: std::iter::Chain<std::slice::Iter<'a, TileId>, std::slice::Iter<'a, TileId>>,
}

/// No tiles.
const NONE: &[TileId] = &[];

impl<'a> Tiles<'a> {
    fn none() -> Self {
        Tiles::inline([None, None, None])
    }

    fn inline(tiles: [Option<TileId>; 3]) -> Self {
        Tiles {
            inline: tiles.into_iter().flatten(),
            lists: NONE.iter().chain(NONE),
        }
    }

    fn lists(first: &'a [TileId], then: &'a [TileId]) -> Self {
        Tiles {
            inline: [None, None, None].into_iter().flatten(),
            lists: first.iter().chain(then),
        }
    }
}

impl Iterator for Tiles<'_> {
    type Item = TileId;

    fn next(&mut self) -> Option<TileId> {
        self.inline.next().or_else(|| self.lists.next().copied())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let (a, a_max) = self.inline.size_hint();
        let (b, b_max) = self.lists.size_hint();
        (a + b, a_max.zip(b_max).map(|(a, b)| a + b))
    }
}

/// One traced block program of an op's kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Program {
    /// The op's name.
    pub op: String,
    /// Number of block programs.
    pub grid: usize,
    /// The op's inputs then outputs, as the kernel sees them.
    pub globals: IdVec<GlobalId, GlobalDecl>,
    /// The type of every tile, by `TileId`.
    pub tiles: IdVec<TileId, TileType>,
    /// Number of loop variables.
    pub vars: u32,
    /// The instructions.
    pub body: Vec<Inst>,
}

impl Program {
    /// The type of tile `id`, if it exists.
    pub fn tile(&self, id: TileId) -> Option<&TileType> {
        self.tiles.get(id)
    }

    /// The declaration of global `id`, if it exists.
    pub fn global(&self, id: GlobalId) -> Option<&GlobalDecl> {
        self.globals.get(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_eval_uses_floor_semantics_and_loop_vars() {
        let i = Index::Add(
            Box::new(Index::Mul(
                Box::new(Index::ProgramId),
                Box::new(Index::Const(8)),
            )),
            Box::new(Index::Var(VarId::new(1))),
        );
        assert_eq!(i.eval(3, &[0, 5]), Ok(29));
        let d = Index::Div(Box::new(Index::Const(-7)), Box::new(Index::Const(2)));
        assert_eq!(d.eval(0, &[]), Ok(-4));
        let r = Index::Rem(Box::new(Index::Const(-7)), Box::new(Index::Const(2)));
        assert_eq!(r.eval(0, &[]), Ok(1));
        let c = |v| Box::new(Index::Const(v));
        let overflow = Index::Div(c(i64::MIN), c(-1));
        assert_eq!(
            overflow.eval(0, &[]).unwrap_err().to_string(),
            "index arithmetic overflows: -9223372036854775808 / -1 does not fit in an i64"
        );
        assert!(Index::Rem(c(i64::MIN), c(-1)).eval(0, &[]).is_err());
        assert!(Index::Mul(c(1 << 40), c(1 << 40)).eval(0, &[]).is_err());
        assert!(Index::Sub(c(i64::MIN), c(1)).eval(0, &[]).is_err());
    }

    #[test]
    fn defs_and_uses_are_loop_aware() {
        let t = TileId::new;
        let ids = |tiles: Tiles<'_>| tiles.collect::<Vec<_>>();
        let body = vec![Inst::Binary {
            dst: t(3),
            op: BinaryOp::Add,
            lhs: Operand::Tile(t(2)),
            rhs: Operand::Scalar(1.0),
        }];
        let looped = Inst::Loop {
            var: VarId::new(0),
            count: 4,
            init: vec![t(1)],
            params: vec![t(2)],
            body: body.clone(),
            yields: vec![t(3)],
            results: vec![t(4)],
        };
        assert_eq!(ids(looped.defs()), vec![t(2), t(4)]);
        assert_eq!(ids(looped.uses()), vec![t(1), t(3)]);
        assert_eq!(
            (ids(body[0].defs()), ids(body[0].uses())),
            (vec![t(3)], vec![t(2)])
        );
        let store = Inst::Store {
            dst: GlobalId::new(0),
            offsets: vec![],
            src: t(4),
        };
        assert_eq!((ids(store.defs()), ids(store.uses())), (vec![], vec![t(4)]));
        assert_eq!(Inst::count(&[looped, store]), 3);
    }

    #[test]
    fn a_top_k_defines_its_values_then_its_indices() {
        let t = TileId::new;
        let top = Inst::TopK {
            values: t(1),
            indices: t(2),
            src: t(0),
            k: 4,
        };
        let ids = |tiles: Tiles<'_>| tiles.collect::<Vec<_>>();
        assert_eq!(
            (ids(top.defs()), ids(top.uses())),
            (vec![t(1), t(2)], vec![t(0)])
        );
        assert_eq!(
            (top.mnemonic(), top.vector_op_name()),
            ("topk", Some("topk"))
        );
        let logic = Inst::Logic {
            dst: t(3),
            op: LogicOp::Or,
            lhs: t(1),
            rhs: t(2),
        };
        assert_eq!(ids(logic.uses()), vec![t(1), t(2)]);
        assert!(Inst::vector_op_names().contains(&"argmin"));
    }

    #[test]
    fn programs_serialize_ids_as_numbers_and_tables_as_lists() {
        let ty = TileType {
            shape: vec![4],
            dtype: DType::F32,
            level: MemLevel::Ub,
        };
        let program = Program {
            op: "t".into(),
            grid: 1,
            globals: vec![GlobalDecl {
                name: "x".into(),
                shape: vec![4],
                dtype: DType::F32,
                role: GlobalRole::Input,
            }]
            .into(),
            tiles: vec![ty].into(),
            vars: 0,
            body: vec![Inst::Load {
                dst: TileId::new(0),
                src: GlobalId::new(0),
                offsets: vec![Index::Var(VarId::new(2))],
                pad: 0.0,
            }],
        };
        let json = serde_json::to_string(&program).unwrap();
        assert_eq!(
            json,
            r#"{"op":"t","grid":1,"globals":[{"name":"x","shape":[4],"dtype":"f32","role":"input"}],"#
                .to_owned()
                + r#""tiles":[{"shape":[4],"dtype":"f32","level":"ub"}],"vars":0,"#
                + r#""body":[{"load":{"dst":0,"src":0,"offsets":[{"var":2}],"pad":0.0}}]}"#
        );
        assert_eq!(serde_json::from_str::<Program>(&json).unwrap(), program);
    }

    #[test]
    fn tile_types_print_compactly() {
        let t = TileType {
            shape: vec![8, 64],
            dtype: DType::F16,
            level: MemLevel::Ub,
        };
        assert_eq!(t.to_string(), "f16[8, 64]@ub");
        assert_eq!(t.bytes(), 1024);
    }
}
