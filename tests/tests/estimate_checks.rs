//! `pto estimate` and the estimator refuse what compile and the simulator refuse, and keep
//! a kernel's own timing bound under user properties (issue 14, item 4).

use pto_estimator::Estimator;
use pto_estimator::chain::Source;
use pto_estimator::report::ModelReport;
use pto_examples as _;
use pto_op::kernel::buffers::BufferError;
use pto_op::prelude::*;
use pto_op::{DeviceProfile, Model, TensorType};

/// `y = x + 1` with a row kernel, and user properties that claim almost no work.
#[custom_op(name = "test.underclaimed")]
pub mod underclaimed {
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
        let data = x.to_f64_vec();
        let cols = x.dims().last().copied().unwrap_or(1);
        Ok(Tensor::from_f64_fn(x.shape(), x.dtype(), |i| {
            data[i[0] * cols + i[1]] + 1.0
        }))
    }

    #[kernel]
    fn kernel(k: &mut Kernel, x: &Global, y: &Global) -> Result<(), OpError> {
        let (rows, cols) = x.dims2()?;
        k.grid(rows.div_ceil(16))?;
        let r0 = k.program_id() * 16;
        let t = k.load(x, (r0, 0), [16, cols])?;
        k.store(y, (r0, 0), &(t + 1.0))
    }

    #[properties]
    fn properties(_info: &OpInvokeInfo) -> PerformanceProperties {
        // One byte read: the roofline alone would call the op free.
        PerformanceProperties {
            memory_read_bytes: 1,
            ..Default::default()
        }
    }
}

/// `y = x` through one UB tile of the whole input: over the UB of every device for a large
/// input.
#[custom_op(name = "test.whole_in_ub")]
pub mod whole_in_ub {
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
        Ok(x.clone())
    }

    #[kernel]
    fn kernel(k: &mut Kernel, x: &Global, y: &Global) -> Result<(), OpError> {
        let (rows, cols) = x.dims2()?;
        k.grid(1)?;
        let t = k.load(x, (0, 0), [rows, cols])?;
        k.store(y, (0, 0), &t)
    }
}

fn kirin() -> DeviceProfile {
    DeviceProfile::builtin("kirin9030").expect("built-in profile")
}

#[test]
fn user_properties_keep_the_kernels_timing_bound() {
    let device = kirin();
    // Rows of 256 f32: the kernel's 16-row tiles (16 KiB, the load and its sum live
    // together) fit kirin9030's UB, so the kernel is priced as it runs, not as an overflow.
    let t = TensorType {
        shape: Shape::from([256, 256]),
        dtype: DType::F32,
    };
    let info = underclaimed::def()
        .invoke_info(std::slice::from_ref(&t), &Default::default())
        .unwrap();
    let mut estimator = Estimator::linked(&device).unwrap();
    let estimate = estimator.estimate(&info).unwrap();
    assert_eq!(estimate.source, Source::UserProperties);
    let roofline = estimate.roofline.unwrap();
    // The pipe model of the kernel (16 loads, adds and stores of 16 KiB) is the bound.
    let program = underclaimed::def()
        .trace_kernel_for(&[t], &Default::default(), &device)
        .unwrap();
    assert_eq!(pto_op::kernel::buffers::check(&program, &device), Ok(()));
    let pipeline = pto_estimator::pipes::pipeline_seconds(&program, &device).unwrap();
    assert!(pipeline > 1e-6, "{pipeline}");
    assert_eq!(roofline.pipeline_seconds, pipeline);
    assert_eq!(estimate.seconds, pipeline + roofline.static_seconds);
    assert_eq!(estimate.bound, pto_estimator::roofline::Bound::Latency);
}

