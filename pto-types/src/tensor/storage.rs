//! The elements of a tensor: [`TensorData`], one array per element type, and the
//! [`Element`] trait over the Rust element types.

use half::{bf16, f16};
use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD};

use crate::dtype::DType;
use crate::lowp::{F4E2M1, F8E4M3FN, F8E4M3FNUZ, F8E5M2, F8E5M2FNUZ, F8E8M0, I2, I4, U2, U4};

/// The elements of a tensor: an n-dimensional array of one of the supported element types.
#[derive(Debug, Clone, PartialEq)]
pub enum TensorData {
    /// Elements of dtype f32.
    F32(ArrayD<f32>),
    /// Elements of dtype f16.
    F16(ArrayD<f16>),
    /// Elements of dtype bf16.
    BF16(ArrayD<bf16>),
    /// Elements of dtype i32.
    I32(ArrayD<i32>),
    /// Elements of dtype i64.
    I64(ArrayD<i64>),
    /// Elements of dtype i8.
    I8(ArrayD<i8>),
    /// Elements of dtype u8.
    U8(ArrayD<u8>),
    /// Elements of dtype bool.
    Bool(ArrayD<bool>),
    /// Elements of dtype i16.
    I16(ArrayD<i16>),
    /// Elements of dtype u16.
    U16(ArrayD<u16>),
    /// Elements of dtype u32.
    U32(ArrayD<u32>),
    /// Elements of dtype u64.
    U64(ArrayD<u64>),
    /// Elements of dtype f64.
    F64(ArrayD<f64>),
    /// Elements of dtype f8e4m3fn.
    F8E4M3FN(ArrayD<crate::lowp::F8E4M3FN>),
    /// Elements of dtype f8e4m3fnuz.
    F8E4M3FNUZ(ArrayD<crate::lowp::F8E4M3FNUZ>),
    /// Elements of dtype f8e5m2.
    F8E5M2(ArrayD<crate::lowp::F8E5M2>),
    /// Elements of dtype f8e5m2fnuz.
    F8E5M2FNUZ(ArrayD<crate::lowp::F8E5M2FNUZ>),
    /// Elements of dtype f8e8m0.
    F8E8M0(ArrayD<crate::lowp::F8E8M0>),
    /// Elements of dtype f4e2m1.
    F4E2M1(ArrayD<crate::lowp::F4E2M1>),
    /// Elements of dtype i4.
    I4(ArrayD<crate::lowp::I4>),
    /// Elements of dtype u4.
    U4(ArrayD<crate::lowp::U4>),
    /// Elements of dtype i2.
    I2(ArrayD<crate::lowp::I2>),
    /// Elements of dtype u2.
    U2(ArrayD<crate::lowp::U2>),
}

/// Runs `$body` with `$a` bound to the array inside `$data`, whatever its element type
/// (`pto_types::tensor::dispatch!`: for the crates above, not a stable API).
#[doc(hidden)]
#[macro_export]
macro_rules! __tensor_dispatch {
    ($data:expr, $a:ident => $body:expr) => {
        match $data {
            $crate::tensor::TensorData::F32($a) => $body,
            $crate::tensor::TensorData::F16($a) => $body,
            $crate::tensor::TensorData::BF16($a) => $body,
            $crate::tensor::TensorData::I32($a) => $body,
            $crate::tensor::TensorData::I64($a) => $body,
            $crate::tensor::TensorData::I8($a) => $body,
            $crate::tensor::TensorData::U8($a) => $body,
            $crate::tensor::TensorData::Bool($a) => $body,
            $crate::tensor::TensorData::I16($a) => $body,
            $crate::tensor::TensorData::U16($a) => $body,
            $crate::tensor::TensorData::U32($a) => $body,
            $crate::tensor::TensorData::U64($a) => $body,
            $crate::tensor::TensorData::F64($a) => $body,
            $crate::tensor::TensorData::F8E4M3FN($a) => $body,
            $crate::tensor::TensorData::F8E4M3FNUZ($a) => $body,
            $crate::tensor::TensorData::F8E5M2($a) => $body,
            $crate::tensor::TensorData::F8E5M2FNUZ($a) => $body,
            $crate::tensor::TensorData::F8E8M0($a) => $body,
            $crate::tensor::TensorData::F4E2M1($a) => $body,
            $crate::tensor::TensorData::I4($a) => $body,
            $crate::tensor::TensorData::U4($a) => $body,
            $crate::tensor::TensorData::I2($a) => $body,
            $crate::tensor::TensorData::U2($a) => $body,
        }
    };
}
#[doc(hidden)]
pub use __tensor_dispatch as dispatch;

