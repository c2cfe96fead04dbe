//! `pto_kernel::cube::GemmPlan`: a staged GEMM with a vector epilogue sized for the
//! author's extra tiles fits the device where the plain GEMM tiles do not, spreads its
//! block programs over the cores, and computes `relu(a @ b * scale + bias)` as defined.

use pto_backends::sim::Simulator;
use pto_op::kernel::ValidProgram;
use pto_op::kernel::cube::{ExtraShape, ExtraTiles, GemmPlan, GemmTiles};
use pto_op::{DType, DeviceProfile, Kernel, OpError, Shape, Tensor};

/// `y = relu(a @ b * scale + bias)`: the GEMM's L0C result to UB in f32, a per-column
/// scale and bias (each a `[n]` global loaded as a `[1, tn]` row), then f16.
fn epilogue_gemm(
    profile: &DeviceProfile,
    (m, depth, n): (usize, usize, usize),
    plain: bool,
) -> Result<ValidProgram, OpError> {
    let mut k = Kernel::new("t.gemm_epilogue")
        .with_buffers(profile.buffers)
        .with_core_count(profile.ai_cores as usize);
    let a = k.input("a", Shape::from([m, depth]), DType::F16);
    let b = k.input("b", Shape::from([depth, n]), DType::F16);
    let scale = k.input("scale", Shape::from([n]), DType::F32);
    let bias = k.input("bias", Shape::from([n]), DType::F32);
    let y = k.output("y", Shape::from([m, n]), DType::F16);
    let extra = ExtraTiles::new()
        .ub_tile(ExtraShape::Output, DType::F32)
        .ub_tile(ExtraShape::Output, DType::F16)
        .ub_tile(ExtraShape::Row, DType::F32)
        .ub_tile(ExtraShape::Row, DType::F32);
    let mut plan = GemmPlan::new(&k, &a, &b, DType::F16, &extra)?;
    if plain {
        // What the GEMM helper gave before it knew of the epilogue.
        let t = GemmTiles::for_kernel(&k, 2, 2);
        let bare = GemmPlan::new(&k, &a, &b, DType::F16, &ExtraTiles::new())?;
        plan = GemmPlan {
            tm: t.m,
            tn: t.n,
            grid: m.div_ceil(t.m) * n.div_ceil(t.n),
            col_tiles: n.div_ceil(t.n),
            ..bare
        };
    }
    let (acc, r0, c0) = plan.accumulate(&mut k, &a, &b)?;
    let s = k.load_reshaped(&scale, [c0], [1, plan.tn])?;
    let bi = k.load_reshaped(&bias, [c0], [1, plan.tn])?;
    let out = (acc.to_ub(DType::F32) * &s + &bi).relu().cast(DType::F16);
    k.store(&y, (r0, c0), &out)?;
    k.finish()
}

fn data(len: usize, seed: usize) -> Vec<f32> {
    (0..len)
        .map(|i| (((i * 31 + seed * 17) % 23) as f32 - 11.0) / 8.0)
        .collect()
}

#[test]
fn the_epilogue_gemm_fits_where_the_plain_tiles_do_not_and_computes_its_definition() {
    let profile = DeviceProfile::builtin("kirin9030").unwrap();
    let (m, depth, n) = (96, 160, 200);
    let sim = Simulator::new(profile.clone(), Default::default());
    let (a, b) = (data(m * depth, 1), data(depth * n, 2));
    let (scale, bias) = (data(n, 3), data(n, 4));
    let inputs = [
        Tensor::from_vec([m, depth], a.clone())
            .unwrap()
            .cast(DType::F16),
        Tensor::from_vec([depth, n], b.clone())
            .unwrap()
            .cast(DType::F16),
        Tensor::from_vec([n], scale.clone()).unwrap(),
        Tensor::from_vec([n], bias.clone()).unwrap(),
    ];
    let refs: Vec<&Tensor> = inputs.iter().collect();

    // The plain GEMM tiles (128 x 128 on kirin9030) leave no room for the epilogue.
    let plain = epilogue_gemm(&profile, (m, depth, n), true).unwrap();
    let error = sim.run(&plain, &refs).unwrap_err().to_string();
    assert!(
        error.contains("UB") || error.contains("reserves"),
        "{error}"
    );

    let planned = epilogue_gemm(&profile, (m, depth, n), false).unwrap();
    let run = sim.run(&planned, &refs).expect("the planned tiles fit");
    let got: Vec<f32> = run.outputs[0].to_f32_array().iter().copied().collect();
    // The definition, in f64 from the f16-rounded inputs (exact here: k/8 values).
    let a16: Vec<f32> = inputs[0].to_f32_array().iter().copied().collect();
    let b16: Vec<f32> = inputs[1].to_f32_array().iter().copied().collect();
    for i in 0..m {
        for j in 0..n {
            let dot: f64 = (0..depth)
                .map(|t| f64::from(a16[i * depth + t]) * f64::from(b16[t * n + j]))
                .sum();
            let want = (dot * f64::from(scale[j]) + f64::from(bias[j])).max(0.0);
            let want16 = half::f16::from_f64(want).to_f32();
            assert_eq!(got[i * n + j], want16, "y[{i}, {j}]");
        }
    }
}

#[test]
fn the_plan_spreads_a_small_output_over_the_cores_of_the_910b() {
    let profile = DeviceProfile::builtin("ascend910b").unwrap();
    let (m, depth, n) = (256, 1024, 512);
    let sim = Simulator::new(profile.clone(), Default::default());
    let inputs = [
        Tensor::from_vec([m, depth], data(m * depth, 1))
            .unwrap()
            .cast(DType::F16),
        Tensor::from_vec([depth, n], data(depth * n, 2))
            .unwrap()
            .cast(DType::F16),
        Tensor::from_vec([n], data(n, 3)).unwrap(),
        Tensor::from_vec([n], data(n, 4)).unwrap(),
    ];
    let refs: Vec<&Tensor> = inputs.iter().collect();
    let planned = epilogue_gemm(&profile, (m, depth, n), false).unwrap();
    let plain = epilogue_gemm(&profile, (m, depth, n), true).unwrap();
    assert!(
        planned.grid >= 16 && plain.grid == 4,
        "{} and {}",
        planned.grid,
        plain.grid
    );
    let (fast, slow) = (
        sim.run(&planned, &refs).unwrap(),
        sim.run(&plain, &refs).unwrap(),
    );
    assert_eq!(fast.outputs, slow.outputs, "the same values either way");
    assert!(
        fast.report.seconds < slow.report.seconds,
        "spread {} s, plain {} s",
        fast.report.seconds,
        slow.report.seconds
    );
}
