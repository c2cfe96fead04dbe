//! The standard ops' fast CPU paths ([`crate::cpu`]) against their references: within the
//! op's f32 tolerance (exactly, for ops that only move elements), every output element
//! written, other dtypes declined, and the same bits on any number of threads.

use pto_op::OpDef;
use pto_op::cpu::CpuKernel;
use pto_op::ops::{
    add, concat, div, gelu, layer_norm, matmul, mul, relu, reshape, rms_norm, sigmoid, silu, slice,
    softmax, sub, transpose,
};
use pto_op::prelude::*;

use crate::cpu;

fn attrs(pairs: &[(&str, AttrValue)]) -> Attributes {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

fn kernel(def: &OpDef, inputs: &[&Tensor], attrs: &Attributes) -> Option<Box<dyn CpuKernel>> {
    let types: Vec<_> = inputs.iter().map(|t| t.tensor_type()).collect();
    pto_op::cpu::prepare(def.name, &types, attrs).expect("the fast path reads the params")
}

/// The fast path's output, written over a buffer of NaNs (so an element it leaves out
/// shows).
fn run_fast(def: &OpDef, inputs: &[&Tensor], attrs: &Attributes) -> Tensor {
    let kernel = kernel(def, inputs, attrs)
        .unwrap_or_else(|| panic!("{} has an f32 fast path for these inputs", def.name));
    let types: Vec<_> = inputs.iter().map(|t| t.tensor_type()).collect();
    let out = &def.infer(&types, attrs).expect("valid inputs")[0];
    let mut outputs = vec![Tensor::from_f64_fn(out.shape.clone(), out.dtype, |_| {
        f64::NAN
    })];
    kernel
        .run(inputs, &mut outputs)
        .expect("the fast path runs");
    outputs.remove(0)
}

/// The fast path matches the reference within the op's f32 tolerance.
fn assert_matches_reference(def: &OpDef, inputs: &[&Tensor], attrs: &Attributes) {
    let comparisons = cpu::compare_with_reference(def, inputs, attrs)
        .expect("both run")
        .unwrap_or_else(|| panic!("{} has an f32 fast path for these inputs", def.name));
    for comparison in comparisons {
        assert!(comparison.passed(), "{}: {comparison}", def.name);
    }
}

fn assert_exact(def: &OpDef, inputs: &[&Tensor], attrs: &Attributes) {
    let reference = def.run_reference(inputs, attrs).expect("runs").remove(0);
    let fast = run_fast(def, inputs, attrs);
    assert_eq!(fast.to_le_bytes(), reference.to_le_bytes(), "{}", def.name);
    assert_eq!(fast.dims(), reference.dims(), "{}", def.name);
}

fn uniform(dims: &[usize], seed: u64, low: f64, high: f64) -> Tensor {
    Tensor::random_uniform(dims.to_vec(), DType::F32, seed, low, high)
}

#[test]
fn binary_ops_match_their_references_for_the_broadcasts_they_take() {
    let none = Attributes::default();
    let a = uniform(&[5, 7, 33], 1, -4.0, 4.0);
    let b_positive = uniform(&[5, 7, 33], 2, 0.5, 4.0);
    for b in [
        b_positive.clone(),
        uniform(&[33], 3, 0.5, 4.0),
        uniform(&[7, 33], 4, 0.5, 4.0),
        uniform(&[1], 5, 0.5, 4.0),
        uniform(&[1, 1, 33], 6, 0.5, 4.0),
    ] {
        for def in [add::def(), sub::def(), mul::def(), div::def()] {
            assert_matches_reference(def, &[&a, &b], &none);
        }
    }
    // `a` broadcast into `b`, or a middle axis of `b` of size 1: the reference's.
    for b in [
        uniform(&[2, 5, 7, 33], 7, -1.0, 1.0),
        uniform(&[5, 1, 33], 8, -1.0, 1.0),
    ] {
        assert!(kernel(add::def(), &[&a, &b], &none).is_none());
    }
    let a16 = a.cast(DType::F16);
    assert!(kernel(add::def(), &[&a16, &a16], &none).is_none());
}

#[test]
fn activations_match_their_references() {
    let none = Attributes::default();
    // Wide enough for exp's clamps: silu and sigmoid of -100 and 100.
    let x = uniform(&[9, 301], 9, -100.0, 100.0);
    let small = uniform(&[9, 301], 10, -6.0, 6.0);
    for x in [&x, &small] {
        for def in [relu::def(), sigmoid::def(), silu::def()] {
            assert_matches_reference(def, &[x], &none);
        }
        for form in ["none", "tanh"] {
            let p = attrs(&[("approximate", AttrValue::String(form.to_owned()))]);
            assert_matches_reference(gelu::def(), &[x], &p);
        }
    }
}

#[test]
fn fast_exp_is_within_a_few_ulp_of_the_libm_one() {
    let mut x = -86.0f32;
    while x < 88.7 {
        let (fast, exact) = (cpu::rows::exp(x), x.exp());
        assert!(
            (fast - exact).abs() <= exact * 4.0 * f32::EPSILON,
            "exp({x}) = {fast}, libm {exact}"
        );
        x += 0.0137;
    }
    assert_eq!(cpu::rows::exp(-1e9), 0.0);
    assert_eq!(cpu::rows::exp(1e9), f32::INFINITY);
    assert!(cpu::rows::exp(f32::NAN).is_nan());
}

#[test]
fn softmax_and_norms_match_their_references() {
    // A causal-mask-like row: -1e9 entries must give exactly 0.
    let mut scores = uniform(&[4, 6, 45], 11, -20.0, 20.0);
    scores.as_slice_mut::<f32>().expect("f32")[..10].fill(-1e9);
    assert_matches_reference(softmax::def(), &[&scores], &Attributes::default());
    let softmax_rows = run_fast(softmax::def(), &[&scores], &Attributes::default());
    assert_eq!(softmax_rows.as_slice::<f32>().expect("f32")[0], 0.0);
    // Other axes are the reference's.
    let axis0 = attrs(&[("axis", AttrValue::I64(0))]);
    assert!(kernel(softmax::def(), &[&scores], &axis0).is_none());

    let x = uniform(&[4, 6, 45], 12, -3.0, 3.0);
    let gamma = uniform(&[45], 13, 0.5, 1.5);
    let beta = uniform(&[45], 14, -1.0, 1.0);
    let eps = attrs(&[("eps", AttrValue::F32(1e-5))]);
    assert_matches_reference(rms_norm::def(), &[&x, &gamma], &eps);
    assert_matches_reference(layer_norm::def(), &[&x, &gamma, &beta], &eps);
}

#[test]
fn matmul_matches_its_reference_in_every_column_piece() {
    // 600 columns: two full pieces of 256 and a partial one.
    let a = uniform(&[2, 19, 70], 15, -1.0, 1.0);
    let b = uniform(&[70, 600], 16, -1.0, 1.0);
    assert_matches_reference(matmul::def(), &[&a, &b], &Attributes::default());
    let (a16, b16) = (a.cast(DType::F16), b.cast(DType::F16));
    assert!(kernel(matmul::def(), &[&a16, &b16], &Attributes::default()).is_none());
}

#[test]
fn shape_ops_give_the_references_elements_exactly() {
    let x = uniform(&[6, 40], 17, -1.0, 1.0);
    let cube = uniform(&[3, 4, 5], 18, -1.0, 1.0);
    let perm = |p: &[i64]| attrs(&[("perm", AttrValue::I64s(p.to_vec()))]);
    assert_exact(transpose::def(), &[&x], &perm(&[1, 0]));
    assert_exact(transpose::def(), &[&cube], &perm(&[2, 0, 1]));
    assert_exact(transpose::def(), &[&cube], &perm(&[]));
    let shape = attrs(&[("shape", AttrValue::I64s(vec![20, -1]))]);
    assert_exact(reshape::def(), &[&x], &shape);
    let other = uniform(&[6, 9], 19, -1.0, 1.0);
    let axis = |a: i64| attrs(&[("axis", AttrValue::I64(a))]);
    assert_exact(concat::def(), &[&x, &other], &axis(1));
    assert_exact(concat::def(), &[&x, &x], &axis(0));
    let columns = attrs(&[
        ("starts", AttrValue::I64s(vec![8])),
        ("ends", AttrValue::I64s(vec![24])),
        ("axes", AttrValue::I64s(vec![1])),
    ]);
    assert_exact(slice::def(), &[&x], &columns);
    let both = attrs(&[
        ("starts", AttrValue::I64s(vec![1, -3])),
        ("ends", AttrValue::I64s(vec![i64::MAX, 5])),
        ("axes", AttrValue::I64s(vec![0, 2])),
    ]);
    assert_exact(slice::def(), &[&cube], &both);
}

#[test]
fn results_are_the_same_bits_on_one_thread_and_on_several() {
    // Large enough to be split over threads (more work than `PARALLEL_MIN_WORK`).
    // 48 rows: the AVX-512 kernel where the CPU has it; 130: the gemm crate's.
    let a = uniform(&[48, 300], 20, -1.0, 1.0);
    let a_tall = uniform(&[130, 300], 24, -1.0, 1.0);
    let b = uniform(&[300, 1100], 21, -1.0, 1.0);
    let x = uniform(&[300, 1100], 22, -8.0, 8.0);
    let gamma = uniform(&[1100], 23, 0.5, 1.5);
    let none = Attributes::default();
    let cases: [(&OpDef, Vec<&Tensor>); 6] = [
        (matmul::def(), vec![&a, &b]),
        (matmul::def(), vec![&a_tall, &b]),
        (silu::def(), vec![&x]),
        (mul::def(), vec![&x, &gamma]),
        (softmax::def(), vec![&x]),
        (rms_norm::def(), vec![&x, &gamma]),
    ];
    for (def, inputs) in cases {
        let on = |threads: usize| {
            cpu::set_threads(threads);
            run_fast(def, &inputs, &none).to_le_bytes()
        };
        let one = on(1);
        for threads in [2, 3, 7] {
            assert!(one == on(threads), "{} on {threads} threads", def.name);
        }
    }
}

#[test]
fn each_matmul_kernel_matches_the_reference_at_every_edge() {
    // (m, depth, n) around the AVX-512 kernel's edges: 8-row register tiles and 128-row
    // blocks, 32-column strips and 256-column pieces, 128-step depth blocks.
    let shapes = [
        (1, 1, 1),
        (3, 5, 7),
        (8, 128, 32),
        (9, 129, 33),
        (19, 70, 600),
        (32, 300, 288),
        (130, 257, 45),
    ];
    let tolerance = matmul::def().tolerance(DType::F32);
    let none = Attributes::default();
    let mut ran = 0;
    for kernel in [cpu::MatmulKernel::GemmCrate, cpu::MatmulKernel::Avx512] {
        if !kernel.available() {
            eprintln!("{kernel:?} does not run on this CPU: not tested here");
            continue;
        }
        for (seed, &(m, depth, n)) in (30..).zip(&shapes) {
            let a = uniform(&[m, depth], seed, -1.0, 1.0);
            let b = uniform(&[depth, n], seed + 100, -1.0, 1.0);
            let expected = matmul::def()
                .run_reference(&[&a, &b], &none)
                .expect("runs")
                .remove(0);
            let mut y = vec![f32::NAN; m * n];
            let (a, b) = (a.as_slice::<f32>(), b.as_slice::<f32>());
            cpu::matmul_on(
                kernel,
                a.expect("f32"),
                b.expect("f32"),
                cpu::Layout::RowMajor,
                (m, depth, n),
                &mut y,
            )
            .expect("runs");
            let actual = Tensor::from_vec([m, n], y).expect("m * n elements");
            let comparison = actual.compare(&expected, tolerance).expect("same shape");
            assert!(
                comparison.passed(),
                "{kernel:?}, [{m}, {depth}] @ [{depth}, {n}]: {comparison}"
            );
        }
        ran += 1;
    }
    assert!(ran >= 1, "the gemm crate runs everywhere");
    // The AVX-512 kernel takes a row-major b only: it says so rather than computing
    // something else.
    let mut y = [0.0f32; 4];
    let refused = cpu::matmul_on(
        cpu::MatmulKernel::Avx512,
        &[1.0; 4],
        &[1.0; 4],
        cpu::Layout::Transposed,
        (2, 2, 2),
        &mut y,
    )
    .expect_err("a transposed b is the gemm crate's");
    assert!(refused.to_string().contains("std.matmul"), "{refused}");
}
