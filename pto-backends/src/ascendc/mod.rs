//! Lowering of kernel IR to Ascend C, and the `ascendc-host` target that runs the generated
//! sources on the host (behind the cargo feature `device`).
//!
//! - [`soc`]: the target SoCs and what each supports; [`capability`]: the table of the
//!   Ascend C call paths each SoC has, which the lowering and the host implementation read.
//! - [`lower()`]: one traced kernel instance -> an Ascend C kernel source with its tiling
//!   header ([`LoweredKernel`]), written against the CANN 9.0.0 API names.
//! - [`package`]: the custom-op package of a model (msopgen layout, manifest, check, build),
//!   and redeploying its edited kernels ([`package::redeploy()`]).
//! - [`host`]: the `ascendc-host` execution target: the generated kernel is compiled with
//!   the system C++ compiler against this crate's header-only host implementation of the
//!   Ascend C API subset (`pto-backends/ascendc/include/`), which enforces what the device
//!   would (buffer capacity, 32-byte alignment, queue discipline, repeat limits), and every
//!   block of the grid runs in turn, like Ascend C's CPU debug mode.
//!
//! ```
//! use pto_backends::ascendc::{Soc, lower};
//! use pto_op::{Attributes, DType, Shape, TensorType};
//!
//! let add = pto_op::ops::add::def();
//! let x = TensorType { shape: Shape::from([4, 64]), dtype: DType::F16 };
//! let kernel = lower(add, &[x.clone(), x], &Attributes::new(), Soc::Kirin9030).unwrap();
//! assert_eq!(kernel.entry, "std_add");
//! assert!(kernel.kernel_source.contains(
//!     "extern \"C\" __global__ __aicore__ void std_add(GM_ADDR a, GM_ADDR b, GM_ADDR y, \
//!      GM_ADDR workspace, GM_ADDR tiling)"
//! ));
//! assert!(kernel.kernel_source.contains("Add("));
//! ```

pub mod capability;
pub mod child;
pub mod host;
mod lower;
pub mod package;
// The UB plan is the crate's (`crate::ub_plan`): the simulator checks UB with it too.
use crate::ub_plan as plan;
pub mod soc;

use pto_op::device::PerBuffer;
use pto_op::{DType, OpError};

pub use child::ChildLimits;
pub use host::{AscendcHost, HostBuild, HostError};
pub use lower::{lower, lower_program, lower_with_profile};
pub use soc::{CANN_VERSION, Soc};

/// One input or output of a lowered kernel, in the entry's argument order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelTensor {
    /// The op's name for it.
    pub name: String,
    /// Its shape in this instance.
    pub shape: Vec<usize>,
    /// Its dtype.
    pub dtype: DType,
}

/// One field of the tiling struct and its value for this instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TilingField {
    /// The C identifier of the field (`x_dim0`, `grid`).
    pub name: String,
    /// Its value.
    pub value: u32,
}

/// A kernel instance lowered to Ascend C: the sources of `op_kernel/<entry>.cpp` and its
/// tiling header, and what a package or a host harness needs to call it.
#[derive(Debug, Clone, PartialEq)]
pub struct LoweredKernel {
    /// The op's name (`demo.gelu_affine`).
    pub op: String,
    /// The C identifier of the kernel entry (`demo_gelu_affine`); also the file stem.
    pub entry: String,
    /// The SoC it was lowered for.
    pub soc: Soc,
    /// The full `op_kernel/<entry>.cpp`.
    pub kernel_source: String,
    /// `op_kernel/<entry>_tiling.h`: the tiling struct of this kernel.
    pub tiling_header: String,
    /// The C++ name of the tiling struct (`DemoGeluAffineTilingData`).
    pub tiling_struct: String,
    /// The tiling struct's fields with this instance's values, in declaration order.
    pub tiling: Vec<TilingField>,
    /// The number of block programs of the traced kernel.
    pub grid: u32,
    /// The number of cores launched: the grid, capped at the profile's AI cores; each core
    /// runs block programs `GetBlockIdx()`, `+ GetBlockNum()`, ...
    pub block_dim: u32,
    /// The inputs, in entry argument order.
    pub inputs: Vec<KernelTensor>,
    /// The outputs, after the inputs in entry argument order.
    pub outputs: Vec<KernelTensor>,
    /// Bytes the kernel's `TPipe` reserves per buffer (UB, L1, L0A, L0B, L0C); in a mix
    /// kernel UB is each vector core's (half the rows of a block program's tiles where the
    /// two share it by rows) and the others the cube core's.
    pub buffer_bytes: PerBuffer,
    /// Which cores run it (declared with `KERNEL_TASK_TYPE_DEFAULT` on the 910B).
    pub kernel_type: KernelType,
    /// Bytes of user workspace (GM) the kernel needs: the slots through which a mix
    /// kernel's cube and vector cores hand tiles over, per launched block; 0 otherwise.
    pub workspace_bytes: u64,
}

