//! Row reductions lowered to Ascend C as the simulator prices them (pto-isa's A2/A3
//! sequence, `pto_op::kernel::row_reduce`): element-wise folds of the rows' repeats, then
//! one whole reduce per row; the text has those calls and the host implementation agrees
//! with the simulator's reference execution for f16 and f32, rows of one element, less
//! than one repeat, exactly one, one and a bit, a non-multiple and many repeats, more rows
//! than one instruction's 255 repeats, and rows longer than a repeat stride can reach. On
//! the 910B, pto-isa's group-reduce path for its four f32 shapes per vector core
//! (`BlockReduce*`, folds, then `Brcb` into the padded `[rows, 1]` tile): the lowered
//! calls are the simulator's steps, instruction for instruction, and the host runs them to
//! the reference result.
#![cfg(feature = "device")]

use pto_backends::ascendc::{AscendcHost, Soc, lower_program};
use pto_backends::sim::exec::execute;
use pto_op::kernel::ir::ReduceOp;
use pto_op::kernel::row_reduce::{RowReduce, StepKind};
use pto_op::{DType, DeviceProfile, Kernel, Shape, Tensor, Tile, Tolerance};

fn reduce(x: &Tile, op: ReduceOp) -> Tile {
    match op {
        ReduceOp::Sum => x.sum(-1),
        ReduceOp::Max => x.max_axis(-1),
        ReduceOp::Min => x.min_axis(-1),
        ReduceOp::Mean => x.mean(-1),
    }
}

fn program(rows: usize, cols: usize, dtype: DType, op: ReduceOp) -> pto_op::kernel::ValidProgram {
    let mut k = Kernel::new("test.row_reduce");
    let x = k.input("x", Shape::from([rows, cols]), dtype);
    let y = k.output("y", Shape::from([rows, 1]), dtype);
    k.grid(1).expect("grid");
    let xt = k.load(&x, [0, 0], [rows, cols]).expect("loads");
    k.store(&y, [0, 0], &reduce(&xt, op)).expect("stores");
    k.finish().expect("a program")
}

