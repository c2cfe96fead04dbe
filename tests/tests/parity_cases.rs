//! End to end: `#[parity]` cases on a kernel become `#[test]`s that run on the `cpu` and `sim`
//! targets.
//!
//! This binary must not link `pto-backends`: its op's kernel is a stub (kernels cannot run
//! yet), so it registers stand-in `cpu` and `sim` targets that both run the reference, and
//! the `sim` one records every call. The generated tests run in this binary's harness, and
//! the tests below call them by path and check what reached the target.

use std::sync::Mutex;

use pto_op::__private::linkme;
use pto_op::parity::{ParityCase, assert_parity};
use pto_op::prelude::*;
use pto_op::target::TargetDef;
use pto_op::{AttrValue, Execution, OpDef, TensorType};

/// y = x * gamma + bias; `perturb` makes the stand-in `sim` get one element wrong.
#[custom_op(
    name = "test.parity_cases",
    params(bias: f32 = 0.0, perturb: bool = false),
    tolerance(f16 = (2e-3, 1e-3))
)]
pub mod parity_cases {
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

    #[parity(x = f16[4, 64], gamma = f16[64])]
    #[parity(x = f32[2, 8], gamma = f32[8], bias = 0.5, seed = 7, rtol = 1e-2, atol = 1e-3)]
    #[parity(x = f32[3, 4] in -100..100, gamma = f32[4] in 0.5..2.0, seed = 9)]
    #[kernel]
    fn kernel(k: &mut Kernel, _x: &Global, _gamma: &Global, _y: &Global) -> Result<(), OpError> {
        k.grid(1)
    }
}

/// One call that reached the stand-in `sim`.
#[derive(Debug, Clone, PartialEq)]
struct Call {
    inputs: Vec<Tensor>,
    attrs: Attributes,
}

static SIM_CALLS: Mutex<Vec<Call>> = Mutex::new(Vec::new());

/// The reference, in place of the CPU target of `pto-backends`.
struct StandInCpu;

impl Executor for StandInCpu {
    fn target(&self) -> &str {
        "cpu"
    }

    fn execute(
        &self,
        op: &'static OpDef,
        inputs: &[&Tensor],
        attrs: &Attributes,
    ) -> Result<Execution, OpError> {
        op.run_reference(inputs, attrs).map(Execution::untimed)
    }
}

/// The reference again, in place of the simulator, recording each call; with
/// `perturb = true` its first output element is off by one.
struct StandInSim;

impl Executor for StandInSim {
    fn target(&self) -> &str {
        "sim"
    }

    fn execute(
        &self,
        op: &'static OpDef,
        inputs: &[&Tensor],
        attrs: &Attributes,
    ) -> Result<Execution, OpError> {
        SIM_CALLS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(Call {
                inputs: inputs.iter().map(|t| (*t).clone()).collect(),
                attrs: attrs.clone(),
            });
        let mut outputs = op.run_reference(inputs, attrs)?;
        if attrs.get("perturb") == Some(&AttrValue::Bool(true)) {
            let y = &outputs[0];
            let mut values = y.to_f64_vec().into_iter();
            outputs[0] = Tensor::from_f64_fn(y.shape(), y.dtype(), |index| {
                let first = index.iter().all(|i| *i == 0);
                values.next().unwrap_or_default() + f64::from(u8::from(first))
            });
        }
        Ok(Execution::untimed(outputs))
    }
}

#[linkme::distributed_slice(pto_op::__private::TARGETS)]
#[linkme(crate = pto_op::__private::linkme)]
static STAND_IN_CPU: TargetDef = TargetDef {
    name: "cpu",
    description: "stand-in: the reference",
    make: |_device| Box::new(StandInCpu),
    source: pto_op::source_location!(),
};

#[linkme::distributed_slice(pto_op::__private::TARGETS)]
#[linkme(crate = pto_op::__private::linkme)]
static STAND_IN_SIM: TargetDef = TargetDef {
    name: "sim",
    description: "stand-in: the reference, recording calls",
    make: |_device| Box::new(StandInSim),
    source: pto_op::source_location!(),
};

fn sim_calls() -> Vec<Call> {
    SIM_CALLS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone()
}

#[test]
fn only_the_stand_in_targets_are_linked() {
    let linked: Vec<(&str, &str)> = pto_op::target::targets()
        .iter()
        .map(|t| (t.name, t.description))
        .collect();
    assert_eq!(
        linked,
        [
            ("cpu", "stand-in: the reference"),
            ("sim", "stand-in: the reference, recording calls"),
        ],
        "this binary must not link pto-backends: its op's kernel is a stub"
    );
}

