//! Fusion: a custom op declares the subgraph of standard ops it replaces, and [`fuse`]
//! rewrites every match in a model (an imported ONNX model, say) into a call of the op.
//!
//! An operator crate registers a [`FusionDef`] next to its op with
//! [`register_fusion!`](crate::register_fusion): one or more [`Pattern`]s (a tree of ops
//! ending in the node that is replaced, with named captures) and a rewrite function that
//! builds the replacement from the captures, or declines (`Ok(None)`) when a condition the
//! pattern cannot express does not hold (an axis, a constant's value). A match replaces its
//! nodes only when the
//! values inside it are used by nothing else: what the rest of the graph reads stays.
//!
//! ```
//! use pto_op::fusion::{self, FusionDef, Match, Pattern::*};
//! use pto_op::prelude::*;
//!
//! // x * sigmoid(x) -> std.silu(x)
//! fn silu(m: &Match<'_>) -> Result<Option<Value>, OpError> {
//!     Ok(Some(pto_op::ops::silu::apply(&m.value("x")?, &Default::default())?))
//! }
//! pto_op::register_fusion!(DOC_SILU, FusionDef {
//!     name: "doc.silu",
//!     op: "std.silu",
//!     patterns: &[Commutative("std.mul", &[Any("x"), Op("std.sigmoid", &[Any("x")])])],
//!     rewrite: silu,
//!     location: pto_op::source_location!(),
//! });
//!
//! let g = Graph::new();
//! let x = g.input("x", Shape::from([2, 8]), DType::F32);
//! let s = pto_op::ops::sigmoid::apply(&x, &Default::default()).unwrap();
//! let y = pto_op::ops::mul::apply(&s, &x, &Default::default()).unwrap();
//! g.output(&y);
//! let model = g.to_model("m").unwrap();
//! let doc = fusion::find("doc.silu").unwrap().unwrap();
//! let (fused, applied) = fusion::fuse_with(&model, &[doc]).unwrap();
//! assert_eq!(fused.graph.nodes.len(), 1);
//! assert_eq!(fused.graph.nodes[0].op, "std.silu");
//! assert_eq!((applied[0].fusion.as_str(), applied[0].nodes), ("doc.silu", 2));
//! ```

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use crate::attr::Attributes;
use crate::error::OpError;
use crate::graph::{Graph, GraphDef, Value, ValueId, ValueKind};
use crate::model::Model;
use crate::op::SourceLocation;
use crate::registration::{DuplicateRegistration, Quoted, Registered, check_unique};
use crate::registry;
use crate::tensor::Tensor;

/// A subgraph of ops, matched from the value it computes backwards.
#[derive(Debug)]
pub enum Pattern {
    /// Any value, captured under this name; a name used twice matches one value twice.
    Any(&'static str),
    /// A weight (a constant of the model), captured under this name.
    Weight(&'static str),
    /// The first output of a node of this op, whose inputs match these patterns in order.
    Op(&'static str, &'static [Pattern]),
    /// The first output of a node of this op of two inputs, matching the two patterns in
    /// either order (for commutative ops such as `std.add` and `std.mul`).
    Commutative(&'static str, &'static [Pattern; 2]),
    /// A value matching the inner pattern, captured under this name too (with the params of
    /// the node that computes it, see [`Match::attrs`]).
    Named(&'static str, &'static Pattern),
}

/// What a rewrite builds the replacement from: the captured values, in the rewritten graph.
pub struct Match<'a> {
    replay: &'a Replay<'a>,
    captures: &'a BTreeMap<&'static str, ValueId>,
}

impl Match<'_> {
    /// The captured value `name`, in the graph being built (a weight is added to it at its
    /// first use).
    pub fn value(&self, name: &str) -> Result<Value, OpError> {
        self.replay.value(self.id(name)?)
    }

    /// The tensor of the captured weight `name`, if `name` is a weight.
    pub fn weight(&self, name: &str) -> Option<&Tensor> {
        let id = self.id(name).ok()?;
        let value = &self.replay.model.graph.values[id];
        match value.kind {
            ValueKind::Weight => self.replay.model.weights.get(&value.name),
            _ => None,
        }
    }

    /// The single element of the captured weight `name` as f64, if it has exactly one.
    pub fn scalar(&self, name: &str) -> Option<f64> {
        match self.weight(name)?.to_f64_vec().as_slice() {
            [v] => Some(*v),
            _ => None,
        }
    }

    /// The params of the node computing the value captured by `Named(name, ..)`.
    pub fn attrs(&self, name: &str) -> Option<&Attributes> {
        let id = self.id(name).ok()?;
        let node = self.replay.producers[id]?;
        Some(&self.replay.model.graph.nodes[node].attrs)
    }