#[test]
fn row_reductions_fold_first_and_match_the_simulator_on_the_host() {
    let host = AscendcHost::on(None);
    // (rows, cols): 1 element, < 1 repeat, exactly one (f16: 128, f32: 64), between one
    // and two, a non-multiple, many, 260 rows, 2100 f32 (263 blocks: past the uint8 repeat
    // stride, so one row at a time).
    let shapes: [(usize, usize); 9] = [
        (4, 1),
        (5, 40),
        (3, 64),
        (3, 128),
        (6, 100),
        (7, 300),
        (8, 1024),
        (260, 16),
        (2, 2100),
    ];
    // Every shape in f32 on Kirin, the four reductions in turn; the shapes around the
    // repeat boundaries and the batch limits in f16; two on the 910B. (Each case compiles
    // a C++ program: a few seconds each.)
    let mut cases = Vec::new();
    for (i, shape) in shapes.iter().enumerate() {
        cases.push((
            Soc::Kirin9030,
            "kirin9030",
            DType::F32,
            *shape,
            ReduceOp::ALL[i % 4],
        ));
    }
    for (i, shape) in [shapes[0], shapes[3], shapes[5], shapes[6], shapes[7]]
        .into_iter()
        .enumerate()
    {
        cases.push((
            Soc::Kirin9030,
            "kirin9030",
            DType::F16,
            shape,
            ReduceOp::ALL[(i + 1) % 4],
        ));
    }
    cases.push((
        Soc::Ascend910B,
        "ascend910b",
        DType::F32,
        shapes[4],
        ReduceOp::Sum,
    ));
    cases.push((
        Soc::Ascend910B,
        "ascend910b",
        DType::F16,
        shapes[6],
        ReduceOp::Max,
    ));
    for (soc, name, dtype, (rows, cols), op) in cases {
        let profile = DeviceProfile::builtin(name).expect("profile");
        let what = format!("{name} {dtype} [{rows}, {cols}] {}", op.name());
        let p = program(rows, cols, dtype, op);
        let kernel =
            lower_program(&p, "x", soc, &profile).unwrap_or_else(|e| panic!("{what}: {e}"));
        let src = &kernel.kernel_source.clone();
        // The calls of the general path: as many folds as the plan has.
        let batch = if cols.next_multiple_of(16) * dtype.size_bytes() / 32 > 255 {
            1
        } else {
            rows.min(255)
        };
        let plan = RowReduce::plan(op, dtype, batch, cols, 256, false);
        let count = |k| plan.steps.iter().filter(|s| s.kind == k).count();
        let (fold, whole) = match op {
            ReduceOp::Sum | ReduceOp::Mean => ("Add(", "WholeReduceSum<"),
            ReduceOp::Max => ("Max(", "WholeReduceMax<"),
            ReduceOp::Min => ("Min(", "WholeReduceMin<"),
        };
        assert_eq!(src.matches(whole).count(), 1, "{what}:\n{src}");
        let folds = src
            .lines()
            .filter(|l| l.trim().starts_with(&format!("{fold}work")))
            .count();
        assert_eq!(folds, count(StepKind::Fold), "{what}:\n{src}");
        assert_eq!(
            src.contains("DataCopy(work"),
            count(StepKind::Copy) > 0,
            "{what}:\n{src}"
        );
        assert!(
            !src.lines().any(|l| l.trim().starts_with("ReduceSum<")),
            "{what}:\n{src}"
        );
        let build = host
            .compile(kernel, &profile)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let x = Tensor::random([rows, cols], dtype, 7);
        let actual = host
            .run(&build, &[&x])
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let expected = execute(&p, &[&x]).expect("simulates");
        // f16 folds round to f16 at every step, as the device does.
        let tolerance = match dtype {
            DType::F16 => Tolerance::new(3e-2, 1e-2),
            _ => Tolerance::new(1e-4, 1e-5),
        };
        let comparison = actual[0]
            .compare(&expected[0], tolerance)
            .expect("comparable");
        assert!(comparison.passed(), "{what}: {comparison}\n{src}");
    }
}

/// The text of one fold-first reduction, line by line: 64 x 256 f32 row max on Kirin is
/// three `Max` folds over the 64 rows into the work buffer (the first from the row's first
/// two repeats), then one `WholeReduceMax` of one repeat per row.
#[test]
fn the_lowered_text_of_a_row_max() {
    let profile = DeviceProfile::builtin("kirin9030").expect("profile");
    let p = program(64, 256, DType::F32, ReduceOp::Max);
    let kernel = lower_program(&p, "x", Soc::Kirin9030, &profile).expect("lowers");
    let lines: Vec<&str> = kernel
        .kernel_source
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("Max(") || l.starts_with("WholeReduce"))
        .collect();
    let x = lines
        .first()
        .and_then(|l| l.split(", ").nth(1))
        .expect("a fold")
        .to_owned();
    let work = lines[0]
        .trim_start_matches("Max(")
        .split(',')
        .next()
        .expect("a work buffer")
        .to_owned();
    // Rows of 256 f32 are 1024 bytes: 32 blocks between repeats of consecutive rows.
    assert_eq!(
        lines,
        [
            format!("Max({work}, {x}, {x}[64], 64, 64, BinaryRepeatParams{{1, 1, 1, 8, 32, 32}});"),
            format!(
                "Max({work}, {work}, {x}[128], 64, 64, BinaryRepeatParams{{1, 1, 1, 8, 8, 32}});"
            ),
            format!(
                "Max({work}, {work}, {x}[192], 64, 64, BinaryRepeatParams{{1, 1, 1, 8, 8, 32}});"
            ),
            format!(
                "WholeReduceMax<float>({}, {work}, 64, 64, 16, 1, 8, ReduceOrder::ORDER_ONLY_VALUE);",
                lines[3].split(['(', ',']).nth(1).expect("dst").trim()
            ),
        ]
    );
    // The work buffer holds one repeat (256 bytes) per row.
    assert!(
        kernel
            .kernel_source
            .contains(&format!("pipe.InitBuffer(reduceWorkBuf, {});", 64 * 256)),
        "{}",
        kernel.kernel_source
    );
}

