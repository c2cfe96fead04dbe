//! The Ascend C lowering of reshapes, rank-raising loads and logic on bool tiles, run by
//! the host implementation against the simulator and values computed here; top-k through
//! the sort API against a plain sort; and the reshapes it refuses.
#![cfg(feature = "device")]

use pto_backends::ascendc::{AscendcHost, Soc, lower_program};
use pto_op::kernel::ValidProgram;
use pto_op::{DType, DeviceProfile, Kernel, Shape, Tensor};

fn profile(name: &str) -> DeviceProfile {
    DeviceProfile::builtin(name).expect("built-in profile")
}

/// The outputs of `program` on the simulator and on the host implementation for `soc`.
fn sim_and_host(
    program: &ValidProgram,
    inputs: &[&Tensor],
    soc: Soc,
    device: &str,
) -> (Vec<Tensor>, Vec<Tensor>) {
    let p = profile(device);
    let sim = pto_backends::sim::Simulator::new(p.clone(), Default::default())
        .run(program, inputs)
        .expect("simulates")
        .outputs;
    let host = AscendcHost::on(None);
    let kernel = lower_program(program, "t", soc, &p).expect("lowers");
    let build = host.compile(kernel, &p).expect("compiles");
    let run = host.run(&build, inputs).expect("runs");
    (sim, run)
}

fn f32s(t: &Tensor) -> Vec<f32> {
    t.to_f32_array().iter().copied().collect()
}

/// y = where((x > col) & !(x == 0) | (x < -2), x, -1) with the [16] `col` loaded as a
/// [16, 1] column, then reshaped [16, 32] -> [512] -> [16, 32] (the same padded rows).
fn masked(dtype: DType) -> Result<ValidProgram, pto_op::OpError> {
    let mut k = Kernel::new("t.masked");
    let x = k.input("x", Shape::from([16, 32]), dtype);
    let c = k.input("c", Shape::from([16]), dtype);
    let y = k.output("y", Shape::from([16, 32]), dtype);
    let xt = k.load(&x, [0, 0], [16, 32])?;
    let column = k.load_reshaped(&c, [0], [16, 1])?;
    let keep = xt.gt(&column) & !xt.eq(0.0) | xt.lt(-2.0);
    let kept = pto_op::Tile::select(&keep, &xt, -1.0);
    let round_trip = kept.reshape([512]).reshape([16, 32]);
    k.store(&y, [0, 0], &round_trip)?;
    k.finish()
}

#[test]
fn reshapes_columns_and_logic_match_the_simulator_and_the_definition() {
    let xs: Vec<f32> = (0..512).map(|i| ((i * 7) % 13) as f32 - 6.0).collect();
    let cs: Vec<f32> = (0..16).map(|i| (i % 5) as f32 - 2.0).collect();
    let expected: Vec<f32> = xs
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let keep = (v > cs[i / 32] && v != 0.0) || v < -2.0;
            if keep { v } else { -1.0 }
        })
        .collect();
    for (soc, device, dtype) in [
        (Soc::Kirin9030, "kirin9030", DType::F16),
        (Soc::KirinX90, "kirinx90", DType::F32),
        (Soc::Ascend910B, "ascend910b", DType::F32),
    ] {
        let x = Tensor::from_vec([16, 32], xs.clone()).unwrap().cast(dtype);
        let c = Tensor::from_vec([16], cs.clone()).unwrap().cast(dtype);
        let (sim, host) = sim_and_host(&masked(dtype).unwrap(), &[&x, &c], soc, device);
        assert_eq!(f32s(&sim[0]), expected, "{soc} simulator");
        assert_eq!(f32s(&host[0]), expected, "{soc} host");
    }
}

#[test]
fn reshapes_that_move_elements_between_rows_are_refused_with_the_reason() {
    let p = profile("kirin9030");
    let mut k = Kernel::new("t.rows");
    let x = k.input("x", Shape::from([4, 8]), DType::F32);
    let y = k.output("y", Shape::from([8, 4]), DType::F32);
    let t = k.load(&x, [0, 0], [4, 8]).unwrap();
    k.store(&y, [0, 0], &t.reshape([8, 4])).unwrap();
    let error = lower_program(&k.finish().unwrap(), "t", Soc::Kirin9030, &p)
        .unwrap_err()
        .to_string();
    assert!(error.contains("moves elements between rows"), "{error}");
}

