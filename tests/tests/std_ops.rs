//! The references of the standard ops (`pto_op::ops`) against hand-computed values, and
//! the texts of their shape, dtype and param errors.

use pto_op::ops;
use pto_op::{AttrValue, Attributes, DType, OpDef, Tensor};

fn f32s(dims: &[usize], values: &[f32]) -> Tensor {
    Tensor::from_vec(dims, values.to_vec()).expect("values fit the shape")
}

fn i64s(dims: &[usize], values: &[i64]) -> Tensor {
    Tensor::from_vec(dims, values.to_vec()).expect("values fit the shape")
}

fn attrs(pairs: &[(&str, AttrValue)]) -> Attributes {
    pairs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), value.clone()))
        .collect()
}

/// The one output of `def` on `inputs`.
fn run(def: &'static OpDef, inputs: &[&Tensor], pairs: &[(&str, AttrValue)]) -> Tensor {
    let mut outputs = def
        .run_reference(inputs, &attrs(pairs))
        .unwrap_or_else(|e| panic!("{e}"));
    outputs.remove(0)
}

/// The error of `def` on `inputs`.
fn fail(def: &'static OpDef, inputs: &[&Tensor], pairs: &[(&str, AttrValue)]) -> String {
    def.run_reference(inputs, &attrs(pairs))
        .expect_err("the call is refused")
        .to_string()
}

fn ints(values: &[i64]) -> AttrValue {
    AttrValue::I64s(values.to_vec())
}

/// Asserts `actual` has `dims` and is within 1e-6 of `expected`.
fn assert_close(actual: &Tensor, dims: &[usize], expected: &[f32]) {
    assert_eq!(actual.dims(), dims);
    let values = actual.to_f64_vec();
    assert_eq!(values.len(), expected.len());
    for (i, (a, e)) in values.iter().zip(expected).enumerate() {
        assert!((a - f64::from(*e)).abs() < 1e-6, "element {i}: {a} vs {e}");
    }
}

