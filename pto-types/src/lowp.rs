//! The element types of the low-precision dtypes ONNX defines: the 8-bit floats
//! ([`F8E4M3FN`], [`F8E4M3FNUZ`], [`F8E5M2`], [`F8E5M2FNUZ`], [`F8E8M0`]), the 4-bit float
//! [`F4E2M1`] and the 4- and 2-bit integers ([`I4`], [`U4`], [`I2`], [`U2`]).
//!
//! pto-op stores, imports, exports and converts these ([`Tensor::cast`](crate::Tensor::cast),
//! `std.cast`, the shape ops that only move elements); no op computes in them (their dtypes
//! are neither [`DType::is_float`](crate::DType::is_float) nor
//! [`DType::is_integer`](crate::DType::is_integer), so arithmetic's dtype rules refuse them).
//!
//! **Layout.** Every element takes one byte in a [`Tensor`](crate::Tensor), the 4- and 2-bit
//! types too: a tensor stays an ndarray of one Rust type per dtype, indexable and sliceable
//! like every other, and the 4- and 2-bit types only exist packed at the boundaries. ONNX
//! packs them (two 4-bit elements per byte, the first in the low nibble; four 2-bit elements
//! per byte, the first in the lowest two bits, in `raw_data` and in `int32_data`), and
//! the ONNX import and export (pto-onnx) pack and unpack them. The floats keep their bit
//! pattern ([`F8E4M3FN::to_bits`] etc.), the integers their value.
//!
//! **Conversions** follow the ONNX `Cast` operator (opset 25):
//!
//! - to an 8-bit float ([`FloatFormat::encode`]): round to nearest, ties to even, with
//!   subnormals; with `saturate` (the default) a value whose rounding exceeds the largest
//!   finite value, and infinity, become ± that maximum; without it they become infinity in
//!   E5M2 and NaN in the others. NaN stays NaN (its sign kept in E4M3FN and E5M2). The FNUZ
//!   types have no -0 (-0 becomes 0) and one NaN (`0x80`).
//! - to [`F4E2M1`], which has no infinity and no NaN: round to nearest-even, saturating to
//!   ±6 whatever `saturate` says (ONNX's `saturate` applies to the 8-bit floats only), NaN
//!   to -0, as ONNX's reference (`ml_dtypes`) does.
//! - to [`F8E8M0`] (powers of two, exponent bias 127, no sign, no zero, `0xFF` NaN):
//!   [`RoundMode`] `up` (the default), `down` or `nearest`; with `saturate` values beyond
//!   2^127 and infinity become 2^127 and values below 2^-127 (zero too) become 2^-127,
//!   without it those are NaN. The sign is ignored (ONNX leaves negative values
//!   unspecified).
//! - to the 4- and 2-bit integers: like every integer narrowing in ONNX, the low bits
//!   (two's complement); floats are first truncated toward zero (NaN and infinities give 0,
//!   as in ONNX's reference).
//! - from all of them: exact (every value is an f32).

use core::fmt;

/// How a conversion to [`F8E8M0`] rounds a value that is not a power of two.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RoundMode {
    /// To the next power of two away from zero (ONNX's default, as CUDA does).
    #[default]
    Up,
    /// To the next power of two toward zero.
    Down,
    /// To the nearest power of two; a tie (1.5 × 2^e) rounds up.
    Nearest,
}

impl RoundMode {
    /// The mode ONNX's `round_mode` attribute names: `up`, `down` or `nearest`.
    pub fn from_name(name: &str) -> Option<RoundMode> {
        match name {
            "up" => Some(RoundMode::Up),
            "down" => Some(RoundMode::Down),
            "nearest" => Some(RoundMode::Nearest),
            _ => None,
        }
    }

    /// The name ONNX's `round_mode` attribute gives this mode.
    pub const fn name(self) -> &'static str {
        match self {
            RoundMode::Up => "up",
            RoundMode::Down => "down",
            RoundMode::Nearest => "nearest",
        }
    }
}