#[test]
fn each_case_is_a_test_that_runs_its_inputs_and_params_on_sim() {
    parity_cases::__pto_parity::case_0_x_f16_4x64();
    parity_cases::__pto_parity::case_1_x_f32_2x8();

    let calls = sim_calls();
    // Case 0: no seed written, so the hash of its own text; params at their defaults (not
    // sent).
    let seed = pto_op::parity::case_seed("gamma=f16[64],x=f16[4,64]");
    let case_0 = Call {
        inputs: vec![
            Tensor::random([4, 64], DType::F16, seed.wrapping_mul(1000)),
            Tensor::random([64], DType::F16, seed.wrapping_mul(1000).wrapping_add(1)),
        ],
        attrs: Attributes::new(),
    };
    // Case 1: seed 7, so inputs from seeds 7000 and 7001, and `bias` as written.
    let case_1 = Call {
        inputs: vec![
            Tensor::random([2, 8], DType::F32, 7000),
            Tensor::random([8], DType::F32, 7001),
        ],
        attrs: Attributes::from([("bias".to_owned(), AttrValue::F32(0.5))]),
    };
    for expected in [case_0, case_1] {
        assert!(
            calls.contains(&expected),
            "no call of sim with {:?}",
            expected.attrs
        );
    }
}

#[test]
fn a_case_draws_an_input_from_its_range() {
    parity_cases::__pto_parity::case_2_x_f32_3x4();
    let expected = Call {
        inputs: vec![
            Tensor::random_uniform([3, 4], DType::F32, 9000, -100.0, 100.0),
            Tensor::random_uniform([4], DType::F32, 9001, 0.5, 2.0),
        ],
        attrs: Attributes::new(),
    };
    assert!(
        sim_calls().contains(&expected),
        "no call of sim with the ranged inputs"
    );
    let case = &(parity_cases::def().parity_cases)()[2];
    assert_eq!(
        case.describe(parity_cases::def().inputs),
        "x=f32[3, 4] in -100..100, gamma=f32[4] in 0.5..2, seed 9"
    );
}

#[test]
fn a_kernel_that_differs_fails_its_parity_test_with_the_report() {
    let case = ParityCase {
        inputs: vec![
            TensorType {
                shape: Shape::from([4, 64]),
                dtype: DType::F16,
            },
            TensorType {
                shape: Shape::from([64]),
                dtype: DType::F16,
            },
        ],
        attrs: parity_cases::Params {
            bias: 0.0,
            perturb: true,
        }
        .to_attributes(),
        ranges: Vec::new(),
        seed: 3,
        tolerance: None,
    };
    let panic = std::panic::catch_unwind(|| assert_parity(parity_cases::def(), &case))
        .expect_err("the stand-in sim gets one element wrong");
    let message = panic
        .downcast_ref::<String>()
        .expect("the panic message is formatted");
    assert!(
        message.starts_with(
            "parity of `test.parity_cases` (sim vs cpu) failed for x=f16[4, 64], \
             gamma=f16[64], bias=0.0, perturb=true, seed 3: output `y`: 1 of 256 elements \
             differ"
        ),
        "{message}"
    );
    assert!(
        message.contains("rtol 2e-3, atol 1e-3); first at [0, 0]: actual "),
        "{message}"
    );
    // Then every target's line.
    assert!(
        message.contains("\n  sim: ran, failed: output `y`: 1 of 256 elements differ"),
        "{message}"
    );
}

#[test]
fn a_passing_case_says_which_targets_ran_and_which_were_skipped() {
    let case = ParityCase {
        inputs: vec![
            TensorType {
                shape: Shape::from([2, 8]),
                dtype: DType::F32,
            },
            TensorType {
                shape: Shape::from([8]),
                dtype: DType::F32,
            },
        ],
        attrs: Attributes::new(),
        ranges: Vec::new(),
        seed: 5,
        tolerance: None,
    };
    let run = assert_parity(parity_cases::def(), &case);
    assert_eq!(
        run.to_string(),
        "parity of `test.parity_cases` for x=f32[2, 8], gamma=f32[8], seed 5 (reference on \
         cpu):\n  sim: ran, passed: output `y`: all 16 elements match (max abs error 0, max \
         rel error 0, rtol 1.3e-6, atol 1e-5)\n  ascendc-host: skipped: not linked (needs \
         pto-backends with its feature `device`)"
    );
}
