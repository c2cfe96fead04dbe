//! What real exporters emit beyond the one-node-one-op table: constant folding of the
//! shape computations (`Shape`, `Gather`, `Unsqueeze`, `Concat`, `Range`, ... on constants
//! and static shapes), aliases (`Identity`), and nodes lowered to several standard ops
//! (`Split` to slices, `Gemm` to a product and a sum, `MatMul` of a batch, `Unsqueeze` and
//! `Squeeze` of data to reshapes).

use super::{Importer, param_value};
use crate::attr::{AttrType, AttrValue, Attributes};
use crate::dtype::DType;
use crate::graph::Value;
use crate::onnx::OnnxError;
use crate::onnx::proto::NodeProto;
use crate::onnx::standard::{self, Lowering};
use crate::ops;
use crate::registry;
use crate::tensor::Tensor;

/// Ops whose rank-0 constant operand is read as shape `[1]` when the other operand has a
/// rank: the same broadcast, and a shape the kernels load (they take rank >= 1).
const ELEMENTWISE_BINARY: [&str; 5] = ["Add", "Sub", "Mul", "Div", "Pow"];

fn node_error(label: &str, problem: String) -> OnnxError {
    OnnxError::Node {
        node: label.to_owned(),
        problem,
    }
}

fn attr_i64(node: &NodeProto, name: &str, default: i64, label: &str) -> Result<i64, OnnxError> {
    match node.attribute.iter().find(|a| a.name == name) {
        None => Ok(default),
        Some(a) => match param_value(a, AttrType::I64) {
            Ok(AttrValue::I64(v)) => Ok(v),
            Ok(_) => Ok(default),
            Err(problem) => Err(OnnxError::Attribute {
                node: label.to_owned(),
                attribute: name.to_owned(),
                problem,
            }),
        },
    }
}

fn attr_ints(node: &NodeProto, name: &str) -> Option<Vec<i64>> {
    node.attribute
        .iter()
        .find(|a| a.name == name)
        .map(|a| a.ints.clone())
}

/// `axis` (negative counts from the end) of a rank-`rank` value, or an error naming the node.
fn axis_in(axis: i64, rank: usize, label: &str) -> Result<usize, OnnxError> {
    let signed = rank as i64;
    let normalized = if axis < 0 { axis + signed } else { axis };
    usize::try_from(normalized)
        .ok()
        .filter(|&a| a < rank)
        .ok_or_else(|| {
            node_error(
                label,
                format!("axis {axis} is out of range for rank {rank}"),
            )
        })
}

/// The dims of `dims` with size-1 axes inserted at `axes` (Unsqueeze).
fn unsqueezed(dims: &[usize], axes: &[i64], label: &str) -> Result<Vec<usize>, OnnxError> {
    let rank = dims.len() + axes.len();
    let mut inserted = Vec::new();
    for &axis in axes {
        inserted.push(axis_in(axis, rank, label)?);
    }
    let mut rest = dims.iter();
    (0..rank)
        .map(|i| match inserted.contains(&i) {
            true => Ok(1),
            false => rest
                .next()
                .copied()
                .ok_or_else(|| node_error(label, format!("repeated axes {axes:?}"))),
        })
        .collect()
}

/// The dims of `dims` without the size-1 axes `axes` (all size-1 axes when empty; Squeeze).
fn squeezed(dims: &[usize], axes: &[i64], label: &str) -> Result<Vec<usize>, OnnxError> {
    let mut removed = Vec::new();
    for &axis in axes {
        let a = axis_in(axis, dims.len(), label)?;
        if dims[a] != 1 {
            return Err(node_error(
                label,
                format!("Squeeze of axis {axis}, of size {} (not 1)", dims[a]),
            ));
        }
        removed.push(a);
    }
    Ok(dims
        .iter()
        .enumerate()
        .filter(|(i, d)| match axes.is_empty() {
            true => **d != 1,
            false => !removed.contains(i),
        })
        .map(|(_, d)| *d)
        .collect())
}