/// Runs `$body` with the type alias `$t` naming the Rust element type of `$dtype`
/// (`pto_types::tensor::with_dtype!`: for the crates above, not a stable API).
#[doc(hidden)]
#[macro_export]
macro_rules! __tensor_with_dtype {
    ($dtype:expr, $t:ident => $body:expr) => {
        match $dtype {
            $crate::dtype::DType::F32 => {
                type $t = f32;
                $body
            }
            $crate::dtype::DType::F16 => {
                type $t = $crate::__half::f16;
                $body
            }
            $crate::dtype::DType::BF16 => {
                type $t = $crate::__half::bf16;
                $body
            }
            $crate::dtype::DType::I32 => {
                type $t = i32;
                $body
            }
            $crate::dtype::DType::I64 => {
                type $t = i64;
                $body
            }
            $crate::dtype::DType::I8 => {
                type $t = i8;
                $body
            }
            $crate::dtype::DType::U8 => {
                type $t = u8;
                $body
            }
            $crate::dtype::DType::Bool => {
                type $t = bool;
                $body
            }
            $crate::dtype::DType::I16 => {
                type $t = i16;
                $body
            }
            $crate::dtype::DType::U16 => {
                type $t = u16;
                $body
            }
            $crate::dtype::DType::U32 => {
                type $t = u32;
                $body
            }
            $crate::dtype::DType::U64 => {
                type $t = u64;
                $body
            }
            $crate::dtype::DType::F64 => {
                type $t = f64;
                $body
            }
            $crate::dtype::DType::F8E4M3FN => {
                type $t = $crate::lowp::F8E4M3FN;
                $body
            }
            $crate::dtype::DType::F8E4M3FNUZ => {
                type $t = $crate::lowp::F8E4M3FNUZ;
                $body
            }
            $crate::dtype::DType::F8E5M2 => {
                type $t = $crate::lowp::F8E5M2;
                $body
            }
            $crate::dtype::DType::F8E5M2FNUZ => {
                type $t = $crate::lowp::F8E5M2FNUZ;
                $body
            }
            $crate::dtype::DType::F8E8M0 => {
                type $t = $crate::lowp::F8E8M0;
                $body
            }
            $crate::dtype::DType::F4E2M1 => {
                type $t = $crate::lowp::F4E2M1;
                $body
            }
            $crate::dtype::DType::I4 => {
                type $t = $crate::lowp::I4;
                $body
            }
            $crate::dtype::DType::U4 => {
                type $t = $crate::lowp::U4;
                $body
            }
            $crate::dtype::DType::I2 => {
                type $t = $crate::lowp::I2;
                $body
            }
            $crate::dtype::DType::U2 => {
                type $t = $crate::lowp::U2;
                $body
            }
        }
    };
}
#[doc(hidden)]
pub use __tensor_with_dtype as with_dtype;

#[doc(hidden)]
pub mod sealed {
    /// Keeps [`Element`](super::Element) closed to the supported types, and carries
    /// their byte encoding, which is not part of the public API.
    pub trait Sealed: Sized {
        /// Appends the little-endian encoding.
        fn write_le(self, out: &mut Vec<u8>);
        /// Decodes a chunk of `size_bytes` bytes; `None` if it encodes no value (a bool
        /// byte other than 0 or 1).
        fn read_le(chunk: &[u8]) -> Option<Self>;
        /// Moves the array out of `data` if it holds this type, else gives `data` back.
        fn unwrap_data(data: super::TensorData)
        -> Result<ndarray::ArrayD<Self>, super::TensorData>;
    }
}

