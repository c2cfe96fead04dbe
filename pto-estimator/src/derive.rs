//! System default properties: what an op computes and moves, counted from its kernel.
//!
//! When nobody registered properties for an op, the op's `#[kernel]` is traced for the call
//! and its IR counted, over the whole grid and every loop trip:
//!
//! - cube: `m * k * n` multiply-accumulates per `matmul`, under the dtype of `a`;
//! - vector: the elements of each vector instruction's result (of its input for reductions
//!   and casts), under that dtype;
//! - global memory: the bytes of every loaded and stored tile. Tiles are counted whole:
//!   the masked part of an edge tile is counted too, so ragged shapes over-count slightly.
//!   Of the loaded bytes, the share that hits the device's L2 cache
//!   ([`pto_op::kernel::cost::l2_hit_share`], the cost model's re-read share) is left out:
//!   it does not reach global memory.
//!
//! An op without a kernel, or whose kernel does not trace for this call, falls back to
//! every input read once and every output written once, and no compute
//! ([`OpInvokeInfo::memory_access_properties`]).

use pto_op::kernel::ValidProgram;
use pto_op::kernel::ir::{Inst, Operand, Program};
use pto_op::{DType, DeviceProfile, OpDef, OpInvokeInfo, PerformanceProperties};

use crate::chain::Source;

/// Properties the system derived, and from what.
#[derive(Debug, Clone, PartialEq)]
pub struct Derived {
    /// The properties.
    pub properties: PerformanceProperties,
    /// [`Source::KernelIr`] or [`Source::MemoryTraffic`].
    pub source: Source,
    /// Why the kernel, or its pipe model on this device, was not used, when it was not.
    pub note: Option<String>,
    /// The kernel's time under the pipe model ([`crate::pipes`]), when it traced.
    pub pipeline_seconds: Option<f64>,
    /// The traced kernel, when it traced.
    pub program: Option<ValidProgram>,
}

/// The default properties of one call of `def` (`None`: an op this program does not link)
/// on `device`.
pub fn default_properties(
    def: Option<&OpDef>,
    info: &OpInvokeInfo,
    device: &DeviceProfile,
) -> Derived {
    let fallback = |note: String| Derived {
        properties: info.memory_access_properties(),
        source: Source::MemoryTraffic,
        note: Some(note),
        pipeline_seconds: None,
        program: None,
    };
    let Some(def) = def else {
        return fallback(format!("op `{}` is not linked", info.op));
    };
    if def.kernel.is_none() {
        return fallback("no #[kernel]".to_owned());
    }
    match def.trace_kernel_for(&info.inputs, &info.attrs, device) {
        Ok(program) => {
            let pipeline = crate::pipes::pipeline_seconds(&program, device);
            let mut properties = kernel_properties(&program);
            let (loaded, distinct) = pto_op::kernel::cost::input_traffic(&program);
            let hits = pto_op::kernel::cost::l2_hit_share(device, loaded, distinct);
            properties.memory_read_bytes =
                (properties.memory_read_bytes as f64 * (1.0 - hits)).round() as u64;
            Derived {
                properties,
                source: Source::KernelIr,
                note: pipeline
                    .as_ref()
                    .err()
                    .map(|e| format!("no pipe model on {}: {e}", device.name)),
                pipeline_seconds: pipeline.ok(),
                program: Some(program),
            }
        }
        Err(e) => fallback(format!("the kernel does not trace: {e}")),
    }
}

/// The properties of a traced kernel, over its whole grid.
///
/// ```
/// use pto_op::{DType, Shape, TensorType};
/// let def = pto_op::registry::find("std.add").unwrap();
/// let t = TensorType { shape: Shape::from([64, 128]), dtype: DType::F16 };
/// let program = def.trace_kernel(&[t.clone(), t], &Default::default()).unwrap();
/// let p = pto_estimator::derive::kernel_properties(&program);
/// assert_eq!((p.memory_read_bytes, p.memory_write_bytes), (2 * 16384, 16384));
/// assert!(p.compute_ops.values().map(|c| c.gp_ops).sum::<u64>() >= 64 * 128);
/// ```
pub fn kernel_properties(program: &ValidProgram) -> PerformanceProperties {
    let mut properties = PerformanceProperties::default();
    count(program, &program.body, program.grid as u64, &mut properties);
    properties
}

fn count(program: &Program, body: &[Inst], trips: u64, into: &mut PerformanceProperties) {
    let tile = |id| program.tile(id);
    let bytes = |id| tile(id).map_or(0, |t| t.bytes() as u64);
    let vector = |into: &mut PerformanceProperties, id, dtype: Option<DType>| {
        if let Some(t) = tile(id) {
            into.compute(dtype.unwrap_or(t.dtype)).gp_ops += t.numel() as u64 * trips;
        }
    };
    for inst in body {
        match inst {
            Inst::Load { dst, .. } => into.memory_read_bytes += bytes(*dst) * trips,
            Inst::Store { src, .. } => into.memory_write_bytes += bytes(*src) * trips,
            Inst::Matmul { dst, a, .. } => {
                if let (Some(a), Some(dst)) = (tile(*a), tile(*dst)) {
                    let (m, k) = (rows(&a.shape), a.shape.last().copied().unwrap_or(1));
                    let n = dst.shape.last().copied().unwrap_or(1);
                    into.compute(a.dtype).mma_ops += (m * k * n) as u64 * trips;
                }
            }
            Inst::Loop { count: n, body, .. } => count(program, body, trips * *n as u64, into),
            Inst::Reduce { src, .. }
            | Inst::Cast { src, .. }
            | Inst::ArgReduce { src, .. }
            | Inst::TopK { src, .. } => vector(into, *src, None),
            Inst::Compare { dst, lhs, rhs, .. } => {
                let operand_dtype = [lhs, rhs].into_iter().find_map(|o| match o {
                    Operand::Tile(t) => tile(*t).map(|t| t.dtype),
                    Operand::Scalar(_) => None,
                });
                vector(into, *dst, operand_dtype);
            }
            Inst::Full { dst, .. }
            | Inst::Iota { dst, .. }
            | Inst::Unary { dst, .. }
            | Inst::Binary { dst, .. }
            | Inst::Select { dst, .. }
            | Inst::Logic { dst, .. }
            | Inst::Not { dst, .. }
            | Inst::Reshape { dst, .. } => vector(into, *dst, None),
            Inst::Move { .. } | Inst::Extract { .. } => {}
        }
    }
}

/// Rows of a matrix tile: every dim but the last.
fn rows(shape: &[usize]) -> usize {
    shape.iter().rev().skip(1).product()
}
