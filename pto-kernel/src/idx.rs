//! `Idx`: the symbolic integers a kernel computes offsets with.

use core::ops::{Add, Div, Mul, Rem, Sub};
use std::collections::HashSet;
use std::sync::{Mutex, OnceLock, PoisonError};

use super::ir::Index;

/// A symbolic integer over the program id and loop variables: offsets into global tensors
/// and `iota` starts. Arithmetic with `+ - * / %` (floor division and remainder) against
/// other `Idx` values and integers builds an [`Index`] tree; constants fold.
///
/// `Idx` is `Copy`: it refers to its expression, interned once per process (equal
/// expressions share one node, so `==` and hashing compare expressions). An interned
/// expression is never freed; tracing keeps few distinct ones (offsets of a kernel per
/// shape), so the memory this holds is bounded by the distinct kernels traced.
///
/// ```
/// use pto_kernel::{Idx, ir::Index};
/// let pid = Idx::program_id();
/// let row = pid * 8 + 2;
/// assert_eq!(row.eval(3, &[]), Ok(26));
/// assert_eq!((Idx::from(7) / 2).index(), &Index::Const(3));
/// assert_eq!(Idx::from(10).min(4).max(Idx::from(5)).as_const(), Some(5));
/// assert_eq!((Idx::program_id() * 1 + 0).index(), &Index::ProgramId);
/// assert_eq!((Idx::program_id() % 1).as_const(), Some(0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Idx(&'static Index);

/// The interned expression equal to `index`, added on first use.
fn intern(index: Index) -> Idx {
    static INTERNED: OnceLock<Mutex<HashSet<&'static Index>>> = OnceLock::new();
    let mut set = INTERNED
        .get_or_init(Mutex::default)
        .lock()
        // The set is only ever inserted into whole nodes: a panic elsewhere leaves it valid.
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(existing) = set.get(&index) {
        return Idx(existing);
    }
    let leaked: &'static Index = Box::leak(Box::new(index));
    set.insert(leaked);
    Idx(leaked)
}

impl Idx {
    /// The index of the block program in the grid (also [`super::Kernel::program_id`]).
    pub fn program_id() -> Idx {
        intern(Index::ProgramId)
    }

    /// The index expression.
    pub fn index(&self) -> &Index {
        self.0
    }

    /// The index expression, by value.
    pub fn into_index(self) -> Index {
        self.0.clone()
    }

    /// The value, when it does not depend on the program id or a loop variable.
    pub fn as_const(&self) -> Option<i64> {
        match self.0 {
            Index::Const(c) => Some(*c),
            _ => None,
        }
    }

    /// The value for one program id and loop-variable values (see [`Index::eval`]).
    ///
    /// # Errors
    ///
    /// [`IndexOverflow`](super::ir::IndexOverflow) when a step does not fit in an `i64`.
    pub fn eval(&self, program_id: i64, vars: &[i64]) -> Result<i64, super::ir::IndexOverflow> {
        self.0.eval(program_id, vars)
    }

    /// The smaller of two indices.
    pub fn min(self, other: impl Into<Idx>) -> Idx {
        combine(self, other.into(), Index::Min, |a, b| Some(a.min(b)))
    }

    /// The larger of two indices.
    pub fn max(self, other: impl Into<Idx>) -> Idx {
        combine(self, other.into(), Index::Max, |a, b| Some(a.max(b)))
    }
}

/// Builds `node(a, b)`, folding constants with `fold` (which declines on overflow and
/// division by zero, leaving the node for validation to report).
fn combine(
    a: Idx,
    b: Idx,
    node: fn(Box<Index>, Box<Index>) -> Index,
    fold: fn(i64, i64) -> Option<i64>,
) -> Idx {
    if let (Index::Const(x), Index::Const(y)) = (a.0, b.0)
        && let Some(v) = fold(*x, *y)
    {
        return intern(Index::Const(v));
    }
    intern(simplify(node(
        Box::new(a.into_index()),
        Box::new(b.into_index()),
    )))
}

/// Removes identities (`x + 0`, `x * 1`, `x / 1`, `x % 1`, `x * 0`), so traced offsets and
/// the kernel file stay as simple as the author's arithmetic allows.
fn simplify(index: Index) -> Index {
    use Index::{Add, Const, Div, Mul, Rem, Sub};
    match index {
        Add(a, b) if *b == Const(0) => *a,
        Add(a, b) if *a == Const(0) => *b,
        Sub(a, b) if *b == Const(0) => *a,
        Mul(a, b) if *b == Const(1) => *a,
        Mul(a, b) if *a == Const(1) => *b,
        Mul(a, b) if *a == Const(0) || *b == Const(0) => Const(0),
        Div(a, b) if *b == Const(1) => *a,
        Rem(_, b) if *b == Const(1) => Const(0),
        other => other,
    }
}

impl From<Index> for Idx {
    fn from(index: Index) -> Idx {
        intern(index)
    }
}

impl From<Idx> for Index {
    fn from(idx: Idx) -> Index {
        idx.into_index()
    }
}

impl From<&Idx> for Idx {
    fn from(idx: &Idx) -> Idx {
        *idx
    }
}