    fn id(&self, name: &str) -> Result<ValueId, OpError> {
        self.captures
            .get(name)
            .copied()
            .ok_or_else(|| OpError::invalid(format!("the pattern captures no `{name}`")))
    }
}

/// A registered fusion: the op it produces, the patterns of standard ops it replaces, and
/// the rewrite.
#[derive(Debug)]
pub struct FusionDef {
    /// The fusion's name, as reports show it (`demo.rms_norm`).
    pub name: &'static str,
    /// The op the rewrite produces.
    pub op: &'static str,
    /// The subgraphs it replaces, each ending in the replaced node.
    pub patterns: &'static [Pattern],
    /// Builds the replacement of a match (one value of the replaced node's type), or
    /// declines with `Ok(None)`.
    pub rewrite: for<'a> fn(&Match<'a>) -> Result<Option<Value>, OpError>,
    /// Where the registration is ([`source_location!`](crate::source_location)).
    pub location: SourceLocation,
}

#[doc(hidden)]
#[linkme::distributed_slice]
pub static FUSIONS: [FusionDef];

/// Registers a fusion (see the [module](self) documentation).
#[macro_export]
macro_rules! register_fusion {
    ($static_name:ident, $def:expr) => {
        #[$crate::__private::linkme::distributed_slice($crate::__private::FUSIONS)]
        #[linkme(crate = $crate::__private::linkme)]
        static $static_name: $crate::fusion::FusionDef = $def;
    };
}

impl Registered for FusionDef {
    type Key = Quoted;

    fn key(&self) -> Quoted {
        Quoted(self.name)
    }

    fn kind(&self) -> String {
        "fusion".to_owned()
    }

    fn location(&self) -> SourceLocation {
        self.location
    }
}

/// Every linked fusion, ordered by name.
///
/// # Errors
///
/// [`DuplicateRegistration`] when two registrations share a name, naming both places.
pub fn fusions() -> Result<Vec<&'static FusionDef>, Box<DuplicateRegistration>> {
    Ok(check_unique(&FUSIONS[..])?
        .into_values()
        .map(|at| &FUSIONS[at])
        .collect())
}

/// The fusion named `name`, if one is linked.
///
/// # Errors
///
/// [`DuplicateRegistration`] when two registrations share a name.
pub fn find(name: &str) -> Result<Option<&'static FusionDef>, Box<DuplicateRegistration>> {
    Ok(fusions()?.into_iter().find(|f| f.name == name))
}

/// One rewrite [`fuse`] applied.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Fused {
    /// The fusion.
    pub fusion: String,
    /// The op it produced.
    pub op: String,
    /// The index, in the original model, of the node it replaced last (the pattern's root).
    pub root: usize,
    /// How many nodes of the original model it replaced.
    pub nodes: usize,
}

/// `model` with every match of every linked fusion rewritten (see [`fuse_with`]).
///
/// # Errors
///
/// As [`fuse_with`]; a duplicate fusion name too.
pub fn fuse(model: &Model) -> Result<(Model, Vec<Fused>), OpError> {
    let all = fusions().map_err(|e| OpError::invalid(e.to_string()))?;
    fuse_with(model, &all)
}

