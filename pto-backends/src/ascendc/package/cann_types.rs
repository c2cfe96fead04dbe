//! CANN's names of pto-op's dtypes and param types: the graph engine's, which the C++ sources
//! use (`DT_FLOAT`, `Float`), and msopgen's, which `op_desc.json` uses (`float`). One table
//! each, so the two names of a type cannot drift apart.

use pto_op::{AttrType, DType};

use crate::ascendc::soc::storage_only_dtypes;

/// The names of a dtype or a param type in CANN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct CannName {
    /// The graph engine's (`DT_FLOAT` for a dtype, `Float` for a param type).
    pub(super) ge: &'static str,
    /// msopgen's, in `op_desc.json` (`float`).
    pub(super) msopgen: &'static str,
}

impl CannName {
    const fn new(ge: &'static str, msopgen: &'static str) -> CannName {
        CannName { ge, msopgen }
    }
}

/// The names of a dtype.
pub(super) fn dtype_name(dtype: DType) -> CannName {
    match dtype {
        DType::F32 => CannName::new("DT_FLOAT", "float"),
        DType::F16 => CannName::new("DT_FLOAT16", "float16"),
        DType::BF16 => CannName::new("DT_BF16", "bfloat16"),
        DType::I32 => CannName::new("DT_INT32", "int32"),
        DType::I64 => CannName::new("DT_INT64", "int64"),
        DType::I8 => CannName::new("DT_INT8", "int8"),
        DType::U8 => CannName::new("DT_UINT8", "uint8"),
        DType::Bool => CannName::new("DT_BOOL", "bool"),
        DType::I16 => CannName::new("DT_INT16", "int16"),
        DType::U16 => CannName::new("DT_UINT16", "uint16"),
        DType::U32 => CannName::new("DT_UINT32", "uint32"),
        DType::U64 => CannName::new("DT_UINT64", "uint64"),
        DType::F64 => CannName::new("DT_DOUBLE", "double"),
        // No SoC lowers these (`Soc::supports`): no lowered kernel, so no package, has them.
        dtype @ storage_only_dtypes!() => {
            unreachable!("{dtype} is refused by lowering before packaging")
        }
    }
}

/// The attribute type of a param (`Float`, `float`); an f64 travels as a String with all 17
/// digits, since the graph engine's Float is single precision.
pub(super) fn attr_type_name(ty: AttrType) -> CannName {
    match ty {
        AttrType::F32 => CannName::new("Float", "float"),
        AttrType::I32 | AttrType::I64 => CannName::new("Int", "int"),
        AttrType::Bool => CannName::new("Bool", "bool"),
        AttrType::F64 | AttrType::String => CannName::new("String", "str"),
        AttrType::I64s => CannName::new("ListInt", "listInt"),
        AttrType::F32s => CannName::new("ListFloat", "listFloat"),
    }
}
