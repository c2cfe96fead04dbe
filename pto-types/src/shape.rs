//! Tensor shapes.

use core::fmt;

use serde::{Deserialize, Serialize};

use crate::error::OpError;

/// The most bytes one tensor may have (16 TiB): far above any real tensor, and small enough
/// that the sizes of a million tensors sum without overflow.
pub const MAX_TENSOR_BYTES: u64 = 1 << 44;

/// The largest dim a shape may have: ONNX and the model file's graph write dims as int64,
/// so a larger one could not be written back (it would read as negative).
pub const MAX_DIM: u64 = i64::MAX as u64;

/// Why a shape is too large for a tensor of its dtype (see [`Shape::check_size`]). Each
/// message reads after the tensor's type, e.g. `f32[0, 18446744073709551615], whose dim 1 ...`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SizeError {
    /// A dim above [`MAX_DIM`].
    #[error(
        "whose dim {axis}, {dim}, is more than the {MAX_DIM} a dim may be (ONNX dims are int64)"
    )]
    Dim {
        /// The dim's index, outermost 0.
        axis: usize,
        /// Its size.
        dim: usize,
    },
    /// More than [`MAX_TENSOR_BYTES`].
    #[error("larger than the {MAX_TENSOR_BYTES} bytes a tensor may have")]
    Bytes,
    /// A tensor with no elements whose other dims make more than [`MAX_TENSOR_BYTES`]: its
    /// strides and the row sizes computed from its dims would still overflow.
    #[error(
        "which has no elements, but whose nonzero dims make more than the {MAX_TENSOR_BYTES} \
         bytes a tensor may have"
    )]
    ZeroElementExtent,
}

/// The dimensions of a tensor, outermost first.
///
/// ```
/// use pto_types::Shape;
/// let s = Shape::from([2, 3, 4]);
/// assert_eq!(s.rank(), 3);
/// assert_eq!(s.numel(), 24);
/// assert_eq!(s.dim(-1).unwrap(), 4);
/// assert_eq!(s.to_string(), "[2, 3, 4]");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Shape(Vec<usize>);

impl Shape {
    /// A shape with the given dimensions.
    pub fn new(dims: impl Into<Vec<usize>>) -> Shape {
        Shape(dims.into())
    }

    /// The shape of a scalar (rank 0, one element).
    pub fn scalar() -> Shape {
        Shape(Vec::new())
    }

    /// The dimensions, outermost first.
    pub fn dims(&self) -> &[usize] {
        &self.0
    }

    /// The number of dimensions.
    pub fn rank(&self) -> usize {
        self.0.len()
    }

    /// The number of elements (1 for a scalar), saturating at `usize::MAX` when it does not
    /// fit. Every value of a traced graph has a checked size (see [`Shape::checked_bytes`]),
    /// so its count is exact; for a shape from elsewhere use [`Shape::checked_numel`].
    pub fn numel(&self) -> usize {
        self.0
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .unwrap_or(usize::MAX)
    }

    /// The number of elements, or an error naming the shape when it does not fit a `usize`.
    ///
    /// ```
    /// use pto_types::Shape;
    /// assert_eq!(Shape::from([2, 3]).checked_numel().unwrap(), 6);
    /// assert!(Shape::from([1 << 62, 16]).checked_numel().is_err());
    /// ```
    pub fn checked_numel(&self) -> Result<usize, OpError> {
        self.0
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .ok_or_else(|| OpError::invalid(format!("shape {self} has too many elements to count")))
    }

    /// The bytes of a `dtype` tensor of this shape, or an error naming the shape when they
    /// exceed [`MAX_TENSOR_BYTES`] (so that sums of many tensors' sizes cannot overflow), or
    /// when [`check_size`](Shape::check_size) refuses it for another reason.
    ///
    /// ```
    /// use pto_types::{DType, Shape};
    /// assert_eq!(Shape::from([2, 3]).checked_bytes(DType::F32).unwrap(), 24);
    /// assert!(Shape::from([1 << 30, 1 << 20]).checked_bytes(DType::F32).is_err());
    /// ```
    pub fn checked_bytes(&self, dtype: crate::dtype::DType) -> Result<u64, OpError> {
        self.check_size(dtype).map_err(|problem| {
            OpError::invalid(format!(
                "{dtype}{self} cannot be a tensor: it would be a tensor {problem}"
            ))
        })
    }

