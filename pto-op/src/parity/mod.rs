//! Parity: a kernel checked against its reference on the same inputs.
//!
//! An author declares cases next to the kernel, `#[parity(x = f16[4, 64], eps = 1e-5)]`,
//! and `#[custom_op]` turns each into a `#[test]` that calls [`assert_parity`]: the
//! reference runs on the `cpu` target, the kernel on `sim` and on each linked device target
//! that can lower it ([`DEVICE_KERNEL_TARGETS`]), on the same random inputs, and the test
//! prints a line per target, ran or skipped and why ([`ParityRun`]). Every output must
//! agree within the tolerance (the case's, else the op's declared one for the output
//! dtype, else the default of `DEVICES.md`,
//! [`Tolerance::for_dtype`](crate::tolerance::Tolerance::for_dtype)).
//!
//! [`check_parity`] does the same on any two executors and returns a [`ParityReport`].

mod case;
mod report;
mod run;

use crate::error::OpError;
use crate::executor::{Executor, Lowering};
use crate::op::OpDef;
use crate::target;
use crate::tensor::Tensor;
use crate::tolerance::Tolerance;

pub use case::{ParityCase, case_seed};
pub use report::ParityReport;
pub use run::{ParityRun, TargetOutcome, TargetRun};

/// Runs `case` on `reference` and on `kernel` and compares every output.
///
/// Input `i` holds `Tensor::random(shape, dtype, seed * 1000 + i)` ([`ParityCase::input_values`]).
/// Input `i` with a range ([`ParityCase::range`]) holds `Tensor::random_uniform` over it
/// with the same seed. Each output is compared with the case's tolerance, else the op's
/// declared tolerance for the output's dtype, else the default ([`OpDef::tolerance`]); a
/// float output of a case with an integer input takes the looser of that and
/// [`accumulation_tolerance`].
///
/// # Errors
///
/// When the case's inputs do not fit the op (wrong count, rejected by its shape or dtype
/// rules), when either executor fails, or when either returns outputs of other shapes or
/// dtypes than the op's rules say. A mere difference in values is not an error: it is a
/// failed report.
pub fn check_parity(
    def: &'static OpDef,
    case: &ParityCase,
    reference: &dyn Executor,
    kernel: &dyn Executor,
) -> Result<ParityReport, OpError> {
    let types = def.infer(&case.inputs, &case.attrs)?;
    let inputs = case.input_values();
    let inputs: Vec<&Tensor> = inputs.iter().collect();
    let expected = reference.execute(def, &inputs, &case.attrs)?.outputs;
    let actual = kernel.execute(def, &inputs, &case.attrs)?.outputs;
    for (target, produced) in [(reference, &expected), (kernel, &actual)] {
        if produced.len() != def.outputs.len() {
            return Err(OpError::Unsupported {
                op: def.name.to_owned(),
                message: format!(
                    "target `{}` returned {} output(s), but the op has {} ({})",
                    target.target(),
                    produced.len(),
                    def.outputs.len(),
                    def.outputs.join(", ")
                ),
            });
        }
        def.check_outputs(target.target(), &types, produced)?;
    }
    let outputs = def
        .outputs
        .iter()
        .zip(&types)
        .zip(actual.iter().zip(&expected))
        .map(|((name, ty), (actual, expected))| {
            let tolerance = case.tolerance.unwrap_or_else(|| {
                let declared = def.tolerance(ty.dtype);
                accumulation_tolerance(case, expected).map_or(declared, |t| declared.looser(t))
            });
            Ok(((*name).to_owned(), actual.compare(expected, tolerance)?))
        })
        .collect::<Result<_, OpError>>()?;
    Ok(ParityReport {
        op: def.name.to_owned(),
        kernel_target: kernel.target().to_owned(),
        reference_target: reference.target().to_owned(),
        case: case.describe(def.inputs),
        outputs,
    })
}

