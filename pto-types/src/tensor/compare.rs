//! Comparison of a result against a reference, element by element within a tolerance.

use core::fmt;

use serde::Serialize;

use crate::shape::Shape;
use crate::tolerance::Tolerance;

use super::{Tensor, TensorError};

impl Tensor {
    /// Compares `self` (the actual result) with `expected` element by element.
    ///
    /// Shapes must match; dtypes may differ, since values are compared as f64. An element
    /// passes when `|actual - expected| <= atol + rtol * |expected|`, when both are NaN, or
    /// when both are the same infinity. A failing NaN or infinity counts as an infinite
    /// error in [`Comparison::max_abs_error`] and [`Comparison::max_rel_error`].
    ///
    /// ```
    /// use pto_types::{Tensor, Tolerance};
    /// let expected = Tensor::from_vec([2, 2], vec![1.0f32, 2.0, 3.0, 4.0]).unwrap();
    /// let actual = Tensor::from_vec([2, 2], vec![1.0f32, 2.0, 3.5, 4.0]).unwrap();
    /// let c = actual.compare(&expected, Tolerance::new(1e-3, 1e-5)).unwrap();
    /// assert!(!c.passed());
    /// assert_eq!(c.mismatches, 1);
    /// assert_eq!(c.first_mismatch.as_ref().unwrap().index, vec![1, 0]);
    /// assert_eq!(
    ///     c.to_string(),
    ///     "1 of 4 elements differ (max abs error 5.0e-1, max rel error 1.7e-1, \
    ///      rtol 1e-3, atol 1e-5); first at [1, 0]: actual 3.5, expected 3"
    /// );
    /// assert!(actual.compare(&expected, Tolerance::new(0.2, 0.0)).unwrap().passed());
    /// ```
    pub fn compare(&self, expected: &Tensor, tol: Tolerance) -> Result<Comparison, TensorError> {
        let shape = self.shape();
        if shape != expected.shape() {
            return Err(TensorError::ShapeMismatch {
                expected: expected.shape(),
                actual: shape,
            });
        }
        let mut c = Comparison {
            numel: shape.numel(),
            mismatches: 0,
            max_abs_error: 0.0,
            max_rel_error: 0.0,
            first_mismatch: None,
            tolerance: tol,
        };
        let pairs = self.to_f64_vec().into_iter().zip(expected.to_f64_vec());
        for (i, (a, e)) in pairs.enumerate() {
            let (abs_error, ok) = if a.is_nan() || e.is_nan() {
                let both = a.is_nan() && e.is_nan();
                (if both { 0.0 } else { f64::INFINITY }, both)
            } else if a.is_infinite() || e.is_infinite() {
                (if a == e { 0.0 } else { f64::INFINITY }, a == e)
            } else {
                let d = (a - e).abs();
                (d, d <= tol.atol + tol.rtol * e.abs())
            };
            c.max_abs_error = c.max_abs_error.max(abs_error);
            if e != 0.0 && !e.is_nan() {
                // An error of 0 against an infinite expected value is a relative error of 0.
                let rel = if abs_error == 0.0 {
                    0.0
                } else {
                    abs_error / e.abs()
                };
                c.max_rel_error = c.max_rel_error.max(rel);
            }
            if !ok {
                c.mismatches += 1;
                if c.first_mismatch.is_none() {
                    c.first_mismatch = Some(Mismatch {
                        index: unravel(i, shape.dims()),
                        actual: a,
                        expected: e,
                    });
                }
            }
        }
        Ok(c)
    }
}

/// The row-major multi-index of flat position `flat` in an array of dimensions `dims`.
pub(super) fn unravel(mut flat: usize, dims: &[usize]) -> Vec<usize> {
    let mut index = vec![0; dims.len()];
    for (slot, &d) in index.iter_mut().zip(dims).rev() {
        *slot = flat % d;
        flat /= d;
    }
    index
}

/// The result of [`Tensor::compare`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The number of elements compared.
    pub numel: usize,
    /// The number of elements outside the tolerance.
    pub mismatches: usize,
    /// The largest `|actual - expected|`.
    pub max_abs_error: f64,
    /// The largest `|actual - expected| / |expected|` over elements with `expected != 0`.
    pub max_rel_error: f64,
    /// The first element, in row-major order, outside the tolerance.
    pub first_mismatch: Option<Mismatch>,
    /// The tolerance applied.
    pub tolerance: Tolerance,
}

impl Comparison {
    /// True when every element is within the tolerance.
    pub fn passed(&self) -> bool {
        self.mismatches == 0
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.passed() {
            write!(f, "all {} elements match", self.numel)?;
        } else {
            write!(f, "{} of {} elements differ", self.mismatches, self.numel)?;
        }
        write!(
            f,
            " (max abs error {}, max rel error {}, {})",
            Err2(self.max_abs_error),
            Err2(self.max_rel_error),
            self.tolerance
        )?;
        if let Some(m) = &self.first_mismatch {
            write!(
                f,
                "; first at {}: actual {}, expected {}",
                Shape::from(m.index.as_slice()),
                Value(m.actual),
                Value(m.expected)
            )?;
        }
        Ok(())
    }
}

/// An element outside the tolerance.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Mismatch {
    /// Its multi-index, outermost first.
    pub index: Vec<usize>,
    /// The actual value.
    pub actual: f64,
    /// The expected value.
    pub expected: f64,
}

/// An error magnitude with two significant digits (`3.1e-2`), and plain `0`.
pub(super) struct Err2(pub(super) f64);

impl fmt::Display for Err2 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0.0 || !self.0.is_finite() {
            write!(f, "{}", self.0)
        } else {
            write!(f, "{:.1e}", self.0)
        }
    }
}

/// An element value, short: values that are f32 print as the f32 (`0.5123`, not
/// `0.5123000144958496`), integers plainly, tiny and huge ones in scientific notation.
pub(super) struct Value(pub(super) f64);

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        if !v.is_finite() {
            return write!(f, "{v}");
        }
        if v.fract() == 0.0 && v.abs() < 1e19 {
            // All digits, as for the integer dtypes (f64 Display pads with zeros instead).
            return write!(f, "{}", v as i128);
        }
        let scientific = !(1e-4..1e16).contains(&v.abs());
        let narrow = v as f32;
        match (f64::from(narrow) == v, scientific) {
            (true, false) => write!(f, "{narrow}"),
            (true, true) => write!(f, "{narrow:e}"),
            (false, false) => write!(f, "{v}"),
            (false, true) => write!(f, "{v:e}"),
        }
    }
}
