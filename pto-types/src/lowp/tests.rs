//! Edge values of the conversions against the ONNX `Cast` tables (opset 25) and the
//! formats' definitions.

use super::*;

fn f8e4m3fn(v: f64, saturate: bool) -> u8 {
    F8E4M3FN::from_f64_saturating(v, saturate).to_bits()
}
fn f8e4m3fnuz(v: f64, saturate: bool) -> u8 {
    F8E4M3FNUZ::from_f64_saturating(v, saturate).to_bits()
}
fn f8e5m2(v: f64, saturate: bool) -> u8 {
    F8E5M2::from_f64_saturating(v, saturate).to_bits()
}
fn f8e5m2fnuz(v: f64, saturate: bool) -> u8 {
    F8E5M2FNUZ::from_f64_saturating(v, saturate).to_bits()
}

#[test]
fn max_finite_and_smallest_subnormal_of_each_format() {
    assert_eq!(FloatFormat::E4M3FN.max_finite(), 448.0);
    assert_eq!(FloatFormat::E4M3FNUZ.max_finite(), 240.0);
    assert_eq!(FloatFormat::E5M2.max_finite(), 57344.0);
    assert_eq!(FloatFormat::E5M2FNUZ.max_finite(), 57344.0);
    assert_eq!(FloatFormat::E2M1.max_finite(), 6.0);
    assert_eq!(F8E4M3FN::from_bits(0x7E).to_f64(), 448.0);
    assert_eq!(F8E4M3FNUZ::from_bits(0x7F).to_f64(), 240.0);
    assert_eq!(F8E5M2::from_bits(0x7B).to_f64(), 57344.0);
    assert_eq!(F8E5M2FNUZ::from_bits(0x7F).to_f64(), 57344.0);
    // Smallest subnormals: 2^(1 - bias - mantissa bits).
    assert_eq!(F8E4M3FN::from_bits(0x01).to_f64(), 2f64.powi(-9));
    assert_eq!(F8E4M3FNUZ::from_bits(0x01).to_f64(), 2f64.powi(-10));
    assert_eq!(F8E5M2::from_bits(0x01).to_f64(), 2f64.powi(-16));
    assert_eq!(F8E5M2FNUZ::from_bits(0x01).to_f64(), 2f64.powi(-17));
    assert_eq!(F4E2M1::from_bits(0x1).to_f64(), 0.5);
    // Smallest normals.
    assert_eq!(F8E4M3FN::from_bits(0x08).to_f64(), 2f64.powi(-6));
    assert_eq!(F8E5M2::from_bits(0x04).to_f64(), 2f64.powi(-14));
    // Encoding them gives them back.
    assert_eq!(f8e4m3fn(2f64.powi(-9), true), 0x01);
    assert_eq!(f8e4m3fnuz(2f64.powi(-10), true), 0x01);
    assert_eq!(f8e5m2(2f64.powi(-16), true), 0x01);
    assert_eq!(f8e5m2fnuz(2f64.powi(-17), true), 0x01);
    assert_eq!(f8e4m3fn(448.0, false), 0x7E);
    assert_eq!(f8e5m2(-57344.0, false), 0xFB);
}

#[test]
fn e2m1_has_exactly_its_sixteen_values() {
    let values: Vec<f64> = (0..16u8).map(|b| F4E2M1::from_bits(b).to_f64()).collect();
    assert_eq!(
        values,
        [
            0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0
        ]
    );
    assert!(values[8].is_sign_negative());
}

#[test]
fn every_finite_pattern_encodes_back_to_itself() {
    for format in [
        FloatFormat::E4M3FN,
        FloatFormat::E4M3FNUZ,
        FloatFormat::E5M2,
        FloatFormat::E5M2FNUZ,
    ] {
        for bits in 0..=255u8 {
            let v = format.decode(bits);
            if v.is_nan() {
                continue;
            }
            assert_eq!(
                format.encode(v, false),
                bits,
                "{format:?} {bits:#04x} = {v}"
            );
            // Saturation turns E5M2's infinities into its max.
            if v.is_finite() {
                assert_eq!(format.encode(v, true), bits, "{format:?} {bits:#04x} = {v}");
            }
        }
    }
    for bits in 0..16u8 {
        let v = FloatFormat::E2M1.decode(bits);
        assert_eq!(FloatFormat::E2M1.encode(v, true), bits);
    }
}

