//! The graph compiler: a [`Model`] checked against the linked ops, planned and lowered for
//! one target, then run as often as wanted.
//!
//! [`compile`] runs four passes, each a function of its own:
//!
//! 1. [`resolve`]: the graph's value ids and weights are sound; every node's op is linked,
//!    with the signature the model was built against (else the error says how it changed).
//! 2. [`check_types`]: every op's shape and dtype rules, re-run over the graph, give the
//!    types the model recorded.
//! 3. plan: activation memory ([`BufferPlan`]).
//! 4. [`lower`]: each node prepared on the target: `cpu` runs references; `sim` traces each
//!    distinct kernel once, and ops without a kernel run on the target's fallback (the CPU
//!    reference), listed in the [`CompileReport`].
//!
//! The target is a [`TargetConfig`]: a name, and a device profile for targets that model
//! one. This module reads no environment.

use core::fmt;
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::Instant;

use pto_op::cpu::CpuKernel;
use pto_op::model::ShippedKernel;
use pto_op::registry::RegistryError;
use pto_op::table::column_width;
use pto_op::target::{TargetConfig, TargetError};
use pto_op::{Executor, Lowering, Model, NodeDef, OpDef, OpError, Tensor, TensorType, ValueId};
use serde::Serialize;

use crate::buffers::{BufferPlan, human_bytes};
use crate::compat::{SchemaChange, schema_changes};

/// An error of compiling a model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompileError {
    /// The target is not linked.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// A node calls an op that is not linked.
    #[error("model `{model}`: node {node}{}: {source}", named(node_name))]
    UnknownOp {
        /// The model.
        model: String,
        /// The node.
        node: usize,
        /// Its name (an imported node's), or empty.
        node_name: String,
        /// The registry's answer, with look-alike names.
        source: Box<RegistryError>,
    },
    /// The model records no schema for an op its graph uses.
    #[error(
        "model `{model}`: node {node}{} calls `{op}`, but the model records no schema of it",
        named(node_name)
    )]
    MissingSchema {
        /// The model.
        model: String,
        /// The node.
        node: usize,
        /// Its name (an imported node's), or empty.
        node_name: String,
        /// The op.
        op: String,
    },
    /// The linked op's signature differs from the one the model was built against.
    #[error(
        "op `{op}` changed since the model was built: {}; rebuild (re-export) the model \
         against the linked op, or link the op's old version",
        join(changes)
    )]
    SchemaChanged {
        /// The op.
        op: String,
        /// How it changed.
        changes: Vec<SchemaChange>,
    },
    /// A node's recorded version or fingerprint differs from the linked op's, although the
    /// model's schema of the op matches it: the node was traced against another signature.
    #[error(
        "op `{op}` changed since the model was built: node {node}{} was traced against \
         version {recorded_version} (fingerprint {recorded}), the linked op is version \
         {linked_version} (fingerprint {linked})",
        named(node_name)
    )]
    NodeSignature {
        /// The op.
        op: String,
        /// The node.
        node: usize,
        /// Its name (an imported node's), or empty.
        node_name: String,
        /// The node's version.
        recorded_version: u32,
        /// The linked version.
        linked_version: u32,
        /// The node's fingerprint.
        recorded: pto_op::Fingerprint,
        /// The linked op's fingerprint.
        linked: pto_op::Fingerprint,
    },
    /// The model's weights are not exactly its graph's weight values, with their types, or
    /// do not fit their use ([`Model::check_pow_exponents`]).
    #[error("model `{model}`: {source}")]
    Weights {
        /// The model.
        model: String,
        /// What does not fit.
        source: Box<OpError>,
    },
    /// The graph's structure is broken ([`pto_op::GraphDef::validate`]).
    #[error("model `{model}`: invalid graph: {source}")]
    InvalidGraph {
        /// The model.
        model: String,
        /// The fault.
        source: pto_op::graph::GraphError,
    },
    /// A node refers to a value that does not exist, or records another number of outputs
    /// than its op has.
    #[error("model `{model}`: {message}")]
    Graph {
        /// The model.
        model: String,
        /// What is wrong.
        message: String,
    },
    /// An op's rules reject a node's inputs.
    #[error("model `{model}`: node {node}{}: {source}", named(node_name))]
    Infer {
        /// The model.
        model: String,
        /// The node.
        node: usize,
        /// Its name (an imported node's), or empty.
        node_name: String,
        /// The op's error.
        source: Box<OpError>,
    },
    /// An op's rules give another type than the model recorded for a value.
    #[error(
        "model `{model}`: node {node}{} (`{op}`): value `{value}` is recorded as {recorded}, \
         but the op's rules now give {inferred}",
        named(node_name)
    )]
    TypeMismatch {
        /// The model.
        model: String,
        /// The node.
        node: usize,
        /// Its name (an imported node's), or empty.
        node_name: String,
        /// The op.
        op: String,
        /// The value.
        value: String,
        /// The recorded type.
        recorded: Box<TensorType>,
        /// The inferred type.
        inferred: Box<TensorType>,
    },
    /// The target cannot run a node's op (it has no kernel) and has no fallback target.
    #[error(
        "model `{model}`: node {node}{}: op `{op}` has no kernel, and target `{target}` has no \
         fallback to run its reference",
        named(node_name)
    )]
    NoFallback {
        /// The model.
        model: String,
        /// The node.
        node: usize,
        /// Its name (an imported node's), or empty.
        node_name: String,
        /// The op.
        op: String,
        /// The target.
        target: String,
    },
    /// The model needs more memory (weights and peak activations) than the target's
    /// [`MemoryBudget`](pto_op::budget::MemoryBudget): refused before anything is allocated.
    #[error(transparent)]
    MemoryBudget(Box<pto_op::budget::BudgetError>),
    /// A kernel shipped with the model matches a node but cannot run: its op's signature
    /// changed since it was shipped, or its (edited) text does not parse or fit the node.
    #[error("model `{model}`: node {node}: {source}")]
    ShippedKernel {
        /// The model.
        model: String,
        /// The node.
        node: usize,
        /// Why the kernel is refused.
        source: Box<pto_op::model::ShippedKernelError>,
    },
    /// The target could not prepare a node (its kernel does not trace, or does not fit).
    #[error(
        "model `{model}`: node {node}{} on target `{target}`: {source}",
        named(node_name)
    )]
    Lower {
        /// The model.
        model: String,
        /// The node.
        node: usize,
        /// Its name (an imported node's), or empty.
        node_name: String,
        /// The target.
        target: String,
        /// The op's error.
        source: Box<OpError>,
    },
}

