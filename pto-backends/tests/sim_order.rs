//! The simulator on reshapes, rank-raising loads, index reductions, logic on bool tiles
//! and row-wise top-k, traced with the `Kernel` builder, against values computed here
//! from their definitions (a plain sort of each row for top-k).

use pto_backends::sim::exec::execute;
use pto_op::{DType, Kernel, Shape, Tensor};

fn run(k: Kernel, inputs: &[&Tensor]) -> Vec<Tensor> {
    execute(&k.finish().expect("traces"), inputs).expect("executes")
}

fn f32s(t: &Tensor) -> Vec<f32> {
    t.to_f32_array().iter().copied().collect()
}

fn i64s(t: &Tensor) -> Vec<i64> {
    t.cast(DType::I64)
        .view::<i64>()
        .expect("i64")
        .iter()
        .copied()
        .collect()
}

#[test]
fn a_vector_loaded_as_a_column_scales_the_rows() {
    // y[i, j] = x[i, j] * s[i]: the [4] scale loaded as a [4, 1] column broadcasts along j.
    let mut k = Kernel::new("t.row_scale");
    let x = k.input("x", Shape::from([4, 3]), DType::F32);
    let s = k.input("s", Shape::from([4]), DType::F32);
    let y = k.output("y", Shape::from([4, 3]), DType::F32);
    let xt = k.load(&x, [0, 0], [4, 3]).unwrap();
    let column = k.load_reshaped(&s, [0], [4, 1]).unwrap();
    k.store(&y, [0, 0], &(&xt * &column)).unwrap();
    let xs: Vec<f32> = (0..12).map(|v| v as f32).collect();
    let scale = [1.0f32, 10.0, 100.0, -1.0];
    let out = run(
        k,
        &[
            &Tensor::from_vec([4, 3], xs.clone()).unwrap(),
            &Tensor::from_vec([4], scale.to_vec()).unwrap(),
        ],
    );
    let expected: Vec<f32> = xs
        .iter()
        .enumerate()
        .map(|(i, v)| v * scale[i / 3])
        .collect();
    assert_eq!(f32s(&out[0]), expected);
}

#[test]
fn reshapes_keep_row_major_order() {
    // [2, 3] -> [6] -> [3, 2] -> [1, 6]: the elements never move.
    let mut k = Kernel::new("t.reshape");
    let x = k.input("x", Shape::from([2, 3]), DType::I32);
    let y = k.output("y", Shape::from([1, 6]), DType::I32);
    let t = k.load(&x, [0, 0], [2, 3]).unwrap();
    let r = t.reshape([6]).reshape([3, 2]).reshape([1, 6]);
    k.store(&y, [0, 0], &r).unwrap();
    let xs: Vec<i32> = vec![5, -1, 7, 0, 3, 9];
    let out = run(k, &[&Tensor::from_vec([2, 3], xs).unwrap()]);
    assert_eq!(i64s(&out[0]), vec![5, -1, 7, 0, 3, 9]);
    assert_eq!(out[0].dims(), &[1, 6]);
}

#[test]
fn a_reshape_to_another_element_count_is_a_tracing_error() {
    let mut k = Kernel::new("t.bad_reshape");
    let t = k.full([4, 3], DType::F32, 1.0);
    let _ = t.reshape([5, 2]);
    assert_eq!(
        k.finish().unwrap_err().to_string(),
        "op `t.bad_reshape`: reshape to [5, 2]: cannot reshape f32[4, 3]@ub to [5, 2]: \
         12 element(s) against 10"
    );
}

