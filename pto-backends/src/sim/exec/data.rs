//! How the interpreter holds elements: floats and bool in f32 rounded to their dtype,
//! integers exactly in i128; and constants converted to a tile's dtype.

use half::{bf16, f16};
use ndarray::{ArrayD, IxDyn};
use pto_op::{DType, Tensor};

/// The elements of a tile or a global: floats and bool (0 or 1) in f32, integers exactly
/// in i128 (which holds every integer dtype, u64 included).
#[derive(Debug, Clone)]
pub(super) enum Data {
    F(ArrayD<f32>),
    I(ArrayD<i128>),
}

/// Whether `dtype` is held in i128.
pub(super) fn is_integer(dtype: DType) -> bool {
    matches!(
        dtype,
        DType::I8
            | DType::U8
            | DType::I16
            | DType::U16
            | DType::I32
            | DType::U32
            | DType::I64
            | DType::U64
    )
}

impl Data {
    pub(super) fn of_tensor(tensor: &Tensor) -> Data {
        if !is_integer(tensor.dtype()) {
            return Data::F(tensor.to_f32_array());
        }
        // u64 as is; every other integer dtype through i64, exactly.
        let wide = if tensor.dtype() == DType::U64 {
            tensor.view::<u64>().map(|v| v.mapv(i128::from))
        } else {
            tensor
                .cast(DType::I64)
                .view::<i64>()
                .map(|v| v.mapv(i128::from))
        };
        match wide {
            Ok(values) => Data::I(values),
            Err(_) => Data::F(tensor.to_f32_array()),
        }
    }

    pub(super) fn zeros(shape: &[usize], dtype: DType) -> Data {
        if is_integer(dtype) {
            Data::I(ArrayD::zeros(IxDyn(shape)))
        } else {
            Data::F(ArrayD::zeros(IxDyn(shape)))
        }
    }

    /// The elements as a tensor of `dtype` (exact: integer results were checked to fit).
    pub(super) fn into_tensor(self, dtype: DType) -> Tensor {
        match self {
            Data::F(a) => Tensor::from_array(a).cast(dtype),
            Data::I(a) if dtype == DType::U64 => Tensor::from_array(a.mapv(|v| v as u64)),
            Data::I(a) => Tensor::from_array(a.mapv(|v| v as i64)).cast(dtype),
        }
    }

    /// The elements as a tensor of `dtype` without a copy of floats rounded already.
    pub(super) fn to_tensor(&self, dtype: DType) -> Tensor {
        self.clone().into_tensor(dtype)
    }
}

/// Rounds every element of a float or bool tile to the nearest value of `dtype`.
pub(super) fn round_in_place(data: &mut ArrayD<f32>, dtype: DType) {
    match dtype {
        DType::F16 => data.mapv_inplace(|x| f16::from_f32(x).to_f32()),
        DType::BF16 => data.mapv_inplace(|x| bf16::from_f32(x).to_f32()),
        DType::Bool => data.mapv_inplace(|x| if x != 0.0 { 1.0 } else { 0.0 }),
        // f64 tiles are held in f32, as the cores do not compute in f64.
        _ => {}
    }
}

/// A float constant rounded to a float or bool `dtype`.
pub(super) fn float_scalar(value: f64, dtype: DType) -> f32 {
    let mut one = ArrayD::from_elem(IxDyn(&[]), value as f32);
    round_in_place(&mut one, dtype);
    one.iter().copied().next().unwrap_or(0.0)
}

/// The range of an integer dtype.
pub(super) fn integer_range(dtype: DType) -> (i128, i128) {
    match dtype {
        DType::I8 => (i8::MIN.into(), i8::MAX.into()),
        DType::U8 => (0, u8::MAX.into()),
        DType::I16 => (i16::MIN.into(), i16::MAX.into()),
        DType::U16 => (0, u16::MAX.into()),
        DType::I32 => (i32::MIN.into(), i32::MAX.into()),
        DType::U32 => (0, u32::MAX.into()),
        DType::U64 => (0, u64::MAX.into()),
        _ => (i64::MIN.into(), i64::MAX.into()),
    }
}

/// A constant converted to an integer `dtype`: truncated toward zero and saturated
/// (`as` saturates, NaN gives 0).
pub(super) fn integer_scalar(value: f64, dtype: DType) -> i128 {
    let (low, high) = integer_range(dtype);
    (value as i128).clamp(low, high)
}
