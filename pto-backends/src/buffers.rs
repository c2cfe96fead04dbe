//! Buffer planning: how much activation memory a run needs at its peak (from
//! [`Liveness`]), when each activation can be freed, and which reusable buffer each
//! activation lives in.

use pto_op::graph::Liveness;
use pto_op::{DType, GraphDef, ValueId, ValueKind};
use serde::Serialize;

/// The memory a model needs to run: activations (graph inputs and node outputs) live from
/// the node that makes them (graph inputs: from the start) to their last reader (graph
/// outputs: to the end); weights live always.
///
/// ```
/// use pto_backends::buffers::BufferPlan;
/// use pto_op::{DType, GraphDef, NodeDef, Shape, TensorType, ValueDef, ValueKind};
/// let value = |name: &str, kind| ValueDef {
///     name: name.into(),
///     ty: TensorType { shape: Shape::from([256]), dtype: DType::F32 },
///     kind,
/// };
/// let node = |input, output| NodeDef {
///     name: String::new(), op: "demo.softmax".into(), version: 1, fingerprint: pto_op::Fingerprint(0),
///     inputs: vec![input], outputs: vec![output], attrs: Default::default(),
/// };
/// // x -> a -> b -> y: at most two 1 KiB activations at once.
/// let graph = GraphDef {
///     values: vec![value("x", ValueKind::Input), value("a", ValueKind::Node),
///                  value("b", ValueKind::Node), value("y", ValueKind::Node)],
///     inputs: vec![0], weights: vec![], outputs: vec![3],
///     nodes: vec![node(0, 1), node(1, 2), node(2, 3)],
/// };
/// let plan = BufferPlan::of(&graph);
/// assert_eq!(plan.peak_activation_bytes, 2048);
/// assert_eq!(plan.release_after[1], vec![1]);
/// // a and b need two buffers; y, the graph output, is handed to the caller.
/// assert_eq!(plan.buffers.len(), 2);
/// assert_eq!((plan.buffer_of[1], plan.buffer_of[2], plan.buffer_of[3]), (Some(0), Some(1), None));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BufferPlan {
    /// The most activation bytes alive at once.
    pub peak_activation_bytes: u64,
    /// The node during which the peak is reached (`None` for a graph without nodes).
    pub peak_node: Option<usize>,
    /// Activation bytes alive while each node runs (its inputs and outputs included).
    pub live_bytes: Vec<u64>,
    /// Bytes of all weights.
    pub weight_bytes: u64,
    /// The activations no later node reads, by the node after which they can be freed
    /// (graph outputs are never freed).
    pub release_after: Vec<Vec<ValueId>>,
    /// The buffer each value lives in during a run, by value id: node outputs that are not
    /// graph outputs (`None` for the rest: inputs and weights are the caller's and the
    /// model's, graph outputs go to the caller).
    pub buffer_of: Vec<Option<usize>>,
    /// The reusable buffers, each the dtype and the most elements of the values it holds
    /// in turn. Two values share a buffer only when their lives do not overlap.
    pub buffers: Vec<BufferDef>,
    /// The most bytes a run holds at once: what [`RunMemory`] finds once the compiler
    /// knows which nodes write into the plan's buffers ([`BufferPlan::with_run_memory`]);
    /// until then, the activation peak.
    pub run: RunMemory,
}

/// How a node of a run holds memory, for [`BufferPlan::with_run_memory`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeMemory {
    /// It writes its outputs into the plan's buffers (a fast CPU path).
    pub pooled: bool,
    /// It copies its inputs while it runs (a kernel on the simulator or the host).
    pub copies_inputs: bool,
}

/// The memory a run of a compiled model holds at its peak, as the runtime holds it, which
/// is more than the activations alive at once ([`BufferPlan::peak_activation_bytes`]):
///
/// - the graph inputs for the whole run (the caller owns them: the run only borrows);
/// - each planned buffer from the node that first writes it to the end of the run (the
///   pool keeps a buffer for the next value, and for the next run);
/// - the outputs of nodes that do not write into a buffer (references, the simulator, a
///   fallback: each returns tensors of its own) and the graph outputs, from their node to
///   their last reader (graph outputs: to the end);
/// - while a kernel runs on a simulated or host target, a copy of its inputs (the
///   simulator's global memory, the host's input files' bytes).
///
/// Measured against the process's peak RSS by `tests/tests/memory_budget.rs` (within 25%).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RunMemory {
    /// The most bytes held at once (weights not included).
    pub peak_bytes: u64,
    /// The node during which that peak is reached (`None` for a graph without nodes).
    pub peak_node: Option<usize>,
}

