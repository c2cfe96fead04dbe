//! Operators that move, reshape or alias data: Identity (an alias), Flatten (a reshape to
//! rank 2), Squeeze and Unsqueeze of data (reshapes), Split (one `std.slice` per output),
//! Slice (the table's slice, without its steps when all are 1), and Dropout in inference
//! (its input, and an all-true mask).

use pto_op::attr::{AttrType, AttrValue, Attributes};
use pto_op::graph::Value;
use pto_op::ops;
use pto_op::registry;
use pto_op::tensor::Tensor;

use super::attribute::{attr_i64, attr_ints, attribute};
use super::constants::{axis_in, squeezed, unsqueezed};
use super::importer::Importer;
use super::std_op::unknown;
use crate::error::OnnxError;
use crate::proto::NodeProto;

impl Importer {
    /// Identity: an alias of its input (a constant stays one).
    pub(super) fn identity(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        let ([input], [output]) = (node.input.as_slice(), node.output.as_slice()) else {
            return Err(OnnxError::node(
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
        Ok(())
    }

    /// Unsqueeze or Squeeze: of a constant, folded; of a value, a reshape.
    pub(super) fn squeeze(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        if self.all_constant(node) {
            let folded = self.fold_squeeze(node, label)?;
            return self.define_folded(node, label, folded);
        }
        self.squeeze_data(node, label)
    }

    /// Slice: the table's slice, without Slice's `steps` input
    /// when every step is 1 ([`Importer::without_unit_steps`]).
    pub(super) fn slice(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        let node = self.without_unit_steps(node, label)?;
        self.standard(&node, label)
    }

    /// Flatten: a reshape to rank 2.
    pub(super) fn flatten(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        let ([x], [y]) = (node.input.as_slice(), node.output.as_slice()) else {
            return Err(OnnxError::node(
                label,
                "Flatten has one input and one output".into(),
            ));
        };
        let x = self.data_value(x)?;
        let dims = x.shape().dims().to_vec();
        let rank = dims.len() as i64;
        let axis = match attribute(node, "axis", AttrType::I64, label)? {
            Some(AttrValue::I64(a)) => a,
            _ => 1,
        };
        let split = if axis < 0 { axis + rank } else { axis };
        let split = usize::try_from(split)
            .ok()
            .filter(|&a| a <= dims.len())
            .ok_or_else(|| OnnxError::Attribute {
                node: label.to_owned(),
                attribute: "axis".to_owned(),
                problem: format!("axis {axis} is out of range for rank {rank}"),
            })?;
        let outer: usize = dims[..split].iter().product();
        let inner: usize = dims[split..].iter().product();
        let flat = self.reshape(&x, &[outer, inner], label)?;
        self.define(y, flat)
    }

    /// Dropout in inference (no training mode, or a ratio of 0): its input, and an all-true
    /// mask.
    pub(super) fn dropout(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        let name = |i: usize| node.input.get(i).filter(|n| !n.is_empty());
        let Some(x) = name(0) else {
            return Err(OnnxError::node(label, "Dropout needs its input".into()));
        };
        let scalar =
            |importer: &Importer, i: usize, what: &str| -> Result<Option<f64>, OnnxError> {
                let Some(input) = name(i) else {
                    return Ok(None);
                };
                let tensor = importer.constants.get(input).ok_or_else(|| {
                    OnnxError::node(
                        label,
                        format!(
                            "input #{i} `{input}` ({what}) of Dropout must be a constant (an \
                         initializer, a Constant node, or a bound input)"
                        ),
                    )
                })?;
                Ok(tensor.to_f64_vec().first().copied())
            };
        let ratio = scalar(self, 1, "ratio")?.unwrap_or(0.5);
        let training = scalar(self, 2, "training_mode")?.unwrap_or(0.0) != 0.0;
        if training && ratio != 0.0 {
            return Err(OnnxError::node(
                label,
                format!(
                    "Dropout in training mode with ratio {ratio} is random; pto-op imports \
                     the inference form (training_mode false, or ratio 0)"
                ),
            ));
        }
        let x = self.data_value(x)?;
        let outputs = &node.output;
        match outputs.first().filter(|n| !n.is_empty()) {
            Some(y) => self.define(y, x.clone())?,
            None => return Err(OnnxError::node(label, "Dropout names no output".into())),
        }
        if let Some(mask) = outputs.get(1).filter(|n| !n.is_empty()) {
            let all = Tensor::from_f64_fn(x.shape().clone(), pto_op::dtype::DType::Bool, |_| 1.0);
            self.new_constant(mask, all)?;
        }
        Ok(())
    }

    /// Split: one `std.slice` per output, sizes from input #1, the `split` attribute, or
    /// `num_outputs` (even parts, the last smaller).
    pub(super) fn split(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        let x = self.data_value(
            node.input
                .first()
                .ok_or_else(|| OnnxError::node(label, "Split needs an input".into()))?,
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
            return Err(OnnxError::node(
                label,
                format!(
                    "Split of axis {axis} (size {size}) into {sizes:?}: expected {} sizes that sum \
                     to {size}",
                    node.output.len()
                ),
            ));
        }
        let def =
            registry::find(ops::slice::NAME).map_err(|e| unknown(node, label, e.to_string()))?;
        let mut start = 0;
        for (output, len) in node.output.iter().zip(sizes) {
            let mut attrs = Attributes::new();
            attrs.insert("starts".into(), AttrValue::I64s(vec![start]));
            attrs.insert("ends".into(), AttrValue::I64s(vec![start + len]));
            attrs.insert("axes".into(), AttrValue::I64s(vec![axis as i64]));
            start += len;
            let [y] =
                <[Value; 1]>::try_from(self.trace(def, std::slice::from_ref(&x), attrs, label)?)
                    .map_err(|_| OnnxError::node(label, "std.slice has one output".into()))?;
            if !output.is_empty() {
                self.define(output, y)?;
            }
        }
        Ok(())
    }

    /// Unsqueeze or Squeeze of a (non-constant) value: a reshape.
    fn squeeze_data(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        let ([x, ..], [y]) = (node.input.as_slice(), node.output.as_slice()) else {
            return Err(OnnxError::node(
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
