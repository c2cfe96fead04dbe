//! Tests of tensors: storage, random values and comparison.

use half::{bf16, f16};

use super::compare::{Err2, Value, unravel};
use super::*;
use crate::tolerance::Tolerance;

fn f32s(shape: impl Into<Shape>, values: &[f32]) -> Tensor {
    Tensor::from_vec(shape, values.to_vec()).expect("test data fits its shape")
}

#[test]
fn bytes_round_trip_for_every_dtype() {
    for dtype in DType::ALL {
        let t = Tensor::random([3, 5], dtype, 42);
        let bytes = t.to_le_bytes();
        assert_eq!(bytes.len(), 15 * dtype.size_bytes(), "{dtype}");
        let back = Tensor::from_le_bytes(dtype, [3, 5], &bytes).expect("valid bytes");
        assert_eq!(back, t, "{dtype}");
    }
    let scalar = Tensor::scalar(7i64);
    assert_eq!(
        Tensor::from_le_bytes(DType::I64, Shape::scalar(), &scalar.to_le_bytes()),
        Ok(scalar)
    );
}

#[test]
fn bytes_are_little_endian_row_major() {
    let one = |dtype| Tensor::scalar(1.0f32).cast(dtype).to_le_bytes();
    assert_eq!(one(DType::F32), [0x00, 0x00, 0x80, 0x3f]);
    assert_eq!(one(DType::F16), [0x00, 0x3c]);
    assert_eq!(one(DType::BF16), [0x80, 0x3f]);
    assert_eq!(one(DType::Bool), [1]);
    let t = Tensor::from_vec([2], vec![0x0102_0304i32, -1]).expect("fits");
    assert_eq!(t.to_le_bytes(), [4, 3, 2, 1, 0xff, 0xff, 0xff, 0xff]);
}

#[test]
fn bad_bytes_are_rejected() {
    let err = Tensor::from_le_bytes(DType::F32, [2, 3], &[0; 20]).expect_err("must fail");
    assert_eq!(
        err.to_string(),
        "a f32 tensor of shape [2, 3] takes 24 bytes, but 20 were given"
    );
    let err = Tensor::from_le_bytes(DType::Bool, [3], &[0, 1, 2]).expect_err("must fail");
    assert_eq!(
        err,
        TensorError::InvalidBool {
            offset: 2,
            value: 2
        }
    );
    assert_eq!(
        err.to_string(),
        "byte 2 of a bool tensor is 2, but bool elements must be 0 or 1"
    );
}

#[test]
fn length_mismatch_message() {
    let err = Tensor::from_vec([2, 3], vec![1u8; 5]).expect_err("must fail");
    assert_eq!(
        err,
        TensorError::LengthMismatch {
            shape: Shape::from([2, 3]),
            len: 5
        }
    );
    assert_eq!(
        err.to_string(),
        "shape [2, 3] holds 6 elements, but 5 values were given"
    );
    assert_eq!(
        OpError::from(err).to_string(),
        "shape [2, 3] holds 6 elements, but 5 values were given"
    );
}

#[test]
fn views_check_the_dtype() {
    let mut t = f32s([2], &[1.0, 2.0]);
    let err = t.view::<f16>().expect_err("must fail");
    assert_eq!(err.to_string(), "expected a tensor of dtype f16, got f32");
    t.view_mut::<f32>().expect("f32 tensor")[[1]] = 5.0;
    assert_eq!(t.to_vec::<f32>(), Ok(vec![1.0, 5.0]));
    assert!(t.clone().into_array::<i32>().is_err());
    assert_eq!(t.into_array::<f32>().expect("f32 tensor").len(), 2);
}

#[test]
fn from_array_makes_row_major() {
    let a = ArrayD::from_shape_vec(IxDyn(&[2, 3]), vec![1i32, 2, 3, 4, 5, 6]).expect("fits");
    let t = Tensor::from_array(a.reversed_axes());
    assert_eq!(t.dims(), &[3, 2]);
    assert_eq!(t.to_vec::<i32>(), Ok(vec![1, 4, 2, 5, 3, 6]));
    assert_eq!(t.to_le_bytes()[4], 4);
    let r = t.reshape([6]).expect("same numel");
    assert_eq!(r.to_vec::<i32>(), Ok(vec![1, 4, 2, 5, 3, 6]));
    assert_eq!(
        t.reshape([4]).expect_err("must fail").to_string(),
        "cannot reshape a tensor of shape [3, 2] (6 elements) to shape [4] (4 elements)"
    );
}

