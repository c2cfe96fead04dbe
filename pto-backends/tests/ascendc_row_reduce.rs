//! Row reductions lowered to Ascend C as the simulator prices them (pto-isa's A2/A3
//! sequence, `pto_op::kernel::row_reduce`): element-wise folds of the rows' repeats, then
//! one whole reduce per row; the text has those calls and the host implementation agrees
//! with the simulator's reference execution for f16 and f32, rows of one element, less
//! than one repeat, exactly one, one and a bit, a non-multiple and many repeats, more rows
//! than one instruction's 255 repeats, and rows longer than a repeat stride can reach.
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
