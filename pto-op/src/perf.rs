//! The types of performance models: what an estimator is given and what it returns, and
//! the registrations of estimators and properties outside an op's module.
//!
//! Two levels, as in the op module (`#[estimator]`, `#[properties]`): a direct estimate of an
//! op call's time, or the op's compute and memory properties for the roofline. Either can be
//! written anywhere, for any op (custom or `std.*`), with `#[op_estimator(op = "..")]` and
//! `#[op_properties(op = "..")]`; the registrations are collected at link time in
//! `ESTIMATORS` and `PROPERTIES` (hidden linkme slices), and `pto-estimator` chooses among them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::attr::{Attributes, ParamValue};
use crate::device::DeviceProfile;
use crate::dtype::DType;
use crate::registration::SourceLocation;
use pto_types::TensorType;

/// A direct time estimate (the first level of the estimator registry).
pub type EstimatorFn = fn(&OpInvokeInfo, &DeviceProfile) -> Estimate;
/// Compute and memory properties (the second level of the estimator registry).
pub type PropertiesFn = fn(&OpInvokeInfo) -> PerformanceProperties;

/// One call of an op, as an estimator sees it: op, input and output types, and params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpInvokeInfo {
    /// The op's name.
    pub op: String,
    /// Input types, in the op's input order.
    pub inputs: Vec<TensorType>,
    /// Output types, in the op's output order.
    pub outputs: Vec<TensorType>,
    /// The call's params.
    pub attrs: Attributes,
}

impl OpInvokeInfo {
    /// Param `name` of this call, if present with type `T`.
    pub fn param<T: ParamValue>(&self, name: &str) -> Option<T> {
        self.attrs.get(name).and_then(T::from_attr)
    }

    /// Properties with every input read once and every output written once, and no
    /// compute: the starting point of most property functions.
    ///
    /// ```
    /// use pto_op::{DType, OpInvokeInfo, Shape, TensorType};
    /// let t = TensorType { shape: Shape::from([4, 8]), dtype: DType::F16 };
    /// let info = OpInvokeInfo {
    ///     op: "demo.copy".into(), inputs: vec![t.clone()], outputs: vec![t], attrs: Default::default(),
    /// };
    /// let p = info.memory_access_properties();
    /// assert_eq!((p.memory_read_bytes, p.memory_write_bytes), (64, 64));
    /// ```
    pub fn memory_access_properties(&self) -> PerformanceProperties {
        PerformanceProperties {
            compute_ops: BTreeMap::new(),
            memory_read_bytes: self.inputs.iter().map(TensorType::bytes).sum(),
            memory_write_bytes: self.outputs.iter().map(TensorType::bytes).sum(),
        }
    }
}

/// Operation counts on one dtype.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComputeOps {
    /// Multiply-accumulates on the cube unit.
    pub mma_ops: u64,
    /// Element operations on the vector unit.
    pub gp_ops: u64,
}

/// What an op computes and moves: the input of the roofline estimator.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PerformanceProperties {
    /// Compute per dtype.
    pub compute_ops: BTreeMap<DType, ComputeOps>,
    /// Bytes read from global memory.
    pub memory_read_bytes: u64,
    /// Bytes written to global memory.
    pub memory_write_bytes: u64,
}

impl PerformanceProperties {
    /// The counts for `dtype`, created empty if absent.
    pub fn compute(&mut self, dtype: DType) -> &mut ComputeOps {
        self.compute_ops.entry(dtype).or_default()
    }
}

/// A direct estimate of an op call's time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// Estimated wall time, in seconds.
    pub seconds: f64,
}

impl Estimate {
    /// An estimate of `seconds`.
    pub fn seconds(seconds: f64) -> Estimate {
        Estimate { seconds }
    }
}

/// Who provided a registration: its place in the priority chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Written by an op's author or a model's author (`#[op_estimator(op = "..")]`, an op
    /// module's own `#[estimator]` and `#[properties]`): beats the framework's.
    User,
    /// Provided by the framework (`#[op_estimator(op = "..", default)]`).
    Default,
}

impl core::fmt::Display for Level {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.pad(match self {
            Level::User => "user",
            Level::Default => "default",
        })
    }
}

/// A direct estimator registered with `#[op_estimator(...)]`.
#[derive(Debug, Clone, Copy)]
pub struct EstimatorRegistration {
    /// The op it estimates.
    pub op: &'static str,
    /// The device profile it is for; `None` for every device.
    pub device: Option<&'static str>,
    /// User or framework default.
    pub level: Level,
    /// Whether it replaces another registration of the same op, device and level.
    pub overrides: bool,
    /// Where it is written.
    pub source: SourceLocation,
    /// The estimator.
    pub estimate: EstimatorFn,
}

/// A properties function registered with `#[op_properties(...)]`.
#[derive(Debug, Clone, Copy)]
pub struct PropertiesRegistration {
    /// The op it describes.
    pub op: &'static str,
    /// User or framework default.
    pub level: Level,
    /// Whether it replaces another registration of the same op and level.
    pub overrides: bool,
    /// Where it is written.
    pub source: SourceLocation,
    /// The properties function.
    pub properties: PropertiesFn,
}

/// Every `#[op_estimator]` linked into the program.
#[doc(hidden)]
#[linkme::distributed_slice]
pub static ESTIMATORS: [EstimatorRegistration];

/// Every `#[op_properties]` linked into the program.
#[doc(hidden)]
#[linkme::distributed_slice]
pub static PROPERTIES: [PropertiesRegistration];