/// A Rust type that is the element type of one [`DType`]: f32, [`f16`](struct@f16),
/// [`bf16`](struct@bf16), i32, i64, i8, u8, bool, i16, u16, u32, u64 and f64.
pub trait Element: Copy + 'static + sealed::Sealed {
    /// The dtype of this element type.
    const DTYPE: DType;

    /// Wraps an array of this type.
    fn wrap(array: ArrayD<Self>) -> TensorData;

    /// The array inside `data`, if it holds this type.
    fn view(data: &TensorData) -> Option<ArrayViewD<'_, Self>>;

    /// The array inside `data`, mutably, if it holds this type.
    fn view_mut(data: &mut TensorData) -> Option<ArrayViewMutD<'_, Self>>;

    /// The elements of `data` in row-major order, if it holds this type.
    fn slice(data: &TensorData) -> Option<&[Self]>;

    /// The elements of `data` in row-major order, mutably, if it holds this type.
    fn slice_mut(data: &mut TensorData) -> Option<&mut [Self]>;

    /// The value as an f64: exact, except i64 beyond ±2^53, which rounds to nearest.
    fn to_f64(self) -> f64;

    /// The value nearest `value`, like an `as` cast: floats round to nearest-even, integers
    /// truncate toward zero and saturate (NaN gives 0), bool is `value != 0`.
    fn from_f64(value: f64) -> Self;
}

/// Implements [`Element`] (and its sealed byte order) for `$t`, stored in
/// `TensorData::$variant`; `$le` are the type's `write_le` and `read_le`.
macro_rules! element_with_bytes {
    ($t:ty, $variant:ident, { $($le:tt)* }, |$x:ident| $to_f64:expr, |$v:ident| $from_f64:expr) => {
        impl sealed::Sealed for $t {
            $($le)*

            fn unwrap_data(data: TensorData) -> Result<ArrayD<Self>, TensorData> {
                match data {
                    TensorData::$variant(a) => Ok(a),
                    other => Err(other),
                }
            }
        }

        impl Element for $t {
            const DTYPE: DType = DType::$variant;

            fn wrap(array: ArrayD<Self>) -> TensorData {
                TensorData::$variant(array)
            }

            fn view(data: &TensorData) -> Option<ArrayViewD<'_, Self>> {
                match data {
                    TensorData::$variant(a) => Some(a.view()),
                    _ => None,
                }
            }

            fn view_mut(data: &mut TensorData) -> Option<ArrayViewMutD<'_, Self>> {
                match data {
                    TensorData::$variant(a) => Some(a.view_mut()),
                    _ => None,
                }
            }

            fn slice(data: &TensorData) -> Option<&[Self]> {
                match data {
                    TensorData::$variant(a) => a.as_slice(),
                    _ => None,
                }
            }

            fn slice_mut(data: &mut TensorData) -> Option<&mut [Self]> {
                match data {
                    TensorData::$variant(a) => a.as_slice_mut(),
                    _ => None,
                }
            }

            fn to_f64(self) -> f64 {
                let $x = self;
                $to_f64
            }

            fn from_f64(value: f64) -> Self {
                let $v = value;
                $from_f64
            }
        }
    };
}

/// Implements [`Element`] for a primitive element type, little-endian in files.
macro_rules! element {
    ($t:ty, $variant:ident, |$x:ident| $to_f64:expr, |$v:ident| $from_f64:expr) => {
        element_with_bytes!(
            $t,
            $variant,
            {
                fn write_le(self, out: &mut Vec<u8>) {
                    out.extend_from_slice(&self.to_le_bytes());
                }

                fn read_le(chunk: &[u8]) -> Option<Self> {
                    chunk.try_into().ok().map(<$t>::from_le_bytes)
                }
            },
            |$x| $to_f64,
            |$v| $from_f64
        );
    };
}

