//! [`GraphDef::validate`]: the structural checks every consumer of a graph relies on (the
//! model-file loader and the graph compiler).

use std::collections::BTreeSet;

use super::{GraphDef, ValueDef, ValueId, ValueKind};
use crate::name::quoted;

/// A structural fault of a [`GraphDef`], naming the place (e.g. `node 2 (`demo.rms_norm`)
/// input 1`) and the value at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GraphError {
    /// A reference to a value id the graph does not have.
    #[error("{place} refers to value {id}, but the graph has {count} values (ids 0..{count})")]
    UnknownValue {
        /// Where the reference is.
        place: String,
        /// The id it refers to.
        id: ValueId,
        /// The number of values.
        count: usize,
    },
    /// Two values share a name.
    #[error("two values are named {}; value names are unique", quoted(name))]
    DuplicateName {
        /// The name.
        name: String,
    },
    /// A value is listed or produced as a kind it is not.
    #[error(
        "{place} is value {id} {}, which is {}, not {}",
        quoted(name),
        kind_name(*actual),
        kind_name(*expected)
    )]
    WrongKind {
        /// Where it is listed or produced.
        place: String,
        /// The value.
        id: ValueId,
        /// Its name.
        name: String,
        /// The kind the place needs.
        expected: ValueKind,
        /// The value's kind.
        actual: ValueKind,
    },
    /// A value is listed or produced a second time.
    #[error("value {id} is produced twice, the second time as {place}")]
    ProducedTwice {
        /// The value.
        id: ValueId,
        /// The second place that produces it.
        place: String,
    },
    /// A node reads a value that no earlier node, input or weight produces.
    #[error(
        "{place} reads value {id} {} before anything produces it",
        quoted(name)
    )]
    ReadBeforeProduced {
        /// The node input.
        place: String,
        /// The value.
        id: ValueId,
        /// Its name.
        name: String,
    },
    /// A graph output that nothing produces.
    #[error("{place} is value {id} {}, which nothing produces", quoted(name))]
    OutputNotProduced {
        /// The graph output.
        place: String,
        /// The value.
        id: ValueId,
        /// Its name.
        name: String,
    },
    /// A value larger than [`MAX_TENSOR_BYTES`](crate::MAX_TENSOR_BYTES), or with a dim
    /// above [`MAX_DIM`](crate::MAX_DIM) (see [`Shape::check_size`](crate::Shape::check_size)):
    /// refused so that the element counts and byte sizes computed from a graph's types
    /// (buffer plans, estimates, kernels, runs, exports) cannot overflow, whether the graph
    /// was traced or read from a file, and whether or not the value has elements.
    #[error("value {id} {} is {ty}, {problem}", quoted(name))]
    TooLarge {
        /// The value.
        id: ValueId,
        /// Its name.
        name: String,
        /// Its type.
        ty: crate::TensorType,
        /// Which limit it exceeds.
        problem: crate::SizeError,
    },
    /// A value that is not a listed input, a listed weight or a node output.
    #[error(
        "value {id} {} is neither a listed input, a listed weight nor a node output",
        quoted(name)
    )]
    Unproduced {
        /// The value.
        id: ValueId,
        /// Its name.
        name: String,
    },
}

/// How messages name a kind of value.
fn kind_name(kind: ValueKind) -> &'static str {
    match kind {
        ValueKind::Input => "an input",
        ValueKind::Weight => "a weight",
        ValueKind::Node => "a node output",
    }
}

