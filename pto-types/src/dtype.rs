//! Element types of tensors.

use core::fmt;
use core::str::FromStr;

use serde::{Deserialize, Serialize};

/// The element type of a tensor.
///
/// ```
/// use pto_types::DType;
/// assert_eq!(DType::F16.size_bytes(), 2);
/// assert_eq!(DType::BF16.name(), "bf16");
/// assert_eq!("f32".parse::<DType>().unwrap(), DType::F32);
/// assert_eq!(DType::F32.onnx_code(), 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    /// IEEE 754 binary32.
    F32,
    /// IEEE 754 binary16.
    F16,
    /// bfloat16: the top half of an f32.
    BF16,
    /// Signed 32-bit integer.
    I32,
    /// Signed 64-bit integer.
    I64,
    /// Signed 8-bit integer.
    I8,
    /// Unsigned 8-bit integer.
    U8,
    /// Boolean, one byte per element.
    Bool,
    /// Signed 16-bit integer.
    I16,
    /// Unsigned 16-bit integer.
    U16,
    /// Unsigned 32-bit integer.
    U32,
    /// Unsigned 64-bit integer.
    U64,
    /// IEEE 754 binary64.
    F64,
    /// 8-bit float E4M3FN (finite, max 448); storage and casts only ([`crate::lowp`]).
    F8E4M3FN,
    /// 8-bit float E4M3FNUZ (finite, no -0, max 240); storage and casts only.
    F8E4M3FNUZ,
    /// 8-bit float E5M2 (with infinities, max 57344); storage and casts only.
    F8E5M2,
    /// 8-bit float E5M2FNUZ (finite, no -0, max 57344); storage and casts only.
    F8E5M2FNUZ,
    /// 8-bit power of two E8M0 (the MX scale); storage and casts only.
    F8E8M0,
    /// 4-bit float E2M1 (max 6), one per byte in memory; storage and casts only.
    F4E2M1,
    /// Signed 4-bit integer, one per byte in memory; storage and casts only.
    I4,
    /// Unsigned 4-bit integer, one per byte in memory; storage and casts only.
    U4,
    /// Signed 2-bit integer, one per byte in memory; storage and casts only.
    I2,
    /// Unsigned 2-bit integer, one per byte in memory; storage and casts only.
    U2,
}

impl DType {
    /// Every dtype, in declaration order.
    pub const ALL: [DType; 23] = [
        DType::F32,
        DType::F16,
        DType::BF16,
        DType::I32,
        DType::I64,
        DType::I8,
        DType::U8,
        DType::Bool,
        DType::I16,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::F64,
        DType::F8E4M3FN,
        DType::F8E4M3FNUZ,
        DType::F8E5M2,
        DType::F8E5M2FNUZ,
        DType::F8E8M0,
        DType::F4E2M1,
        DType::I4,
        DType::U4,
        DType::I2,
        DType::U2,
    ];

    /// Bytes per element in a [`Tensor`](crate::Tensor) and in the byte buffers of
    /// [`Tensor::to_le_bytes`](crate::Tensor::to_le_bytes): one for the 4- and 2-bit types
    /// too, which are packed only in ONNX files (see [`bits`](DType::bits)).
    pub const fn size_bytes(self) -> usize {
        match self {
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F16 | DType::BF16 | DType::I16 | DType::U16 => 2,
            DType::I64 | DType::U64 | DType::F64 => 8,
            DType::I8 | DType::U8 | DType::Bool => 1,
            DType::F8E4M3FN
            | DType::F8E4M3FNUZ
            | DType::F8E5M2
            | DType::F8E5M2FNUZ
            | DType::F8E8M0
            | DType::F4E2M1
            | DType::I4
            | DType::U4
            | DType::I2
            | DType::U2 => 1,
        }
    }

    /// The width of an element as ONNX packs it: 4 for f4e2m1, i4 and u4, 2 for i2 and u2,
    /// else `8 * size_bytes`.
    pub const fn bits(self) -> usize {
        match self {
            DType::F4E2M1 | DType::I4 | DType::U4 => 4,
            DType::I2 | DType::U2 => 2,
            _ => 8 * self.size_bytes(),
        }
    }

