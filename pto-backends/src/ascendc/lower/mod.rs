//! Kernel IR -> Ascend C source.
//!
//! One kernel class per instance: `Init` binds the GM tensors and reserves the buffers of
//! the [`plan`](super::plan) in a `TPipe`, `Process` runs the block programs of this core
//! (`GetBlockIdx()`, `+ GetBlockNum()`, ... below the grid), and `Block` is the traced
//! program, one C++ statement group per IR instruction, commented with the instruction in the
//! kernel text form ([`pto_op::kernel::text::inst_line`]).
//!
//! The files, by what they write:
//!
//! - `writer.rs`: the source writer ([`Code`](writer::Code)): indented lines, routed to
//!   the cube or vector side of a split kernel.
//! - `cpp_expr.rs`: IR values spelled in C++: identifiers, element types, scalars, indices.
//! - `state.rs`: the lowering state ([`Lowering`](state::Lowering), the hand-offs of a
//!   split kernel among it) and what every instruction's code needs from it: tile types
//!   and names, declarations, temporaries (by name, [`plan::Temp`]).
//! - `block.rs`: the block program: the walk over the instructions, loops, queue frees.
//! - `movement.rs`: data movement: GM <-> UB, GM -> L1, L1 -> L0A / L0B, L0C -> UB, UB -> L1.
//! - `handoff.rs`: tiles handed between the cube core and the vector cores of a split
//!   kernel through the workspace.
//! - `cube.rs`: the matmul (`Mmad`) and the cube operand queries.
//! - `vector.rs`: element-wise vector instructions (unary, binary, compare, select, cast).
//! - `reduce.rs`: reductions, pto-isa's row reduction and group-reduce path.
//! - `skeleton.rs`: the kernel around the block program: the class, `Init` (the `TPipe`,
//!   queues and pools), `Process` (of a split mix kernel too), the entry, the tiling header.
//! - `helpers.rs`: the C++ helper code every kernel starts with (`cpp/*.h`).

mod block;
mod cpp_expr;
mod cube;
mod handoff;
mod helpers;
mod movement;
mod reduce;
mod skeleton;
mod state;
mod vector;
mod writer;

use pto_op::kernel::ValidProgram;
use pto_op::kernel::ir::{GlobalRole, IdVec, MemLevel, Program};
use pto_op::kernel::vector_split::mixes_cube_and_vector;
use pto_op::{Attributes, DeviceProfile, OpDef, TensorType};

use super::plan::{self, UbReservation};
use super::{CANN_VERSION, KernelTensor, LowerError, LoweredKernel, Soc, TilingField};
pub(crate) use cpp_expr::c_identifier;
use cpp_expr::camel;
use skeleton::tiling_header;
use state::{AivWork, Lowering, POOLS};
use writer::Code;

/// Traces `op`'s kernel for `inputs` and `attrs` and lowers it for `soc`, with the buffer
/// sizes of the SoC's built-in device profile.
///
/// # Errors
///
/// The trace's error, an instruction or dtype the SoC cannot do, or buffers over the
/// profile's capacity ([`LowerError`]).
pub fn lower(
    op: &OpDef,
    inputs: &[TensorType],
    attrs: &Attributes,
    soc: Soc,
) -> Result<LoweredKernel, LowerError> {
    let profile = DeviceProfile::builtin(soc.profile_name()).map_err(|e| LowerError::Profile {
        op: op.name.to_owned(),
        soc,
        message: e.to_string(),
    })?;
    lower_with_profile(op, inputs, attrs, soc, &profile)
}

/// [`lower()`] with the buffer sizes and core count of `profile`: the kernel is traced for
/// `profile` ([`OpDef::trace_kernel_for`]), as the simulator and the estimator trace it, so
/// the Ascend C runs the program they run.
///
/// # Errors
///
/// As [`lower()`].
pub fn lower_with_profile(
    op: &OpDef,
    inputs: &[TensorType],
    attrs: &Attributes,
    soc: Soc,
    profile: &DeviceProfile,
) -> Result<LoweredKernel, LowerError> {
    let program = op
        .trace_kernel_for(inputs, attrs, profile)
        .map_err(|source| LowerError::Trace {
            op: op.name.to_owned(),
            source,
        })?;
    lower_program(&program, &op.call_text(inputs, attrs), soc, profile)
}

