//! Performance models of pto-op operators: the estimator registry's priority chain, the
//! system default properties, the roofline, and model reports.
//!
//! ```
//! use pto_op::{DType, DeviceProfile, Shape, TensorType};
//! use pto_estimator::{Estimator, chain::Source};
//! let kirin = DeviceProfile::builtin("kirin9030").unwrap();
//! let mut estimator = Estimator::linked(&kirin).unwrap();
//! let t = TensorType { shape: Shape::from([256, 256]), dtype: DType::F16 };
//! let info = pto_op::registry::find("std.matmul").unwrap()
//!     .invoke_info(&[t.clone(), t], &Default::default()).unwrap();
//! let estimate = estimator.estimate(&info).unwrap();
//! assert_eq!(estimate.source, Source::KernelIr);
//! assert!(estimate.seconds > 0.0);
//! ```
//!
//! - [`chain`]: which model answers for an op on a device, and every registration.
//! - [`derive`](mod@derive): properties counted from an op's kernel IR when nobody registered any.
//! - [`roofline`]: the default estimator over a device profile.
//! - [`pipes`]: the per-instruction costs of a kernel the roofline's peaks leave out.
//! - [`report`], [`plot`]: a whole model: per-op table, totals, memory, trace, roofline plot.
//! - [`accuracy`], [`calibration`]: the estimates against the simulator, and the fitted
//!   per-op corrections a profile's `calibration` section holds.

pub mod accuracy;
pub mod calibration;
pub mod chain;
mod defaults;
pub mod derive;
mod error;
pub mod llm;
pub mod pipes;
pub mod plot;
pub mod report;
pub mod roofline;

use std::collections::HashMap;

use pto_op::kernel::ValidProgram;
use pto_op::kernel::buffers::{self, BufferError};
use pto_op::{AttrValue, DeviceProfile, OpInvokeInfo, PerformanceProperties, registry};
use serde::Serialize;

use crate::chain::{Chain, Model, Source};
use crate::roofline::{Bound, Peaks, Roofline, roofline_with};

pub use error::EstimateError;

/// The estimate of one op call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpEstimate {
    /// The op.
    pub op: String,
    /// Estimated time, in seconds.
    pub seconds: f64,
    /// What limits it.
    pub bound: Bound,
    /// The link of the chain the numbers came from.
    pub source: Source,
    /// Whether the device's calibration of the op corrected `seconds` (the properties and
    /// roofline parts stay uncalibrated).
    pub calibrated: bool,
    /// Where that model is written (`None` when the system derived it).
    pub location: Option<String>,
    /// The properties the roofline used (`None` for a direct estimate).
    pub properties: Option<PerformanceProperties>,
    /// The roofline's parts (`None` for a direct estimate).
    pub roofline: Option<Roofline>,
    /// Why the kernel IR was not used, when properties fell back to memory traffic (the
    /// kernel does not trace, or does not fit the device: [`Source::Overflow`]).
    pub note: Option<String>,
    /// Why the traced kernel does not fit the device's on-core buffers
    /// ([`Source::Overflow`]), as the buffer check gives it; `note` says the same in words.
    /// (Not serialized: `note` carries it in a report.)
    #[serde(skip)]
    pub overflow: Option<BufferError>,
}

impl OpEstimate {
    /// The fixed per-op (launch) part of `seconds`: the profile's `static_seconds` for a
    /// roofline estimate, 0 for a direct one.
    pub fn launch_seconds(&self) -> f64 {
        self.roofline.map_or(0.0, |r| r.static_seconds)
    }

    /// `seconds` without the launch cost: the kernel's own time.
    pub fn kernel_seconds(&self) -> f64 {
        self.seconds - self.launch_seconds()
    }
}