/// How a small float format encodes infinity, NaN and -0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Specials {
    /// IEEE-like: the top exponent holds ±infinity (mantissa 0) and NaN (E5M2).
    Ieee,
    /// Finite: only `S.1111.111` is NaN (E4M3FN).
    Fn,
    /// Finite, unsigned zero: `0x80` is the one NaN, there is no -0 (the FNUZ types).
    Fnuz,
    /// No infinity and no NaN (E2M1).
    None,
}

/// A sign-exponent-mantissa float format of at most 8 bits: one of the ONNX 8-bit floats or
/// E2M1. [`encode`](FloatFormat::encode) and [`decode`](FloatFormat::decode) convert
/// between its bit patterns (in the low bits of a byte) and f64.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FloatFormat {
    exponent_bits: u32,
    mantissa_bits: u32,
    bias: i32,
    specials: Specials,
}

impl FloatFormat {
    /// E4M3FN: bias 7, max 448, NaN `S.1111.111`, no infinity.
    pub const E4M3FN: FloatFormat = FloatFormat {
        exponent_bits: 4,
        mantissa_bits: 3,
        bias: 7,
        specials: Specials::Fn,
    };
    /// E4M3FNUZ: bias 8, max 240, NaN `0x80`, no infinity, no -0.
    pub const E4M3FNUZ: FloatFormat = FloatFormat {
        exponent_bits: 4,
        mantissa_bits: 3,
        bias: 8,
        specials: Specials::Fnuz,
    };
    /// E5M2: bias 15, max 57344, IEEE infinity and NaN.
    pub const E5M2: FloatFormat = FloatFormat {
        exponent_bits: 5,
        mantissa_bits: 2,
        bias: 15,
        specials: Specials::Ieee,
    };
    /// E5M2FNUZ: bias 16, max 57344, NaN `0x80`, no infinity, no -0.
    pub const E5M2FNUZ: FloatFormat = FloatFormat {
        exponent_bits: 5,
        mantissa_bits: 2,
        bias: 16,
        specials: Specials::Fnuz,
    };
    /// E2M1 (4 bits): bias 1, max 6, no infinity, no NaN.
    pub const E2M1: FloatFormat = FloatFormat {
        exponent_bits: 2,
        mantissa_bits: 1,
        bias: 1,
        specials: Specials::None,
    };

    const fn sign_bit(self) -> u8 {
        1 << (self.exponent_bits + self.mantissa_bits)
    }

    const fn max_exponent_field(self) -> u32 {
        (1 << self.exponent_bits) - 1
    }

    /// The bit pattern of NaN with the given sign, if the format has NaN.
    fn nan(self, negative: bool) -> u8 {
        let sign = if negative { self.sign_bit() } else { 0 };
        match self.specials {
            Specials::Ieee | Specials::Fn => sign | (self.sign_bit() - 1),
            Specials::Fnuz => 0x80,
            // No NaN: ONNX's reference gives -0.
            Specials::None => self.sign_bit(),
        }
    }

    /// The largest finite value.
    pub fn max_finite(self) -> f64 {
        self.decode(self.max_finite_bits())
    }

    fn max_finite_bits(self) -> u8 {
        let all = self.sign_bit() - 1;
        match self.specials {
            // The top exponent is infinity and NaN.
            Specials::Ieee => all - (1 << self.mantissa_bits),
            // S.1111.111 is NaN.
            Specials::Fn => all - 1,
            Specials::Fnuz | Specials::None => all,
        }
    }

