//! The simulated time of a row-wise top-k of `[256, 1024]` f16, k = 8, on a device profile
//! (`kirin9030` unless named): `sorting.top_k` (one `top_k` instruction per tile) against
//! the same top-k as 8 unrolled rounds of max / compare / select / min, at every row count
//! per block program that fits the device's UB.
//!
//! `cargo run -p sorting-ops --example top_k_vs_unrolled [-- device]`

use pto_backends::sim::{Sim, Simulator};
use pto_op::kernel::ValidProgram;
use pto_op::{DType, DeviceProfile, Kernel, OpError, OpParams, Shape, Tensor, Tile};
use sorting_ops::top_k;

const ROWS: usize = 256;
const COLS: usize = 1024;
const K: usize = 8;

/// Each round: the row's max, the first position holding it (indices held in f32), and
/// that position masked to -inf for the next round.
fn unrolled(rows_per_program: usize) -> Result<ValidProgram, OpError> {
    let mut k = Kernel::new("unrolled.top_k");
    let x = k.input("x", Shape::from([ROWS, COLS]), DType::F16);
    let values = k.output("values", Shape::from([ROWS, K]), DType::F16);
    let indices = k.output("indices", Shape::from([ROWS, K]), DType::I32);
    k.grid(ROWS / rows_per_program)?;
    let r0 = k.program_id() * rows_per_program;
    let tile = k.load(&x, (r0, 0), [rows_per_program, COLS])?;
    let position = k.iota([rows_per_program, COLS], -1, 0, DType::F32);
    let mut rest = tile.cast(DType::F32);
    for round in 0..K {
        let max = rest.max_axis(-1);
        let at_max = Tile::select(&rest.eq(&max), &position, f64::from(COLS as u32));
        let first = at_max.min_axis(-1);
        rest = Tile::select(&position.eq(&first), f64::NEG_INFINITY, &rest);
        k.store(&values, (r0, round), &max.cast(DType::F16))?;
        k.store(&indices, (r0, round), &first.cast(DType::I32))?;
    }
    k.finish()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let device = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "kirin9030".to_owned());
    let profile = DeviceProfile::builtin(&device)?;
    let x = Tensor::random([ROWS, COLS], DType::F16, 7);
    let sim = Sim::new(profile.clone());
    let params = top_k::Params { k: K as i64 }.to_attributes();
    let call = sim.call(top_k::def(), &[&x], &params)?;
    println!(
        "{device}: sorting.top_k [{ROWS}, {COLS}] f16, k = {K}: {:.1} us",
        call.report.seconds * 1e6
    );
    let simulator = Simulator::new(profile, Default::default());
    for rows in [1, 2, 4, 8, 16] {
        let program = unrolled(rows)?;
        match simulator.run(&program, &[&x]) {
            Ok(run) => {
                assert_eq!(
                    run.outputs, call.outputs,
                    "the unrolled form computes the same"
                );
                println!(
                    "{device}: unrolled, {rows} row(s) per program: {:.1} us",
                    run.report.seconds * 1e6
                );
            }
            Err(e) => println!("{device}: unrolled, {rows} row(s) per program: does not fit ({e})"),
        }
    }
    Ok(())
}