/// The lowering's UB check counts the work buffer of one repeat per row: 64 x 448 f32 and
/// its result fit kirin9030's UB without it (the former work buffer was one row, 1792
/// bytes), not with its 16 KiB, and the error names it.
#[test]
fn the_work_buffer_of_a_row_reduction_can_overflow_ub_and_is_named() {
    let profile = DeviceProfile::builtin("kirin9030").expect("profile");
    let err = lower_program(
        &program(64, 448, DType::F32, ReduceOp::Sum),
        "x",
        Soc::Kirin9030,
        &profile,
    )
    .expect_err("does not fit")
    .to_string();
    assert!(
        err.contains("UB") && err.contains("reduceWorkBuf 16384") && err.contains("120832"),
        "{err}"
    );
    lower_program(
        &program(64, 384, DType::F32, ReduceOp::Sum),
        "x",
        Soc::Kirin9030,
        &profile,
    )
    .expect("64 x 384 fits with its work buffer");
}

/// A mix kernel on the 910B whose vector side reduces `2 * rows` rows of `cols` (so each
/// of the two vector cores reduces `rows`, as the simulator shares them): `y = op(x)` over
/// the last axis, and beside it a small matmul (`c = a @ b`, handed to the vector side and
/// stored) that makes it a mix kernel.
fn mix_program(
    rows: usize,
    cols: usize,
    dtype: DType,
    op: ReduceOp,
) -> pto_op::kernel::ValidProgram {
    let profile = DeviceProfile::builtin("ascend910b").expect("profile");
    let mut k = Kernel::new("test.row_reduce_mix").with_buffers(profile.buffers);
    let a = k.input("a", Shape::from([2 * rows, 16]), DType::F16);
    let b = k.input("b", Shape::from([16, 16]), DType::F16);
    let x = k.input("x", Shape::from([2 * rows, cols]), dtype);
    let c = k.output("c", Shape::from([2 * rows, 16]), DType::F32);
    let y = k.output("y", Shape::from([2 * rows, 1]), dtype);
    k.grid(1).expect("grid");
    let a1 = k.load_l1(&a, [0, 0], [2 * rows, 16]).expect("a");
    let b1 = k.load_l1(&b, [0, 0], [16, 16]).expect("b");
    let ab = k
        .matmul(&a1.to_l0a(), &b1.to_l0b(), None, false)
        .expect("matmul");
    k.store(&c, [0, 0], &ab.to_ub(DType::F32))
        .expect("stores c");
    let xt = k.load(&x, [0, 0], [2 * rows, cols]).expect("loads x");
    k.store(&y, [0, 0], &reduce(&xt, op)).expect("stores y");
    k.finish().expect("a program")
}

/// The row reduction's instructions in a lowered kernel's text, in order: each call's step
/// kind and repeats (`None` for the mean's `Muls`, whose count is the padded result's).
fn lowered_steps(src: &str, op: ReduceOp) -> Vec<(StepKind, Option<usize>)> {
    let fold = match op {
        ReduceOp::Sum | ReduceOp::Mean => "Add(work",
        ReduceOp::Max => "Max(work",
        ReduceOp::Min => "Min(work",
    };
    let arg = |line: &str, i: usize| -> usize {
        let inner = &line[line.find('(').expect("a call") + 1..];
        inner
            .split(", ")
            .nth(i)
            .and_then(|a| a.trim().parse().ok())
            .unwrap_or_else(|| panic!("argument {i} of `{line}` is not a count"))
    };
    let mut steps = Vec::new();
    for line in src.lines().map(str::trim) {
        if line.starts_with("BlockReduce") {
            steps.push((StepKind::GroupReduce, Some(arg(line, 2))));
        } else if line.starts_with("WholeReduce") {
            steps.push((StepKind::Reduce, Some(arg(line, 3))));
        } else if line.starts_with(fold) {
            steps.push((StepKind::Fold, Some(arg(line, 4))));
        } else if line.starts_with("Brcb(") {
            steps.push((StepKind::Brcb, Some(arg(line, 2))));
        } else if line.starts_with("DataCopy(work") {
            let n = line
                .split("static_cast<uint16_t>(")
                .nth(1)
                .and_then(|r| r.split(')').next())
                .and_then(|n| n.parse().ok())
                .expect("a copy's rows");
            steps.push((StepKind::Copy, Some(n)));
        } else if line.starts_with("Muls(") {
            steps.push((StepKind::Scale, None));
        }
    }
    steps
}

