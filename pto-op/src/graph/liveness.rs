//! Activation liveness: how long each activation lives over the node order, and so how much
//! activation memory a run needs at its peak. The compiler's buffer plan and the estimator's
//! model report both read it.

use super::{GraphDef, ValueId, ValueKind};

/// The nodes during which an activation is alive, both ends included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveSpan {
    /// The node that makes it (graph inputs: node 0).
    pub first: usize,
    /// Its last reader (graph outputs: the last node).
    pub last: usize,
}

/// The liveness of a graph's activations (graph inputs and node outputs), its nodes run in
/// their recorded order. Activations live from the node that makes them (graph inputs: from
/// the start) to their last reader (graph outputs: to the end); weights are not activations.
/// Value ids out of range are ignored; [`GraphDef::validate`] rejects such graphs.
///
/// Computed in one pass over the nodes and one over the values: `O(nodes + values + edges)`.
///
/// ```
/// use pto_op::graph::Liveness;
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
/// let liveness = Liveness::of(&graph);
/// assert_eq!(liveness.live_bytes, vec![2048, 2048, 2048]);
/// assert_eq!((liveness.peak_bytes, liveness.peak_node), (2048, Some(0)));
/// assert_eq!(liveness.release_after, vec![vec![0], vec![1], vec![2]]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Liveness {
    /// Each value's span, by id (`None`: a weight, or a value no node makes).
    pub spans: Vec<Option<LiveSpan>>,
    /// Activation bytes alive while each node runs (its inputs and outputs included).
    pub live_bytes: Vec<u64>,
    /// The most activation bytes alive at once (a graph without nodes: its inputs).
    pub peak_bytes: u64,
    /// The first node during which the peak is reached (`None` for a graph without nodes).
    pub peak_node: Option<usize>,
    /// The activations no later node reads, by the node after which they can be freed
    /// (graph outputs are never freed).
    pub release_after: Vec<Vec<ValueId>>,
}

