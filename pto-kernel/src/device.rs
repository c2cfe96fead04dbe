//! Device profiles: the numbers of one NPU that the simulator and the estimators read.
//!
//! Profiles are data files (`data/devices/*.json` for the built-in ones, or any file of the
//! same form). Values with no public source are marked as assumptions in `notes`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::dtype::DType;
use crate::ir::{BinaryOp, Inst, MemLevel, UnaryOp};

/// Bytes (or an alignment) per on-core buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerBuffer {
    /// Unified buffer.
    pub ub: u64,
    /// L1.
    pub l1: u64,
    /// L0A.
    pub l0a: u64,
    /// L0B.
    pub l0b: u64,
    /// L0C.
    pub l0c: u64,
}

impl PerBuffer {
    /// The value for `level`; `None` for global memory.
    pub fn get(&self, level: MemLevel) -> Option<u64> {
        Some(match level {
            MemLevel::Ub => self.ub,
            MemLevel::L1 => self.l1,
            MemLevel::L0A => self.l0a,
            MemLevel::L0B => self.l0b,
            MemLevel::L0C => self.l0c,
            MemLevel::Gm => return None,
        })
    }
}

/// Copy rates of one core's data paths, in bytes per cycle.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CopyRates {
    /// GM -> L1 (MTE2).
    pub gm_to_l1: f64,
    /// GM -> UB (MTE2).
    pub gm_to_ub: f64,
    /// L1 -> L0A (MTE1).
    pub l1_to_l0a: f64,
    /// L1 -> L0B (MTE1).
    pub l1_to_l0b: f64,
    /// L0C -> GM / L1 / UB (FIXP).
    pub l0c_out: f64,
    /// UB -> GM (MTE3).
    pub ub_to_gm: f64,
    /// UB -> L1 (MTE3).
    pub ub_to_l1: f64,
}

/// The chip's level-2 cache between the AI cores and global memory.
///
/// The cost model prices loads with a static hit model (see [`crate::cost`]): a
/// program's re-reads of its inputs hit L2 when its unique input bytes fit `capacity`
/// (in proportion when they do not), and hits stream at `bandwidth` instead of
/// [`DeviceProfile::memory_bandwidth`]. A capacity of 0 (the default, and the Kirin
/// profiles: their platform files give `l2_size=0`) means no L2.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct L2Cache {
    /// Bytes of L2 of the whole chip (0: none).
    pub capacity: u64,
    /// Read bandwidth of L2 of the whole chip, in bytes per second, shared by the cores in
    /// use like the memory bandwidth.
    pub bandwidth: f64,
    /// Write bandwidth of L2 of the whole chip, in bytes per second, shared by the cores in
    /// use (0, the default: no figure). Only the hand-offs of a split core
    /// ([`CubeVector::Split`]) write at it: a tile written to a small GM workspace and read
    /// back at once stays in L2; without a figure they write at the memory bandwidth share,
    /// as every store does.
    #[serde(default)]
    pub write_bandwidth: f64,
}

/// The cost of starting a kernel on the device, paid once per kernel launch before its
/// first block program runs (the simulator reports it apart from the kernel's cycles:
/// [`LaunchCost::cycles`]). Zero (the default) where a profile has no figure.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchCost {
    /// Seconds of launching any kernel.
    #[serde(default)]
    pub seconds: f64,
    /// Seconds more of launching a mix kernel: one that runs on both the cube core and
    /// the vector cores of a split core ([`CubeVector::Split`]), which starts both.
    #[serde(default)]
    pub mix_seconds: f64,
}

impl LaunchCost {
    /// The launch of a kernel, in cycles at `clock_hz` (rounded up): `seconds`, plus
    /// `mix_seconds` for a mix kernel.
    ///
    /// ```
    /// use pto_kernel::device::LaunchCost;
    /// let launch = LaunchCost { seconds: 1e-6, mix_seconds: 2e-6 };
    /// assert_eq!(launch.cycles(1e9, false), 1000);
    /// assert_eq!(launch.cycles(1e9, true), 3000);
    /// ```
    pub fn cycles(&self, clock_hz: f64, mix: bool) -> u64 {
        let seconds = self.seconds + if mix { self.mix_seconds } else { 0.0 };
        (seconds * clock_hz).ceil() as u64
    }
}

/// How an AI core's cube and vector units are arranged.
///
/// - `coupled` (the default, and the Kirin profiles: their platform files say
///   `cube_vector_mix`): one core holds the cube pipes (MTE1, CUBE, FIXP) and the vector pipes
///   (VECTOR, MTE3) with one MTE2 and one scalar unit, and tiles move L0C -> UB and UB -> L1
///   on the core.
/// - `split` (Ascend 910B, dav-c220: `cube_vector_combine=split`): the cube core (AIC:
///   MTE2, MTE1, CUBE, FIXP, its own scalar unit) and its vector cores (AIV: MTE2, VECTOR,
///   MTE3, their own scalar unit) are separate cores that exchange tiles only through
///   global memory. The simulator runs a block program's cube instructions on the AIC and
///   its vector instructions on the AIV, and a move between them as a write to GM on one
///   side and a read back on the other, ordered by a cross-core flag (see
///   `pto_kernel::cost` and the simulator's schedule).
///
/// ```
/// use pto_kernel::{CubeVector, DeviceProfile};
/// assert_eq!(DeviceProfile::builtin("ascend910b").unwrap().cube_vector, CubeVector::Split);
/// assert_eq!(DeviceProfile::builtin("kirin9030").unwrap().cube_vector, CubeVector::Coupled);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CubeVector {
    /// Cube and vector pipes in one core.
    #[default]
    Coupled,
    /// A cube core and vector cores that exchange tiles through global memory.
    Split,
}

impl CubeVector {
    /// `coupled` or `split`, as in the profile file.
    pub const fn name(self) -> &'static str {
        match self {
            CubeVector::Coupled => "coupled",
            CubeVector::Split => "split",
        }
    }
}

impl<'de> Deserialize<'de> for CubeVector {
    /// `"coupled"` or `"split"`; anything else is an error naming the field and both values.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<CubeVector, D::Error> {
        let text = String::deserialize(deserializer)?;
        match text.as_str() {
            "coupled" => Ok(CubeVector::Coupled),
            "split" => Ok(CubeVector::Split),
            other => Err(serde::de::Error::custom(format!(
                "`cube_vector` must be \"coupled\" or \"split\", got \"{other}\""
            ))),
        }
    }
}

impl std::fmt::Display for CubeVector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Relative cost of vector instructions, in cycles per 256-byte repeat.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VectorCosts {
    /// Add, mul, max, compare, select, cast, fill, floor, ceil.
    pub simple: f64,
    /// Exp, exp2, ln, log2, sqrt, rsqrt, tanh, sigmoid, gelu, silu, sin, cos, erf,
    /// division, pow, rem, mod.
    pub transcendental: f64,
    /// Reductions, per repeat of the input.
    pub reduce: f64,
}

