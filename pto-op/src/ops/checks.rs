//! The checks the standard ops' rules share, and the errors they raise.

use crate::dtype::DType;
use crate::error::OpError;

/// `dtype` if it is a float dtype, else an error naming `input`.
pub(super) fn expect_float(input: &str, dtype: DType) -> Result<DType, OpError> {
    if dtype.is_float() {
        Ok(dtype)
    } else {
        Err(OpError::input(
            input,
            format!("expected f32, f16 or bf16, got {dtype}"),
        ))
    }
}

/// Checks that `input` has the dtype `expected` of the input `like`.
pub(super) fn expect_dtype_of(
    input: &str,
    actual: DType,
    like: &str,
    expected: DType,
) -> Result<(), OpError> {
    if actual == expected {
        Ok(())
    } else {
        Err(OpError::input(
            input,
            format!(
                "expected dtype {expected} (that of {like}), got {actual}: convert it with std.cast"
            ),
        ))
    }
}

/// The error of a kernel that does not cover its inputs or params (`what`: ``param `axis` ``,
/// ``input `a` ``): [`OpError::Unsupported`], on which a kernel target runs the op on its
/// fallback (the CPU reference) instead.
pub(super) fn kernel_unsupported(op: &str, what: &str, problem: impl Into<String>) -> OpError {
    OpError::Unsupported {
        op: op.to_owned(),
        message: format!("{what}: {}", problem.into()),
    }
}

/// A param error of op `op`.
pub(super) fn param_error(op: &str, param: &str, problem: impl Into<String>) -> OpError {
    OpError::Param {
        op: op.to_owned(),
        param: param.to_owned(),
        problem: problem.into(),
    }
}
