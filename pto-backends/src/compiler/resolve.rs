//! Pass 1, resolve: the graph's ids and weights are sound, and every node's op is linked
//! with the signature (schema, version, fingerprint) the model was built against.

use std::collections::BTreeSet;

use pto_op::{Model, NodeDef, OpDef};

use super::CompileError;
use crate::compat::schema_changes;

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
