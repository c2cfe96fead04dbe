//! The compiler's errors: [`CompileError`] (compiling a model) and [`RunError`] (running a
//! compiled one), each naming the model, node and value at fault.

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
    /// do not fit their use ([`Model::check_pow_exponents`](pto_op::Model::check_pow_exponents)).
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