/// The tolerance a float output of a case with an integer input is held to besides the
/// op's: `rtol = K u` and `atol = K u max|expected|`, where `u` is the unit roundoff of the
/// output dtype (2^-24 for f32, 2^-11 for f16, 2^-8 for bf16) and `K` the largest dim of
/// any input, a bound on the length of a product's sum. `None` for an integer output
/// (integers compare exactly) or a case without integer inputs.
///
/// Integer inputs (int8 weights, or an int8 `x` in `-128..128`) make products whose terms
/// are large and exact, and two targets that add the `K` terms in another order differ by
/// up to about `K u` times the sum of the terms' magnitudes; where the terms cancel that is
/// far above the f32 default (`rtol 1.3e-6, atol 1e-5`). `max|expected|` stands for the
/// terms' size.
///
/// ```
/// use pto_op::parity::{ParityCase, accumulation_tolerance};
/// use pto_op::{Attributes, DType, Shape, Tensor, TensorType, Tolerance};
/// let ty = |dims: [usize; 2], dtype| TensorType { shape: Shape::from(dims), dtype };
/// let case = ParityCase {
///     inputs: vec![ty([4, 128], DType::F32), ty([128, 8], DType::I8)],
///     attrs: Attributes::new(),
///     ranges: Vec::new(),
///     seed: 1,
///     tolerance: None,
/// };
/// let y = Tensor::from_vec([2], vec![-3.0f32, 2.0]).unwrap();
/// let k_u = 128.0 * 2f64.powi(-24);
/// assert_eq!(accumulation_tolerance(&case, &y), Some(Tolerance::new(k_u, 3.0 * k_u)));
/// assert_eq!(accumulation_tolerance(&case, &y.cast(DType::I32)), None);
/// ```
pub fn accumulation_tolerance(case: &ParityCase, expected: &Tensor) -> Option<Tolerance> {
    let roundoff = match expected.dtype() {
        crate::DType::F32 => 2f64.powi(-24),
        crate::DType::F16 => 2f64.powi(-11),
        crate::DType::BF16 => 2f64.powi(-8),
        crate::DType::F64 => 2f64.powi(-53),
        _ => return None,
    };
    if !case.inputs.iter().any(|t| t.dtype.is_integer()) {
        return None;
    }
    let reduction = case
        .inputs
        .iter()
        .flat_map(|t| t.shape.dims().iter().copied())
        .max()
        .unwrap_or(1);
    let scale = expected
        .to_f64_vec()
        .into_iter()
        .filter(|v| v.is_finite())
        .fold(0.0f64, |m, v| m.max(v.abs()));
    let rtol = reduction as f64 * roundoff;
    Some(Tolerance::new(rtol, rtol * scale))
}