element!(f32, F32, |x| f64::from(x), |v| v as f32);
element!(f16, F16, |x| x.to_f64(), |v| f16::from_f32(
    f64_to_f32_round_odd(v)
));
element!(bf16, BF16, |x| x.to_f64(), |v| bf16::from_f32(
    f64_to_f32_round_odd(v)
));
element!(i32, I32, |x| f64::from(x), |v| v as i32);
element!(i64, I64, |x| x as f64, |v| v as i64);
element!(i8, I8, |x| f64::from(x), |v| v as i8);
element!(u8, U8, |x| f64::from(x), |v| v as u8);
element!(i16, I16, |x| f64::from(x), |v| v as i16);
element!(u16, U16, |x| f64::from(x), |v| v as u16);
element!(u32, U32, |x| f64::from(x), |v| v as u32);
element!(u64, U64, |x| x as f64, |v| v as u64);
element!(f64, F64, |x| x, |v| v);

/// Implements [`Element`] for a low-precision element type stored one per byte.
macro_rules! byte_element {
    ($t:ident, |$x:ident| $to_f64:expr, |$v:ident| $from_f64:expr) => {
        element_with_bytes!(
            $t,
            $t,
            {
                fn write_le(self, out: &mut Vec<u8>) {
                    out.push(self.byte());
                }

                fn read_le(chunk: &[u8]) -> Option<Self> {
                    // Only the byte of a valid element: the bits beyond a 4- or 2-bit pattern
                    // are 0 (unsigned) or the sign extension (signed integers).
                    let [byte] = chunk else { return None };
                    let element = $t::from_bits(*byte);
                    (byte_of(element) == *byte).then_some(element)
                }
            },
            |$x| $to_f64,
            |$v| $from_f64
        );
    };
}

/// The in-memory byte of a low-precision element: its bit pattern, sign-extended for the
/// signed 4- and 2-bit integers.
pub(crate) trait ByteOf {
    /// The byte [`Tensor::to_le_bytes`](super::Tensor::to_le_bytes) writes.
    fn byte(self) -> u8;
}

fn byte_of<T: ByteOf>(x: T) -> u8 {
    x.byte()
}

macro_rules! float_byte {
    ($($t:ident),*) => {$(
        impl ByteOf for $t {
            fn byte(self) -> u8 {
                self.to_bits()
            }
        }
    )*};
}
float_byte!(F8E4M3FN, F8E4M3FNUZ, F8E5M2, F8E5M2FNUZ, F8E8M0, F4E2M1);

macro_rules! int_byte {
    ($($t:ident),*) => {$(
        impl ByteOf for $t {
            fn byte(self) -> u8 {
                self.get() as u8
            }
        }
    )*};
}
int_byte!(I4, U4, I2, U2);

// Conversions from f64 follow ONNX Cast's defaults: the 8-bit floats saturate, E8M0 rounds
// up, the integers keep the low bits ([`crate::lowp`]).
byte_element!(F8E4M3FN, |x| x.to_f64(), |v| F8E4M3FN::from_f64_saturating(
    v, true
));
byte_element!(F8E4M3FNUZ, |x| x.to_f64(), |v| {
    F8E4M3FNUZ::from_f64_saturating(v, true)
});
byte_element!(F8E5M2, |x| x.to_f64(), |v| F8E5M2::from_f64_saturating(
    v, true
));
byte_element!(F8E5M2FNUZ, |x| x.to_f64(), |v| {
    F8E5M2FNUZ::from_f64_saturating(v, true)
});
byte_element!(F8E8M0, |x| x.to_f64(), |v| F8E8M0::from_f64_rounded(
    v,
    true,
    crate::lowp::RoundMode::Up
));
byte_element!(F4E2M1, |x| x.to_f64(), |v| F4E2M1::from_f64_saturating(
    v, true
));
byte_element!(I4, |x| x.get() as f64, |v| I4::from_f64_wrapping(v));
byte_element!(U4, |x| x.get() as f64, |v| U4::from_f64_wrapping(v));
byte_element!(I2, |x| x.get() as f64, |v| I2::from_f64_wrapping(v));
byte_element!(U2, |x| x.get() as f64, |v| U2::from_f64_wrapping(v));

