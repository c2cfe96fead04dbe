//! The row tiles of the row kernels follow each kernel's own working set.
//!
//! Each kernel that tiles with `pto_op::kernel::rows::row_tiles` states next to it what it
//! keeps in UB (`LIVE`, a `RowLive`), and its tiles hold as many rows as that allows on the
//! device it is traced for. Here every such kernel is traced on every built-in device, on
//! shapes from one row per tile to many, in f32 and f16, and
//!
//! - its grid is the one its stated count gives (the kernel passes its own `LIVE`);
//! - the simulator's buffer plan peaks within the bytes the tiles were sized for
//!   (`RowLive::bytes`), and with the feature `device` so does the Ascend C lowering of
//!   the same program (queues, computed tiles and temporaries);
//! - with the feature `device`, some case needs more than one tile fewer (the count does not
//!   under-fill the unified buffer).
//!
//! And a long row's reduction is amortized: a `[2048, 4096]` std.rms_norm on the 910B holds
//! more than one row per tile, so each fold of its row reductions serves several rows.

mod common;
#[cfg(feature = "device")]
use common::ascendc_ub;

use pto_op::kernel::Kernel;
use pto_op::kernel::ir::MemLevel;
use pto_op::kernel::rows::{RowLive, row_tiles};
use pto_op::{Attributes, DType, DeviceProfile, OpDef, Shape, TensorType, ops};

/// A row kernel to check: its def, its stated working set, and its inputs after `x` (the
/// per-column params, `[cols]`).
struct Case {
    def: &'static OpDef,
    live: RowLive,
    params: usize,
}

/// Every kernel of the workspace that uses `row_tiles`.
fn cases() -> Vec<Case> {
    let case = |def, live, params| Case { def, live, params };
    vec![
        case(ops::rms_norm::def(), ops::rms_norm::LIVE, 1),
        case(ops::layer_norm::def(), ops::layer_norm::LIVE, 2),
        case(ops::softmax::def(), ops::softmax::LIVE, 0),
        case(
            pto_examples::rms_norm::def(),
            pto_examples::rms_norm::LIVE,
            1,
        ),
        case(pto_examples::softmax::def(), pto_examples::softmax::LIVE, 0),
        case(
            pto_examples::gelu_affine::def(),
            pto_examples::gelu_affine::LIVE,
            0,
        ),
        case(my_ops::l2_normalize::def(), my_ops::l2_normalize::LIVE, 0),
    ]
}

/// std.rms_norm's stated working set: five tiles of the rows and `gamma` (the figure
/// `rows::row_tiles`'s example sizes for; pto-kernel's doctest cannot name the std op).
#[test]
fn rms_norm_keeps_five_row_tiles_and_gamma() {
    assert_eq!(
        ops::rms_norm::LIVE,
        RowLive {
            tiles: 5,
            params: 1
        }
    );
}

/// Shapes from one row of 8,192 per tile to hundreds of short rows, one with a leading axis.
const SHAPES: &[&[usize]] = &[
    &[2, 8192],
    &[64, 4096],
    &[300, 512],
    &[3, 50, 1000],
    &[2048, 64],
];

/// The tiles `row_tiles` gives `dims` of `dtype` with `live` on `profile`: (grid, rows).
fn expected_tiles(
    profile: &DeviceProfile,
    dims: &[usize],
    dtype: DType,
    live: RowLive,
) -> (usize, usize) {
    let mut k = Kernel::new("probe")
        .with_buffers(profile.buffers)
        .with_core_count(profile.ai_cores as usize);
    let x = k.input("x", Shape::from(dims.to_vec()), dtype);
    let tiles = row_tiles(&mut k, &x, live).expect("row tiles of a non-empty input");
    (tiles.grid, tiles.shape[tiles.shape.len() - 2])
}

