//! What each SoC's Ascend C API has: one table, read by the lowering before it emits a call
//! and by the host implementation (`ascendc_host/*.h`) before it runs one.
//!
//! Every row is a call path (an API with its source and destination positions, or its
//! element types, or an event), the SoCs that have it, and the public source that says so:
//! the API docs' per-product support lines and type tables (`mirror-cann/asc-devkit`,
//! `docs/zh/api/SIMD-API/...`) and the per-architecture implementations, where a path a
//! product lacks is a stub (`impl/basic_api/dav_l311/...`: `ASCENDC_ASSERT(false, ..)`, which
//! compiles to nothing on the device, so the call would silently do nothing).
//!
//! The host implementation gets the table of the SoC it runs for as a generated header,
//! `ascendc_host_soc.h` ([`host_header`]): `ASCENDC_HOST_CAP_<ID>` is 1 or 0, and a call the
//! SoC lacks fails with the call, the SoC and the source, as any other host rule does.
//!
//! ```
//! use pto_backends::ascendc::Soc;
//! use pto_backends::ascendc::capability::Cap;
//! assert!(Soc::Ascend910B.has(Cap::MmadF16F32));
//! assert!(!Soc::Kirin9030.has(Cap::MmadF16F32));
//! assert!(Soc::Kirin9030.has(Cap::MmadF16F16));
//! assert!(!Soc::KirinX90.has(Cap::FixpipeL0cToUb));
//! ```

use core::fmt::Write as _;

use super::Soc;

/// The file name of [`host_header`]'s header, on the host implementation's include path.
pub const HOST_HEADER: &str = "ascendc_host_soc.h";

/// The API docs' directory of the matrix calls, in `mirror-cann/asc-devkit`.
const MATRIX_DOCS: &str = "asc-devkit docs/zh/api/SIMD-API/基础API/矩阵计算（ISASI）";

/// One call path a SoC has or lacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cap {
    /// `Mmad` of half x half into a float L0C.
    MmadF16F32,
    /// `Mmad` of bfloat16 x bfloat16 into a float L0C.
    MmadBf16F32,
    /// `Mmad` of float x float into a float L0C.
    MmadF32F32,
    /// `Mmad` of int8 x int8 into an int32 L0C.
    MmadS8S32,
    /// `Mmad` of half x half into a half L0C.
    MmadF16F16,
    /// `LoadData` L1 -> L0A / L0B with `LoadData2DParams` (2D v1).
    LoadData2dV1,
    /// `LoadData` L1 -> L0A / L0B with `LoadData2DParamsV2` (2D v2).
    LoadData2dV2,
    /// `LoadDataWithTranspose` L1 -> L0A / L0B of 8- and 16-bit types.
    LoadDataWithTranspose,
    /// `LoadDataWithTranspose` L1 -> L0A / L0B of 32-bit types.
    LoadDataWithTransposeB32,
    /// `Fixpipe` L0C -> UB.
    FixpipeL0cToUb,
    /// `Fixpipe` L0C -> GM.
    FixpipeL0cToGm,
    /// `HardEvent::FIX_V` and `HardEvent::V_FIX`.
    EventFixV,
}

/// A row of the table.
#[derive(Debug, Clone, Copy)]
pub struct Row {
    /// The capability.
    pub cap: Cap,
    /// Its C identifier in `ascendc_host_soc.h` (`ASCENDC_HOST_CAP_<id>`).
    pub id: &'static str,
    /// The call path, as a message names it.
    pub call: &'static str,
    /// The SoCs that have it.
    pub socs: &'static [Soc],
    /// Where the table says so (repository and path, and the line or table).
    pub source: &'static str,
}