/// ` `name`` for a named node, nothing for an unnamed one.
fn named(name: &str) -> String {
    if name.is_empty() {
        String::new()
    } else {
        format!(" `{name}`")
    }
}

fn join(changes: &[SchemaChange]) -> String {
    changes
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// How a compiled node runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NodeRuns {
    /// The op's reference, on the CPU: what the target runs.
    Reference,
    /// The op's kernel on the target, traced into `grid` block programs, or a kernel
    /// shipped with the model.
    Kernel {
        /// Block programs.
        grid: usize,
        /// Where the kernel comes from.
        source: KernelSource,
    },
    /// The target runs kernels but the op has none, or its kernel does not cover these
    /// inputs or params: the target's fallback (the CPU reference) runs it instead.
    Fallback,
}

/// Where a node's kernel comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelSource {
    /// The linked op's `#[kernel]`, traced at compile time.
    Traced,
    /// A kernel shipped with the model, as it was traced at export: on a target with a
    /// device, traced again for it ([`ShippedKernel::program_for`]).
    Shipped,
    /// A kernel shipped with the model whose text was edited since.
    ShippedEdited,
}

impl fmt::Display for NodeRuns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeRuns::Reference => f.write_str("reference"),
            NodeRuns::Kernel {
                grid,
                source: KernelSource::Traced,
            } => write!(f, "kernel (grid {grid})"),
            NodeRuns::Kernel {
                grid,
                source: KernelSource::Shipped,
            } => write!(f, "kernel: shipped (grid {grid})"),
            NodeRuns::Kernel {
                grid,
                source: KernelSource::ShippedEdited,
            } => write!(f, "kernel: shipped, edited (grid {grid})"),
            NodeRuns::Fallback => f.write_str("reference (fallback: no kernel)"),
        }
    }
}

/// One value in a report: its name and type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ValueInfo {
    /// The value's name.
    pub name: String,
    /// Its shape and dtype.
    #[serde(flatten)]
    pub ty: TensorType,
}

impl fmt::Display for ValueInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.name, self.ty)
    }
}

/// One node of a [`CompileReport`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeReport {
    /// Its index in the graph.
    pub node: usize,
    /// The op.
    pub op: String,
    /// What runs it.
    pub runs: NodeRuns,
    /// Its inputs.
    pub inputs: Vec<ValueInfo>,
    /// Its outputs.
    pub outputs: Vec<ValueInfo>,
    /// Activation bytes alive while it runs.
    pub live_bytes: u64,
    /// Whether it runs on the op's fast CPU path ([`pto_op::cpu`]) rather than the
    /// reference (for nodes that run on the CPU).
    pub fast_path: bool,
}

/// What [`compile`] decided: per node, what runs it; kernels traced; fallbacks; memory.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CompileReport {
    /// The model's name.
    pub model: String,
    /// The target.
    pub target: String,
    /// Every node, in run order.
    pub nodes: Vec<NodeReport>,
    /// Distinct kernels traced: one per (op, input types, params).
    pub kernels_traced: usize,
    /// Distinct kernels shipped with the model that run, edited or not.
    pub kernels_shipped: usize,
    /// Of those, the ones whose text was edited since they were shipped.
    pub kernels_edited: usize,
    /// Ops that run on the target's fallback (the CPU reference) because the target needs a
    /// kernel they lack.
    pub fallbacks: Vec<String>,
    /// The most activation bytes alive at once.
    pub peak_activation_bytes: u64,
    /// The node during which that peak is reached.
    pub peak_node: Option<usize>,
    /// Bytes of all weights.
    pub weight_bytes: u64,
}

