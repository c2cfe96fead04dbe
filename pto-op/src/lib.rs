//! # pto-op: describe a Da Vinci NPU operator once
//!
//! An operator is one Rust module: its shape and dtype rules, a CPU reference, and a kernel,
//! marked with `#[custom_op]`. Everything else (registration, typed params, the schema,
//! tracing into graphs, execution on any target) is derived from that description.
//!
//! ```
//! use pto_op::prelude::*;
//!
//! /// y = x * scale
//! #[custom_op(name = "doc.scale", params(scale: f32 = 2.0))]
//! pub mod scale {
//!     use super::*;
//!
//!     #[infer_shape]
//!     fn infer_shape(x: &Shape, _p: &Params) -> Result<Shape, OpError> {
//!         Ok(x.clone())
//!     }
//!
//!     #[infer_dtype]
//!     fn infer_dtype(x: DType, _p: &Params) -> Result<DType, OpError> {
//!         Ok(x)
//!     }
//!
//!     #[reference]
//!     fn reference(x: &Tensor, p: &Params) -> Result<Tensor, OpError> {
//!         Ok(Tensor::from_array(x.view::<f32>()?.mapv(|v| v * p.scale)))
//!     }
//! }
//!
//! fn main() {
//!     let op = pto_op::registry::find("doc.scale").unwrap();
//!     assert_eq!(op.params[0].name, "scale");
//!     assert_eq!(scale::Params::default(), scale::Params { scale: 2.0 });
//!     let x = Tensor::from_vec([2], vec![1.0f32, 3.0]).unwrap();
//!     let y = op.run_reference(&[&x], &scale::Params::default().to_attributes()).unwrap();
//!     assert_eq!(y[0].to_vec::<f32>().unwrap(), vec![2.0, 6.0]);
//! }
//! ```
//!
//! The guide in `docs/` walks through writing, testing and deploying an op. The standard
//! operators (`std.matmul`, `std.add`, `std.softmax`, ...) are in [`ops`], written with the
//! same macro.

// The standard ops in `ops` use `#[custom_op]`, whose expansion names `::pto_op`.
extern crate self as pto_op;

// No unsafe code in any module but `ops`, where registering the standard ops needs the
// lint lifted (see Cargo.toml and `ops/mod.rs`): forbidden module by module, since a
// crate-wide forbid could not be lifted there.
#[forbid(unsafe_code)]
pub mod attr;
#[forbid(unsafe_code)]
pub mod budget;
#[forbid(unsafe_code)]
pub mod chrome_trace;
#[forbid(unsafe_code)]
pub mod cpu;
#[forbid(unsafe_code)]
pub mod executor;
#[forbid(unsafe_code)]
pub mod fusion;
#[forbid(unsafe_code)]
pub mod graph;
#[forbid(unsafe_code)]
pub mod model;
#[forbid(unsafe_code)]
pub mod models;
#[forbid(unsafe_code)]
pub mod op;
pub mod ops;
#[forbid(unsafe_code)]
pub mod parity;
#[forbid(unsafe_code)]
pub mod perf;
#[forbid(unsafe_code)]
pub mod registration;
#[forbid(unsafe_code)]
pub mod registry;
#[forbid(unsafe_code)]
pub mod schema;
#[forbid(unsafe_code)]
pub mod sweep;
#[forbid(unsafe_code)]
pub mod target;

// The layers below, under the paths op crates and generated code have always named
// (`pto_op::DType`, `pto_op::kernel::ir`, `pto_op::device::DeviceProfile`, ...).
pub use pto_kernel as kernel;
pub use pto_kernel::device;
pub use pto_types::{dtype, error, fs, lowp, name, shape, table, tensor, tolerance};

pub use attr::{AttrType, AttrValue, Attributes, OpParams, ParamValue};
pub use device::{
    CubeVector, DeviceError, DeviceProfile, EstimatorParams, L2Cache, OpCalibration, PipeModel,
    VectorOpCost,
};
pub use dtype::DType;
pub use error::{BackendError, OpError};
pub use executor::{Execution, Executor, Lowering, SimulatedTime};
pub use graph::{Graph, GraphDef, NodeDef, Value, ValueDef, ValueId, ValueKind};
pub use kernel::{Global, Idx, Kernel, Tile};
pub use model::{Model, ModelFileError};
pub use op::{OpDef, ParamDef, SourceLocation, TensorType};
pub use perf::{
    ComputeOps, Estimate, EstimatorRegistration, Level, OpInvokeInfo, PerformanceProperties,
    PropertiesRegistration,
};
pub use pto_op_macros::custom_op;
pub use registry::RegistryError;
pub use schema::{Fingerprint, OpSchema};
pub use shape::{MAX_DIM, MAX_TENSOR_BYTES, Shape, SizeError};
pub use tensor::{Comparison, Element, Mismatch, SplitMix64, Tensor, TensorData, TensorError};
pub use tolerance::Tolerance;