#[test]
fn f32_to_f16_and_back_rounds_to_nearest_even() {
    let ulp = 2f32.powi(-10);
    let values = [
        1.0 + ulp / 2.0,                  // tie, 1 is even
        1.0 + 3.0 * ulp / 2.0,            // tie, 1 + 2 ulp is even
        1.0 + ulp / 2.0 + 2f32.powi(-20), // just above the tie
        65519.0,                          // below the overflow threshold
        65520.0,                          // the overflow threshold itself
        2f32.powi(-25),                   // half the smallest subnormal: tie to 0
        2f32.powi(-25) * 1.5,             // above it
        -0.1,
    ];
    let back = f32s([8], &values)
        .cast(DType::F16)
        .cast(DType::F32)
        .to_vec::<f32>();
    let expected = vec![
        1.0,
        1.0 + 2.0 * ulp,
        1.0 + ulp,
        65504.0,
        f32::INFINITY,
        0.0,
        2f32.powi(-24),
        -0.099_975_586,
    ];
    assert_eq!(back, Ok(expected));
}

/// half's own `from_f64` ignores the low 32 mantissa bits, so a value just above a tie
/// rounds down; ours must round every f64 once, for every f16 and bf16 tie.
#[test]
fn f64_to_half_rounds_once_around_every_tie() {
    for bits in 0..0x7bffu16 {
        let lo = f16::from_bits(bits).to_f64();
        let hi = f16::from_bits(bits + 1).to_f64();
        let tie = (lo + hi) / 2.0;
        let even = if bits % 2 == 0 { lo } else { hi };
        let nudge = tie * 2f64.powi(-45);
        assert_eq!(<f16 as Element>::from_f64(tie).to_f64(), even, "{tie} tie");
        assert_eq!(
            <f16 as Element>::from_f64(tie + nudge).to_f64(),
            hi,
            "{tie} up"
        );
        assert_eq!(
            <f16 as Element>::from_f64(tie - nudge).to_f64(),
            lo,
            "{tie} down"
        );
    }
    for bits in (0..0x7f7fu16).step_by(7) {
        let lo = bf16::from_bits(bits).to_f64();
        let hi = bf16::from_bits(bits + 1).to_f64();
        let tie = (lo + hi) / 2.0;
        let nudge = tie * 2f64.powi(-45);
        assert_eq!(
            <bf16 as Element>::from_f64(tie + nudge).to_f64(),
            hi,
            "{tie} up"
        );
        assert_eq!(
            <bf16 as Element>::from_f64(tie - nudge).to_f64(),
            lo,
            "{tie} down"
        );
    }
}

#[test]
fn casts_saturate_and_truncate() {
    let t = f32s([6], &[1000.0, -1000.0, -2.7, f32::NAN, f32::INFINITY, 0.5]);
    assert_eq!(
        t.cast(DType::I8).to_vec::<i8>(),
        Ok(vec![127, -128, -2, 0, 127, 0])
    );
    assert_eq!(
        t.cast(DType::U8).to_vec::<u8>(),
        Ok(vec![255, 0, 0, 0, 255, 0])
    );
    assert_eq!(
        t.cast(DType::I32).to_vec::<i32>(),
        Ok(vec![1000, -1000, -2, 0, i32::MAX, 0])
    );
    assert_eq!(
        t.cast(DType::Bool).to_vec::<bool>(),
        Ok(vec![true, true, true, true, true, true])
    );
    let big = Tensor::from_vec([3], vec![i64::MAX, i64::MIN, 300]).expect("fits");
    // Integer to integer wraps, as ONNX Cast and onnxruntime do.
    assert_eq!(big.cast(DType::I32).to_vec::<i32>(), Ok(vec![-1, 0, 300]));
    assert_eq!(big.cast(DType::I8).to_vec::<i8>(), Ok(vec![-1, 0, 44]));
    assert_eq!(big.cast(DType::U8).to_vec::<u8>(), Ok(vec![255, 0, 44]));
    let small = Tensor::from_vec([2], vec![-1i8, -128]).expect("fits");
    assert_eq!(small.cast(DType::U8).to_vec::<u8>(), Ok(vec![255, 128]));
    assert_eq!(small.cast(DType::I64).to_vec::<i64>(), Ok(vec![-1, -128]));
    assert_eq!(big.cast(DType::I64), big);
    let b = Tensor::from_vec([2], vec![true, false]).expect("fits");
    assert_eq!(b.cast(DType::F32).to_vec::<f32>(), Ok(vec![1.0, 0.0]));
}

