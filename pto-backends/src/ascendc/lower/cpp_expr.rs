//! IR values spelled in C++: identifiers, element types, scalars, index expressions and
//! the offset and shape lists of the copy helpers.

use pto_op::DType;
use pto_op::kernel::ir::Index;

use crate::ascendc::soc::storage_only_dtypes;

/// `demo.gelu_affine` -> `demo_gelu_affine`.
pub(crate) fn c_identifier(name: &str) -> String {
    let mut id: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if id.chars().next().is_none_or(|c| c.is_ascii_digit()) {
        id.insert(0, '_');
    }
    const RESERVED: [&str; 12] = [
        "int",
        "float",
        "half",
        "double",
        "class",
        "new",
        "delete",
        "this",
        "template",
        "namespace",
        "default",
        "register",
    ];
    if RESERVED.contains(&id.as_str()) {
        id.push('_');
    }
    id
}

/// `demo.gelu_affine` -> `DemoGeluAffine`.
pub(super) fn camel(name: &str) -> String {
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut cs = p.chars();
            cs.next()
                .map(|c| c.to_ascii_uppercase().to_string() + cs.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// The C++ element type of a dtype in UB and GM.
pub(super) fn c_type(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "float",
        DType::F16 => "half",
        DType::BF16 => "bfloat16_t",
        DType::I32 => "int32_t",
        DType::I64 => "int64_t",
        DType::I8 => "int8_t",
        DType::U8 | DType::Bool => "uint8_t",
        DType::I16 => "int16_t",
        DType::U16 => "uint16_t",
        DType::U32 => "uint32_t",
        DType::U64 => "uint64_t",
        DType::F64 => "double",
        // No SoC lowers these (`Soc::supports`), and `check_dtypes` refuses a program with
        // them before any code is written.
        dtype @ storage_only_dtypes!() => {
            unreachable!("{dtype} is refused by check_dtypes before code generation")
        }
    }
}

/// A scalar as a C++ expression of `dtype` (rounded like the simulator: to f32, then to
/// the dtype).
pub(super) fn scalar(value: f64, dtype: DType) -> String {
    let v = value as f32;
    let float = if v.is_nan() {
        "__builtin_nanf(\"\")".to_owned()
    } else if v.is_infinite() {
        if v > 0.0 {
            "__builtin_inff()"
        } else {
            "-__builtin_inff()"
        }
        .to_owned()
    } else {
        let text = format!("{v:?}");
        format!("{text}f")
    };
    match dtype {
        DType::F32 => float,
        DType::I32 | DType::I64 | DType::I8 | DType::U8 => {
            // Truncated toward zero and saturated to the dtype, as the simulator converts
            // constants (`as` saturates; NaN gives 0); i64::MIN has no literal in C++.
            let (low, high) = match dtype {
                DType::I8 => (i64::from(i8::MIN), i64::from(i8::MAX)),
                DType::U8 => (0, i64::from(u8::MAX)),
                DType::I32 => (i64::from(i32::MIN), i64::from(i32::MAX)),
                _ => (i64::MIN, i64::MAX),
            };
            let value = (v as i64).clamp(low, high);
            let text = if value == i64::MIN {
                "-9223372036854775807 - 1".to_owned()
            } else {
                value.to_string()
            };
            format!("static_cast<{}>({text})", c_type(dtype))
        }
        other => format!("static_cast<{}>({float})", c_type(other)),
    }
}

/// An index as a C++ `int64_t` expression over `pid` and the loop variables.
pub(super) fn index(i: &Index) -> String {
    let bin = |f: &str, a: &Index, b: &Index| format!("{f}({}, {})", index(a), index(b));
    match i {
        Index::Const(c) => c.to_string(),
        Index::ProgramId => "pid".to_owned(),
        Index::Var(v) => format!("i{}", v.as_u32()),
        Index::Add(a, b) => format!("({} + {})", index(a), index(b)),
        Index::Sub(a, b) => format!("({} - {})", index(a), index(b)),
        Index::Mul(a, b) => format!("({} * {})", index(a), index(b)),
        Index::Div(a, b) => bin("EuclidDiv", a, b),
        Index::Rem(a, b) => bin("EuclidMod", a, b),
        Index::Min(a, b) => bin("MinIndex", a, b),
        Index::Max(a, b) => bin("MaxIndex", a, b),
    }
}

pub(super) fn offsets_list(offsets: &[Index]) -> String {
    if offsets.is_empty() {
        return "0".to_owned();
    }
    offsets.iter().map(index).collect::<Vec<_>>().join(", ")
}

pub(super) fn shape_list(shape: &[usize]) -> String {
    if shape.is_empty() {
        return "1".to_owned();
    }
    shape
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