// Which of the three costs an instruction pays is the meaning of `VectorCosts`' fields, so
// it is written beside them; the IR below knows nothing of what a device costs.
impl Inst {
    /// Cycles per repeat of this instruction on the vector unit, by its kind: reductions
    /// (index reductions and top-k too) cost `reduce`; exp, exp2, ln, log2, roots, reciprocals, activations, sin, cos, erf,
    /// and division, pow, rem and mod `transcendental`; the rest (floor and ceil among
    /// them) `simple`. The simulator and the estimator share it.
    pub fn cycles_per_repeat(&self, costs: &VectorCosts) -> f64 {
        match self {
            Inst::Reduce { .. } | Inst::ArgReduce { .. } | Inst::TopK { .. } => costs.reduce,
            Inst::Unary { op, .. } => match op {
                UnaryOp::Neg
                | UnaryOp::Abs
                | UnaryOp::Square
                | UnaryOp::Relu
                | UnaryOp::Floor
                | UnaryOp::Ceil => costs.simple,
                UnaryOp::Exp
                | UnaryOp::Ln
                | UnaryOp::Sqrt
                | UnaryOp::Rsqrt
                | UnaryOp::Recip
                | UnaryOp::Tanh
                | UnaryOp::Sigmoid
                | UnaryOp::Gelu
                | UnaryOp::Silu
                | UnaryOp::Sin
                | UnaryOp::Cos
                | UnaryOp::Erf
                | UnaryOp::Exp2
                | UnaryOp::Log2 => costs.transcendental,
            },
            Inst::Binary {
                op: BinaryOp::Div | BinaryOp::Pow | BinaryOp::Rem | BinaryOp::Mod,
                ..
            } => costs.transcendental,
            _ => costs.simple,
        }
    }
}

/// The cost of one vector instruction on one dtype in a [`PipeModel`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VectorOpCost {
    /// Cycles the vector pipe spends per repeat of [`DeviceProfile::vector_bytes_per_repeat`]
    /// bytes (of the largest operand or result); the pipe takes the next instruction after
    /// them.
    pub cycles_per_repeat: f64,
    /// Cycles after the last repeat until the result can be read by another instruction.
    pub latency_cycles: f64,
}

/// Per-instruction costs and latencies from a cycle-level model of the pipes, for profiles
/// that have one (`pipe_model` in the file; the Kirin profiles have none and keep the
/// plain costs: [`DeviceProfile::copy_latency_cycles`], [`DeviceProfile::cube_latency_cycles`],
/// [`DeviceProfile::vector_cycles_per_repeat`], [`DeviceProfile::vector_latency_cycles`]).
///
/// With it, the cost model (`pto_kernel::cost`) prices:
///
/// - a transfer that reads GM (a load, a hand-off's read back) with
///   `gm_read_latency_cycles`, one that writes GM (a store, FIXP out of L0C, a hand-off's
///   write) with `gm_write_latency_cycles`, in place of `copy_latency_cycles`: the latency
///   occupies the pipe, so back-to-back transfers pay it in turn;
/// - L1 -> L0A / L0B copies at their rate, the result ready `mte1_latency_cycles` later
///   (the pipe takes the next copy meanwhile);
/// - matmuls at the cube's rate, the result ready `cube_latency_cycles` later;
/// - a row reduction as its instruction sequence ([`crate::row_reduce`]), each
///   step by its entry;
/// - a vector instruction with an entry in `vector_ops` (by [`crate::ir::Inst::vector_op_name`]
///   and dtype) by that entry; one without by the plain costs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipeModel {
    /// Cycles of latency of every transfer that reads GM.
    pub gm_read_latency_cycles: f64,
    /// Cycles of latency of every transfer that writes GM.
    pub gm_write_latency_cycles: f64,
    /// Cycles from an L1 -> L0A / L0B copy's last byte to its data being usable.
    pub mte1_latency_cycles: f64,
    /// Cycles from a matmul's last fractal to its result in L0C being usable.
    pub cube_latency_cycles: f64,
    /// Cycles of a cross-core flag on a split core: from a hand-off's write reaching GM
    /// (the writer's set) to the reader's wait releasing, when its read may start (0 when
    /// absent from the file).
    #[serde(default)]
    pub cross_core_flag_cycles: f64,
    /// Per vector instruction (by name, or a row reduction's step:
    /// [`ROW_REDUCE_STEP_NAMES`]) and dtype: its cost. The dtype is the result's,
    /// except for `cast`, whose key is the source dtype.
    #[serde(default)]
    pub vector_ops: BTreeMap<String, BTreeMap<DType, VectorOpCost>>,
}

impl PipeModel {
    /// The entry of a vector instruction named `op` on `dtype`, if the table has one.
    pub fn vector_op(&self, op: &str, dtype: DType) -> Option<VectorOpCost> {
        self.vector_ops.get(op)?.get(&dtype).copied()
    }
}

/// The names of row-reduction steps
/// ([`RowReduce::step_name`](crate::row_reduce::RowReduce::step_name)) a pipe model's table
/// may price beyond the vector instructions of the IR ([`Inst::vector_op_names`]); also
/// `pto_kernel::row_reduce::STEP_NAMES`.
pub const ROW_REDUCE_STEP_NAMES: [&str; 5] = [
    "ub_copy",
    "brcb",
    "group_reduce_sum",
    "group_reduce_max",
    "group_reduce_min",
];

/// Parameters of the default roofline estimator: how close typical ops come to the peaks.
///
/// None of these has a public source; profiles mark them as assumptions in `notes`, and
/// calibration against the simulator or a device replaces them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EstimatorParams {
    /// Fraction of the cube's peak multiply-accumulate rate an op reaches, in (0, 1].
    pub cube_efficiency: f64,
    /// Fraction of the vector unit's peak element rate an op reaches, in (0, 1].
    pub vector_efficiency: f64,
    /// Fraction of the global memory bandwidth an op reaches, in (0, 1].
    pub memory_efficiency: f64,
    /// Fixed cost of every op (launch, synchronisation), in seconds.
    pub static_seconds: f64,
    /// Whether cube and vector work of one op overlap (time is the larger of the two) or
    /// serialize (time is their sum).
    pub overlap_cube_vector: bool,
}

/// A fitted correction of one op's estimate on one device: `t = exp(log_scale) *
/// t_est^exponent`, with both times in seconds.
///
/// Why this form: the estimator's error against the simulator is multiplicative and drifts
/// with size (fixed per-copy and per-instruction latencies weigh on small calls, the
/// efficiencies on large ones), so a straight line in log-log space is the smallest model
/// that follows both ends. It fits in closed form by least squares on `ln t` (which weighs
/// every case's relative error alike, whatever its size), it is positive for every
/// positive estimate, and with `exponent` near 1 it extrapolates beyond the training sizes
/// as a plain efficiency would. `pto calibrate` fits it from simulator runs.
///
/// ```
/// use pto_kernel::OpCalibration;
/// let c = OpCalibration { log_scale: 2.0_f64.ln(), exponent: 1.0, cases: 6 };
/// assert!((c.apply(1e-6) - 2e-6).abs() < 1e-18);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpCalibration {
    /// `a`, the natural log of the scale at an estimate of one second.
    pub log_scale: f64,
    /// `b`, how the correction grows with the estimate (1: a constant factor).
    pub exponent: f64,
    /// How many simulator runs the fit used.
    pub cases: usize,
}

impl OpCalibration {
    /// The calibrated time of an estimate of `seconds`.
    pub fn apply(&self, seconds: f64) -> f64 {
        if seconds > 0.0 {
            (self.log_scale + self.exponent * seconds.ln()).exp()
        } else {
            seconds
        }
    }
}

