//! Simulated time of `std.rms_norm` and `std.softmax` (f16) under three row tilings, to
//! compare how rows per tile are chosen (`pto_op::kernel::rows::row_tiles`):
//!
//! - `one row`: one row per tile (what a 4,096-wide f32 row got from the former fixed
//!   16 KiB row tile);
//! - `packed`: as many rows per tile as fit the UB, whatever the cores (traced as for a
//!   device of one core);
//! - `chosen`: what the kernel picks for the device (as many as fit, then the fewest rows
//!   per tile that keep the fewest waves over the cores).
//!
//! `cargo run -p pto-examples --example row_tiles -- [DEVICE...]` (default: `ascend910b
//! kirin9030`).

use pto_backends::sim::{SimOptions, Simulator};
use pto_op::kernel::ir::MemLevel;
use pto_op::prelude::*;
use pto_op::{OpDef, TensorType, ops};

fn main() -> std::process::ExitCode {
    pto_cli::exit_code(run())
}

/// Simulated microseconds of `op` on `inputs`, traced for `traced` and run on `device`,
/// and the rows per tile of the program.
fn time(
    op: &OpDef,
    inputs: &[TensorType],
    traced: &DeviceProfile,
    device: &DeviceProfile,
) -> Result<(f64, usize, usize), Box<dyn std::error::Error>> {
    let program = op.trace_kernel_for(inputs, &Attributes::default(), traced)?;
    let rows = program
        .program()
        .tiles
        .iter()
        .find(|t| t.level == MemLevel::Ub && t.shape.len() >= 2)
        .map_or(1, |t| t.shape[t.shape.len() - 2]);
    let grid = program.program().grid;
    let report = Simulator::new(device.clone(), SimOptions::default()).time(&program)?;
    Ok((report.seconds * 1e6, rows, grid))
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut devices: Vec<String> = std::env::args().skip(1).collect();
    if devices.is_empty() {
        devices = vec!["ascend910b".into(), "kirin9030".into()];
    }
    let shapes: [[usize; 2]; 4] = [[1, 4096], [8, 4096], [128, 4096], [2048, 4096]];
    println!(
        "| device | op | shape | one row (us) | packed: rows x tiles, us | chosen: rows x tiles, us |"
    );
    println!("|---|---|---|---|---|---|");
    for name in &devices {
        let device = DeviceProfile::resolve(name)?;
        // Traced with a UB that holds no row: one row per tile.
        let mut one_row = device.clone();
        one_row.buffers.ub = 1;
        // Traced for one core: every row that fits, in one tile.
        let mut one_core = device.clone();
        one_core.ai_cores = 1;
        for (op, params) in [(ops::rms_norm::def(), 1), (ops::softmax::def(), 0)] {
            for dims in shapes {
                let ty = |dims: &[usize]| TensorType {
                    shape: Shape::from(dims.to_vec()),
                    dtype: DType::F16,
                };
                let mut inputs = vec![ty(&dims)];
                inputs.extend((0..params).map(|_| ty(&dims[1..])));
                let (single, _, _) = time(op, &inputs, &one_row, &device)?;
                let (packed, packed_rows, packed_grid) = time(op, &inputs, &one_core, &device)?;
                let (chosen, rows, grid) = time(op, &inputs, &device, &device)?;
                println!(
                    "| {name} | {} | f16{dims:?} | {single:.2} | {packed_rows} x {packed_grid}, \
                     {packed:.2} | {rows} x {grid}, {chosen:.2} |",
                    op.name
                );
            }
        }
    }
    Ok(())
}