#[test]
fn ties_round_to_even() {
    // 1 + 2^-4 is halfway between 1 (mantissa 000) and 1.125 (001): to 1.
    assert_eq!(f8e4m3fn(1.0 + 1.0 / 16.0, true), 0x38);
    // 1 + 3 * 2^-4 is halfway between 1.125 (001) and 1.25 (010): to 1.25.
    assert_eq!(f8e4m3fn(1.0 + 3.0 / 16.0, true), 0x3A);
    // Half the smallest subnormal ties to 0; 1.5 of it to 2 subnormal units.
    assert_eq!(f8e4m3fn(2f64.powi(-10), true), 0x00);
    assert_eq!(f8e4m3fn(-2f64.powi(-10), true), 0x80);
    assert_eq!(f8e4m3fn(3.0 * 2f64.powi(-10), true), 0x02);
    // Just above a tie rounds up.
    assert_eq!(f8e4m3fn(1.0 + 1.0 / 16.0 + 1e-9, true), 0x39);
    // E5M2: 1.125 is halfway between 1 (00) and 1.25 (01).
    assert_eq!(f8e5m2(1.125, true), 0x3C);
    assert_eq!(f8e5m2(1.375, true), 0x3E);
    // E2M1: 0.25 -> 0, 0.75 -> 1, 2.5 -> 2, 3.5 -> 4, 5 -> 4 (the even codes).
    let e2m1 = |v: f64| F4E2M1::from_f64_saturating(v, true).to_f64();
    assert_eq!(e2m1(0.25), 0.0);
    assert_eq!(e2m1(0.75), 1.0);
    assert_eq!(e2m1(2.5), 2.0);
    assert_eq!(e2m1(-3.5), -4.0);
    assert_eq!(e2m1(5.0), 4.0);
    assert_eq!(e2m1(5.0001), 6.0);
}

#[test]
fn saturate_table() {
    // x: 0, -0, NaN, Inf, -Inf, [x] > max, [x] < -max.
    for (v, fn_, fnuz, e5m2, e5m2fnuz) in [
        (0.0, 0x00, 0x00, 0x00, 0x00),
        (-0.0, 0x80, 0x00, 0x80, 0x00),
        (f64::INFINITY, 0x7E, 0x7F, 0x7B, 0x7F),
        (f64::NEG_INFINITY, 0xFE, 0xFF, 0xFB, 0xFF),
        (1e6, 0x7E, 0x7F, 0x7B, 0x7F),
        (-1e6, 0xFE, 0xFF, 0xFB, 0xFF),
    ] {
        assert_eq!(f8e4m3fn(v, true), fn_, "{v}");
        assert_eq!(f8e4m3fnuz(v, true), fnuz, "{v}");
        assert_eq!(f8e5m2(v, true), e5m2, "{v}");
        assert_eq!(f8e5m2fnuz(v, true), e5m2fnuz, "{v}");
    }
    assert!(
        F8E4M3FN::from_f64_saturating(f64::NAN, true)
            .to_f64()
            .is_nan()
    );
    assert_eq!(f8e4m3fnuz(f64::NAN, true), 0x80);
    assert!(
        F8E5M2::from_f64_saturating(f64::NAN, true)
            .to_f64()
            .is_nan()
    );
    assert_eq!(f8e5m2fnuz(f64::NAN, true), 0x80);
    // 464 is halfway between 448 (mantissa 110) and 480 (111, not finite): to 448, no
    // overflow; above it the rounding exceeds the max.
    assert_eq!(f8e4m3fn(464.0, false), 0x7E);
    assert_eq!(f8e4m3fn(465.0, true), 0x7E);
}

#[test]
fn no_saturate_table() {
    // x: Inf, -Inf, [x] > max, [x] < -max.
    assert_eq!(f8e4m3fn(f64::INFINITY, false), 0x7F);
    assert_eq!(f8e4m3fn(f64::NEG_INFINITY, false), 0xFF);
    assert_eq!(f8e4m3fn(465.0, false), 0x7F);
    assert_eq!(f8e4m3fn(-465.0, false), 0xFF);
    assert_eq!(f8e4m3fnuz(f64::INFINITY, false), 0x80);
    assert_eq!(f8e4m3fnuz(-1e6, false), 0x80);
    assert_eq!(f8e5m2(f64::INFINITY, false), 0x7C);
    assert_eq!(f8e5m2(f64::NEG_INFINITY, false), 0xFC);
    // 61440 is halfway between 57344 (mantissa 11) and 65536 (00): to 65536, an overflow.
    assert_eq!(f8e5m2(61440.0, false), 0x7C);
    assert_eq!(f8e5m2(61439.0, false), 0x7B);
    assert_eq!(f8e5m2(-1e6, false), 0xFC);
    assert_eq!(f8e5m2fnuz(1e6, false), 0x80);
    assert_eq!(f8e5m2fnuz(f64::NEG_INFINITY, false), 0x80);
    // -NaN keeps its sign where the format has one.
    assert_eq!(f8e4m3fn(-f64::NAN, false), 0xFF);
    assert_eq!(f8e5m2(-f64::NAN, false) & 0x80, 0x80);
    assert_eq!(f8e4m3fnuz(-f64::NAN, false), 0x80);
    // E2M1 has no infinity or NaN: it saturates whatever `saturate` says; NaN gives -0.
    assert_eq!(
        F4E2M1::from_f64_saturating(f64::INFINITY, false).to_f64(),
        6.0
    );
    assert_eq!(F4E2M1::from_f64_saturating(-1e9, false).to_f64(), -6.0);
    assert_eq!(F4E2M1::from_f64_saturating(f64::NAN, true).to_bits(), 0x8);
}