/// Lowers a traced and validated `program` for `soc`; `instance` describes the call in the
/// header comment.
///
/// # Errors
///
/// As [`lower()`], without the trace.
pub fn lower_program(
    program: &ValidProgram,
    instance: &str,
    soc: Soc,
    profile: &DeviceProfile,
) -> Result<LoweredKernel, LowerError> {
    let program = program.program();
    cube::check_mmads(program, soc)?;
    let entry = c_identifier(&program.op);
    let class = camel(&program.op);
    let tiling_struct = format!("{class}TilingData");
    // A mix kernel on split cores shares each block program's vector work between the two
    // AIVs by rows where its rows are independent: the vector side is lowered from the
    // program with half the rows in every such tile.
    let aiv = plan::aiv_rows(program, soc.split_cores()).map(|split| match split {
        Ok(rows) => AivWork::Rows {
            program: plan::halve_rows(program, rows),
            rows,
        },
        Err(reason) => AivWork::TakeTurns(reason),
    });
    // Loads inside loops are double-buffered (queue depth 2) where both buffers fit.
    let lowering = match lower_block(program, aiv.as_ref(), soc, profile, true) {
        Err(LowerError::Capacity { buffer: "UB", .. }) => {
            lower_block(program, aiv.as_ref(), soc, profile, false)?
        }
        other => other?,
    };
    let buffer_bytes = lowering.buffer_bytes();

    let grid = program.grid as u32;
    let block_dim = grid.min(profile.ai_cores.max(1));
    let kernel_type = lowering.kernel_type();
    let workspace_bytes = lowering.workspace_per_block() * u64::from(block_dim);
    let mut tiling = vec![TilingField {
        name: "grid".to_owned(),
        value: grid,
    }];
    for g in &program.globals {
        for (d, size) in g.shape.iter().enumerate() {
            tiling.push(TilingField {
                name: format!("{}_dim{d}", c_identifier(&g.name)),
                value: *size as u32,
            });
        }
    }
    let kernel = |role| {
        program
            .globals
            .iter()
            .filter(|g| g.role == role)
            .map(|g| KernelTensor {
                name: g.name.clone(),
                shape: g.shape.clone(),
                dtype: g.dtype,
            })
            .collect::<Vec<_>>()
    };
    let header = format!(
        "// Generated by pto-op: do not edit.\n\
         // op `{op}`, instance {instance}\n\
         // SoC {soc} ({arch}, __NPU_ARCH__ {npu}), Ascend C API of CANN {CANN_VERSION}\n\
         // grid {grid} block programs on block_dim {block_dim} cores\n",
        op = program.op,
        soc = soc,
        arch = soc.arch(),
        npu = soc.npu_arch(),
    );
    let tiling_header = tiling_header(&header, &entry, &tiling_struct, &tiling);
    let kernel_source = lowering.source(&header, &entry, &class, &tiling_struct);
    Ok(LoweredKernel {
        op: program.op.clone(),
        entry,
        soc,
        kernel_source,
        tiling_header,
        tiling_struct,
        tiling,
        grid,
        block_dim,
        inputs: kernel(GlobalRole::Input),
        outputs: kernel(GlobalRole::Output),
        buffer_bytes,
        kernel_type,
        workspace_bytes,
    })
}

/// The kernel body of `program` with its buffers checked against `profile`.
fn lower_block<'p>(
    full: &'p Program,
    aiv: Option<&'p AivWork>,
    soc: Soc,
    profile: &DeviceProfile,
    double_buffer: bool,
) -> Result<Lowering<'p>, LowerError> {
    let (program, aiv_rows) = match aiv {
        Some(AivWork::Rows { program, rows }) => (program, Some(rows / 2)),
        _ => (full, None),
    };
    let mut lowering = Lowering {
        program,
        full,
        aiv_rows,
        take_turns: match aiv {
            Some(AivWork::TakeTurns(reason)) => Some(reason.as_str()),
            _ => None,
        },
        soc,
        plan: plan::plan(program, profile),
        code: Code::default(),
        queues: Vec::new(),
        reservation: UbReservation {
            queues: Vec::new(),
            calc: 0,
            reduce_work: 0,
        },
        position: 0,
        freed: IdVec::filled(program.tiles.len(), false),
        scopes: Vec::new(),
        uses_cube: false,
        split: soc.split_cores() && mixes_cube_and_vector(program),
        handoffs: Vec::new(),
        double_buffer,
        number: 0,
        next_number: 0,
        profile: profile.clone(),
    };
    lowering.check_dtypes()?;
    lowering.block()?;
    // The UB the kernel reserves is `plan::reserved_ub`'s accounting, which the simulator
    // checks too: the queues the code declares are the ones it counts.
    lowering.reservation = UbReservation::of(program, &lowering.plan, double_buffer);
    debug_assert_eq!(lowering.reservation.queues, lowering.queues);
    let buffer_bytes = lowering.buffer_bytes();
    for (buffer, level) in [
        ("UB", MemLevel::Ub),
        ("L1", MemLevel::L1),
        ("L0A", MemLevel::L0A),
        ("L0B", MemLevel::L0B),
        ("L0C", MemLevel::L0C),
    ] {
        let needed = buffer_bytes.get(level).unwrap_or(0);
        let limit = profile.buffers.get(level).unwrap_or(0);
        if needed > limit {
            return Err(LowerError::Capacity {
                op: program.op.clone(),
                buffer,
                needed,
                device: profile.name.clone(),
                limit,
                detail: if level == MemLevel::Ub && lowering.aiv_rows.is_some() {
                    format!(
                        "on each of the two vector cores, which hold half the rows of the block \
                         program's tiles: {}",
                        lowering.ub_detail()
                    )
                } else if let (MemLevel::Ub, Some(reason)) = (level, lowering.take_turns) {
                    format!(
                        "on one vector core, which holds the block program's whole tiles: the \
                         two take turns, their rows are not split ({reason}): {}",
                        lowering.ub_detail()
                    )
                } else if level == MemLevel::Ub {
                    lowering.ub_detail()
                } else {
                    format!("{} tiles", POOLS[plan::level_index(level)].0)
                },
            });
        }
    }
    Ok(lowering)
}

/// A kernel's text form parsed for a test, with the SoC the tests lower for and its
/// profile.
#[cfg(test)]
fn test_kernel(text: &str) -> (ValidProgram, Soc, DeviceProfile) {
    let program = pto_op::kernel::text::parse(text).expect("a valid text");
    let soc = Soc::Kirin9030;
    let profile = DeviceProfile::builtin(soc.profile_name()).expect("the profile");
    (program, soc, profile)
}