/// On the 910B the lowering emits the instructions the simulator prices, step for step:
/// pto-isa's group-reduce path for the four f32 shapes per vector core (64 x 128, 32 x 256,
/// 16 x 512, 8 x 1024: `BlockReduce*`, the folds, then `Brcb` of the packed values into
/// the padded `[rows, 1]` tile), for sum, max, min and mean, the general path elsewhere
/// (rows not a multiple of 8, masked tails, f16, other f32 shapes); and the host runs each
/// to the simulator's reference result.
#[test]
fn the_910b_lowering_emits_the_simulators_row_reduction_and_runs_it_on_the_host() {
    use pto_op::kernel::ir::Inst;
    let profile = DeviceProfile::builtin("ascend910b").expect("profile");
    let host = AscendcHost::on(Some(&profile));
    let mut cases = Vec::new();
    for (i, (rows, cols)) in pto_op::kernel::row_reduce::GROUP_SHAPES
        .into_iter()
        .enumerate()
    {
        for op in ReduceOp::ALL {
            // Every op on 64 x 128; sum, max and one more on the others.
            if rows == 64
                || matches!(op, ReduceOp::Sum | ReduceOp::Max)
                || op == ReduceOp::ALL[i % 4]
            {
                cases.push((rows, cols, DType::F32, op, true));
            }
        }
    }
    for (rows, cols, dtype, op) in [
        (8, 130, DType::F32, ReduceOp::Sum),   // a masked tail
        (16, 1024, DType::F32, ReduceOp::Max), // another row count of a group length
        (24, 256, DType::F32, ReduceOp::Min),  // a multiple of 8, not a group shape
        (64, 128, DType::F16, ReduceOp::Sum),  // a group shape in f16
    ] {
        cases.push((rows, cols, dtype, op, false));
    }
    for (rows, cols, dtype, op, group) in cases {
        let what = format!(
            "ascend910b {dtype} [{rows}, {cols}] per vector core, {}",
            op.name()
        );
        let p = mix_program(rows, cols, dtype, op);
        let inst = p
            .program()
            .body
            .iter()
            .find(|i| matches!(i, Inst::Reduce { .. }))
            .expect("a reduce");
        let sim = RowReduce::of(p.program(), inst, &profile).expect("a row reduction");
        assert_eq!(sim.group, group, "{what}");
        assert_eq!((sim.rows, sim.cols), (rows, cols), "{what}");
        let kernel = lower_program(&p, "x", Soc::Ascend910B, &profile)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let src = kernel.kernel_source.clone();
        let priced: Vec<_> = sim
            .steps
            .iter()
            .map(|s| (s.kind, (s.kind != StepKind::Scale).then_some(s.repeats)))
            .collect();
        assert_eq!(lowered_steps(&src, op), priced, "{what}:\n{src}");
        // The work buffer is the plan's tmp tile (none without one).
        assert_eq!(
            src.contains(&format!(
                "pipe.InitBuffer(reduceWorkBuf, {});",
                sim.tmp_bytes
            )),
            sim.tmp_bytes > 0,
            "{what}: {} bytes:\n{src}",
            sim.tmp_bytes
        );
        assert_eq!(src.contains("reduceWorkBuf"), sim.tmp_bytes > 0, "{what}");
        let build = host
            .compile(kernel, &profile)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let a = Tensor::random([2 * rows, 16], DType::F16, 3);
        let b = Tensor::random([16, 16], DType::F16, 4);
        let x = Tensor::random([2 * rows, cols], dtype, 5);
        let actual = host
            .run(&build, &[&a, &b, &x])
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let expected = execute(&p, &[&a, &b, &x]).expect("simulates");
        let tolerance = match dtype {
            DType::F16 => Tolerance::new(3e-2, 1e-2),
            _ => Tolerance::new(1e-4, 1e-5),
        };
        for (i, name) in ["c", "y"].iter().enumerate() {
            let comparison = actual[i]
                .compare(&expected[i], tolerance)
                .expect("comparable");
            assert!(comparison.passed(), "{what}: {name}: {comparison}\n{src}");
        }
    }
}