/// The profile of one device.
///
/// ```
/// use pto_kernel::DeviceProfile;
/// let kirin = DeviceProfile::builtin("kirin9030").unwrap();
/// assert_eq!(kirin.buffers.ub, 118 * 1024);
/// assert!(kirin.notes.iter().any(|n| n.contains("assumed")));
/// assert!(DeviceProfile::builtin("gpu").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceProfile {
    /// The profile's name (`kirin9030`, `ascend910b`).
    pub name: String,
    /// What device it describes.
    pub description: String,
    /// Sources, and every value that is an assumption.
    pub notes: Vec<String>,
    /// AI cores that run block programs.
    pub ai_cores: u32,
    /// How cube and vector units are arranged ([`CubeVector`]; `coupled` when absent from
    /// the file).
    #[serde(default)]
    pub cube_vector: CubeVector,
    /// Vector cores per AI core (1 when absent from the file; 1 on a coupled core): on a
    /// split core, the vector cores that share a block program's vector work, each with
    /// its own UB of `buffers.ub` (see
    /// [`vector_split::block_capacity`](crate::vector_split::block_capacity)).
    #[serde(default = "one")]
    pub vector_cores: u32,
    /// Core clock, in Hz.
    pub clock_hz: f64,
    /// Global memory bandwidth of the whole chip, in bytes per second.
    pub memory_bandwidth: f64,
    /// The L2 cache (none when absent from the file).
    #[serde(default)]
    pub l2: L2Cache,
    /// Capacity of each on-core buffer, in bytes.
    pub buffers: PerBuffer,
    /// Alignment of tiles in each buffer, in bytes: a tile's footprint is rounded up to it.
    pub alignment: PerBuffer,
    /// Copy rates of one core.
    pub copy_bytes_per_cycle: CopyRates,
    /// Fixed cycles of every copy, before data flows.
    pub copy_latency_cycles: f64,
    /// Cube multiply-accumulates per cycle, by input dtype.
    pub cube_macs_per_cycle: BTreeMap<DType, f64>,
    /// Fixed cycles of every cube instruction.
    pub cube_latency_cycles: f64,
    /// Bytes the vector unit processes per repeat (one repeat per cycle for simple ops).
    pub vector_bytes_per_repeat: f64,
    /// Cycles per repeat, by kind of vector instruction.
    pub vector_cycles_per_repeat: VectorCosts,
    /// Fixed cycles of every vector instruction.
    pub vector_latency_cycles: f64,
    /// Per-instruction costs and latencies of a cycle-level pipe model (none when absent
    /// from the file: the plain costs above apply to everything).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pipe_model: Option<PipeModel>,
    /// Scalar cycles to issue one instruction.
    pub issue_cycles: f64,
    /// Scalar cycles of each loop iteration (counter, branch, addresses).
    pub loop_overhead_cycles: f64,
    /// The cost of launching a kernel (none when absent from the file).
    #[serde(default)]
    pub launch: LaunchCost,
    /// Parameters of the default roofline estimator.
    pub estimator: EstimatorParams,
    /// Fitted corrections of the estimator, by op name (empty: uncalibrated). Written by
    /// `pto calibrate`; the estimator applies an op's entry to whatever model the chain
    /// picks for it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub calibration: BTreeMap<String, OpCalibration>,
}

fn one() -> u32 {
    1
}

/// An error of loading a device profile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceError {
    /// No built-in profile has this name.
    #[error("no built-in device profile `{name}`; built-in profiles: {}", known.join(", "))]
    Unknown {
        /// The name asked for.
        name: String,
        /// The built-in names.
        known: Vec<String>,
    },
    /// A profile file could not be read or parsed.
    #[error("device profile {path}: {message}")]
    Invalid {
        /// The file (or `builtin:NAME`).
        path: String,
        /// What is wrong.
        message: String,
    },
}

// The bounds of a profile's numbers. Each is far beyond any real device (the built-in
// profiles show the scale), so that a profile outside them is a typo (`1e-300` for
// `1e300`, bytes for kilobytes), not a device. The upper bounds keep the simulator from
// allocating or looping without end; the lower bounds of the rates keep every instruction
// within MAX_INSTRUCTION_SECONDS, so that estimates and simulated times stay finite and
// cycle counts far from overflowing. Every instruction moves, computes or multiplies at
// most one tile, of at most MAX_BUFFER_BYTES, and pays fixed costs of at most MAX_CYCLES
// each (1000 s at MIN_CLOCK_HZ); each lower bound below is derived from that tile.

/// The longest one instruction may take on a profile within the bounds: a day.
pub const MAX_INSTRUCTION_SECONDS: f64 = 86_400.0;
/// The most AI cores a profile may have (real chips: 1 to a few dozen).
const MAX_CORES: f64 = 4096.0;
/// The lowest clock a profile may have, in Hz (real: about 1 to 2 GHz): the fixed costs of
/// an instruction, at most [`MAX_CYCLES`] each, take at most 1000 s at it.
const MIN_CLOCK_HZ: f64 = 1e6;
/// The highest clock a profile may have, in Hz (real: about 1 to 2 GHz).
const MAX_CLOCK_HZ: f64 = 1e11;
/// The least global memory (or L2) bandwidth per AI core, in bytes per second (real: a few
/// GB/s per core): the cores in use share it, and a tile of [`MAX_BUFFER_BYTES`] streams in
/// 7.5 hours at it, whatever the clock.
const MIN_BANDWIDTH_PER_CORE: f64 = 1e4;
/// The most global memory bandwidth a profile may have, in bytes per second (real: tens of
/// GB/s to a few TB/s).
const MAX_BANDWIDTH: f64 = 1e15;
/// The largest on-core buffer a profile may have, in bytes (real: 64 KiB to 1 MiB).
const MAX_BUFFER_BYTES: u64 = 1 << 28;
/// The largest buffer alignment a profile may have, in bytes (real: 32 to 512).
const MAX_ALIGNMENT: u64 = 1 << 16;
/// The least bytes per cycle a data path may move (real: 32 to 512): a tile of
/// [`MAX_BUFFER_BYTES`] takes 2.7e10 cycles, 7.5 hours at [`MIN_CLOCK_HZ`].
const MIN_BYTES_PER_CYCLE: f64 = 0.01;
/// The most bytes per cycle a data path or a vector repeat may move (real: 32 to 512).
const MAX_BYTES_PER_CYCLE: f64 = 1e6;
/// The fewest bytes of a vector repeat (real: 256 or 512): with [`MAX_CYCLES_PER_REPEAT`],
/// a tile of [`MAX_BUFFER_BYTES`] takes 3.4e10 cycles, 9.5 hours at [`MIN_CLOCK_HZ`].
const MIN_VECTOR_BYTES_PER_REPEAT: f64 = 1.0;
/// The most cycles of one vector repeat (real: 1 to about 10).
const MAX_CYCLES_PER_REPEAT: f64 = 128.0;
/// The fewest cube multiply-accumulates per cycle of a dtype the cube takes (real: 512 to
/// 8192): a matmul of tiles in L0 buffers of [`MAX_BUFFER_BYTES`] has at most 2^41 of them
/// (`m k n = sqrt(mk kn mn)`, with `mn` in 4-byte L0C), 3.4e10 cycles, 9.5 hours at
/// [`MIN_CLOCK_HZ`].
const MIN_MACS_PER_CYCLE: f64 = 64.0;
/// The most cube multiply-accumulates per cycle (real: up to about 10^4).
const MAX_MACS_PER_CYCLE: f64 = 1e8;
/// The most cycles any fixed cost may take (real: 1 to a few hundred).
const MAX_CYCLES: f64 = 1e9;
/// The smallest efficiency of the roofline estimator (real: 0.3 to 0.9): a thousandth of a
/// peak, so that an estimate is at most a thousand times the peak's time.
const MIN_EFFICIENCY: f64 = 1e-3;