impl fmt::Display for CompileReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "model `{}` compiled for target `{}`: {} node(s), {} kernel(s) traced, {}{}",
            self.model,
            self.target,
            self.nodes.len(),
            self.kernels_traced,
            match (self.kernels_shipped, self.kernels_edited) {
                (0, _) => String::new(),
                (n, 0) => format!("{n} shipped, "),
                (n, e) => format!("{n} shipped ({e} edited), "),
            },
            match self.fallbacks.len() {
                0 => "no fallbacks".to_owned(),
                n => format!(
                    "{n} op(s) fall back to the CPU reference: {}",
                    self.fallbacks.join(", ")
                ),
            }
        )?;
        let runs: Vec<String> = self
            .nodes
            .iter()
            .map(|n| match n.fast_path {
                true => format!("{} (fast path)", n.runs),
                false => n.runs.to_string(),
            })
            .collect();
        let op_w = column_width("op", self.nodes.iter().map(|n| n.op.as_str()));
        let runs_w = column_width("runs", runs.iter().map(String::as_str));
        writeln!(
            f,
            "{:>4}  {:<op_w$} {:<runs_w$} {:>10}  outputs",
            "node", "op", "runs", "live"
        )?;
        for (node, runs) in self.nodes.iter().zip(&runs) {
            let outputs: Vec<String> = node.outputs.iter().map(ToString::to_string).collect();
            writeln!(
                f,
                "{:>4}  {:<op_w$} {:<runs_w$} {:>10}  {}",
                node.node,
                node.op,
                runs,
                human_bytes(node.live_bytes),
                outputs.join(", ")
            )?;
        }
        write!(
            f,
            "peak activation memory {}{}, weights {}",
            human_bytes(self.peak_activation_bytes),
            self.peak_node
                .map_or(String::new(), |n| format!(" (during node {n})")),
            human_bytes(self.weight_bytes)
        )
    }
}

/// One node, ready to run.
#[derive(Debug)]
struct CompiledNode {
    op: &'static OpDef,
    runs: NodeRuns,
    /// The op's fast CPU path for this node, when it runs on the CPU and has one.
    fast: Option<Box<dyn CpuKernel>>,
}

/// A model compiled for one target: compile once, [`run`](CompiledModel::run) many times.
///
/// Runs keep the activation buffers of the [`BufferPlan`] from one run to the next: nodes
/// on a fast CPU path write into them, so after the first run a run allocates only its
/// result (the graph outputs and the timings), not per node.
pub struct CompiledModel {
    model: Model,
    executor: Box<dyn Executor>,
    nodes: Vec<CompiledNode>,
    plan: BufferPlan,
    report: CompileReport,
    /// The plan's buffers between runs (`None`: not allocated yet, or lent to a run).
    buffers: Mutex<Vec<Option<Tensor>>>,
}