impl sealed::Sealed for bool {
    fn write_le(self, out: &mut Vec<u8>) {
        out.push(u8::from(self));
    }

    fn read_le(chunk: &[u8]) -> Option<Self> {
        match chunk {
            [0] => Some(false),
            [1] => Some(true),
            _ => None,
        }
    }

    fn unwrap_data(data: TensorData) -> Result<ArrayD<Self>, TensorData> {
        match data {
            TensorData::Bool(a) => Ok(a),
            other => Err(other),
        }
    }
}

impl Element for bool {
    const DTYPE: DType = DType::Bool;

    fn wrap(array: ArrayD<Self>) -> TensorData {
        TensorData::Bool(array)
    }

    fn view(data: &TensorData) -> Option<ArrayViewD<'_, Self>> {
        match data {
            TensorData::Bool(a) => Some(a.view()),
            _ => None,
        }
    }

    fn view_mut(data: &mut TensorData) -> Option<ArrayViewMutD<'_, Self>> {
        match data {
            TensorData::Bool(a) => Some(a.view_mut()),
            _ => None,
        }
    }

    fn slice(data: &TensorData) -> Option<&[Self]> {
        match data {
            TensorData::Bool(a) => a.as_slice(),
            _ => None,
        }
    }

    fn slice_mut(data: &mut TensorData) -> Option<&mut [Self]> {
        match data {
            TensorData::Bool(a) => a.as_slice_mut(),
            _ => None,
        }
    }

    fn to_f64(self) -> f64 {
        f64::from(u8::from(self))
    }

    fn from_f64(value: f64) -> Self {
        // NaN is truthy, as in numpy and torch.
        value != 0.0
    }
}

/// `value` rounded to f32 by round-to-odd: truncate, then set the last bit if inexact.
///
/// half's `from_f64` truncates low mantissa bits before rounding, and on x86 rounds through
/// f32 first; both can miss a tie-break, and differently per platform. Rounding to odd
/// keeps enough information (24 bits >= 11 + 2 and 8 + 2) for the correctly rounded
/// f32 -> f16/bf16 step that follows, so the two steps round exactly once, everywhere.
fn f64_to_f32_round_odd(value: f64) -> f32 {
    let nearest = value as f32;
    if value.is_nan() || f64::from(nearest) == value {
        return nearest;
    }
    let mut bits = nearest.to_bits();
    if f64::from(nearest).abs() > value.abs() {
        // Rounded away from zero (possibly to infinity): step back one ulp to truncate.
        bits -= 1;
    }
    f32::from_bits(bits | 1)
}

/// `value` rounded to f64 by round-to-odd, so that a further float rounding is exact (see
/// [`f64_to_f32_round_odd`]); `i64 as f64` would round twice on the way to f32 or bf16.
pub(super) fn i64_to_f64_round_odd(value: i64) -> f64 {
    let magnitude = value.unsigned_abs();
    let bits = u64::BITS - magnitude.leading_zeros();
    let rounded = if bits <= f64::MANTISSA_DIGITS {
        magnitude as f64
    } else {
        let shift = bits - f64::MANTISSA_DIGITS;
        let sticky = u64::from(magnitude & ((1 << shift) - 1) != 0);
        // Both factors are exact in f64, so the product is too.
        ((magnitude >> shift) | sticky) as f64 * 2f64.powi(shift as i32)
    };
    if value < 0 { -rounded } else { rounded }
}
