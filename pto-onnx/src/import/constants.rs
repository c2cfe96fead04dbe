//! Constants: Constant nodes, and the shape computations real exporters emit, folded to
//! constants at import (`Shape` of a static shape; `Range`, `ConstantOfShape`, `Squeeze` and
//! `Unsqueeze` of constants), so that the params they feed (a Reshape's target, a Slice's
//! end) are known.

use pto_op::attr::AttrType;
use pto_op::dtype::DType;
use pto_op::tensor::Tensor;

use super::attribute::{attr_i64, attr_ints, param_value};
use super::importer::{Importer, i64_tensor, shape_i64};
use super::tensor::tensor_from_proto;
use crate::error::OnnxError;
use crate::proto::NodeProto;

impl Importer {
    /// Constant: its value, a tensor or a list of numbers, as a constant.
    pub(super) fn constant(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        let [output] = node.output.as_slice() else {
            return Err(OnnxError::Node {
                node: label.to_owned(),
                problem: format!("a Constant has one output, this one {}", node.output.len()),
            });
        };
        let [attr] = node.attribute.as_slice() else {
            return Err(OnnxError::Node {
                node: label.to_owned(),
                problem: format!(
                    "a Constant has one attribute, this one {}",
                    node.attribute.len()
                ),
            });
        };
        let tensor = match attr.name.as_str() {
            "value" => attr
                .t
                .as_ref()
                .ok_or_else(|| "holds no tensor".to_owned())
                .and_then(tensor_from_proto),
            "value_int" => {
                param_value(attr, AttrType::I64).map(|_| Tensor::scalar(attr.i.unwrap_or(0)))
            }
            "value_ints" => param_value(attr, AttrType::I64s).and_then(|_| {
                Tensor::from_vec([attr.ints.len()], attr.ints.clone()).map_err(|e| e.to_string())
            }),
            "value_float" => {
                param_value(attr, AttrType::F32).map(|_| Tensor::scalar(attr.f.unwrap_or(0.0)))
            }
            "value_floats" => param_value(attr, AttrType::F32s).and_then(|_| {
                Tensor::from_vec([attr.floats.len()], attr.floats.clone())
                    .map_err(|e| e.to_string())
            }),
            _ => Err(
                "pto-op reads Constant's value, value_int(s) and value_float(s) only".to_owned(),
            ),
        }
        .map_err(|problem| OnnxError::Attribute {
            node: label.to_owned(),
            attribute: attr.name.clone(),
            problem,
        })?;
        self.new_constant(output, tensor)
    }

    /// Shape: the dims of its input (a constant's, or a value's static shape) from `start`
    /// to `end`, as a constant.
    pub(super) fn shape(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        let [input] = node.input.as_slice() else {
            return Err(OnnxError::node(label, "Shape has one input".into()));
        };
        let dims = match self.constants.get(input) {
            Some(t) => t.dims().to_vec(),
            None => self.data_value(input)?.shape().dims().to_vec(),
        };
        let rank = dims.len() as i64;
        let clamp = |v: i64| (if v < 0 { v + rank } else { v }).clamp(0, rank) as usize;
        let start = clamp(attr_i64(node, "start", 0, label)?);
        let end = clamp(attr_i64(node, "end", rank, label)?);
        let folded = i64_tensor(shape_i64(&dims[start..end.max(start)]));
        self.define_folded(node, label, folded)
    }

    /// Range of constants, as a constant; a Range of values has no pto-op op (the table
    /// says so).
    pub(super) fn range(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        if !self.all_constant(node) {
            return self.standard(node, label);
        }
        let input = |i: usize| self.constant_input(node, i);
        let [start, limit, delta] = [0, 1, 2].map(|i| input(i).map(|t| t.to_f64_vec()));
        let (Some(start), Some(limit), Some(delta)) = (start, limit, delta) else {
            return Err(OnnxError::node(label, "Range has three inputs".into()));
        };
        let ([start], [limit], [delta]) = (&start[..], &limit[..], &delta[..]) else {
            return Err(OnnxError::node(label, "Range's inputs are scalars".into()));
        };
        if *delta == 0.0 {
            return Err(OnnxError::node(label, "Range with delta 0".into()));
        }
        let count = ((limit - start) / delta).ceil().max(0.0) as usize;
        let dtype = input(0).map_or(DType::I64, Tensor::dtype);
        let values: Vec<f64> = (0..count).map(|i| start + i as f64 * delta).collect();
        let folded = Tensor::from_f64_fn([count], dtype, |at| values[at[0]]);
        self.define_folded(node, label, folded)
    }

