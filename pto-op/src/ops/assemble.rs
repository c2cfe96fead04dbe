//! Tensors assembled element by element from their sources, for the std ops that move
//! elements as their bytes (so every dtype is exact): where each output element comes from
//! under numpy broadcasting, and the byte copy.

use crate::prelude::*;

/// For each element of the output of shape `out` (row-major), the row-major index of the
/// element of a tensor of shape `src` that numpy broadcasting gives it.
pub(super) fn source_indices(out: &[usize], src: &[usize]) -> Vec<usize> {
    let n: usize = out.iter().product();
    let offset = out.len() - src.len();
    let mut strides = vec![0usize; src.len()];
    let mut acc = 1;
    for axis in (0..src.len()).rev() {
        strides[axis] = if src[axis] == 1 { 0 } else { acc };
        acc *= src[axis];
    }
    let mut indices = Vec::with_capacity(n);
    let mut at = vec![0usize; out.len()];
    for _ in 0..n {
        indices.push(
            strides
                .iter()
                .enumerate()
                .map(|(axis, s)| at[offset + axis] * s)
                .sum(),
        );
        for axis in (0..out.len()).rev() {
            at[axis] += 1;
            if at[axis] < out[axis] {
                break;
            }
            at[axis] = 0;
        }
    }
    indices
}

/// A tensor of `shape` whose element `i` is element `pick(i)` of `sources[which]`, moved as
/// bytes; all sources share one dtype.
pub(super) fn assemble(
    sources: &[&Tensor],
    shape: &Shape,
    mut pick: impl FnMut(usize) -> (usize, usize),
) -> Result<Tensor, OpError> {
    let dtype = sources[0].dtype();
    let size = dtype.size_bytes();
    let bytes: Vec<Vec<u8>> = sources.iter().map(|t| t.to_le_bytes()).collect();
    let mut out = Vec::with_capacity(shape.numel() * size);
    for i in 0..shape.numel() {
        let (which, at) = pick(i);
        out.extend_from_slice(&bytes[which][at * size..(at + 1) * size]);
    }
    Tensor::from_le_bytes(dtype, shape.clone(), &out).map_err(|e| OpError::invalid(e.to_string()))
}
