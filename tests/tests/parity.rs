//! `check_parity` on two executors: the CPU reference against itself, and against an
//! executor that gets one element wrong, the way a kernel on the simulator would.
//!
//! The op here declares no `#[parity]` case: this binary links the real targets, and a
//! generated test would run its stub kernel on them (see `parity_cases.rs` for those).

use pto_backends::cpu::Cpu;
use pto_op::parity::{ParityCase, check_parity};
use pto_op::prelude::*;
use pto_op::{Execution, Executor, OpDef, TensorType};

/// y = x * gamma, broadcast over rows.
#[custom_op(
    name = "test.parity_scale",
    params(bias: f32 = 0.0),
    tolerance(f16 = (2e-3, 1e-3))
)]
pub mod parity_scale {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, gamma: &Shape, _p: &Params) -> Result<Shape, OpError> {
        x.expect_rank("x", 2)?;
        gamma.expect_eq("gamma", &Shape::from([x.last()?]))?;
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _gamma: DType, _p: &Params) -> Result<DType, OpError> {
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor, gamma: &Tensor, p: &Params) -> Result<Tensor, OpError> {
        let y = x.to_f32_array() * gamma.to_f32_array() + p.bias;
        Ok(Tensor::from_array(y).cast(x.dtype()))
    }
}

/// The CPU reference, with `delta` added to one element of the first output.
struct Perturbed {
    flat_index: usize,
    delta: f64,
}

impl Executor for Perturbed {
    fn target(&self) -> &str {
        "perturbed"
    }

    fn execute(
        &self,
        op: &'static OpDef,
        inputs: &[&Tensor],
        attrs: &Attributes,
    ) -> Result<Execution, OpError> {
        let mut outputs = Cpu.execute(op, inputs, attrs)?.outputs;
        let y = &outputs[0];
        let mut values = y.to_f64_vec();
        values[self.flat_index] += self.delta;
        let mut values = values.into_iter();
        outputs[0] =
            Tensor::from_f64_fn(y.shape(), y.dtype(), |_| values.next().unwrap_or_default());
        Ok(Execution::untimed(outputs))
    }
}

/// The CPU reference, returning f32 whatever the op's dtype rule says.
struct WrongDtype;

impl Executor for WrongDtype {
    fn target(&self) -> &str {
        "wrong-dtype"
    }

    fn execute(
        &self,
        op: &'static OpDef,
        inputs: &[&Tensor],
        attrs: &Attributes,
    ) -> Result<Execution, OpError> {
        let outputs = Cpu.execute(op, inputs, attrs)?.outputs;
        Ok(Execution::untimed(
            outputs.iter().map(|t| t.cast(DType::F32)).collect(),
        ))
    }
}

fn case(dtype: DType, rows: usize, cols: usize) -> ParityCase {
    ParityCase {
        inputs: vec![
            TensorType {
                shape: Shape::from([rows, cols]),
                dtype,
            },
            TensorType {
                shape: Shape::from([cols]),
                dtype,
            },
        ],
        attrs: Attributes::new(),
        ranges: Vec::new(),
        seed: 0,
        tolerance: None,
    }
}

#[test]
fn the_reference_against_itself_passes() {
    let report = check_parity(parity_scale::def(), &case(DType::F16, 5, 33), &Cpu, &Cpu)
        .expect("the case fits the op");
    assert!(report.passed(), "{report}");
    assert_eq!(
        report.to_string(),
        format!(
            "parity of `test.parity_scale` (cpu vs cpu) passed for x=f16[5, 33], \
             gamma=f16[33], seed 0: output `y`: {}",
            report.outputs[0].1
        )
    );
    assert!(
        report.outputs[0]
            .1
            .to_string()
            .starts_with("all 165 elements match"),
        "{report}"
    );
}