/// `model` with the matches of `fusions` rewritten, and the list of rewrites applied, in
/// node order. Matches are taken from the last node backwards, so a pattern ending later
/// claims its nodes first; a node belongs to one match at most.
///
/// # Errors
///
/// A rewrite's error, or a replacement whose type differs from the replaced value's
/// (naming the fusion).
pub fn fuse_with(model: &Model, fusions: &[&FusionDef]) -> Result<(Model, Vec<Fused>), OpError> {
    let graph = &model.graph;
    let producers = producers(graph);
    let uses = uses(graph);
    let mut claimed: BTreeSet<usize> = BTreeSet::new();
    let mut matches: BTreeMap<usize, (&FusionDef, Binding)> = BTreeMap::new();
    for root in (0..graph.nodes.len()).rev() {
        if claimed.contains(&root) {
            continue;
        }
        let Some(&output) = graph.nodes[root].outputs.first() else {
            continue;
        };
        'fusions: for fusion in fusions {
            for pattern in fusion.patterns {
                let mut binding = Binding::default();
                if !match_pattern(graph, &producers, pattern, output, &mut binding) {
                    continue;
                }
                let nodes: BTreeSet<usize> = binding.nodes.iter().copied().collect();
                if nodes.iter().any(|n| claimed.contains(n))
                    || !self_contained(graph, &uses, &nodes, root)
                {
                    continue;
                }
                claimed.extend(&nodes);
                matches.insert(root, (fusion, binding));
                break 'fusions;
            }
        }
    }
    let replay = Replay {
        model,
        producers,
        graph: Graph::new(),
        values: RefCell::new(vec![None; graph.values.len()]),
    };
    for &id in &graph.inputs {
        let def = &graph.values[id];
        let value = replay
            .graph
            .input(def.name.clone(), def.ty.shape.clone(), def.ty.dtype);
        replay.values.borrow_mut()[id] = Some(value);
    }
    let mut applied = Vec::new();
    for (index, node) in graph.nodes.iter().enumerate() {
        if let Some((fusion, binding)) = matches.get(&index) {
            let m = Match {
                replay: &replay,
                captures: &binding.values,
            };
            let replaced = graph.values[node.outputs[0]].ty.clone();
            match (fusion.rewrite)(&m)? {
                Some(value) => {
                    if value.ty() != &replaced {
                        return Err(OpError::invalid(format!(
                            "fusion `{}` replaces a value of type {replaced} with one of type {}",
                            fusion.name,
                            value.ty()
                        )));
                    }
                    replay.values.borrow_mut()[node.outputs[0]] = Some(value);
                    let nodes: BTreeSet<usize> = binding.nodes.iter().copied().collect();
                    applied.push(Fused {
                        fusion: fusion.name.to_owned(),
                        op: fusion.op.to_owned(),
                        root: index,
                        nodes: nodes.len(),
                    });
                }
                None => {
                    // Declined: the matched nodes run as they were, in their order.
                    let nodes: BTreeSet<usize> = binding.nodes.iter().copied().collect();
                    for n in nodes {
                        replay.node(n)?;
                    }
                }
            }
        } else if !claimed.contains(&index) {
            replay.node(index)?;
        }
    }
    for &id in &graph.outputs {
        let value = replay.value(id)?;
        replay.graph.output(&value);
    }
    let mut fused = replay.graph.to_model(model.name.clone())?;
    keep_names(graph, &replay.values.borrow(), &mut fused.graph);
    Ok((fused, applied))
}

/// Gives every value of `fused` that stands for a value of `original` computed by a node
/// (a node replayed as it was, or a fused match's root) the original's name, so that graph
/// outputs keep the file's names (`logits`) and `--outputs DIR` writes `logits.npy`.
/// Tracing names a node's outputs by its position (`n12.y`), which shifts when nodes are
/// fused and would otherwise take another value's name: the values a rewrite adds inside
/// a match keep their traced name unless an original name needs it, then get a fresh one.
fn keep_names(original: &GraphDef, replayed: &[Option<Value>], fused: &mut GraphDef) {
    let mut kept: BTreeMap<ValueId, &str> = BTreeMap::new();
    for (id, value) in replayed.iter().enumerate() {
        let Some(value) = value else { continue };
        if original.values[id].kind == ValueKind::Node
            && fused.values[value.id()].kind == ValueKind::Node
        {
            kept.entry(value.id())
                .or_insert(original.values[id].name.as_str());
        }
    }
    let mut taken: BTreeSet<String> = kept.values().map(|&name| name.to_owned()).collect();
    taken.extend(
        fused
            .values
            .iter()
            .filter(|v| v.kind != ValueKind::Node)
            .map(|v| v.name.clone()),
    );
    for (id, value) in fused.values.iter_mut().enumerate() {
        if let Some(&name) = kept.get(&id) {
            value.name = name.to_owned();
        } else if value.kind == ValueKind::Node && !taken.insert(value.name.clone()) {
            let base = std::mem::take(&mut value.name);
            value.name = (1..)
                .map(|suffix| format!("{base}_{suffix}"))
                .find(|name| !taken.contains(name))
                .unwrap_or(base);
            taken.insert(value.name.clone());
        }
    }
}

/// The node computing each value, by value id.
fn producers(graph: &GraphDef) -> Vec<Option<usize>> {
    let mut producers = vec![None; graph.values.len()];
    for (index, node) in graph.nodes.iter().enumerate() {
        for &id in &node.outputs {
            producers[id] = Some(index);
        }
    }
    producers
}

/// The nodes reading each value, and whether it is a graph output (`usize::MAX`).
fn uses(graph: &GraphDef) -> Vec<Vec<usize>> {
    let mut uses = vec![Vec::new(); graph.values.len()];
    for (index, node) in graph.nodes.iter().enumerate() {
        for &id in &node.inputs {
            uses[id].push(index);
        }
    }
    for &id in &graph.outputs {
        uses[id].push(usize::MAX);
    }
    uses
}