/// Row counts a mix kernel cannot share between the vector cores (its cube tiles' rows
/// are multiples of 16, its halves whole blocks) are a vector-only kernel's: the lowering
/// decides with the same rule ([`RowReduce::plan`] with the profile's group reduces) on
/// the rows it reduces, rows not a multiple of 8 and masked tails take the general path,
/// and the host agrees with the simulator's reference.
#[test]
fn odd_rows_on_the_910b_take_the_general_path_by_the_same_rule() {
    let profile = DeviceProfile::builtin("ascend910b").expect("profile");
    let host = AscendcHost::on(Some(&profile));
    for (rows, cols, op) in [
        (7, 130, ReduceOp::Sum),
        (5, 40, ReduceOp::Mean),
        (13, 1024, ReduceOp::Max),
        (9, 128, ReduceOp::Min),
    ] {
        let what = format!("ascend910b f32 [{rows}, {cols}] {}", op.name());
        let p = program(rows, cols, DType::F32, op);
        let group = RowReduce::group_priced(&profile, op, DType::F32);
        assert!(group, "{what}: the 910B prices group reduces");
        let plan = RowReduce::plan(op, DType::F32, rows, cols, 256, group);
        assert!(!plan.group, "{what}");
        let kernel = lower_program(&p, "x", Soc::Ascend910B, &profile)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let src = kernel.kernel_source.clone();
        let planned: Vec<_> = plan
            .steps
            .iter()
            .map(|s| (s.kind, (s.kind != StepKind::Scale).then_some(s.repeats)))
            .collect();
        assert_eq!(lowered_steps(&src, op), planned, "{what}:\n{src}");
        let build = host
            .compile(kernel, &profile)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let x = Tensor::random([rows, cols], DType::F32, 9);
        let actual = host
            .run(&build, &[&x])
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let expected = execute(&p, &[&x]).expect("simulates");
        let comparison = actual[0]
            .compare(&expected[0], Tolerance::new(1e-4, 1e-5))
            .expect("comparable");
        assert!(comparison.passed(), "{what}: {comparison}\n{src}");
    }
}

