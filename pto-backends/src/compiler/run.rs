//! The runtime of a compiled model: inputs bound, nodes run in order into the plan's
//! buffers, values released when the plan says, outputs handed back.

use std::time::Instant;

use pto_op::{OpError, Tensor, ValueId};

use super::{CompiledModel, NodeRuns, NodeTime, RunError, RunResult, TimeKind};

impl CompiledModel {
    /// Runs the model on `inputs`, in the graph's input order.
    ///
    /// # Errors
    ///
    /// Inputs of the wrong number, shape or dtype (named), or a node that fails.
    pub fn run(&self, inputs: &[Tensor]) -> Result<RunResult, RunError> {
        self.run_with_progress(inputs, &mut |_, _| {})
    }

    /// [`run`](CompiledModel::run), calling `progress(node, op)` before each node.
    ///
    /// # Errors
    ///
    /// As [`run`](CompiledModel::run).
    pub fn run_with_progress(
        &self,
        inputs: &[Tensor],
        progress: &mut dyn FnMut(usize, &str),
    ) -> Result<RunResult, RunError> {
        let graph = &self.model.graph;
        let mut values = self.bind_inputs(inputs)?;
        // The plan's buffers, lent to this run (a concurrent run allocates its own).
        let mut pool = self.buffers.try_lock().map_or_else(
            |_| vec![None; self.plan.buffers.len()],
            |mut kept| std::mem::take(&mut *kept),
        );
        pool.resize_with(self.plan.buffers.len(), || None);
        let mut outputs: Vec<Tensor> = Vec::new();

        let mut node_times = Vec::with_capacity(self.nodes.len());
        for (index, (node, compiled)) in graph.nodes.iter().zip(&self.nodes).enumerate() {
            progress(index, compiled.op.name);
            let node_error = |source: OpError| RunError::Node {
                model: self.model.name.clone(),
                node: index,
                node_name: node.name.clone(),
                target: self.executor.target().to_owned(),
                source: Box::new(source),
            };
            let started = Instant::now();
            let simulated = if let Some(fast) = &compiled.fast {
                outputs.clear();
                for &id in &node.outputs {
                    outputs.push(self.output_buffer(id, &mut pool).map_err(node_error)?);
                }
                self.with_args(&node.inputs, &values, |args| fast.run(args, &mut outputs))
                    .and_then(|ran| ran)
                    .map_err(node_error)?;
                for (&id, tensor) in node.outputs.iter().zip(outputs.drain(..)) {
                    values[id] = match self.plan.buffer_of.get(id) {
                        Some(Some(_)) => Slot::Buffer(tensor),
                        _ => Slot::Owned(tensor),
                    };
                }
                None
            } else {
                let runner = match compiled.runs {
                    NodeRuns::Fallback => self.executor.fallback().ok_or_else(|| {
                        node_error(OpError::Unsupported {
                            op: compiled.op.name.to_owned(),
                            message: "the op has no kernel and the target no fallback".to_owned(),
                        })
                    })?,
                    NodeRuns::Reference | NodeRuns::Kernel { .. } => self.executor.as_ref(),
                };
                let execution = self
                    .with_args(&node.inputs, &values, |args| {
                        runner.execute(compiled.op, args, &node.attrs)
                    })
                    .and_then(|ran| ran)
                    .map_err(node_error)?;
                for (&id, tensor) in node.outputs.iter().zip(execution.outputs) {
                    values[id] = Slot::Owned(tensor);
                }
                execution.simulated
            };
            let wall = started.elapsed().as_secs_f64();
            node_times.push(NodeTime {
                node: index,
                op: compiled.op.name,
                seconds: simulated.map_or(wall, |s| s.seconds),
                kind: if simulated.is_some() {
                    TimeKind::Simulated
                } else {
                    TimeKind::Wall
                },
                cycles: simulated.map(|s| s.cycles),
            });
            for &id in self.plan.release_after.get(index).into_iter().flatten() {
                let released = std::mem::replace(&mut values[id], Slot::Empty);
                if let (Slot::Buffer(tensor), Some(Some(buffer))) =
                    (released, self.plan.buffer_of.get(id))
                {
                    pool[*buffer] = Some(tensor);
                }
            }
        }
        let outputs = graph
            .outputs
            .iter()
            .enumerate()
            .map(|(position, &id)| {
                let used_again = graph.outputs[position + 1..].contains(&id);
                match values.get_mut(id) {
                    Some(slot @ Slot::Owned(_)) if !used_again => {
                        match std::mem::replace(slot, Slot::Empty) {
                            Slot::Owned(tensor) => Ok(tensor),
                            _ => Err(self.unset(id)),
                        }
                    }
                    Some(slot) => slot.tensor().cloned().ok_or_else(|| self.unset(id)),
                    None => Err(self.unset(id)),
                }
            })
            .collect::<Result<Vec<Tensor>, OpError>>()
            .map_err(|source| RunError::Node {
                model: self.model.name.clone(),
                node: graph.nodes.len(),
                node_name: String::new(),
                target: self.executor.target().to_owned(),
                source: Box::new(source),
            })?;
        // Buffers still lent (values no node released) go back as well.
        for (id, slot) in values.into_iter().enumerate() {
            if let (Slot::Buffer(tensor), Some(Some(buffer))) = (slot, self.plan.buffer_of.get(id))
            {
                pool[*buffer] = Some(tensor);
            }
        }
        if let Ok(mut kept) = self.buffers.try_lock() {
            *kept = pool;
        }
        Ok(RunResult {
            outputs,
            node_times,
        })
    }

