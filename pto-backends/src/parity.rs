//! Model-level parity: one model run on two targets with the same inputs, every output
//! compared.

use core::fmt;

use pto_op::target::TargetConfig;
use pto_op::{Comparison, Model, Tensor, TensorType, Tolerance};
use serde::Serialize;

use crate::buffers::human_bytes;
use crate::compiler::{CompileError, CompiledModel, RunError, TimeKind, compile};

/// One graph output compared across two targets.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutputParity {
    /// The output value's name.
    pub name: String,
    /// Its type.
    #[serde(rename = "type")]
    pub ty: TensorType,
    /// The op that produces it, when a node does.
    pub producer: Option<String>,
    /// The target's values (actual) against the reference target's (expected).
    pub comparison: Comparison,
}

/// The comparison of one model on a target against a reference target.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelParity {
    /// The model's name.
    pub model: String,
    /// The target checked (`sim`).
    pub target: String,
    /// The target it is checked against (`cpu`).
    pub reference_target: String,
    /// Every graph output, in order.
    pub outputs: Vec<OutputParity>,
    /// The target's total simulated seconds, where it simulates time.
    pub simulated_seconds: Option<f64>,
    /// The target's peak activation bytes.
    pub peak_activation_bytes: u64,
    /// The model's weight bytes.
    pub weight_bytes: u64,
}

impl ModelParity {
    /// True when every output agrees within its tolerance.
    pub fn passed(&self) -> bool {
        self.outputs.iter().all(|o| o.comparison.passed())
    }
}

impl fmt::Display for ModelParity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "parity of model `{}` ({} vs {}) {}",
            self.model,
            self.target,
            self.reference_target,
            if self.passed() { "passed" } else { "failed" }
        )?;
        for output in &self.outputs {
            write!(
                f,
                "\n  output `{}` {}{}: {}",
                output.name,
                output.ty,
                output
                    .producer
                    .as_ref()
                    .map_or(String::new(), |op| format!(" (from `{op}`)")),
                output.comparison
            )?;
        }
        if let Some(seconds) = self.simulated_seconds {
            write!(
                f,
                "\n  {} simulated time {:.1} us",
                self.target,
                seconds * 1e6
            )?;
        }
        write!(
            f,
            "\n  peak activation memory {}, weights {}",
            human_bytes(self.peak_activation_bytes),
            human_bytes(self.weight_bytes)
        )
    }
}

