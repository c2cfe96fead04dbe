//! Dense tensors of any [`DType`]: storage and element types ([`TensorData`], [`Element`]),
//! seeded random tensors ([`Tensor::random`], [`SplitMix64`]) and comparison of results
//! against a reference ([`Tensor::compare`]).

use ndarray::{ArrayD, ArrayViewD, ArrayViewMutD, Dimension, IxDyn};

use crate::dtype::DType;
use crate::error::OpError;
use crate::shape::Shape;
use sealed::Sealed as _;

mod compare;
mod random;
mod storage;

pub use compare::{Comparison, Mismatch};
pub use random::SplitMix64;
use storage::i64_to_f64_round_odd;
pub use storage::{Element, TensorData, sealed};
#[doc(hidden)]
pub use storage::{dispatch, with_dtype};

/// An error of building, viewing or comparing a [`Tensor`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TensorError {
    /// The tensor holds a different element type than asked for.
    #[error("expected a tensor of dtype {expected}, got {actual}")]
    DTypeMismatch {
        /// The dtype asked for.
        expected: DType,
        /// The tensor's dtype.
        actual: DType,
    },
    /// The number of values does not fit the shape.
    #[error("shape {shape} holds {} elements, but {len} values were given", shape.numel())]
    LengthMismatch {
        /// The shape asked for.
        shape: Shape,
        /// The number of values given.
        len: usize,
    },
    /// Two tensors that must have the same shape do not.
    #[error("expected a tensor of shape {expected}, got {actual}")]
    ShapeMismatch {
        /// The shape of the expected tensor.
        expected: Shape,
        /// The shape of the actual tensor.
        actual: Shape,
    },
    /// A reshape to a shape with a different number of elements.
    #[error(
        "cannot reshape a tensor of shape {from} ({} elements) to shape {to} ({} elements)",
        from.numel(),
        to.numel()
    )]
    Reshape {
        /// The tensor's shape.
        from: Shape,
        /// The shape asked for.
        to: Shape,
    },
    /// The byte buffer has the wrong length for the dtype and shape.
    #[error("a {dtype} tensor of shape {shape} takes {expected} bytes, but {actual} were given")]
    ByteLength {
        /// The dtype.
        dtype: DType,
        /// The shape.
        shape: Shape,
        /// `shape.numel() * dtype.size_bytes()`.
        expected: usize,
        /// The length of the buffer.
        actual: usize,
    },
    /// A byte of a bool tensor's buffer is neither 0 nor 1.
    #[error("byte {offset} of a bool tensor is {value}, but bool elements must be 0 or 1")]
    InvalidBool {
        /// The offset of the byte in the buffer (also the element's row-major index).
        offset: usize,
        /// The byte.
        value: u8,
    },
}

impl From<TensorError> for OpError {
    fn from(e: TensorError) -> OpError {
        OpError::invalid(e.to_string())
    }
}

/// A dense n-dimensional array of one [`DType`], stored row-major.
///
/// ```
/// use pto_types::{DType, Shape, Tensor};
/// let t = Tensor::from_vec([2, 3], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).unwrap();
/// assert_eq!(t.shape(), Shape::from([2, 3]));
/// assert_eq!(t.dtype(), DType::F32);
/// assert_eq!(t.cast(DType::I32).to_vec::<i32>().unwrap(), vec![1, 2, 3, 4, 5, 6]);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    /// Always in standard (row-major, contiguous) layout.
    data: TensorData,
}

impl Tensor {
    /// A tensor of shape `shape` holding `data` in row-major order.
    ///
    /// ```
    /// use pto_types::Tensor;
    /// let t = Tensor::from_vec([2, 2], vec![1i32, 2, 3, 4]).unwrap();
    /// assert_eq!(t.view::<i32>().unwrap()[[1, 0]], 3);
    ///
    /// let err = Tensor::from_vec([2, 3], vec![0.0f32; 5]).unwrap_err();
    /// assert_eq!(err.to_string(), "shape [2, 3] holds 6 elements, but 5 values were given");
    /// ```
    pub fn from_vec<T: Element>(
        shape: impl Into<Shape>,
        data: Vec<T>,
    ) -> Result<Tensor, TensorError> {
        let shape = shape.into();
        let len = data.len();
        // ndarray rejects both a length mismatch and a shape whose size overflows; no vector
        // can match the latter, so both are a length mismatch.
        let array = ArrayD::from_shape_vec(IxDyn(shape.dims()), data)
            .map_err(|_| TensorError::LengthMismatch { shape, len })?;
        Ok(Tensor {
            data: T::wrap(array),
        })
    }

