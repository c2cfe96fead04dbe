//! Running references on the CPU target, checked against the op's description.

use pto_backends::cpu::Cpu;
use pto_examples::{gelu_affine, moments};
use pto_op::ops::math::gelu_tanh;
use pto_op::prelude::*;
use pto_op::{AttrValue, Executor};

/// A reference that lies about its output shape: it drops the last row.
#[custom_op(name = "test.lying_shape")]
pub mod lying_shape {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape) -> Result<Shape, OpError> {
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType) -> Result<DType, OpError> {
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor) -> Result<Tensor, OpError> {
        let rows = x.dims()[0] - 1;
        let kept = x.to_vec::<f32>()?[..rows * x.dims()[1]].to_vec();
        Ok(Tensor::from_vec([rows, x.dims()[1]], kept)?)
    }
}

/// A reference that returns f32 where its dtype rule says the input's dtype.
#[custom_op(name = "test.lying_dtype")]
pub mod lying_dtype {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape) -> Result<Shape, OpError> {
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType) -> Result<DType, OpError> {
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor) -> Result<Tensor, OpError> {
        Ok(x.cast(DType::F32))
    }
}

#[test]
fn a_reference_that_lies_about_its_shape_fails_naming_op_and_both_shapes() {
    let x = Tensor::random([3, 4], DType::F32, 1);
    let err = lying_shape::run(&Cpu, &x, &lying_shape::Params {}).unwrap_err();
    assert_eq!(
        err.to_string(),
        "op `test.lying_shape`: output `y`: reference returned shape [2, 4], \
         but infer_shape says [3, 4]"
    );
}

#[test]
fn a_reference_that_lies_about_its_dtype_fails_naming_both_dtypes() {
    let x = Tensor::random([3, 4], DType::F16, 1);
    let err = lying_dtype::run(&Cpu, &x, &lying_dtype::Params {}).unwrap_err();
    assert_eq!(
        err.to_string(),
        "op `test.lying_dtype`: output `y`: reference returned dtype f32, but infer_dtype says f16"
    );
}

#[test]
fn gelu_affine_matches_a_hand_computation() {
    let x = Tensor::from_vec([2, 2], vec![-1.0f32, 0.0, 0.5, 2.0]).unwrap();
    let params = gelu_affine::Params {
        scale: 2.0,
        bias: -0.5,
    };
    let y = gelu_affine::run(&Cpu, &x, &params).unwrap();
    let expected: Vec<f32> = [-1.0f32, 0.0, 0.5, 2.0]
        .iter()
        .map(|v| gelu_tanh(v * 2.0 - 0.5))
        .collect();
    assert_eq!(y.to_vec::<f32>().unwrap(), expected);
    assert!(
        (expected[3] - 3.4997).abs() < 1e-3,
        "gelu(3.5) = {}",
        expected[3]
    );
}

#[test]
fn gelu_affine_keeps_a_half_dtype_and_rejects_integers_with_the_authors_error() {
    let x = Tensor::random([4, 3], DType::BF16, 3);
    let y = gelu_affine::run(&Cpu, &x, &gelu_affine::Params::default()).unwrap();
    assert_eq!((y.dtype(), y.shape()), (DType::BF16, Shape::from([4, 3])));

    let ids = Tensor::zeros([4], DType::I32);
    let err = gelu_affine::run(&Cpu, &ids, &gelu_affine::Params::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "op `demo.gelu_affine`: input `x`: expected f32, f16 or bf16, got i32"
    );
}

#[test]
fn moments_returns_two_outputs_with_the_inferred_types() {
    let x = Tensor::from_vec([2, 4], vec![1.0f32, 2.0, 3.0, 4.0, -1.0, -1.0, -1.0, -1.0]).unwrap();
    let (mean, rstd) = moments::run(&Cpu, &x, &moments::Params { eps: 0.0 }).unwrap();
    assert_eq!(mean.shape(), Shape::from([2, 1]));
    assert_eq!(mean.to_vec::<f32>().unwrap(), vec![2.5, -1.0]);
    // Row 0: variance 1.25.
    let r = rstd.to_vec::<f32>().unwrap();
    assert!((r[0] - 1.0 / 1.25f32.sqrt()).abs() < 1e-6, "{r:?}");
    assert!(
        r[1].is_infinite(),
        "zero variance and eps 0 give an infinite rstd: {r:?}"
    );
}

#[test]
fn moments_rejects_a_scalar_with_the_authors_error() {
    let err = moments::run(&Cpu, &Tensor::scalar(1.0f32), &moments::Params::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "op `demo.moments`: input `x`: expected rank >= 1, got shape [] of rank 0"
    );
}

#[test]
fn untyped_calls_check_input_count_and_params() {
    let def = gelu_affine::def();
    let x = Tensor::random([2], DType::F32, 0);
    let good = gelu_affine::Params::default().to_attributes();

    let err = Cpu.execute(def, &[&x, &x], &good).unwrap_err();
    assert_eq!(
        err.to_string(),
        "op `demo.gelu_affine`: expected 1 input(s) (x), got 2"
    );

    let mut wrong_type = good.clone();
    wrong_type.insert("scale".into(), AttrValue::I64(2));
    let err = Cpu.execute(def, &[&x], &wrong_type).unwrap_err();
    assert_eq!(
        err.to_string(),
        "op `demo.gelu_affine`: param `scale`: expected a value of type f32, got i64 value 2"
    );

    let mut extra = good.clone();
    extra.insert("alpha".into(), AttrValue::F32(1.0));
    let err = Cpu.execute(def, &[&x], &extra).unwrap_err();
    assert_eq!(
        err.to_string(),
        "op `demo.gelu_affine`: param `alpha`: unknown param: this op's params are scale, bias"
    );

    // Absent params take their defaults.
    let y = Cpu.execute(def, &[&x], &Default::default()).unwrap();
    assert_eq!(
        y.outputs[0],
        gelu_affine::run(&Cpu, &x, &gelu_affine::Params::default()).unwrap()
    );
}