fn shape_i64(dims: &[usize]) -> Vec<i64> {
    dims.iter().map(|&d| d as i64).collect()
}

fn i64_tensor(values: Vec<i64>) -> Tensor {
    let n = values.len();
    Tensor::from_vec([n], values).expect("a 1-D tensor of its own length")
}

impl Importer {
    /// Imports `node` (of the default domain) if it is one this module handles (`None`);
    /// otherwise the node the table's one-op form imports, its inputs normalized.
    pub(super) fn lower(
        &mut self,
        node: &NodeProto,
        label: &str,
    ) -> Result<Option<NodeProto>, OnnxError> {
        if self.extra(node, label)? {
            return Ok(None);
        }
        if node.op_type == "Identity" {
            let ([input], [output]) = (node.input.as_slice(), node.output.as_slice()) else {
                return Err(node_error(
                    label,
                    "Identity has one input and one output".into(),
                ));
            };
            if let Some(tensor) = self.constants.get(input).cloned() {
                self.new_constant(output, tensor)?;
            } else {
                let value = self.data_value(input)?;
                self.define(output, value)?;
            }
            return Ok(None);
        }
        if let Some(folded) = self.fold(node, label)? {
            let [output] = node.output.as_slice() else {
                return Err(node_error(
                    label,
                    format!(
                        "{} has one output, the node names {}",
                        node.op_type,
                        node.output.len()
                    ),
                ));
            };
            if self.values.contains_key(output) || self.constants.contains_key(output) {
                return Err(OnnxError::Value {
                    value: output.clone(),
                    problem: "defined twice; ONNX values are assigned once".to_owned(),
                });
            }
            self.constants.insert(output.clone(), folded);
            return Ok(None);
        }
        match node.op_type.as_str() {
            "Split" => self.split(node, label).map(|()| None),
            "Gemm" => self.gemm(node, label).map(|()| None),
            "MatMul" => Ok(self.matmul(node, label)?.then(|| node.clone())),
            "Unsqueeze" | "Squeeze" => self.squeeze_data(node, label).map(|()| None),
            "Slice" => self.without_unit_steps(node, label).map(Some),
            op if ELEMENTWISE_BINARY.contains(&op) => Ok(Some(self.widen_scalar_constants(node))),
            _ => Ok(Some(node.clone())),
        }
    }

    fn constant_tensor(&self, name: &str) -> Option<&Tensor> {
        self.constants.get(name)
    }