/// The `k` largest of `row`, descending, equal values in row order: a plain stable sort.
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
fn top_k_lowers_to_the_sort_api_and_matches_a_plain_sort_on_every_soc() {
    for (soc, device, dtype, rows, cols, k) in [
        (Soc::Kirin9030, "kirin9030", DType::F16, 4, 100, 8),
        (Soc::KirinX90, "kirinx90", DType::F32, 3, 64, 40),
        (Soc::Ascend910B, "ascend910b", DType::F16, 2, 1024, 64),
    ] {
        let mut kernel = Kernel::new("t.topk");
        let x = kernel.input("x", Shape::from([rows, cols]), dtype);
        let v = kernel.output("v", Shape::from([rows, k]), dtype);
        let i = kernel.output("i", Shape::from([rows, k]), DType::I32);
        let t = kernel.load(&x, [0, 0], [rows, cols]).unwrap();
        let (values, indices) = t.top_k(k);
        kernel.store(&v, [0, 0], &values).unwrap();
        kernel.store(&i, [0, 0], &indices).unwrap();
        let program = kernel.finish().unwrap();
        let source = lower_program(&program, "t", soc, &profile(device))
            .unwrap()
            .kernel_source;
        assert!(
            source.contains("Sort<") && source.contains("Extract("),
            "{soc}"
        );
        // Few distinct values: ties everywhere.
        let data: Vec<f32> = (0..rows * cols)
            .map(|e| ((e * 37 + 11) % 17) as f32 - 8.0)
            .collect();
        let input = Tensor::from_vec([rows, cols], data.clone())
            .unwrap()
            .cast(dtype);
        let (sim, host) = sim_and_host(&program, &[&input], soc, device);
        let (mut want_values, mut want_indices) = (Vec::new(), Vec::new());
        for row in data.chunks(cols) {
            let (values, indices) = expected_top_k(row, k);
            want_values.extend(values);
            want_indices.extend(indices);
        }
        let i64s = |t: &Tensor| t.cast(DType::I64).to_vec::<i64>().unwrap();
        for (target, out) in [("simulator", &sim), ("host", &host)] {
            assert_eq!(f32s(&out[0]), want_values, "{soc} {target} values");
            assert_eq!(i64s(&out[1]), want_indices, "{soc} {target} indices");
        }
    }
}

#[test]
fn argmax_and_argmin_lower_to_the_sort_and_take_the_first_of_equal_elements() {
    for (soc, device, dtype, rows, cols) in [
        (Soc::Kirin9030, "kirin9030", DType::F16, 4, 100),
        (Soc::KirinX90, "kirinx90", DType::F32, 3, 64),
        (Soc::Ascend910B, "ascend910b", DType::F32, 2, 40),
    ] {
        let mut kernel = Kernel::new("t.argreduce");
        let x = kernel.input("x", Shape::from([rows, cols]), dtype);
        let hi = kernel.output("hi", Shape::from([rows, 1]), DType::I32);
        let lo = kernel.output("lo", Shape::from([rows, 1]), DType::I32);
        let t = kernel.load(&x, [0, 0], [rows, cols]).unwrap();
        kernel.store(&hi, [0, 0], &t.argmax(-1)).unwrap();
        kernel.store(&lo, [0, 0], &t.argmin(-1)).unwrap();
        let program = kernel.finish().unwrap();
        // Few distinct values (ties), and in the f32 cases a NaN in the last row.
        let mut data: Vec<f32> = (0..rows * cols)
            .map(|e| ((e * 37 + 11) % 17) as f32 - 8.0)
            .collect();
        if dtype == DType::F32 {
            data[(rows - 1) * cols + 5] = f32::NAN;
        }
        let input = Tensor::from_vec([rows, cols], data.clone())
            .unwrap()
            .cast(dtype);
        let (sim, host) = sim_and_host(&program, &[&input], soc, device);
        // The first position of the extreme (a NaN first of all), by a plain scan.
        let first = |row: &[f32], better: fn(f32, f32) -> bool| -> i64 {
            if let Some(nan) = row.iter().position(|v| v.is_nan()) {
                return nan as i64;
            }
            let mut best = 0;
            for (i, &v) in row.iter().enumerate() {
                if better(v, row[best]) {
                    best = i;
                }
            }
            best as i64
        };
        let want_hi: Vec<i64> = data.chunks(cols).map(|r| first(r, |a, b| a > b)).collect();
        let want_lo: Vec<i64> = data.chunks(cols).map(|r| first(r, |a, b| a < b)).collect();
        let i64s = |t: &Tensor| t.cast(DType::I64).to_vec::<i64>().unwrap();
        for (target, out) in [("simulator", &sim), ("host", &host)] {
            assert_eq!(i64s(&out[0]), want_hi, "{soc} {target} argmax");
            assert_eq!(i64s(&out[1]), want_lo, "{soc} {target} argmin");
        }
    }
    let mut kernel = Kernel::new("t.argreduce_rows");
    let x = kernel.input("x", Shape::from([4, 8]), DType::F32);
    let y = kernel.output("y", Shape::from([1, 8]), DType::I32);
    let t = kernel.load(&x, [0, 0], [4, 8]).unwrap();
    kernel.store(&y, [0, 0], &t.argmax(0)).unwrap();
    let error = lower_program(
        &kernel.finish().unwrap(),
        "t",
        Soc::Kirin9030,
        &profile("kirin9030"),
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("along axis 0"), "{error}");
}