    /// The value of the bit pattern `bits` (in the low `1 + exponent + mantissa` bits).
    pub fn decode(self, bits: u8) -> f64 {
        let mantissa_mask = (1u8 << self.mantissa_bits) - 1;
        let negative = bits & self.sign_bit() != 0;
        let exponent = u32::from(bits >> self.mantissa_bits) & self.max_exponent_field();
        let mantissa = bits & mantissa_mask;
        match self.specials {
            Specials::Fnuz if bits == 0x80 => return f64::NAN,
            Specials::Fn if exponent == self.max_exponent_field() && mantissa == mantissa_mask => {
                return f64::NAN;
            }
            Specials::Ieee if exponent == self.max_exponent_field() => {
                return match (mantissa, negative) {
                    (0, false) => f64::INFINITY,
                    (0, true) => f64::NEG_INFINITY,
                    _ => f64::NAN,
                };
            }
            _ => {}
        }
        let scale = |e: i32| 2f64.powi(e - self.mantissa_bits as i32);
        let magnitude = if exponent == 0 {
            f64::from(mantissa) * scale(1 - self.bias)
        } else {
            f64::from(mantissa | (1 << self.mantissa_bits)) * scale(exponent as i32 - self.bias)
        };
        if negative { -magnitude } else { magnitude }
    }

    /// The bit pattern of `value` rounded to nearest-even, per the ONNX `Cast` rules (see
    /// the [module docs](self)): `saturate` says what overflow and infinity become.
    pub fn encode(self, value: f64, saturate: bool) -> u8 {
        let negative = value.is_sign_negative();
        let sign = if negative { self.sign_bit() } else { 0 };
        // Zero: FNUZ's is unsigned (0x80 is its NaN).
        let zero = if self.specials == Specials::Fnuz {
            0
        } else {
            sign
        };
        if value.is_nan() {
            return self.nan(negative);
        }
        let saturate = saturate || self.specials == Specials::None;
        let overflow = || {
            if saturate {
                sign | self.max_finite_bits()
            } else if self.specials == Specials::Ieee {
                // Infinity: the top exponent, mantissa 0.
                sign | ((self.max_exponent_field() << self.mantissa_bits) as u8)
            } else {
                self.nan(negative)
            }
        };
        if value.is_infinite() {
            return overflow();
        }
        let magnitude = value.abs();
        if magnitude == 0.0 {
            return zero;
        }
        // The binade of the value, clamped to the normal range's bottom (subnormals share
        // the quantum of the smallest normal binade).
        let min_exponent = 1 - self.bias;
        let exponent = exponent_of(magnitude).max(min_exponent);
        let quantum_exponent = exponent - self.mantissa_bits as i32;
        // Exact: a scaling by a power of two within f64's range.
        let scaled = magnitude * 2f64.powi(-quantum_exponent);
        let units = scaled.round_ties_even();
        if units == 0.0 {
            return zero;
        }
        let rounded = units * 2f64.powi(quantum_exponent);
        if rounded > self.max_finite() {
            return overflow();
        }
        // Encode the rounded value, which is representable.
        let units = units as u32;
        let hidden = 1u32 << self.mantissa_bits;
        let bits = if units < hidden {
            // Subnormal (exponent field 0).
            units
        } else {
            // `units` may have carried into the next binade (units == 2 * hidden).
            let (units, exponent) = if units >= 2 * hidden {
                (units / 2, exponent + 1)
            } else {
                (units, exponent)
            };
            let field = (exponent + self.bias) as u32;
            (field << self.mantissa_bits) | (units - hidden)
        };
        sign | bits as u8
    }
}

/// `floor(log2(x))` of a finite positive f64, subnormals included.
fn exponent_of(x: f64) -> i32 {
    let bits = x.to_bits();
    let field = ((bits >> 52) & 0x7ff) as i32;
    if field == 0 {
        // Subnormal: the position of the leading one of the mantissa.
        let mantissa = bits & ((1u64 << 52) - 1);
        -1074 + (63 - mantissa.leading_zeros() as i32)
    } else {
        field - 1023
    }
}

