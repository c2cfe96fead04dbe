//! The tile language: kernels, traced into a typed, validated IR with a text form.
//!
//! A kernel describes what one block program does; calling the `#[kernel]` function with a
//! [`Kernel`] traces it into an [`ir::Program`]. Tiles ([`Tile`]) are typed values in the
//! Da Vinci memory levels; offsets are symbolic integers ([`Idx`]) over the program id and
//! loop variables. [`validate`] holds the typing rules, [`text`] the kernel file format.

mod builder;
pub mod cost;
pub mod cube;
mod idx;
pub mod ir;
pub mod row_reduce;
pub mod rows;
#[cfg(any(test, feature = "test-support"))]
pub mod test_support;
pub mod text;
mod tile;
pub mod validate;
pub mod vector_split;

#[cfg(test)]
mod tests;

pub use builder::{Global, Kernel, UNKNOWN_DEVICE_CORES};
pub use idx::{Idx, IntoOffsets};
pub use tile::{IntoOperand, IntoScalar, Tile, TileOrScalar};
pub use validate::ValidProgram;
