//! Execution targets of pto-op operators, and the model runtime.
//!
//! - `ascendc` (feature `device`): kernels lowered to Ascend C, and the `ascendc-host`
//!   target running the generated sources on the host.
//! - [`cpu`]: runs each op's `#[reference]`; the correctness baseline.
//! - [`sim`]: the tile simulator; runs each op's `#[kernel]` on a device profile.
//! - [`compiler`]: a model checked, planned and lowered for a target, run many times.
//! - [`parity`]: one model on two targets, every output compared.
//! - [`buffers`], [`compat`]: activation memory planning; how linked ops changed since a
//!   model was built.
//! - `kirin` (feature `device`): a Kirin or Ascend NPU through its vendor runtime, loaded at
//!   run time.

#[cfg(feature = "device")]
pub mod ascendc;
pub mod buffers;
pub mod compat;
pub mod compiler;
pub mod cpu;
mod instances;
#[cfg(feature = "device")]
pub mod kirin;
pub mod parity;
pub mod sim;
// The Ascend C lowering's UB plan is the kernel layer's (`pto_op::kernel::ub_plan`), which the
// simulator's buffer check reads too; the lowering names it `crate::ub_plan`.
#[cfg(feature = "device")]
pub(crate) use pto_op::kernel::ub_plan;

/// Items that macros of this crate name. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use pto_op::__private::linkme;
    pub use pto_op::SourceLocation;
}
