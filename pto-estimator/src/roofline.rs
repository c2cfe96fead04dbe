//! The default estimator: a roofline over the device profile's peaks.
//!
//! `time = max(compute, memory) + static`, where compute is the cube's time and the vector
//! unit's, overlapped (the larger) or serialized (the sum) as the profile's
//! `estimator.overlap_cube_vector` says. Peaks, per device:
//!
//! - cube: `cube_macs_per_cycle[dtype] x ai_cores x clock_hz x cube_efficiency` MACs/s;
//! - vector: `vector_bytes_per_repeat / element size / simple cycles per repeat x ai_cores x
//!   clock_hz x vector_efficiency` elements/s (every element op costs one simple op: kinds
//!   of instruction are not told apart);
//! - memory: `memory_bandwidth x memory_efficiency` bytes/s.

use pto_op::{DType, DeviceProfile, PerformanceProperties};
use serde::Serialize;

/// What limits an op's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Bound {
    /// Global memory traffic.
    Memory,
    /// Cube (matrix) compute.
    Cube,
    /// Vector (element-wise) compute.
    Vector,
    /// The fixed per-op cost outweighs the rest.
    Static,
    /// Per-instruction latencies and dependencies of the kernel ([`crate::pipes`]) take
    /// longer than any peak rate would.
    Latency,
    /// A direct estimator gave the time; no breakdown is known.
    Direct,
}

impl core::fmt::Display for Bound {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.pad(match self {
            Bound::Memory => "memory",
            Bound::Cube => "cube",
            Bound::Vector => "vector",
            Bound::Static => "static",
            Bound::Latency => "latency",
            Bound::Direct => "direct",
        })
    }
}

/// A compute unit of the device, each with its own peak rate (its own roof).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// The cube (matrix) unit: multiply-accumulates, 2 FLOPs each.
    Cube,
    /// The vector unit: element operations, 1 FLOP each.
    Vector,
}

impl core::fmt::Display for Unit {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.pad(match self {
            Unit::Cube => "cube",
            Unit::Vector => "vector",
        })
    }
}

/// The roofline time of one op call and its parts, in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Roofline {
    /// Cube time.
    pub cube_seconds: f64,
    /// Vector time.
    pub vector_seconds: f64,
    /// Global memory time.
    pub memory_seconds: f64,
    /// The fixed per-op cost.
    pub static_seconds: f64,
    /// The kernel's time under the pipe model ([`crate::pipes`]); 0 when unknown.
    pub pipeline_seconds: f64,
    /// The total.
    pub seconds: f64,
    /// The largest part.
    pub bound: Bound,
}

impl Roofline {
    /// The roofline with the kernel's pipe-model time as a further lower bound of the
    /// kernel's time: the peaks say how fast the work could go, the pipe model what the
    /// latencies and dependencies of this kernel allow.
    pub fn with_pipeline(self, pipeline_seconds: f64) -> Roofline {
        let kernel = self.seconds - self.static_seconds;
        let (seconds, bound) = if pipeline_seconds > kernel {
            (pipeline_seconds + self.static_seconds, Bound::Latency)
        } else {
            (self.seconds, self.bound)
        };
        Roofline {
            pipeline_seconds,
            seconds,
            bound,
            ..self
        }
    }
}

/// The device's peak rates, with the profile's efficiencies applied.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Peaks {
    /// Cube multiply-accumulates per second, by input dtype.
    pub cube_macs_per_second: Vec<(DType, f64)>,
    /// Vector bytes per second (element rate times element size: the same for every dtype).
    pub vector_bytes_per_second: f64,
    /// Global memory bytes per second.
    pub memory_bytes_per_second: f64,
}