impl GraphDef {
    /// Checks the graph's structure: every value's size is at most
    /// [`MAX_TENSOR_BYTES`](crate::MAX_TENSOR_BYTES) and its dims at most
    /// [`MAX_DIM`](crate::MAX_DIM); every id refers to a value; every value is exactly one
    /// of a listed input, a listed weight or a node output, of that kind, with a unique
    /// name; nodes read only values produced before them (the node order is topological);
    /// every graph output is produced. Whether the ops exist and accept their inputs is for
    /// the compiler to check.
    ///
    /// ```
    /// use pto_op::graph::GraphError;
    /// use pto_op::{DType, Graph, Shape};
    /// let g = Graph::new();
    /// let x = g.input("x", Shape::from([4]), DType::F32);
    /// g.output(&x);
    /// let mut def = g.def();
    /// assert_eq!(def.validate(), Ok(()));
    /// def.outputs.push(7);
    /// assert_eq!(
    ///     def.validate().unwrap_err().to_string(),
    ///     "graph output 1 refers to value 7, but the graph has 1 values (ids 0..1)"
    /// );
    /// ```
    ///
    /// # Errors
    ///
    /// The first [`GraphError`] found, in the order: names and sizes, inputs and weights, nodes,
    /// outputs, unproduced values.
    pub fn validate(&self) -> Result<(), GraphError> {
        let count = self.values.len();
        let value = |place: &dyn Fn() -> String, id: ValueId| {
            self.values.get(id).ok_or_else(|| GraphError::UnknownValue {
                place: place(),
                id,
                count,
            })
        };

        let mut names = BTreeSet::new();
        for (id, value) in self.values.iter().enumerate() {
            if !names.insert(value.name.as_str()) {
                return Err(GraphError::DuplicateName {
                    name: value.name.clone(),
                });
            }
            if let Err(problem) = value.ty.shape.check_size(value.ty.dtype) {
                return Err(GraphError::TooLarge {
                    id,
                    name: value.name.clone(),
                    ty: value.ty.clone(),
                    problem,
                });
            }
        }

        // Which values are produced so far: by being listed as inputs or weights, or by the
        // nodes before the one being checked.
        let mut produced = vec![false; count];
        let produce =
            |produced: &mut Vec<bool>, id: ValueId, place: &dyn Fn() -> String| match produced
                .get_mut(id)
            {
                Some(done) if !*done => {
                    *done = true;
                    Ok(())
                }
                _ => Err(GraphError::ProducedTwice { id, place: place() }),
            };
        let check_kind = |listed: &ValueDef, id: ValueId, kind: ValueKind, place: String| {
            if listed.kind == kind {
                Ok(())
            } else {
                Err(GraphError::WrongKind {
                    place,
                    id,
                    name: listed.name.clone(),
                    expected: kind,
                    actual: listed.kind,
                })
            }
        };

        for (list, kind, what) in [
            (&self.inputs, ValueKind::Input, "graph input"),
            (&self.weights, ValueKind::Weight, "graph weight"),
        ] {
            for (index, &id) in list.iter().enumerate() {
                let place = || format!("{what} {index}");
                check_kind(value(&place, id)?, id, kind, place())?;
                produce(&mut produced, id, &place)?;
            }
        }

        for (index, node) in self.nodes.iter().enumerate() {
            let node_name = || format!("node {index} (`{}`)", node.op);
            for (input, &id) in node.inputs.iter().enumerate() {
                let place = || format!("{} input {input}", node_name());
                let read = value(&place, id)?;
                if !produced.get(id).is_some_and(|&done| done) {
                    return Err(GraphError::ReadBeforeProduced {
                        place: place(),
                        id,
                        name: read.name.clone(),
                    });
                }
            }
            for (output, &id) in node.outputs.iter().enumerate() {
                let place = || format!("{} output {output}", node_name());
                check_kind(value(&place, id)?, id, ValueKind::Node, place())?;
                produce(&mut produced, id, &place)?;
            }
        }

        for (index, &id) in self.outputs.iter().enumerate() {
            let place = || format!("graph output {index}");
            let output = value(&place, id)?;
            if !produced.get(id).is_some_and(|&done| done) {
                return Err(GraphError::OutputNotProduced {
                    place: place(),
                    id,
                    name: output.name.clone(),
                });
            }
        }
        if let Some(id) = produced.iter().position(|&done| !done) {
            return Err(GraphError::Unproduced {
                id,
                name: self
                    .values
                    .get(id)
                    .map_or("", |v| v.name.as_str())
                    .to_owned(),
            });
        }
        Ok(())
    }
}
