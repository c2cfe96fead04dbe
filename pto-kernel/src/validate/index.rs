//! The rules of index expressions: which loop variables an index may name here, and the
//! values it can reach (interval arithmetic over the program ids and the loop counts), so
//! that no index overflows an `i64`.

use super::rules::{MAX_INDEX_DEPTH, Rule};
use crate::ir::{IdVec, Index, VarId};

/// Checks that an index uses only the loop variables live here (`live[v]`), does not
/// divide by the constant 0 and nests at most [`MAX_INDEX_DEPTH`] deep.
pub(crate) fn check_index(index: &Index, live: &IdVec<VarId, bool>) -> Result<(), Rule> {
    check_index_at(index, live, 0)
}

/// [`check_index`] for a subexpression `depth` deep: the recursion stops at the limit.
fn check_index_at(index: &Index, live: &IdVec<VarId, bool>, depth: usize) -> Result<(), Rule> {
    if depth > MAX_INDEX_DEPTH {
        return Err(Rule::IndexTooDeep);
    }
    match index {
        Index::Const(_) | Index::ProgramId => Ok(()),
        Index::Var(v) => match live.get(*v) {
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
pub(super) fn index_range(
    index: &Index,
    pid: (i128, i128),
    vars: &IdVec<VarId, (i128, i128)>,
) -> Result<(i128, i128), Rule> {
    let fits = |v: i128| i64::try_from(v).is_ok();
    let narrow = |r: (i128, i128)| (r.0 as i64, r.1 as i64);
    let (a, b, op) = match index {
        Index::Const(c) => return Ok((*c as i128, *c as i128)),
        Index::ProgramId => return Ok(pid),
        Index::Var(v) => return Ok(vars.get(*v).copied().unwrap_or((0, 0))),
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