/// Estimates op calls on one device through the chain, remembering each distinct call.
///
/// Whatever link of the chain gives an op's properties (user, default, or counted from its
/// kernel), when the op has a kernel that traces for the call, the kernel's pipe-model time
/// ([`pipes`]) bounds the roofline's time from below ([`Roofline::with_pipeline`]):
/// properties say how much work there is, the kernel what its instructions' latencies
/// allow, and the estimate is the slower of the two. Only a direct estimator (a time, not
/// properties) replaces the kernel's bound.
///
/// Every traced kernel is checked against the device's on-core buffers with the kernel
/// layer's buffer check ([`pto_op::kernel::buffers::check`], the check the simulator
/// runs): a kernel that fails it cannot run there, so the call is priced as memory traffic
/// ([`Source::Overflow`]), with the check's error as its `overflow` and its message in its
/// `note`, and reports list it.
#[derive(Debug)]
pub struct Estimator<'a> {
    chain: &'a Chain,
    device: &'a DeviceProfile,
    peaks: Peaks,
    /// Each distinct call's estimate, by the hash of the call ([`call_hash`]); the calls
    /// of one hash are compared whole, so a collision costs a comparison, never a wrong
    /// estimate.
    cache: HashMap<u64, Vec<(OpInvokeInfo, OpEstimate)>>,
}

/// The hash of a call: its op, input and output types and params (an `f32` or `f64`
/// param by its bits). Hashing the call's fields directly, not its `Debug` text, keeps a
/// cache hit to a hash and one comparison.
fn call_hash(info: &OpInvokeInfo) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    info.op.hash(&mut h);
    info.inputs.hash(&mut h);
    info.outputs.hash(&mut h);
    for (name, value) in &info.attrs {
        name.hash(&mut h);
        match value {
            AttrValue::F32(v) => v.to_bits().hash(&mut h),
            AttrValue::F64(v) => v.to_bits().hash(&mut h),
            AttrValue::I32(v) => v.hash(&mut h),
            AttrValue::I64(v) => v.hash(&mut h),
            AttrValue::Bool(v) => v.hash(&mut h),
            AttrValue::String(v) => v.hash(&mut h),
            AttrValue::I64s(v) => v.hash(&mut h),
            AttrValue::F32s(v) => v.iter().for_each(|x| x.to_bits().hash(&mut h)),
        }
    }
    h.finish()
}

