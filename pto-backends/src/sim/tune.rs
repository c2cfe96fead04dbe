//! Tuning `std.matmul`'s tiling on the simulator: every candidate base tiling
//! ([`GemmTiles::candidates`]) traced for one shape and device, timed, the fastest kept.
//!
//! The kernel traced for a device takes the largest base tiles that fit its buffers
//! ([`GemmTiles::fitting`]); the public tuned kernels choose per shape instead (catlass's
//! msTuner and its `TileShape` / swizzle search, pto-isa's GEMM README's base-block
//! choice), so a smaller tile can win where it puts more blocks on the cores. Each
//! candidate is timed as [`Simulator::time`] times a kernel, launch included, and the
//! table says which the kernel traced for the device would take.

use std::fmt;

use pto_op::kernel::cube::{GemmTiles, tiled_matmul_with};
use pto_op::kernel::ir::Pipe;
use pto_op::kernel::vector_split::split_vector_cores;
use pto_op::{DType, DeviceProfile, Kernel, OpError, Shape};
use serde::Serialize;

use super::{SimOptions, SimReport, Simulator};

/// The op the tuner tunes.
pub const MATMUL: &str = "std.matmul";

/// One candidate tiling and its simulated time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    /// Output rows per block program (`baseM`).
    pub m: usize,
    /// Output columns per block program (`baseN`).
    pub n: usize,
    /// Elements of K per cube step (`baseK`).
    pub k: usize,
    /// K-steps staged in L1 per load.
    pub steps: usize,
    /// Block programs of the traced kernel.
    pub blocks: usize,
    /// Whether the kernel traced for the device takes this tiling.
    pub default: bool,
    /// The simulator's report of the candidate.
    pub report: SimReport,
}

impl Candidate {
    /// The candidate's simulated time with its launch, in seconds.
    pub fn seconds(&self) -> f64 {
        self.report.total_seconds()
    }
}

/// The tuning of one `std.matmul` shape on one device: every candidate, fastest first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MatmulTuning {
    /// The device profile's name.
    pub device: String,
    /// `[m, k, n]`: `a [m, k] @ b [k, n]`.
    pub shape: [usize; 3],
    /// The element type of `a`, `b` and `y`.
    pub dtype: DType,
    /// The candidates, fastest first (ties in candidate order, the default first).
    pub candidates: Vec<Candidate>,
}

impl MatmulTuning {
    /// The fastest candidate.
    pub fn chosen(&self) -> &Candidate {
        &self.candidates[0]
    }

    /// The tiling the kernel traced for the device takes.
    pub fn default_tiling(&self) -> Option<&Candidate> {
        self.candidates.iter().find(|c| c.default)
    }
}

/// Traces `std.matmul`'s kernel for `a [m, k] @ b [k, n]` of `dtype` on `profile` with each
/// candidate tiling and times it on the simulator.
///
/// # Errors
///
/// [`OpError`] naming `std.matmul` when the shape has a zero dim, a candidate does not
/// trace or the simulator refuses it (a buffer overflow, a dtype the cube does not take).
pub fn tune_matmul(
    profile: &DeviceProfile,
    [m, k, n]: [usize; 3],
    dtype: DType,
) -> Result<MatmulTuning, OpError> {
    if m == 0 || k == 0 || n == 0 {
        return Err(OpError::Unsupported {
            op: MATMUL.to_owned(),
            message: format!("tuning needs m, k and n above 0, got {m}x{k}x{n}"),
        });
    }
    let kernel = || {
        Kernel::new(MATMUL)
            .with_core_count(profile.ai_cores as usize)
            .with_buffers(profile.buffers)
            .with_vector_cores(split_vector_cores(profile))
    };
    let bytes = dtype.size_bytes();
    let default = GemmTiles::for_kernel(&kernel(), bytes, bytes);
    let simulator = Simulator::new(profile.clone(), SimOptions::default());
    let mut candidates = Vec::new();
    for tiles in GemmTiles::candidates(GemmTiles::capacities(&kernel()), bytes, bytes) {
        let mut builder = kernel();
        let a = builder.input("a", Shape::from([m, k]), dtype);
        let b = builder.input("b", Shape::from([k, n]), dtype);
        let y = builder.output("y", Shape::from([m, n]), dtype);
        tiled_matmul_with(&mut builder, &a, &b, &y, tiles)?;
        let program = builder.finish()?;
        let report = simulator
            .time(&program)
            .map_err(|e| e.into_op_error(MATMUL))?;
        candidates.push(Candidate {
            m: tiles.m,
            n: tiles.n,
            k: tiles.k,
            steps: tiles.steps,
            blocks: program.grid,
            default: tiles == default,
            report,
        });
    }
    // A stable sort: ties keep the candidate order, the default first.
    candidates.sort_by(|x, y| x.seconds().total_cmp(&y.seconds()));
    Ok(MatmulTuning {
        device: profile.name.clone(),
        shape: [m, k, n],
        dtype,
        candidates,
    })
}

impl fmt::Display for MatmulTuning {
    /// A table of the candidates, fastest first, then the choice against the default.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [m, k, n] = self.shape;
        writeln!(
            f,
            "{MATMUL} a [{m}, {k}] @ b [{k}, {n}] {} on {}: {} candidate tilings, timed on \
             the simulator",
            self.dtype,
            self.device,
            self.candidates.len()
        )?;
        writeln!(
            f,
            "{:<16} {:>6} {:>7} {:>12} {:>11} {:>6} {:<7}",
            "base m x n x k", "steps", "blocks", "cycles", "us", "cube", "bound"
        )?;
        for c in &self.candidates {
            writeln!(
                f,
                "{:<16} {:>6} {:>7} {:>12} {:>11.3} {:>5.0}% {:<7}{}",
                format!("{} x {} x {}", c.m, c.n, c.k),
                c.steps,
                c.blocks,
                c.report.cycles + c.report.launch_cycles,
                c.seconds() * 1e6,
                c.report.utilisation(Pipe::M) * 100.0,
                c.report.bound.name(),
                if c.default { "  (the default)" } else { "" }
            )?;
        }
        let chosen = self.chosen();
        write!(
            f,
            "chosen: {} x {} x {}, {} staged K-steps, {:.3} us",
            chosen.m,
            chosen.n,
            chosen.k,
            chosen.steps,
            chosen.seconds() * 1e6
        )?;
        match self.default_tiling() {
            Some(default) if default != chosen => write!(
                f,
                " (the default {} x {} x {}, {} staged K-steps: {:.3} us, {:.1}% slower)",
                default.m,
                default.n,
                default.k,
                default.steps,
                default.seconds() * 1e6,
                (default.seconds() / chosen.seconds() - 1.0) * 100.0
            )?,
            Some(_) => write!(f, " (the default)")?,
            None => {}
        }
        writeln!(f)
    }
}
