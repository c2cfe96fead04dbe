//! The compiler's errors: [`CompileError`] (compiling a model) and [`RunError`] (running a
//! compiled one), each naming the model, node and value at fault.

use pto_op::name::quoted;
use pto_op::registry::RegistryError;
use pto_op::target::TargetError;
use pto_op::{OpError, TensorType};

use crate::compat::SchemaChange;

/// An error of compiling a model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompileError {
    /// The target is not linked.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// A node calls an op that is not linked.
    #[error("model {m}: node {node}{}: {source}", named(node_name), m = quoted(model))]
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
        "model {m}: node {node}{} calls {o}, but the model records no schema of it",
        named(node_name),
        m = quoted(model),
        o = quoted(op)
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
        "op {o} changed since the model was built: {}; rebuild (re-export) the model \
         against the linked op, or link the op's old version",
        join(changes),
        o = quoted(op)
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
        "op {o} changed since the model was built: node {node}{} was traced against \
         version {recorded_version} (fingerprint {recorded}), the linked op is version \
         {linked_version} (fingerprint {linked})",
        named(node_name),
        o = quoted(op)
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
    /// do not fit their use ([`Model::check_pow_exponents`](pto_op::Model::check_pow_exponents)).
    #[error("model {m}: {source}", m = quoted(model))]
    Weights {
        /// The model.
        model: String,
        /// What does not fit.
        source: Box<OpError>,
    },
    /// The graph's structure is broken ([`pto_op::GraphDef::validate`]).
    #[error("model {m}: invalid graph: {source}", m = quoted(model))]
    InvalidGraph {
        /// The model.
        model: String,
        /// The fault.
        source: pto_op::graph::GraphError,
    },
    /// A node refers to a value that does not exist, or records another number of outputs
    /// than its op has.
    #[error("model {m}: {message}", m = quoted(model))]
    Graph {
        /// The model.
        model: String,
        /// What is wrong.
        message: String,
    },
    /// An op's rules reject a node's inputs.
    #[error("model {m}: node {node}{}: {source}", named(node_name), m = quoted(model))]
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
        "model {m}: node {node}{} ({o}): value {v} is recorded as {recorded}, \
         but the op's rules now give {inferred}",
        named(node_name),
        m = quoted(model),
        o = quoted(op),
        v = quoted(value)
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
        "model {m}: node {node}{}: op {o} has no kernel, and target `{target}` has no \
         fallback to run its reference",
        named(node_name),
        m = quoted(model),
        o = quoted(op)
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
    #[error("model {m}: node {node}: {source}", m = quoted(model))]
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
        "model {m}: node {node}{} on target `{target}`: {source}",
        named(node_name),
        m = quoted(model)
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

/// An error of running a compiled model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The wrong number of inputs.
    #[error("model {m} takes {expected} input(s) ({names}), got {actual}", m = quoted(model))]
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
    #[error(
        "model {m}: input {i}: expected {expected}, got {actual}",
        m = quoted(model),
        i = quoted(input)
    )]
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
    #[error("model {m}: {message}; its inputs are {names}", m = quoted(model))]
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
        "model {m}: node {node}{} on target `{target}`: {source}",
        named(node_name),
        m = quoted(model)
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

/// ` `name`` for a named node, nothing for an unnamed one.
fn named(name: &str) -> String {
    if name.is_empty() {
        String::new()
    } else {
        format!(" {}", quoted(name))
    }
}

fn join(changes: &[SchemaChange]) -> String {
    changes
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}