#[test]
fn argmax_and_argmin_take_the_first_of_equal_elements_and_nan() {
    let rows: [[f32; 5]; 4] = [
        [1.0, 3.0, 3.0, -2.0, 0.0],           // max 3 at 1 (not 2), min -2 at 3
        [f32::NAN, 1.0, f32::NAN, 9.0, -9.0], // NaN first: 0 for both
        [-1.0, -1.0, -1.0, -1.0, -1.0],       // all equal: 0 for both
        [0.5, f32::NEG_INFINITY, 2.0, f32::INFINITY, 2.0], // max inf at 3, min -inf at 1
    ];
    let mut k = Kernel::new("t.argreduce");
    let x = k.input("x", Shape::from([4, 5]), DType::F32);
    let (hi, lo) = (
        k.output("hi", Shape::from([4, 1]), DType::I32),
        k.output("lo", Shape::from([4, 1]), DType::I32),
    );
    let t = k.load(&x, [0, 0], [4, 5]).unwrap();
    k.store(&hi, [0, 0], &t.argmax(-1)).unwrap();
    k.store(&lo, [0, 0], &t.argmin(1)).unwrap();
    let flat: Vec<f32> = rows.iter().flatten().copied().collect();
    let out = run(k, &[&Tensor::from_vec([4, 5], flat).unwrap()]);
    assert_eq!(i64s(&out[0]), vec![1, 0, 0, 3]);
    assert_eq!(i64s(&out[1]), vec![3, 0, 0, 1]);
}

#[test]
fn argmax_of_an_integer_tile_along_the_first_axis() {
    let mut k = Kernel::new("t.argmax_i32");
    let x = k.input("x", Shape::from([3, 2]), DType::I32);
    let y = k.output("y", Shape::from([1, 2]), DType::I32);
    let t = k.load(&x, [0, 0], [3, 2]).unwrap();
    k.store(&y, [0, 0], &t.argmax(0)).unwrap();
    let out = run(
        k,
        &[&Tensor::from_vec([3, 2], vec![4i32, -7, 9, -7, 9, -8]).unwrap()],
    );
    assert_eq!(i64s(&out[0]), vec![1, 0]);
}

#[test]
fn logic_on_bool_tiles_follows_the_truth_tables_and_broadcasts() {
    // a = x > 0 ([2, 1]), b = z > 0 ([1, 2]): every pair of truth values once.
    let mut k = Kernel::new("t.logic");
    let x = k.input("x", Shape::from([2, 1]), DType::F32);
    let z = k.input("z", Shape::from([1, 2]), DType::F32);
    let outs: Vec<_> = ["and", "or", "not_a", "xor"]
        .iter()
        .map(|n| k.output(n, Shape::from([2, 2]), DType::F32))
        .collect();
    let a = k.load(&x, [0, 0], [2, 1]).unwrap().gt(0.0);
    let b = k.load(&z, [0, 0], [1, 2]).unwrap().gt(0.0);
    let one = k.full([2, 2], DType::F32, 1.0);
    let both = &a & &b;
    let either = &a | &b;
    let not_a = (!&a).logical_and(&one.gt(0.0));
    let xor = either.logical_and(&both.logical_not());
    for (g, t) in outs.iter().zip([&both, &either, &not_a, &xor]) {
        let v = pto_op::Tile::select(t, &one, 0.0);
        k.store(g, [0, 0], &v).unwrap();
    }
    let out = run(
        k,
        &[
            &Tensor::from_vec([2, 1], vec![-1.0f32, 1.0]).unwrap(),
            &Tensor::from_vec([1, 2], vec![-1.0f32, 1.0]).unwrap(),
        ],
    );
    // Rows: a = false, true; columns: b = false, true.
    assert_eq!(f32s(&out[0]), vec![0.0, 0.0, 0.0, 1.0]);
    assert_eq!(f32s(&out[1]), vec![0.0, 1.0, 1.0, 1.0]);
    assert_eq!(f32s(&out[2]), vec![1.0, 1.0, 0.0, 0.0]);
    assert_eq!(f32s(&out[3]), vec![0.0, 1.0, 1.0, 0.0]);
}

#[test]
fn logic_on_a_float_tile_asks_for_a_compare() {
    let mut k = Kernel::new("t.logic_float");
    let t = k.full([4], DType::F32, 1.0);
    let _ = !&t;
    assert_eq!(
        k.finish().unwrap_err().to_string(),
        "op `t.logic_float`: not: not takes bool tiles, got f32[4]@ub: compare first (`.ne(0.0)`)"
    );
}

/// A small deterministic generator (xorshift), so the test needs no dependency.
fn values(n: usize, seed: u64, levels: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            // Few distinct values: many ties.
            (s % levels) as f32 - (levels / 2) as f32
        })
        .collect()
}

