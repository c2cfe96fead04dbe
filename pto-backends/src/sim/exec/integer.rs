//! Checked integer arithmetic: an exact result in the tile's dtype, or why there is none
//! (the instruction fails with the first such element, as the CPU reference does).

use std::cell::Cell;

use pto_op::DType;
use pto_op::kernel::ir::BinaryOp;

use super::data::integer_range;

/// Whether `value` is in `dtype`'s range.
fn fits(value: i128, dtype: DType) -> bool {
    let (low, high) = integer_range(dtype);
    (low..=high).contains(&value)
}

/// `exact` (the exact result of `what`, or why there is none) when it fits `dtype`.
pub(super) fn in_range(
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
pub(super) fn integer_binary(op: BinaryOp, x: i128, y: i128) -> Result<i128, String> {
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
pub(super) fn symbol(op: BinaryOp) -> &'static str {
    match op {
        BinaryOp::Add => "+",
        BinaryOp::Sub => "-",
        BinaryOp::Mul => "*",
        BinaryOp::Div => "/",
        other => other.name(),
    }
}

/// The first failure of an element-wise integer instruction.
#[derive(Default)]
pub(super) struct FirstError(pub(super) Cell<Option<String>>);

impl FirstError {
    /// `result`'s value, recording its error (the first one) as 0.
    pub(super) fn take(&self, result: Result<i128, String>) -> i128 {
        result.unwrap_or_else(|e| {
            let first = self.0.take().unwrap_or(e);
            self.0.set(Some(first));
            0
        })
    }
}
