//! The graph compiler: a [`Model`] checked against the linked ops, planned and lowered for
//! one target, then run as often as wanted.
//!
//! [`compile`] runs four passes, each a function of its own:
//!
//! 1. [`resolve`]: the graph's value ids and weights are sound; every node's op is linked,
//!    with the signature the model was built against (else the error says how it changed).
//! 2. [`check_types`]: every op's shape and dtype rules, re-run over the graph, give the
//!    types the model recorded.
//! 3. plan: activation memory ([`BufferPlan`](crate::buffers::BufferPlan)).
//! 4. [`lower`]: each node prepared on the target: `cpu` runs references; `sim` traces each
//!    distinct kernel once, and ops without a kernel run on the target's fallback (the CPU
//!    reference), listed in the [`CompileReport`].
//!
//! One file per pass (`resolve`, `types`, `plan`, `lower`); `report` is what compile
//! decided and prints; `compiled` and `compiled_node` are the compiled model, `run` its
//! runtime and `run_result` what a run gives; `error` the errors of compiling and running.
//!
//! The target is a [`TargetConfig`]: a name, and a device profile for targets that model
//! one. This module reads no environment.

use std::borrow::Cow;
use std::sync::Mutex;

use pto_op::Model;
use pto_op::target::TargetConfig;

use crate::buffers::NodeMemory;

mod compiled;
mod compiled_node;
mod error;
mod lower;
mod plan;
mod report;
mod resolve;
mod run;
mod run_result;
mod types;

pub use compiled::CompiledModel;
pub use error::{CompileError, RunError};
pub use lower::{Lowered, lower};
pub use report::{CompileReport, KernelSource, NodeReport, NodeRuns, STALE, ValueInfo};
pub use resolve::resolve;
pub use run_result::{NodeTime, RunResult, TimeKind};
pub use types::{NodeTypes, check_types};

use compiled_node::{CompiledNode, prepare_cpu_kernels};
use plan::{check_run_memory, plan};

/// Checks `model` against the linked ops and prepares it for `target` (a name, or a
/// [`TargetConfig`] with a device profile): [`resolve`], [`check_types`], plan, [`lower`].
///
/// ```no_run
/// # fn demo(model: &pto_op::Model) -> Result<(), pto_backends::compiler::CompileError> {
/// use pto_backends::compiler::compile;
/// use pto_op::target::TargetConfig;
/// let on_cpu = compile(model, "cpu")?;
/// let ascend = pto_op::DeviceProfile::builtin("ascend910b").expect("built in");
/// let on_ascend = compile(model, TargetConfig::new("sim").on(ascend))?;
/// # Ok(()) }
/// ```
///
/// # Errors
///
/// A [`CompileError`] naming the op, node or value at fault: an unknown target or op, an op
/// whose signature changed since the model was built, a model that needs more memory than
/// the target's budget ([`TargetConfig::within`], by default a share of the machine's
/// memory), inputs an op's rules reject or
/// recorded types they no longer give, a kernel that does not trace, an op the target can
/// run neither as a kernel nor on a fallback.
pub fn compile(
    model: &Model,
    target: impl Into<TargetConfig>,
) -> Result<CompiledModel, CompileError> {
    compile_cow(Cow::Borrowed(model), target.into())
}

/// [`compile`], taking the model instead of copying it: its weights are held once, not
/// twice (what the command line does with a model it has just loaded).
///
/// # Errors
///
/// As [`compile`].
pub fn compile_owned(
    model: Model,
    target: impl Into<TargetConfig>,
) -> Result<CompiledModel, CompileError> {
    compile_cow(Cow::Owned(model), target.into())
}

fn compile_cow(owned: Cow<'_, Model>, config: TargetConfig) -> Result<CompiledModel, CompileError> {
    let model: &Model = &owned;
    let executor = config.executor()?;
    let ops = resolve(model)?;
    let types = check_types(model, &ops)?;
    let plan = plan(model, &config)?;
    let lowered = lower(model, executor.as_ref(), &ops, &types)?;
    let fast = prepare_cpu_kernels(model, executor.as_ref(), &ops, &types, &lowered.runs)?;
    // A kernel runs on the CPU only as a fast path; elsewhere (the simulator, the host) it
    // copies its inputs into the target's memory.
    let holds: Vec<NodeMemory> = fast
        .iter()
        .zip(&lowered.runs)
        .map(|(fast, runs)| NodeMemory {
            pooled: fast.is_some(),
            copies_inputs: matches!(runs, NodeRuns::Kernel { .. }) && fast.is_none(),
        })
        .collect();
    let plan = plan.with_run_memory(&model.graph, &holds);
    check_run_memory(model, &config, &plan)?;

    let reports = types
        .into_iter()
        .zip(&lowered.runs)
        .zip(&ops)
        .zip(lowered.declined)
        .enumerate()
        .map(|(index, (((types, &runs), op), declined))| NodeReport {
            node: index,
            op: op.name.to_owned(),
            runs,
            declined,
            inputs: types.inputs,
            outputs: types.outputs,
            live_bytes: plan.live_bytes.get(index).copied().unwrap_or(0),
            fast_path: fast[index].is_some(),
        })
        .collect();
    let report = CompileReport {
        model: model.name.clone(),
        target: executor.target().to_owned(),
        nodes: reports,
        kernels_traced: lowered.kernels,
        kernels_shipped: lowered.shipped,
        kernels_edited: lowered.edited,
        kernels_stale: lowered.stale,
        fallbacks: lowered.fallbacks,
        peak_activation_bytes: plan.peak_activation_bytes,
        peak_node: plan.peak_node,
        run_peak_bytes: plan.run.peak_bytes,
        weight_bytes: plan.weight_bytes,
    };
    let nodes = ops
        .into_iter()
        .zip(lowered.runs)
        .zip(fast)
        .map(|((op, runs), fast)| CompiledNode { op, runs, fast })
        .collect();
    let buffers = Mutex::new(vec![None; plan.buffers.len()]);
    Ok(CompiledModel {
        model: owned.into_owned(),
        executor,
        nodes,
        plan,
        report,
        buffers,
    })
}