impl Liveness {
    /// The liveness of `graph`'s activations.
    pub fn of(graph: &GraphDef) -> Liveness {
        let nodes = graph.nodes.len();
        let bytes = |id: ValueId| graph.values.get(id).map_or(0, |v| v.ty.bytes());
        let mut spans: Vec<Option<LiveSpan>> = graph
            .values
            .iter()
            .map(|v| (v.kind == ValueKind::Input).then_some(LiveSpan { first: 0, last: 0 }))
            .collect();
        for (index, node) in graph.nodes.iter().enumerate() {
            for &id in &node.inputs {
                if let Some(Some(span)) = spans.get_mut(id) {
                    span.last = span.last.max(index);
                }
            }
            for &id in &node.outputs {
                if let Some(slot) = spans.get_mut(id) {
                    *slot = Some(LiveSpan {
                        first: index,
                        last: index,
                    });
                }
            }
        }
        let mut is_output = vec![false; graph.values.len()];
        for &id in &graph.outputs {
            if let Some(flag) = is_output.get_mut(id) {
                *flag = true;
            }
        }
        // Bytes that start and stop being alive at each node; a running sum gives the bytes
        // alive during each node.
        let mut release_after = vec![Vec::new(); nodes];
        let mut delta = vec![0i128; nodes + 1];
        for (id, slot) in spans.iter_mut().enumerate() {
            let Some(span) = slot else { continue };
            if is_output[id] {
                span.last = span.last.max(nodes.saturating_sub(1));
            } else if let Some(list) = release_after.get_mut(span.last) {
                list.push(id);
            }
            if span.first < nodes {
                let b = i128::from(bytes(id));
                delta[span.first] += b;
                delta[span.last.min(nodes - 1) + 1] -= b;
            }
        }
        let mut alive = 0i128;
        let live_bytes: Vec<u64> = delta[..nodes]
            .iter()
            .map(|d| {
                alive += d;
                u64::try_from(alive).unwrap_or(0)
            })
            .collect();
        let peak = live_bytes
            .iter()
            .enumerate()
            .max_by_key(|(index, bytes)| (**bytes, core::cmp::Reverse(*index)));
        let inputs_only: u64 = graph.inputs.iter().map(|&id| bytes(id)).sum();
        Liveness {
            peak_bytes: peak.map_or(inputs_only, |(_, b)| *b),
            peak_node: peak.map(|(index, _)| index),
            spans,
            live_bytes,
            release_after,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::graph::{NodeDef, ValueDef};
    use crate::op::TensorType;
    use crate::schema::Fingerprint;
    use crate::shape::Shape;
    use crate::tensor::SplitMix64;

    /// A random graph in topological order: inputs, a weight, then nodes reading earlier
    /// values, each making one or two new ones; some values are graph outputs.
    fn random_graph(seed: u64) -> GraphDef {
        let mut rng = SplitMix64::new(seed);
        let mut graph = GraphDef::default();
        let value = |graph: &mut GraphDef, kind, rng: &mut SplitMix64| {
            graph.values.push(ValueDef {
                name: format!("v{}", graph.values.len()),
                ty: TensorType {
                    shape: Shape::from([1 + rng.below(64)]),
                    dtype: DType::ALL[rng.below(DType::ALL.len())],
                },
                kind,
            });
            graph.values.len() - 1
        };
        for _ in 0..=rng.below(3) {
            let id = value(&mut graph, ValueKind::Input, &mut rng);
            graph.inputs.push(id);
        }
        let weight = value(&mut graph, ValueKind::Weight, &mut rng);
        graph.weights.push(weight);
        for _ in 0..rng.below(12) {
            let available = graph.values.len();
            let inputs = (0..=rng.below(3)).map(|_| rng.below(available)).collect();
            let outputs = (0..=rng.below(2))
                .map(|_| value(&mut graph, ValueKind::Node, &mut rng))
                .collect();
            graph.nodes.push(NodeDef {
                name: String::new(),
                op: "test.any".to_owned(),
                version: 1,
                fingerprint: Fingerprint(0),
                inputs,
                outputs,
                attrs: Default::default(),
            });
        }
        for id in 0..graph.values.len() {
            if rng.below(4) == 0 {
                graph.outputs.push(id);
            }
        }
        graph
    }

    /// Bytes alive during `node`, from the definition: every activation made at or before
    /// it and read (or output) at or after it.
    fn alive_by_definition(graph: &GraphDef, node: usize) -> u64 {
        let last_node = graph.nodes.len() - 1;
        (0..graph.values.len())
            .filter(|&id| {
                let made = match graph.values[id].kind {
                    ValueKind::Input => Some(0),
                    ValueKind::Weight => None,
                    ValueKind::Node => graph.nodes.iter().position(|n| n.outputs.contains(&id)),
                };
                let Some(made) = made else { return false };
                let last_read = graph
                    .nodes
                    .iter()
                    .rposition(|n| n.inputs.contains(&id))
                    .filter(|&r| r >= made)
                    .unwrap_or(made);
                let last = if graph.outputs.contains(&id) {
                    last_node
                } else {
                    last_read
                };
                (made..=last).contains(&node)
            })
            .map(|id| graph.values[id].ty.bytes())
            .sum()
    }

    #[test]
    fn live_bytes_match_the_definition_on_random_graphs() {
        for seed in 0..300 {
            let graph = random_graph(seed);
            let liveness = Liveness::of(&graph);
            let expected: Vec<u64> = (0..graph.nodes.len())
                .map(|node| alive_by_definition(&graph, node))
                .collect();
            assert_eq!(liveness.live_bytes, expected, "seed {seed}: {graph:?}");
            let peak = expected.iter().copied().max();
            assert_eq!(liveness.peak_node.map(|n| expected[n]), peak, "seed {seed}");
            if graph.nodes.is_empty() {
                let inputs: u64 = graph
                    .inputs
                    .iter()
                    .map(|&i| graph.values[i].ty.bytes())
                    .sum();
                assert_eq!(liveness.peak_bytes, inputs);
            } else {
                assert_eq!(Some(liveness.peak_bytes), peak);
            }
            // Every activation that is not an output is released exactly once, after its span.
            for (node, released) in liveness.release_after.iter().enumerate() {
                for &id in released {
                    assert!(!graph.outputs.contains(&id));
                    assert_eq!(liveness.spans[id].map(|s| s.last), Some(node));
                }
            }
        }
    }

    #[test]
    fn weights_are_not_activations() {
        let graph = random_graph(7);
        let liveness = Liveness::of(&graph);
        for &id in &graph.weights {
            assert_eq!(liveness.spans[id], None);
        }
    }
}
