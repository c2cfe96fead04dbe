//! `pto fidelity`: the tile simulator against public measurements of Ascend hardware.
//!
//! Every case names its source (a public repository file), the device profile, the cores
//! the measurement used, the op and its input shapes. The simulator traces the op's
//! `#[kernel]` for those cores and times it on the built-in profile with `ai_cores` set to
//! the cores used (the other cores of the chip were idle in the measurement, so the cores
//! in use share the memory and L2 bandwidth as in the cost model). Nothing is fitted to
//! these cases: the profile's numbers carry their own citations, and a case outside the
//! target says so in the table.
//!
//! The table is kept in `docs/fidelity.md`; a test checks the page against this command's
//! output, so it cannot go stale.

use core::fmt;

use pto_backends::sim::{SimOptions, Simulator};
use pto_op::kernel::ir::Pipe;
use pto_op::{Attributes, DType, DeviceProfile, TensorType, registry};
use serde::Serialize;

use crate::error::CliError;

/// The target: every case's simulated time within 25% of the measured one.
pub const TARGET: f64 = 0.25;

/// Where the flash-attention figures come from: single cold runs timed on the device.
const FA_SOURCE: &str = "pto-isa kernels/manual/common/flash_atten/README.md";
/// Where the warm flash-attention figures come from: the same kernel family launched from
/// PyTorch, averaged over 50 launches after 10 warm-up launches.
const FA_WARM_SOURCE: &str = "pto-isa demos/torch_jit/flash_atten/README.md";
/// Where the 910B2 full-sequence figures come from: the flash-attention README's newer table
/// (its "910B2 Multi-Core Comparison", one core per 128 queries up to the chip's 24).
const FA_910B2_SOURCE: &str = "pto-isa kernels/manual/common/flash_atten/README.md, 910B2 table";
/// Where the GEMM figures come from.
const GEMM_SOURCE: &str = "pto-isa kernels/manual/a2a3/gemm_performance/README.md";

/// One public measurement.
#[derive(Debug, Clone, Copy)]
struct Measurement {
    /// Short name of the case.
    name: &'static str,
    /// The public file.
    source: &'static str,
    /// The op simulated.
    op: &'static str,
    /// Its input shapes (f16 each).
    inputs: &'static [&'static [usize]],
    /// Cores the measurement used.
    cores: u32,
    /// Measured time, in microseconds.
    micros: f64,
    /// Floating-point operations of the case (for TFLOPS).
    flops: f64,
}

/// Flash attention, HEAD = 128, fp16: `s0` queries against `s1` keys on `cores` cores, as
/// the flash-attention README measured it (one cold run per case).
const fn fa(
    name: &'static str,
    inputs: &'static [&'static [usize]],
    cores: u32,
    micros: f64,
) -> Measurement {
    fa_from(FA_SOURCE, name, inputs, cores, micros)
}

/// The same shapes as the PyTorch demo measured them (warm, averaged over 50 launches): one
/// core per 128 queries, as the demo launches `s0 / 128` blocks.
const fn fa_warm(
    name: &'static str,
    inputs: &'static [&'static [usize]],
    micros: f64,
) -> Measurement {
    fa_from(
        FA_WARM_SOURCE,
        name,
        inputs,
        (inputs[0][0] / 128) as u32,
        micros,
    )
}

const fn fa_from(
    source: &'static str,
    name: &'static str,
    inputs: &'static [&'static [usize]],
    cores: u32,
    micros: f64,
) -> Measurement {
    let s0 = inputs[0][0] as f64;
    let s1 = inputs[1][0] as f64;
    Measurement {
        name,
        source,
        op: "demo.flash_attention",
        inputs,
        cores,
        micros,
        // q k^T and p v: 2 s0 s1 d each.
        flops: 4.0 * s0 * s1 * 128.0,
    }
}