/// An error of checking model parity.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ParityError {
    /// The model does not compile for one of the targets.
    #[error(transparent)]
    Compile(#[from] CompileError),
    /// A run failed.
    #[error(transparent)]
    Run(#[from] RunError),
    /// Two outputs cannot be compared (their shapes or dtypes differ).
    #[error("model `{model}`: output `{output}`: {source}")]
    Compare {
        /// The model.
        model: String,
        /// The output.
        output: String,
        /// Why.
        source: pto_op::TensorError,
    },
}

/// The tolerance an output of `dtype` produced by `producer` is held to: the looser of the
/// op's declared tolerance for the dtype and the default for the dtype.
pub fn output_tolerance(producer: Option<&pto_op::OpDef>, dtype: pto_op::DType) -> Tolerance {
    let default = Tolerance::for_dtype(dtype);
    producer.map_or(default, |op| op.tolerance(dtype).looser(default))
}

/// The tolerance a model output produced by `producer` is held to, given its expected
/// values: [`output_tolerance`], with an atol of at least one ulp of the output's float
/// dtype at the output's scale (its largest finite `|expected|`).
///
/// An op's tolerance covers the op on equal inputs. In a model, the nodes before the
/// producer round to the dtype on both targets, each within its own tolerance, and an
/// intermediate value one ulp apart (an f32 sum in another order rounding to the other
/// neighbour) reaches the output at the intermediate's magnitude: where the output cancels
/// (a residual add of terms that nearly cancel), the output's rtol is less than one ulp of
/// the terms. One ulp at the output's scale is one rounding of a value of that size, and is
/// still far below a real error of an op (`examples/tests/ascendc_models.rs` holds the f16
/// decoder block to both).
///
/// ```
/// use pto_backends::parity::model_output_tolerance;
/// use pto_op::{DType, Tensor, Tolerance};
/// let y = Tensor::from_vec([3], vec![1.5f32, -0.01, 0.2]).unwrap().cast(DType::F16);
/// // One f16 ulp in [1, 2): 2^-10.
/// assert_eq!(model_output_tolerance(None, &y), Tolerance::new(1e-3, 2f64.powi(-10)));
/// ```
pub fn model_output_tolerance(producer: Option<&pto_op::OpDef>, expected: &Tensor) -> Tolerance {
    let dtype = expected.dtype();
    let tolerance = output_tolerance(producer, dtype);
    let mantissa_bits = match dtype {
        pto_op::DType::F16 => 10,
        pto_op::DType::BF16 => 7,
        pto_op::DType::F32 => 23,
        pto_op::DType::F64 => 52,
        // Integers compare exactly, and the storage-only small floats are produced by exact
        // casts and moves alone.
        _ => return tolerance,
    };
    let scale = expected
        .to_f64_vec()
        .into_iter()
        .filter(|v| v.is_finite())
        .fold(0.0f64, |m, v| m.max(v.abs()));
    if scale == 0.0 {
        return tolerance;
    }
    let ulp = 2f64.powi(scale.log2().floor() as i32 - mantissa_bits);
    tolerance.looser(Tolerance::new(0.0, ulp))
}

/// Compiles `model` for `target` and `reference_target` (names, or [`TargetConfig`]s with a
/// device profile) and compares them on `inputs`
/// (run order), or on random inputs of seed `seed` when `inputs` is `None`.
///
/// # Errors
///
/// When the model does not compile or run on either target. Outputs that differ are not an
/// error: they make a failed [`ModelParity`].
pub fn check_model_parity(
    model: &Model,
    target: impl Into<TargetConfig>,
    reference_target: impl Into<TargetConfig>,
    inputs: Option<&[Tensor]>,
    seed: u64,
) -> Result<ModelParity, ParityError> {
    let checked = compile(model, target)?;
    let reference = compile(model, reference_target)?;
    let random;
    let inputs = match inputs {
        Some(inputs) => inputs,
        None => {
            random = reference.random_inputs(seed);
            &random
        }
    };
    compare_compiled(&checked, &reference, inputs)
}

/// Runs two compiled forms of one model on `inputs` and compares every output.
///
/// # Errors
///
/// When a run fails or two outputs cannot be compared.
pub fn compare_compiled(
    checked: &CompiledModel,
    reference: &CompiledModel,
    inputs: &[Tensor],
) -> Result<ModelParity, ParityError> {
    let actual = checked.run(inputs)?;
    let expected = reference.run(inputs)?;
    let model = checked.model().name.clone();
    let outputs = checked
        .outputs()
        .into_iter()
        .zip(checked.output_producers())
        .zip(actual.outputs.iter().zip(&expected.outputs))
        .map(|((info, producer), (actual, expected))| {
            let tolerance = model_output_tolerance(producer, expected);
            let comparison =
                actual
                    .compare(expected, tolerance)
                    .map_err(|source| ParityError::Compare {
                        model: model.clone(),
                        output: info.name.clone(),
                        source,
                    })?;
            Ok(OutputParity {
                name: info.name,
                ty: info.ty,
                producer: producer.map(|op| op.name.to_owned()),
                comparison,
            })
        })
        .collect::<Result<Vec<_>, ParityError>>()?;
    let simulated: Vec<f64> = actual
        .node_times
        .iter()
        .filter(|t| t.kind == TimeKind::Simulated)
        .map(|t| t.seconds)
        .collect();
    Ok(ModelParity {
        model,
        target: checked.target().to_owned(),
        reference_target: reference.target().to_owned(),
        outputs,
        simulated_seconds: (!simulated.is_empty()).then(|| simulated.iter().sum()),
        peak_activation_bytes: checked.report().peak_activation_bytes,
        weight_bytes: checked.report().weight_bytes,
    })
}
