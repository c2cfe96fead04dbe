//! Parity: a kernel checked against its reference on the same inputs.
//!
//! An author declares cases next to the kernel, `#[parity(x = f16[4, 64], eps = 1e-5)]`,
//! and `#[custom_op]` turns each into a `#[test]` that calls [`assert_parity`]: the
//! reference runs on the `cpu` target, the kernel on `sim`, on the same random inputs, and
//! every output must agree within the tolerance (the case's, else the op's declared one for
//! the output dtype, else the default of `DEVICES.md`, [`Tolerance::for_dtype`](crate::tolerance::Tolerance::for_dtype)).
//!
//! [`check_parity`] does the same on any two executors and returns a [`ParityReport`].

mod case;

use core::fmt;

use crate::error::OpError;
use crate::executor::{Executor, Lowering};
use crate::op::OpDef;
use crate::target;
use crate::tensor::{Comparison, Tensor};

pub use case::{ParityCase, case_seed};

/// The outcome of one parity check: each output's comparison of the kernel's values (actual)
/// with the reference's (expected).
#[derive(Debug, Clone, PartialEq)]
pub struct ParityReport {
    /// The op's name.
    pub op: String,
    /// The target that ran the kernel (`sim`).
    pub kernel_target: String,
    /// The target that ran the reference (`cpu`).
    pub reference_target: String,
    /// The case, inputs named ([`ParityCase::describe`]).
    pub case: String,
    /// Each output's name and comparison, in the op's output order.
    pub outputs: Vec<(String, Comparison)>,
}

impl ParityReport {
    /// True when every output agrees within its tolerance.
    pub fn passed(&self) -> bool {
        self.outputs.iter().all(|(_, c)| c.passed())
    }
}

/// `parity of `demo.rms_norm` (sim vs cpu) failed for x=f16[5, 33], seed 0: output `y`:
/// 12 of 165 elements differ (...); first at [3, 17]: actual 0.5123, expected 0.4811`.
/// A failed report names only the outputs that differ.
impl fmt::Display for ParityReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let passed = self.passed();
        write!(
            f,
            "parity of `{}` ({} vs {}) {} for {}",
            self.op,
            self.kernel_target,
            self.reference_target,
            if passed { "passed" } else { "failed" },
            self.case
        )?;
        let shown = self.outputs.iter().filter(|(_, c)| passed || !c.passed());
        for (i, (name, comparison)) in shown.enumerate() {
            let separator = if i == 0 { ":" } else { ";" };
            write!(f, "{separator} output `{name}`: {comparison}")?;
        }
        Ok(())
    }
}

/// Runs `case` on `reference` and on `kernel` and compares every output.
///
/// Input `i` holds `Tensor::random(shape, dtype, seed * 1000 + i)` ([`ParityCase::input_values`]).
/// Each output is compared with the case's tolerance, else the op's declared tolerance for
/// the output's dtype, else the default ([`OpDef::tolerance`]).
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
            let tolerance = case.tolerance.unwrap_or_else(|| def.tolerance(ty.dtype));
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

/// Checks `case` with the kernel on the `sim` target against the reference on `cpu`, then
/// on each linked target of [`DEVICE_KERNEL_TARGETS`] that can hold the instance; what each
/// `#[parity]` test runs.
///
/// # Panics
///
/// With the report when an output differs; with the error when the case cannot run; and,
/// when `cpu` or `sim` is not linked, with what to add to the op crate.
pub fn assert_parity(def: &'static OpDef, case: &ParityCase) {
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
    let check = |kernel: &dyn Executor| match check_parity(def, case, reference.as_ref(), kernel) {
        Ok(report) if report.passed() => {}
        Ok(report) => panic!("{report}"),
        Err(e) => panic!(
            "parity of `{}` ({} vs {}) could not run for {}: {e}",
            def.name,
            kernel.target(),
            reference.target(),
            case.describe(def.inputs)
        ),
    };
    check(kernel.as_ref());
    for name in DEVICE_KERNEL_TARGETS {
        let Ok(device) = target::target(name) else {
            continue;
        };
        // A target that cannot run the instance on its default device (bf16 on Kirin, a
        // call path the SoC lacks such as an f32 Mmad on Kirin) declines it; the kernel's
        // lowering is then checked on the devices of DEVICE_PARITY_PROFILES that can run it,
        // and the report says so on stderr.
        match device.prepare(def, &case.inputs, &case.attrs) {
            Ok(Lowering::NoKernel) if def.kernel.is_some() => {
                let default = device
                    .device_profile()
                    .map_or_else(|| "its default device".to_owned(), |p| p.name.clone());
                let mut ran = Vec::new();
                for profile in DEVICE_PARITY_PROFILES {
                    let Ok(profile) = crate::DeviceProfile::builtin(profile) else {
                        continue;
                    };
                    let other = target::TargetConfig::new(name)
                        .on(profile.clone())
                        .executor();
                    let Ok(other) = other else { continue };
                    if let Ok(Lowering::Kernel { .. }) =
                        other.prepare(def, &case.inputs, &case.attrs)
                    {
                        check(other.as_ref());
                        ran.push(profile.name.clone());
                    }
                }
                eprintln!(
                    "parity of `{}` for {}: {name} on {default}: declined (the device cannot \
                     run this instance); ran on: {}",
                    def.name,
                    case.describe(def.inputs),
                    if ran.is_empty() {
                        "none".to_owned()
                    } else {
                        ran.join(", ")
                    }
                );
            }
            Ok(Lowering::NoKernel) => {}
            Ok(_) => check(device.as_ref()),
            Err(e) => panic!(
                "parity of `{}` ({name} vs {}) could not run for {}: {e}",
                def.name,
                reference.target(),
                case.describe(def.inputs)
            ),
        }
    }
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

    #[test]
    fn declared_tolerances_apply_to_their_dtype_only() {
        assert_eq!(IDENTITY.tolerance(DType::F16), Tolerance::new(2e-3, 1e-3));
        assert_eq!(
            IDENTITY.tolerance(DType::BF16),
            Tolerance::for_dtype(DType::BF16)
        );
    }
}
