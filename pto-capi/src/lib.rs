//! The C ABI of the linked ops' shape and dtype rules.
//!
//! A custom-op package's `op_host` code (see `pto_backends::ascendc::package`) does not
//! retype an op's `#[infer_shape]`/`#[infer_dtype]` in C++: its InferShape and InferDataType
//! call `pto_infer_shapes` and `pto_infer_dtypes` of a C ABI library, which run the op's own
//! Rust rules ([`pto_op::OpDef::infer`]).
//!
//! This crate is a plain library that links no operator crate. A deployment's C ABI library
//! is its own `cdylib` crate, which depends on this one and on its operator crates, and
//! whose `src/lib.rs` is
//!
//! ```ignore
//! use my_ops as _;
//! pto_capi::export_c_abi!();
//! ```
//!
//! [`export_c_abi!`] defines the `extern "C"` functions there; the library answers for the
//! standard ops of `pto-op` and the ops of the crates it names. The examples' library is
//! `examples/capi` (`libpto_examples_capi.so`), and `docs/deploying.md` shows the whole crate.
//!
//! The C declarations are in `include/pto_capi.h` ([`HEADER`]). The safe Rust side of each
//! call is [`infer`]; [`ffi`] only converts between C and Rust values.

#![deny(missing_docs)]

use pto_op::{Attributes, DType, OpDef, OpError, RegistryError, Shape, TensorType};

mod export;
pub mod ffi;

/// The C header of the ABI, as shipped in a package's `op_host/pto_capi.h`.
pub const HEADER: &str = include_str!("../include/pto_capi.h");

/// The largest rank the C descriptor holds (`PTO_MAX_RANK`).
pub const MAX_RANK: usize = 8;

/// The status codes of the C functions (`PTO_OK`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum Status {
    /// Success.
    Ok = 0,
    /// A null pointer, a string that is not UTF-8, a rank above [`MAX_RANK`], an unknown
    /// dtype code.
    BadArgument = 1,
    /// No linked op of that name.
    UnknownOp = 2,
    /// The attributes JSON does not parse.
    BadAttributes = 3,
    /// The op's rules refuse the inputs (the message is the op's).
    Rejected = 4,
    /// The caller's output array is too small (`num_outputs` says how many are needed).
    OutputCapacity = 5,
    /// The library panicked (a bug); the message says where.
    Panic = 6,
}