impl Peaks {
    /// The peaks of `device`.
    pub fn of(device: &DeviceProfile) -> Peaks {
        let per_second = f64::from(device.ai_cores) * device.clock_hz;
        let e = device.estimator;
        Peaks {
            cube_macs_per_second: device
                .cube_macs_per_cycle
                .iter()
                .map(|(d, macs)| (*d, macs * per_second * e.cube_efficiency))
                .collect(),
            vector_bytes_per_second: device.vector_bytes_per_repeat
                / device
                    .vector_cycles_per_repeat
                    .simple
                    .max(f64::MIN_POSITIVE)
                * per_second
                * e.vector_efficiency,
            memory_bytes_per_second: device.memory_bandwidth * e.memory_efficiency,
        }
    }

    /// Cube MACs per second for `dtype`; a dtype the cube does not take runs at the
    /// slowest rate it has (conservative).
    pub fn cube(&self, dtype: DType) -> f64 {
        self.cube_macs_per_second
            .iter()
            .find(|(d, _)| *d == dtype)
            .map(|(_, r)| *r)
            .unwrap_or_else(|| {
                self.cube_macs_per_second
                    .iter()
                    .map(|(_, r)| *r)
                    .fold(f64::INFINITY, f64::min)
            })
    }

    /// Vector element operations per second on `dtype`.
    pub fn vector(&self, dtype: DType) -> f64 {
        self.vector_bytes_per_second / dtype.size_bytes().max(1) as f64
    }

    /// The FLOP/s ceiling of `unit` on `dtype`: 2 FLOPs per cube multiply-accumulate, 1 per
    /// vector element operation.
    pub fn flops(&self, unit: Unit, dtype: DType) -> f64 {
        match unit {
            Unit::Cube => 2.0 * self.cube(dtype),
            Unit::Vector => self.vector(dtype),
        }
    }
}

/// The roofline time of `properties` on `device`.
///
/// ```
/// use pto_op::{DeviceProfile, PerformanceProperties};
/// use pto_estimator::roofline::{Bound, roofline};
/// let kirin = DeviceProfile::builtin("kirin9030").unwrap();
/// let copy = PerformanceProperties { memory_read_bytes: 1 << 30, ..Default::default() };
/// let r = roofline(&copy, &kirin);
/// assert_eq!(r.bound, Bound::Memory);
/// assert!((r.memory_seconds - (1u64 << 30) as f64 / (6.8e10 * 0.8)).abs() < 1e-9);
/// ```
pub fn roofline(properties: &PerformanceProperties, device: &DeviceProfile) -> Roofline {
    roofline_with(properties, device, &Peaks::of(device))
}

/// [`roofline`] with the peaks computed once.
pub fn roofline_with(
    properties: &PerformanceProperties,
    device: &DeviceProfile,
    peaks: &Peaks,
) -> Roofline {
    let mut cube_seconds = 0.0;
    let mut vector_seconds = 0.0;
    for (dtype, ops) in &properties.compute_ops {
        if ops.mma_ops > 0 {
            cube_seconds += ops.mma_ops as f64 / peaks.cube(*dtype);
        }
        if ops.gp_ops > 0 {
            vector_seconds += ops.gp_ops as f64 / peaks.vector(*dtype);
        }
    }
    let bytes = properties.memory_read_bytes + properties.memory_write_bytes;
    let memory_seconds = bytes as f64 / peaks.memory_bytes_per_second;
    let static_seconds = device.estimator.static_seconds;
    let compute = if device.estimator.overlap_cube_vector {
        cube_seconds.max(vector_seconds)
    } else {
        cube_seconds + vector_seconds
    };
    let bound = [
        (Bound::Memory, memory_seconds),
        (Bound::Cube, cube_seconds),
        (Bound::Vector, vector_seconds),
        (Bound::Static, static_seconds),
    ]
    .into_iter()
    .fold((Bound::Static, f64::NEG_INFINITY), |best, (b, t)| {
        if t > best.1 { (b, t) } else { best }
    })
    .0;
    Roofline {
        cube_seconds,
        vector_seconds,
        memory_seconds,
        static_seconds,
        pipeline_seconds: 0.0,
        seconds: compute.max(memory_seconds) + static_seconds,
        bound,
    }
}