/// One reusable activation buffer of a [`BufferPlan`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BufferDef {
    /// The dtype of the values it holds.
    pub dtype: DType,
    /// The most elements of a value it holds.
    pub elements: usize,
}

impl BufferPlan {
    /// The plan of `graph`, its nodes run in their recorded order, from its activations'
    /// [`Liveness`]. Value ids out of range are ignored here; the compiler rejects such
    /// graphs before it plans.
    pub fn of(graph: &GraphDef) -> BufferPlan {
        let liveness = Liveness::of(graph);
        BufferPlan {
            peak_activation_bytes: liveness.peak_bytes,
            peak_node: liveness.peak_node,
            live_bytes: liveness.live_bytes,
            weight_bytes: graph
                .weights
                .iter()
                .filter_map(|&id| graph.values.get(id))
                .map(|v| v.ty.bytes())
                .sum(),
            buffer_of: assign_buffers(graph, &liveness.release_after),
            buffers: Vec::new(),
            release_after: liveness.release_after,
            run: RunMemory {
                peak_bytes: liveness.peak_bytes,
                peak_node: liveness.peak_node,
            },
        }
        .with_buffer_sizes(graph)
    }

    /// The plan with [`run`](BufferPlan::run) computed for a run in which node `i` writes
    /// its outputs into the plan's buffers when `nodes[i].pooled` (a fast CPU path), else
    /// returns tensors of its own, and copies its inputs while it runs when
    /// `nodes[i].copies_inputs` (a kernel on the simulator or the host).
    ///
    /// ```
    /// use pto_backends::buffers::{BufferPlan, NodeMemory};
    /// use pto_op::{DType, GraphDef, NodeDef, Shape, TensorType, ValueDef, ValueKind};
    /// let value = |name: &str, kind| ValueDef {
    ///     name: name.into(),
    ///     ty: TensorType { shape: Shape::from([256]), dtype: DType::F32 },
    ///     kind,
    /// };
    /// let node = |input, output| NodeDef {
    ///     name: String::new(), op: "demo.softmax".into(), version: 1, fingerprint: pto_op::Fingerprint(0),
    ///     inputs: vec![input], outputs: vec![output], attrs: Default::default(),
    /// };
    /// // x -> a -> b -> y, 1 KiB each: two alive at once, but the caller holds x, and a's
    /// // buffer stays in the pool once b is made: x, a, b and y at the last node.
    /// let graph = GraphDef {
    ///     values: vec![value("x", ValueKind::Input), value("a", ValueKind::Node),
    ///                  value("b", ValueKind::Node), value("y", ValueKind::Node)],
    ///     inputs: vec![0], weights: vec![], outputs: vec![3],
    ///     nodes: vec![node(0, 1), node(1, 2), node(2, 3)],
    /// };
    /// let fast = NodeMemory { pooled: true, copies_inputs: false };
    /// let plan = BufferPlan::of(&graph).with_run_memory(&graph, &[fast; 3]);
    /// assert_eq!((plan.peak_activation_bytes, plan.run.peak_bytes), (2048, 4096));
    /// // Nodes that return their own tensors free a and b after their last reader; on the
    /// // simulator each also holds a copy of its input while it runs.
    /// let reference = NodeMemory { pooled: false, copies_inputs: false };
    /// let plan = BufferPlan::of(&graph).with_run_memory(&graph, &[reference; 3]);
    /// assert_eq!(plan.run.peak_bytes, 3072);
    /// let sim = NodeMemory { pooled: false, copies_inputs: true };
    /// let plan = BufferPlan::of(&graph).with_run_memory(&graph, &[sim; 3]);
    /// assert_eq!(plan.run.peak_bytes, 4096);
    /// ```
    pub fn with_run_memory(mut self, graph: &GraphDef, nodes: &[NodeMemory]) -> BufferPlan {
        let bytes = |id: ValueId| graph.values.get(id).map_or(0, |v| v.ty.bytes());
        let inputs: u64 = graph
            .inputs
            .iter()
            .map(|&id| bytes(id))
            .fold(0, u64::saturating_add);
        let buffer_bytes = |b: usize| {
            self.buffers.get(b).map_or(0, |def| {
                (def.elements as u64).saturating_mul(def.dtype.size_bytes() as u64)
            })
        };
        let mut made = vec![false; self.buffers.len()];
        let (mut pool, mut owned) = (0u64, 0u64);
        let mut owned_values = vec![false; graph.values.len()];
        let mut run = RunMemory {
            peak_bytes: inputs,
            peak_node: None,
        };
        for (index, node) in graph.nodes.iter().enumerate() {
            let holds = nodes.get(index).copied().unwrap_or_default();
            let in_pool = holds.pooled;
            let copies: u64 = if holds.copies_inputs {
                node.inputs
                    .iter()
                    .map(|&id| bytes(id))
                    .fold(0, u64::saturating_add)
            } else {
                0
            };
            for &id in &node.outputs {
                match self.buffer_of.get(id).copied().flatten() {
                    Some(b) if in_pool => {
                        if !std::mem::replace(&mut made[b], true) {
                            pool = pool.saturating_add(buffer_bytes(b));
                        }
                    }
                    _ => {
                        if let Some(flag) = owned_values.get_mut(id) {
                            *flag = true;
                            owned = owned.saturating_add(bytes(id));
                        }
                    }
                }
            }
            let now = inputs
                .saturating_add(pool)
                .saturating_add(owned)
                .saturating_add(copies);
            // `now` holds the inputs at least: the first node is the peak until another
            // holds more.
            if run.peak_node.is_none() || now > run.peak_bytes {
                run = RunMemory {
                    peak_bytes: now,
                    peak_node: Some(index),
                };
            }
            for &id in self.release_after.get(index).into_iter().flatten() {
                if owned_values.get(id).copied().unwrap_or(false) && !graph.outputs.contains(&id) {
                    owned_values[id] = false;
                    owned = owned.saturating_sub(bytes(id));
                }
            }
        }
        self.run = run;
        self
    }

