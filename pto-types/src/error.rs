//! The error type of op descriptions and op execution.

use core::fmt;
use std::sync::Arc;

use crate::name::quoted;

/// An error raised by an op: by the author's shape, dtype, reference or kernel functions, or
/// by the framework when a call does not match the op's description.
///
/// Authors build errors with [`OpError::invalid`] or [`OpError::input`]; the framework adds
/// the op's name ([`OpError::with_op`]) before the error reaches a user, so messages read
/// `op `demo.rms_norm`: input `gamma`: expected shape [64], got [32]`.
///
/// ```
/// use pto_types::OpError;
/// let e = OpError::input("gamma", "expected shape [64], got [32]").with_op("demo.rms_norm");
/// assert_eq!(e.to_string(), "op `demo.rms_norm`: input `gamma`: expected shape [64], got [32]");
/// ```
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum OpError {
    /// An input or param breaks one of the op's rules.
    #[error("{}{}{message}", OpPrefix(op.as_deref()), InputPrefix(input.as_deref()))]
    Invalid {
        /// The op, once the framework knows it.
        op: Option<String>,
        /// The input at fault, where one is.
        input: Option<String>,
        /// What is wrong and, where it helps, what to do.
        message: String,
    },
    /// A param is missing, unknown or of the wrong type.
    #[error("op {}: param {}: {problem}", quoted(op), quoted(param))]
    Param {
        /// The op.
        op: String,
        /// The param's name.
        param: String,
        /// What is wrong, with the expected and actual value or type.
        problem: String,
    },
    /// A call passed the wrong number of inputs.
    #[error(
        "op {}: expected {expected} input(s) ({names}), got {actual}",
        quoted(op)
    )]
    InputCount {
        /// The op.
        op: String,
        /// The number of inputs the description takes: `3`, or `2 to 3` for an op with an
        /// optional input.
        expected: String,
        /// The input names, comma-separated, an optional one marked `?`.
        names: String,
        /// The number passed.
        actual: usize,
    },
    /// An implementation produced an output that disagrees with the description.
    #[error("{0}")]
    OutputMismatch(Box<OutputMismatch>),
    /// The op has no implementation for what was asked of it.
    #[error("op {}: {message}", quoted(op))]
    Unsupported {
        /// The op.
        op: String,
        /// What is missing.
        message: String,
    },
    /// A backend (the simulator, a device runtime) could not run the op's kernel. The
    /// message is the backend error's own (which names the op); that error is the source,
    /// reachable typed through [`BackendError::get_ref`].
    #[error("{source}")]
    Backend {
        /// The op.
        op: String,
        /// Whether the kernel does not fit or is not supported on the target, rather than
        /// failing on this call's inputs.
        unsupported: bool,
        /// The backend's error.
        #[source]
        source: BackendError,
    },
}

/// A backend's error inside an [`OpError`], shared so that `OpError` stays `Clone`.
///
/// ```
/// use pto_types::{BackendError, OpError};
/// let io = std::io::Error::other("device lost");
/// let e = OpError::Backend { op: "a.b".into(), unsupported: false, source: BackendError::new(io) };
/// assert_eq!(e.to_string(), "device lost");
/// let source = std::error::Error::source(&e).unwrap().downcast_ref::<BackendError>().unwrap();
/// assert!(source.get_ref().downcast_ref::<std::io::Error>().is_some());
/// ```
#[derive(Debug, Clone)]
pub struct BackendError(Arc<dyn std::error::Error + Send + Sync + 'static>);

impl BackendError {
    /// Wraps a backend's error.
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> BackendError {
        BackendError(Arc::new(error))
    }

    /// The backend's error, to downcast to its type.
    pub fn get_ref(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for BackendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// Two backend errors are equal when they are the same error or say the same.
impl PartialEq for BackendError {
    fn eq(&self, other: &BackendError) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.to_string() == other.to_string()
    }
}

/// An output whose shape or dtype is not what the op's rules say.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "op `{op}`: output `{output}`: {producer} returned {what} {actual}, \
     but infer_{what} says {expected}"
)]
pub struct OutputMismatch {
    /// The op.
    pub op: String,
    /// The output's name.
    pub output: String,
    /// Which implementation produced it (`reference`, `kernel`).
    pub producer: String,
    /// `shape` or `dtype`.
    pub what: String,
    /// What the description says.
    pub expected: String,
    /// What the implementation produced.
    pub actual: String,
}

impl OpError {
    /// A rule of the op is broken; `message` says which and by what values.
    pub fn invalid(message: impl Into<String>) -> OpError {
        OpError::Invalid {
            op: None,
            input: None,
            message: message.into(),
        }
    }

    /// Input `input` breaks a rule of the op.
    pub fn input(input: impl Into<String>, message: impl Into<String>) -> OpError {
        OpError::Invalid {
            op: None,
            input: Some(input.into()),
            message: message.into(),
        }
    }

    /// Names the op in an error that does not name one yet.
    pub fn with_op(self, name: &str) -> OpError {
        match self {
            OpError::Invalid {
                op: None,
                input,
                message,
            } => OpError::Invalid {
                op: Some(name.to_owned()),
                input,
                message,
            },
            other => other,
        }
    }
}

struct OpPrefix<'a>(Option<&'a str>);

impl fmt::Display for OpPrefix<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(op) => write!(f, "op {}: ", crate::name::quoted(op)),
            None => Ok(()),
        }
    }
}

struct InputPrefix<'a>(Option<&'a str>);

impl fmt::Display for InputPrefix<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(input) => write!(f, "input {}: ", crate::name::quoted(input)),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_op_keeps_an_existing_op_name() {
        let e = OpError::invalid("bad")
            .with_op("a.first")
            .with_op("b.second");
        assert_eq!(e.to_string(), "op `a.first`: bad");
    }
}
