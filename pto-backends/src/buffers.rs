//! Buffer planning: how long each activation lives over the node order, and so how much
//! activation memory a run needs at its peak.

use pto_op::{GraphDef, ValueId, ValueKind};
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
///     op: "demo.softmax".into(), version: 1, fingerprint: pto_op::Fingerprint(0),
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
}

impl BufferPlan {
    /// The plan of `graph`, its nodes run in their recorded order. Value ids out of range
    /// are ignored here; the compiler rejects such graphs before it plans.
    pub fn of(graph: &GraphDef) -> BufferPlan {
        let nodes = graph.nodes.len();
        let bytes = |id: ValueId| {
            graph
                .values
                .get(id)
                .map_or(0, |v| (v.ty.shape.numel() * v.ty.dtype.size_bytes()) as u64)
        };
        // (first node alive, last node alive) per activation.
        let mut span: Vec<Option<(usize, usize)>> = graph
            .values
            .iter()
            .map(|v| (v.kind == ValueKind::Input).then_some((0, 0)))
            .collect();
        for (index, node) in graph.nodes.iter().enumerate() {
            for &id in &node.inputs {
                if let Some(Some((_, last))) = span.get_mut(id) {
                    *last = (*last).max(index);
                }
            }
            for &id in &node.outputs {
                if let Some(slot) = span.get_mut(id) {
                    *slot = Some((index, index));
                }
            }
        }
        let mut release_after = vec![Vec::new(); nodes];
        for (id, slot) in span.iter_mut().enumerate() {
            if let Some((_, last)) = slot {
                if graph.outputs.contains(&id) {
                    *last = nodes.saturating_sub(1);
                } else if let Some(list) = release_after.get_mut(*last) {
                    list.push(id);
                }
            }
        }
        let live_bytes: Vec<u64> = (0..nodes)
            .map(|index| {
                span.iter()
                    .enumerate()
                    .filter_map(|(id, s)| {
                        s.filter(|(first, last)| (*first..=*last).contains(&index))
                            .map(|_| bytes(id))
                    })
                    .sum()
            })
            .collect();
        let peak = live_bytes
            .iter()
            .enumerate()
            .max_by_key(|(index, bytes)| (**bytes, core::cmp::Reverse(*index)));
        let inputs_only: u64 = graph.inputs.iter().map(|&id| bytes(id)).sum();
        BufferPlan {
            peak_activation_bytes: peak.map_or(inputs_only, |(_, b)| *b),
            peak_node: peak.map(|(index, _)| index),
            live_bytes,
            weight_bytes: graph.weights.iter().map(|&id| bytes(id)).sum(),
            release_after,
        }
    }
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
