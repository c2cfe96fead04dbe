//! The references run in place, one pass per row, and read f32 matmul operands without a
//! copy. These tests hold them to the plain whole-array formulas they replaced: bit for bit
//! where the operations and their order are the same, and within the op's tolerance for
//! the matrix product (its sums run in the GEMM's order).

use ndarray::{ArrayD, Axis, Ix2};

use super::{add, layer_norm, matmul, mul, rms_norm, silu, softmax, sub};
use crate::OpDef;
use crate::prelude::*;
use crate::tolerance::Tolerance;

fn run(def: &OpDef, inputs: &[&Tensor], attrs: &Attributes) -> Tensor {
    def.run_reference(inputs, attrs)
        .expect("the reference runs")
        .remove(0)
}

fn attrs(pairs: &[(&str, AttrValue)]) -> Attributes {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

fn plain_softmax(x: &ArrayD<f32>, axis: usize) -> ArrayD<f32> {
    let axis = Axis(axis);
    let max = x.fold_axis(axis, f32::NEG_INFINITY, |m, v| m.max(*v));
    let e = (x - &max.insert_axis(axis)).mapv(f32::exp);
    let sum = e.sum_axis(axis).insert_axis(axis);
    &e / &sum
}

fn plain_rms_norm(x: &ArrayD<f32>, gamma: &ArrayD<f32>, eps: f32) -> ArrayD<f32> {
    let axis = Axis(x.ndim() - 1);
    let n = x.len_of(axis) as f32;
    let mean_square = x.mapv(|v| v * v).sum_axis(axis).insert_axis(axis) / n;
    let inv = mean_square.mapv(|m| 1.0 / (m + eps).sqrt());
    x * &inv * gamma
}

fn plain_layer_norm(
    x: &ArrayD<f32>,
    gamma: &ArrayD<f32>,
    beta: &ArrayD<f32>,
    eps: f32,
) -> ArrayD<f32> {
    let axis = Axis(x.ndim() - 1);
    let n = x.len_of(axis) as f32;
    let mean = x.sum_axis(axis).insert_axis(axis) / n;
    let centered = x - &mean;
    let variance = centered.mapv(|v| v * v).sum_axis(axis).insert_axis(axis) / n;
    let inv = variance.mapv(|v| 1.0 / (v + eps).sqrt());
    &centered * &inv * gamma + beta
}

fn bits(t: &Tensor) -> Vec<u8> {
    t.to_le_bytes()
}

#[test]
fn softmax_in_place_is_bit_identical_to_the_whole_array_form_on_every_axis() {
    // 37 keys: not a multiple of the 8-wide unrolled sums.
    let x = Tensor::random_uniform([3, 5, 37], DType::F32, 1, -20.0, 20.0);
    for axis in 0..3 {
        let y = run(
            softmax::def(),
            &[&x],
            &attrs(&[("axis", AttrValue::I64(axis as i64))]),
        );
        let expected = Tensor::from_array(plain_softmax(&x.to_f32_array(), axis));
        assert_eq!(bits(&y), bits(&expected), "axis {axis}");
    }
}

#[test]
fn norms_in_place_are_bit_identical_to_the_whole_array_forms() {
    let x = Tensor::random_uniform([4, 6, 45], DType::F32, 2, -3.0, 3.0);
    let gamma = Tensor::random_uniform([45], DType::F32, 3, 0.5, 1.5);
    let beta = Tensor::random_uniform([45], DType::F32, 4, -1.0, 1.0);
    let eps = 1e-5f32;
    let eps_attr = attrs(&[("eps", AttrValue::F32(eps))]);
    let (x32, g32, b32) = (x.to_f32_array(), gamma.to_f32_array(), beta.to_f32_array());

    let y = run(rms_norm::def(), &[&x, &gamma], &eps_attr);
    let expected = Tensor::from_array(plain_rms_norm(&x32, &g32, eps));
    assert_eq!(bits(&y), bits(&expected), "rms_norm");

    let y = run(layer_norm::def(), &[&x, &gamma, &beta], &eps_attr);
    let expected = Tensor::from_array(plain_layer_norm(&x32, &g32, &b32, eps));
    assert_eq!(bits(&y), bits(&expected), "layer_norm");
}

#[test]
fn element_wise_ops_in_place_are_bit_identical_to_the_whole_array_forms() {
    let a = Tensor::random_uniform([8, 33], DType::F32, 5, -4.0, 4.0);
    let row = Tensor::random_uniform([33], DType::F32, 6, -4.0, 4.0);
    let (a32, row32) = (a.to_f32_array(), row.to_f32_array());
    let none = Attributes::default();
    // `b` broadcasts into `a` (in place) and `a` into `b` (a new array): both as before.
    let y = run(add::def(), &[&a, &row], &none);
    assert_eq!(
        bits(&y),
        bits(&Tensor::from_array(&a32 + &row32)),
        "a + row"
    );
    let y = run(sub::def(), &[&row, &a], &none);
    assert_eq!(
        bits(&y),
        bits(&Tensor::from_array(&row32 - &a32)),
        "row - a"
    );
    let y = run(mul::def(), &[&a, &a], &none);
    assert_eq!(bits(&y), bits(&Tensor::from_array(&a32 * &a32)), "a * a");
    let y = run(silu::def(), &[&a], &none);
    let expected = a32.mapv(|v| v / (1.0 + (-v).exp()));
    assert_eq!(bits(&y), bits(&Tensor::from_array(expected)), "silu");
}

#[test]
fn the_f16_and_bf16_references_round_the_f32_result_once() {
    let none = Attributes::default();
    for dtype in [DType::F16, DType::BF16] {
        let a = Tensor::random_uniform([8, 33], dtype, 7, -4.0, 4.0);
        let b = Tensor::random_uniform([33], dtype, 8, -4.0, 4.0);
        let y = run(mul::def(), &[&a, &b], &none);
        let expected = Tensor::from_array(&a.to_f32_array() * &b.to_f32_array()).cast(dtype);
        assert_eq!(bits(&y), bits(&expected), "{dtype}");
    }
}

#[test]
fn matmul_on_f32_operands_in_place_matches_a_plain_f64_product() {
    let a = Tensor::random_uniform([2, 17, 70], DType::F32, 9, -1.0, 1.0);
    let b = Tensor::random_uniform([70, 23], DType::F32, 10, -1.0, 1.0);
    let y = run(matmul::def(), &[&a, &b], &Attributes::default());
    assert_eq!(y.dims(), &[2, 17, 23]);
    let a64 = a.to_f64_vec();
    let b64 = b
        .to_f32_array()
        .into_dimensionality::<Ix2>()
        .expect("rank 2")
        .mapv(f64::from);
    let expected: Vec<f32> = (0..2 * 17)
        .flat_map(|row| {
            let a64 = &a64;
            let b64 = &b64;
            (0..23).map(move |col| {
                (0..70)
                    .map(|k| a64[row * 70 + k] * b64[[k, col]])
                    .sum::<f64>() as f32
            })
        })
        .collect();
    let expected = Tensor::from_vec([2, 17, 23], expected).expect("shape");
    let comparison = y
        .compare(&expected, Tolerance::new(1e-5, 1e-5))
        .expect("same shape");
    assert!(comparison.passed(), "{comparison}");
    // f16 operands are widened in bulk: the same product, rounded once to f16.
    let (a16, b16) = (a.cast(DType::F16), b.cast(DType::F16));
    let y16 = run(matmul::def(), &[&a16, &b16], &Attributes::default());
    let wide = run(
        matmul::def(),
        &[&a16.cast(DType::F32), &b16.cast(DType::F32)],
        &Attributes::default(),
    );
    assert_eq!(bits(&y16), bits(&wide.cast(DType::F16)));
}
