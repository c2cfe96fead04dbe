//! How an ONNX model is imported: the shapes, symbolic dim sizes and constant inputs an
//! [`ImportOptions`] binds.

use std::collections::BTreeMap;

use pto_op::shape::Shape;
use pto_op::tensor::Tensor;

/// How [`from_onnx_with`](crate::from_onnx_with) imports a model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportOptions {
    /// The shapes of graph inputs, by input name: they bind the inputs' symbolic dims
    /// (`batch`, `seq`; exporters write them for dynamic axes), which import needs static.
    /// The static dims of a bound input must agree; an input not named keeps its declared
    /// shape, and a symbolic dim left unbound is an error naming the input and the dim.
    /// A name that is no input but a symbolic dim, with a shape of one size (`seq` =
    /// `[128]`), binds that dim as [`dims`](ImportOptions::dims) does (what `--shape
    /// seq=128` gives).
    pub shapes: BTreeMap<String, Shape>,
    /// The sizes of symbolic dims, by dim name (`batch` = 1, `seq` = 128): every input dim
    /// of that name takes the size. A size that conflicts with an input shape of `shapes`
    /// is an error naming both; a name the model has no dim of is an error listing its dims.
    pub dims: BTreeMap<String, usize>,
    /// The values of graph inputs fixed at import, by input name: each is read as if it were
    /// an initializer of that name, so the params it feeds (Reshape's shape, Slice's starts,
    /// the axes of a reduction: inputs in ONNX, params here) are known. A bound input is no
    /// longer an input of the imported model; its value must have the declared type.
    pub constants: BTreeMap<String, Tensor>,
}

impl ImportOptions {
    /// Fixes the value of input `name` to `value`.
    pub fn constant(mut self, name: impl Into<String>, value: Tensor) -> ImportOptions {
        self.constants.insert(name.into(), value);
        self
    }

    /// Binds input `name` to `shape`.
    pub fn shape(mut self, name: impl Into<String>, shape: impl Into<Shape>) -> ImportOptions {
        self.shapes.insert(name.into(), shape.into());
        self
    }

    /// Binds the symbolic dim `name` (every input dim of that name) to `size`.
    pub fn dim(mut self, name: impl Into<String>, size: usize) -> ImportOptions {
        self.dims.insert(name.into(), size);
        self
    }

    /// True when the options bind nothing (no shape, dim or constant).
    pub fn is_empty(&self) -> bool {
        self.shapes.is_empty() && self.dims.is_empty() && self.constants.is_empty()
    }
}