/// An error of one call, with the status it maps to.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CapiError {
    /// An argument is malformed.
    #[error("pto_infer: {0}")]
    BadArgument(String),
    /// No linked op of that name.
    #[error("pto_infer: {0}")]
    UnknownOp(#[source] RegistryError),
    /// The attributes JSON does not parse.
    #[error("pto_infer: op `{op}`: the attributes JSON does not parse: {source}")]
    BadAttributes {
        /// The op.
        op: String,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// The op's rules refuse the inputs.
    #[error("pto_infer: {0}")]
    Rejected(#[source] OpError),
    /// The output array is too small.
    #[error("pto_infer: op `{op}` has {needed} outputs; the output array holds {capacity}")]
    OutputCapacity {
        /// The op.
        op: String,
        /// Outputs the op has.
        needed: usize,
        /// Room given.
        capacity: usize,
    },
}

impl CapiError {
    /// The C status of this error.
    pub fn status(&self) -> Status {
        match self {
            CapiError::BadArgument(_) => Status::BadArgument,
            CapiError::UnknownOp(_) => Status::UnknownOp,
            CapiError::BadAttributes { .. } => Status::BadAttributes,
            CapiError::Rejected(_) => Status::Rejected,
            CapiError::OutputCapacity { .. } => Status::OutputCapacity,
        }
    }
}

/// The attributes of a call from their JSON form: the serde form of [`Attributes`], each
/// value tagged with its type (`{"eps": {"f32": 1e-6}, "causal": {"bool": true}}`); an empty
/// string is no attributes.
///
/// # Errors
///
/// [`CapiError::BadAttributes`] naming `op`.
pub fn parse_attributes(op: &str, json: &str) -> Result<Attributes, CapiError> {
    if json.trim().is_empty() {
        return Ok(Attributes::new());
    }
    serde_json::from_str(json).map_err(|source| CapiError::BadAttributes {
        op: op.to_owned(),
        source,
    })
}

/// The linked op named `op_name` and the attributes of a call of it from their JSON form.
fn op_and_attributes(
    op_name: &str,
    attrs_json: &str,
) -> Result<(&'static OpDef, Attributes), CapiError> {
    let op = pto_op::registry::find(op_name).map_err(CapiError::UnknownOp)?;
    let attrs = parse_attributes(op_name, attrs_json)?;
    Ok((op, attrs))
}

/// The output types of `op_name` for inputs `inputs` and attributes `attrs_json` (see
/// [`parse_attributes`]): the op's own rules, through [`pto_op::OpDef::infer`].
///
/// # Errors
///
/// An unknown op, attributes that do not parse, or the op's rules refusing the inputs.
pub fn infer(
    op_name: &str,
    inputs: &[TensorType],
    attrs_json: &str,
) -> Result<Vec<TensorType>, CapiError> {
    let (op, attrs) = op_and_attributes(op_name, attrs_json)?;
    op.infer(inputs, &attrs).map_err(CapiError::Rejected)
}

/// The output shapes of `op_name` for input shapes `inputs`: the op's `#[infer_shape]` alone,
/// what a graph engine's InferShape hook asks.
///
/// # Errors
///
/// As [`infer`].
pub fn infer_shapes(
    op_name: &str,
    inputs: &[Shape],
    attrs_json: &str,
) -> Result<Vec<Shape>, CapiError> {
    let (op, attrs) = op_and_attributes(op_name, attrs_json)?;
    op.check_input_count(inputs.len())
        .map_err(CapiError::Rejected)?;
    let shapes: Vec<&Shape> = inputs.iter().collect();
    (op.infer_shapes)(&shapes, &attrs).map_err(|e| CapiError::Rejected(e.with_op(op.name)))
}

/// The output dtypes of `op_name` for input dtypes `inputs`: the op's `#[infer_dtype]` alone,
/// what a graph engine's InferDataType hook asks.
///
/// # Errors
///
/// As [`infer`].
pub fn infer_dtypes(
    op_name: &str,
    inputs: &[DType],
    attrs_json: &str,
) -> Result<Vec<DType>, CapiError> {
    let (op, attrs) = op_and_attributes(op_name, attrs_json)?;
    op.check_input_count(inputs.len())
        .map_err(CapiError::Rejected)?;
    (op.infer_dtypes)(inputs, &attrs).map_err(|e| CapiError::Rejected(e.with_op(op.name)))
}

/// The dtype of an ONNX code.
///
/// # Errors
///
/// [`CapiError::BadArgument`] naming `what` for a code pto-op has no dtype of.
pub fn dtype(what: &str, code: i32) -> Result<DType, CapiError> {
    DType::from_onnx_code(code).ok_or_else(|| {
        CapiError::BadArgument(format!("{what}: unknown dtype code {code} (ONNX codes)"))
    })
}

/// The shape of C dims.
///
/// # Errors
///
/// [`CapiError::BadArgument`] naming `what` for a negative dim.
pub fn shape(what: &str, dims: &[i64]) -> Result<Shape, CapiError> {
    dims.iter()
        .map(|&d| {
            usize::try_from(d)
                .map_err(|_| CapiError::BadArgument(format!("{what}: negative dim {d}")))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Shape::new)
}

/// The tensor type of a C descriptor's parts: an ONNX dtype code and dims.
///
/// # Errors
///
/// [`CapiError::BadArgument`] for an unknown dtype code or a negative dim; `what` names the
/// descriptor (`input 1`).
pub fn tensor_type(what: &str, code: i32, dims: &[i64]) -> Result<TensorType, CapiError> {
    Ok(TensorType {
        shape: shape(what, dims)?,
        dtype: dtype(what, code)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(dims: &[usize]) -> TensorType {
        TensorType {
            shape: Shape::new(dims.to_vec()),
            dtype: DType::F32,
        }
    }

    #[test]
    fn infers_with_the_ops_own_rules() -> Result<(), CapiError> {
        let out = infer("std.matmul", &[f32s(&[4, 8]), f32s(&[8, 3])], "{}")?;
        assert_eq!(out, vec![f32s(&[4, 3])]);
        Ok(())
    }

    #[test]
    fn a_refused_input_keeps_the_ops_message() {
        let err = infer("std.matmul", &[f32s(&[4, 8]), f32s(&[7, 3])], "")
            .expect_err("inner dims differ");
        assert_eq!(err.status(), Status::Rejected);
        let message = err.to_string();
        assert!(message.contains("std.matmul"), "{message}");
    }

    #[test]
    fn descriptors_are_checked() {
        assert!(tensor_type("input 0", 1, &[2, 3]).is_ok());
        let err = tensor_type("input 0", 99, &[2]).expect_err("no dtype 99");
        assert!(err.to_string().contains("input 0"), "{err}");
        assert!(tensor_type("input 1", 1, &[-1]).is_err());
    }
}