    /// Fills [`buffers`](BufferPlan::buffers) from `buffer_of`: each buffer's dtype and
    /// largest value.
    fn with_buffer_sizes(mut self, graph: &GraphDef) -> BufferPlan {
        let count = self
            .buffer_of
            .iter()
            .flatten()
            .map(|&b| b + 1)
            .max()
            .unwrap_or(0);
        let mut buffers = vec![None::<BufferDef>; count];
        for (value, buffer) in graph.values.iter().zip(&self.buffer_of) {
            if let Some(&b) = buffer.as_ref() {
                let elements = value.ty.shape.numel();
                let def = buffers[b].get_or_insert(BufferDef {
                    dtype: value.ty.dtype,
                    elements,
                });
                def.elements = def.elements.max(elements);
            }
        }
        self.buffers = buffers.into_iter().flatten().collect();
        self
    }
}

/// Gives every node output that is not a graph output a buffer, walking the nodes in run
/// order: a value takes the smallest free buffer of its dtype that holds it, or a new one; its buffer is free again after the node that
/// releases it (`release_after`), so a node's outputs never share a buffer with its inputs.
fn assign_buffers(graph: &GraphDef, release_after: &[Vec<ValueId>]) -> Vec<Option<usize>> {
    let mut buffer_of = vec![None; graph.values.len()];
    // (dtype, elements) per buffer, and the free ones.
    let mut sizes: Vec<(DType, usize)> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    for (index, node) in graph.nodes.iter().enumerate() {
        for &id in &node.outputs {
            let Some(value) = graph.values.get(id) else {
                continue;
            };
            if value.kind != ValueKind::Node || graph.outputs.contains(&id) {
                continue;
            }
            let (dtype, elements) = (value.ty.dtype, value.ty.shape.numel());
            // A buffer of exactly the value's size first: reshaping it to the value then
            // neither shortens nor (the next time) lengthens its elements.
            let fits = |&&b: &&usize| sizes[b].0 == dtype && sizes[b].1 >= elements;
            let chosen = free
                .iter()
                .filter(fits)
                .min_by_key(|&&b| sizes[b].1)
                .copied();
            let buffer = match chosen {
                Some(b) => {
                    free.retain(|&f| f != b);
                    b
                }
                None => {
                    sizes.push((dtype, elements));
                    sizes.len() - 1
                }
            };
            buffer_of[id] = Some(buffer);
        }
        for &id in release_after.get(index).into_iter().flatten() {
            if let Some(Some(b)) = buffer_of.get(id) {
                free.push(*b);
            }
        }
    }
    buffer_of
}

/// Bytes for people: `512 B`, `48.0 KiB`, `3.2 MiB`.
///
/// ```
/// assert_eq!(pto_backends::buffers::human_bytes(49152), "48.0 KiB");
/// ```
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}