impl From<i64> for Idx {
    fn from(c: i64) -> Idx {
        intern(Index::Const(c))
    }
}

impl From<i32> for Idx {
    fn from(c: i32) -> Idx {
        intern(Index::Const(c.into()))
    }
}

impl From<u32> for Idx {
    fn from(c: u32) -> Idx {
        intern(Index::Const(c.into()))
    }
}

impl From<usize> for Idx {
    /// Sizes beyond `i64::MAX` do not occur in tensors; they saturate.
    fn from(c: usize) -> Idx {
        intern(Index::Const(i64::try_from(c).unwrap_or(i64::MAX)))
    }
}

macro_rules! index_operator {
    ($Trait:ident, $method:ident, $node:expr, $fold:expr) => {
        impl<T: Into<Idx>> $Trait<T> for Idx {
            type Output = Idx;
            fn $method(self, rhs: T) -> Idx {
                combine(self, rhs.into(), $node, $fold)
            }
        }

        impl<T: Into<Idx>> $Trait<T> for &Idx {
            type Output = Idx;
            fn $method(self, rhs: T) -> Idx {
                combine(*self, rhs.into(), $node, $fold)
            }
        }

        // Integers on the left are sizes: one type only, so that `2 * pid` infers it.
        index_operator!(@scalar_lhs $Trait, $method, $node, $fold, usize);
    };
    (@scalar_lhs $Trait:ident, $method:ident, $node:expr, $fold:expr, $($int:ty),*) => {
        $(
            impl $Trait<Idx> for $int {
                type Output = Idx;
                fn $method(self, rhs: Idx) -> Idx {
                    combine(Idx::from(self), rhs, $node, $fold)
                }
            }

            impl $Trait<&Idx> for $int {
                type Output = Idx;
                fn $method(self, rhs: &Idx) -> Idx {
                    combine(Idx::from(self), *rhs, $node, $fold)
                }
            }
        )*
    };
}

index_operator!(Add, add, Index::Add, i64::checked_add);
index_operator!(Sub, sub, Index::Sub, i64::checked_sub);
index_operator!(Mul, mul, Index::Mul, i64::checked_mul);
index_operator!(Div, div, Index::Div, |a: i64, b: i64| {
    (b != 0).then(|| a.checked_div_euclid(b)).flatten()
});
index_operator!(Rem, rem, Index::Rem, |a: i64, b: i64| {
    (b != 0).then(|| a.checked_rem_euclid(b)).flatten()
});

/// Offsets of a tile in a global tensor, one per dimension: arrays, vectors and slices of
/// anything that converts to [`Idx`], and tuples that mix `Idx` with integer literals.
///
/// ```
/// use pto_kernel::{Idx, IntoOffsets};
/// let r0 = Idx::program_id() * 8;
/// assert_eq!((r0, 0).into_offsets(), vec![r0, Idx::from(0)]);
/// assert_eq!([r0, 0.into()].into_offsets().len(), 2);
/// assert_eq!([0, 16].into_offsets()[1].as_const(), Some(16));
/// ```
pub trait IntoOffsets {
    /// The offsets, outermost dimension first.
    fn into_offsets(self) -> Vec<Idx>;
}

impl<T: Into<Idx>, const N: usize> IntoOffsets for [T; N] {
    fn into_offsets(self) -> Vec<Idx> {
        self.into_iter().map(Into::into).collect()
    }
}

impl<T: Into<Idx>> IntoOffsets for Vec<T> {
    fn into_offsets(self) -> Vec<Idx> {
        self.into_iter().map(Into::into).collect()
    }
}

impl<T: Into<Idx> + Clone> IntoOffsets for &[T] {
    fn into_offsets(self) -> Vec<Idx> {
        self.iter().cloned().map(Into::into).collect()
    }
}

macro_rules! tuple_offsets {
    ($($name:ident),+) => {
        impl<$($name: Into<Idx>),+> IntoOffsets for ($($name,)+) {
            #[allow(non_snake_case)] // the tuple's fields, named after their types
            fn into_offsets(self) -> Vec<Idx> {
                let ($($name,)+) = self;
                vec![$($name.into()),+]
            }
        }
    };
}

tuple_offsets!(A);
tuple_offsets!(A, B);
tuple_offsets!(A, B, C);
tuple_offsets!(A, B, C, D);
tuple_offsets!(A, B, C, D, E);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_fold_but_symbols_and_bad_divisions_stay() {
        let pid = Idx::program_id();
        assert_eq!((Idx::from(3) * 4 + 1).as_const(), Some(13));
        assert_eq!((Idx::from(-7) % 2).as_const(), Some(1));
        assert_eq!((2 * pid).eval(5, &[]), Ok(10));
        assert_eq!(
            (Idx::from(1) / 0).index(),
            &Index::Div(Box::new(Index::Const(1)), Box::new(Index::Const(0)))
        );
        assert_eq!((Idx::from(i64::MAX) + 1).as_const(), None);
        assert_eq!((&pid - 1usize).eval(0, &[]), Ok(-1));
    }
}