#[test]
fn a_kernel_over_the_buffers_is_reported_not_priced() {
    let graph = Graph::new();
    let x = graph.input("x", Shape::from([512, 512]), DType::F32);
    let y = whole_in_ub::apply(&x, &whole_in_ub::Params::default()).unwrap();
    graph.output(&y);
    let model = graph.to_model("too_big").unwrap();
    let dir = std::env::temp_dir().join(format!("pto-estimate-checks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("too_big.pto");
    model.save(&path).unwrap();
    let report = pto_cli::run([
        "pto",
        "estimate",
        path.to_str().unwrap(),
        "--device",
        "kirin9030",
    ])
    .unwrap();
    assert!(
        report.contains(
            "kernel over buffers (priced as memory traffic): node 0 `test.whole_in_ub`: the \
             kernel does not fit kirin9030: op `test.whole_in_ub`: inst 0 (load): UB working \
             set 1048576 bytes exceeds the kirin9030 limit of 120832 bytes"
        ),
        "{report}"
    );
    assert!(report.contains("kernel over buffers 0.0"), "{report}");
    // A library user's estimator gives the command's verdict, in the same words.
    let device = kirin();
    let t = TensorType {
        shape: Shape::from([512, 512]),
        dtype: DType::F32,
    };
    let info = whole_in_ub::def()
        .invoke_info(&[t], &Default::default())
        .unwrap();
    let estimate = Estimator::linked(&device).unwrap().estimate(&info).unwrap();
    assert_eq!(estimate.source, Source::Overflow);
    let note = estimate.note.expect("the buffer check's message");
    assert!(report.contains(&note), "{note}\n{report}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_library_users_estimator_reports_a_tile_over_the_buffers() {
    // The estimator checks every traced kernel against the device's buffers itself (the
    // kernel layer's check, the simulator's): no command line, no check to pass in.
    let device = kirin();
    let t = TensorType {
        shape: Shape::from([512, 512]),
        dtype: DType::F32,
    };
    let info = whole_in_ub::def()
        .invoke_info(std::slice::from_ref(&t), &Default::default())
        .unwrap();
    let estimate = Estimator::linked(&device).unwrap().estimate(&info).unwrap();
    assert_eq!(estimate.source, Source::Overflow);
    // Priced as memory traffic: what the call reads and writes, not the kernel.
    assert_eq!(estimate.properties, Some(info.memory_access_properties()));
    assert_eq!(estimate.roofline.unwrap().pipeline_seconds, 0.0);
    // The typed error, as the buffer check gives it, and its message in the note.
    let Some(BufferError::Overflow(overflow)) = &estimate.overflow else {
        panic!("{:?}", estimate.overflow);
    };
    assert_eq!(
        (overflow.buffer.as_str(), overflow.needed, overflow.limit),
        ("UB", 512 * 512 * 4, 120832)
    );
    assert_eq!(
        estimate.note.as_deref(),
        Some(
            format!(
                "the kernel does not fit kirin9030: {}",
                estimate.overflow.as_ref().unwrap()
            )
            .as_str()
        )
    );
    // A model report lists it, as `pto estimate` does.
    let graph = Graph::new();
    let x = graph.input("x", t.shape.clone(), t.dtype);
    graph.output(&whole_in_ub::apply(&x, &whole_in_ub::Params::default()).unwrap());
    let model = graph.to_model("too_big").unwrap();
    let report = ModelReport::of_graph(
        "too_big",
        &model.graph,
        &mut Estimator::linked(&device).unwrap(),
    )
    .unwrap();
    assert_eq!(
        report.overflows,
        [(0, "test.whole_in_ub".to_owned(), estimate.note.unwrap())]
    );
    // An input that fits is priced by its kernel.
    let small = TensorType {
        shape: Shape::from([64, 64]),
        dtype: DType::F32,
    };
    let info = whole_in_ub::def()
        .invoke_info(&[small], &Default::default())
        .unwrap();
    let estimate = Estimator::linked(&device).unwrap().estimate(&info).unwrap();
    assert_eq!(estimate.source, Source::KernelIr);
    assert_eq!(estimate.overflow, None);
}

#[test]
fn a_stale_model_file_is_refused_as_compile_refuses_it() {
    let graph = Graph::new();
    let x = graph.input("x", Shape::from([4, 32]), DType::F32);
    let y = underclaimed::apply(&x, &underclaimed::Params::default()).unwrap();
    graph.output(&y);
    let mut model: Model = graph.to_model("stale").unwrap();
    model.schemas.get_mut("test.underclaimed").unwrap().version = 0;
    let dir = std::env::temp_dir().join(format!("pto-estimate-stale-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("stale.pto");
    model.save(&path).unwrap();
    let file = path.to_str().unwrap();
    let compile = pto_cli::run(["pto", "compile", file])
        .unwrap_err()
        .to_string();
    let estimate = pto_cli::run(["pto", "estimate", file])
        .unwrap_err()
        .to_string();
    assert!(
        compile.contains("changed since the model was built"),
        "{compile}"
    );
    assert_eq!(estimate, compile);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_feed_forward_product_of_the_7b_model_fits_kirin9030_in_column_chunks() {
    // `std.mul` on the LLaMA-7B feed-forward rows: 11,008 f32 columns, a 43 KiB row. The
    // four tiles its kernel states (`ops::mul::LIVE_TILES`: its f16 lowering holds 3.5)
    // exceed kirin9030's 118 KiB UB, so each row runs in two chunks of 5,504 columns;
    // ascend910b's 184 KiB holds the whole row.
    let t = TensorType {
        shape: Shape::from([2048, 11008]),
        dtype: DType::F32,
    };
    for (device, grid) in [("kirin9030", 2 * 2048), ("ascend910b", 2048)] {
        let profile = DeviceProfile::builtin(device).unwrap();
        let program = pto_op::ops::mul::def()
            .trace_kernel_for(&[t.clone(), t.clone()], &Default::default(), &profile)
            .unwrap();
        assert_eq!(program.program().grid, grid, "{device}");
        // The simulator's buffer plan accepts it (it refused the whole-row tiles on Kirin).
        let report = pto_backends::sim::Simulator::new(profile, Default::default())
            .time(&program)
            .unwrap_or_else(|e| panic!("{device}: {e}"));
        assert!(report.seconds > 0.0, "{device}");
    }
}

/// A profile file of kirin9030 with the fields at `pointers` set, written in a scratch
/// directory: its path.
fn edited_profile(
    dir: &std::path::Path,
    file: &str,
    edits: &[(&str, serde_json::Value)],
) -> String {
    let mut profile: serde_json::Value =
        serde_json::from_str(&kirin().to_json().expect("JSON")).expect("a profile");
    for (pointer, value) in edits {
        *profile
            .pointer_mut(pointer)
            .expect("a field of the profile") = value.clone();
    }
    let path = dir.join(file);
    std::fs::write(&path, profile.to_string()).expect("writable");
    path.to_string_lossy().into_owned()
}

/// Before the bounds of issue 31 item 9, `memory_bandwidth: 1e-300` estimated `inf` per
/// node, `clock_hz: 1e-300` printed a 300-digit total, and `buffers.ub: 1` passed compile
/// and failed run: each is refused at load, naming the file, the field, the value and the
/// range; a profile at the edges of the ranges estimates finite times.
#[test]
fn extreme_profiles_are_refused_and_the_edges_estimate_finite_times() {
    let dir = std::env::temp_dir().join(format!("pto-extreme-profiles-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let cases = [
        (
            "/memory_bandwidth",
            serde_json::json!(1e-300),
            "`memory_bandwidth` is 1e-300 bytes per second (at least 1e4 per core, of 1 cores), \
             outside 1e4..=1e15",
        ),
        (
            "/clock_hz",
            serde_json::json!(1e-300),
            "`clock_hz` is 1e-300 Hz, outside 1e6..=1e11",
        ),
        (
            "/buffers/ub",
            serde_json::json!(1),
            "`buffers.ub` is 1 bytes, outside 32..=268435456",
        ),
    ];
    for (index, (pointer, value, expected)) in cases.into_iter().enumerate() {
        let path = edited_profile(&dir, &format!("bad{index}.json"), &[(pointer, value)]);
        for args in [
            &["estimate", "pipeline"][..],
            &["compile", "pipeline", "--target", "sim"],
            &["run", "pipeline", "--target", "sim"],
        ] {
            let args = std::iter::once("pto")
                .chain(args.iter().copied())
                .chain(["--device", path.as_str()]);
            let error = pto_cli::run(args).expect_err("refused").to_string();
            assert!(
                error.contains(&format!("device profile {path}: {expected}")),
                "{pointer}: {error}"
            );
        }
    }
    let edge = edited_profile(
        &dir,
        "edge.json",
        &[
            ("/clock_hz", serde_json::json!(1e6)),
            ("/memory_bandwidth", serde_json::json!(1e4)),
            ("/copy_bytes_per_cycle/gm_to_ub", serde_json::json!(0.01)),
            ("/copy_bytes_per_cycle/ub_to_gm", serde_json::json!(0.01)),
            ("/estimator/memory_efficiency", serde_json::json!(1e-3)),
            ("/estimator/vector_efficiency", serde_json::json!(1e-3)),
        ],
    );
    let device = DeviceProfile::load(std::path::Path::new(&edge)).expect("the edges load");
    let model = pto_op::models::find_builtin("pipeline")
        .expect("the registry is sound")
        .expect("pto-examples registers the model");
    let model = (model.build)().expect("builds");
    let report = ModelReport::of_graph(
        "pipeline",
        &model.graph,
        &mut Estimator::linked(&device).expect("links"),
    )
    .expect("estimates");
    for op in &report.ops {
        assert!(
            op.seconds.is_finite() && op.seconds > 0.0 && op.seconds < 86_400.0,
            "{}: {} s",
            op.op,
            op.seconds
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