/// The text of one group-reduce path: 64 x 128 f32 row max per vector core on the 910B is
/// pto-isa's `ReduceOptFP32_64x128` (128 repeats of `BlockReduceMax` into the work
/// buffer, a fold of each row's two halves, 8 repeats of `BlockReduceMax` into the packed
/// values past the first 2 KiB), then `Brcb` of the 64 packed values into the `[64, 1]`
/// tile's rows (16 f32 = two blocks apart).
#[test]
fn the_lowered_text_of_a_group_reduce() {
    let profile = DeviceProfile::builtin("ascend910b").expect("profile");
    let p = mix_program(64, 128, DType::F32, ReduceOp::Max);
    let kernel = lower_program(&p, "x", Soc::Ascend910B, &profile).expect("lowers");
    let lines: Vec<&str> = kernel
        .kernel_source
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("BlockReduce") || l.starts_with("Max(") || l.starts_with("Brcb("))
        .collect();
    let work = lines
        .first()
        .and_then(|l| l.split(['(', ',']).nth(1))
        .expect("a work buffer")
        .to_owned();
    let x = lines[0].split(", ").nth(1).expect("the source").to_owned();
    let y = lines
        .last()
        .and_then(|l| l.split(['(', ',']).nth(1))
        .expect("the result")
        .to_owned();
    assert_eq!(
        lines,
        [
            format!("BlockReduceMax<float>({work}, {x}, 128, 64, 1, 1, 8);"),
            format!(
                "Max({work}, {work}, {work}[8], 64, 8, BinaryRepeatParams{{1, 2, 2, 8, 16, 16}});"
            ),
            format!("BlockReduceMax<float>({work}[512], {work}, 8, 64, 1, 1, 8);"),
            format!("Brcb({y}, {work}[512], 8, BrcbRepeatParams(2, 16));"),
        ],
        "{}",
        kernel.kernel_source
    );
    assert!(
        kernel
            .kernel_source
            .contains("pipe.InitBuffer(reduceWorkBuf, 4096);")
    );
}

/// A mean's scaling is priced as the lowering issues it: one `Muls` over the padded
/// `[rows, 1]` result, a row of `UB_ROW_ALIGN_ELEMS` elements per value (not the `rows`
/// values packed), on every SoC, in f16 and f32, for row counts on and off a repeat.
#[test]
fn a_mean_s_scaling_is_priced_over_the_tile_the_lowering_scales() {
    use pto_op::kernel::row_reduce::UB_ROW_ALIGN_ELEMS;
    for (soc, name) in [
        (Soc::Kirin9030, "kirin9030"),
        (Soc::KirinX90, "kirinx90"),
        (Soc::Ascend910B, "ascend910b"),
    ] {
        let profile = DeviceProfile::builtin(name).expect("profile");
        let cores = match profile.cube_vector {
            pto_op::device::CubeVector::Split => profile.vector_cores.max(1) as usize,
            pto_op::device::CubeVector::Coupled => 1,
        };
        for dtype in [DType::F16, DType::F32] {
            for rows in [1, 3, 16, 64, 100] {
                let what = format!("{name} {dtype} mean of [{rows}, 40]");
                let p = program(rows, 40, dtype, ReduceOp::Mean);
                let kernel =
                    lower_program(&p, "x", soc, &profile).unwrap_or_else(|e| panic!("{what}: {e}"));
                let src = &kernel.kernel_source;
                // The scaling: the one `Muls` after the reduce, its count the last argument.
                let muls: Vec<usize> = src
                    .lines()
                    .map(str::trim)
                    .filter(|l| l.starts_with("Muls("))
                    .map(|l| {
                        let count = l.trim_end_matches(");").rsplit(", ").next().unwrap();
                        count.parse().unwrap_or_else(|e| panic!("{what}: {l}: {e}"))
                    })
                    .collect();
                assert_eq!(muls.len(), 1, "{what}:\n{src}");
                let per_row = muls[0] / rows;
                assert_eq!(per_row * rows, muls[0], "{what}: {}", muls[0]);
                assert_eq!(per_row, UB_ROW_ALIGN_ELEMS, "{what}");
                // The simulator's step, per vector core: its share of the rows, its repeat.
                let reduce = p
                    .program()
                    .body
                    .iter()
                    .find_map(|inst| RowReduce::of(p.program(), inst, &profile))
                    .expect("a row reduction");
                let scale = reduce.steps.last().expect("steps");
                assert_eq!(scale.kind, StepKind::Scale, "{what}");
                let repeat_bytes = reduce.elems_per_repeat * dtype.size_bytes();
                let issued = rows.div_ceil(cores) * per_row * dtype.size_bytes();
                assert_eq!(
                    scale.repeats,
                    issued.div_ceil(repeat_bytes),
                    "{what}: the lowering scales {} elements",
                    muls[0]
                );
            }
        }
    }
}
