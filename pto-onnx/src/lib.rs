//! # pto-onnx: ONNX import and export of pto-op models
//!
//! ONNX export and import of a [`Model`](pto_op::Model), the models whose inputs keep
//! symbolic dims until they are bound ([`SymbolicModel`], [`LoadedModel`]), and the version 2
//! model file that saves them (an ONNX `ModelProto` kept as hex beside the initializers'
//! tensors). The crate sits above pto-op: an operator crate that uses no ONNX builds neither
//! it nor `prost`.
//!
//! - Standard ops (`std.*`) become ONNX operators of the default domain, by one table in
//!   `standard.rs` that both directions read (`std.silu` has no ONNX operator and is written
//!   as Sigmoid then Mul, so it imports as `std.sigmoid` and `std.mul`).
//! - Every other op is a node of its own domain: the op name up to its last dot
//!   (`demo.rms_norm` is op_type `rms_norm` of domain `demo`), with one opset import per
//!   domain whose version is the highest version of that domain's ops in the model. The
//!   node's `metadata_props` hold the op's own version and schema fingerprint
//!   (`pto.version`, `pto.fingerprint`); import refuses a node whose fingerprint differs
//!   from the linked op's.
//! - Params are typed attributes: f32 -> FLOAT, i32 and i64 -> INT, bool -> INT 0 or 1,
//!   String -> STRING, `Vec<i64>` -> INTS, `Vec<f32>` -> FLOATS. ONNX attributes have no
//!   double, and FLOAT would round an f64, so an f64 param is a TENSOR attribute holding a
//!   DOUBLE scalar (exact). Import reads each attribute with the type the op's schema gives
//!   its param.
//! - Weights are initializers (raw little-endian data); graph inputs and outputs carry
//!   their element type and static shape.
//! - The shipped kernels ([`ShippedKernel`](pto_op::model::ShippedKernel): key and text form,
//!   one per kernel instance, see
//!   [`Model::with_traced_kernels`](pto_op::Model::with_traced_kernels)) are the model's
//!   `metadata_props` entry `pto.kernels`, as JSON; import reads them back.
//!
//! ```
//! use pto_op::prelude::*;
//!
//! /// y = x * scale
//! #[custom_op(name = "doc.onnx_scale", params(scale: f32 = 2.0))]
//! pub mod scale {
//!     use super::*;
//!     #[infer_shape]
//!     fn infer_shape(x: &Shape, _p: &Params) -> Result<Shape, OpError> { Ok(x.clone()) }
//!     #[infer_dtype]
//!     fn infer_dtype(x: DType, _p: &Params) -> Result<DType, OpError> { Ok(x) }
//!     #[reference]
//!     fn reference(x: &Tensor, p: &Params) -> Result<Tensor, OpError> {
//!         Ok(Tensor::from_array(x.view::<f32>()?.mapv(|v| v * p.scale)))
//!     }
//! }
//!
//! fn main() {
//!     let g = Graph::new();
//!     let x = g.input("x", Shape::from([2, 3]), DType::F32);
//!     let y = scale::apply(&x, &scale::Params { scale: 0.5 }).unwrap();
//!     g.output(&y);
//!     let model = g.to_model("scaled").unwrap();
//!     let bytes = pto_onnx::to_onnx(&model).unwrap();
//!     assert_eq!(pto_onnx::from_onnx(&bytes).unwrap(), model);
//! }
//! ```
//!
//! The parts: the ONNX messages ([`proto`]), reading a file without holding its weights
//! twice (`read.rs`), the table of standard ops both directions read (`standard.rs`),
//! export (`export.rs`), import (`import/`, whose one table of op handlers,
//! `import/table.rs`, lists every ONNX operator it reads), models with symbolic dims
//! (`symbolic.rs`, `loaded.rs`) and their model file (`symbolic_file.rs`), and ONNX files
//! on disk (`onnx_file.rs`).

#![forbid(unsafe_code)]

mod error;
mod export;
mod format;
mod import;
mod loaded;
mod onnx_file;
pub mod proto;
mod read;
mod standard;
mod symbolic;
mod symbolic_file;
#[cfg(test)]
mod tests;

pub use error::OnnxError;
pub use export::{ONNX_RUNTIME_MAX_OPSET, file_runtime_warning, runtime_warning, to_onnx};
pub use format::{FINGERPRINT_KEY, IR_VERSION, KERNELS_KEY, PRODUCER, VERSION_KEY};
pub use import::{
    ImportOptions, from_onnx, from_onnx_with, imported_op_types, param_inputs, tensor_from_onnx,
    tensor_of_value,
};
pub use loaded::LoadedModel;
pub use onnx_file::OnnxFile;
pub use pto_op::model::{Dim, SymbolicValue};
pub use symbolic::SymbolicModel;
