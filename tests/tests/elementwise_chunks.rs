//! The column chunks of the standard element-wise ops follow each op's own working set.
//!
//! Each op states next to its kernel how many row tiles the kernel keeps live in UB
//! (`LIVE_TILES`, see `pto_op::kernel::rows::elementwise_tiles`), and its rows are split into
//! chunks sized for that many. Here every such op is traced on every built-in device at a
//! row length that forces chunks, in each dtype its kernel takes, and
//!
//! - its grid is the one its stated count gives (the kernel passes its own number);
//! - the simulator's buffer plan peaks within the UB the chunks were sized for, and with the
//!   feature `device` so does the Ascend C lowering of the same program (queues, computed
//!   tiles and temporaries);
//! - with the feature `device`, some case needs more than one tile fewer (the count does not
//!   over-split, the waste that made `std.silu` slower in the 7B estimate).

mod common;
#[cfg(feature = "device")]
use common::ascendc_ub;

use pto_op::kernel::ir::MemLevel;
use pto_op::kernel::{Kernel, rows::elementwise_tiles};
use pto_op::{AttrValue, Attributes, DType, DeviceProfile, OpDef, Shape, TensorType, ops};

/// Columns of the traced rows: 195 KiB of f32, over every built-in UB for one tile.
const COLS: usize = 50_000;
/// Rows of the traced inputs.
const ROWS: usize = 2;

const FLOATS: &[DType] = &[DType::F32, DType::F16, DType::BF16];
const ARITHMETIC: &[DType] = &[
    DType::F32,
    DType::F16,
    DType::BF16,
    DType::I8,
    DType::U8,
    DType::I16,
    DType::U16,
    DType::I32,
    DType::I64,
];

/// An element-wise op to check: its def, inputs, params, stated live tiles and dtypes.
struct Case {
    def: &'static OpDef,
    inputs: usize,
    attrs: Attributes,
    live_tiles: usize,
    dtypes: &'static [DType],
}

fn unary(def: &'static OpDef, live_tiles: usize) -> Case {
    Case {
        def,
        inputs: 1,
        attrs: Attributes::default(),
        live_tiles,
        dtypes: FLOATS,
    }
}

fn binary(def: &'static OpDef, live_tiles: usize, dtypes: &'static [DType]) -> Case {
    Case {
        def,
        inputs: 2,
        attrs: Attributes::default(),
        live_tiles,
        dtypes,
    }
}

fn gelu(approximate: &str, live_tiles: usize) -> Case {
    Case {
        attrs: [(
            "approximate".to_owned(),
            AttrValue::String(approximate.to_owned()),
        )]
        .into_iter()
        .collect(),
        ..unary(ops::gelu::def(), live_tiles)
    }
}

/// Every standard op whose kernel uses `elementwise_tiles`.
fn cases() -> Vec<Case> {
    vec![
        binary(ops::add::def(), ops::add::LIVE_TILES, ARITHMETIC),
        binary(ops::sub::def(), ops::sub::LIVE_TILES, ARITHMETIC),
        binary(ops::mul::def(), ops::mul::LIVE_TILES, ARITHMETIC),
        binary(ops::div::def(), ops::div::LIVE_TILES, FLOATS),
        binary(ops::max::def(), ops::max::LIVE_TILES, FLOATS),
        binary(ops::min::def(), ops::min::LIVE_TILES, FLOATS),
        binary(ops::pow::def(), ops::pow::LIVE_TILES, FLOATS),
        unary(ops::relu::def(), ops::relu::LIVE_TILES),
        unary(ops::sigmoid::def(), ops::sigmoid::LIVE_TILES),
        unary(ops::silu::def(), ops::silu::LIVE_TILES),
        unary(ops::exp::def(), ops::exp::LIVE_TILES),
        unary(ops::erf::def(), ops::erf::LIVE_TILES),
        unary(ops::reciprocal::def(), ops::reciprocal::LIVE_TILES),
        unary(ops::neg::def(), ops::neg::LIVE_TILES),
        unary(ops::sqrt::def(), ops::sqrt::LIVE_TILES),
        unary(ops::tanh::def(), ops::tanh::LIVE_TILES),
        gelu("none", ops::gelu::ERF_LIVE_TILES),
        gelu("tanh", ops::gelu::TANH_LIVE_TILES),
    ]
}