    /// The bytes of a `dtype` tensor of this shape, checked whatever its element count: every
    /// dim is at most [`MAX_DIM`], and the bytes, with zero dims counted as one, are at most
    /// [`MAX_TENSOR_BYTES`]. A tensor with no elements is no exception: its other dims still
    /// give its strides, the row sizes of its kernels, and its dims in an ONNX file, so
    /// `f32[0, 18446744073709551615]` is refused, not passed on as zero bytes. The bound also
    /// keeps the element count far below `isize::MAX`, the most an array may hold.
    ///
    /// ```
    /// use pto_types::shape::SizeError;
    /// use pto_types::{DType, Shape};
    /// assert_eq!(Shape::from([0, 8]).check_size(DType::F32), Ok(0));
    /// assert_eq!(
    ///     Shape::from([0, usize::MAX]).check_size(DType::F32),
    ///     Err(SizeError::Dim { axis: 1, dim: usize::MAX })
    /// );
    /// assert_eq!(
    ///     Shape::from([0, 1 << 62]).check_size(DType::F32),
    ///     Err(SizeError::ZeroElementExtent)
    /// );
    /// ```
    pub fn check_size(&self, dtype: crate::dtype::DType) -> Result<u64, SizeError> {
        if let Some((axis, &dim)) = self
            .0
            .iter()
            .enumerate()
            .find(|&(_, &d)| d as u64 > MAX_DIM)
        {
            return Err(SizeError::Dim { axis, dim });
        }
        let within = |bytes: Option<u64>| bytes.filter(|&b| b <= MAX_TENSOR_BYTES);
        let extent = within(
            self.0
                .iter()
                .filter(|&&d| d != 0)
                .try_fold(dtype.size_bytes() as u64, |n, &d| n.checked_mul(d as u64)),
        );
        if self.0.contains(&0) {
            return extent.map(|_| 0).ok_or(SizeError::ZeroElementExtent);
        }
        extent.ok_or(SizeError::Bytes)
    }

    /// The normalized index of `axis`; negative axes count from the end (-1 is the last).
    pub fn axis(&self, axis: isize) -> Result<usize, OpError> {
        let rank = self.rank() as isize;
        let normalized = if axis < 0 { axis + rank } else { axis };
        if (0..rank).contains(&normalized) {
            Ok(normalized as usize)
        } else {
            Err(OpError::invalid(format!(
                "axis {axis} is out of range for shape {self} of rank {rank}"
            )))
        }
    }

    /// The size of dimension `axis`; negative axes count from the end.
    pub fn dim(&self, axis: isize) -> Result<usize, OpError> {
        Ok(self.0[self.axis(axis)?])
    }

    /// The last dimension, or an error for a scalar.
    pub fn last(&self) -> Result<usize, OpError> {
        self.dim(-1)
    }

    /// The same shape with dimension `axis` replaced by `size`.
    pub fn with_dim(&self, axis: isize, size: usize) -> Result<Shape, OpError> {
        let mut dims = self.0.clone();
        dims[self.axis(axis)?] = size;
        Ok(Shape(dims))
    }

    /// Checks the rank, naming `input` in the error.
    ///
    /// ```
    /// use pto_types::Shape;
    /// let err = Shape::from([2, 3]).expect_rank("x", 3).unwrap_err();
    /// assert_eq!(err.to_string(), "input `x`: expected rank 3, got shape [2, 3] of rank 2");
    /// ```
    pub fn expect_rank(&self, input: &str, rank: usize) -> Result<&Shape, OpError> {
        if self.rank() == rank {
            Ok(self)
        } else {
            Err(OpError::input(
                input,
                format!(
                    "expected rank {rank}, got shape {self} of rank {}",
                    self.rank()
                ),
            ))
        }
    }

    /// The rows and columns of a rank-2 shape, or an error naming `input`.
    ///
    /// ```
    /// use pto_types::Shape;
    /// assert_eq!(Shape::from([4, 64]).expect_matrix("x").unwrap(), (4, 64));
    /// assert!(Shape::from([4]).expect_matrix("x").is_err());
    /// ```
    pub fn expect_matrix(&self, input: &str) -> Result<(usize, usize), OpError> {
        match self.0.as_slice() {
            [rows, cols] => Ok((*rows, *cols)),
            _ => Err(OpError::input(
                input,
                format!("expected rank 2, got shape {self} of rank {}", self.rank()),
            )),
        }
    }

    /// Checks that the shape is at least of rank `rank`, naming `input` in the error.
    pub fn expect_min_rank(&self, input: &str, rank: usize) -> Result<&Shape, OpError> {
        if self.rank() >= rank {
            Ok(self)
        } else {
            Err(OpError::input(
                input,
                format!(
                    "expected rank >= {rank}, got shape {self} of rank {}",
                    self.rank()
                ),
            ))
        }
    }