/// A square fp16 GEMM of side `n` on the 24 cores of an A3 die.
const fn gemm(name: &'static str, inputs: &'static [&'static [usize]], micros: f64) -> Measurement {
    let n = inputs[0][0] as f64;
    Measurement {
        name,
        source: GEMM_SOURCE,
        op: "std.matmul",
        inputs,
        cores: 24,
        micros,
        flops: 2.0 * n * n * n,
    }
}

/// The public measurements: the flash-attention README's "Total task time" (A2/A3, one
/// core per 128 queries, one cold run per case), the PyTorch demo's warm averages of the same
/// kernel family (910B2, one core per 128 queries, two host CPUs), the README's newer 910B2
/// table (S0 = S1, one core per 128 queries up to 24) and the GEMM README's "Execution time"
/// (A3, 24 cores). Every cell of these tables is a case.
const CASES: [Measurement; 66] = [
    fa(
        "FA S0=128 S1=1K, 1 core",
        &[&[128, 128], &[1024, 128], &[1024, 128]],
        1,
        42.08,
    ),
    fa(
        "FA S0=128 S1=2K, 1 core",
        &[&[128, 128], &[2048, 128], &[2048, 128]],
        1,
        51.44,
    ),
    fa(
        "FA S0=128 S1=4K, 1 core",
        &[&[128, 128], &[4096, 128], &[4096, 128]],
        1,
        43.8,
    ),
    fa(
        "FA S0=128 S1=8K, 1 core",
        &[&[128, 128], &[8192, 128], &[8192, 128]],
        1,
        74.54,
    ),
    fa(
        "FA S0=256 S1=1K, 2 cores",
        &[&[256, 128], &[1024, 128], &[1024, 128]],
        2,
        33.201,
    ),
    fa(
        "FA S0=256 S1=2K, 2 cores",
        &[&[256, 128], &[2048, 128], &[2048, 128]],
        2,
        44.101,
    ),
    fa(
        "FA S0=256 S1=4K, 2 cores",
        &[&[256, 128], &[4096, 128], &[4096, 128]],
        2,
        43.521,
    ),
    fa(
        "FA S0=256 S1=8K, 2 cores",
        &[&[256, 128], &[8192, 128], &[8192, 128]],
        2,
        75.162,
    ),
    fa(
        "FA S0=512 S1=1K, 4 cores",
        &[&[512, 128], &[1024, 128], &[1024, 128]],
        4,
        41.721,
    ),
    fa(
        "FA S0=512 S1=2K, 4 cores",
        &[&[512, 128], &[2048, 128], &[2048, 128]],
        4,
        55.441,
    ),
    fa(
        "FA S0=512 S1=4K, 4 cores",
        &[&[512, 128], &[4096, 128], &[4096, 128]],
        4,
        46.621,
    ),
    fa(
        "FA S0=512 S1=8K, 4 cores",
        &[&[512, 128], &[8192, 128], &[8192, 128]],
        4,
        86.322,
    ),
    fa(
        "FA S0=1024 S1=1K, 8 cores",
        &[&[1024, 128], &[1024, 128], &[1024, 128]],
        8,
        63.72,
    ),
    fa(
        "FA S0=1024 S1=2K, 8 cores",
        &[&[1024, 128], &[2048, 128], &[2048, 128]],
        8,
        85.882,
    ),
    fa(
        "FA S0=1024 S1=4K, 8 cores",
        &[&[1024, 128], &[4096, 128], &[4096, 128]],
        8,
        64.461,
    ),
    fa(
        "FA S0=1024 S1=8K, 8 cores",
        &[&[1024, 128], &[8192, 128], &[8192, 128]],
        8,
        107.342,
    ),
    fa_warm(
        "FA warm S0=128 S1=1K, 1 core, aarch64 host",
        &[&[128, 128], &[1024, 128], &[1024, 128]],
        19.2,
    ),
    fa_warm(
        "FA warm S0=128 S1=2K, 1 core, aarch64 host",
        &[&[128, 128], &[2048, 128], &[2048, 128]],
        23.42,
    ),
    fa_warm(
        "FA warm S0=128 S1=4K, 1 core, aarch64 host",
        &[&[128, 128], &[4096, 128], &[4096, 128]],
        38.317,
    ),
    fa_warm(
        "FA warm S0=128 S1=8K, 1 core, aarch64 host",
        &[&[128, 128], &[8192, 128], &[8192, 128]],
        68.778,
    ),
    fa_warm(
        "FA warm S0=256 S1=1K, 2 cores, aarch64 host",
        &[&[256, 128], &[1024, 128], &[1024, 128]],
        18.604,
    ),
    fa_warm(
        "FA warm S0=256 S1=2K, 2 cores, aarch64 host",
        &[&[256, 128], &[2048, 128], &[2048, 128]],
        23.939,
    ),
    fa_warm(
        "FA warm S0=256 S1=4K, 2 cores, aarch64 host",
        &[&[256, 128], &[4096, 128], &[4096, 128]],
        39.838,
    ),
    fa_warm(
        "FA warm S0=256 S1=8K, 2 cores, aarch64 host",
        &[&[256, 128], &[8192, 128], &[8192, 128]],
        71.212,
    ),
    fa_warm(
        "FA warm S0=512 S1=1K, 4 cores, aarch64 host",
        &[&[512, 128], &[1024, 128], &[1024, 128]],
        18.603,
    ),
    fa_warm(
        "FA warm S0=512 S1=2K, 4 cores, aarch64 host",
        &[&[512, 128], &[2048, 128], &[2048, 128]],
        24.787,
    ),
    fa_warm(
        "FA warm S0=512 S1=4K, 4 cores, aarch64 host",
        &[&[512, 128], &[4096, 128], &[4096, 128]],
        41.475,
    ),
    fa_warm(
        "FA warm S0=512 S1=8K, 4 cores, aarch64 host",
        &[&[512, 128], &[8192, 128], &[8192, 128]],
        74.903,
    ),
    fa_warm(
        "FA warm S0=1024 S1=1K, 8 cores, aarch64 host",
        &[&[1024, 128], &[1024, 128], &[1024, 128]],
        19.439,
    ),
    fa_warm(
        "FA warm S0=1024 S1=2K, 8 cores, aarch64 host",
        &[&[1024, 128], &[2048, 128], &[2048, 128]],
        26.221,
    ),
    fa_warm(
        "FA warm S0=1024 S1=4K, 8 cores, aarch64 host",
        &[&[1024, 128], &[4096, 128], &[4096, 128]],
        43.127,
    ),
    fa_warm(
        "FA warm S0=1024 S1=8K, 8 cores, aarch64 host",
        &[&[1024, 128], &[8192, 128], &[8192, 128]],
        76.855,
    ),
    fa_warm(
        "FA warm S0=2048 S1=1K, 16 cores, aarch64 host",
        &[&[2048, 128], &[1024, 128], &[1024, 128]],
        23.424,
    ),
    fa_warm(
        "FA warm S0=2048 S1=2K, 16 cores, aarch64 host",
        &[&[2048, 128], &[2048, 128], &[2048, 128]],
        36.055,
    ),
    fa_warm(
        "FA warm S0=2048 S1=4K, 16 cores, aarch64 host",
        &[&[2048, 128], &[4096, 128], &[4096, 128]],
        59.69,
    ),
    fa_warm(
        "FA warm S0=2048 S1=8K, 16 cores, aarch64 host",
        &[&[2048, 128], &[8192, 128], &[8192, 128]],
        107.78,
    ),
    fa_warm(
        "FA warm S0=128 S1=1K, 1 core, x86 host",
        &[&[128, 128], &[1024, 128], &[1024, 128]],
        16.54,
    ),
    fa_warm(
        "FA warm S0=128 S1=2K, 1 core, x86 host",
        &[&[128, 128], &[2048, 128], &[2048, 128]],
        23.98,
    ),
    fa_warm(
        "FA warm S0=128 S1=4K, 1 core, x86 host",
        &[&[128, 128], &[4096, 128], &[4096, 128]],
        40.94,
    ),
    fa_warm(
        "FA warm S0=128 S1=8K, 1 core, x86 host",
        &[&[128, 128], &[8192, 128], &[8192, 128]],
        72.14,
    ),
    fa_warm(
        "FA warm S0=256 S1=1K, 2 cores, x86 host",
        &[&[256, 128], &[1024, 128], &[1024, 128]],
        16.77,
    ),
    fa_warm(
        "FA warm S0=256 S1=2K, 2 cores, x86 host",
        &[&[256, 128], &[2048, 128], &[2048, 128]],
        22.96,
    ),
    fa_warm(
        "FA warm S0=256 S1=4K, 2 cores, x86 host",
        &[&[256, 128], &[4096, 128], &[4096, 128]],
        40.43,
    ),
    fa_warm(
        "FA warm S0=256 S1=8K, 2 cores, x86 host",
        &[&[256, 128], &[8192, 128], &[8192, 128]],
        72.39,
    ),
    fa_warm(
        "FA warm S0=512 S1=1K, 4 cores, x86 host",
        &[&[512, 128], &[1024, 128], &[1024, 128]],
        18.03,
    ),
    fa_warm(
        "FA warm S0=512 S1=2K, 4 cores, x86 host",
        &[&[512, 128], &[2048, 128], &[2048, 128]],
        25.02,
    ),
    fa_warm(
        "FA warm S0=512 S1=4K, 4 cores, x86 host",
        &[&[512, 128], &[4096, 128], &[4096, 128]],
        41.21,
    ),
    fa_warm(
        "FA warm S0=512 S1=8K, 4 cores, x86 host",
        &[&[512, 128], &[8192, 128], &[8192, 128]],
        73.93,
    ),
    fa_warm(
        "FA warm S0=1024 S1=1K, 8 cores, x86 host",
        &[&[1024, 128], &[1024, 128], &[1024, 128]],
        18.7,
    ),
    fa_warm(
        "FA warm S0=1024 S1=2K, 8 cores, x86 host",
        &[&[1024, 128], &[2048, 128], &[2048, 128]],
        26.76,
    ),
    fa_warm(
        "FA warm S0=1024 S1=4K, 8 cores, x86 host",
        &[&[1024, 128], &[4096, 128], &[4096, 128]],
        44.2,
    ),
    fa_warm(
        "FA warm S0=1024 S1=8K, 8 cores, x86 host",
        &[&[1024, 128], &[8192, 128], &[8192, 128]],
        77.65,
    ),
    fa_warm(
        "FA warm S0=2048 S1=1K, 16 cores, x86 host",
        &[&[2048, 128], &[1024, 128], &[1024, 128]],
        23.27,
    ),
    fa_warm(
        "FA warm S0=2048 S1=2K, 16 cores, x86 host",
        &[&[2048, 128], &[2048, 128], &[2048, 128]],
        35.15,
    ),
    fa_warm(
        "FA warm S0=2048 S1=4K, 16 cores, x86 host",
        &[&[2048, 128], &[4096, 128], &[4096, 128]],
        58.43,
    ),
    fa_warm(
        "FA warm S0=2048 S1=8K, 16 cores, x86 host",
        &[&[2048, 128], &[8192, 128], &[8192, 128]],
        100.93,
    ),
    fa_from(
        FA_910B2_SOURCE,
        "FA 910B2 S0=S1=1K",
        &[&[1024, 128], &[1024, 128], &[1024, 128]],
        8,
        20.96,
    ),
    fa_from(
        FA_910B2_SOURCE,
        "FA 910B2 S0=S1=2K",
        &[&[2048, 128], &[2048, 128], &[2048, 128]],
        16,
        32.461,
    ),
    fa_from(
        FA_910B2_SOURCE,
        "FA 910B2 S0=S1=4K",
        &[&[4096, 128], &[4096, 128], &[4096, 128]],
        24,
        88.902,
    ),
    fa_from(
        FA_910B2_SOURCE,
        "FA 910B2 S0=S1=8K",
        &[&[8192, 128], &[8192, 128], &[8192, 128]],
        24,
        292.626,
    ),
    fa_from(
        FA_910B2_SOURCE,
        "FA 910B2 S0=S1=16K",
        &[&[16384, 128], &[16384, 128], &[16384, 128]],
        24,
        909.058,
    ),
    fa_from(
        FA_910B2_SOURCE,
        "FA 910B2 S0=S1=32K",
        &[&[32768, 128], &[32768, 128], &[32768, 128]],
        24,
        3262.645,
    ),
    gemm(
        "GEMM 1536^3, 24 cores",
        &[&[1536, 1536], &[1536, 1536]],
        38.8,
    ),
    gemm(
        "GEMM 3072^3, 24 cores",
        &[&[3072, 3072], &[3072, 3072]],
        206.7,
    ),
    gemm(
        "GEMM 6144^3, 24 cores",
        &[&[6144, 6144], &[6144, 6144]],
        1506.0,
    ),
    gemm(
        "GEMM 7680^3, 24 cores",
        &[&[7680, 7680], &[7680, 7680]],
        3168.0,
    ),
];

/// The device profile every case is simulated on.
pub const DEVICE: &str = "ascend910b";

/// The profile of the Ascend 910B2 measurements (the PyTorch demo's warm runs and the
/// S0 = S1 table): the 910B1 profile at the 910B2's 1.8 GHz.
pub const DEVICE_910B2: &str = "ascend910b2";

/// The built-in profile a measurement is simulated on: [`DEVICE_910B2`] for the 910B2
/// measurements, [`DEVICE`] for the others (the README's A2 / A3 runs and the GEMM's A3).
fn device_of(source: &str) -> &'static str {
    if source == FA_WARM_SOURCE || source == FA_910B2_SOURCE {
        DEVICE_910B2
    } else {
        DEVICE
    }
}