#[test]
fn fnuz_has_no_negative_zero() {
    assert_eq!(f8e4m3fnuz(-1e-9, true), 0x00);
    assert_eq!(f8e5m2fnuz(-0.0, false), 0x00);
    assert!(F8E4M3FNUZ::from_bits(0x80).to_f64().is_nan());
    // Negative values keep their sign.
    assert_eq!(f8e4m3fnuz(-1.0, true), 0x80 | f8e4m3fnuz(1.0, true));
    // E4M3FN's -tiny rounds to -0.
    assert_eq!(f8e4m3fn(-1e-9, true), 0x80);
}

#[test]
fn e8m0_rounding_and_saturation() {
    let e8m0 = |v: f64, saturate: bool, mode: RoundMode| {
        F8E8M0::from_f64_rounded(v, saturate, mode).to_bits()
    };
    assert_eq!(F8E8M0::from_bits(0x7F).to_f64(), 1.0);
    assert_eq!(F8E8M0::from_bits(0x00).to_f64(), 2f64.powi(-127));
    assert_eq!(F8E8M0::from_bits(0xFE).to_f64(), 2f64.powi(127));
    assert!(F8E8M0::from_bits(0xFF).to_f64().is_nan());
    // Powers of two are exact in every mode.
    for mode in [RoundMode::Up, RoundMode::Down, RoundMode::Nearest] {
        assert_eq!(e8m0(0.25, true, mode), 0x7D);
        assert_eq!(e8m0(2f64.powi(127), false, mode), 0xFE);
        assert_eq!(e8m0(f64::NAN, true, mode), 0xFF);
    }
    assert_eq!(e8m0(1.1, true, RoundMode::Up), 0x80);
    assert_eq!(e8m0(1.1, true, RoundMode::Down), 0x7F);
    assert_eq!(e8m0(1.1, true, RoundMode::Nearest), 0x7F);
    assert_eq!(e8m0(1.5, true, RoundMode::Nearest), 0x80);
    assert_eq!(e8m0(1.49, true, RoundMode::Nearest), 0x7F);
    assert_eq!(e8m0(0.124, true, RoundMode::Up), 0x7C);
    // Saturate + up: 0 -> the smallest, infinity and beyond 2^127 -> the largest.
    assert_eq!(e8m0(0.0, true, RoundMode::Up), 0x00);
    assert_eq!(e8m0(f64::INFINITY, true, RoundMode::Up), 0xFE);
    assert_eq!(e8m0(1.5 * 2f64.powi(127), true, RoundMode::Up), 0xFE);
    assert_eq!(e8m0(2f64.powi(-130), true, RoundMode::Down), 0x00);
    // Non-saturate: all of those are NaN.
    assert_eq!(e8m0(0.0, false, RoundMode::Nearest), 0xFF);
    assert_eq!(e8m0(f64::INFINITY, false, RoundMode::Nearest), 0xFF);
    assert_eq!(e8m0(1.5 * 2f64.powi(127), false, RoundMode::Up), 0xFF);
    assert_eq!(e8m0(2f64.powi(-130), false, RoundMode::Down), 0xFF);
    assert_eq!(RoundMode::from_name("nearest"), Some(RoundMode::Nearest));
    assert_eq!(RoundMode::from_name("zero"), None);
}

#[test]
fn small_integers_wrap_like_onnx() {
    let i4 = |v: f64| I4::from_f64_wrapping(v).get();
    assert_eq!(
        (-9..=15).map(|v| i4(f64::from(v))).collect::<Vec<_>>(),
        [
            7, -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, -8, -7, -6, -5, -4, -3, -2,
            -1
        ]
    );
    assert_eq!(i4(7.9), 7);
    assert_eq!(i4(-8.9), -8);
    assert_eq!(i4(f64::NAN), 0);
    assert_eq!(i4(f64::INFINITY), 0);
    assert_eq!(U4::from_f64_wrapping(-1.0).get(), 15);
    assert_eq!(U4::wrapping_from_i64(200).get(), 8);
    assert_eq!(
        (-3..=3)
            .map(|v| I2::wrapping_from_i64(v).get())
            .collect::<Vec<_>>(),
        [1, -2, -1, 0, 1, -2, -1]
    );
    assert_eq!(U2::wrapping_from_i64(5).get(), 1);
    assert_eq!(
        (I4::MIN, I4::MAX, U4::MAX, I2::MIN, I2::MAX, U2::MAX),
        (-8, 7, 15, -2, 1, 3)
    );
    // The packed patterns: low bits of the two's complement.
    assert_eq!(I4::wrapping_from_i64(-1).to_bits(), 0xF);
    assert_eq!(I4::from_bits(0x8).get(), -8);
    assert_eq!(I2::from_bits(0b10).get(), -2);
}