#[test]
fn every_elementwise_op_fits_the_ub_its_chunks_were_sized_for() {
    let mut failures = Vec::new();
    for case in cases() {
        let label = match case.attrs.get("approximate") {
            Some(AttrValue::String(form)) => format!("{} ({form})", case.def.name),
            _ => case.def.name.to_owned(),
        };
        // The most UB any case needs, in tiles of its chunk.
        let mut most_tiles: f64 = 0.0;
        for device in DeviceProfile::builtin_names() {
            let profile = DeviceProfile::builtin(device).unwrap();
            for &dtype in case.dtypes {
                let at = format!("{label} {dtype} on {device}");
                let t = TensorType {
                    shape: Shape::from([ROWS, COLS]),
                    dtype,
                };
                let inputs = vec![t; case.inputs];
                let program = case
                    .def
                    .trace_kernel_for(&inputs, &case.attrs, &profile)
                    .unwrap_or_else(|e| panic!("{at}: {e}"));

                // The chunks the stated count gives.
                let mut k = Kernel::new("probe").with_buffers(profile.buffers);
                let y = k.input("y", Shape::from([ROWS, COLS]), dtype);
                let expected = elementwise_tiles(&mut k, &y, case.live_tiles).unwrap();
                let chunk = *expected.shape.last().unwrap();
                let grid = program.program().grid;
                if grid != expected.grid || grid == ROWS {
                    failures.push(format!(
                        "{at}: grid {grid}, but {} live tiles give {} chunks of {chunk} \
                         (more than one per row)",
                        case.live_tiles, expected.grid
                    ));
                    continue;
                }
                let tile_bytes = (chunk * dtype.size_bytes().max(4)) as u64;
                let assumed = case.live_tiles as u64 * tile_bytes;
                let ub = profile.buffers.get(MemLevel::Ub).unwrap();
                assert!(assumed <= ub, "{at}: chunks sized over the UB");

                let sim = match pto_backends::sim::memory::plan(&program, &profile, true) {
                    Ok(plan) => plan.peak_bytes[&MemLevel::Ub],
                    Err(e) => {
                        failures.push(format!("{at}: the simulator refuses it: {e}"));
                        continue;
                    }
                };
                println!(
                    "{at}: {} chunks of {chunk}, sim peak {sim} B ({:.2} tiles)",
                    grid / ROWS,
                    sim as f64 / tile_bytes as f64
                );
                if sim > assumed {
                    failures.push(format!(
                        "{at}: the simulator's buffer plan peaks at {sim} B of UB, over the \
                         {assumed} B ({} tiles of {tile_bytes} B) its chunks were sized for",
                        case.live_tiles
                    ));
                }
                most_tiles = most_tiles.max(sim as f64 / tile_bytes as f64);

                #[cfg(feature = "device")]
                match ascendc_ub(&program, &profile) {
                    Err(e) if e.contains("is not supported on") => {}
                    Err(e) => failures.push(format!("{at}: Ascend C lowering: {e}")),
                    Ok(bytes) => {
                        println!(
                            "{at}: Ascend C UB {bytes} B ({:.2} tiles)",
                            bytes as f64 / tile_bytes as f64
                        );
                        most_tiles = most_tiles.max(bytes as f64 / tile_bytes as f64);
                        if bytes > assumed {
                            failures.push(format!(
                                "{at}: the Ascend C lowering reserves {bytes} B of UB, over \
                                 the {assumed} B ({} tiles of {tile_bytes} B) its chunks \
                                 were sized for",
                                case.live_tiles
                            ));
                        }
                    }
                }
            }
        }
        // Only the lowering's count is complete (the simulator keeps no queues or
        // temporaries): the tightness of the stated number is checked with it.
        if cfg!(feature = "device") && most_tiles <= (case.live_tiles - 1) as f64 {
            failures.push(format!(
                "{label}: states {} live tiles, but no case needs more than {most_tiles:.2}: \
                 its rows split into more chunks than they need",
                case.live_tiles
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