/// The table, one row per [`Cap`].
pub const TABLE: [Row; 12] = [
    Row {
        cap: Cap::MmadF16F32,
        id: "MMAD_F16_F32",
        call: "Mmad(half x half -> float L0C)",
        socs: &[Soc::Ascend910B],
        source: "Mmad计算/Mmad.md, tables 7 (Atlas A2: half x half -> float), 11 (Kirin X90: \
                 int8 -> int32, half -> half only) and 12 (Kirin 9030: half -> half only)",
    },
    Row {
        cap: Cap::MmadBf16F32,
        id: "MMAD_BF16_F32",
        call: "Mmad(bfloat16 x bfloat16 -> float L0C)",
        socs: &[Soc::Ascend910B],
        source: "Mmad计算/Mmad.md, tables 7, 11 and 12",
    },
    Row {
        cap: Cap::MmadF32F32,
        id: "MMAD_F32_F32",
        call: "Mmad(float x float -> float L0C)",
        socs: &[Soc::Ascend910B],
        source: "Mmad计算/Mmad.md, tables 7, 11 and 12 (no float operands on Kirin)",
    },
    Row {
        cap: Cap::MmadS8S32,
        id: "MMAD_S8_S32",
        call: "Mmad(int8 x int8 -> int32 L0C)",
        socs: &[Soc::Ascend910B, Soc::KirinX90],
        source: "Mmad计算/Mmad.md, tables 7 and 11 (table 12: not on Kirin 9030)",
    },
    Row {
        cap: Cap::MmadF16F16,
        id: "MMAD_F16_F16",
        call: "Mmad(half x half -> half L0C)",
        socs: &[Soc::KirinX90, Soc::Kirin9030],
        source: "Mmad计算/Mmad.md, tables 11 and 12 (table 7: not on Atlas A2)",
    },
    Row {
        cap: Cap::LoadData2dV1,
        id: "LOAD_DATA_2D_V1",
        call: "LoadData(L1 -> L0A/L0B, LoadData2DParams)",
        socs: &[Soc::Ascend910B, Soc::KirinX90],
        source: "矩阵计算的搬入/LoadData_2D.md (Kirin X90: int8_t, half); \
                 impl/basic_api/dav_l311/kernel_operator_mm_impl.h: \"LoadData 2dv1 is not \
                 supported\" on Kirin 9030",
    },
    Row {
        cap: Cap::LoadData2dV2,
        id: "LOAD_DATA_2D_V2",
        call: "LoadData(L1 -> L0A/L0B, LoadData2DParamsV2)",
        socs: &[Soc::Kirin9030],
        source: "impl/basic_api/dav_l311/kernel_operator_mm_impl.h (2dv2 for int8, half); \
                 dav_c220 and dav_l300: not supported",
    },
    Row {
        cap: Cap::LoadDataWithTranspose,
        id: "LOAD_DATA_WITH_TRANSPOSE",
        call: "LoadDataWithTranspose(L1 -> L0A/L0B) of 8- and 16-bit types",
        socs: &[Soc::Ascend910B, Soc::KirinX90],
        source: "矩阵计算的搬入/LoadDataWithTranspose.md, support list (Kirin 9030: 不支持) and \
                 types (Kirin X90: int8_t, half)",
    },
    Row {
        cap: Cap::LoadDataWithTransposeB32,
        id: "LOAD_DATA_WITH_TRANSPOSE_B32",
        call: "LoadDataWithTranspose(L1 -> L0A/L0B) of 32-bit types",
        socs: &[Soc::Ascend910B],
        source: "矩阵计算的搬入/LoadDataWithTranspose.md, types (Atlas A2: float, int32_t; \
                 Kirin X90: int8_t, half only)",
    },
    Row {
        cap: Cap::FixpipeL0cToUb,
        id: "FIXPIPE_L0C_TO_UB",
        call: "Fixpipe(L0C -> UB)",
        socs: &[],
        source: "矩阵计算的搬出/Fixpipe（L0C到UB数据搬运）.md: Atlas A2, Kirin X90 and Kirin \
                 9030 不支持 (L0C goes out to GM or L1)",
    },
    Row {
        cap: Cap::FixpipeL0cToGm,
        id: "FIXPIPE_L0C_TO_GM",
        call: "Fixpipe(L0C -> GM)",
        socs: &[Soc::Ascend910B, Soc::KirinX90, Soc::Kirin9030],
        source: "矩阵计算的搬出/Fixpipe（L0C到GM数据搬运）.md, support list",
    },
    Row {
        cap: Cap::EventFixV,
        id: "EVENT_FIX_V",
        call: "HardEvent::FIX_V / V_FIX",
        socs: &[Soc::KirinX90],
        source: "impl/basic_api/kernel_event.h: FIX_V and V_FIX are in HardEvent only for \
                 __NPU_ARCH__ 5102 and 3003",
    },
];