    /// A tensor holding `array`, copied into row-major layout if it is not already.
    pub fn from_array<T: Element>(array: ArrayD<T>) -> Tensor {
        let array = if array.is_standard_layout() {
            array
        } else {
            array.as_standard_layout().into_owned()
        };
        Tensor {
            data: T::wrap(array),
        }
    }

    /// A tensor of rank 0 holding `value`.
    pub fn scalar<T: Element>(value: T) -> Tensor {
        Tensor {
            data: T::wrap(ArrayD::from_elem(IxDyn(&[]), value)),
        }
    }

    /// A tensor of zeros (false for bool).
    pub fn zeros(shape: impl Into<Shape>, dtype: DType) -> Tensor {
        let shape = shape.into();
        with_dtype!(dtype, T => Tensor {
            data: T::wrap(ArrayD::from_elem(IxDyn(shape.dims()), T::from_f64(0.0))),
        })
    }

    /// A tensor whose element at each index is `f(index)`, converted with
    /// [`Element::from_f64`]; `f` is called in row-major order.
    pub fn from_f64_fn(
        shape: impl Into<Shape>,
        dtype: DType,
        mut f: impl FnMut(&[usize]) -> f64,
    ) -> Tensor {
        let shape = shape.into();
        with_dtype!(dtype, T => Tensor {
            data: T::wrap(ArrayD::from_shape_fn(IxDyn(shape.dims()), |index| {
                T::from_f64(f(index.slice()))
            })),
        })
    }

    /// The shape.
    pub fn shape(&self) -> Shape {
        Shape::from(self.dims())
    }

    /// The shape and dtype together, as shape and dtype rules take them.
    pub fn tensor_type(&self) -> crate::TensorType {
        crate::TensorType {
            shape: self.shape(),
            dtype: self.dtype(),
        }
    }

    /// The dimensions, outermost first.
    pub fn dims(&self) -> &[usize] {
        dispatch!(&self.data, a => a.shape())
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        match self.data {
            TensorData::F32(_) => DType::F32,
            TensorData::F16(_) => DType::F16,
            TensorData::BF16(_) => DType::BF16,
            TensorData::I32(_) => DType::I32,
            TensorData::I64(_) => DType::I64,
            TensorData::I8(_) => DType::I8,
            TensorData::U8(_) => DType::U8,
            TensorData::Bool(_) => DType::Bool,
            TensorData::I16(_) => DType::I16,
            TensorData::U16(_) => DType::U16,
            TensorData::U32(_) => DType::U32,
            TensorData::U64(_) => DType::U64,
            TensorData::F64(_) => DType::F64,
            TensorData::F8E4M3FN(_) => DType::F8E4M3FN,
            TensorData::F8E4M3FNUZ(_) => DType::F8E4M3FNUZ,
            TensorData::F8E5M2(_) => DType::F8E5M2,
            TensorData::F8E5M2FNUZ(_) => DType::F8E5M2FNUZ,
            TensorData::F8E8M0(_) => DType::F8E8M0,
            TensorData::F4E2M1(_) => DType::F4E2M1,
            TensorData::I4(_) => DType::I4,
            TensorData::U4(_) => DType::U4,
            TensorData::I2(_) => DType::I2,
            TensorData::U2(_) => DType::U2,
        }
    }

    /// The number of elements (1 for a scalar).
    pub fn numel(&self) -> usize {
        dispatch!(&self.data, a => a.len())
    }

    /// The elements.
    pub fn data(&self) -> &TensorData {
        &self.data
    }

    /// The elements, by value.
    pub fn into_data(self) -> TensorData {
        self.data
    }