    /// ConstantOfShape of a constant shape, as a constant; of a value, it has no pto-op op
    /// (the table says so).
    pub(super) fn constant_of_shape(
        &mut self,
        node: &NodeProto,
        label: &str,
    ) -> Result<(), OnnxError> {
        if !self.all_constant(node) {
            return self.standard(node, label);
        }
        let dims: Vec<usize> = self
            .constant_ints(node, 0, label)?
            .into_iter()
            .map(|d| usize::try_from(d).unwrap_or(0))
            .collect();
        let (dtype, value) = match node.attribute.iter().find(|a| a.name == "value") {
            Some(a) => {
                let t = a
                    .t
                    .as_ref()
                    .ok_or_else(|| OnnxError::node(label, "value holds no tensor".into()))
                    .and_then(|t| tensor_from_proto(t).map_err(|p| OnnxError::node(label, p)))?;
                (t.dtype(), t.to_f64_vec().first().copied().unwrap_or(0.0))
            }
            None => (DType::F32, 0.0),
        };
        let folded = Tensor::from_f64_fn(dims, dtype, |_| value);
        self.define_folded(node, label, folded)
    }

    /// Unsqueeze or Squeeze of a constant (every input a constant): the constant reshaped.
    pub(super) fn fold_squeeze(&self, node: &NodeProto, label: &str) -> Result<Tensor, OnnxError> {
        let data = self
            .constant_input(node, 0)
            .ok_or_else(|| OnnxError::node(label, "no data input".into()))?;
        let axes = match (self.constant_input(node, 1), attr_ints(node, "axes")) {
            (Some(_), _) => self.constant_ints(node, 1, label)?,
            (None, Some(axes)) => axes,
            (None, None) => Vec::new(),
        };
        let dims = match node.op_type.as_str() {
            "Unsqueeze" => unsqueezed(data.dims(), &axes, label)?,
            _ => squeezed(data.dims(), &axes, label)?,
        };
        data.reshape(dims)
            .map_err(|e| OnnxError::node(label, e.to_string()))
    }

    /// The constant input `i` of `node`, if it is given and a constant.
    fn constant_input(&self, node: &NodeProto, i: usize) -> Option<&Tensor> {
        node.input
            .get(i)
            .filter(|n| !n.is_empty())
            .and_then(|n| self.constants.get(n))
    }
}

/// `axis` (negative counts from the end) of a rank-`rank` value, or an error naming the node.
pub(super) fn axis_in(axis: i64, rank: usize, label: &str) -> Result<usize, OnnxError> {
    let signed = rank as i64;
    let normalized = if axis < 0 { axis + signed } else { axis };
    usize::try_from(normalized)
        .ok()
        .filter(|&a| a < rank)
        .ok_or_else(|| {
            OnnxError::node(
                label,
                format!("axis {axis} is out of range for rank {rank}"),
            )
        })
}

/// The dims of `dims` with size-1 axes inserted at `axes` (Unsqueeze).
pub(super) fn unsqueezed(
    dims: &[usize],
    axes: &[i64],
    label: &str,
) -> Result<Vec<usize>, OnnxError> {
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
                .ok_or_else(|| OnnxError::node(label, format!("repeated axes {axes:?}"))),
        })
        .collect()
}

/// The dims of `dims` without the size-1 axes `axes` (all size-1 axes when empty; Squeeze).
pub(super) fn squeezed(dims: &[usize], axes: &[i64], label: &str) -> Result<Vec<usize>, OnnxError> {
    let mut removed = Vec::new();
    for &axis in axes {
        let a = axis_in(axis, dims.len(), label)?;
        if dims[a] != 1 {
            return Err(OnnxError::node(
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