/// Defines a float newtype over its bit pattern.
macro_rules! small_float {
    ($(#[$doc:meta])* $name:ident, $format:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
        #[repr(transparent)]
        pub struct $name(u8);

        impl $name {
            /// The format's encoding.
            pub const FORMAT: FloatFormat = $format;

            /// The element with bit pattern `bits` (high bits beyond the format ignored).
            pub const fn from_bits(bits: u8) -> Self {
                $name(bits & (((Self::FORMAT.sign_bit() as u16) << 1) - 1) as u8)
            }

            /// The bit pattern.
            pub const fn to_bits(self) -> u8 {
                self.0
            }

            /// `value` rounded to nearest-even; `saturate` as ONNX `Cast` says.
            pub fn from_f64_saturating(value: f64, saturate: bool) -> Self {
                $name(Self::FORMAT.encode(value, saturate))
            }

            /// The value, exactly.
            pub fn to_f64(self) -> f64 {
                Self::FORMAT.decode(self.0)
            }

            /// The value, exactly (every element is an f32).
            pub fn to_f32(self) -> f32 {
                self.to_f64() as f32
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:#04x} = {})", stringify!($name), self.0, self.to_f64())
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.to_f64(), f)
            }
        }
    };
}

small_float!(
    /// An 8-bit float, 4 exponent bits (bias 7) and 3 mantissa bits; finite (max 448), NaN
    /// `S.1111.111`. ONNX `FLOAT8E4M3FN`.
    F8E4M3FN,
    FloatFormat::E4M3FN
);
small_float!(
    /// An 8-bit float, 4 exponent bits (bias 8) and 3 mantissa bits; finite (max 240), one
    /// NaN `0x80`, no -0. ONNX `FLOAT8E4M3FNUZ`.
    F8E4M3FNUZ,
    FloatFormat::E4M3FNUZ
);
small_float!(
    /// An 8-bit float, 5 exponent bits (bias 15) and 2 mantissa bits, IEEE-like with
    /// infinities (max finite 57344). ONNX `FLOAT8E5M2`.
    F8E5M2,
    FloatFormat::E5M2
);
small_float!(
    /// An 8-bit float, 5 exponent bits (bias 16) and 2 mantissa bits; finite (max 57344),
    /// one NaN `0x80`, no -0. ONNX `FLOAT8E5M2FNUZ`.
    F8E5M2FNUZ,
    FloatFormat::E5M2FNUZ
);
small_float!(
    /// A 4-bit float, 2 exponent bits (bias 1) and 1 mantissa bit: ±{0, 0.5, 1, 1.5, 2, 3,
    /// 4, 6}, no infinity, no NaN. Stored one per byte, in the low 4 bits. ONNX
    /// `FLOAT4E2M1`.
    F4E2M1,
    FloatFormat::E2M1
);

/// An 8-bit unsigned power of two, 2^(bits - 127), `0xFF` NaN: the scale of the MX formats.
/// ONNX `FLOAT8E8M0`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(transparent)]
pub struct F8E8M0(u8);

impl F8E8M0 {
    /// The NaN bit pattern.
    pub const NAN_BITS: u8 = 0xFF;

    /// The element with bit pattern `bits`.
    pub const fn from_bits(bits: u8) -> Self {
        F8E8M0(bits)
    }

    /// The bit pattern.
    pub const fn to_bits(self) -> u8 {
        self.0
    }

    /// The value, exactly: 2^(bits - 127), NaN for `0xFF`.
    pub fn to_f64(self) -> f64 {
        if self.0 == Self::NAN_BITS {
            f64::NAN
        } else {
            2f64.powi(i32::from(self.0) - 127)
        }
    }

    /// The value, exactly (every element is an f32: 2^-127 is an f32 subnormal).
    pub fn to_f32(self) -> f32 {
        self.to_f64() as f32
    }