    /// Checks the two shapes are equal, naming `input` (the one checked) in the error.
    pub fn expect_eq(&self, input: &str, expected: &Shape) -> Result<&Shape, OpError> {
        if self == expected {
            Ok(self)
        } else {
            Err(OpError::input(
                input,
                format!("expected shape {expected}, got {self}"),
            ))
        }
    }

    /// The numpy-style broadcast of two shapes.
    ///
    /// ```
    /// use pto_types::Shape;
    /// let s = Shape::from([4, 1, 3]).broadcast(&Shape::from([5, 1])).unwrap();
    /// assert_eq!(s, Shape::from([4, 5, 3]));
    /// assert!(Shape::from([2]).broadcast(&Shape::from([3])).is_err());
    /// ```
    pub fn broadcast(&self, other: &Shape) -> Result<Shape, OpError> {
        let rank = self.rank().max(other.rank());
        let padded = |s: &Shape, i: usize| {
            let offset = rank - s.rank();
            if i < offset { 1 } else { s.0[i - offset] }
        };
        let mut dims = Vec::with_capacity(rank);
        for i in 0..rank {
            let (a, b) = (padded(self, i), padded(other, i));
            dims.push(match (a, b) {
                _ if a == b => a,
                (1, _) => b,
                (_, 1) => a,
                _ => {
                    return Err(OpError::invalid(format!(
                        "shapes {self} and {other} do not broadcast (dimension {i}: {a} vs {b})"
                    )));
                }
            });
        }
        Ok(Shape(dims))
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[")?;
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str("]")
    }
}

impl<const N: usize> From<[usize; N]> for Shape {
    fn from(dims: [usize; N]) -> Shape {
        Shape(dims.to_vec())
    }
}

impl From<Vec<usize>> for Shape {
    fn from(dims: Vec<usize>) -> Shape {
        Shape(dims)
    }
}

impl From<&[usize]> for Shape {
    fn from(dims: &[usize]) -> Shape {
        Shape(dims.to_vec())
    }
}

impl AsRef<[usize]> for Shape {
    fn as_ref(&self) -> &[usize] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_axes_count_from_the_end() {
        let s = Shape::from([2, 3, 4]);
        assert_eq!(s.axis(-1).unwrap(), 2);
        assert_eq!(s.axis(0).unwrap(), 0);
        assert!(s.axis(3).is_err());
        assert!(s.axis(-4).is_err());
        assert_eq!(s.with_dim(-1, 1).unwrap(), Shape::from([2, 3, 1]));
    }

    #[test]
    fn scalar_has_one_element() {
        assert_eq!(Shape::scalar().numel(), 1);
        assert_eq!(Shape::scalar().to_string(), "[]");
        assert!(Shape::scalar().last().is_err());
    }

    #[test]
    fn zero_element_shapes_are_checked_whatever_their_byte_count() {
        use crate::DType;
        let check = |dims: &[usize]| Shape::from(dims).check_size(DType::F32);
        assert_eq!(check(&[0, 8]), Ok(0));
        assert_eq!(check(&[0, 1 << 20, 16]), Ok(0));
        assert_eq!(
            check(&[0, usize::MAX]),
            Err(SizeError::Dim {
                axis: 1,
                dim: usize::MAX
            })
        );
        assert_eq!(
            check(&[1 << 63, 0]),
            Err(SizeError::Dim {
                axis: 0,
                dim: 1 << 63
            })
        );
        // The largest int64 dim is within MAX_DIM, but its bytes are not.
        assert_eq!(
            check(&[0, (1 << 63) - 1]),
            Err(SizeError::ZeroElementExtent)
        );
        assert_eq!(check(&[0, 1 << 62, 4]), Err(SizeError::ZeroElementExtent));
        assert_eq!(check(&[1 << 62, 16]), Err(SizeError::Bytes));
        assert_eq!(check(&[1 << 42]), Ok(1 << 44));
        assert_eq!(check(&[(1 << 42) + 1]), Err(SizeError::Bytes));
        assert_eq!(
            Shape::from([0, usize::MAX])
                .checked_bytes(DType::F32)
                .unwrap_err()
                .to_string(),
            "f32[0, 18446744073709551615] cannot be a tensor: it would be a tensor whose dim 1, \
             18446744073709551615, is more than the 9223372036854775807 a dim may be (ONNX \
             dims are int64)"
        );
    }
}