#[test]
fn one_wrong_element_fails_with_a_readable_report() {
    let case = case(DType::F16, 5, 33);
    let kernel = Perturbed {
        flat_index: 3 * 33 + 17,
        delta: 0.5,
    };
    let report =
        check_parity(parity_scale::def(), &case, &Cpu, &kernel).expect("the case fits the op");
    assert!(!report.passed());

    // What the reference computes on the documented inputs: seed * 1000 + input index.
    let x = Tensor::random([5, 33], DType::F16, 0);
    let gamma = Tensor::random([33], DType::F16, 1);
    let expected = parity_scale::run(&Cpu, &x, &gamma, &parity_scale::Params::default())
        .expect("the reference runs");
    let expected_value = expected.to_f64_vec()[3 * 33 + 17];
    let actual_value = kernel
        .execute(parity_scale::def(), &[&x, &gamma], &Attributes::new())
        .expect("the perturbed reference runs")
        .outputs[0]
        .to_f64_vec()[3 * 33 + 17];

    let (output, comparison) = &report.outputs[0];
    assert_eq!(output, "y");
    assert_eq!(comparison.mismatches, 1);
    let first = comparison
        .first_mismatch
        .as_ref()
        .expect("a mismatch is recorded");
    assert_eq!(first.index, vec![3, 17]);
    assert_eq!(
        (first.actual, first.expected),
        (actual_value, expected_value)
    );
    // The op's declared f16 tolerance, not the default.
    assert_eq!(comparison.tolerance, Tolerance::new(2e-3, 1e-3));

    let text = report.to_string();
    let expected_start = "parity of `test.parity_scale` (perturbed vs cpu) failed for \
                          x=f16[5, 33], gamma=f16[33], seed 0: output `y`: 1 of 165 elements \
                          differ (max abs error ";
    assert!(text.starts_with(expected_start), "{text}");
    assert!(
        text.contains("rtol 2e-3, atol 1e-3); first at [3, 17]: actual "),
        "{text}"
    );
    assert!(text.ends_with(&comparison.to_string()), "{text}");
}

#[test]
fn a_case_tolerance_overrides_the_op_and_undeclared_dtypes_use_the_default() {
    let kernel = Perturbed {
        flat_index: 0,
        delta: 0.5,
    };
    let mut loose = case(DType::F16, 2, 8);
    loose.tolerance = Some(Tolerance::new(0.0, 1.0));
    loose.attrs = parity_scale::Params { bias: 0.25 }.to_attributes();
    let report =
        check_parity(parity_scale::def(), &loose, &Cpu, &kernel).expect("the case fits the op");
    assert!(report.passed(), "{report}");
    assert_eq!(report.outputs[0].1.tolerance, Tolerance::new(0.0, 1.0));
    assert!(
        report.case.ends_with("bias=0.25, seed 0, rtol 0, atol 1e0"),
        "{}",
        report.case
    );

    let f32_case = case(DType::F32, 2, 8);
    let report =
        check_parity(parity_scale::def(), &f32_case, &Cpu, &kernel).expect("the case fits the op");
    assert!(!report.passed());
    assert_eq!(
        report.outputs[0].1.tolerance,
        Tolerance::for_dtype(DType::F32)
    );
}

#[test]
fn cases_that_do_not_fit_the_op_and_wrong_outputs_are_errors() {
    let mut one_input = case(DType::F16, 2, 8);
    one_input.inputs.pop();
    let error = check_parity(parity_scale::def(), &one_input, &Cpu, &Cpu)
        .expect_err("the op has two inputs");
    assert_eq!(
        error.to_string(),
        "op `test.parity_scale`: expected 2 input(s) (x, gamma), got 1"
    );

    let mut bad_gamma = case(DType::F16, 2, 8);
    bad_gamma.inputs[1].shape = Shape::from([7]);
    let error = check_parity(parity_scale::def(), &bad_gamma, &Cpu, &Cpu)
        .expect_err("gamma does not fit x");
    let text = error.to_string();
    assert!(
        text.starts_with("op `test.parity_scale`: input `gamma`:"),
        "{text}"
    );

    let error = check_parity(
        parity_scale::def(),
        &case(DType::F16, 2, 8),
        &Cpu,
        &WrongDtype,
    )
    .expect_err("the kernel's output dtype is wrong");
    assert_eq!(
        error.to_string(),
        "op `test.parity_scale`: output `y`: wrong-dtype returned dtype f32, but \
         infer_dtype says f16"
    );
}

#[test]
fn declared_tolerances_are_in_the_schema_and_only_when_declared() {
    let schema = parity_scale::def().schema();
    let json: serde_json::Value =
        serde_json::from_str(&schema.to_json_pretty()).expect("the schema is JSON");
    assert_eq!(
        json["tolerances"],
        serde_json::json!({"f16": {"rtol": 0.002, "atol": 0.001}})
    );
    let back: pto_op::OpSchema = serde_json::from_value(json).expect("the schema reads back");
    assert_eq!(back, schema);
    assert_eq!(
        parity_scale::def().tolerance(DType::F16),
        Tolerance::new(2e-3, 1e-3)
    );
    assert_eq!(
        parity_scale::def().tolerance(DType::BF16),
        Tolerance::for_dtype(DType::BF16)
    );

    let undeclared = pto_examples::gelu_affine::def().schema().to_json_pretty();
    assert!(!undeclared.contains("tolerances"), "{undeclared}");
}