/// One row of the table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FidelityCase {
    /// The case.
    pub case: String,
    /// The device profile it is simulated on.
    pub device: String,
    /// The public file of the measurement.
    pub source: String,
    /// Cores used.
    pub cores: u32,
    /// Measured time, in microseconds.
    pub measured_us: f64,
    /// Simulated time, in microseconds.
    pub simulated_us: f64,
    /// `simulated_us / measured_us`: above 1, the simulator is slower than the device.
    pub ratio: f64,
    /// Measured TFLOPS.
    pub measured_tflops: f64,
    /// Simulated TFLOPS.
    pub simulated_tflops: f64,
    /// The simulator's busiest pipe.
    pub bound: Pipe,
    /// Share of the simulated time the cube is busy.
    pub cube_utilisation: f64,
    /// Bytes the simulated kernel hands between the cube and the vector cores through GM,
    /// over all cores (each written and read back once).
    pub handoff_bytes: u64,
}

impl FidelityCase {
    /// Whether the ratio is within [`TARGET`].
    pub fn within_target(&self) -> bool {
        (self.ratio - 1.0).abs() <= TARGET
    }
}

/// The whole table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FidelityReport {
    /// The device profile.
    pub device: String,
    /// The rows, in the order of the sources' tables.
    pub cases: Vec<FidelityCase>,
}