    /// `value` as a power of two, rounded by `mode`, per the ONNX `Cast` rules (see the
    /// [module docs](self)); the sign is ignored.
    pub fn from_f64_rounded(value: f64, saturate: bool, mode: RoundMode) -> Self {
        let out_of_range = |high: bool| {
            F8E8M0(match (saturate, high) {
                (false, _) => Self::NAN_BITS,
                (true, true) => 0xFE,
                (true, false) => 0,
            })
        };
        if value.is_nan() {
            return F8E8M0(Self::NAN_BITS);
        }
        let magnitude = value.abs();
        if magnitude.is_infinite() {
            return out_of_range(true);
        }
        if magnitude == 0.0 {
            return out_of_range(false);
        }
        let exponent = exponent_of(magnitude);
        let base = 2f64.powi(exponent);
        let exponent = if magnitude == base {
            exponent
        } else {
            match mode {
                RoundMode::Up => exponent + 1,
                RoundMode::Down => exponent,
                // The midpoint of 2^e and 2^(e+1) is 1.5 * 2^e; ties go up.
                RoundMode::Nearest => exponent + i32::from(magnitude >= 1.5 * base),
            }
        };
        if exponent > 127 {
            out_of_range(true)
        } else if exponent < -127 {
            out_of_range(false)
        } else {
            F8E8M0((exponent + 127) as u8)
        }
    }
}

impl fmt::Debug for F8E8M0 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "F8E8M0({:#04x} = {})", self.0, self.to_f64())
    }
}

impl fmt::Display for F8E8M0 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.to_f64(), f)
    }
}

/// Defines a small integer newtype over its value.
macro_rules! small_int {
    ($(#[$doc:meta])* $name:ident, $repr:ty, $bits:expr, $signed:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
        #[repr(transparent)]
        pub struct $name($repr);

        impl $name {
            /// The width in bits.
            pub const BITS: u32 = $bits;
            /// The smallest value.
            pub const MIN: i64 = if $signed { -(1 << ($bits - 1)) } else { 0 };
            /// The largest value.
            pub const MAX: i64 = if $signed { (1 << ($bits - 1)) - 1 } else { (1 << $bits) - 1 };

            /// The element whose two's complement pattern is the low bits of `value` (ONNX's
            /// integer narrowing).
            pub const fn wrapping_from_i64(value: i64) -> Self {
                let low = value & ((1 << $bits) - 1);
                let v = if $signed && low > Self::MAX { low - (1 << $bits) } else { low };
                $name(v as $repr)
            }

            /// The element from the low `BITS` bits of `bits` (as ONNX packs it).
            pub const fn from_bits(bits: u8) -> Self {
                Self::wrapping_from_i64(bits as i64)
            }

            /// The low `BITS` bits of the two's complement pattern.
            pub const fn to_bits(self) -> u8 {
                (self.0 as u8) & ((1 << $bits) - 1)
            }

            /// `value` truncated toward zero, then wrapped to the low bits; NaN and the
            /// infinities give 0.
            pub fn from_f64_wrapping(value: f64) -> Self {
                if value.is_finite() {
                    Self::wrapping_from_i64(value as i64)
                } else {
                    $name(0)
                }
            }

            /// The value.
            pub const fn get(self) -> i64 {
                self.0 as i64
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($name), self.0)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }
    };
}

small_int!(
    /// A signed 4-bit integer, -8..=7, stored one per byte. ONNX `INT4`.
    I4,
    i8,
    4,
    true
);
small_int!(
    /// An unsigned 4-bit integer, 0..=15, stored one per byte. ONNX `UINT4`.
    U4,
    u8,
    4,
    false
);
small_int!(
    /// A signed 2-bit integer, -2..=1, stored one per byte. ONNX `INT2`.
    I2,
    i8,
    2,
    true
);
small_int!(
    /// An unsigned 2-bit integer, 0..=3, stored one per byte. ONNX `UINT2`.
    U2,
    u8,
    2,
    false
);

#[cfg(test)]
mod tests;