    /// The elements as an array of `T`, or an error if the dtype is not `T`'s.
    pub fn view<T: Element>(&self) -> Result<ArrayViewD<'_, T>, TensorError> {
        let actual = self.dtype();
        T::view(&self.data).ok_or(TensorError::DTypeMismatch {
            expected: T::DTYPE,
            actual,
        })
    }

    /// The elements as a mutable array of `T`, or an error if the dtype is not `T`'s.
    pub fn view_mut<T: Element>(&mut self) -> Result<ArrayViewMutD<'_, T>, TensorError> {
        let actual = self.dtype();
        T::view_mut(&mut self.data).ok_or(TensorError::DTypeMismatch {
            expected: T::DTYPE,
            actual,
        })
    }

    /// The elements in row-major order, or an error if the dtype is not `T`'s.
    ///
    /// ```
    /// let t = pto_types::Tensor::from_vec([2], vec![1.0f32, 2.0]).unwrap();
    /// assert_eq!(t.as_slice::<f32>().unwrap(), &[1.0, 2.0]);
    /// ```
    pub fn as_slice<T: Element>(&self) -> Result<&[T], TensorError> {
        let actual = self.dtype();
        T::slice(&self.data).ok_or(TensorError::DTypeMismatch {
            expected: T::DTYPE,
            actual,
        })
    }

    /// The elements in row-major order, mutably, or an error if the dtype is not `T`'s.
    pub fn as_slice_mut<T: Element>(&mut self) -> Result<&mut [T], TensorError> {
        let actual = self.dtype();
        T::slice_mut(&mut self.data).ok_or(TensorError::DTypeMismatch {
            expected: T::DTYPE,
            actual,
        })
    }

    /// This tensor's allocation as a tensor of shape `dims` and the same dtype, without
    /// allocating when it has room for `dims`' elements (it grows otherwise). Elements it
    /// already held keep their values; the rest are zero. For buffers reused from run to
    /// run.
    ///
    /// ```
    /// let t = pto_types::Tensor::from_vec([2, 3], vec![1.0f32; 6]).unwrap();
    /// let t = t.reuse_as(&[4]);
    /// assert_eq!(t.dims(), &[4]);
    /// ```
    pub fn reuse_as(self, dims: &[usize]) -> Tensor {
        let len: usize = dims.iter().product();
        let data = dispatch!(self.data, a => {
            let (mut elements, _) = a.into_raw_vec_and_offset();
            elements.resize(len, Default::default());
            Element::wrap(ArrayD::from_shape_vec(IxDyn(dims), elements).unwrap_or_else(|_| {
                unreachable!("{len} elements make shape {dims:?}")
            }))
        });
        Tensor { data }
    }

    /// The elements as an owned array of `T`, or an error if the dtype is not `T`'s.
    pub fn into_array<T: Element>(self) -> Result<ArrayD<T>, TensorError> {
        let actual = self.dtype();
        T::unwrap_data(self.data).map_err(|_| TensorError::DTypeMismatch {
            expected: T::DTYPE,
            actual,
        })
    }

    /// The elements in row-major order, or an error if the dtype is not `T`'s.
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>, TensorError> {
        Ok(self.view::<T>()?.iter().copied().collect())
    }

    /// The elements converted to f32, whatever the dtype.
    ///
    /// f32 is copied as is and f16/bf16 are widened in bulk (`half`'s slice conversions);
    /// both give exactly the element-wise conversion.
    pub fn to_f32_array(&self) -> ArrayD<f32> {
        match &self.data {
            TensorData::F32(a) => a.clone(),
            TensorData::F16(a) => widen(a).unwrap_or_else(|| self.convert::<f32>()),
            TensorData::BF16(a) => widen(a).unwrap_or_else(|| self.convert::<f32>()),
            _ => self.convert::<f32>(),
        }
    }

    /// `array`, computed in f32, as a tensor of `dtype`: kept as is for f32 (no copy),
    /// narrowed in bulk for f16/bf16, else [`cast`](Tensor::cast). The same elements as
    /// `Tensor::from_array(array).cast(dtype)`.
    pub fn from_f32_array(array: ArrayD<f32>, dtype: DType) -> Tensor {
        let array = if array.is_standard_layout() {
            array
        } else {
            array.as_standard_layout().into_owned()
        };
        match dtype {
            DType::F32 => Tensor {
                data: TensorData::F32(array),
            },
            DType::F16 => Tensor {
                data: TensorData::F16(narrow(&array)),
            },
            DType::BF16 => Tensor {
                data: TensorData::BF16(narrow(&array)),
            },
            _ => Tensor {
                data: TensorData::F32(array),
            }
            .cast(dtype),
        }
    }

    /// The elements of a rank-2 tensor converted to f32, as a matrix; an error naming
    /// `input` for any other rank.
    pub fn to_f32_matrix(&self, input: &str) -> Result<ndarray::Array2<f32>, OpError> {
        self.shape().expect_matrix(input)?;
        self.to_f32_array()
            .into_dimensionality::<ndarray::Ix2>()
            .map_err(|e| OpError::input(input, format!("shape {}: {e}", self.shape())))
    }

    /// The elements converted to f64 in row-major order, whatever the dtype.
    pub fn to_f64_vec(&self) -> Vec<f64> {
        dispatch!(&self.data, a => a.iter().map(|x| x.to_f64()).collect())
    }

    /// Calls `visit` with each element converted to f64, in row-major order, whatever the
    /// dtype: [`to_f64_vec`](Tensor::to_f64_vec) without the copy (a summary of a 1 GiB f32
    /// output needs no 2 GiB vector).
    ///
    /// ```
    /// use pto_types::Tensor;
    /// let t = Tensor::from_vec([3], vec![1.0f32, -2.0, 0.5]).unwrap();
    /// let mut sum = 0.0;
    /// t.for_each_f64(|v| sum += v);
    /// assert_eq!(sum, -0.5);
    /// ```
    pub fn for_each_f64(&self, mut visit: impl FnMut(f64)) {
        dispatch!(&self.data, a => a.iter().for_each(|x| visit(x.to_f64())))
    }

    /// The tensor converted to `dtype` element by element, like an `as` cast: floats round
    /// to nearest-even (f16 and bf16 too), floats to integers truncate toward zero and
    /// saturate (NaN gives 0), integers to narrower integers wrap (keep the low bits, as
    /// ONNX Cast and onnxruntime do), anything to bool is `!= 0`, bool is 0 or 1.
    ///
    /// ```
    /// use pto_types::{DType, Tensor};
    /// let t = Tensor::from_vec([4], vec![1.9f32, -1.9, 300.0, f32::NAN]).unwrap();
    /// assert_eq!(t.cast(DType::I32).to_vec::<i32>().unwrap(), vec![1, -1, 300, 0]);
    /// assert_eq!(t.cast(DType::U8).to_vec::<u8>().unwrap(), vec![1, 0, 255, 0]);
    /// assert_eq!(t.cast(DType::Bool).to_vec::<bool>().unwrap(), vec![true, true, true, true]);
    /// let i = Tensor::from_vec([3], vec![300i32, -1, 128]).unwrap();
    /// assert_eq!(i.cast(DType::U8).to_vec::<u8>().unwrap(), vec![44, 255, 128]);
    /// assert_eq!(i.cast(DType::I8).to_vec::<i8>().unwrap(), vec![44, -1, -128]);
    /// // 1 + 2^-11 is halfway between two f16 values; the tie goes to the even one.
    /// let h = Tensor::scalar(1.0f32 + 2f32.powi(-11)).cast(DType::F16);
    /// assert_eq!(h.to_f64_vec(), vec![1.0]);
    /// ```
    pub fn cast(&self, dtype: DType) -> Tensor {
        if dtype == self.dtype() {
            // Also keeps i64 beyond ±2^53 exact, which the f64 route would not.
            return self.clone();
        }
        match (&self.data, dtype) {
            (TensorData::F32(a), DType::F16 | DType::BF16) => {
                return Tensor::from_f32_array(a.clone(), dtype);
            }
            (TensorData::F16(_) | TensorData::BF16(_), DType::F32) => {
                return Tensor {
                    data: TensorData::F32(self.to_f32_array()),
                };
            }
            _ => {}
        }
        if let Some(wide) = self.integers() {
            // Integer to integer: exact in i64, then the low bits (two's complement).
            let data = match dtype {
                DType::I64 => TensorData::I64(wide),
                DType::I32 => TensorData::I32(wide.mapv(|v| v as i32)),
                DType::I8 => TensorData::I8(wide.mapv(|v| v as i8)),
                DType::U8 => TensorData::U8(wide.mapv(|v| v as u8)),
                DType::I16 => TensorData::I16(wide.mapv(|v| v as i16)),
                DType::U16 => TensorData::U16(wide.mapv(|v| v as u16)),
                DType::U32 => TensorData::U32(wide.mapv(|v| v as u32)),
                DType::U64 => TensorData::U64(wide.mapv(|v| v as u64)),
                DType::I4 => TensorData::I4(wide.mapv(crate::lowp::I4::wrapping_from_i64)),
                DType::U4 => TensorData::U4(wide.mapv(crate::lowp::U4::wrapping_from_i64)),
                DType::I2 => TensorData::I2(wide.mapv(crate::lowp::I2::wrapping_from_i64)),
                DType::U2 => TensorData::U2(wide.mapv(crate::lowp::U2::wrapping_from_i64)),
                _ => return with_dtype!(dtype, T => Tensor { data: T::wrap(self.convert::<T>()) }),
            };
            return Tensor { data };
        }
        with_dtype!(dtype, T => Tensor { data: T::wrap(self.convert::<T>()) })
    }

    /// [`cast`](Tensor::cast) with ONNX `Cast`'s `saturate` and `round_mode` attributes,
    /// which only change conversions to the 8-bit floats (`saturate`) and to f8e8m0 (both):
    /// see [`crate::lowp`] for the rules. `cast(dtype)` is `cast_with(dtype, true,
    /// RoundMode::Up)`, ONNX's defaults.
    ///
    /// ```
    /// use pto_types::lowp::RoundMode;
    /// use pto_types::{DType, Tensor};
    /// let t = Tensor::from_vec([3], vec![1000.0f32, f32::INFINITY, 0.3]).unwrap();
    /// assert_eq!(t.cast(DType::F8E4M3FN).to_f64_vec(), vec![448.0, 448.0, 0.3125]);
    /// let wrapped = t.cast_with(DType::F8E4M3FN, false, RoundMode::Up).to_f64_vec();
    /// assert!(wrapped[0].is_nan() && wrapped[1].is_nan());
    /// assert_eq!(t.cast_with(DType::F8E5M2, false, RoundMode::Up).to_f64_vec()[1], f64::INFINITY);
    /// ```
    pub fn cast_with(
        &self,
        dtype: DType,
        saturate: bool,
        round_mode: crate::lowp::RoundMode,
    ) -> Tensor {
        use crate::lowp::{F8E4M3FN, F8E4M3FNUZ, F8E5M2, F8E5M2FNUZ, F8E8M0, RoundMode};
        if dtype == self.dtype() || (saturate && round_mode == RoundMode::Up) {
            return self.cast(dtype);
        }
        let data = match dtype {
            DType::F8E4M3FN => TensorData::F8E4M3FN(
                self.convert_with(|v| F8E4M3FN::from_f64_saturating(v, saturate)),
            ),
            DType::F8E4M3FNUZ => TensorData::F8E4M3FNUZ(
                self.convert_with(|v| F8E4M3FNUZ::from_f64_saturating(v, saturate)),
            ),
            DType::F8E5M2 => {
                TensorData::F8E5M2(self.convert_with(|v| F8E5M2::from_f64_saturating(v, saturate)))
            }
            DType::F8E5M2FNUZ => TensorData::F8E5M2FNUZ(
                self.convert_with(|v| F8E5M2FNUZ::from_f64_saturating(v, saturate)),
            ),
            DType::F8E8M0 => TensorData::F8E8M0(
                self.convert_with(|v| F8E8M0::from_f64_rounded(v, saturate, round_mode)),
            ),
            // The attributes change nothing else.
            _ => return self.cast(dtype),
        };
        Tensor { data }
    }

    /// The elements converted by `f` from f64 (i64 through a round-to-odd f64, see
    /// [`convert`](Tensor::convert)).
    fn convert_with<T>(&self, f: impl Fn(f64) -> T) -> ArrayD<T> {
        match &self.data {
            TensorData::I64(a) => a.mapv(|x| f(i64_to_f64_round_odd(x))),
            data => dispatch!(data, a => a.mapv(|x| f(x.to_f64()))),
        }
    }

    /// The elements as i64, when the dtype is an integer type.
    fn integers(&self) -> Option<ArrayD<i64>> {
        match &self.data {
            TensorData::I64(a) => Some(a.clone()),
            TensorData::I32(a) => Some(a.mapv(i64::from)),
            TensorData::I8(a) => Some(a.mapv(i64::from)),
            TensorData::U8(a) => Some(a.mapv(i64::from)),
            TensorData::I16(a) => Some(a.mapv(i64::from)),
            TensorData::U16(a) => Some(a.mapv(i64::from)),
            TensorData::U32(a) => Some(a.mapv(i64::from)),
            // Two's complement: the low bits, which is all a narrowing or same-width cast keeps.
            TensorData::U64(a) => Some(a.mapv(|v| v as i64)),
            TensorData::I4(a) => Some(a.mapv(|v| v.get())),
            TensorData::U4(a) => Some(a.mapv(|v| v.get())),
            TensorData::I2(a) => Some(a.mapv(|v| v.get())),
            TensorData::U2(a) => Some(a.mapv(|v| v.get())),
            _ => None,
        }
    }

    /// The same elements in shape `shape`, which must have as many elements.
    pub fn reshape(&self, shape: impl Into<Shape>) -> Result<Tensor, TensorError> {
        let shape = shape.into();
        if shape.numel() != self.numel() {
            return Err(TensorError::Reshape {
                from: self.shape(),
                to: shape,
            });
        }
        dispatch!(&self.data, a => Tensor::from_vec(shape, match a.as_slice() {
            Some(elements) => elements.to_vec(),
            None => a.iter().copied().collect(),
        }))
    }

    /// The elements in row-major order, little endian; bool as one byte, 0 or 1.
    pub fn to_le_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.numel() * self.dtype().size_bytes());
        dispatch!(&self.data, a => a.iter().for_each(|x| x.write_le(&mut out)));
        out
    }

    /// The tensor whose [`to_le_bytes`](Tensor::to_le_bytes) are `bytes`.
    pub fn from_le_bytes(
        dtype: DType,
        shape: impl Into<Shape>,
        bytes: &[u8],
    ) -> Result<Tensor, TensorError> {
        let shape = shape.into();
        let size = dtype.size_bytes();
        let expected = shape.numel().checked_mul(size);
        if expected != Some(bytes.len()) {
            return Err(TensorError::ByteLength {
                dtype,
                shape,
                expected: expected.unwrap_or(usize::MAX),
                actual: bytes.len(),
            });
        }
        with_dtype!(dtype, T => {
            let values = bytes
                .chunks_exact(size)
                .enumerate()
                .map(|(i, chunk)| {
                    T::read_le(chunk).ok_or(TensorError::InvalidBool {
                        offset: i * size,
                        value: chunk[0],
                    })
                })
                .collect::<Result<Vec<T>, _>>()?;
            Tensor::from_vec(shape, values)
        })
    }

    /// The elements in ONNX's `raw_data` layout: [`to_le_bytes`](Tensor::to_le_bytes),
    /// except that the 4-bit dtypes (f4e2m1, i4, u4) are packed two to a byte, the first
    /// element in the low nibble, and the 2-bit ones (i2, u2) four to a byte, the first in
    /// the lowest two bits; a last partial byte is padded with zero bits.
    ///
    /// ```
    /// use pto_types::{DType, Tensor};
    /// let t = Tensor::from_vec([3], vec![1i32, -1, 7]).unwrap().cast(DType::I4);
    /// assert_eq!(t.to_packed_le_bytes(), vec![0xF1, 0x07]);
    /// assert_eq!(Tensor::from_packed_le_bytes(DType::I4, [3], &[0xF1, 0x07]).unwrap(), t);
    /// ```
    pub fn to_packed_le_bytes(&self) -> Vec<u8> {
        let bits = self.dtype().bits();
        if bits >= 8 {
            return self.to_le_bytes();
        }
        let per_byte = 8 / bits;
        let mask = (1u8 << bits) - 1;
        let mut out = vec![0u8; self.numel().div_ceil(per_byte)];
        for (i, byte) in self.to_le_bytes().into_iter().enumerate() {
            out[i / per_byte] |= (byte & mask) << (bits * (i % per_byte));
        }
        out
    }

    /// The tensor whose [`to_packed_le_bytes`](Tensor::to_packed_le_bytes) are `bytes`
    /// (ONNX's `raw_data`); the padding bits of a last partial byte are ignored.
    pub fn from_packed_le_bytes(
        dtype: DType,
        shape: impl Into<Shape>,
        bytes: &[u8],
    ) -> Result<Tensor, TensorError> {
        let shape = shape.into();
        let bits = dtype.bits();
        if bits >= 8 {
            return Tensor::from_le_bytes(dtype, shape, bytes);
        }
        let per_byte = 8 / bits;
        let numel = shape.numel();
        let expected = numel.div_ceil(per_byte);
        if bytes.len() != expected {
            return Err(TensorError::ByteLength {
                dtype,
                shape,
                expected,
                actual: bytes.len(),
            });
        }
        let mask = (1u8 << bits) - 1;
        let patterns = (0..numel).map(|i| (bytes[i / per_byte] >> (bits * (i % per_byte))) & mask);
        use crate::lowp::{F4E2M1, I2, I4, U2, U4};
        let data = match dtype {
            DType::F4E2M1 => TensorData::F4E2M1(vec_array(patterns.map(F4E2M1::from_bits))),
            DType::I4 => TensorData::I4(vec_array(patterns.map(I4::from_bits))),
            DType::U4 => TensorData::U4(vec_array(patterns.map(U4::from_bits))),
            DType::I2 => TensorData::I2(vec_array(patterns.map(I2::from_bits))),
            DType::U2 => TensorData::U2(vec_array(patterns.map(U2::from_bits))),
            _ => unreachable!("{dtype} has {bits} bits; only the 4- and 2-bit dtypes pack"),
        };
        Tensor::from_array_data(data).reshape(shape)
    }

    /// A tensor of `data`.
    fn from_array_data(data: TensorData) -> Tensor {
        Tensor { data }
    }

    /// The elements converted to `T`; i64 goes through a round-to-odd f64 so floats round
    /// once (see [`i64_to_f64_round_odd`]).
    fn convert<T: Element>(&self) -> ArrayD<T> {
        match &self.data {
            TensorData::I64(a) => a.mapv(|x| T::from_f64(i64_to_f64_round_odd(x))),
            data => dispatch!(data, a => a.mapv(|x| T::from_f64(x.to_f64()))),
        }
    }
}