impl Cap {
    /// The row of this capability.
    pub fn row(self) -> &'static Row {
        TABLE
            .iter()
            .find(|row| row.cap == self)
            .expect("every capability has a row")
    }

    /// The source of the row, with the docs' directory when the row cites a doc page.
    pub fn source(self) -> String {
        let source = self.row().source;
        if source.starts_with("impl/") {
            format!("asc-devkit {source}")
        } else {
            format!("{MATRIX_DOCS}/{source}")
        }
    }
}

impl Soc {
    /// Whether the SoC has the call path `cap` ([`TABLE`]).
    pub fn has(self, cap: Cap) -> bool {
        cap.row().socs.contains(&self)
    }

    /// The `Mmad` capability of operands of `operand` accumulating into `acc`, if there is
    /// one for that pair of types.
    pub fn mmad_cap(operand: pto_op::DType, acc: pto_op::DType) -> Option<Cap> {
        use pto_op::DType;
        match (operand, acc) {
            (DType::F16, DType::F32) => Some(Cap::MmadF16F32),
            (DType::BF16, DType::F32) => Some(Cap::MmadBf16F32),
            (DType::F32, DType::F32) => Some(Cap::MmadF32F32),
            (DType::I8, DType::I32) => Some(Cap::MmadS8S32),
            (DType::F16, DType::F16) => Some(Cap::MmadF16F16),
            _ => None,
        }
    }
}

/// `ascendc_host_soc.h` for `soc`: its name, `__NPU_ARCH__` value, and one
/// `ASCENDC_HOST_CAP_<ID>` (1 or 0) with its `_CALL` and `_SOURCE` strings per row of
/// [`TABLE`]. The host implementation includes it from `ascendc_host/common.h`.
pub fn host_header(soc: Soc) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "// Generated by pto-backends (src/ascendc/capability.rs) for {soc}: what the SoC's \
         Ascend C API has.\n#pragma once\n#define ASCENDC_HOST_SOC_NAME \"{soc}\"\n\
         #define ASCENDC_HOST_NPU_ARCH {}",
        soc.npu_arch()
    );
    for row in &TABLE {
        let _ = writeln!(
            text,
            "#define ASCENDC_HOST_CAP_{id} {}\n#define ASCENDC_HOST_CAP_{id}_CALL \"{}\"\n\
             #define ASCENDC_HOST_CAP_{id}_SOURCE \"{}\"",
            u8::from(soc.has(row.cap)),
            row.call,
            row.cap.source().replace('"', "\\\""),
            id = row.id,
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::{Cap, TABLE, host_header};
    use crate::ascendc::Soc;

    #[test]
    fn every_capability_has_one_row_and_a_distinct_id() {
        let mut ids: Vec<&str> = TABLE.iter().map(|row| row.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), TABLE.len());
        for row in &TABLE {
            assert_eq!(row.cap.row().id, row.id);
        }
    }

    #[test]
    fn the_header_says_each_socs_row() {
        let header = host_header(Soc::Kirin9030);
        assert!(header.contains("#define ASCENDC_HOST_CAP_MMAD_F16_F16 1"));
        assert!(header.contains("#define ASCENDC_HOST_CAP_MMAD_F16_F32 0"));
        assert!(header.contains("#define ASCENDC_HOST_NPU_ARCH 3113"));
        assert!(
            host_header(Soc::Ascend910B).contains("#define ASCENDC_HOST_CAP_LOAD_DATA_2D_V1 1")
        );
        assert!(Cap::LoadData2dV1.source().contains("dav_l311"));
    }
}
