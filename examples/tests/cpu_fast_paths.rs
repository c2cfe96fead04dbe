//! The example ops' fast CPU paths stay within their ops' tolerance of the references, and
//! decline what they do not cover.

use pto_backends::cpu::compare_with_reference;
use pto_examples::{flash_attention, gelu_affine, rms_norm, softmax};
use pto_op::{AttrValue, Attributes, DType, OpDef, Tensor};

fn attrs(pairs: &[(&str, AttrValue)]) -> Attributes {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

fn assert_matches(def: &OpDef, inputs: &[&Tensor], attrs: &Attributes) {
    let comparisons = compare_with_reference(def, inputs, attrs)
        .expect("both run")
        .unwrap_or_else(|| panic!("{} has an f32 fast path", def.name));
    for c in comparisons {
        assert!(c.passed(), "{}: {c}", def.name);
    }
}

fn uniform(dims: &[usize], seed: u64, bound: f64) -> Tensor {
    Tensor::random_uniform(dims.to_vec(), DType::F32, seed, -bound, bound)
}

#[test]
fn attention_matches_its_reference_with_and_without_the_causal_mask() {
    let (q, k, v) = (
        uniform(&[40, 32], 1, 2.0),
        uniform(&[70, 32], 2, 2.0),
        uniform(&[70, 32], 3, 1.0),
    );
    for causal in [false, true] {
        for scale in [0.0f32, 0.3] {
            let p = attrs(&[
                ("causal", AttrValue::Bool(causal)),
                ("scale", AttrValue::F32(scale)),
            ]);
            assert_matches(flash_attention::def(), &[&q, &k, &v], &p);
        }
    }
    let q16 = q.cast(DType::F16);
    let (k16, v16) = (k.cast(DType::F16), v.cast(DType::F16));
    let declined = compare_with_reference(flash_attention::def(), &[&q16, &k16, &v16], &attrs(&[]));
    assert!(declined.expect("runs").is_none(), "f16 runs the reference");
}

#[test]
fn softmax_rms_norm_and_gelu_match_their_references() {
    let x = uniform(&[3, 7, 45], 4, 6.0);
    let gamma = Tensor::random_uniform([45], DType::F32, 5, 0.5, 1.5);
    assert_matches(softmax::def(), &[&x], &attrs(&[]));
    let eps = attrs(&[("eps", AttrValue::F32(1e-5))]);
    assert_matches(rms_norm::def(), &[&x, &gamma], &eps);
    let affine = attrs(&[
        ("scale", AttrValue::F32(0.5)),
        ("bias", AttrValue::F32(-1.0)),
    ]);
    assert_matches(gelu_affine::def(), &[&x], &affine);
}
