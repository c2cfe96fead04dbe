//! # pto-kernel: the tile language and what every consumer of a kernel shares
//!
//! The tile language: kernels, traced into a typed, validated IR with a text form; the device
//! profiles ([`device`]) a kernel is traced, checked and priced for; and the per-instruction
//! cost model ([`cost`]) the simulator and the estimator share. The simulator (pto-backends'
//! `sim`), the Ascend C lowering and the estimator all read kernels through this crate.
//!
//! A kernel describes what one block program does; calling the `#[kernel]` function with a
//! [`Kernel`] traces it into an [`ir::Program`]. Tiles ([`Tile`]) are typed values in the
//! Da Vinci memory levels; offsets are symbolic integers ([`Idx`]) over the program id and
//! loop variables. [`validate`] holds the typing rules, [`text`] the kernel file format.

pub mod buffers;
mod builder;
pub mod cost;
pub mod cube;
pub mod device;
mod idx;
pub mod ir;
pub mod liveness;
pub mod row_reduce;
pub mod rows;
#[cfg(any(test, feature = "test-support"))]
pub mod test_support;
pub mod text;
mod tile;
pub mod top_k;
mod trace;
pub mod ub_plan;
pub mod validate;
pub mod vector_split;

#[cfg(test)]
mod tests;

pub use builder::{Global, Kernel, UNKNOWN_DEVICE_CORES};
pub use idx::{Idx, IntoOffsets};
pub use tile::{IntoOperand, IntoScalar, Tile, TileOrScalar};
pub use validate::ValidProgram;

pub use device::{
    CubeVector, DeviceError, DeviceProfile, EstimatorParams, L2Cache, OpCalibration, PipeModel,
    VectorOpCost,
};
pub use pto_types::{DType, Shape};

// The shared types under the module names the kernel code has always used.
#[cfg(test)]
pub(crate) use pto_types::tensor;
pub(crate) use pto_types::{dtype, error, shape};