/// What an operator module needs: `use pto_op::prelude::*;`.
#[forbid(unsafe_code)]
pub mod prelude {
    pub use crate::{
        AttrValue, Attributes, ComputeOps, DType, DeviceProfile, Estimate, Executor, Global, Graph,
        Idx, Kernel, OpError, OpInvokeInfo, OpParams, PerformanceProperties, Shape, Tensor, Tile,
        Tolerance, Value, custom_op,
    };
    // `Kernel::load_padded` and `Tile::extract` take one.
    pub use crate::kernel::ir::MemLevel;
    pub use pto_op_macros::{
        estimator, infer_dtype, infer_shape, kernel, op_estimator, op_properties, parity,
        properties, reference,
    };
}

/// Items that generated code names. Not a public API: it changes without notice.
#[doc(hidden)]
#[forbid(unsafe_code)]
pub mod __private {
    pub use crate::attr::{read_param, reject_unknown_params};
    pub use crate::cpu::CPU_KERNELS;
    pub use crate::fusion::FUSIONS;
    pub use crate::models::MODELS;
    pub use crate::op::SourceLocation;
    pub use crate::parity;
    pub use crate::perf::{
        ESTIMATORS, EstimatorRegistration, Level, PROPERTIES, PropertiesRegistration,
    };
    pub use crate::registry::OPERATORS;
    pub use crate::sweep::SWEEPS;
    pub use crate::target::TARGETS;
    pub use linkme;
    pub use serde;

    use crate::error::OpError;
    use crate::op::OpDef;

    /// The inputs of a call as an array, after checking their number.
    pub fn inputs<T: Copy, const N: usize>(op: &OpDef, items: &[T]) -> Result<[T; N], OpError> {
        op.check_input_count(items.len())?;
        <[T; N]>::try_from(items).map_err(|_| OpError::InputCount {
            op: op.name.to_owned(),
            expected: N.to_string(),
            names: op.input_list(),
            actual: items.len(),
        })
    }

    /// The inputs of a call of an op with optional inputs, as an array of `N`: `None` for
    /// each optional input the call leaves out (a trailing run), after checking their number.
    pub fn optional_inputs<T: Copy, const N: usize>(
        op: &OpDef,
        items: &[T],
    ) -> Result<[Option<T>; N], OpError> {
        op.check_input_count(items.len())?;
        if items.len() > N {
            return Err(OpError::InputCount {
                op: op.name.to_owned(),
                expected: N.to_string(),
                names: op.input_list(),
                actual: items.len(),
            });
        }
        Ok(std::array::from_fn(|i| items.get(i).copied()))
    }

    /// A required input out of [`optional_inputs`]' array: present, since the count was
    /// checked; an error rather than a panic if it is not.
    pub fn present<T>(op: &OpDef, item: Option<T>) -> Result<T, OpError> {
        item.ok_or_else(|| OpError::Unsupported {
            op: op.name.to_owned(),
            message: format!(
                "internal error: a required input is missing after the input count was \
                 checked (inputs {})",
                op.input_list()
            ),
        })
    }

    /// The inputs a typed call (`run`, `apply`) gives, in order: every required one, then the
    /// optional ones through the last given. An optional input left out before one that is
    /// given is an error naming both: a call leaves out a trailing run.
    pub fn given_inputs<T, const N: usize>(
        op: &OpDef,
        items: [Option<T>; N],
    ) -> Result<Vec<T>, OpError> {
        let count = items.iter().rposition(Option::is_some).map_or(0, |i| i + 1);
        let mut given = Vec::with_capacity(count);
        for (i, item) in items.into_iter().take(count).enumerate() {
            match item {
                Some(item) => given.push(item),
                None => {
                    let later = op.inputs.get(count - 1).copied().unwrap_or("?");
                    return Err(OpError::input(
                        op.inputs.get(i).copied().unwrap_or("?"),
                        format!(
                            "optional input left out while `{later}` after it is given; a \
                             call leaves out only a trailing run of optional inputs, so give \
                             this one too"
                        ),
                    )
                    .with_op(op.name));
                }
            }
        }
        Ok(given)
    }

    /// The output tensors a kernel is traced with, as an array, after checking their number.
    pub fn output_slots<T: Copy, const N: usize>(
        op: &OpDef,
        items: &[T],
    ) -> Result<[T; N], OpError> {
        <[T; N]>::try_from(items).map_err(|_| OpError::Unsupported {
            op: op.name.to_owned(),
            message: format!(
                "the kernel was given {} output tensor(s), but the op has {N} ({})",
                items.len(),
                op.outputs.join(", ")
            ),
        })
    }

    /// The outputs an executor returned, as an array, after checking their number.
    pub fn outputs<T, const N: usize>(op: &OpDef, items: Vec<T>) -> Result<[T; N], OpError> {
        let actual = items.len();
        <[T; N]>::try_from(items).map_err(|_| OpError::Unsupported {
            op: op.name.to_owned(),
            message: format!(
                "the executor returned {actual} output(s), but the op has {N} ({})",
                op.outputs.join(", ")
            ),
        })
    }
}
