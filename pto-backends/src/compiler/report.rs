//! What compile prints: per node, what runs it; kernels traced and shipped; fallbacks;
//! activation memory.

use core::fmt;

use pto_op::TensorType;
use pto_op::table::column_width;
use serde::Serialize;

use crate::buffers::human_bytes;

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
    /// device, traced again for it
    /// ([`ShippedKernel::program_for`](pto_op::model::ShippedKernel::program_for)).
    Shipped,
    /// A kernel shipped with the model whose text was edited since.
    ShippedEdited,
    /// A kernel shipped with the model, unedited, while the linked op's kernel changed since
    /// export ([`Staleness::Stale`](pto_op::model::Staleness)): the shipped text runs, not
    /// the op's current kernel (`pto ... --kernels linked` runs that).
    ShippedStale,
    /// An edited shipped kernel whose op's kernel also changed since export.
    ShippedEditedStale,
}

impl KernelSource {
    /// The source of a shipped kernel, edited or not, stale or not.
    pub fn shipped(edited: bool, stale: bool) -> KernelSource {
        match (edited, stale) {
            (false, false) => KernelSource::Shipped,
            (true, false) => KernelSource::ShippedEdited,
            (false, true) => KernelSource::ShippedStale,
            (true, true) => KernelSource::ShippedEditedStale,
        }
    }

    /// Whether the kernel's text was edited since it was shipped.
    pub fn edited(self) -> bool {
        matches!(
            self,
            KernelSource::ShippedEdited | KernelSource::ShippedEditedStale
        )
    }

    /// Whether the linked op's kernel changed since the kernel was shipped.
    pub fn stale(self) -> bool {
        matches!(
            self,
            KernelSource::ShippedStale | KernelSource::ShippedEditedStale
        )
    }
}

/// What a stale shipped kernel's report says.
pub const STALE: &str = "stale: the op's kernel changed since export";

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
            } => write!(f, "kernel: shipped (edited), grid {grid}"),
            NodeRuns::Kernel {
                grid,
                source: KernelSource::ShippedStale,
            } => write!(f, "kernel: shipped ({STALE}), grid {grid}"),
            NodeRuns::Kernel {
                grid,
                source: KernelSource::ShippedEditedStale,
            } => write!(f, "kernel: shipped (edited; {STALE}), grid {grid}"),
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
    /// Why the target's lowering refused the op's kernel, when the node runs on the
    /// fallback although its op has one (an int8 global, a dtype the device cannot hold).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub declined: Option<String>,
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

/// What [`compile`](super::compile()) decided: per node, what runs it; kernels traced;
/// fallbacks; memory.
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
    /// Of those, the ones whose op's kernel changed since they were shipped (stale).
    pub kernels_stale: usize,
    /// Ops that run on the target's fallback (the CPU reference) because the target needs a
    /// kernel they lack.
    pub fallbacks: Vec<String>,
    /// The most activation bytes alive at once.
    pub peak_activation_bytes: u64,
    /// The node during which that peak is reached.
    pub peak_node: Option<usize>,
    /// The most bytes a run holds at once, weights aside ([`crate::buffers::RunMemory`]:
    /// the inputs, the plan's buffers once made, the nodes' own outputs).
    pub run_peak_bytes: u64,
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
            match (
                self.kernels_shipped,
                self.kernels_edited,
                self.kernels_stale
            ) {
                (0, _, _) => String::new(),
                (n, 0, 0) => format!("{n} shipped, "),
                (n, e, 0) => format!("{n} shipped ({e} edited), "),
                (n, 0, s) => format!("{n} shipped ({s} stale), "),
                (n, e, s) => format!("{n} shipped ({e} edited, {s} stale), "),
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
            .map(|n| {
                let runs = match n.declined {
                    Some(_) => "reference (fallback: kernel refused, see below)".to_owned(),
                    None => n.runs.to_string(),
                };
                match n.fast_path {
                    true => format!("{runs} (fast path)"),
                    false => runs,
                }
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
        for node in &self.nodes {
            if let Some(reason) = &node.declined {
                writeln!(
                    f,
                    "node {} `{}`: the {} lowering refused the op's kernel: {reason}",
                    node.node, node.op, self.target
                )?;
            }
        }
        write!(
            f,
            "peak activation memory {}{}, weights {}; a run holds up to {} besides its \
             weights (inputs, buffers, outputs)",
            human_bytes(self.peak_activation_bytes),
            self.peak_node
                .map_or(String::new(), |n| format!(" (during node {n})")),
            human_bytes(self.weight_bytes),
            human_bytes(self.run_peak_bytes)
        )
    }
}
