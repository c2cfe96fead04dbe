//! A fast path's operands: the f32 elements of a node's inputs and outputs, with the
//! number of each checked.

use pto_op::{OpError, Tensor};

/// The f32 elements of a unary op's input and output.
///
/// # Errors
///
/// Not one input and one output, or not f32.
pub fn unary_f32<'a>(
    inputs: &[&'a Tensor],
    outputs: &'a mut [Tensor],
) -> Result<(&'a [f32], &'a mut [f32]), OpError> {
    match (inputs, outputs) {
        ([x], [y]) => Ok((x.as_slice::<f32>()?, y.as_slice_mut::<f32>()?)),
        (inputs, outputs) => Err(arity(inputs.len(), outputs.len(), 1)),
    }
}

/// A binary op's f32 elements: `a`, `b` and the output `y`.
pub type BinaryF32<'a> = (&'a [f32], &'a [f32], &'a mut [f32]);

/// The f32 elements of a binary op's inputs and output.
///
/// # Errors
///
/// Not two inputs and one output, or not f32.
pub fn binary_f32<'a>(
    inputs: &[&'a Tensor],
    outputs: &'a mut [Tensor],
) -> Result<BinaryF32<'a>, OpError> {
    match (inputs, outputs) {
        ([a, b], [y]) => Ok((
            a.as_slice::<f32>()?,
            b.as_slice::<f32>()?,
            y.as_slice_mut::<f32>()?,
        )),
        (inputs, outputs) => Err(arity(inputs.len(), outputs.len(), 2)),
    }
}

fn arity(inputs: usize, outputs: usize, expected: usize) -> OpError {
    OpError::invalid(format!(
        "a fast path prepared for {expected} input(s) and 1 output was run with {inputs} \
         input(s) and {outputs} output(s)"
    ))
}