#[test]
fn arithmetic_broadcasts_like_numpy() {
    let a = f32s(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let row = f32s(&[3], &[10.0, 20.0, 30.0]);
    let column = f32s(&[2, 1], &[2.0, 4.0]);
    let y = run(ops::add::def(), &[&a, &row], &[]);
    assert_close(&y, &[2, 3], &[11.0, 22.0, 33.0, 14.0, 25.0, 36.0]);
    let y = run(ops::sub::def(), &[&row, &a], &[]);
    assert_close(&y, &[2, 3], &[9.0, 18.0, 27.0, 6.0, 15.0, 24.0]);
    let y = run(ops::mul::def(), &[&a, &column], &[]);
    assert_close(&y, &[2, 3], &[2.0, 4.0, 6.0, 16.0, 20.0, 24.0]);
    let y = run(ops::div::def(), &[&column, &row], &[]);
    assert_close(&y, &[2, 3], &[0.2, 0.1, 2.0 / 30.0, 0.4, 0.2, 4.0 / 30.0]);
    let half = f32s(&[2], &[1.0, -2.0]).cast(pto_op::DType::F16);
    let y = run(ops::mul::def(), &[&half, &half], &[]);
    assert_eq!(
        (y.dtype(), y.to_f64_vec()),
        (pto_op::DType::F16, vec![1.0, 4.0])
    );
}

#[test]
fn integer_arithmetic_is_exact_and_reports_overflow_and_division_by_zero() {
    let a = Tensor::from_vec([3], vec![7i32, -7, 9]).expect("fits");
    let b = Tensor::from_vec([3], vec![2i32, 2, -3]).expect("fits");
    let y = run(ops::div::def(), &[&a, &b], &[]);
    assert_eq!(y.to_vec::<i32>(), Ok(vec![3, -3, -3]));
    let y = run(
        ops::add::def(),
        &[&i64s(&[2], &[1 << 40, 5]), &i64s(&[1], &[1])],
        &[],
    );
    assert_eq!(y.to_vec::<i64>(), Ok(vec![(1 << 40) + 1, 6]));
    let big = Tensor::from_vec([1], vec![i32::MAX]).expect("fits");
    assert_eq!(
        fail(ops::add::def(), &[&big, &big], &[]),
        "op `std.add`: input `b`: 2147483647 + 2147483647: overflows i32"
    );
    let zero = Tensor::from_vec([1], vec![0i32]).expect("fits");
    assert_eq!(
        fail(ops::div::def(), &[&big, &zero], &[]),
        "op `std.div`: input `b`: 2147483647 / 0: division by zero"
    );
}

#[test]
fn arithmetic_errors_name_the_input_and_both_sides() {
    let a = f32s(&[2, 3], &[0.0; 6]);
    let b = f32s(&[2], &[0.0; 2]);
    assert_eq!(
        fail(ops::add::def(), &[&a, &b], &[]),
        "op `std.add`: input `b`: shape [2] does not broadcast with a of shape [2, 3]: aligned \
         from the last axis, each pair of dims must be equal or one of them 1"
    );
    let h = f32s(&[2, 3], &[0.0; 6]).cast(pto_op::DType::F16);
    assert_eq!(
        fail(ops::mul::def(), &[&a, &h], &[]),
        "op `std.mul`: input `b`: expected dtype f32 (that of a), got f16: convert it with \
         std.cast"
    );
    let flags = Tensor::from_vec([1], vec![true]).expect("fits");
    assert_eq!(
        fail(ops::sub::def(), &[&flags, &flags], &[]),
        "op `std.sub`: input `a`: expected a float or an integer dtype, got bool"
    );
}

#[test]
fn activations() {
    let x = f32s(&[4], &[-1.0, 0.0, 1.0, 2.0]);
    assert_close(
        &run(ops::relu::def(), &[&x], &[]),
        &[4],
        &[0.0, 0.0, 1.0, 2.0],
    );
    // Relu propagates NaN, as ONNX and onnxruntime do.
    let nan = run(ops::relu::def(), &[&f32s(&[2], &[f32::NAN, -1.0])], &[]);
    let nan = nan.to_f64_vec();
    assert!(nan[0].is_nan() && nan[1] == 0.0, "{nan:?}");
    assert_close(
        &run(ops::sigmoid::def(), &[&x], &[]),
        &[4],
        &[0.268_941_4, 0.5, 0.731_058_6, 0.880_797_1],
    );
    assert_close(
        &run(ops::silu::def(), &[&x], &[]),
        &[4],
        &[-0.268_941_4, 0.0, 0.731_058_6, 1.761_594_2],
    );
    // x * Phi(x), and the tanh approximation.
    assert_close(
        &run(ops::gelu::def(), &[&x], &[]),
        &[4],
        &[-0.158_655_3, 0.0, 0.841_344_7, 1.954_499_7],
    );
    let tanh = [("approximate", AttrValue::String("tanh".to_owned()))];
    assert_close(
        &run(ops::gelu::def(), &[&x], &tanh),
        &[4],
        &[-0.158_808, 0.0, 0.841_192, 1.954_597_6],
    );
    let exact = [("approximate", AttrValue::String("erf".to_owned()))];
    assert_eq!(
        fail(ops::gelu::def(), &[&x], &exact),
        "op `std.gelu`: param `approximate`: expected \"none\" (erf form) or \"tanh\", got \"erf\""
    );
    let ints = i64s(&[1], &[1]);
    assert_eq!(
        fail(ops::relu::def(), &[&ints], &[]),
        "op `std.relu`: input `x`: expected f32, f16 or bf16, got i64"
    );
}

#[test]
fn softmax_along_any_axis() {
    let x = f32s(&[2, 2], &[0.0, 1.0, 0.0, 3.0]);
    let (e1, e3) = (1f32.exp(), 3f32.exp());
    let last = run(ops::softmax::def(), &[&x], &[]);
    assert_close(
        &last,
        &[2, 2],
        &[
            1.0 / (1.0 + e1),
            e1 / (1.0 + e1),
            1.0 / (1.0 + e3),
            e3 / (1.0 + e3),
        ],
    );
    let first = run(ops::softmax::def(), &[&x], &[("axis", AttrValue::I64(-2))]);
    assert_close(&first, &[2, 2], &[0.5, e1 / (e1 + e3), 0.5, e3 / (e1 + e3)]);
    assert_eq!(
        fail(ops::softmax::def(), &[&x], &[("axis", AttrValue::I64(2))]),
        "op `std.softmax`: param `axis`: axis 2 is out of range for rank 2 (expected -2 ..= 1)"
    );
}

#[test]
fn norms_over_the_last_axis() {
    let x = f32s(&[2, 2], &[1.0, 3.0, -2.0, 2.0]);
    let gamma = f32s(&[2], &[1.0, 2.0]);
    let beta = f32s(&[2], &[0.5, 0.0]);
    let eps = [("eps", AttrValue::F32(0.0))];
    // Rows normalize to [-1, 1]; then * gamma + beta.
    let y = run(ops::layer_norm::def(), &[&x, &gamma, &beta], &eps);
    assert_close(&y, &[2, 2], &[-0.5, 2.0, -0.5, 2.0]);
    // rms of [1, 3] is sqrt(5), of [-2, 2] is 2.
    let y = run(ops::rms_norm::def(), &[&x, &gamma], &eps);
    let r5 = 5f32.sqrt();
    assert_close(&y, &[2, 2], &[1.0 / r5, 6.0 / r5, -1.0, 2.0]);
    let wide = f32s(&[3], &[1.0; 3]);
    assert_eq!(
        fail(ops::layer_norm::def(), &[&x, &gamma, &wide], &[]),
        "op `std.layer_norm`: input `beta`: expected shape [2], got [3]"
    );
}

#[test]
fn matmul_batches_over_the_leading_dims_of_a() {
    let a = f32s(&[2, 1, 2], &[1.0, 2.0, 3.0, 4.0]);
    let b = f32s(&[2, 3], &[1.0, 0.0, 1.0, 0.0, 1.0, 1.0]);
    let y = run(ops::matmul::def(), &[&a, &b], &[]);
    assert_close(&y, &[2, 1, 3], &[1.0, 2.0, 3.0, 3.0, 4.0, 7.0]);
    let y = run(ops::matmul::def(), &[&f32s(&[1, 2], &[1.0, 2.0]), &b], &[]);
    assert_close(&y, &[1, 3], &[1.0, 2.0, 3.0]);
    assert_eq!(
        fail(ops::matmul::def(), &[&b, &b], &[]),
        "op `std.matmul`: input `b`: a of shape [2, 3] has 3 columns, so b must have 3 rows, \
         got shape [2, 3]: the inner dims of a [.., m, k] @ b [k, n] must agree"
    );
    assert_eq!(
        fail(ops::matmul::def(), &[&b, &a], &[]),
        "op `std.matmul`: input `b`: expected rank 2, got shape [2, 1, 2] of rank 3"
    );
}

#[test]
fn transpose_permutes_or_reverses_axes() {
    let x = i64s(&[2, 3], &[0, 1, 2, 3, 4, 5]);
    let y = run(ops::transpose::def(), &[&x], &[("perm", ints(&[]))]);
    assert_eq!(
        (y.dims(), y.to_vec::<i64>()),
        (&[3, 2][..], Ok(vec![0, 3, 1, 4, 2, 5]))
    );
    let cube = i64s(&[1, 2, 3], &[0, 1, 2, 3, 4, 5]);
    let y = run(
        ops::transpose::def(),
        &[&cube],
        &[("perm", ints(&[1, 2, 0]))],
    );
    assert_eq!(
        (y.dims(), y.to_vec::<i64>()),
        (&[2, 3, 1][..], Ok(vec![0, 1, 2, 3, 4, 5]))
    );
    assert_eq!(
        fail(ops::transpose::def(), &[&x], &[("perm", ints(&[0, 0]))]),
        "op `std.transpose`: param `perm`: expected a permutation of 0..2 (the axes of x), got \
         [0, 0]; an empty perm reverses the axes"
    );
}

#[test]
fn reshape_infers_minus_one_and_copies_zeros() {
    let x = i64s(&[2, 3, 4], &(0..24).collect::<Vec<_>>());
    let y = run(ops::reshape::def(), &[&x], &[("shape", ints(&[0, -1]))]);
    assert_eq!(y.dims(), &[2, 12]);
    assert_eq!(y.to_vec::<i64>(), x.to_vec::<i64>());
    let y = run(ops::reshape::def(), &[&x], &[("shape", ints(&[-1, 0, 2]))]);
    assert_eq!(y.dims(), &[4, 3, 2]);
    assert_eq!(
        fail(ops::reshape::def(), &[&x], &[("shape", ints(&[5, -1]))]),
        "op `std.reshape`: param `shape`: [5, -1]: no size for the -1 at index 1 gives the 24 \
         elements of x of shape [2, 3, 4]"
    );
    assert_eq!(
        fail(ops::reshape::def(), &[&x], &[("shape", ints(&[-1, -1]))]),
        "op `std.reshape`: param `shape`: [-1, -1] has more than one -1"
    );
    assert_eq!(
        fail(ops::reshape::def(), &[&x], &[("shape", ints(&[4, 5]))]),
        "op `std.reshape`: param `shape`: [4, 5] means shape [4, 5] of 20 elements, but x of \
         shape [2, 3, 4] has 24"
    );
}

#[test]
fn concat_joins_along_an_axis() {
    let a = i64s(&[2, 1], &[1, 2]);
    let b = i64s(&[2, 2], &[3, 4, 5, 6]);
    let y = run(
        ops::concat::def(),
        &[&a, &b],
        &[("axis", AttrValue::I64(-1))],
    );
    assert_eq!(
        (y.dims(), y.to_vec::<i64>()),
        (&[2, 3][..], Ok(vec![1, 3, 4, 2, 5, 6]))
    );
    assert_eq!(
        fail(
            ops::concat::def(),
            &[&a, &b],
            &[("axis", AttrValue::I64(0))]
        ),
        "op `std.concat`: input `b`: shape [2, 2] must equal a's [2, 1] except along axis 0, \
         where they are joined"
    );
}

#[test]
fn slice_counts_negative_indices_from_the_end_and_clamps() {
    let x = i64s(&[3, 4], &(0..12).collect::<Vec<_>>());
    let y = run(
        ops::slice::def(),
        &[&x],
        &[
            ("starts", ints(&[-3])),
            ("ends", ints(&[i64::MAX])),
            ("axes", ints(&[-1])),
        ],
    );
    assert_eq!(y.dims(), &[3, 3]);
    assert_eq!(y.to_vec::<i64>(), Ok(vec![1, 2, 3, 5, 6, 7, 9, 10, 11]));
    // Empty axes: 0..len(starts); an end before its start gives an empty axis.
    let y = run(
        ops::slice::def(),
        &[&x],
        &[("starts", ints(&[1, -100])), ("ends", ints(&[-1, 2]))],
    );
    assert_eq!((y.dims(), y.to_vec::<i64>()), (&[1, 2][..], Ok(vec![4, 5])));
    let y = run(
        ops::slice::def(),
        &[&x],
        &[("starts", ints(&[2])), ("ends", ints(&[1]))],
    );
    assert_eq!(y.dims(), &[0, 4]);
    assert_eq!(
        fail(
            ops::slice::def(),
            &[&x],
            &[("starts", ints(&[0])), ("ends", ints(&[1, 2]))]
        ),
        "op `std.slice`: param `ends`: has 2 values, but starts has 1: one start and one end \
         per sliced axis"
    );
}

/// The indices ONNX Slice takes along an axis of size `dim`, straight from its spec: the
/// oracle of [`slice_takes_every_step_and_clamps_as_onnx`].
fn onnx_slice_indices(dim: i64, start: i64, end: i64, step: i64) -> Vec<i64> {
    let from_end = |i: i64| if i < 0 { i.saturating_add(dim) } else { i };
    let (mut start, mut end) = (from_end(start), from_end(end));
    if step > 0 {
        start = start.clamp(0, dim);
        end = end.clamp(0, dim);
    } else {
        start = start.clamp(0, (dim - 1).max(0));
        end = end.clamp(-1, dim - 1);
    }
    let mut taken = Vec::new();
    let mut i = start;
    while dim > 0 && (if step > 0 { i < end } else { i > end }) {
        taken.push(i);
        match i.checked_add(step) {
            Some(next) => i = next,
            None => break,
        }
    }
    taken
}

#[test]
fn slice_takes_every_step_and_clamps_as_onnx() {
    let bounds = [i64::MIN, -9, -5, -4, -2, -1, 0, 1, 2, 3, 4, 5, 9, i64::MAX];
    for dim in [0usize, 1, 4, 5] {
        let x = i64s(&[dim], &(0..dim as i64).map(|v| v * 10).collect::<Vec<_>>());
        for step in [-3, -2, -1, 1, 2, 3, i64::MAX, i64::MIN + 1, i64::MIN] {
            for start in bounds {
                for end in bounds {
                    let y = run(
                        ops::slice::def(),
                        &[&x],
                        &[
                            ("starts", ints(&[start])),
                            ("ends", ints(&[end])),
                            ("steps", ints(&[step])),
                        ],
                    );
                    let expected: Vec<i64> = onnx_slice_indices(dim as i64, start, end, step)
                        .into_iter()
                        .map(|i| i * 10)
                        .collect();
                    assert_eq!(
                        y.to_vec::<i64>(),
                        Ok(expected),
                        "dim {dim}, start {start}, end {end}, step {step}"
                    );
                }
            }
        }
    }
    // Two axes with steps, one reversed.
    let x = i64s(&[3, 4], &(0..12).collect::<Vec<_>>());
    let y = run(
        ops::slice::def(),
        &[&x],
        &[
            ("starts", ints(&[-1, 0])),
            ("ends", ints(&[i64::MIN, 4])),
            ("axes", ints(&[0, 1])),
            ("steps", ints(&[-1, 2])),
        ],
    );
    assert_eq!(
        (y.dims(), y.to_vec::<i64>()),
        (&[3, 2][..], Ok(vec![8, 10, 4, 6, 0, 2]))
    );
    assert_eq!(
        fail(
            ops::slice::def(),
            &[&x],
            &[
                ("starts", ints(&[0])),
                ("ends", ints(&[2])),
                ("steps", ints(&[0]))
            ]
        ),
        "op `std.slice`: param `steps`: step 0 (of axis 0) is 0; steps are non-zero"
    );
    assert_eq!(
        fail(
            ops::slice::def(),
            &[&x],
            &[
                ("starts", ints(&[0])),
                ("ends", ints(&[2])),
                ("steps", ints(&[1, 1]))
            ]
        ),
        "op `std.slice`: param `steps`: has 2 values, but starts has 1: one step per start, \
         or none for steps of 1"
    );
}

#[test]
fn reshape_with_allowzero_keeps_zeros_as_sizes() {
    let empty = f32s(&[0, 3, 4], &[]);
    let y = run(
        ops::reshape::def(),
        &[&empty],
        &[
            ("shape", ints(&[3, 4, 0])),
            ("allowzero", AttrValue::Bool(true)),
        ],
    );
    assert_eq!(y.dims(), &[3, 4, 0]);
    // Without allowzero the 0 copies x's dim 2 (4): 48 elements, not 0.
    assert_eq!(
        fail(
            ops::reshape::def(),
            &[&empty],
            &[("shape", ints(&[3, 4, 0]))]
        ),
        "op `std.reshape`: param `shape`: [3, 4, 0] means shape [3, 4, 4] of 48 elements, but x \
         of shape [0, 3, 4] has 0"
    );
    assert_eq!(
        fail(
            ops::reshape::def(),
            &[&empty],
            &[
                ("shape", ints(&[0, -1])),
                ("allowzero", AttrValue::Bool(true))
            ]
        ),
        "op `std.reshape`: param `shape`: [0, -1] has both a 0 and a -1, which allowzero does \
         not allow (no size for the -1 gives a shape of 0 elements a known count)"
    );
}

#[test]
fn integer_powers_are_exact_wrap_and_truncate() {
    let i32s = |values: &[i32]| Tensor::from_vec([values.len()], values.to_vec()).unwrap();
    // Integer exponents: exact, wrapping in the base's dtype.
    let base = i32s(&[2, -3, 3, 7, 0, 5]);
    let exponent = i32s(&[10, 3, 21, 0, 0, 1]);
    let y = run(ops::pow::def(), &[&base, &exponent], &[]);
    assert_eq!(
        y.to_vec::<i32>(),
        Ok(vec![1024, -27, 3i32.wrapping_pow(21), 1, 1, 5])
    );
    // Negative exponents: the real power truncated toward zero.
    let base = i32s(&[1, -1, -1, 2, -5, 0]);
    let exponent = i64s(&[6], &[-3, -3, -2, -1, -2, -1]);
    let y = run(ops::pow::def(), &[&base, &exponent], &[]);
    assert_eq!(y.to_vec::<i32>(), Ok(vec![1, -1, 1, 0, 0, 0]));
    // i64 bases with u64 exponents beyond i64::MAX, and a broadcast exponent.
    let base = i64s(&[3], &[1, -1, 2]);
    let exponent = Tensor::from_vec([1], vec![u64::MAX]).unwrap();
    let y = run(ops::pow::def(), &[&base, &exponent], &[]);
    assert_eq!(
        (y.dtype(), y.to_vec::<i64>()),
        (DType::I64, Ok(vec![1, -1, 0]))
    );
    // Float exponents: the real power in f64, truncated toward zero and saturated.
    let base = i32s(&[2, 9, -8, 10, -2]);
    let exponent = f32s(&[5], &[0.5, 1.5, 1.0 / 3.0, 10.0, 0.5]);
    let y = run(ops::pow::def(), &[&base, &exponent], &[]);
    assert_eq!(y.to_vec::<i32>(), Ok(vec![1, 27, 0, i32::MAX, 0]));
    assert_eq!(
        fail(ops::pow::def(), &[&f32s(&[1], &[2.0]), &i32s(&[2])], &[]),
        "op `std.pow`: input `b`: expected dtype f32 (that of a), got i32: convert it with \
         std.cast"
    );
    assert_eq!(
        fail(
            ops::pow::def(),
            &[&Tensor::from_vec([1], vec![2u8]).unwrap(), &i32s(&[2])],
            &[]
        ),
        "op `std.pow`: input `a`: expected f32, f16, bf16, i32 or i64, got u8"
    );
}

#[test]
fn gather_looks_up_rows_and_reports_an_index_out_of_range() {
    let table = f32s(&[3, 2], &[0.0, 0.5, 1.0, 1.5, 2.0, 2.5]);
    let ids = Tensor::from_vec([2, 2], vec![2i32, 0, -1, 1]).expect("fits");
    let y = run(ops::gather::def(), &[&table, &ids], &[]);
    assert_close(&y, &[2, 2, 2], &[2.0, 2.5, 0.0, 0.5, 2.0, 2.5, 1.0, 1.5]);
    let columns = run(
        ops::gather::def(),
        &[&table, &i64s(&[1], &[1])],
        &[("axis", AttrValue::I64(1))],
    );
    assert_close(&columns, &[3, 1], &[0.5, 1.5, 2.5]);
    let bad = i64s(&[3], &[0, 3, 1]);
    assert_eq!(
        fail(ops::gather::def(), &[&table, &bad], &[]),
        "op `std.gather`: input `indices`: index 3 (element 1) is out of range for axis 0 of \
         data of shape [3, 2]: expected -3 ..= 2"
    );
    assert_eq!(
        fail(ops::gather::def(), &[&table, &table], &[]),
        "op `std.gather`: input `indices`: expected i32 or i64, got f32"
    );
}

#[test]
fn cast_converts_to_a_named_dtype() {
    let x = f32s(&[3], &[1.7, -1.7, 0.0]);
    let to = |name: &str| [("to", AttrValue::String(name.to_owned()))];
    let y = run(ops::cast::def(), &[&x], &to("i32"));
    assert_eq!(y.to_vec::<i32>(), Ok(vec![1, -1, 0]));
    let y = run(ops::cast::def(), &[&x], &to("bool"));
    assert_eq!(y.to_vec::<bool>(), Ok(vec![true, true, false]));
    assert_eq!(
        fail(ops::cast::def(), &[&x], &to("float16")),
        "op `std.cast`: param `to`: unknown dtype `float16`: expected one of f32, f16, bf16, \
         i32, i64, i8, u8, bool, i16, u16, u32, u64, f64, f8e4m3fn, f8e4m3fnuz, f8e5m2, \
         f8e5m2fnuz, f8e8m0, f4e2m1, i4, u4, i2, u2"
    );
}

#[test]
fn reductions_over_axes() {
    let x = f32s(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let y = run(ops::reduce_sum::def(), &[&x], &[]);
    assert_close(&y, &[1, 1], &[21.0]);
    let y = run(
        ops::reduce_mean::def(),
        &[&x],
        &[("axes", ints(&[-1])), ("keepdims", AttrValue::Bool(false))],
    );
    assert_close(&y, &[2], &[2.0, 5.0]);
    let y = run(ops::reduce_mean::def(), &[&x], &[("axes", ints(&[0]))]);
    assert_close(&y, &[1, 3], &[2.5, 3.5, 4.5]);
    let counts = Tensor::from_vec([2, 2], vec![1i32, 2, 3, 4]).expect("fits");
    let y = run(ops::reduce_sum::def(), &[&counts], &[("axes", ints(&[1]))]);
    assert_eq!((y.dims(), y.to_vec::<i32>()), (&[2, 1][..], Ok(vec![3, 7])));
    assert_eq!(
        fail(ops::reduce_sum::def(), &[&x], &[("axes", ints(&[1, -1]))]),
        "op `std.reduce_sum`: param `axes`: [1, -1] names an axis twice"
    );
}

#[test]
fn every_std_op_is_registered_with_a_doc() {
    let ops = pto_op::registry::ops().expect("one op per name");
    let names: Vec<&str> = ops
        .iter()
        .map(|op| op.name)
        .filter(|name| name.starts_with("std."))
        .collect();
    assert_eq!(
        names,
        [
            "std.abs",
            "std.add",
            "std.and",
            "std.batch_matmul",
            "std.cast",
            "std.ceil",
            "std.clip",
            "std.concat",
            "std.cos",
            "std.div",
            "std.equal",
            "std.erf",
            "std.exp",
            "std.expand",
            "std.floor",
            "std.gather",
            "std.gelu",
            "std.greater",
            "std.greater_equal",
            "std.is_inf",
            "std.is_nan",
            "std.layer_norm",
            "std.less",
            "std.less_equal",
            "std.log",
            "std.matmul",
            "std.max",
            "std.min",
            "std.mul",
            "std.neg",
            "std.not",
            "std.or",
            "std.pow",
            "std.reciprocal",
            "std.reduce_max",
            "std.reduce_mean",
            "std.reduce_sum",
            "std.relu",
            "std.reshape",
            "std.rms_norm",
            "std.round",
            "std.sigmoid",
            "std.sign",
            "std.silu",
            "std.sin",
            "std.slice",
            "std.softmax",
            "std.sqrt",
            "std.sub",
            "std.tanh",
            "std.transpose",
            "std.trilu",
            "std.where",
            "std.xor",
        ]
    );
    for op in ops.iter().filter(|op| op.name.starts_with("std.")) {
        assert!(!op.doc.trim().is_empty(), "{} has no doc", op.name);
    }
}

#[test]
fn exporter_ops_compute_by_hand() {
    let x = f32s(&[2, 3], &[1.0, -2.0, 0.5, 4.0, 0.0, -1.0]);
    let row = f32s(&[3], &[0.0, 0.0, 1.0]);
    assert_close(
        &run(ops::max::def(), &[&x, &row], &[]),
        &[2, 3],
        &[1.0, 0.0, 1.0, 4.0, 0.0, 1.0],
    );
    assert_close(
        &run(ops::min::def(), &[&x, &row], &[]),
        &[2, 3],
        &[0.0, -2.0, 0.5, 0.0, 0.0, -1.0],
    );
    // Integers beyond 2^53 stay exact.
    let big = Tensor::from_vec([2], vec![u64::MAX, 3]).expect("fits");
    let small = Tensor::from_vec([2], vec![u64::MAX - 1, 4]).expect("fits");
    assert_eq!(
        run(ops::max::def(), &[&big, &small], &[]).to_vec::<u64>(),
        Ok(vec![u64::MAX, 4])
    );
    assert_eq!(
        run(ops::equal::def(), &[&big, &small], &[]).to_vec::<bool>(),
        Ok(vec![false, false])
    );
    let flags = Tensor::from_vec([3], vec![true, false, true]).expect("fits");
    assert_close(
        &run(ops::select::def(), &[&flags, &x, &row], &[]),
        &[2, 3],
        &[1.0, 0.0, 0.5, 4.0, 0.0, -1.0],
    );
    let keep = [("axes", ints(&[1])), ("keepdims", AttrValue::Bool(false))];
    assert_close(
        &run(ops::reduce_max::def(), &[&x], &keep),
        &[2],
        &[1.0, 4.0],
    );
    assert_close(
        &run(ops::expand::def(), &[&row], &[("shape", ints(&[2, 1]))]),
        &[2, 3],
        &[0.0, 0.0, 1.0, 0.0, 0.0, 1.0],
    );
    let m = i64s(&[3, 3], &[1, 2, 3, 4, 5, 6, 7, 8, 9]);
    let upper = [("upper", AttrValue::Bool(true)), ("k", AttrValue::I64(1))];
    assert_eq!(
        run(ops::trilu::def(), &[&m], &upper).to_vec::<i64>(),
        Ok(vec![0, 2, 3, 0, 0, 6, 0, 0, 0])
    );
    let lower = [("upper", AttrValue::Bool(false)), ("k", AttrValue::I64(0))];
    assert_eq!(
        run(ops::trilu::def(), &[&m], &lower).to_vec::<i64>(),
        Ok(vec![1, 0, 0, 4, 5, 0, 7, 8, 9])
    );
    assert_close(
        &run(ops::erf::def(), &[&f32s(&[3], &[0.0, 1.0, -0.5])], &[]),
        &[3],
        &[0.0, 0.842_700_8, -0.520_499_9],
    );
    assert_close(
        &run(ops::reciprocal::def(), &[&f32s(&[2], &[4.0, -0.5])], &[]),
        &[2],
        &[0.25, -2.0],
    );
    assert_close(
        &run(ops::exp::def(), &[&f32s(&[2], &[0.0, 1.0])], &[]),
        &[2],
        &[1.0, std::f32::consts::E],
    );
    assert_eq!(
        fail(ops::max::def(), &[&flags, &flags], &[]),
        "op `std.max`: input `a`: expected a float or an integer dtype, got bool"
    );
}

/// The bool values of `t`.
fn bools(t: &Tensor) -> Vec<bool> {
    assert_eq!(t.dtype(), DType::Bool);
    t.to_vec::<bool>().expect("bool")
}

#[test]
fn comparisons_are_exact_broadcast_and_false_for_nan() {
    let a = f32s(&[2, 3], &[1.0, f32::NAN, 3.0, -1.0, 2.0, f32::INFINITY]);
    let b = f32s(&[3], &[1.0, 1.0, 4.0]);
    let table = [
        (ops::less::def(), [false, false, true, true, false, false]),
        (
            ops::less_equal::def(),
            [true, false, true, true, false, false],
        ),
        (
            ops::greater::def(),
            [false, false, false, false, true, true],
        ),
        (
            ops::greater_equal::def(),
            [true, false, false, false, true, true],
        ),
    ];
    for (def, expected) in table {
        let y = run(def, &[&a, &b], &[]);
        assert_eq!(
            (y.dims(), bools(&y)),
            (&[2, 3][..], expected.to_vec()),
            "{}",
            def.name
        );
    }
    // 2^53 + 1 and 2^53 are one f64: compared as integers, they differ.
    let big = i64s(&[1], &[(1 << 53) + 1]);
    let next = i64s(&[1], &[1 << 53]);
    assert_eq!(
        bools(&run(ops::greater::def(), &[&big, &next], &[])),
        [true]
    );
    assert_eq!(
        bools(&run(ops::less_equal::def(), &[&big, &next], &[])),
        [false]
    );
    let top = Tensor::from_vec([1], vec![u64::MAX]).unwrap();
    let below = Tensor::from_vec([1], vec![u64::MAX - 1]).unwrap();
    assert_eq!(bools(&run(ops::less::def(), &[&below, &top], &[])), [true]);
    assert_eq!(
        fail(ops::less::def(), &[&a, &big], &[]),
        "op `std.less`: input `b`: expected dtype f32 (that of a), got i64: convert it with std.cast"
    );
}

#[test]
fn logic_follows_the_truth_tables() {
    let a = Tensor::from_vec([4], vec![false, false, true, true]).unwrap();
    let b = Tensor::from_vec([4], vec![false, true, false, true]).unwrap();
    assert_eq!(
        bools(&run(ops::and::def(), &[&a, &b], &[])),
        [false, false, false, true]
    );
    assert_eq!(
        bools(&run(ops::or::def(), &[&a, &b], &[])),
        [false, true, true, true]
    );
    assert_eq!(
        bools(&run(ops::xor::def(), &[&a, &b], &[])),
        [false, true, true, false]
    );
    assert_eq!(
        bools(&run(ops::not::def(), &[&a], &[])),
        [true, true, false, false]
    );
    // Broadcast: a [4] against a [2, 1] column.
    let column = Tensor::from_vec([2, 1], vec![true, false]).unwrap();
    let y = run(ops::and::def(), &[&column, &a], &[]);
    assert_eq!(y.dims(), [2, 4]);
    assert_eq!(
        bools(&y),
        [false, false, true, true, false, false, false, false]
    );
    let x = f32s(&[1], &[1.0]);
    assert_eq!(
        fail(ops::and::def(), &[&x, &a], &[]),
        "op `std.and`: input `a`: expected bool, got f32"
    );
}

#[test]
fn is_nan_and_is_inf_classify_floats() {
    let x = f32s(
        &[5],
        &[f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, f32::MAX],
    );
    assert_eq!(
        bools(&run(ops::is_nan::def(), &[&x], &[])),
        [true, false, false, false, false]
    );
    let is_inf = |positive: bool, negative: bool| {
        let pairs = [
            ("detect_positive", AttrValue::Bool(positive)),
            ("detect_negative", AttrValue::Bool(negative)),
        ];
        bools(&run(ops::is_inf::def(), &[&x], &pairs))
    };
    assert_eq!(is_inf(true, true), [false, true, true, false, false]);
    assert_eq!(is_inf(true, false), [false, true, false, false, false]);
    assert_eq!(is_inf(false, true), [false, false, true, false, false]);
    let half = x.cast(DType::F16);
    assert_eq!(
        bools(&run(ops::is_nan::def(), &[&half], &[])),
        [true, false, false, false, false]
    );
    // f32::MAX is beyond f16: the cast made it +inf.
    assert_eq!(
        bools(&run(ops::is_inf::def(), &[&half], &[])),
        [false, true, true, false, true]
    );
    assert_eq!(
        fail(ops::is_nan::def(), &[&i64s(&[1], &[1])], &[]),
        "op `std.is_nan`: input `x`: expected f32, f16, bf16 or f64, got i64"
    );
}

#[test]
fn rounding_sign_and_the_rest_of_the_unary_math() {
    let x = f32s(&[8], &[-2.5, -1.5, -0.5, 0.0, 0.5, 1.5, 2.5, 3.7]);
    let unary = |def: &'static OpDef| run(def, &[&x], &[]).to_vec::<f32>().expect("f32");
    assert_eq!(
        unary(ops::round::def()),
        [-2.0, -2.0, -0.0, 0.0, 0.0, 2.0, 2.0, 4.0]
    );
    assert_eq!(
        unary(ops::floor::def()),
        [-3.0, -2.0, -1.0, 0.0, 0.0, 1.0, 2.0, 3.0]
    );
    assert_eq!(
        unary(ops::ceil::def()),
        [-2.0, -1.0, -0.0, 0.0, 1.0, 2.0, 3.0, 4.0]
    );
    assert_eq!(
        unary(ops::sign::def()),
        [-1.0, -1.0, -1.0, 0.0, 1.0, 1.0, 1.0, 1.0]
    );
    assert_eq!(
        unary(ops::abs::def()),
        [2.5, 1.5, 0.5, 0.0, 0.5, 1.5, 2.5, 3.7]
    );
    let angles = f32s(
        &[3],
        &[0.0, std::f32::consts::FRAC_PI_2, std::f32::consts::PI],
    );
    assert_close(
        &run(ops::cos::def(), &[&angles], &[]),
        &[3],
        &[1.0, 0.0, -1.0],
    );
    assert_close(
        &run(ops::sin::def(), &[&angles], &[]),
        &[3],
        &[0.0, 1.0, 0.0],
    );
    let e = f32s(&[3], &[1.0, std::f32::consts::E, 0.0]);
    let log = run(ops::log::def(), &[&e], &[])
        .to_vec::<f32>()
        .expect("f32");
    assert_eq!(
        (log[0], (log[1] - 1.0).abs() < 1e-6, log[2]),
        (0.0, true, f32::NEG_INFINITY)
    );
    let nan = run(ops::sign::def(), &[&f32s(&[1], &[f32::NAN])], &[]);
    assert!(nan.to_vec::<f32>().expect("f32")[0].is_nan());
    assert_eq!(
        fail(ops::cos::def(), &[&i64s(&[1], &[1])], &[]),
        "op `std.cos`: input `x`: expected f32, f16 or bf16, got i64"
    );
}

#[test]
fn clip_is_exact_keeps_nan_and_gives_hi_where_the_bounds_cross() {
    let x = f32s(&[5], &[-3.0, -0.5, 0.25, 9.0, f32::NAN]);
    let (lo, hi) = (f32s(&[], &[-1.0]), f32s(&[1], &[2.0]));
    let y = run(ops::clip::def(), &[&x, &lo, &hi], &[])
        .to_vec::<f32>()
        .unwrap();
    assert_eq!(y[..4], [-1.0, -0.5, 0.25, 2.0]);
    assert!(y[4].is_nan());
    let crossed = run(ops::clip::def(), &[&x, &hi, &lo], &[])
        .to_vec::<f32>()
        .unwrap();
    assert_eq!(crossed[..4], [-1.0, -1.0, -1.0, -1.0]);
    // Integers beyond f64's 2^53 are compared and kept exactly.
    let big = (1i64 << 53) + 1;
    let ints = i64s(&[3], &[big + 2, big, i64::MIN]);
    let (lo, hi) = (i64s(&[], &[-7]), i64s(&[], &[big + 1]));
    let y = run(ops::clip::def(), &[&ints, &lo, &hi], &[]);
    assert_eq!(y.to_vec::<i64>(), Ok(vec![big + 1, big, -7]));
    assert_eq!(
        fail(ops::clip::def(), &[&x, &f32s(&[2], &[0.0, 1.0]), &hi], &[]),
        "op `std.clip`: input `lo`: expected a scalar (shape [] or [1]), got shape [2]"
    );
}