/// Checks `case` with the kernel on the `sim` target against the reference on `cpu`, then
/// on each target of [`DEVICE_KERNEL_TARGETS`]; what each `#[parity]` test runs. Returns a
/// [`ParityRun`], a line per target, and prints it to stderr (shown by
/// `cargo test -- --nocapture`) whether the case passes or not.
///
/// A device target is skipped, and its line says why, when it is not linked (pto-backends
/// without its feature `device`), when the op has no kernel, or when the target's lowering
/// refuses the instance (a dtype or call path the device lacks: the line gives the
/// lowering's reason). Refused on its default device, the target is tried on each device of
/// [`DEVICE_PARITY_PROFILES`], with a line for each.
///
/// # Panics
///
/// With every line and the failed report when an output differs on a target that ran; with
/// the error when the case cannot run; and, when `cpu` or `sim` is not linked, with what to
/// add to the op crate.
pub fn assert_parity(def: &'static OpDef, case: &ParityCase) -> ParityRun {
    let (reference, kernel) = match (target::target("cpu"), target::target("sim")) {
        (Ok(reference), Ok(kernel)) => (reference, kernel),
        (reference, kernel) => {
            let missing: Vec<String> = [reference.err(), kernel.err()]
                .into_iter()
                .flatten()
                .map(|e| e.to_string())
                .collect();
            panic!(
                "parity of `{}` for {}: {}. Parity tests run the kernel on `sim` and the \
                 reference on `cpu`: add `pto-backends` as a dev-dependency of the op crate and \
                 `#[cfg(test)] use pto_backends as _;` to its lib.rs",
                def.name,
                case.describe(def.inputs),
                missing.join("; ")
            );
        }
    };
    let check = |kernel: &dyn Executor, target: String| -> TargetRun {
        match check_parity(def, case, reference.as_ref(), kernel) {
            Ok(report) => TargetRun {
                target,
                outcome: TargetOutcome::Ran(report),
            },
            Err(e) => panic!(
                "parity of `{}` ({} vs {}) could not run for {}: {e}",
                def.name,
                kernel.target(),
                reference.target(),
                case.describe(def.inputs)
            ),
        }
    };
    let skipped = |target: String, why: String| TargetRun {
        target,
        outcome: TargetOutcome::Skipped(why),
    };
    let mut targets = vec![check(kernel.as_ref(), kernel.target().to_owned())];
    for name in DEVICE_KERNEL_TARGETS {
        let device = match target::target(name) {
            Ok(device) => device,
            Err(_) => {
                targets.push(skipped(
                    name.to_owned(),
                    "not linked (needs pto-backends with its feature `device`)".to_owned(),
                ));
                continue;
            }
        };
        let label = |executor: &dyn Executor| match executor.device_profile() {
            Some(profile) => format!("{name} on {}", profile.name),
            None => name.to_owned(),
        };
        match device.prepare(def, &case.inputs, &case.attrs) {
            Ok(Lowering::Declined { reason }) => {
                targets.push(skipped(
                    label(device.as_ref()),
                    format!("the lowering refused the kernel: {reason}"),
                ));
                // A device that cannot run the instance (bf16 on Kirin, an f32 Mmad there)
                // does not leave the kernel's lowering unchecked: another device may.
                for profile in DEVICE_PARITY_PROFILES {
                    let Ok(profile) = crate::DeviceProfile::builtin(profile) else {
                        continue;
                    };
                    let Ok(other) = target::TargetConfig::new(name).on(profile).executor() else {
                        continue;
                    };
                    targets.push(match other.prepare(def, &case.inputs, &case.attrs) {
                        Ok(Lowering::Declined { reason }) => skipped(
                            label(other.as_ref()),
                            format!("the lowering refused the kernel: {reason}"),
                        ),
                        Ok(Lowering::NoKernel) => skipped(
                            label(other.as_ref()),
                            "no kernel for these inputs or params".to_owned(),
                        ),
                        Ok(_) => check(other.as_ref(), label(other.as_ref())),
                        Err(e) => panic!(
                            "parity of `{}` ({} vs {}) could not run for {}: {e}",
                            def.name,
                            label(other.as_ref()),
                            reference.target(),
                            case.describe(def.inputs)
                        ),
                    });
                }
            }
            Ok(Lowering::NoKernel) => targets.push(skipped(
                label(device.as_ref()),
                match def.kernel {
                    Some(_) => "no kernel for these inputs or params".to_owned(),
                    None => "the op has no kernel".to_owned(),
                },
            )),
            Ok(_) => targets.push(check(device.as_ref(), label(device.as_ref()))),
            Err(e) => panic!(
                "parity of `{}` ({name} vs {}) could not run for {}: {e}",
                def.name,
                reference.target(),
                case.describe(def.inputs)
            ),
        }
    }
    let run = ParityRun {
        op: def.name.to_owned(),
        case: case.describe(def.inputs),
        reference_target: reference.target().to_owned(),
        targets,
    };
    if let Some(failed) = run.ran().find(|report| !report.passed()) {
        panic!("{failed}\n{run}");
    }
    eprintln!("{run}");
    run
}

/// Kernel targets that [`assert_parity`] also runs, after `sim`, where they are linked:
/// the device lowerings (`pto-backends` with the feature `device`).
pub const DEVICE_KERNEL_TARGETS: [&str; 1] = ["ascendc-host"];