/// The elements as a rank-1 array.
fn vec_array<T>(values: impl Iterator<Item = T>) -> ArrayD<T> {
    let values: Vec<T> = values.collect();
    let len = values.len();
    ArrayD::from_shape_vec(IxDyn(&[len]), values)
        .unwrap_or_else(|_| unreachable!("{len} values make a vector"))
}

/// f16 and bf16: the element types `half` converts to and from f32 a slice at a time.
trait HalfElement: Element + Default
where
    [Self]: half::slice::HalfFloatSliceExt,
{
}
impl HalfElement for half::f16 {}
impl HalfElement for half::bf16 {}

/// `a` widened to f32 in bulk, or `None` if it is not contiguous in standard layout.
fn widen<E: HalfElement>(a: &ArrayD<E>) -> Option<ArrayD<f32>>
where
    [E]: half::slice::HalfFloatSliceExt,
{
    use half::slice::HalfFloatSliceExt as _;
    let elements = a.as_slice()?;
    let mut out = vec![0.0f32; elements.len()];
    elements.convert_to_f32_slice(&mut out);
    ArrayD::from_shape_vec(a.raw_dim(), out).ok()
}

/// `a` (standard layout) narrowed to f16 or bf16 in bulk, rounding to nearest-even like
/// `f16::from_f32`.
fn narrow<E: HalfElement>(a: &ArrayD<f32>) -> ArrayD<E>
where
    [E]: half::slice::HalfFloatSliceExt,
{
    use half::slice::HalfFloatSliceExt as _;
    match a.as_slice() {
        Some(elements) => {
            let mut out = vec![E::default(); elements.len()];
            out.convert_from_f32_slice(elements);
            ArrayD::from_shape_vec(a.raw_dim(), out)
                .unwrap_or_else(|_| a.mapv(|x| E::from_f64(f64::from(x))))
        }
        None => a.mapv(|x| E::from_f64(f64::from(x))),
    }
}

#[cfg(test)]
mod tests;