/// `value` as a message shows it: in exponent form when plain digits would run long
/// (`1e-300`, `1e300`), else plainly (`1850000000`).
fn readable(value: f64) -> String {
    if value != 0.0 && !(1e-3..1e21).contains(&value.abs()) {
        format!("{value:e}")
    } else {
        format!("{value}")
    }
}

const BUILTIN: [(&str, &str); 4] = [
    (
        "ascend910b",
        include_str!("../data/devices/ascend910b.json"),
    ),
    (
        "ascend910b2",
        include_str!("../data/devices/ascend910b2.json"),
    ),
    ("kirin9030", include_str!("../data/devices/kirin9030.json")),
    ("kirinx90", include_str!("../data/devices/kirinx90.json")),
];

impl DeviceProfile {
    /// The names of the built-in profiles.
    pub fn builtin_names() -> Vec<&'static str> {
        BUILTIN.iter().map(|(n, _)| *n).collect()
    }

    /// A built-in profile by name.
    pub fn builtin(name: &str) -> Result<DeviceProfile, DeviceError> {
        let (_, text) =
            BUILTIN
                .iter()
                .find(|(n, _)| *n == name)
                .ok_or_else(|| DeviceError::Unknown {
                    name: name.to_owned(),
                    known: Self::builtin_names()
                        .into_iter()
                        .map(str::to_owned)
                        .collect(),
                })?;
        Self::from_json(&format!("builtin:{name}"), text)
    }

    /// A profile from a JSON file of the built-in profiles' form.
    pub fn load(path: &Path) -> Result<DeviceProfile, DeviceError> {
        let invalid = |message: String| DeviceError::Invalid {
            path: path.display().to_string(),
            message,
        };
        let bytes = pto_types::fs::read_regular(path, pto_types::fs::FileKind::DeviceProfile)
            .map_err(|e| invalid(e.problem.to_string()))?;
        let text =
            String::from_utf8(bytes).map_err(|e| invalid(format!("not UTF-8 text ({e})")))?;
        Self::from_json(&path.display().to_string(), &text)
    }

    /// A built-in profile by name, or a profile file when `name_or_path` is a path to one.
    pub fn resolve(name_or_path: &str) -> Result<DeviceProfile, DeviceError> {
        let path = Path::new(name_or_path);
        if path.extension().is_some_and(|e| e == "json") || path.exists() {
            Self::load(path)
        } else {
            Self::builtin(name_or_path)
        }
    }

    fn from_json(path: &str, text: &str) -> Result<DeviceProfile, DeviceError> {
        let invalid = |message: String| DeviceError::Invalid {
            path: path.to_owned(),
            message,
        };
        let profile: DeviceProfile =
            serde_json::from_str(text).map_err(|e| invalid(e.to_string()))?;
        profile.check().map_err(invalid)?;
        Ok(profile)
    }

    /// Checks that every rate, capacity and count is positive, then within the bounds.
    fn check(&self) -> Result<(), String> {
        let positive = [
            ("clock_hz", self.clock_hz),
            ("memory_bandwidth", self.memory_bandwidth),
            (
                "copy_bytes_per_cycle.gm_to_l1",
                self.copy_bytes_per_cycle.gm_to_l1,
            ),
            (
                "copy_bytes_per_cycle.gm_to_ub",
                self.copy_bytes_per_cycle.gm_to_ub,
            ),
            (
                "copy_bytes_per_cycle.l1_to_l0a",
                self.copy_bytes_per_cycle.l1_to_l0a,
            ),
            (
                "copy_bytes_per_cycle.l1_to_l0b",
                self.copy_bytes_per_cycle.l1_to_l0b,
            ),
            (
                "copy_bytes_per_cycle.l0c_out",
                self.copy_bytes_per_cycle.l0c_out,
            ),
            (
                "copy_bytes_per_cycle.ub_to_gm",
                self.copy_bytes_per_cycle.ub_to_gm,
            ),
            (
                "copy_bytes_per_cycle.ub_to_l1",
                self.copy_bytes_per_cycle.ub_to_l1,
            ),
            ("vector_bytes_per_repeat", self.vector_bytes_per_repeat),
        ];
        if let Some((field, value)) = positive.iter().find(|(_, v)| !(v.is_finite() && *v > 0.0)) {
            return Err(format!("`{field}` must be a positive number, got {value}"));
        }
        let l2 = self.l2;
        if l2.capacity > 0 && !(l2.bandwidth.is_finite() && l2.bandwidth > 0.0) {
            return Err(format!(
                "`l2.bandwidth` must be a positive number when `l2.capacity` is not 0, got {}",
                l2.bandwidth
            ));
        }
        if !(l2.write_bandwidth.is_finite() && l2.write_bandwidth >= 0.0) {
            return Err(format!(
                "`l2.write_bandwidth` must be zero (no figure) or positive, got {}",
                l2.write_bandwidth
            ));
        }
        let efficiencies = [
            ("estimator.cube_efficiency", self.estimator.cube_efficiency),
            (
                "estimator.vector_efficiency",
                self.estimator.vector_efficiency,
            ),
            (
                "estimator.memory_efficiency",
                self.estimator.memory_efficiency,
            ),
        ];
        if let Some((field, value)) = efficiencies
            .iter()
            .find(|(_, v)| !(v.is_finite() && *v > 0.0 && *v <= 1.0))
        {
            return Err(format!(
                "`{field}` must be a fraction in (0, 1], got {value}"
            ));
        }
        for (field, value) in [
            ("launch.seconds", self.launch.seconds),
            ("launch.mix_seconds", self.launch.mix_seconds),
        ] {
            if !(value.is_finite() && value >= 0.0) {
                return Err(format!("`{field}` must be zero or positive, got {value}"));
            }
        }
        let static_seconds = self.estimator.static_seconds;
        if !(static_seconds.is_finite() && static_seconds >= 0.0) {
            return Err(format!(
                "`estimator.static_seconds` must be zero or positive, got {static_seconds}"
            ));
        }
        if let Some((op, c)) = self
            .calibration
            .iter()
            .find(|(_, c)| !(c.log_scale.is_finite() && c.exponent.is_finite()))
        {
            return Err(format!(
                "`calibration.{op}` must have finite parameters, got log_scale {} and \
                 exponent {}",
                c.log_scale, c.exponent
            ));
        }
        if self.ai_cores == 0 {
            return Err("`ai_cores` must be at least 1".to_owned());
        }
        match (self.cube_vector, self.vector_cores) {
            (_, 0) => return Err("`vector_cores` must be at least 1".to_owned()),
            (CubeVector::Coupled, n) if n != 1 => {
                return Err(format!(
                    "`vector_cores` is {n}, but a coupled core (`cube_vector` \"coupled\") has \
                     one vector unit: set 1, or `cube_vector` \"split\""
                ));
            }
            (_, n) if f64::from(n) > MAX_CORES => {
                return Err(format!(
                    "`vector_cores` is {n}, more than the {MAX_CORES:e} cores any device has"
                ));
            }
            _ => {}
        }
        if let Some((dtype, v)) = self
            .cube_macs_per_cycle
            .iter()
            .find(|(_, v)| !(v.is_finite() && **v > 0.0))
        {
            return Err(format!(
                "`cube_macs_per_cycle.{dtype}` must be a positive number, got {v}"
            ));
        }
        self.check_plausible()
    }

    /// Checks that every number is within what a device can have (the bounds above, far
    /// beyond any real one): a profile of `ai_cores: 4e9` or a terabyte of unified buffer
    /// would make the simulator allocate (or loop) without end, one of `clock_hz: 1e-300`
    /// would make an estimate of 300 digits or infinity, and each is a typo, not a device.
    fn check_plausible(&self) -> Result<(), String> {
        let within = |field: &str, value: f64, (least, most): (f64, f64), unit: &str| {
            if value.is_finite() && (least..=most).contains(&value) {
                Ok(())
            } else {
                Err(format!(
                    "`{field}` is {} {unit}, outside {least:e}..={most:e}: a typo? (the \
                     built-in profiles show the scale; within the range no instruction takes \
                     longer than a day)",
                    readable(value)
                ))
            }
        };
        let at_least_zero = |field: &str, value: f64| {
            if value.is_finite() && value >= 0.0 {
                Ok(())
            } else {
                Err(format!("`{field}` must be zero or positive, got {value}"))
            }
        };
        within(
            "ai_cores",
            f64::from(self.ai_cores),
            (1.0, MAX_CORES),
            "cores",
        )?;
        within(
            "clock_hz",
            self.clock_hz,
            (MIN_CLOCK_HZ, MAX_CLOCK_HZ),
            "Hz",
        )?;
        // The cores in use share global memory and L2: each core's share has the floor.
        let bandwidth = (
            MIN_BANDWIDTH_PER_CORE * f64::from(self.ai_cores),
            MAX_BANDWIDTH,
        );
        let per_core = format!(
            "bytes per second (at least {MIN_BANDWIDTH_PER_CORE:e} per core, of {} cores)",
            self.ai_cores
        );
        within(
            "memory_bandwidth",
            self.memory_bandwidth,
            bandwidth,
            &per_core,
        )?;
        if self.l2.capacity > 0 {
            within("l2.bandwidth", self.l2.bandwidth, bandwidth, &per_core)?;
        }
        if self.l2.write_bandwidth != 0.0 {
            within(
                "l2.write_bandwidth",
                self.l2.write_bandwidth,
                bandwidth,
                &per_core,
            )?;
        }
        let buffers = [
            (MemLevel::Ub, "ub", self.buffers.ub, self.alignment.ub),
            (MemLevel::L1, "l1", self.buffers.l1, self.alignment.l1),
            (MemLevel::L0A, "l0a", self.buffers.l0a, self.alignment.l0a),
            (MemLevel::L0B, "l0b", self.buffers.l0b, self.alignment.l0b),
            (MemLevel::L0C, "l0c", self.buffers.l0c, self.alignment.l0c),
        ];
        for (level, name, bytes, alignment) in buffers {
            if !(alignment.is_power_of_two() && alignment <= MAX_ALIGNMENT) {
                return Err(format!(
                    "`alignment.{name}` is {alignment}, not a power of two up to {MAX_ALIGNMENT}"
                ));
            }
            // The least any kernel that uses the buffer reserves there, and one aligned tile.
            let least = level.pool_alignment().max(alignment);
            if !(least..=MAX_BUFFER_BYTES).contains(&bytes) {
                return Err(format!(
                    "`buffers.{name}` is {bytes} bytes, outside {least}..={MAX_BUFFER_BYTES} \
                     (a kernel that uses {name} reserves at least {least} bytes there; on-core \
                     buffers are kilobytes to a few megabytes)"
                ));
            }
        }
        let rates = self.copy_bytes_per_cycle;
        for (field, value) in [
            ("copy_bytes_per_cycle.gm_to_l1", rates.gm_to_l1),
            ("copy_bytes_per_cycle.gm_to_ub", rates.gm_to_ub),
            ("copy_bytes_per_cycle.l1_to_l0a", rates.l1_to_l0a),
            ("copy_bytes_per_cycle.l1_to_l0b", rates.l1_to_l0b),
            ("copy_bytes_per_cycle.l0c_out", rates.l0c_out),
            ("copy_bytes_per_cycle.ub_to_gm", rates.ub_to_gm),
            ("copy_bytes_per_cycle.ub_to_l1", rates.ub_to_l1),
        ] {
            within(
                field,
                value,
                (MIN_BYTES_PER_CYCLE, MAX_BYTES_PER_CYCLE),
                "bytes per cycle",
            )?;
        }
        within(
            "vector_bytes_per_repeat",
            self.vector_bytes_per_repeat,
            (MIN_VECTOR_BYTES_PER_REPEAT, MAX_BYTES_PER_CYCLE),
            "bytes",
        )?;
        for (dtype, &macs) in &self.cube_macs_per_cycle {
            within(
                &format!("cube_macs_per_cycle.{dtype}"),
                macs,
                (MIN_MACS_PER_CYCLE, MAX_MACS_PER_CYCLE),
                "multiply-accumulates per cycle",
            )?;
        }
        let fixed = |field: &str, value: f64| {
            at_least_zero(field, value)?;
            within(field, value, (0.0, MAX_CYCLES), "cycles")
        };
        let per_repeat = |field: &str, value: f64| {
            at_least_zero(field, value)?;
            within(
                field,
                value,
                (0.0, MAX_CYCLES_PER_REPEAT),
                "cycles per repeat",
            )
        };
        for (field, value) in [
            ("copy_latency_cycles", self.copy_latency_cycles),
            ("cube_latency_cycles", self.cube_latency_cycles),
            ("vector_latency_cycles", self.vector_latency_cycles),
            ("issue_cycles", self.issue_cycles),
            ("loop_overhead_cycles", self.loop_overhead_cycles),
        ] {
            fixed(field, value)?;
        }
        let costs = self.vector_cycles_per_repeat;
        for (field, value) in [
            ("vector_cycles_per_repeat.simple", costs.simple),
            (
                "vector_cycles_per_repeat.transcendental",
                costs.transcendental,
            ),
            ("vector_cycles_per_repeat.reduce", costs.reduce),
        ] {
            per_repeat(field, value)?;
        }
        if let Some(model) = &self.pipe_model {
            for (field, value) in [
                (
                    "pipe_model.gm_read_latency_cycles",
                    model.gm_read_latency_cycles,
                ),
                (
                    "pipe_model.gm_write_latency_cycles",
                    model.gm_write_latency_cycles,
                ),
                ("pipe_model.mte1_latency_cycles", model.mte1_latency_cycles),
                ("pipe_model.cube_latency_cycles", model.cube_latency_cycles),
                (
                    "pipe_model.cross_core_flag_cycles",
                    model.cross_core_flag_cycles,
                ),
            ] {
                fixed(field, value)?;
            }
            let mut known = Inst::vector_op_names();
            known.extend(ROW_REDUCE_STEP_NAMES);
            for (op, by_dtype) in &model.vector_ops {
                if !known.contains(&op.as_str()) {
                    return Err(format!(
                        "`pipe_model.vector_ops.{op}`: no vector instruction is named `{op}`; \
                         the names are {}",
                        known.join(", ")
                    ));
                }
                for (dtype, cost) in by_dtype {
                    let field = |what: &str| format!("pipe_model.vector_ops.{op}.{dtype}.{what}");
                    per_repeat(&field("cycles_per_repeat"), cost.cycles_per_repeat)?;
                    fixed(&field("latency_cycles"), cost.latency_cycles)?;
                }
            }
        }
        for (field, value) in [
            ("estimator.cube_efficiency", self.estimator.cube_efficiency),
            (
                "estimator.vector_efficiency",
                self.estimator.vector_efficiency,
            ),
            (
                "estimator.memory_efficiency",
                self.estimator.memory_efficiency,
            ),
        ] {
            within(
                field,
                value,
                (MIN_EFFICIENCY, 1.0),
                "(a fraction of the peak)",
            )?;
        }
        for (field, value) in [
            ("estimator.static_seconds", self.estimator.static_seconds),
            ("launch.seconds", self.launch.seconds),
            ("launch.mix_seconds", self.launch.mix_seconds),
        ] {
            within(field, value, (0.0, 1.0), "seconds")?;
        }
        Ok(())
    }

    /// The profile as pretty JSON, the form [`DeviceProfile::load`] reads.
    ///
    /// # Errors
    ///
    /// serde_json's error (not expected: every field is plain data).
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string_pretty(self)
    }

    /// The cube's multiply-accumulates per cycle for inputs of `dtype`, if it takes them.
    pub fn cube_macs(&self, dtype: DType) -> Option<f64> {
        self.cube_macs_per_cycle.get(&dtype).copied()
    }

    /// Capacity of `level` in bytes; `None` for global memory.
    pub fn capacity(&self, level: MemLevel) -> Option<u64> {
        self.buffers.get(level)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_profile_loads_and_checks() {
        for name in DeviceProfile::builtin_names() {
            let p = DeviceProfile::builtin(name).unwrap();
            assert_eq!(p.name, name);
            assert!(p.cube_macs(DType::F16).is_some(), "{name}");
        }
    }

    #[test]
    fn buffers_match_devices_md() {
        let b = DeviceProfile::builtin("ascend910b").unwrap().buffers;
        assert_eq!(
            (b.ub, b.l1, b.l0a, b.l0c),
            (184 * 1024, 512 * 1024 - 128, 64 * 1024, 128 * 1024)
        );
        let x90 = DeviceProfile::builtin("kirinx90").unwrap().buffers;
        assert_eq!(
            (x90.ub, x90.l1, x90.l0a, x90.l0b, x90.l0c),
            (118 * 1024, 1024 * 1024, 64 * 1024, 64 * 1024, 128 * 1024)
        );
        let k9030 = DeviceProfile::builtin("kirin9030").unwrap().buffers;
        assert_eq!(
            (k9030.ub, k9030.l1, k9030.l0a, k9030.l0b, k9030.l0c),
            (118 * 1024, 512 * 1024, 32 * 1024, 32 * 1024, 64 * 1024)
        );
    }

    /// The numbers of the public platform files (PyPTO's simulator `.ini`s) the profiles
    /// cite in their notes.
    #[test]
    fn cores_cube_and_l2_match_the_platform_files() {
        for name in ["kirin9030", "kirinx90"] {
            let p = DeviceProfile::builtin(name).unwrap();
            assert_eq!(p.ai_cores, 1, "{name}");
            assert_eq!(p.cube_macs(DType::F16), Some(16.0 * 8.0 * 16.0), "{name}");
            assert_eq!(p.l2.capacity, 0, "{name}: l2_size=0");
            assert!(p.notes.iter().any(|n| n.contains(".ini")), "{name}");
        }
        let a = DeviceProfile::builtin("ascend910b").unwrap();
        assert_eq!((a.ai_cores, a.clock_hz), (24, 1.85e9));
        assert_eq!(a.l2.capacity, 192 << 20);
        let per_core = |bandwidth: f64| bandwidth / a.clock_hz / 24.0;
        assert!((per_core(a.memory_bandwidth) - 32.0).abs() < 1e-9);
        assert!((per_core(a.l2.bandwidth) - 110.0).abs() < 1e-9);
        assert!((per_core(a.l2.write_bandwidth) - 86.0).abs() < 1e-9);
        let r = a.copy_bytes_per_cycle;
        assert_eq!(
            (r.l1_to_l0a, r.l1_to_l0b, r.ub_to_gm, r.ub_to_l1),
            (512.0, 256.0, 64.0, 128.0)
        );
        // The pipe model's GM transfer rate where A2A3.ini gives none (see the notes' rule).
        assert_eq!((r.gm_to_l1, r.gm_to_ub, r.l0c_out), (87.0, 87.0, 87.0));
    }

    /// The numbers of PyPTO's cycle-level A2A3 pipe model (def.h, pipe.h) the 910B
    /// profiles cite: latencies, and a few rows of the vector table.
    #[test]
    fn the_910b_pipe_model_matches_the_cycle_level_model() {
        for name in ["ascend910b", "ascend910b2"] {
            let p = DeviceProfile::builtin(name).unwrap();
            let m = p.pipe_model.as_ref().expect("a pipe model");
            // ddrRdLatency_ 347 + 4, ddrWrLatency_ 203 + 4, load2dUeLatency_ 9 + 16,
            // cubeStateLatency_ 20.
            assert_eq!(
                (
                    m.gm_read_latency_cycles,
                    m.gm_write_latency_cycles,
                    m.mte1_latency_cycles,
                    m.cube_latency_cycles
                ),
                (351.0, 207.0, 25.0, 20.0),
                "{name}"
            );
            let op = |op: &str, dtype: DType| {
                let c = m.vector_op(op, dtype).unwrap();
                (c.cycles_per_repeat, c.latency_cycles)
            };
            // {bytes per cycle, throughput, delay} -> (256 / bytes x throughput, delay + 15).
            assert_eq!(op("add", DType::F32), (1.0, 21.0)); // VADD {256, 1, 6}
            assert_eq!(op("exp", DType::F32), (2.0, 27.0)); // VEXP {128, 1, 12}
            assert_eq!(op("exp", DType::F16), (4.0, 27.0)); // VEXP {64, 1, 12}
            assert_eq!(op("div", DType::F16), (4.0, 28.0)); // VDIV {64, 1, 13}
            assert_eq!(op("reduce_sum", DType::F32), (7.0, 35.0)); // VCADD mode 0, 20
            assert_eq!(op("reduce_sum", DType::F16), (7.0, 38.0)); // VCADD mode 0, 23
            assert_eq!(op("reduce_max", DType::F32), (7.0, 23.0)); // VCMAX {256, 1, 8}
            assert_eq!(op("cast", DType::F32), (1.0, 19.0)); // VCONV, delay 4
            // The row reduction's steps: VCGADD {256, 1, 12}, VCGMAX {256, 1, 5},
            // MOV_UB_UB (1 cycle per repeat, ubDatapassLatency 12, no vecDelay_).
            assert_eq!(op("group_reduce_sum", DType::F32), (1.0, 27.0));
            assert_eq!(op("group_reduce_max", DType::F32), (1.0, 20.0));
            assert_eq!(op("ub_copy", DType::F16), (1.0, 12.0));
            assert!(m.vector_op("tanh", DType::F32).is_none());
            // CUBE_PE_TAB: kstep 4 for f32 on 16 x 16 fractals.
            assert_eq!(p.cube_macs(DType::F32), Some(16.0 * 16.0 * 4.0));
        }
        for name in ["kirin9030", "kirinx90"] {
            assert!(DeviceProfile::builtin(name).unwrap().pipe_model.is_none());
        }
    }

    /// A profile file written before the pipe model (no `pipe_model` field) loads with the
    /// plain costs, exactly as before.
    #[test]
    fn a_profile_without_a_pipe_model_keeps_its_plain_costs() {
        let text = include_str!("../data/devices/ascend910b.json");
        let mut value: serde_json::Value = serde_json::from_str(text).unwrap();
        value.as_object_mut().unwrap().remove("pipe_model");
        let old = DeviceProfile::from_json("old.json", &value.to_string()).unwrap();
        assert_eq!(old.pipe_model, None);
        assert_eq!(old.copy_latency_cycles, 200.0);
        assert_eq!(old.vector_latency_cycles, 20.0);
        // Written back, it has no `pipe_model` either.
        let written: serde_json::Value = serde_json::from_str(&old.to_json().unwrap()).unwrap();
        assert!(written.get("pipe_model").is_none());
    }

    #[test]
    fn a_pipe_model_entry_for_an_unknown_instruction_is_refused() {
        let text = include_str!("../data/devices/ascend910b.json").replacen(
            "\"exp\": {",
            "\"expo\": {",
            1,
        );
        let err = DeviceProfile::from_json("x.json", &text)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("pipe_model.vector_ops.expo") && err.contains("exp2"),
            "{err}"
        );
        let text = include_str!("../data/devices/ascend910b.json").replacen(
            "\"gm_read_latency_cycles\": 351.0",
            "\"gm_read_latency_cycles\": -1",
            1,
        );
        let err = DeviceProfile::from_json("x.json", &text)
            .unwrap_err()
            .to_string();
        assert!(err.contains("pipe_model.gm_read_latency_cycles"), "{err}");
    }

    /// The 910B's launch cost is catlass's mix-kernel figure (1-5 us, its middle), none for
    /// a pure kernel; a Kirin profile has none; a negative one is refused.
    #[test]
    fn the_launch_cost_is_read_and_checked() {
        let b = DeviceProfile::builtin("ascend910b").unwrap();
        assert_eq!(
            b.launch,
            LaunchCost {
                seconds: 0.0,
                mix_seconds: 3e-6
            }
        );
        assert_eq!(b.launch.cycles(b.clock_hz, true), 5550);
        assert_eq!(b.launch.cycles(b.clock_hz, false), 0);
        assert!(b.notes.iter().any(|n| n.contains("CommonMatmul_en.md")));
        let kirin = DeviceProfile::builtin("kirin9030").unwrap();
        assert_eq!(kirin.launch, LaunchCost::default());
        let text = include_str!("../data/devices/ascend910b.json").replacen(
            "\"mix_seconds\": 3e-06",
            "\"mix_seconds\": -1e-06",
            1,
        );
        let err = DeviceProfile::from_json("x.json", &text)
            .unwrap_err()
            .to_string();
        assert!(err.contains("launch.mix_seconds"), "{err}");
    }

    /// The 910B2 is the 910B1 profile at the 910B2's clock (the vendor's flash-attention
    /// cost model's SOC_SPECS), its bandwidths derived from the same per-cycle rates.
    #[test]
    fn ascend910b2_is_the_910b1_profile_at_1_8_ghz() {
        let (b1, b2) = (
            DeviceProfile::builtin("ascend910b").unwrap(),
            DeviceProfile::builtin("ascend910b2").unwrap(),
        );
        assert_eq!((b2.ai_cores, b2.clock_hz, b2.vector_cores), (24, 1.8e9, 2));
        assert!(b2.notes.iter().any(|n| n.contains("fa_cost_model.py")));
        let per_core_cycle = |p: &DeviceProfile, bandwidth: f64| bandwidth / p.clock_hz / 24.0;
        for (a, b) in [
            (b1.memory_bandwidth, b2.memory_bandwidth),
            (b1.l2.bandwidth, b2.l2.bandwidth),
            (b1.l2.write_bandwidth, b2.l2.write_bandwidth),
        ] {
            assert!((per_core_cycle(&b1, a) - per_core_cycle(&b2, b)).abs() < 1e-9);
        }
        let same = DeviceProfile {
            name: b1.name.clone(),
            description: b1.description.clone(),
            notes: b1.notes.clone(),
            clock_hz: b1.clock_hz,
            memory_bandwidth: b1.memory_bandwidth,
            l2: b1.l2,
            ..b2
        };
        assert_eq!(same, b1, "only the clock and what derives from it differ");
    }

    #[test]
    fn an_l2_without_bandwidth_is_refused() {
        let text = include_str!("../data/devices/ascend910b.json")
            .replace("\"bandwidth\": 4884000000000.0", "\"bandwidth\": 0");
        let err = DeviceProfile::from_json("x.json", &text).unwrap_err();
        assert!(
            err.to_string()
                .contains("`l2.bandwidth` must be a positive number"),
            "{err}"
        );
    }

    #[test]
    fn cube_vector_is_split_on_910b_coupled_on_kirin_and_coupled_when_absent() {
        let a = DeviceProfile::builtin("ascend910b").unwrap();
        assert_eq!(a.cube_vector, CubeVector::Split);
        assert!(
            a.notes
                .iter()
                .any(|n| n.contains("cube_vector_combine=split")),
            "the split is cited"
        );
        for name in ["kirin9030", "kirinx90"] {
            let p = DeviceProfile::builtin(name).unwrap();
            assert_eq!(p.cube_vector, CubeVector::Coupled, "{name}");
        }
        // A profile file without the field (any written before it existed) loads coupled.
        let text = include_str!("../data/devices/ascend910b.json")
            .replace("\"cube_vector\": \"split\",", "")
            .replace("\"vector_cores\": 2,", "");
        assert!(!text.contains("\"cube_vector\"") && !text.contains("\"vector_cores\""));
        let old = DeviceProfile::from_json("old.json", &text).unwrap();
        assert_eq!(old.cube_vector, CubeVector::Coupled);
        // And a bad value names the field and the choices.
        let text = include_str!("../data/devices/ascend910b.json")
            .replace("\"cube_vector\": \"split\"", "\"cube_vector\": \"fused\"");
        let err = DeviceProfile::from_json("x.json", &text).unwrap_err();
        assert!(
            err.to_string()
                .contains("`cube_vector` must be \"coupled\" or \"split\", got \"fused\""),
            "{err}"
        );
        assert_eq!((a.vector_cores, old.vector_cores), (2, 1));
        let text = include_str!("../data/devices/kirin9030.json").replace(
            "\"cube_vector\": \"coupled\",",
            "\"cube_vector\": \"coupled\", \"vector_cores\": 2,",
        );
        let err = DeviceProfile::from_json("x.json", &text).unwrap_err();
        assert!(err.to_string().contains("a coupled core"), "{err}");
        // The profile's JSON round-trips the field.
        let back = DeviceProfile::from_json("a.json", &a.to_json().unwrap()).unwrap();
        assert_eq!(back, a);
    }

    /// The bound of the longest instruction the bounds allow, in seconds: a tile of
    /// `MAX_BUFFER_BYTES` moved at the slowest copy path or memory share, computed at the
    /// slowest vector repeat or multiplied at the slowest cube, plus its fixed costs (a
    /// copy's latency, a pipe model's GM latency, the issue, a loop iteration's overhead).
    #[test]
    fn within_the_bounds_no_instruction_takes_longer_than_a_day() {
        let tile = MAX_BUFFER_BYTES as f64;
        let copy = tile / MIN_BYTES_PER_CYCLE / MIN_CLOCK_HZ;
        let memory = tile / MIN_BANDWIDTH_PER_CORE;
        let vector = tile / MIN_VECTOR_BYTES_PER_REPEAT * MAX_CYCLES_PER_REPEAT / MIN_CLOCK_HZ;
        // m k n = sqrt(mk kn mn): 1-byte inputs in L0A and L0B, 4-byte results in L0C.
        let macs = (tile * tile * tile / 4.0).sqrt();
        assert_eq!(macs, 2f64.powi(41));
        let cube = macs / MIN_MACS_PER_CYCLE / MIN_CLOCK_HZ;
        let fixed = 4.0 * MAX_CYCLES / MIN_CLOCK_HZ;
        let longest = copy.max(memory).max(vector).max(cube) + fixed;
        assert!(longest <= MAX_INSTRUCTION_SECONDS, "{longest} s");
        // And not far below: the bounds are no tighter than they need to be.
        assert!(longest > MAX_INSTRUCTION_SECONDS / 4.0, "{longest} s");
    }

    /// A profile edited at `pointer` to `value`, loaded as `x.json`: its error.
    fn edited_error(pointer: &str, value: serde_json::Value) -> String {
        let mut profile: serde_json::Value =
            serde_json::from_str(include_str!("../data/devices/kirin9030.json")).unwrap();
        *profile.pointer_mut(pointer).unwrap() = value;
        DeviceProfile::from_json("x.json", &profile.to_string())
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn rates_too_small_for_an_instruction_to_end_within_a_day_are_refused() {
        let suffix = ": a typo? (the built-in profiles show the scale; within the range no \
                      instruction takes longer than a day)";
        let cases = [
            (
                "/memory_bandwidth",
                "`memory_bandwidth` is 1e-300 bytes per second (at least 1e4 per core, of 1 \
                 cores), outside 1e4..=1e15",
            ),
            ("/clock_hz", "`clock_hz` is 1e-300 Hz, outside 1e6..=1e11"),
            (
                "/copy_bytes_per_cycle/gm_to_ub",
                "`copy_bytes_per_cycle.gm_to_ub` is 1e-300 bytes per cycle, outside 1e-2..=1e6",
            ),
            (
                "/vector_bytes_per_repeat",
                "`vector_bytes_per_repeat` is 1e-300 bytes, outside 1e0..=1e6",
            ),
            (
                "/cube_macs_per_cycle/f16",
                "`cube_macs_per_cycle.f16` is 1e-300 multiply-accumulates per cycle, outside \
                 6.4e1..=1e8",
            ),
            (
                "/estimator/memory_efficiency",
                "`estimator.memory_efficiency` is 1e-300 (a fraction of the peak), outside \
                 1e-3..=1e0",
            ),
        ];
        for (pointer, expected) in cases {
            assert_eq!(
                edited_error(pointer, 1e-300.into()),
                format!("device profile x.json: {expected}{suffix}"),
                "{pointer}"
            );
        }
        assert_eq!(
            edited_error("/vector_cycles_per_repeat/transcendental", 1e300.into()),
            format!(
                "device profile x.json: `vector_cycles_per_repeat.transcendental` is 1e300 \
                 cycles per repeat, outside 0e0..=1.28e2{suffix}"
            )
        );
    }

    #[test]
    fn a_buffer_smaller_than_any_kernel_needs_is_refused() {
        assert_eq!(
            edited_error("/buffers/ub", 1.into()),
            "device profile x.json: `buffers.ub` is 1 bytes, outside 32..=268435456 (a kernel \
             that uses ub reserves at least 32 bytes there; on-core buffers are kilobytes to a \
             few megabytes)"
        );
        assert_eq!(
            edited_error("/buffers/l0c", 1000.into()),
            "device profile x.json: `buffers.l0c` is 1000 bytes, outside 1024..=268435456 (a \
             kernel that uses l0c reserves at least 1024 bytes there; on-core buffers are \
             kilobytes to a few megabytes)"
        );
    }

    #[test]
    fn a_profile_at_the_edges_of_the_ranges_loads() {
        let mut profile: serde_json::Value =
            serde_json::from_str(include_str!("../data/devices/kirin9030.json")).unwrap();
        for (pointer, value) in [
            ("/clock_hz", serde_json::json!(MIN_CLOCK_HZ)),
            (
                "/memory_bandwidth",
                serde_json::json!(MIN_BANDWIDTH_PER_CORE),
            ),
            ("/buffers/ub", serde_json::json!(32)),
            ("/buffers/l1", serde_json::json!(512)),
            ("/buffers/l0a", serde_json::json!(512)),
            ("/buffers/l0b", serde_json::json!(512)),
            ("/buffers/l0c", serde_json::json!(1024)),
            ("/alignment/l0c", serde_json::json!(1024)),
            (
                "/copy_bytes_per_cycle/gm_to_ub",
                serde_json::json!(MIN_BYTES_PER_CYCLE),
            ),
            (
                "/vector_bytes_per_repeat",
                serde_json::json!(MIN_VECTOR_BYTES_PER_REPEAT),
            ),
            (
                "/vector_cycles_per_repeat/transcendental",
                serde_json::json!(MAX_CYCLES_PER_REPEAT),
            ),
            (
                "/cube_macs_per_cycle/f16",
                serde_json::json!(MIN_MACS_PER_CYCLE),
            ),
            (
                "/estimator/memory_efficiency",
                serde_json::json!(MIN_EFFICIENCY),
            ),
            ("/copy_latency_cycles", serde_json::json!(MAX_CYCLES)),
        ] {
            *profile.pointer_mut(pointer).unwrap() = value;
        }
        let edge = DeviceProfile::from_json("edge.json", &profile.to_string()).unwrap();
        assert_eq!((edge.clock_hz, edge.buffers.ub), (MIN_CLOCK_HZ, 32));
    }

    #[test]
    fn a_bad_profile_names_the_field() {
        let mut text = include_str!("../data/devices/kirin9030.json").to_owned();
        text = text.replace("\"ai_cores\": 1", "\"ai_cores\": 0");
        let err = DeviceProfile::from_json("x.json", &text).unwrap_err();
        assert_eq!(
            err.to_string(),
            "device profile x.json: `ai_cores` must be at least 1"
        );
    }
}