impl fmt::Debug for CompiledModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledModel")
            .field("model", &self.model.name)
            .field("target", &self.executor.target())
            .field("nodes", &self.nodes)
            .finish_non_exhaustive()
    }
}

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
    let plan = BufferPlan::of(&model.graph);
    // Before anything is allocated for a run.
    config
        .budget()
        .check(&model.name, &model.graph)
        .map_err(|e| CompileError::MemoryBudget(Box::new(e)))?;
    let lowered = lower(model, executor.as_ref(), &ops, &types)?;
    let fast = prepare_cpu_kernels(model, executor.as_ref(), &ops, &types, &lowered.runs)?;

    let reports = types
        .into_iter()
        .zip(&lowered.runs)
        .zip(&ops)
        .enumerate()
        .map(|(index, ((types, &runs), op))| NodeReport {
            node: index,
            op: op.name.to_owned(),
            runs,
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
        fallbacks: lowered.fallbacks,
        peak_activation_bytes: plan.peak_activation_bytes,
        peak_node: plan.peak_node,
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

/// The fast CPU path of every node that runs on the CPU (the target's, or its fallback's)
/// and whose op has one that accepts the node.
fn prepare_cpu_kernels(
    model: &Model,
    executor: &dyn Executor,
    ops: &[&'static OpDef],
    types: &[NodeTypes],
    runs: &[NodeRuns],
) -> Result<Vec<Option<Box<dyn CpuKernel>>>, CompileError> {
    let mut fast = Vec::with_capacity(ops.len());
    for (index, ((node, op), (types, runs))) in model
        .graph
        .nodes
        .iter()
        .zip(ops)
        .zip(types.iter().zip(runs))
        .enumerate()
    {
        let on = match runs {
            NodeRuns::Reference => Some(executor),
            NodeRuns::Fallback => executor.fallback(),
            NodeRuns::Kernel { .. } => None,
        };
        let kernel = match on {
            Some(on) => on
                .prepare_cpu_kernel(op, &types.input_types(), &node.attrs)
                .map_err(|source| CompileError::Lower {
                    model: model.name.clone(),
                    node: index,
                    node_name: node.name.clone(),
                    target: on.target().to_owned(),
                    source: Box::new(source),
                })?,
            None => None,
        };
        fast.push(kernel);
    }
    Ok(fast)
}

/// Pass 1: checks that the graph's ids and weights are sound, and finds every node's op,
/// refusing one whose signature (schema, version, fingerprint) differs from the one the
/// model was built against. Returns the op of each node, in node order.
///
/// # Errors
///
/// [`CompileError::Weights`], [`CompileError::InvalidGraph`], [`CompileError::UnknownOp`],
/// [`CompileError::MissingSchema`],
/// [`CompileError::SchemaChanged`], [`CompileError::NodeSignature`].
pub fn resolve(model: &Model) -> Result<Vec<&'static OpDef>, CompileError> {
    check_graph(model)?;
    let mut checked_ops = BTreeSet::new();
    let mut ops = Vec::with_capacity(model.graph.nodes.len());
    for (index, node) in model.graph.nodes.iter().enumerate() {
        let op = pto_op::registry::find(&node.op).map_err(|source| CompileError::UnknownOp {
            model: model.name.clone(),
            node: index,
            node_name: node.name.clone(),
            source: Box::new(source),
        })?;
        if checked_ops.insert(op.name) {
            check_schema(model, index, op)?;
        }
        check_node_signature(index, node, op)?;
        ops.push(op);
    }
    Ok(ops)
}

/// The weights fit the graph and their uses ([`Model::check_pow_exponents`]), and the graph
/// is well formed ([`pto_op::GraphDef::validate`]).
fn check_graph(model: &Model) -> Result<(), CompileError> {
    model
        .check_weights()
        .and_then(|()| model.check_pow_exponents())
        .map_err(|source| CompileError::Weights {
            model: model.name.clone(),
            source: Box::new(source),
        })?;
    model
        .graph
        .validate()
        .map_err(|source| CompileError::InvalidGraph {
            model: model.name.clone(),
            source,
        })
}

/// The model's recorded schema of `op` (first called at node `node`) is the linked one.
fn check_schema(model: &Model, node: usize, op: &'static OpDef) -> Result<(), CompileError> {
    let recorded = model
        .schemas
        .get(op.name)
        .ok_or_else(|| CompileError::MissingSchema {
            model: model.name.clone(),
            node,
            node_name: model
                .graph
                .nodes
                .get(node)
                .map(|n| n.name.clone())
                .unwrap_or_default(),
            op: op.name.to_owned(),
        })?;
    let changes = schema_changes(recorded, &op.schema());
    if changes.is_empty() {
        Ok(())
    } else {
        Err(CompileError::SchemaChanged {
            op: op.name.to_owned(),
            changes,
        })
    }
}

/// Node `index` was traced against the linked version and fingerprint of `op`.
fn check_node_signature(
    index: usize,
    node: &NodeDef,
    op: &'static OpDef,
) -> Result<(), CompileError> {
    if node.version == op.version && node.fingerprint == op.fingerprint() {
        return Ok(());
    }
    Err(CompileError::NodeSignature {
        op: op.name.to_owned(),
        node: index,
        node_name: node.name.clone(),
        recorded_version: node.version,
        linked_version: op.version,
        recorded: node.fingerprint,
        linked: op.fingerprint(),
    })
}

/// One node's values with their types, as [`check_types`] found them.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeTypes {
    /// Its inputs, in the op's input order.
    pub inputs: Vec<ValueInfo>,
    /// Its outputs, in the op's output order.
    pub outputs: Vec<ValueInfo>,
}

impl NodeTypes {
    /// The input types alone.
    pub fn input_types(&self) -> Vec<TensorType> {
        self.inputs.iter().map(|v| v.ty.clone()).collect()
    }
}

/// Pass 2: re-runs each node's op rules (`ops`, from [`resolve`]) on its recorded input
/// types, and checks that they give the output types the model recorded.
///
/// # Errors
///
/// [`CompileError::Graph`] for a value id out of range or an output count the op does not
/// have, [`CompileError::Infer`] for inputs the op rejects, [`CompileError::TypeMismatch`]
/// for a recorded type the rules no longer give.
pub fn check_types(model: &Model, ops: &[&'static OpDef]) -> Result<Vec<NodeTypes>, CompileError> {
    let graph = &model.graph;
    let graph_error = |message: String| CompileError::Graph {
        model: model.name.clone(),
        message,
    };
    let value = |node: usize, id: ValueId| {
        graph
            .values
            .get(id)
            .map(|v| ValueInfo {
                name: v.name.clone(),
                ty: v.ty.clone(),
            })
            .ok_or_else(|| {
                graph_error(format!(
                    "node {node} refers to value {id}, but the graph has {} values",
                    graph.values.len()
                ))
            })
    };
    let mut all = Vec::with_capacity(ops.len());
    for (index, (node, op)) in graph.nodes.iter().zip(ops).enumerate() {
        let inputs = node
            .inputs
            .iter()
            .map(|&id| value(index, id))
            .collect::<Result<Vec<_>, _>>()?;
        let input_types: Vec<TensorType> = inputs.iter().map(|v| v.ty.clone()).collect();
        let inferred =
            op.infer(&input_types, &node.attrs)
                .map_err(|source| CompileError::Infer {
                    model: model.name.clone(),
                    node: index,
                    node_name: node.name.clone(),
                    source: Box::new(source),
                })?;
        if inferred.len() != node.outputs.len() {
            return Err(graph_error(format!(
                "node {index} (`{}`) records {} output(s), the op has {} ({})",
                op.name,
                node.outputs.len(),
                inferred.len(),
                op.outputs.join(", ")
            )));
        }
        let mut outputs = Vec::with_capacity(node.outputs.len());
        for (&id, inferred) in node.outputs.iter().zip(inferred) {
            let v = value(index, id)?;
            if v.ty != inferred {
                return Err(CompileError::TypeMismatch {
                    model: model.name.clone(),
                    node: index,
                    node_name: node.name.clone(),
                    op: op.name.to_owned(),
                    value: v.name,
                    recorded: Box::new(v.ty),
                    inferred: Box::new(inferred),
                });
            }
            outputs.push(v);
        }
        all.push(NodeTypes { inputs, outputs });
    }
    Ok(all)
}

/// What [`lower`] decided for the whole graph.
#[derive(Debug, Clone, PartialEq)]
pub struct Lowered {
    /// What runs each node, in node order.
    pub runs: Vec<NodeRuns>,
    /// Distinct kernels traced: one per (op, input types, params).
    pub kernels: usize,
    /// Distinct shipped kernels that run.
    pub shipped: usize,
    /// Of those, the edited ones.
    pub edited: usize,
    /// Ops that run on the target's fallback, by name, each once.
    pub fallbacks: Vec<String>,
}

/// Pass 4: prepares every node on `executor` (tracing and caching kernels); an op the
/// target has no kernel for runs on the target's [`Executor::fallback`]. On a target that
/// runs kernel programs (`sim`, `ascendc-host`), a node matched by a kernel shipped with the
/// model (op, input types, full params; see [`pto_op::model::ShippedKernel`]) runs that
/// kernel, and the report says `kernel: shipped` (or `kernel: shipped, edited`).
///
/// # Errors
///
/// [`CompileError::Lower`] for a node the target cannot prepare (a kernel that does not
/// trace or fit), [`CompileError::ShippedKernel`] for a matching shipped kernel that is
/// refused (its op's fingerprint changed, its text does not parse or fit the node),
/// [`CompileError::NoFallback`] for an op without a kernel on a target without a fallback.
pub fn lower(
    model: &Model,
    executor: &dyn Executor,
    ops: &[&'static OpDef],
    types: &[NodeTypes],
) -> Result<Lowered, CompileError> {
    let mut kernels = BTreeSet::new();
    let mut shipped = BTreeSet::new();
    let mut edited = BTreeSet::new();
    let mut fallbacks = BTreeSet::new();
    let mut runs = Vec::with_capacity(ops.len());
    // A shipped kernel is checked, traced for the device and prepared once per instance.
    let mut prepared_shipped: HashMap<String, Option<(Lowering, &ShippedKernel)>> = HashMap::new();
    for (index, ((node, op), types)) in model.graph.nodes.iter().zip(ops).zip(types).enumerate() {
        let input_types = types.input_types();
        let lower_error = |source: OpError| CompileError::Lower {
            model: model.name.clone(),
            node: index,
            node_name: node.name.clone(),
            target: executor.target().to_owned(),
            source: Box::new(source),
        };
        let key = format!("{}{:?}{:?}", op.name, input_types, node.attrs);
        let shipped_here = match prepared_shipped.get(&key) {
            Some(prepared) => prepared.clone(),
            None => {
                let prepared =
                    prepare_shipped(model, index, executor, op, &input_types, &node.attrs)?;
                prepared_shipped.insert(key.clone(), prepared.clone());
                prepared
            }
        };
        let (lowering, kernel) = match shipped_here {
            Some((lowering, kernel)) => (lowering, Some(kernel)),
            None => (
                executor
                    .prepare(op, &input_types, &node.attrs)
                    .map_err(lower_error)?,
                None,
            ),
        };
        runs.push(match lowering {
            Lowering::Reference => NodeRuns::Reference,
            Lowering::Kernel { grid } => {
                let source = match kernel {
                    None => {
                        kernels.insert(key);
                        KernelSource::Traced
                    }
                    Some(kernel) => {
                        if kernel.edited() {
                            edited.insert(key.clone());
                        }
                        shipped.insert(key);
                        if kernel.edited() {
                            KernelSource::ShippedEdited
                        } else {
                            KernelSource::Shipped
                        }
                    }
                };
                NodeRuns::Kernel { grid, source }
            }
            Lowering::NoKernel if executor.fallback().is_some() => {
                fallbacks.insert(op.name.to_owned());
                NodeRuns::Fallback
            }
            Lowering::NoKernel => {
                return Err(CompileError::NoFallback {
                    model: model.name.clone(),
                    node: index,
                    node_name: node.name.clone(),
                    op: op.name.to_owned(),
                    target: executor.target().to_owned(),
                });
            }
        });
    }
    Ok(Lowered {
        runs,
        kernels: kernels.len(),
        shipped: shipped.len(),
        edited: edited.len(),
        fallbacks: fallbacks.into_iter().collect(),
    })
}

/// Node `index` on a shipped kernel of `model`, when one matches it and `executor` runs
/// kernel programs: the kernel checked against the linked op (fingerprint, text, instance)
/// and prepared on the target. `None`: no shipped kernel matches, or the target runs none.
fn prepare_shipped<'m>(
    model: &'m Model,
    index: usize,
    executor: &dyn Executor,
    op: &'static OpDef,
    inputs: &[TensorType],
    attrs: &pto_op::Attributes,
) -> Result<Option<(Lowering, &'m ShippedKernel)>, CompileError> {
    if op.kernel.is_none() || !executor.runs_programs() {
        return Ok(None);
    }
    let Ok(params) = op.full_params(attrs) else {
        return Ok(None);
    };
    let Some(kernel) = model.shipped_kernel(op.name, inputs, &params) else {
        return Ok(None);
    };
    let program = kernel
        .program_for(op, executor.device_profile())
        .map_err(|source| CompileError::ShippedKernel {
            model: model.name.clone(),
            node: index,
            source: Box::new(source),
        })?;
    let lowering = executor
        .prepare_program(op, inputs, attrs, &program)
        .map_err(|source| CompileError::Lower {
            model: model.name.clone(),
            node: index,
            node_name: model
                .graph
                .nodes
                .get(index)
                .map_or_else(String::new, |n| n.name.clone()),
            target: executor.target().to_owned(),
            source: Box::new(source),
        })?;
    Ok(lowering.map(|lowering| (lowering, kernel)))
}

/// What a node's time measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeKind {
    /// Wall-clock time on this machine.
    Wall,
    /// Time the target simulated (device cycles at its clock).
    Simulated,
}

/// The time one node took.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeTime {
    /// The node's index.
    pub node: usize,
    /// The op.
    pub op: &'static str,
    /// Seconds, of the kind `kind`.
    pub seconds: f64,
    /// What `seconds` measures.
    pub kind: TimeKind,
    /// Simulated device cycles, for simulated times.
    pub cycles: Option<u64>,
}

