//! The type of a tensor: its shape and element type, without its data.

use crate::dtype::DType;
use crate::shape::Shape;

/// The shape and dtype of one tensor, without its data.
///
/// ```
/// use pto_types::{DType, Shape, TensorType};
/// let t = TensorType { shape: Shape::from([4, 64]), dtype: DType::F32 };
/// assert_eq!(t.to_string(), "f32[4, 64]");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct TensorType {
    /// The shape.
    pub shape: Shape,
    /// The element type.
    pub dtype: DType,
}

impl TensorType {
    /// The bytes this tensor occupies.
    pub fn bytes(&self) -> u64 {
        // Saturating: a traced graph's values have checked sizes, so this is exact there.
        (self.shape.numel() as u64).saturating_mul(self.dtype.size_bytes() as u64)
    }
}

impl core::fmt::Display for TensorType {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}{}", self.dtype, self.shape)
    }
}