/// Simulates every public case on its built-in profile: [`DEVICE`], or [`DEVICE_910B2`]
/// for the measurements made on an Ascend 910B2.
///
/// # Errors
///
/// [`CliError::Fidelity`] naming the case when its op is not linked, does not trace or
/// does not simulate; [`CliError::Device`] if the profile does not load.
pub fn report() -> Result<FidelityReport, CliError> {
    let (b1, b2) = (
        DeviceProfile::builtin(DEVICE)?,
        DeviceProfile::builtin(DEVICE_910B2)?,
    );
    let cases = CASES
        .iter()
        .map(|m| {
            let profile = if device_of(m.source) == DEVICE_910B2 {
                &b2
            } else {
                &b1
            };
            simulate(profile, m)
        })
        .collect::<Result<_, _>>()?;
    Ok(FidelityReport {
        device: DEVICE.to_owned(),
        cases,
    })
}

fn simulate(profile: &DeviceProfile, m: &Measurement) -> Result<FidelityCase, CliError> {
    let fail = |message: String| CliError::Fidelity {
        case: m.name.to_owned(),
        message,
    };
    let op = registry::find(m.op).map_err(|e| fail(e.to_string()))?;
    let inputs: Vec<TensorType> = m
        .inputs
        .iter()
        .map(|shape| TensorType {
            shape: pto_op::Shape::from(shape.to_vec()),
            dtype: DType::F16,
        })
        .collect();
    let mut device = profile.clone();
    device.ai_cores = m.cores;
    let program = op
        .trace_kernel_for(&inputs, &Attributes::default(), &device)
        .map_err(|e| fail(e.to_string()))?;
    let report = Simulator::new(device, SimOptions::default())
        .time(&program)
        .map_err(|e| fail(e.to_string()))?;
    let simulated_us = report.seconds * 1e6;
    Ok(FidelityCase {
        case: m.name.to_owned(),
        device: profile.name.clone(),
        source: m.source.to_owned(),
        cores: m.cores,
        measured_us: m.micros,
        simulated_us,
        ratio: simulated_us / m.micros,
        measured_tflops: m.flops / m.micros * 1e-6,
        simulated_tflops: m.flops / simulated_us * 1e-6,
        bound: report.bound,
        cube_utilisation: report.utilisation(Pipe::M),
        handoff_bytes: report.handoff_bytes,
    })
}