impl<'a> Estimator<'a> {
    /// An estimator over `chain` for `device`.
    pub fn new(chain: &'a Chain, device: &'a DeviceProfile) -> Estimator<'a> {
        Estimator {
            chain,
            device,
            peaks: Peaks::of(device),
            cache: HashMap::new(),
        }
    }

    /// The buffer check's error for a traced kernel that does not fit the device.
    fn overflow(&self, program: Option<&ValidProgram>) -> Option<BufferError> {
        buffers::check(program?, self.device).err()
    }

    /// The `note` of a call priced as memory traffic because its kernel does not fit.
    fn overflow_note(&self, error: &BufferError) -> String {
        format!("the kernel does not fit {}: {error}", self.device.name)
    }

    /// An estimator over every op and registration linked into this program.
    ///
    /// # Errors
    ///
    /// The op registry's error, when two linked ops share a name.
    pub fn linked(device: &'a DeviceProfile) -> Result<Estimator<'a>, EstimateError> {
        Ok(Estimator::new(Chain::linked()?, device))
    }

    /// The device estimated for.
    pub fn device(&self) -> &DeviceProfile {
        self.device
    }

    /// The estimate of one call.
    ///
    /// # Errors
    ///
    /// [`EstimateError::Duplicate`] when the op's registrations conflict.
    pub fn estimate(&mut self, info: &OpInvokeInfo) -> Result<OpEstimate, EstimateError> {
        self.estimate_cached(info).cloned()
    }

    /// The estimate of one call, borrowed from the estimator's cache: what a model report
    /// reads per node without copying the estimate.
    ///
    /// # Errors
    ///
    /// [`EstimateError::Duplicate`] when the op's registrations conflict.
    pub fn estimate_cached(&mut self, info: &OpInvokeInfo) -> Result<&OpEstimate, EstimateError> {
        // Calls repeat (one per layer): types, op and params say everything about a call.
        let key = call_hash(info);
        let index = match self
            .cache
            .get(&key)
            .and_then(|calls| calls.iter().position(|(call, _)| call == info))
        {
            Some(index) => index,
            None => {
                let estimate = self.estimate_fresh(info)?;
                let calls = self.cache.entry(key).or_default();
                calls.push((info.clone(), estimate));
                calls.len() - 1
            }
        };
        Ok(&self.cache[&key][index].1)
    }

    fn estimate_fresh(&self, info: &OpInvokeInfo) -> Result<OpEstimate, EstimateError> {
        let mut estimate = self.estimate_uncached(info)?;
        self.check_finite(&estimate, "the estimate")?;
        if let Some(calibration) = self.device.calibration.get(&info.op) {
            // The correction is of the kernel's time; the launch cost stays as it is.
            let launch = estimate.launch_seconds();
            estimate.seconds = launch + calibration.apply(estimate.seconds - launch);
            estimate.calibrated = true;
            self.check_finite(&estimate, "the calibrated estimate")?;
        }
        Ok(estimate)
    }

    /// An estimate is a finite time, never silently infinite or NaN: the device profile's
    /// bounds keep the models' times finite, so one that is not comes from a direct
    /// estimator or a calibration, which the error names.
    fn check_finite(&self, estimate: &OpEstimate, what: &str) -> Result<(), EstimateError> {
        if estimate.seconds.is_finite() && estimate.seconds >= 0.0 {
            return Ok(());
        }
        let from = match (&estimate.location, estimate.source) {
            (Some(location), source) => format!("{what} of the {source} at {location}"),
            (None, source) => format!("{what} of the {source}"),
        };
        Err(EstimateError::NotFinite {
            op: estimate.op.clone(),
            device: self.device.name.clone(),
            seconds: estimate.seconds,
            what: from,
        })
    }

    fn estimate_uncached(&self, info: &OpInvokeInfo) -> Result<OpEstimate, EstimateError> {
        let choice = self.chain.resolve(&info.op, &self.device.name)?;
        let location = choice.location.map(|l| l.to_string());
        let (properties, source, note, pipeline, overflow) = match choice.model {
            Some(Model::Estimator(estimate)) => {
                return Ok(OpEstimate {
                    op: info.op.clone(),
                    seconds: estimate(info, self.device).seconds,
                    bound: Bound::Direct,
                    source: choice.source,
                    calibrated: false,
                    location,
                    properties: None,
                    roofline: None,
                    note: None,
                    overflow: None,
                });
            }
            Some(Model::Properties(properties)) => {
                // The kernel's bound holds whoever gave the properties.
                let kernel =
                    derive::default_properties(registry::find(&info.op).ok(), info, self.device);
                match self.overflow(kernel.program.as_ref()) {
                    Some(error) => (
                        info.memory_access_properties(),
                        Source::Overflow,
                        Some(self.overflow_note(&error)),
                        None,
                        Some(error),
                    ),
                    None => (
                        properties(info),
                        choice.source,
                        None,
                        kernel.pipeline_seconds,
                        None,
                    ),
                }
            }
            None => {
                let derived =
                    derive::default_properties(registry::find(&info.op).ok(), info, self.device);
                match self.overflow(derived.program.as_ref()) {
                    Some(error) => (
                        info.memory_access_properties(),
                        Source::Overflow,
                        Some(self.overflow_note(&error)),
                        None,
                        Some(error),
                    ),
                    None => (
                        derived.properties,
                        derived.source,
                        derived.note,
                        derived.pipeline_seconds,
                        None,
                    ),
                }
            }
        };
        let mut roofline = roofline_with(&properties, self.device, &self.peaks);
        if let Some(pipeline) = pipeline {
            roofline = roofline.with_pipeline(pipeline);
        }
        Ok(OpEstimate {
            op: info.op.clone(),
            seconds: roofline.seconds,
            bound: roofline.bound,
            source,
            calibrated: false,
            location,
            properties: Some(properties),
            roofline: Some(roofline),
            note,
            overflow,
        })
    }
}
