//! The typing rules, one per instruction: the result type for the operand types, or what is
//! wrong. Messages do not name the instruction; the caller (the checker, or the builder
//! while it traces) does.

use super::rules::{CUBE_FRACTAL, MAX_TILE_BYTES, Rule};
use crate::dtype::DType;
use crate::ir::{
    ArgOp, BinaryOp, CmpOp, GlobalDecl, GlobalRole, LogicOp, MemLevel, ReduceOp, TileType, UnaryOp,
};

/// The type of an operand of an element-wise instruction.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Arg<'a> {
    Tile(&'a TileType),
    Scalar,
}

/// The byte size of a `dtype` array of `shape`, when it fits in a `u64`.
pub(super) fn byte_size(shape: &[usize], dtype: DType) -> Option<u64> {
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

pub(crate) fn arg_reduce(op: ArgOp, src: &TileType, axis: usize) -> Result<TileType, Rule> {
    expect_ub(src)?;
    expect_numeric(src, op.function())?;
    if axis >= src.shape.len() {
        return Err(Rule::ReduceAxis {
            axis,
            ty: src.clone(),
        });
    }
    let mut shape = src.shape.clone();
    shape[axis] = 1;
    Ok(ub(shape, DType::I32))
}

fn expect_bool(ty: &TileType, function: &'static str) -> Result<(), Rule> {
    expect_ub(ty)?;
    if ty.dtype == DType::Bool {
        Ok(())
    } else {
        Err(Rule::NotBool {
            function,
            ty: ty.clone(),
        })
    }
}

pub(crate) fn logic(op: LogicOp, lhs: &TileType, rhs: &TileType) -> Result<TileType, Rule> {
    expect_bool(lhs, op.name())?;
    expect_bool(rhs, op.name())?;
    let shape = broadcast(&lhs.shape, &rhs.shape).ok_or_else(|| Rule::NoBroadcast {
        types: vec![lhs.clone(), rhs.clone()],
    })?;
    Ok(ub(shape, DType::Bool))
}

pub(crate) fn not(src: &TileType) -> Result<TileType, Rule> {
    expect_bool(src, "not")?;
    Ok(src.clone())
}

/// The types of a top-k's values and indices.
pub(crate) fn top_k(src: &TileType, k: usize) -> Result<(TileType, TileType), Rule> {
    expect_ub(src)?;
    expect_numeric(src, "topk")?;
    let Some(&len) = src.shape.last() else {
        return Err(Rule::TopKCount { k, ty: src.clone() });
    };
    if !(1..=len).contains(&k) {
        return Err(Rule::TopKCount { k, ty: src.clone() });
    }
    let mut shape = src.shape.clone();
    *shape.last_mut().expect("checked above") = k;
    Ok((ub(shape.clone(), src.dtype), ub(shape, DType::I32)))
}

pub(crate) fn reshape(src: &TileType, shape: &[usize]) -> Result<TileType, Rule> {
    expect_ub(src)?;
    let count = shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d));
    if count != Some(src.numel()) {
        return Err(Rule::ReshapeCount {
            src: src.clone(),
            shape: shape.to_vec(),
        });
    }
    Ok(ub(shape.to_vec(), src.dtype))
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
/// [`Inst::Extract`](crate::ir::Inst::Extract)).
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
