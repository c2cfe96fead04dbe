//! The SoCs Ascend C kernels are lowered for, and what each one can do.

use core::fmt;

use pto_op::DType;

/// The CANN release whose Ascend C API names the generated sources use. Kirin's toolkit
/// ships the 9.0 API (`WholeReduceSum`, `DataCopyPad` with `DataCopyExtParams`, ...).
pub const CANN_VERSION: &str = "9.0.0";

/// A target SoC of the lowering: its Da Vinci architecture decides the instructions and
/// dtypes a kernel may use. Buffer sizes are not a SoC fact here: they come from the
/// device profile the kernel is planned for.
///
/// The Ascend C calls the lowering emits, per SoC (from the API docs' per-product support
/// lines):
///
/// | Calls | Ascend 910B | Kirin 9030 / X90 |
/// |---|---|---|
/// | `Add`, `Sub`, `Mul`, `Div`, `Max`, `Min`, `Adds`, `Muls`, `Maxs`, `Mins`, `Exp`, `Ln`, `Sqrt`, `Rsqrt`, `Reciprocal`, `Relu`, `Abs`, `Duplicate`, `Cast`, `Compare`, `Select`, `ReduceSum`/`Max`/`Min` | yes | yes |
/// | `DataCopyPad` | yes | not listed; used in practice |
/// | Math library: `Sin`, `Cos`, `Erf`, `Floor`, `Ceil`, `Power`, `Fmod` (with a `sharedTmpBuffer`) | yes | **not listed**: lowered anyway (the `ascendc-host` target runs them), unverified on a Kirin toolkit |
///
/// `exp2` and `log2` use `Exp`/`Ln` with `Muls`, and `mod` adds `CompareScalar`, `Select`
/// and `Add` to `Fmod`, so only the math-library calls above are in doubt on Kirin.
///
/// ```
/// use pto_backends::ascendc::Soc;
/// let soc = Soc::from_profile_name("kirin9030").unwrap();
/// assert_eq!((soc.arch(), soc.npu_arch()), ("dav-l311", 3101));
/// assert!(!soc.supports(pto_op::DType::BF16));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Soc {
    /// Kirin 9030, Da Vinci Lite `dav-l311`.
    Kirin9030,
    /// Kirin X90, Da Vinci Lite `dav-l300`.
    KirinX90,
    /// Ascend 910B, Da Vinci `dav-c220` (vector and cube cores).
    Ascend910B,
}

impl Soc {
    /// Every SoC, in declaration order.
    pub const ALL: [Soc; 3] = [Soc::Kirin9030, Soc::KirinX90, Soc::Ascend910B];

    /// The SoC of a device profile name (`kirin9030`, `kirinx90`, `ascend910b`), if the
    /// profile is one of a SoC the lowering knows.
    pub fn from_profile_name(name: &str) -> Option<Soc> {
        Soc::ALL.into_iter().find(|soc| soc.profile_name() == name)
    }

    /// The device profile name of this SoC.
    pub const fn profile_name(self) -> &'static str {
        match self {
            Soc::Kirin9030 => "kirin9030",
            Soc::KirinX90 => "kirinx90",
            Soc::Ascend910B => "ascend910b",
        }
    }

    /// The `--soc_version` / `ASCEND_COMPUTE_UNIT` name CANN uses for it.
    pub const fn soc_version(self) -> &'static str {
        match self {
            Soc::Kirin9030 => "Kirin9030",
            Soc::KirinX90 => "KirinX90",
            Soc::Ascend910B => "Ascend910B1",
        }
    }

    /// The Da Vinci architecture (`--cce-aicore-arch`).
    pub const fn arch(self) -> &'static str {
        match self {
            Soc::Kirin9030 => "dav-l311",
            Soc::KirinX90 => "dav-l300",
            Soc::Ascend910B => "dav-c220",
        }
    }

    /// The value of `__NPU_ARCH__` kernels are compiled with.
    pub const fn npu_arch(self) -> u32 {
        match self {
            Soc::Kirin9030 => 3101,
            Soc::KirinX90 => 3003,
            Soc::Ascend910B => 2201,
        }
    }

    /// Whether the SoC's cube and vector units are separate cores (the 910B's AIC and two
    /// AIVs per AI core, `dav-c220`), which exchange data only through global memory; on
    /// Kirin (Da Vinci Lite) they are one core (coupled), with L0C -> UB and UB -> L1 paths.
    pub const fn split_cores(self) -> bool {
        matches!(self, Soc::Ascend910B)
    }

    /// Whether tiles of `dtype` can live in the SoC's on-core buffers. Da Vinci Lite
    /// (Kirin) has no bf16 vector or cube support; no SoC here lowers 64-bit or 8-bit
    /// integer tiles, nor 16-bit or unsigned 32/64-bit integer or f64 tiles.
    pub const fn supports(self, dtype: DType) -> bool {
        match dtype {
            DType::F32 | DType::F16 | DType::I32 | DType::Bool => true,
            DType::BF16 => matches!(self, Soc::Ascend910B),
            DType::I64
            | DType::I8
            | DType::U8
            | DType::I16
            | DType::U16
            | DType::U32
            | DType::U64
            | DType::F64 => false,
            // Storage-only dtypes (`DType::is_storage_only`): no kernel computes in them.
            DType::F8E4M3FN
            | DType::F8E4M3FNUZ
            | DType::F8E5M2
            | DType::F8E5M2FNUZ
            | DType::F8E8M0
            | DType::F4E2M1
            | DType::I4
            | DType::U4
            | DType::I2
            | DType::U2 => false,
        }
    }
}

impl fmt::Display for Soc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.profile_name())
    }
}