/// The `k` largest of `row`, descending, equal values in row order: a plain stable sort
/// of (value, position) pairs.
fn expected_top_k(row: &[f32], k: usize) -> (Vec<f32>, Vec<i64>) {
    let mut pairs: Vec<(f32, i64)> = row.iter().copied().zip(0..).collect();
    pairs.sort_by(|a, b| {
        b.0.partial_cmp(&a.0)
            .expect("no NaN in the data")
            .then(a.1.cmp(&b.1))
    });
    pairs.truncate(k);
    pairs.into_iter().unzip()
}

#[test]
fn top_k_matches_a_plain_sort_of_each_row_with_ties_to_the_lower_index() {
    for (rows, cols, k, dtype) in [
        (8, 100, 8, DType::F16),
        (3, 1024, 64, DType::F32),
        (5, 7, 7, DType::F32),
        (2, 33, 1, DType::F16),
    ] {
        let mut kernel = Kernel::new("t.topk");
        let x = kernel.input("x", Shape::from([rows, cols]), dtype);
        let v = kernel.output("v", Shape::from([rows, k]), dtype);
        let i = kernel.output("i", Shape::from([rows, k]), DType::I32);
        let t = kernel.load(&x, [0, 0], [rows, cols]).unwrap();
        let (values_tile, indices_tile) = t.top_k(k);
        kernel.store(&v, [0, 0], &values_tile).unwrap();
        kernel.store(&i, [0, 0], &indices_tile).unwrap();
        let data = values(rows * cols, 0x9e37_79b9 + cols as u64, 11);
        let input = Tensor::from_vec([rows, cols], data.clone())
            .unwrap()
            .cast(dtype);
        let out = run(kernel, &[&input]);
        let (got_values, got_indices) = (f32s(&out[0]), i64s(&out[1]));
        for (r, row) in data.chunks(cols).enumerate() {
            let (want_values, want_indices) = expected_top_k(row, k);
            assert_eq!(
                &got_values[r * k..(r + 1) * k],
                want_values.as_slice(),
                "[{rows}, {cols}] k {k} row {r}"
            );
            assert_eq!(
                &got_indices[r * k..(r + 1) * k],
                want_indices.as_slice(),
                "[{rows}, {cols}] k {k} row {r}"
            );
        }
    }
}

#[test]
fn top_k_puts_nan_first_and_keeps_integer_values_exact() {
    let mut kernel = Kernel::new("t.topk_nan");
    let x = kernel.input("x", Shape::from([1, 5]), DType::F32);
    let v = kernel.output("v", Shape::from([1, 3]), DType::F32);
    let t = kernel.load(&x, [0, 0], [1, 5]).unwrap();
    kernel.store(&v, [0, 0], &t.top_k(3).0).unwrap();
    let out = run(
        kernel,
        &[&Tensor::from_vec([1, 5], vec![1.0f32, f32::NAN, 5.0, 5.0, -1.0]).unwrap()],
    );
    let got = f32s(&out[0]);
    assert!(got[0].is_nan());
    assert_eq!(&got[1..], &[5.0, 5.0]);

    let mut kernel = Kernel::new("t.topk_i64");
    let x = kernel.input("x", Shape::from([4]), DType::I64);
    let v = kernel.output("v", Shape::from([2]), DType::I64);
    let t = kernel.load(&x, [0], [4]).unwrap();
    kernel.store(&v, [0], &t.top_k(2).0).unwrap();
    let big = (1i64 << 62) + 1;
    let out = run(
        kernel,
        &[&Tensor::from_vec([4], vec![3i64, big, big - 1, -big]).unwrap()],
    );
    assert_eq!(
        out[0]
            .view::<i64>()
            .unwrap()
            .iter()
            .copied()
            .collect::<Vec<_>>(),
        vec![big, big - 1]
    );
}

#[test]
fn top_k_of_more_than_the_row_is_a_tracing_error() {
    let mut kernel = Kernel::new("t.topk_k");
    let t = kernel.full([2, 16], DType::F32, 0.0);
    let _ = t.top_k(17);
    assert_eq!(
        kernel.finish().unwrap_err().to_string(),
        "op `t.topk_k`: topk: topk takes 1 to 16 element(s) of each row of f32[2, 16]@ub, not k = 17"
    );
}