/// The device profiles [`assert_parity`] runs a device target on when the target's default
/// device declines an instance: the Ascend 910B, whose cube has every `Mmad` type the
/// lowering emits, so a cube kernel Kirin cannot run is still checked on a device.
pub const DEVICE_PARITY_PROFILES: [&str; 1] = ["ascend910b"];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::Attributes;
    use crate::dtype::DType;
    use crate::op::SourceLocation;
    use crate::op::TensorType;
    use crate::shape::Shape;
    use crate::tolerance::Tolerance;

    fn same_shape(shapes: &[&Shape], _: &Attributes) -> Result<Vec<Shape>, OpError> {
        Ok(vec![shapes[0].clone()])
    }

    fn same_dtype(dtypes: &[DType], _: &Attributes) -> Result<Vec<DType>, OpError> {
        Ok(vec![dtypes[0]])
    }

    fn identity(inputs: &[&Tensor], _: &Attributes) -> Result<Vec<Tensor>, OpError> {
        Ok(vec![inputs[0].clone()])
    }

    static IDENTITY: OpDef = OpDef {
        name: "test.identity",
        version: 1,
        doc: "",
        inputs: &["x"],
        required_inputs: 1,
        outputs: &["y"],
        params: &[],
        source: SourceLocation {
            module_path: "pto_op::parity::tests",
            file: file!(),
            line: line!(),
        },
        infer_shapes: same_shape,
        infer_dtypes: same_dtype,
        reference: identity,
        kernel: None,
        estimator: None,
        properties: None,
        tolerances: &[(DType::F16, Tolerance::new(2e-3, 1e-3))],
        parity_cases: Vec::new,
    };

    fn case(dtype: DType) -> ParityCase {
        ParityCase {
            inputs: vec![TensorType {
                shape: Shape::from([3, 5]),
                dtype,
            }],
            attrs: Attributes::new(),
            ranges: Vec::new(),
            seed: 2,
            tolerance: None,
        }
    }

    // pto-op links no backend, so neither target exists here.
    #[test]
    fn a_missing_target_says_what_to_add() {
        let panic = std::panic::catch_unwind(|| assert_parity(&IDENTITY, &case(DType::F32)))
            .expect_err("assert_parity cannot pass without targets");
        let message = panic
            .downcast_ref::<String>()
            .expect("the panic message is formatted");
        for part in [
            "parity of `test.identity` for x=f32[3, 5], seed 2: ",
            "no execution target `cpu`",
            "no execution target `sim`",
            "add `pto-backends` as a dev-dependency of the op crate",
            "`#[cfg(test)] use pto_backends as _;`",
        ] {
            assert!(message.contains(part), "{part:?} not in: {message}");
        }
    }

    #[test]
    fn case_seed_is_fnv_1a_64() {
        // The published FNV-1a 64 test vectors.
        assert_eq!(case_seed("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(case_seed("foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn inputs_follow_the_documented_seed_scheme() {
        let mut c = case(DType::F16);
        c.inputs.push(c.inputs[0].clone());
        let values = c.input_values();
        assert_eq!(values[0], Tensor::random([3, 5], DType::F16, 2000));
        assert_eq!(values[1], Tensor::random([3, 5], DType::F16, 2001));
    }

    fn to_f32(_: &[DType], _: &Attributes) -> Result<Vec<DType>, OpError> {
        Ok(vec![DType::F32])
    }

    fn cast_to_f32(inputs: &[&Tensor], _: &Attributes) -> Result<Vec<Tensor>, OpError> {
        Ok(vec![inputs[0].cast(DType::F32)])
    }

    /// An op of an integer input and a float output, as an int8-weight product is.
    static WIDEN: OpDef = OpDef {
        name: "test.widen",
        infer_dtypes: to_f32,
        reference: cast_to_f32,
        tolerances: &[],
        ..IDENTITY
    };

    /// The reference, with its first element off by `offset`.
    struct Offset(f64);

    impl Executor for Offset {
        fn target(&self) -> &str {
            "offset"
        }

        fn execute(
            &self,
            op: &'static OpDef,
            inputs: &[&Tensor],
            attrs: &Attributes,
        ) -> Result<crate::Execution, OpError> {
            let y = &op.run_reference(inputs, attrs)?[0];
            let mut values = y.to_f64_vec().into_iter();
            let first = Tensor::from_f64_fn(y.shape(), y.dtype(), |index| {
                let offset = if index.iter().all(|i| *i == 0) {
                    self.0
                } else {
                    0.0
                };
                values.next().unwrap_or_default() + offset
            });
            Ok(crate::Execution::untimed(vec![first]))
        }
    }

    #[test]
    fn an_integer_input_widens_the_float_default_by_its_reduction_length() {
        let mut case = case(DType::I8);
        case.inputs[0].shape = Shape::from([4, 128]);
        case.ranges = vec![Some((-8.0, 8.0))];
        let values = case.input_values();
        let scale = values[0]
            .to_f64_vec()
            .iter()
            .fold(0.0f64, |m, v| m.max(v.abs()));
        let k_u = 128.0 * 2f64.powi(-24);
        // Within K u max|expected| but outside the f32 default (rtol 1.3e-6, atol 1e-5).
        let rounding = 0.8 * k_u * scale;
        assert!(rounding > 1e-5 + 1.3e-6 * scale, "{rounding}");
        let reference = Offset(0.0);
        let report = check_parity(&WIDEN, &case, &reference, &Offset(rounding)).unwrap();
        assert!(report.passed(), "{report}");
        assert_eq!(
            report.outputs[0].1.tolerance,
            Tolerance::new(k_u, k_u * scale)
        );
        // A real error still fails.
        let report = check_parity(&WIDEN, &case, &reference, &Offset(1e-2)).unwrap();
        assert!(!report.passed(), "{report}");
    }

    #[test]
    fn declared_tolerances_apply_to_their_dtype_only() {
        assert_eq!(IDENTITY.tolerance(DType::F16), Tolerance::new(2e-3, 1e-3));
        assert_eq!(
            IDENTITY.tolerance(DType::BF16),
            Tolerance::for_dtype(DType::BF16)
        );
    }
}
