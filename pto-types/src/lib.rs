//! # pto-types: the values every layer of pto-op shares
//!
//! Element types ([`DType`], the low-precision floats and integers of [`lowp`]), shapes,
//! tensors and their comparison, tolerances, the error type of ops ([`OpError`]), and the
//! file access ([`fs`]: regular files only, capped reads, atomic writes). Everything above (the kernel layer, op descriptions, ONNX,
//! the targets, the estimator) builds on these; this crate depends on no other pto crate.
//!
//! Op crates name these through `pto_op` (`pto_op::DType`, `pto_op::Tensor`, ...), which
//! re-exports them.
//!
//! ```
//! use pto_types::{DType, Shape, Tensor};
//! let t = Tensor::zeros(Shape::from([2, 3]), DType::F16);
//! assert_eq!(t.shape(), Shape::from([2, 3]));
//! ```

pub mod dtype;
pub mod error;
pub mod fs;
pub mod lowp;
pub mod name;
pub mod shape;
pub mod table;
pub mod tensor;
pub mod tensor_type;
pub mod tolerance;

pub use dtype::DType;
pub use error::{BackendError, OpError, OutputMismatch};
pub use shape::{MAX_DIM, MAX_TENSOR_BYTES, Shape, SizeError};
pub use tensor::{Comparison, Element, Mismatch, SplitMix64, Tensor, TensorData, TensorError};
pub use tensor_type::TensorType;
pub use tolerance::Tolerance;

// For the element-type macros of `tensor` (`dispatch!`, `with_dtype!`), in other crates.
#[doc(hidden)]
pub use half as __half;