#[test]
fn i64_to_float_rounds_once() {
    // Just above the halfway point between two bf16 values; `as f64` rounds it onto the
    // tie and a second rounding would go to even (down).
    let v = (1i64 << 60) + (1 << 52) + 1;
    let up = (1i64 << 60) + (1 << 53);
    let t = Tensor::from_vec([2], vec![v, -v]).expect("fits");
    assert_eq!(
        t.cast(DType::BF16).to_f64_vec(),
        vec![up as f64, -up as f64]
    );
    let w = (1i64 << 60) + (1 << 36) + 1;
    assert_eq!(
        Tensor::scalar(w).cast(DType::F32).to_f64_vec(),
        vec![((1i64 << 60) + (1 << 37)) as f64]
    );
    assert_eq!(
        Tensor::scalar(w).to_f32_array().into_iter().next(),
        Some(w as f32)
    );
}

#[test]
fn splitmix64_matches_the_reference_stream() {
    let mut rng = SplitMix64::new(0);
    assert_eq!(rng.next_u64(), 0xE220_A839_7B1D_CDAF);
    assert_eq!(rng.next_u64(), 0x6E78_9E6A_A1B9_65F4);
}

#[test]
fn random_is_deterministic_per_seed() {
    for dtype in DType::ALL {
        let a = Tensor::random([64], dtype, 1);
        assert_eq!(a, Tensor::random([64], dtype, 1), "{dtype}");
        assert_ne!(a, Tensor::random([64], dtype, 2), "{dtype}");
    }
    // Pinned values: changing the stream silently changes every test's inputs.
    let t = Tensor::random([3], DType::I32, 0);
    assert_eq!(t.to_vec::<i32>(), Ok(vec![6, -2, -8]));
}

#[test]
fn random_stays_in_range_and_covers_it() {
    let floats = Tensor::random([4096], DType::F32, 3).to_f64_vec();
    assert!(floats.iter().all(|v| (-1.0..1.0).contains(v)));
    assert!(floats.iter().any(|&v| v < -0.99) && floats.iter().any(|&v| v > 0.99));
    for (dtype, low, high) in [(DType::I8, -8, 8), (DType::I64, -8, 8), (DType::U8, 0, 16)] {
        let mut seen = Tensor::random([4096], dtype, 3).to_f64_vec();
        seen.sort_by(f64::total_cmp);
        seen.dedup();
        let all: Vec<f64> = (low..high).map(f64::from).collect();
        assert_eq!(seen, all, "{dtype}");
    }
    let trues = Tensor::random([4096], DType::Bool, 3)
        .to_vec::<bool>()
        .expect("bool tensor")
        .into_iter()
        .filter(|&b| b)
        .count();
    assert!((1848..2248).contains(&trues), "{trues} of 4096 true");
    let custom = Tensor::random_uniform([256], DType::F16, 9, 2.0, 3.0).to_f64_vec();
    assert!(custom.iter().all(|v| (2.0..=3.0).contains(v)));
}

#[test]
#[should_panic(expected = "low < high")]
fn random_uniform_rejects_an_empty_range() {
    let _ = Tensor::random_uniform([2], DType::F32, 0, 1.0, 1.0);
}