impl fmt::Display for FidelityReport {
    /// A Markdown table: one row per case, then how many are within the target.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "| case | profile | measured (us) | simulated (us) | sim / measured | measured TFLOPS | \
             simulated TFLOPS | sim bound | sim cube busy | sim hand-off (MiB) | within 25% |"
        )?;
        writeln!(f, "|---|---|---:|---:|---:|---:|---:|---|---:|---:|---|")?;
        for c in &self.cases {
            writeln!(
                f,
                "| {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {:.0}% | {:.0} | {} |",
                c.case,
                c.device,
                c.measured_us,
                c.simulated_us,
                c.ratio,
                c.measured_tflops,
                c.simulated_tflops,
                c.bound,
                c.cube_utilisation * 100.0,
                c.handoff_bytes as f64 / f64::from(1 << 20),
                if c.within_target() { "yes" } else { "**no**" }
            )?;
        }
        let within = self.cases.iter().filter(|c| c.within_target()).count();
        writeln!(f)?;
        writeln!(
            f,
            "{within} of {} cases within 25% on `{}` (`{DEVICE_910B2}` for the 910B2 \
             measurements):",
            self.cases.len(),
            self.device
        )?;
        writeln!(f)?;
        for (what, source) in [
            ("flash attention, one cold run per case", FA_SOURCE),
            (
                "flash attention, warm average of 50 launches",
                FA_WARM_SOURCE,
            ),
            ("flash attention, 910B2, S0 = S1", FA_910B2_SOURCE),
            ("GEMM", GEMM_SOURCE),
        ] {
            let cases: Vec<_> = self.cases.iter().filter(|c| c.source == source).collect();
            let within = cases.iter().filter(|c| c.within_target()).count();
            writeln!(f, "- {what}: {within} of {} ({source})", cases.len())?;
        }
        Ok(())
    }
}