    /// The values of a run with the graph inputs (checked against the graph's types) and
    /// the weights bound; node outputs empty.
    fn bind_inputs<'a>(&'a self, inputs: &'a [Tensor]) -> Result<Vec<Slot<'a>>, RunError> {
        let graph = &self.model.graph;
        if inputs.len() != graph.inputs.len() {
            let declared = self.inputs();
            return Err(RunError::InputCount {
                model: self.model.name.clone(),
                expected: declared.len(),
                names: declared
                    .iter()
                    .map(|i| i.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                actual: inputs.len(),
            });
        }
        let mut values: Vec<Slot<'a>> = Vec::with_capacity(graph.values.len());
        values.resize_with(graph.values.len(), || Slot::Empty);
        for (tensor, &id) in inputs.iter().zip(&graph.inputs) {
            let Some(declared) = graph.values.get(id) else {
                continue;
            };
            if tensor.dims() != declared.ty.shape.dims() || tensor.dtype() != declared.ty.dtype {
                return Err(RunError::InputType {
                    model: self.model.name.clone(),
                    input: declared.name.clone(),
                    expected: Box::new(declared.ty.clone()),
                    actual: Box::new(tensor.tensor_type()),
                });
            }
            values[id] = Slot::Borrowed(tensor);
        }
        for &id in &graph.weights {
            if let Some(weight) = graph
                .values
                .get(id)
                .and_then(|def| self.model.weights.get(&def.name))
            {
                values[id] = Slot::Borrowed(weight);
            }
        }
        Ok(values)
    }

    /// The tensor a fast path writes value `id` into: its planned buffer, shaped for it
    /// (allocated on the buffer's first use), or a new tensor for a graph output.
    fn output_buffer(&self, id: ValueId, pool: &mut [Option<Tensor>]) -> Result<Tensor, OpError> {
        let def = self
            .model
            .graph
            .values
            .get(id)
            .ok_or_else(|| OpError::invalid(format!("value {id} does not exist")))?;
        let dims = def.ty.shape.dims();
        Ok(match self.plan.buffer_of.get(id) {
            Some(&Some(buffer)) => {
                let kept = pool.get_mut(buffer).and_then(Option::take);
                let kept = kept.unwrap_or_else(|| {
                    let size = self.plan.buffers.get(buffer).map_or(0, |b| b.elements);
                    Tensor::zeros([size], def.ty.dtype)
                });
                kept.reuse_as(dims)
            }
            _ => Tensor::zeros(def.ty.shape.clone(), def.ty.dtype),
        })
    }

    /// Calls `f` with the tensors of `ids`; up to four without allocating.
    fn with_args<R>(
        &self,
        ids: &[ValueId],
        values: &[Slot<'_>],
        f: impl FnOnce(&[&Tensor]) -> R,
    ) -> Result<R, OpError> {
        let get = |id: ValueId| {
            values
                .get(id)
                .and_then(Slot::tensor)
                .ok_or_else(|| self.unset(id))
        };
        Ok(match *ids {
            [] => f(&[]),
            [a] => f(&[get(a)?]),
            [a, b] => f(&[get(a)?, get(b)?]),
            [a, b, c] => f(&[get(a)?, get(b)?, get(c)?]),
            [a, b, c, d] => f(&[get(a)?, get(b)?, get(c)?, get(d)?]),
            _ => f(&ids
                .iter()
                .map(|&id| get(id))
                .collect::<Result<Vec<_>, _>>()?),
        })
    }

    /// The error for reading value `id` before it is computed.
    fn unset(&self, id: ValueId) -> OpError {
        match self.model.graph.values.get(id) {
            Some(def) => OpError::invalid(format!(
                "value `{}` is read before it is computed: the nodes are not in a topological order",
                def.name
            )),
            None => OpError::invalid(format!("value {id} does not exist")),
        }
    }
}

/// A value during a run.
enum Slot<'a> {
    /// Not computed yet, or released.
    Empty,
    /// A graph input (the caller's) or a weight (the model's).
    Borrowed(&'a Tensor),
    /// A node output the run allocated.
    Owned(Tensor),
    /// A node output in one of the plan's buffers, returned to it when released.
    Buffer(Tensor),
}

impl Slot<'_> {
    fn tensor(&self) -> Option<&Tensor> {
        match self {
            Slot::Empty => None,
            Slot::Borrowed(t) => Some(t),
            Slot::Owned(t) | Slot::Buffer(t) => Some(t),
        }
    }
}