#[test]
fn compare_counts_and_finds_the_first_mismatch() {
    let expected = Tensor::from_f64_fn([3, 4], DType::F32, |i| (i[0] * 4 + i[1]) as f64);
    let mut actual = expected.clone();
    {
        let mut v = actual.view_mut::<f32>().expect("f32 tensor");
        v[[1, 2]] += 0.5;
        v[[2, 3]] -= 0.25;
        v[[0, 1]] += 1e-6; // within atol
    }
    let c = actual
        .compare(&expected, Tolerance::for_dtype(DType::F32))
        .expect("same shape");
    assert_eq!(c.numel, 12);
    assert_eq!(c.mismatches, 2);
    assert!(!c.passed());
    assert_eq!(
        c.first_mismatch,
        Some(Mismatch {
            index: vec![1, 2],
            actual: 6.5,
            expected: 6.0
        })
    );
    assert_eq!(c.max_abs_error, 0.5);
    assert_eq!(c.max_rel_error, 0.5 / 6.0);
    assert_eq!(
        c.to_string(),
        "2 of 12 elements differ (max abs error 5.0e-1, max rel error 8.3e-2, \
         rtol 1.3e-6, atol 1e-5); first at [1, 2]: actual 6.5, expected 6"
    );
    let json = serde_json::to_value(&c).expect("serializes");
    assert_eq!(json["first_mismatch"]["index"], serde_json::json!([1, 2]));
}

#[test]
fn compare_accepts_what_the_tolerance_allows() {
    let expected = f32s([3], &[0.0, 100.0, -1.0]);
    let actual = f32s([3], &[0.0009, 100.1, -1.0]);
    let tol = Tolerance::new(1e-3, 1e-3);
    let c = actual.compare(&expected, tol).expect("same shape");
    assert!(c.passed(), "{c}");
    assert!(c.to_string().starts_with("all 3 elements match"));
    assert!(
        !actual
            .compare(&expected, Tolerance::new(1e-3, 0.0))
            .expect("same shape")
            .passed()
    );
    // Dtypes may differ; values compare as f64.
    let ints = Tensor::from_vec([3], vec![0i32, 100, -1]).expect("fits");
    assert!(
        ints.compare(&expected, Tolerance::EXACT)
            .expect("same shape")
            .passed()
    );
}

#[test]
fn compare_handles_nan_and_infinity() {
    let expected = f32s(
        [5],
        &[f32::NAN, 1.0, f32::INFINITY, f32::INFINITY, f32::NAN],
    );
    let actual = f32s(
        [5],
        &[f32::NAN, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0],
    );
    let c = actual
        .compare(&expected, Tolerance::new(1.0, 1.0))
        .expect("same shape");
    assert_eq!(c.mismatches, 3);
    let first = c.first_mismatch.as_ref().expect("a mismatch");
    assert_eq!(first.index, vec![1]);
    assert!(first.actual.is_nan());
    assert_eq!(c.max_abs_error, f64::INFINITY);
    assert!(
        c.to_string()
            .ends_with("first at [1]: actual NaN, expected 1"),
        "{c}"
    );
    let nan = f32s([1], &[f32::NAN]);
    assert!(
        nan.compare(&nan, Tolerance::EXACT)
            .expect("same shape")
            .passed()
    );
}

#[test]
fn compare_requires_equal_shapes() {
    let err = f32s([2, 3], &[0.0; 6])
        .compare(&f32s([3, 2], &[0.0; 6]), Tolerance::EXACT)
        .expect_err("must fail");
    assert_eq!(
        err.to_string(),
        "expected a tensor of shape [3, 2], got [2, 3]"
    );
}

#[test]
fn values_print_short() {
    assert_eq!(Value(f64::from(0.5123f32)).to_string(), "0.5123");
    assert_eq!(Value(3.0).to_string(), "3");
    assert_eq!(
        Value(-(1i64 << 60) as f64).to_string(),
        "-1152921504606846976"
    );
    assert_eq!(Value(f64::from(1e-7f32)).to_string(), "1e-7");
    assert_eq!(Value(0.1).to_string(), "0.1");
    assert_eq!(Err2(0.031234).to_string(), "3.1e-2");
    assert_eq!(Err2(0.0).to_string(), "0");
    assert_eq!(unravel(17, &[2, 3, 4]), vec![1, 1, 1]);
    assert_eq!(unravel(0, &[]), Vec::<usize>::new());
}

