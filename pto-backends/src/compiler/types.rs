//! Pass 2, type checking: every node's op rules re-run on its recorded input types give the
//! output types the model recorded.

use pto_op::{Model, OpDef, TensorType, ValueId};

use super::{CompileError, ValueInfo};

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

/// Pass 2: re-runs each node's op rules (`ops`, from [`resolve`](super::resolve())) on its
/// recorded input types, and checks that they give the output types the model recorded.
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
