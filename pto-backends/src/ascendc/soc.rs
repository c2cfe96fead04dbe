//! The SoCs Ascend C kernels are lowered for, and what each one can do.

use core::fmt;

use pto_op::DType;

/// The pattern of the storage-only dtypes ([`DType::is_storage_only`]): no kernel computes
/// in them, so no SoC lowers them ([`Soc::supports`]). One list for every match over
/// dtypes here, which stays exhaustive.
macro_rules! storage_only_dtypes {
    () => {
        ::pto_op::DType::F8E4M3FN
            | ::pto_op::DType::F8E4M3FNUZ
            | ::pto_op::DType::F8E5M2
            | ::pto_op::DType::F8E5M2FNUZ
            | ::pto_op::DType::F8E8M0
            | ::pto_op::DType::F4E2M1
            | ::pto_op::DType::I4
            | ::pto_op::DType::U4
            | ::pto_op::DType::I2
            | ::pto_op::DType::U2
    };
}
pub(crate) use storage_only_dtypes;

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
/// | `Add`, `Sub`, `Mul`, `Div`, `Max`, `Min`, `Adds`, `Muls`, `Maxs`, `Mins`, `Exp`, `Ln`, `Sqrt`, `Rsqrt`, `Reciprocal`, `Relu`, `Abs`, `Duplicate`, `Cast`, `Compare`, `Select`, `WholeReduceSum`/`Max`/`Min` | yes | yes |
/// | `DataCopyPad` | yes | not listed; used in practice |
/// | `BlockReduceSum`/`Max`/`Min`, `Brcb` (a row reduction's group path, where the profile prices group reduces: the 910B's) | yes | listed; not emitted (no group reduces in the Kirin profiles) |
/// | Math library: `Sin`, `Cos`, `Erf`, `Floor`, `Ceil`, `Power`, `Fmod` (with a `sharedTmpBuffer`) | yes | **not listed**: lowered anyway (the `ascendc-host` target runs them), unverified on a Kirin toolkit |
///
/// `exp2` and `log2` use `Exp`/`Ln` with `Muls`, and `mod` adds `CompareScalar`, `Select`
/// and `Add` to `Fmod`, so only the math-library calls above are in doubt on Kirin.
///
/// ```
/// use pto_backends::ascendc::Soc;
/// let soc = Soc::from_profile_name("kirin9030").unwrap();
/// assert_eq!((soc.arch(), soc.npu_arch()), ("dav-l311", 3113));
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

    /// The device profiles the lowering knows, with their SoC: each SoC's own
    /// ([`Soc::profile_name`]), and `ascend910b2`, a 910B of the same buffers, units and
    /// core counts at 1.8 GHz, lowered and packaged as the 910B (CANN builds one package,
    /// `ASCEND_COMPUTE_UNIT` `ascend910b`, for the family).
    pub const PROFILES: [(&'static str, Soc); 4] = [
        ("kirin9030", Soc::Kirin9030),
        ("kirinx90", Soc::KirinX90),
        ("ascend910b", Soc::Ascend910B),
        ("ascend910b2", Soc::Ascend910B),
    ];

    /// The SoC of a device profile name (one of [`Soc::PROFILES`]: `kirin9030`, `kirinx90`,
    /// `ascend910b`, `ascend910b2`), if the profile is one of a SoC the lowering knows.
    ///
    /// ```
    /// use pto_backends::ascendc::Soc;
    /// assert_eq!(Soc::from_profile_name("ascend910b2"), Some(Soc::Ascend910B));
    /// assert_eq!(Soc::from_profile_name("gpu"), None);
    /// ```
    pub fn from_profile_name(name: &str) -> Option<Soc> {
        Soc::PROFILES
            .into_iter()
            .find_map(|(profile, soc)| (profile == name).then_some(soc))
    }

    /// The names of [`Soc::PROFILES`], comma-separated, for messages.
    pub fn profile_names() -> String {
        Soc::PROFILES.map(|(name, _)| name).join(", ")
    }

    /// The device profile name of this SoC (its own: `ascend910b2` is of the 910B, whose
    /// profile name is `ascend910b`).
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

    /// The value of `__NPU_ARCH__` kernels are compiled with (asc-devkit
    /// `impl/basic_api/kernel_event.h` tests 3113 for dav-l311 and 3003 for dav-l300).
    pub const fn npu_arch(self) -> u32 {
        match self {
            Soc::Kirin9030 => 3113,
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
            storage_only_dtypes!() => false,
        }
    }
}

impl fmt::Display for Soc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.profile_name())
    }
}

#[cfg(test)]
mod tests {
    use super::Soc;

    #[test]
    fn every_built_in_device_profile_is_of_a_soc() {
        for name in pto_op::DeviceProfile::builtin_names() {
            assert!(Soc::from_profile_name(name).is_some(), "{name}");
        }
        for soc in Soc::ALL {
            assert_eq!(Soc::from_profile_name(soc.profile_name()), Some(soc));
        }
    }

    /// The 910B2 lowers as the 910B: its profile differs only in clock and bandwidths, never
    /// in what the lowering reads (buffers, units, core counts).
    #[test]
    fn the_910b2_profile_has_the_910bs_buffers_units_and_cores() {
        let b = pto_op::DeviceProfile::builtin("ascend910b").unwrap();
        let b2 = pto_op::DeviceProfile::builtin("ascend910b2").unwrap();
        assert_ne!(b2.clock_hz, b.clock_hz);
        // The 910B2 with the 910B's name, notes, clock and bandwidths is the 910B.
        let as_910b = pto_op::DeviceProfile {
            name: b.name.clone(),
            description: b.description.clone(),
            notes: b.notes.clone(),
            clock_hz: b.clock_hz,
            memory_bandwidth: b.memory_bandwidth,
            l2: b.l2,
            ..b2
        };
        assert_eq!(as_910b, b);
    }
}
