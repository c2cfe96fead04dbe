//! A fast path held to its op's reference: both run on the same inputs, each output
//! compared with the op's tolerance.

use pto_op::cpu::prepare;
use pto_op::{Attributes, Comparison, OpDef, OpError, Tensor, TensorType};

/// Runs `def`'s fast path and its reference on `inputs` and compares each output with the
/// op's tolerance for its dtype; `None` when no fast path accepts the inputs. The fast path
/// writes over outputs filled with NaN, so an element it leaves out fails the comparison.
/// For an op's tests: a fast path stays within tolerance of its reference.
///
/// ```
/// use pto_op::{Attributes, DType, Tensor};
/// let x = Tensor::random([4, 100], DType::F32, 1);
/// let def = pto_op::ops::softmax::def();
/// let comparisons = pto_backends::cpu::compare_with_reference(def, &[&x], &Attributes::new())
///     .unwrap()
///     .expect("std.softmax has an f32 fast path");
/// assert!(comparisons.iter().all(|c| c.passed()));
/// ```
///
/// # Errors
///
/// The reference or the fast path failing, or params the fast path cannot read.
pub fn compare_with_reference(
    def: &OpDef,
    inputs: &[&Tensor],
    attrs: &Attributes,
) -> Result<Option<Vec<Comparison>>, OpError> {
    let types: Vec<TensorType> = inputs.iter().map(|t| t.tensor_type()).collect();
    let Some(kernel) = prepare(def.name, &types, attrs)? else {
        return Ok(None);
    };
    let expected = def.run_reference(inputs, attrs)?;
    let mut outputs: Vec<Tensor> = def
        .infer(&types, attrs)?
        .into_iter()
        .map(|t| Tensor::from_f64_fn(t.shape, t.dtype, |_| f64::NAN))
        .collect();
    kernel.run(inputs, &mut outputs)?;
    outputs
        .iter()
        .zip(&expected)
        .map(|(actual, expected)| {
            actual
                .compare(expected, def.tolerance(expected.dtype()))
                .map_err(OpError::from)
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}
