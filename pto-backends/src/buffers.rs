//! Buffer planning: how much activation memory a run needs at its peak (from
//! [`Liveness`]), and when each activation can be freed.

use pto_op::graph::Liveness;
use pto_op::{GraphDef, ValueId};
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
            release_after: liveness.release_after,
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