    /// The short lowercase name used in schemas, model files and messages.
    pub const fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::I8 => "i8",
            DType::U8 => "u8",
            DType::Bool => "bool",
            DType::I16 => "i16",
            DType::U16 => "u16",
            DType::U32 => "u32",
            DType::U64 => "u64",
            DType::F64 => "f64",
            DType::F8E4M3FN => "f8e4m3fn",
            DType::F8E4M3FNUZ => "f8e4m3fnuz",
            DType::F8E5M2 => "f8e5m2",
            DType::F8E5M2FNUZ => "f8e5m2fnuz",
            DType::F8E8M0 => "f8e8m0",
            DType::F4E2M1 => "f4e2m1",
            DType::I4 => "i4",
            DType::U4 => "u4",
            DType::I2 => "i2",
            DType::U2 => "u2",
        }
    }

    /// The `TensorProto.DataType` code of this dtype in ONNX.
    pub const fn onnx_code(self) -> i32 {
        match self {
            DType::F32 => 1,
            DType::U8 => 2,
            DType::I8 => 3,
            DType::I32 => 6,
            DType::I64 => 7,
            DType::Bool => 9,
            DType::F16 => 10,
            DType::BF16 => 16,
            DType::U16 => 4,
            DType::I16 => 5,
            DType::F64 => 11,
            DType::U32 => 12,
            DType::U64 => 13,
            DType::F8E4M3FN => 17,
            DType::F8E4M3FNUZ => 18,
            DType::F8E5M2 => 19,
            DType::F8E5M2FNUZ => 20,
            DType::U4 => 21,
            DType::I4 => 22,
            DType::F4E2M1 => 23,
            DType::F8E8M0 => 24,
            DType::U2 => 25,
            DType::I2 => 26,
        }
    }

    /// The dtype with the given ONNX `TensorProto.DataType` code, if pto-op supports it.
    pub fn from_onnx_code(code: i32) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.onnx_code() == code)
    }

    /// True for f32, f16, bf16 and f64: the float types ops compute in (not the 8- and
    /// 4-bit floats, see [`is_storage_only`](DType::is_storage_only)).
    pub const fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F16 | DType::BF16 | DType::F64)
    }

    /// True for the signed and unsigned integer types ops compute in (not bool, not the 4-
    /// and 2-bit integers, see [`is_storage_only`](DType::is_storage_only)).
    pub const fn is_integer(self) -> bool {
        matches!(
            self,
            DType::I32
                | DType::I64
                | DType::I8
                | DType::U8
                | DType::I16
                | DType::U16
                | DType::U32
                | DType::U64
        )
    }

    /// True for the unsigned integer types (u4 and u2 too).
    pub const fn is_unsigned(self) -> bool {
        matches!(
            self,
            DType::U8 | DType::U16 | DType::U32 | DType::U64 | DType::U4 | DType::U2
        )
    }

    /// True for the low-precision dtypes pto-op stores, imports, exports and converts
    /// ([`Tensor::cast`](crate::Tensor::cast), `std.cast`, the ops that only move elements)
    /// but no op computes in: the 8-bit floats, f4e2m1 and the 4- and 2-bit integers
    /// ([`crate::lowp`]).
    pub const fn is_storage_only(self) -> bool {
        matches!(
            self,
            DType::F8E4M3FN
                | DType::F8E4M3FNUZ
                | DType::F8E5M2
                | DType::F8E5M2FNUZ
                | DType::F8E8M0
                | DType::F4E2M1
                | DType::I4
                | DType::U4
                | DType::I2
                | DType::U2
        )
    }

    /// True for the 8- and 4-bit floats (f8e4m3fn, f8e4m3fnuz, f8e5m2, f8e5m2fnuz,
    /// f8e8m0, f4e2m1).
    pub const fn is_small_float(self) -> bool {
        matches!(
            self,
            DType::F8E4M3FN
                | DType::F8E4M3FNUZ
                | DType::F8E5M2
                | DType::F8E5M2FNUZ
                | DType::F8E8M0
                | DType::F4E2M1
        )
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// The error of parsing a dtype name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown dtype `{0}`: expected one of f32, f16, bf16, i32, i64, i8, u8, bool, i16, u16, u32, u64, f64, f8e4m3fn, f8e4m3fnuz, f8e5m2, f8e5m2fnuz, f8e8m0, f4e2m1, i4, u4, i2, u2"
)]
pub struct UnknownDType(pub String);

impl FromStr for DType {
    type Err = UnknownDType;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DType::ALL
            .into_iter()
            .find(|d| d.name() == s)
            .ok_or_else(|| UnknownDType(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_onnx_codes_are_unique() {
        for d in DType::ALL {
            assert_eq!(d.name().parse::<DType>(), Ok(d));
            assert_eq!(DType::from_onnx_code(d.onnx_code()), Some(d));
        }
        assert!("float".parse::<DType>().is_err());
    }
}
