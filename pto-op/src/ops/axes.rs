//! How the std ops read their axis params: an axis that may count from the end, a
//! permutation of the axes, the ranges of a slice. Public so that what runs an op (the cpu
//! target's fast paths in pto-backends) reads a node's params as its reference does, with
//! the same errors.

use ndarray::Slice;

use super::checks::param_error;
use crate::error::OpError;
use crate::shape::Shape;

/// The axis `axis` (negative counts from the end) of an input of rank `rank`, or an error
/// naming param `param` of op `op`.
///
/// # Errors
///
/// An axis outside `-rank..rank`.
pub fn normalize_axis(op: &str, param: &str, axis: i64, rank: usize) -> Result<usize, OpError> {
    let signed_rank = rank as i64;
    let normalized = if axis < 0 { axis + signed_rank } else { axis };
    if (0..signed_rank).contains(&normalized) {
        Ok(normalized as usize)
    } else {
        Err(param_error(
            op,
            param,
            format!(
                "axis {axis} is out of range for rank {rank} (expected {} ..= {})",
                -signed_rank,
                signed_rank - 1
            ),
        ))
    }
}

/// The permutation `perm` of an input of rank `rank`, checked: empty reverses the axes.
/// `op` names the op in the error.
///
/// # Errors
///
/// A `perm` that is not a permutation of `0..rank`.
pub fn permutation(op: &str, perm: &[i64], rank: usize) -> Result<Vec<usize>, OpError> {
    if perm.is_empty() {
        return Ok((0..rank).rev().collect());
    }
    let mut sorted: Vec<i64> = perm.to_vec();
    sorted.sort_unstable();
    if !sorted.iter().copied().eq(0..rank as i64) {
        return Err(param_error(
            op,
            "perm",
            format!(
                "expected a permutation of 0..{rank} (the axes of x), got {perm:?}; an empty \
                 perm reverses the axes"
            ),
        ));
    }
    Ok(perm.iter().map(|&axis| axis as usize).collect())
}

/// One axis of a slice: the elements `start..end` of `axis` taken every `step`, as
/// ndarray's [`Slice`] reads them (a negative step walks the range from its last element).
#[derive(Debug)]
pub struct SliceAxis {
    axis: usize,
    start: usize,
    end: usize,
    step: isize,
}

impl SliceAxis {
    /// The axis sliced.
    pub fn axis(&self) -> usize {
        self.axis
    }

    /// The number of elements taken.
    pub(super) fn len(&self) -> usize {
        (self.end - self.start).div_ceil(self.step.unsigned_abs())
    }

    /// The elements taken, as ndarray's `slice_axis` reads them.
    pub fn ndarray(&self) -> Slice {
        Slice::new(self.start as isize, Some(self.end as isize), self.step)
    }
}

/// The axes and ranges of an ONNX Slice of `x`, checked. Empty `steps` means steps of 1;
/// `op` names the op in the errors.
///
/// # Errors
///
/// `starts`, `ends`, `axes` and `steps` of different lengths, an axis out of range or
/// sliced twice, a step of 0.
pub fn slice_ranges(
    op: &str,
    x: &Shape,
    starts: &[i64],
    ends: &[i64],
    axes: &[i64],
    steps: &[i64],
) -> Result<Vec<SliceAxis>, OpError> {
    if ends.len() != starts.len() {
        return Err(param_error(
            op,
            "ends",
            format!(
                "has {} values, but starts has {}: one start and one end per sliced axis",
                ends.len(),
                starts.len()
            ),
        ));
    }
    if !steps.is_empty() && steps.len() != starts.len() {
        return Err(param_error(
            op,
            "steps",
            format!(
                "has {} values, but starts has {}: one step per start, or none for steps of 1",
                steps.len(),
                starts.len()
            ),
        ));
    }
    let axes: Vec<usize> = if axes.is_empty() {
        (0..starts.len())
            .map(|axis| axis as i64)
            .collect::<Vec<_>>()
    } else if axes.len() != starts.len() {
        return Err(param_error(
            op,
            "axes",
            format!(
                "has {} values, but starts has {}: one axis per start, or none for 0..{}",
                axes.len(),
                starts.len(),
                starts.len()
            ),
        ));
    } else {
        axes.to_vec()
    }
    .into_iter()
    .map(|axis| normalize_axis(op, "axes", axis, x.rank()))
    .collect::<Result<_, _>>()?;
    let mut seen = vec![false; x.rank()];
    let mut ranges = Vec::with_capacity(axes.len());
    for (k, ((&axis, &start), &end)) in axes.iter().zip(starts).zip(ends).enumerate() {
        if core::mem::replace(&mut seen[axis], true) {
            return Err(param_error(
                op,
                "axes",
                format!("axis {axis} is sliced twice"),
            ));
        }
        let step = steps.get(k).copied().unwrap_or(1);
        if step == 0 {
            return Err(param_error(
                op,
                "steps",
                format!("step {k} (of axis {axis}) is 0; steps are non-zero"),
            ));
        }
        let dim = x.dims()[axis] as i64;
        // ONNX: negative indices count from the end, then starts and ends are clamped to
        // [0, dim] for a positive step, and to [0, dim - 1] and [-1, dim - 1] for a
        // negative one.
        let from_end = |index: i64| {
            if index < 0 {
                index.saturating_add(dim)
            } else {
                index
            }
        };
        let (start, end) = (from_end(start), from_end(end));
        let (low, high) = if dim == 0 {
            (0, 0)
        } else if step > 0 {
            let (start, end) = (start.clamp(0, dim), end.clamp(0, dim));
            (start, end.max(start))
        } else {
            // Elements start, start + step, ... down to (not including) end: in ndarray's
            // terms the range end + 1 .. start + 1, walked backwards from its last element.
            let (start, end) = (start.clamp(0, dim - 1), end.clamp(-1, dim - 1));
            let (low, high) = (end + 1, start + 1);
            (low.min(high), high)
        };
        // A step longer than the axis takes one element, as one of the axis' length does:
        // clamped so (`i64::MIN` has no absolute value in i64).
        let magnitude = step.unsigned_abs().min(dim.max(1) as u64) as isize;
        let step = if step < 0 { -magnitude } else { magnitude };
        ranges.push(SliceAxis {
            axis,
            start: low as usize,
            end: high.max(low) as usize,
            step,
        });
    }
    Ok(ranges)
}