#[test]
fn zeros_scalar_and_accessors() {
    let z = Tensor::zeros([2, 0, 3], DType::Bool);
    assert_eq!((z.numel(), z.dims()), (0, &[2usize, 0, 3][..]));
    assert_eq!(z.to_le_bytes(), Vec::<u8>::new());
    let s = Tensor::scalar(bf16::from_f32(2.5));
    assert_eq!(
        (s.shape(), s.dtype(), s.numel()),
        (Shape::scalar(), DType::BF16, 1)
    );
    assert_eq!(s.to_f64_vec(), vec![2.5]);
    assert!(matches!(s.data(), TensorData::BF16(_)));
    assert!(matches!(s.into_data(), TensorData::BF16(_)));
    assert_eq!(
        Tensor::zeros([2], DType::I64).to_vec::<i64>(),
        Ok(vec![0, 0])
    );
}

/// f32 values over every exponent: every 65,521st bit pattern, plus ties and edges.
fn f32_samples() -> Vec<f32> {
    let mut values: Vec<f32> = (0..=u32::MAX).step_by(65_521).map(f32::from_bits).collect();
    values.extend([
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE,
        65_504.0,
        65_520.0,
        1.0 + f32::EPSILON,
        // Halfway between two f16 (and two bf16) neighbours: ties round to even.
        f32::from_bits(0x3F80_1000),
        f32::from_bits(0x3F80_3000),
        f32::from_bits(0x3F80_8000),
        f32::from_bits(0x3F81_8000),
    ]);
    values
}

/// Bits of `x`, with every NaN the same (payloads are not part of a conversion's contract).
fn bits_or_nan(x: f32) -> Option<u32> {
    (!x.is_nan()).then(|| x.to_bits())
}

#[test]
fn bulk_f16_and_bf16_conversions_match_the_element_wise_ones() {
    let values = f32_samples();
    let n = values.len();
    let array = ArrayD::from_shape_vec(IxDyn(&[n]), values.clone()).expect("1-d");
    let halves = Tensor::from_f32_array(array.clone(), DType::F16);
    let brains = Tensor::from_f32_array(array, DType::BF16);
    let (h, b) = (
        halves.to_vec::<f16>().expect("f16"),
        brains.to_vec::<bf16>().expect("bf16"),
    );
    let (h_wide, b_wide) = (halves.to_f32_array(), brains.to_f32_array());
    let h_cast = halves.cast(DType::F32).to_vec::<f32>().expect("f32");
    for (i, &x) in values.iter().enumerate() {
        // The element-wise route (through f64, exact for an f32) rounds once, as bulk does.
        let (h_one, b_one) = (
            <f16 as Element>::from_f64(f64::from(x)),
            <bf16 as Element>::from_f64(f64::from(x)),
        );
        assert_eq!(h[i].is_nan(), h_one.is_nan(), "{x:e} to f16");
        assert_eq!(b[i].is_nan(), b_one.is_nan(), "{x:e} to bf16");
        if !x.is_nan() {
            assert_eq!(h[i].to_bits(), h_one.to_bits(), "{x:e} to f16");
            assert_eq!(b[i].to_bits(), b_one.to_bits(), "{x:e} to bf16");
        }
        // Widening is exact.
        assert_eq!(
            bits_or_nan(h_wide[[i]]),
            bits_or_nan(h[i].to_f32()),
            "{}",
            h[i]
        );
        assert_eq!(
            bits_or_nan(b_wide[[i]]),
            bits_or_nan(b[i].to_f32()),
            "{}",
            b[i]
        );
        assert_eq!(bits_or_nan(h_cast[i]), bits_or_nan(h[i].to_f32()));
    }
}

#[test]
fn from_f32_array_keeps_f32_and_casts_to_other_dtypes() {
    let array =
        ArrayD::from_shape_vec(IxDyn(&[2, 2]), vec![1.5f32, -2.5, 3.0, 300.0]).expect("2x2");
    let kept = Tensor::from_f32_array(array.clone(), DType::F32);
    assert_eq!(
        kept.to_vec::<f32>().expect("f32"),
        vec![1.5, -2.5, 3.0, 300.0]
    );
    // A transposed (non-standard) layout comes out in row-major order.
    let transposed = Tensor::from_f32_array(array.clone().reversed_axes(), DType::F32);
    assert_eq!(
        transposed.to_vec::<f32>().expect("f32"),
        vec![1.5, 3.0, -2.5, 300.0]
    );
    let ints = Tensor::from_f32_array(array, DType::I32);
    assert_eq!(ints.to_vec::<i32>().expect("i32"), vec![1, -2, 3, 300]);
}