    /// The constant input `index` as a list of i64, or an error naming it.
    fn constant_ints(
        &self,
        node: &NodeProto,
        index: usize,
        label: &str,
    ) -> Result<Vec<i64>, OnnxError> {
        let name = node
            .input
            .get(index)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| node_error(label, format!("{} needs input #{index}", node.op_type)))?;
        let tensor = self.constant_tensor(name).ok_or_else(|| {
            node_error(
                label,
                format!(
                    "input #{index} `{name}` of {} must be a constant (an initializer, a \
                     Constant node, or computed from those and static shapes)",
                    node.op_type
                ),
            )
        })?;
        tensor
            .cast(DType::I64)
            .to_vec::<i64>()
            .map_err(|e| OnnxError::Value {
                value: name.clone(),
                problem: e.to_string(),
            })
    }

    /// The node's result when it can be computed now: its inputs are constants (or, for
    /// Shape, a value of static shape).
    fn fold(&mut self, node: &NodeProto, label: &str) -> Result<Option<Tensor>, OnnxError> {
        if node.op_type == "Shape" {
            let [input] = node.input.as_slice() else {
                return Err(node_error(label, "Shape has one input".into()));
            };
            let dims = match self.constant_tensor(input) {
                Some(t) => t.dims().to_vec(),
                None => self.data_value(input)?.shape().dims().to_vec(),
            };
            let rank = dims.len() as i64;
            let clamp = |v: i64| (if v < 0 { v + rank } else { v }).clamp(0, rank) as usize;
            let start = clamp(attr_i64(node, "start", 0, label)?);
            let end = clamp(attr_i64(node, "end", rank, label)?);
            return Ok(Some(i64_tensor(shape_i64(&dims[start..end.max(start)]))));
        }
        let all_constant = !node.input.is_empty()
            && node
                .input
                .iter()
                .all(|n| n.is_empty() || self.constants.contains_key(n));
        if !all_constant {
            return Ok(None);
        }
        let input = |i: usize| -> Option<&Tensor> {
            node.input
                .get(i)
                .filter(|n| !n.is_empty())
                .and_then(|n| self.constants.get(n))
        };
        let result = match node.op_type.as_str() {
            "Unsqueeze" | "Squeeze" => {
                let data = input(0).ok_or_else(|| node_error(label, "no data input".into()))?;
                let axes = match (input(1), attr_ints(node, "axes")) {
                    (Some(_), _) => self.constant_ints(node, 1, label)?,
                    (None, Some(axes)) => axes,
                    (None, None) => Vec::new(),
                };
                let dims = match node.op_type.as_str() {
                    "Unsqueeze" => unsqueezed(data.dims(), &axes, label)?,
                    _ => squeezed(data.dims(), &axes, label)?,
                };
                data.reshape(dims)
                    .map_err(|e| node_error(label, e.to_string()))?
            }
            "Range" => {
                let [start, limit, delta] = [0, 1, 2].map(|i| input(i).map(|t| t.to_f64_vec()));
                let (Some(start), Some(limit), Some(delta)) = (start, limit, delta) else {
                    return Err(node_error(label, "Range has three inputs".into()));
                };
                let ([start], [limit], [delta]) = (&start[..], &limit[..], &delta[..]) else {
                    return Err(node_error(label, "Range's inputs are scalars".into()));
                };
                if *delta == 0.0 {
                    return Err(node_error(label, "Range with delta 0".into()));
                }
                let count = ((limit - start) / delta).ceil().max(0.0) as usize;
                let dtype = input(0).map_or(DType::I64, Tensor::dtype);
                let values: Vec<f64> = (0..count).map(|i| start + i as f64 * delta).collect();
                Tensor::from_f64_fn([count], dtype, |at| values[at[0]])
            }
            "ConstantOfShape" => {
                let dims: Vec<usize> = self
                    .constant_ints(node, 0, label)?
                    .into_iter()
                    .map(|d| usize::try_from(d).unwrap_or(0))
                    .collect();
                let (dtype, value) = match node.attribute.iter().find(|a| a.name == "value") {
                    Some(a) => {
                        let t =
                            a.t.as_ref()
                                .ok_or_else(|| node_error(label, "value holds no tensor".into()))
                                .and_then(|t| {
                                    super::tensor_from_proto(t).map_err(|p| node_error(label, p))
                                })?;
                        (t.dtype(), t.to_f64_vec().first().copied().unwrap_or(0.0))
                    }
                    None => (DType::F32, 0.0),
                };
                Tensor::from_f64_fn(dims, dtype, |_| value)
            }
            "Equal" | "Where" | "Expand" => return Ok(None),
            _ => return self.fold_standard(node, label),
        };
        Ok(Some(result))
    }

    /// A node of the table on constant inputs, run by its op's reference.
    fn fold_standard(
        &mut self,
        node: &NodeProto,
        label: &str,
    ) -> Result<Option<Tensor>, OnnxError> {
        let Some(entry) = standard::by_op_type(&node.op_type) else {
            return Ok(None);
        };
        let Lowering::Node {
            variadic, fixed, ..
        } = entry.lowering
        else {
            return Ok(None);
        };
        // A fixed attribute with another value: the table's form reports it.
        for (name, wanted) in fixed {
            if attr_i64(node, name, *wanted, label)? != *wanted {
                return Ok(None);
            }
        }
        let def =
            registry::find(entry.op).map_err(|e| super::unknown(node, label, e.to_string()))?;
        let node = self.without_unit_steps(node, label)?;
        let attrs = self.standard_params(&node, entry, def, label)?;
        let names: Vec<&String> = match variadic {
            true => node.input.iter().collect(),
            false => node.input.iter().take(def.inputs.len()).collect(),
        };
        let tensors: Vec<Tensor> = names
            .iter()
            .map(|n| self.constants.get(n.as_str()).cloned())
            .collect::<Option<_>>()
            .ok_or_else(|| node_error(label, "an input is not a constant".into()))?;
        let run = |inputs: &[&Tensor]| -> Result<Tensor, OnnxError> {
            def.run_reference(inputs, &attrs)
                .map_err(|source| OnnxError::Op {
                    node: label.to_owned(),
                    source,
                })?
                .into_iter()
                .next()
                .ok_or_else(|| node_error(label, "the op has no output".into()))
        };
        if variadic {
            let Some((first, rest)) = tensors.split_first() else {
                return Ok(None);
            };
            let mut acc = first.clone();
            for next in rest {
                acc = run(&[&acc, next])?;
            }
            return Ok(Some(acc));
        }
        let refs: Vec<&Tensor> = tensors.iter().collect();
        run(&refs).map(Some)
    }

    /// `node` without Slice's `steps` input when every step is 1 (`std.slice`'s default
    /// `steps`, so that such a model imports as it did before `steps` was a param); other
    /// steps stay, read by the table into `std.slice`'s `steps`.
    pub(super) fn without_unit_steps(
        &self,
        node: &NodeProto,
        label: &str,
    ) -> Result<NodeProto, OnnxError> {
        let mut node = node.clone();
        if node.op_type == "Slice" && node.input.len() == 5 && !node.input[4].is_empty() {
            let steps = self.constant_ints(&node, 4, label)?;
            if steps.iter().all(|&s| s == 1) {
                node.input.truncate(4);
            }
        }
        Ok(node)
    }

    /// `node` with its rank-0 constant operands read as `[1]` when another operand has a
    /// rank (an element-wise binary op): the broadcast is the same, and the kernels load
    /// rank >= 1.
    fn widen_scalar_constants(&mut self, node: &NodeProto) -> NodeProto {
        let mut node = node.clone();
        let any_ranked = node.input.iter().any(|n| {
            self.values.get(n).is_some_and(|v| v.shape().rank() > 0)
                || self.constants.get(n).is_some_and(|t| !t.dims().is_empty())
        });
        if !any_ranked {
            return node;
        }
        for name in &mut node.input {
            let Some(tensor) = self.constants.get(name.as_str()) else {
                continue;
            };
            if !tensor.dims().is_empty() {
                continue;
            }
            // Under a name of its own: another node may read the scalar as a scalar.
            let widened = format!("{name}:[1]");
            if !self.constants.contains_key(&widened)
                && !self.values.contains_key(&widened)
                && let Ok(t) = tensor.reshape([1])
            {
                self.constants.insert(widened.clone(), t);
            }
            *name = widened;
        }
        node
    }

    /// Split: one `std.slice` per output, sizes from input #1, the `split` attribute, or
    /// `num_outputs` (even parts, the last smaller).
    fn split(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        let x = self.data_value(
            node.input
                .first()
                .ok_or_else(|| node_error(label, "Split needs an input".into()))?,
        )?;
        let dims = x.shape().dims().to_vec();
        let axis = axis_in(attr_i64(node, "axis", 0, label)?, dims.len(), label)?;
        let size = dims[axis] as i64;
        let parts = node.output.len() as i64;
        let sizes = if node.input.len() > 1 && !node.input[1].is_empty() {
            self.constant_ints(node, 1, label)?
        } else if let Some(split) = attr_ints(node, "split") {
            split
        } else {
            let chunk = (size + parts - 1) / parts.max(1);
            (0..parts)
                .map(|i| chunk.min(size - i * chunk).max(0))
                .collect()
        };
        if sizes.len() != node.output.len() || sizes.iter().sum::<i64>() != size {
            return Err(node_error(
                label,
                format!(
                    "Split of axis {axis} (size {size}) into {sizes:?}: expected {} sizes that sum \
                     to {size}",
                    node.output.len()
                ),
            ));
        }
        let def = registry::find(ops::slice::NAME)
            .map_err(|e| super::unknown(node, label, e.to_string()))?;
        let mut start = 0;
        for (output, len) in node.output.iter().zip(sizes) {
            let mut attrs = Attributes::new();
            attrs.insert("starts".into(), AttrValue::I64s(vec![start]));
            attrs.insert("ends".into(), AttrValue::I64s(vec![start + len]));
            attrs.insert("axes".into(), AttrValue::I64s(vec![axis as i64]));
            start += len;
            let [y] =
                <[Value; 1]>::try_from(self.trace(def, std::slice::from_ref(&x), attrs, label)?)
                    .map_err(|_| node_error(label, "std.slice has one output".into()))?;
            if !output.is_empty() {
                self.define(output, y)?;
            }
        }
        Ok(())
    }

    /// One call of `op` with `inputs` and `attrs`, its single output.
    fn one(
        &self,
        op: &str,
        inputs: &[Value],
        attrs: Attributes,
        label: &str,
    ) -> Result<Value, OnnxError> {
        let def = registry::find(op).map_err(|e| node_error(label, e.to_string()))?;
        let outputs = self.trace(def, inputs, attrs, label)?;
        outputs
            .into_iter()
            .next()
            .ok_or_else(|| node_error(label, format!("`{op}` has no output")))
    }

    fn reshape(&self, x: &Value, dims: &[usize], label: &str) -> Result<Value, OnnxError> {
        if x.shape().dims() == dims {
            return Ok(x.clone());
        }
        let mut attrs = Attributes::new();
        attrs.insert("shape".into(), AttrValue::I64s(shape_i64(dims)));
        self.one(ops::reshape::NAME, std::slice::from_ref(x), attrs, label)
    }

    /// The product `a @ b` of two values: `std.matmul` with a batch of `a` reshaped into its
    /// rows (the kernel's form), or `std.batch_matmul` when `b` has a batch too.
    fn product(&self, a: &Value, b: &Value, label: &str) -> Result<Value, OnnxError> {
        let (ad, bd) = (a.shape().dims().to_vec(), b.shape().dims().to_vec());
        if ad.len() < 2 || bd.len() < 2 {
            return Err(node_error(
                label,
                format!(
                    "MatMul of shapes {} and {}: pto-op multiplies operands of rank >= 2",
                    a.shape(),
                    b.shape()
                ),
            ));
        }
        if bd.len() > 2 {
            return self.one(
                ops::batch_matmul::NAME,
                &[a.clone(), b.clone()],
                Attributes::new(),
                label,
            );
        }
        let k = ad[ad.len() - 1];
        let rows: usize = ad[..ad.len() - 1].iter().product();
        let a2 = self.reshape(a, &[rows, k], label)?;
        let y = self.one(
            ops::matmul::NAME,
            &[a2, b.clone()],
            Attributes::new(),
            label,
        )?;
        let mut out = ad[..ad.len() - 1].to_vec();
        out.push(bd[1]);
        self.reshape(&y, &out, label)
    }

    /// MatMul beyond the table's form (an `a` of rank > 2, a batched `b`, or a 1-D operand);
    /// true for the plain product of two matrices, which the table imports.
    ///
    /// A 1-D operand is numpy's: `a [k]` is read as the matrix `[1, k]` and `b [k]` as
    /// `[k, 1]`, and the dim added is removed from the product (`[k] @ [k]` is a scalar).
    fn matmul(&mut self, node: &NodeProto, label: &str) -> Result<bool, OnnxError> {
        let ([a, b], [y]) = (node.input.as_slice(), node.output.as_slice()) else {
            return Ok(false);
        };
        let (mut a, mut b) = (self.data_value(a)?, self.data_value(b)?);
        if a.shape().rank() == 2 && b.shape().rank() == 2 {
            return Ok(true);
        }
        let (a_vector, b_vector) = (a.shape().rank() == 1, b.shape().rank() == 1);
        if a_vector {
            a = self.reshape(&a, &[1, a.shape().dims()[0]], label)?;
        }
        if b_vector {
            b = self.reshape(&b, &[b.shape().dims()[0], 1], label)?;
        }
        let mut product = self.product(&a, &b, label)?;
        if a_vector || b_vector {
            let mut dims = product.shape().dims().to_vec();
            // The product `[.., m, n]` has rank >= 2: `a`'s row is m, `b`'s column n.
            let row = dims.len() - 2;
            if b_vector {
                dims.pop();
            }
            if a_vector {
                dims.remove(row);
            }
            product = self.reshape(&product, &dims, label)?;
        }
        self.define(y, product)?;
        Ok(false)
    }

    /// Gemm: `alpha * A' @ B' + beta * C` with `'` the optional transposes.
    fn gemm(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        let [y] = node.output.as_slice() else {
            return Err(node_error(label, "Gemm has one output".into()));
        };
        let name = |i: usize| node.input.get(i).filter(|n| !n.is_empty());
        let (Some(a), Some(b)) = (name(0), name(1)) else {
            return Err(node_error(label, "Gemm needs inputs A and B".into()));
        };
        let transposed =
            |importer: &mut Importer, input: &str, flag: &str| -> Result<Value, OnnxError> {
                let value = importer.data_value(input)?;
                if attr_i64(node, flag, 0, label)? == 0 {
                    return Ok(value);
                }
                let mut attrs = Attributes::new();
                attrs.insert("perm".into(), AttrValue::I64s(vec![1, 0]));
                importer.one(ops::transpose::NAME, &[value], attrs, label)
            };
        let a = transposed(self, a, "transA")?;
        let b = transposed(self, b, "transB")?;
        let mut product = self.product(&a, &b, label)?;
        let scale = |importer: &mut Importer,
                     v: Value,
                     factor: f32,
                     what: &str|
         -> Result<Value, OnnxError> {
            if factor == 1.0 {
                return Ok(v);
            }
            let c = importer.scalar_weight(&format!("{y}:{what}"), factor, v.dtype(), label)?;
            importer.one(ops::mul::NAME, &[v, c], Attributes::new(), label)
        };
        let float_attr = |name: &str| match node.attribute.iter().find(|a| a.name == name) {
            Some(a) => a.f.unwrap_or(1.0),
            None => 1.0,
        };
        product = scale(self, product, float_attr("alpha"), "alpha")?;
        if let Some(c) = name(2) {
            let c = self.data_value(c)?;
            let c = scale(self, c, float_attr("beta"), "beta")?;
            product = self.one(ops::add::NAME, &[product, c], Attributes::new(), label)?;
        }
        self.define(y, product)
    }

    /// A weight of shape `[1]` holding `value`.
    fn scalar_weight(
        &mut self,
        name: &str,
        value: f32,
        dtype: DType,
        label: &str,
    ) -> Result<Value, OnnxError> {
        let tensor = Tensor::from_vec([1], vec![value])
            .map_err(|e| node_error(label, e.to_string()))?
            .cast(dtype);
        self.new_constant(name, tensor)?;
        self.data_value(name)
    }

    /// Unsqueeze or Squeeze of a (non-constant) value: a reshape.
    fn squeeze_data(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        let ([x, ..], [y]) = (node.input.as_slice(), node.output.as_slice()) else {
            return Err(node_error(
                label,
                format!("{} has one output", node.op_type),
            ));
        };
        let x = self.data_value(x)?;
        let axes = match (
            node.input.get(1).filter(|n| !n.is_empty()),
            attr_ints(node, "axes"),
        ) {
            (Some(_), _) => self.constant_ints(node, 1, label)?,
            (None, Some(axes)) => axes,
            (None, None) => Vec::new(),
        };
        let dims = match node.op_type.as_str() {
            "Unsqueeze" => unsqueezed(x.shape().dims(), &axes, label)?,
            _ => squeezed(x.shape().dims(), &axes, label)?,
        };
        let value = self.reshape(&x, &dims, label)?;
        self.define(y, value)
    }
}
