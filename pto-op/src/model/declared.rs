//! The declared types of a model's graph inputs and outputs, some dims symbolic (`batch`,
//! `seq`): what an ONNX exporter writes for dynamic axes, what a model with symbolic dims
//! (`pto_onnx::SymbolicModel`) keeps until it is bound, and what the `inputs` and `outputs`
//! entries of a version 2 model file hold as JSON (a dim is a size, a name, or `null` for an
//! unnamed one).

use core::fmt;

use serde::{Deserialize, Serialize};

use crate::dtype::DType;
use crate::shape::Shape;

/// One dim of a declared input or output type.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Dim {
    /// A static size.
    Size(usize),
    /// A symbolic size by name (`batch`): every dim of that name has the same size.
    Named(String),
    /// A symbolic size without a name (`?`): bound by its input's whole shape.
    Unnamed,
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Size(size) => write!(f, "{size}"),
            Dim::Named(name) => f.write_str(name),
            Dim::Unnamed => f.write_str("?"),
        }
    }
}

/// A graph input or output as the model declares it: name, dtype and dims, some symbolic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SymbolicValue {
    /// The value's name.
    pub name: String,
    /// Its element type.
    pub dtype: DType,
    /// Its dims, outermost first.
    pub dims: Vec<Dim>,
}

impl SymbolicValue {
    /// True when no dim is symbolic.
    pub fn is_static(&self) -> bool {
        self.dims.iter().all(|d| matches!(d, Dim::Size(_)))
    }

    /// The value of a static type.
    pub fn of_shape(name: impl Into<String>, dtype: DType, shape: &Shape) -> SymbolicValue {
        SymbolicValue {
            name: name.into(),
            dtype,
            dims: shape.dims().iter().map(|&d| Dim::Size(d)).collect(),
        }
    }
}

impl fmt::Display for SymbolicValue {
    /// `input_ids i64[batch, seq]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}[", self.name, self.dtype)?;
        for (i, dim) in self.dims.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{dim}")?;
        }
        f.write_str("]")
    }
}

/// The names of the symbolic dims of `values`, in order of first appearance (unnamed dims,
/// bound by their value's whole shape, are not listed).
///
/// ```
/// use pto_op::DType;
/// use pto_op::model::{Dim, SymbolicValue, named_dims};
/// let ids = SymbolicValue {
///     name: "input_ids".to_owned(),
///     dtype: DType::I64,
///     dims: vec![Dim::Named("batch".to_owned()), Dim::Named("seq".to_owned()), Dim::Unnamed],
/// };
/// assert_eq!(named_dims(&[ids]), ["batch", "seq"]);
/// ```
pub fn named_dims(values: &[SymbolicValue]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for value in values {
        for dim in &value.dims {
            if let Dim::Named(name) = dim
                && !names.contains(name)
            {
                names.push(name.clone());
            }
        }
    }
    names
}