/// The result of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunResult {
    /// The graph outputs, in the graph's output order.
    pub outputs: Vec<Tensor>,
    /// Each node's time, in run order.
    pub node_times: Vec<NodeTime>,
}

/// A value during a run.
enum Slot<'a> {
    /// Not computed yet, or released.
    Empty,
    /// A graph input (the caller's) or a weight (the model's).
    Borrowed(&'a Tensor),
    /// A node output the run allocated.
    Owned(Tensor),
    /// A node output in one of the plan's buffers, returned to it when released.
    Buffer(Tensor),
}

impl Slot<'_> {
    fn tensor(&self) -> Option<&Tensor> {
        match self {
            Slot::Empty => None,
            Slot::Borrowed(t) => Some(t),
            Slot::Owned(t) | Slot::Buffer(t) => Some(t),
        }
    }
}

impl RunResult {
    /// The per-node timing table: node, op, time, kind, cycles, and the total per kind.
    pub fn timing_table(&self) -> String {
        let op_w = column_width("op", self.node_times.iter().map(|t| t.op));
        let mut table = format!(
            "{:>4}  {:<op_w$} {:>12}  {:<9} {:>12}\n",
            "node", "op", "time", "kind", "cycles"
        );
        for t in &self.node_times {
            table.push_str(&format!(
                "{:>4}  {:<op_w$} {:>12}  {:<9} {:>12}\n",
                t.node,
                t.op,
                human_seconds(t.seconds),
                match t.kind {
                    TimeKind::Wall => "wall",
                    TimeKind::Simulated => "simulated",
                },
                t.cycles.map_or("-".to_owned(), |c| c.to_string())
            ));
        }
        for (kind, label) in [(TimeKind::Simulated, "simulated"), (TimeKind::Wall, "wall")] {
            let times: Vec<&NodeTime> = self.node_times.iter().filter(|t| t.kind == kind).collect();
            if !times.is_empty() {
                table.push_str(&format!(
                    "total {label}: {} over {} node(s)\n",
                    human_seconds(times.iter().map(|t| t.seconds).sum()),
                    times.len()
                ));
            }
        }
        table
    }
}

