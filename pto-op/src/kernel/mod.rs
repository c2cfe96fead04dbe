//! The kernel builder that a `#[kernel]` function is called with.
//!
//! A kernel describes what one block program does; calling the `#[kernel]` function with a
//! [`Kernel`] traces it. This module holds the entry points every kernel needs (its global
//! tensors and its grid); the tile instructions are the tile language's.

pub mod ir;
use crate::dtype::DType;
use crate::error::OpError;
use crate::shape::Shape;

/// A tensor in global memory (GM), as a kernel sees its inputs and outputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Global {
    name: String,
    shape: Shape,
    dtype: DType,
}

impl Global {
    /// A global tensor named after the op's input or output.
    pub fn new(name: impl Into<String>, shape: Shape, dtype: DType) -> Global {
        Global {
            name: name.into(),
            shape,
            dtype,
        }
    }

    /// The input or output name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The shape.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The two dimensions of a rank-2 tensor, or an error naming this tensor.
    ///
    /// ```
    /// use pto_op::{DType, Global, Shape};
    /// let x = Global::new("x", Shape::from([4, 64]), DType::F16);
    /// assert_eq!(x.dims2().unwrap(), (4, 64));
    /// ```
    pub fn dims2(&self) -> Result<(usize, usize), OpError> {
        match self.shape.dims() {
            [rows, cols] => Ok((*rows, *cols)),
            _ => Err(OpError::input(
                self.name.clone(),
                format!("the kernel expects rank 2, got shape {}", self.shape),
            )),
        }
    }
}

/// The builder a `#[kernel]` function is traced with.
#[derive(Debug, Clone, PartialEq)]
pub struct Kernel {
    op: String,
    grid: Option<usize>,
}

impl Kernel {
    /// A fresh builder for tracing the kernel of op `op`.
    pub fn new(op: impl Into<String>) -> Kernel {
        Kernel {
            op: op.into(),
            grid: None,
        }
    }

    /// The op being traced.
    pub fn op(&self) -> &str {
        &self.op
    }

    /// Sets the number of block programs, spread over the AI cores. Must be at least 1.
    pub fn grid(&mut self, programs: usize) -> Result<(), OpError> {
        if programs == 0 {
            return Err(
                OpError::invalid("grid(0): a kernel needs at least one block program")
                    .with_op(&self.op),
            );
        }
        self.grid = Some(programs);
        Ok(())
    }

    /// The number of block programs; 1 until [`Kernel::grid`] is called.
    pub fn grid_size(&self) -> usize {
        self.grid.unwrap_or(1)
    }
}