/// The cores a kernel runs on, and how it declares them.
///
/// On a coupled SoC (Kirin: cube and vector units in one AI core) a kernel runs on one core
/// per block and declares nothing. On the 910B (`dav-c220`) the cube core (AIC: L1, L0A/B/C,
/// the cube, Fixpipe) and the two vector cores (AIV: UB, the vector unit) of an AI core are
/// separate cores that share only global memory: a kernel that uses both is a mix kernel of
/// one AIC and two AIVs per block, and the API's kernel type macro says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KernelType {
    /// One core per block with both units (Kirin).
    Coupled,
    /// The vector cores only (`KERNEL_TYPE_AIV_ONLY`): one AIV per block.
    AivOnly,
    /// The cube cores only (`KERNEL_TYPE_AIC_ONLY`): one AIC per block.
    AicOnly,
    /// One AIC and two AIVs per block (`KERNEL_TYPE_MIX_AIC_1_2`).
    MixAic1Aiv2,
}

impl KernelType {
    /// The `KernelMetaType` the kernel declares (`KERNEL_TASK_TYPE_DEFAULT(...)`), none on
    /// a coupled SoC.
    pub const fn declaration(self) -> Option<&'static str> {
        match self {
            KernelType::Coupled => None,
            KernelType::AivOnly => Some("KERNEL_TYPE_AIV_ONLY"),
            KernelType::AicOnly => Some("KERNEL_TYPE_AIC_ONLY"),
            KernelType::MixAic1Aiv2 => Some("KERNEL_TYPE_MIX_AIC_1_2"),
        }
    }
}

/// Why a kernel instance could not be lowered.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LowerError {
    /// The op's kernel could not be traced for this instance.
    #[error("op `{op}`: tracing the kernel failed")]
    Trace {
        /// The op.
        op: String,
        /// The trace error.
        #[source]
        source: OpError,
    },
    /// The device profile of the SoC could not be loaded.
    #[error("op `{op}`: no device profile for SoC {soc}: {message}")]
    Profile {
        /// The op.
        op: String,
        /// The SoC.
        soc: Soc,
        /// Why.
        message: String,
    },
    /// An instruction (or one of its dtypes) that this SoC or this lowering cannot do.
    #[error("op `{op}`: inst {inst} ({mnemonic}): {message} on {soc} ({arch})")]
    Unsupported {
        /// The op.
        op: String,
        /// The instruction's number, in program order with loop bodies after their loop.
        inst: usize,
        /// Its mnemonic.
        mnemonic: String,
        /// The SoC.
        soc: Soc,
        /// The SoC's architecture.
        arch: &'static str,
        /// What cannot be done.
        message: String,
    },
    /// The buffers the kernel reserves exceed a buffer of the device profile.
    #[error(
        "op `{op}`: the kernel reserves {needed} bytes of {buffer} ({detail}), the {device} \
         profile has {limit}"
    )]
    Capacity {
        /// The op.
        op: String,
        /// UB, L1, L0A, L0B or L0C.
        buffer: &'static str,
        /// Bytes reserved.
        needed: u64,
        /// The profile's name.
        device: String,
        /// The buffer's capacity.
        limit: u64,
        /// What the bytes are for.
        detail: String,
    },
}

impl LowerError {
    /// True when the SoC cannot hold one of the instance's dtypes (bf16 on Kirin): the
    /// instance is not deployable there, rather than wrongly lowered.
    pub fn is_unsupported_dtype(&self) -> bool {
        matches!(self, LowerError::Unsupported { message, .. } if message.starts_with(UNSUPPORTED_DTYPE))
    }

    /// True when the kernel needs a call path the SoC does not have (the capability table,
    /// [`capability`]: an f32 `Mmad` on Kirin, `Fixpipe` L0C -> UB): the instance is not
    /// deployable there. The `ascendc-host` target declines it (the CPU reference runs it,
    /// as for a dtype the SoC cannot hold); `pto package` refuses it with this error.
    pub fn is_unsupported_on_soc(&self) -> bool {
        matches!(self, LowerError::Unsupported { message, .. } if message.starts_with(UNSUPPORTED_CALL))
    }

    /// Whether the SoC cannot run the instance at all ([`LowerError::is_unsupported_dtype`]
    /// or [`LowerError::is_unsupported_on_soc`]), rather than the lowering getting it wrong.
    pub fn declines(&self) -> bool {
        self.is_unsupported_dtype() || self.is_unsupported_on_soc()
    }
}

/// The start of the message of a [`LowerError::Unsupported`] about a call path the SoC
/// lacks.
pub(crate) const UNSUPPORTED_CALL: &str = "not on this SoC:";

/// The start of the message of a [`LowerError::Unsupported`] about a dtype.
pub(crate) const UNSUPPORTED_DTYPE: &str = "dtype";