/// Seconds for people: `12.3 us`, `4.56 ms`, `1.20 s`.
fn human_seconds(seconds: f64) -> String {
    if seconds >= 1.0 {
        format!("{seconds:.2} s")
    } else if seconds >= 1e-3 {
        format!("{:.2} ms", seconds * 1e3)
    } else {
        format!("{:.1} us", seconds * 1e6)
    }
}

/// An error of running a compiled model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The wrong number of inputs.
    #[error("model `{model}` takes {expected} input(s) ({names}), got {actual}")]
    InputCount {
        /// The model.
        model: String,
        /// The number of graph inputs.
        expected: usize,
        /// Their names.
        names: String,
        /// The number given.
        actual: usize,
    },
    /// An input of another shape or dtype than the graph's.
    #[error("model `{model}`: input `{input}`: expected {expected}, got {actual}")]
    InputType {
        /// The model.
        model: String,
        /// The input's name.
        input: String,
        /// The graph's type.
        expected: Box<TensorType>,
        /// The given tensor's type.
        actual: Box<TensorType>,
    },
    /// A named input the graph lacks, or a graph input not given.
    #[error("model `{model}`: {message}; its inputs are {names}")]
    InputName {
        /// The model.
        model: String,
        /// Which name is missing or unknown.
        message: String,
        /// The graph's input names.
        names: String,
    },
    /// A node failed.
    #[error(
        "model `{model}`: node {node}{} on target `{target}`: {source}",
        named(node_name)
    )]
    Node {
        /// The model.
        model: String,
        /// The node.
        node: usize,
        /// Its name (an imported node's), or empty.
        node_name: String,
        /// The target.
        target: String,
        /// The op's error.
        source: Box<OpError>,
    },
}

impl CompiledModel {
    /// What the compiler decided.
    pub fn report(&self) -> &CompileReport {
        &self.report
    }

    /// The model compiled.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The buffer plan.
    pub fn plan(&self) -> &BufferPlan {
        &self.plan
    }

    /// The target's name.
    pub fn target(&self) -> &str {
        self.executor.target()
    }

    /// The graph inputs' names and types, in run order.
    pub fn inputs(&self) -> Vec<ValueInfo> {
        self.values(&self.model.graph.inputs)
    }

    /// The graph outputs' names and types, in the order runs return them.
    pub fn outputs(&self) -> Vec<ValueInfo> {
        self.values(&self.model.graph.outputs)
    }

    fn values(&self, ids: &[ValueId]) -> Vec<ValueInfo> {
        ids.iter()
            .filter_map(|&id| self.model.graph.values.get(id))
            .map(|v| ValueInfo {
                name: v.name.clone(),
                ty: v.ty.clone(),
            })
            .collect()
    }