/// Whether every value computed inside the match (but the root's) is read only inside it.
fn self_contained(
    graph: &GraphDef,
    uses: &[Vec<usize>],
    nodes: &BTreeSet<usize>,
    root: usize,
) -> bool {
    nodes.iter().filter(|&&n| n != root).all(|&n| {
        graph.nodes[n]
            .outputs
            .iter()
            .all(|&id| uses[id].iter().all(|user| nodes.contains(user)))
    }) && graph.nodes[root].outputs.len() == 1
}

#[derive(Debug, Clone, Default)]
struct Binding {
    values: BTreeMap<&'static str, ValueId>,
    nodes: Vec<usize>,
}

fn bind(binding: &mut Binding, name: &'static str, value: ValueId) -> bool {
    match binding.values.get(name) {
        Some(&bound) => bound == value,
        None => {
            binding.values.insert(name, value);
            true
        }
    }
}

fn match_pattern(
    graph: &GraphDef,
    producers: &[Option<usize>],
    pattern: &Pattern,
    value: ValueId,
    binding: &mut Binding,
) -> bool {
    match pattern {
        Pattern::Any(name) => bind(binding, name, value),
        Pattern::Weight(name) => {
            graph.values[value].kind == ValueKind::Weight && bind(binding, name, value)
        }
        Pattern::Named(name, inner) => {
            bind(binding, name, value) && match_pattern(graph, producers, inner, value, binding)
        }
        Pattern::Op(op, inputs) => match_node(graph, producers, op, inputs, value, binding),
        Pattern::Commutative(op, [a, b]) => {
            let swapped = [b, a];
            let orders: [&[&Pattern]; 2] = [&[a, b], &swapped];
            orders.into_iter().any(|inputs| {
                let mut attempt = binding.clone();
                let ok = match_node(graph, producers, op, inputs, value, &mut attempt);
                if ok {
                    *binding = attempt;
                }
                ok
            })
        }
    }
}

/// Whether `value` is the first output of a node of `op` whose inputs match `inputs`.
fn match_node<P: core::borrow::Borrow<Pattern>>(
    graph: &GraphDef,
    producers: &[Option<usize>],
    op: &str,
    inputs: &[P],
    value: ValueId,
    binding: &mut Binding,
) -> bool {
    let Some(index) = producers[value] else {
        return false;
    };
    let node = &graph.nodes[index];
    if node.op != op || node.outputs.first() != Some(&value) || node.inputs.len() != inputs.len() {
        return false;
    }
    let mut attempt = binding.clone();
    let ok = inputs
        .iter()
        .zip(&node.inputs)
        .all(|(p, &input)| match_pattern(graph, producers, p.borrow(), input, &mut attempt));
    if ok {
        attempt.nodes.push(index);
        *binding = attempt;
    }
    ok
}

/// The rewritten graph as it is built: values of the original by id, weights added at their
/// first use.
struct Replay<'a> {
    model: &'a Model,
    producers: Vec<Option<usize>>,
    graph: Graph,
    values: RefCell<Vec<Option<Value>>>,
}

impl Replay<'_> {
    /// The rewritten value of original value `id`.
    fn value(&self, id: ValueId) -> Result<Value, OpError> {
        if let Some(value) = &self.values.borrow()[id] {
            return Ok(value.clone());
        }
        let def = &self.model.graph.values[id];
        if def.kind != ValueKind::Weight {
            return Err(OpError::invalid(format!(
                "value `{}` is used before it is computed",
                def.name
            )));
        }
        let tensor = self
            .model
            .weights
            .get(&def.name)
            .ok_or_else(|| OpError::invalid(format!("weight `{}` has no tensor", def.name)))?;
        let value = self.graph.weight(def.name.clone(), tensor.clone())?;
        self.values.borrow_mut()[id] = Some(value.clone());
        Ok(value)
    }

    /// Records original node `index` as it is.
    fn node(&self, index: usize) -> Result<(), OpError> {
        let node = &self.model.graph.nodes[index];
        let def = registry::find(&node.op).map_err(|e| OpError::invalid(e.to_string()))?;
        let inputs = node
            .inputs
            .iter()
            .map(|&id| self.value(id))
            .collect::<Result<Vec<_>, _>>()?;
        let refs: Vec<&Value> = inputs.iter().collect();
        let outputs = Graph::trace(def, &refs, node.attrs.clone())?;
        self.graph
            .name_node(self.graph.node_count() - 1, &node.name);
        let mut values = self.values.borrow_mut();
        for (&id, value) in node.outputs.iter().zip(outputs) {
            values[id] = Some(value);
        }
        Ok(())
    }
}