#[test]
fn every_row_kernel_fits_the_ub_its_row_tiles_were_sized_for() {
    let mut failures = Vec::new();
    for case in cases() {
        let name = case.def.name;
        // The most UB any case needs, in row tiles beyond the params and per-row values.
        let mut most_tiles: f64 = 0.0;
        for device in DeviceProfile::builtin_names() {
            let profile = DeviceProfile::builtin(device).unwrap();
            let ub = profile.buffers.get(MemLevel::Ub).unwrap();
            for &dims in SHAPES {
                for dtype in [DType::F32, DType::F16] {
                    let at = format!("{name} {dtype}{dims:?} on {device}");
                    let cols = dims[dims.len() - 1];
                    let mut inputs = vec![TensorType {
                        shape: Shape::from(dims.to_vec()),
                        dtype,
                    }];
                    inputs.extend((0..case.params).map(|_| TensorType {
                        shape: Shape::from([cols]),
                        dtype,
                    }));
                    let program = case
                        .def
                        .trace_kernel_for(&inputs, &Attributes::default(), &profile)
                        .unwrap_or_else(|e| panic!("{at}: {e}"));

                    let (grid, rows) = expected_tiles(&profile, dims, dtype, case.live);
                    if program.program().grid != grid {
                        failures.push(format!(
                            "{at}: grid {}, but its stated working set gives {grid} tiles of \
                             {rows} rows",
                            program.program().grid
                        ));
                        continue;
                    }
                    let assumed = case.live.bytes(rows, cols) as u64;
                    let tile_bytes = (rows * cols * 4) as u64;
                    // What the row tiles of a case hold: its need without the params and
                    // per-row values, in tiles.
                    let in_tiles = |bytes: u64| {
                        let rest = RowLive {
                            tiles: 0,
                            ..case.live
                        }
                        .bytes(rows, cols) as u64;
                        bytes.saturating_sub(rest) as f64 / tile_bytes as f64
                    };
                    if assumed > ub && rows > 1 {
                        failures.push(format!("{at}: {rows} rows sized over the UB"));
                    }
                    if assumed > ub {
                        // One row over the UB: the kernel does not cover it.
                        println!("{at}: one row needs {assumed} B, over the UB: skipped");
                        continue;
                    }

                    let sim = match pto_backends::sim::memory::plan(&program, &profile, true) {
                        Ok(plan) => plan.peak_bytes[&MemLevel::Ub],
                        Err(e) => {
                            failures.push(format!("{at}: the simulator refuses it: {e}"));
                            continue;
                        }
                    };
                    println!(
                        "{at}: {grid} tiles of {rows} rows, assumed {assumed} B, sim peak {sim} B \
                         ({:.2} tiles)",
                        in_tiles(sim)
                    );
                    if sim > assumed {
                        failures.push(format!(
                            "{at}: the simulator's buffer plan peaks at {sim} B of UB, over the \
                             {assumed} B its {rows}-row tiles were sized for"
                        ));
                    }
                    most_tiles = most_tiles.max(in_tiles(sim));

                    #[cfg(feature = "device")]
                    match ascendc_ub(&program, &profile) {
                        Err(e) if e.contains("is not supported on") => {}
                        Err(e) => failures.push(format!("{at}: Ascend C lowering: {e}")),
                        Ok(bytes) => {
                            println!("{at}: Ascend C UB {bytes} B ({:.2} tiles)", in_tiles(bytes));
                            most_tiles = most_tiles.max(in_tiles(bytes));
                            if bytes > assumed {
                                failures.push(format!(
                                    "{at}: the Ascend C lowering reserves {bytes} B of UB, over \
                                     the {assumed} B its {rows}-row tiles were sized for"
                                ));
                            }
                        }
                    }
                }
            }
        }
        // Only the lowering's count is complete (the simulator keeps no queues): the
        // tightness of the stated number is checked with it.
        if cfg!(feature = "device") && most_tiles <= (case.live.tiles - 1) as f64 {
            failures.push(format!(
                "{name}: states {} live row tiles, but no case needs more than \
                 {most_tiles:.2}: its tiles hold fewer rows than the UB allows",
                case.live.tiles
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The row reduction of a `[2048, 4096]` f16 std.rms_norm (the 7B decoder's) is amortized
/// over the rows of its tile wherever two rows fit: on every built-in device whose UB holds
/// the kernel's working set for two rows, a tile holds at least two, and the reduction's
/// instructions (folds, then the reduce) per row of the tile are at most half of a one-row
/// tile's (they were all of them with the former fixed 16 KiB row tiles).
#[test]
fn a_long_row_reduction_is_shared_by_the_rows_of_a_tile_where_they_fit() {
    use pto_op::kernel::row_reduce::{RowReduce, StepKind};
    let (rows, cols) = (2048, 4096);
    let inputs = [
        TensorType {
            shape: Shape::from([rows, cols]),
            dtype: DType::F16,
        },
        TensorType {
            shape: Shape::from([cols]),
            dtype: DType::F16,
        },
    ];
    let mut amortized = 0;
    for device in DeviceProfile::builtin_names() {
        let profile = DeviceProfile::builtin(device).unwrap();
        let program = ops::rms_norm::def()
            .trace_kernel_for(&inputs, &Attributes::default(), &profile)
            .unwrap();
        let program = program.program();
        let reduce = program
            .body
            .iter()
            .find_map(|inst| RowReduce::of(program, inst, &profile))
            .expect("std.rms_norm reduces its rows");
        let tile_rows = program
            .tiles
            .iter()
            .find(|t| t.level == MemLevel::Ub && t.shape.len() == 2)
            .map(|t| t.shape[0])
            .expect("a tile of rows");
        assert!(reduce.steps.iter().any(|s| s.kind == StepKind::Fold));
        // The same reduction over one row, on this device.
        let one_row = RowReduce::plan(
            reduce.op,
            reduce.dtype,
            1,
            cols,
            reduce.elems_per_repeat * reduce.dtype.size_bytes(),
            reduce.group,
        );
        let per_row = reduce.steps.len() as f64 / tile_rows as f64;
        println!(
            "{device}: {tile_rows} rows a tile, {} row-reduction instructions per tile ({per_row} \
             a row; one-row tile: {})",
            reduce.steps.len(),
            one_row.steps.len()
        );
        let ub = profile.buffers.get(MemLevel::Ub).unwrap() as usize;
        if ops::rms_norm::LIVE.bytes(2, cols) <= ub {
            assert!(tile_rows >= 2, "{device}: {tile_rows} rows a tile");
            assert!(
                per_row <= one_row.steps.len() as f64 / 2.0,
                "{device}: {per_row} row-reduction instructions a row, one-row tiles take {}",
                one_row.steps.len()
            );
            amortized += 1;
        } else {
            assert_eq!(tile_rows, 1, "{device}: one row of {cols} f32 fills the UB");
        }
    }
    // The 910B profiles (184 KiB of UB) hold two rows.
    assert!(amortized >= 2, "only {amortized} devices hold two rows");
}