    /// The op that produces each graph output (`None` for an output that is an input or a
    /// weight), in output order.
    pub fn output_producers(&self) -> Vec<Option<&'static OpDef>> {
        self.model
            .graph
            .outputs
            .iter()
            .map(|id| {
                self.model
                    .graph
                    .nodes
                    .iter()
                    .zip(&self.nodes)
                    .find(|(node, _)| node.outputs.contains(id))
                    .map(|(_, compiled)| compiled.op)
            })
            .collect()
    }

    /// Random inputs of the graph's input types: input `i` is
    /// `Tensor::random(shape, dtype, seed * 1000 + i)`.
    pub fn random_inputs(&self, seed: u64) -> Vec<Tensor> {
        self.inputs()
            .into_iter()
            .zip(0u64..)
            .map(|(input, index)| {
                let seed = seed.wrapping_mul(1000).wrapping_add(index);
                Tensor::random(input.ty.shape, input.ty.dtype, seed)
            })
            .collect()
    }

    /// Orders inputs given by name into run order.
    ///
    /// # Errors
    ///
    /// A name the graph lacks, or a graph input not given.
    pub fn order_inputs(
        &self,
        mut named: std::collections::BTreeMap<String, Tensor>,
    ) -> Result<Vec<Tensor>, RunError> {
        let inputs = self.inputs();
        let names = || {
            inputs
                .iter()
                .map(|i| format!("`{}`", i.name))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut ordered = Vec::with_capacity(inputs.len());
        for input in &inputs {
            let tensor = named
                .remove(&input.name)
                .ok_or_else(|| RunError::InputName {
                    model: self.model.name.clone(),
                    message: format!("input `{}` ({}) is not given", input.name, input.ty),
                    names: names(),
                })?;
            ordered.push(tensor);
        }
        if let Some(extra) = named.keys().next() {
            return Err(RunError::InputName {
                model: self.model.name.clone(),
                message: format!("no input is named `{extra}`"),
                names: names(),
            });
        }
        Ok(ordered)
    }

    /// Runs the model on `inputs`, in the graph's input order.
    ///
    /// # Errors
    ///
    /// Inputs of the wrong number, shape or dtype (named), or a node that fails.
    pub fn run(&self, inputs: &[Tensor]) -> Result<RunResult, RunError> {
        self.run_with_progress(inputs, &mut |_, _| {})
    }

    /// [`run`](CompiledModel::run), calling `progress(node, op)` before each node.
    ///
    /// # Errors
    ///
    /// As [`run`](CompiledModel::run).
    pub fn run_with_progress(
        &self,
        inputs: &[Tensor],
        progress: &mut dyn FnMut(usize, &str),
    ) -> Result<RunResult, RunError> {
        let graph = &self.model.graph;
        let mut values = self.bind_inputs(inputs)?;
        // The plan's buffers, lent to this run (a concurrent run allocates its own).
        let mut pool = self.buffers.try_lock().map_or_else(
            |_| vec![None; self.plan.buffers.len()],
            |mut kept| std::mem::take(&mut *kept),
        );
        pool.resize_with(self.plan.buffers.len(), || None);
        let mut outputs: Vec<Tensor> = Vec::new();

        let mut node_times = Vec::with_capacity(self.nodes.len());
        for (index, (node, compiled)) in graph.nodes.iter().zip(&self.nodes).enumerate() {
            progress(index, compiled.op.name);
            let node_error = |source: OpError| RunError::Node {
                model: self.model.name.clone(),
                node: index,
                node_name: node.name.clone(),
                target: self.executor.target().to_owned(),
                source: Box::new(source),
            };
            let started = Instant::now();
            let simulated = if let Some(fast) = &compiled.fast {
                outputs.clear();
                for &id in &node.outputs {
                    outputs.push(self.output_buffer(id, &mut pool).map_err(node_error)?);
                }
                self.with_args(&node.inputs, &values, |args| fast.run(args, &mut outputs))
                    .and_then(|ran| ran)
                    .map_err(node_error)?;
                for (&id, tensor) in node.outputs.iter().zip(outputs.drain(..)) {
                    values[id] = match self.plan.buffer_of.get(id) {
                        Some(Some(_)) => Slot::Buffer(tensor),
                        _ => Slot::Owned(tensor),
                    };
                }
                None
            } else {
                let runner = match compiled.runs {
                    NodeRuns::Fallback => self.executor.fallback().ok_or_else(|| {
                        node_error(OpError::Unsupported {
                            op: compiled.op.name.to_owned(),
                            message: "the op has no kernel and the target no fallback".to_owned(),
                        })
                    })?,
                    NodeRuns::Reference | NodeRuns::Kernel { .. } => self.executor.as_ref(),
                };
                let execution = self
                    .with_args(&node.inputs, &values, |args| {
                        runner.execute(compiled.op, args, &node.attrs)
                    })
                    .and_then(|ran| ran)
                    .map_err(node_error)?;
                for (&id, tensor) in node.outputs.iter().zip(execution.outputs) {
                    values[id] = Slot::Owned(tensor);
                }
                execution.simulated
            };
            let wall = started.elapsed().as_secs_f64();
            node_times.push(NodeTime {
                node: index,
                op: compiled.op.name,
                seconds: simulated.map_or(wall, |s| s.seconds),
                kind: if simulated.is_some() {
                    TimeKind::Simulated
                } else {
                    TimeKind::Wall
                },
                cycles: simulated.map(|s| s.cycles),
            });
            for &id in self.plan.release_after.get(index).into_iter().flatten() {
                let released = std::mem::replace(&mut values[id], Slot::Empty);
                if let (Slot::Buffer(tensor), Some(Some(buffer))) =
                    (released, self.plan.buffer_of.get(id))
                {
                    pool[*buffer] = Some(tensor);
                }
            }
        }
        let outputs = graph
            .outputs
            .iter()
            .enumerate()
            .map(|(position, &id)| {
                let used_again = graph.outputs[position + 1..].contains(&id);
                match values.get_mut(id) {
                    Some(slot @ Slot::Owned(_)) if !used_again => {
                        match std::mem::replace(slot, Slot::Empty) {
                            Slot::Owned(tensor) => Ok(tensor),
                            _ => Err(self.unset(id)),
                        }
                    }
                    Some(slot) => slot.tensor().cloned().ok_or_else(|| self.unset(id)),
                    None => Err(self.unset(id)),
                }
            })
            .collect::<Result<Vec<Tensor>, OpError>>()
            .map_err(|source| RunError::Node {
                model: self.model.name.clone(),
                node: graph.nodes.len(),
                node_name: String::new(),
                target: self.executor.target().to_owned(),
                source: Box::new(source),
            })?;
        // Buffers still lent (values no node released) go back as well.
        for (id, slot) in values.into_iter().enumerate() {
            if let (Slot::Buffer(tensor), Some(Some(buffer))) = (slot, self.plan.buffer_of.get(id))
            {
                pool[*buffer] = Some(tensor);
            }
        }
        if let Ok(mut kept) = self.buffers.try_lock() {
            *kept = pool;
        }
        Ok(RunResult {
            outputs,
            node_times,
        })
    }

    /// The values of a run with the graph inputs (checked against the graph's types) and
    /// the weights bound; node outputs empty.
    fn bind_inputs<'a>(&'a self, inputs: &'a [Tensor]) -> Result<Vec<Slot<'a>>, RunError> {
        let graph = &self.model.graph;
        if inputs.len() != graph.inputs.len() {
            let declared = self.inputs();
            return Err(RunError::InputCount {
                model: self.model.name.clone(),
                expected: declared.len(),
                names: declared
                    .iter()
                    .map(|i| i.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                actual: inputs.len(),
            });
        }
        let mut values: Vec<Slot<'a>> = Vec::with_capacity(graph.values.len());
        values.resize_with(graph.values.len(), || Slot::Empty);
        for (tensor, &id) in inputs.iter().zip(&graph.inputs) {
            let Some(declared) = graph.values.get(id) else {
                continue;
            };
            if tensor.dims() != declared.ty.shape.dims() || tensor.dtype() != declared.ty.dtype {
                return Err(RunError::InputType {
                    model: self.model.name.clone(),
                    input: declared.name.clone(),
                    expected: Box::new(declared.ty.clone()),
                    actual: Box::new(tensor.tensor_type()),
                });
            }
            values[id] = Slot::Borrowed(tensor);
        }
        for &id in &graph.weights {
            if let Some(weight) = graph
                .values
                .get(id)
                .and_then(|def| self.model.weights.get(&def.name))
            {
                values[id] = Slot::Borrowed(weight);
            }
        }
        Ok(values)
    }

    /// The tensor a fast path writes value `id` into: its planned buffer, shaped for it
    /// (allocated on the buffer's first use), or a new tensor for a graph output.
    fn output_buffer(&self, id: ValueId, pool: &mut [Option<Tensor>]) -> Result<Tensor, OpError> {
        let def = self
            .model
            .graph
            .values
            .get(id)
            .ok_or_else(|| OpError::invalid(format!("value {id} does not exist")))?;
        let dims = def.ty.shape.dims();
        Ok(match self.plan.buffer_of.get(id) {
            Some(&Some(buffer)) => {
                let kept = pool.get_mut(buffer).and_then(Option::take);
                let kept = kept.unwrap_or_else(|| {
                    let size = self.plan.buffers.get(buffer).map_or(0, |b| b.elements);
                    Tensor::zeros([size], def.ty.dtype)
                });
                kept.reuse_as(dims)
            }
            _ => Tensor::zeros(def.ty.shape.clone(), def.ty.dtype),
        })
    }

    /// Calls `f` with the tensors of `ids`; up to four without allocating.
    fn with_args<R>(
        &self,
        ids: &[ValueId],
        values: &[Slot<'_>],
        f: impl FnOnce(&[&Tensor]) -> R,
    ) -> Result<R, OpError> {
        let get = |id: ValueId| {
            values
                .get(id)
                .and_then(Slot::tensor)
                .ok_or_else(|| self.unset(id))
        };
        Ok(match *ids {
            [] => f(&[]),
            [a] => f(&[get(a)?]),
            [a, b] => f(&[get(a)?, get(b)?]),
            [a, b, c] => f(&[get(a)?, get(b)?, get(c)?]),
            [a, b, c, d] => f(&[get(a)?, get(b)?, get(c)?, get(d)?]),
            _ => f(&ids
                .iter()
                .map(|&id| get(id))
                .collect::<Result<Vec<_>, _>>()?),
        })
    }

    /// The error for reading value `id` before it is computed.
    fn unset(&self, id: ValueId) -> OpError {
        match self.model.graph.values.get(id) {
            Some(def) => OpError::invalid(format!(
                "value `{}` is read before it is computed: the nodes are not in a topological order",
                def.name
            )),
            None => OpError::invalid(format!("value {id} does not exist")),
        }
    }
}
