//! Reductions in their forms before opset 18 (13 for ReduceSum), with `axes` an attribute,
//! and ReduceSum with `noop_with_empty_axes` and no axes (its input); Softmax in its form of
//! opsets 11 and 12 (over the input flattened to 2-D at `axis`); the table reads the later
//! forms.

use pto_op::attr::{AttrType, AttrValue, Attributes};
use pto_op::ops;

use super::attribute::attribute;
use super::importer::Importer;
use crate::error::OnnxError;
use crate::proto::NodeProto;

impl Importer {
    /// ReduceMean, ReduceMax, ReduceSum: the earlier forms ([`Importer::reduction`]), else
    /// the table's op.
    pub(super) fn reduce(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        if self.reduction(node, label)? {
            return Ok(());
        }
        self.table_op(node, label)
    }

    /// ReduceMean, ReduceMax and ReduceSum in their forms before opset 18 (13 for ReduceSum),
    /// with `axes` an attribute, and ReduceSum with `noop_with_empty_axes` and no axes (its
    /// input). `Ok(false)` for the form of the table.
    fn reduction(&mut self, node: &NodeProto, label: &str) -> Result<bool, OnnxError> {
        let ([x, rest @ ..], [y]) = (node.input.as_slice(), node.output.as_slice()) else {
            return Ok(false);
        };
        let noop = matches!(
            attribute(node, "noop_with_empty_axes", AttrType::I64, label)?,
            Some(AttrValue::I64(1))
        );
        if noop {
            let axes_empty = match rest.first().filter(|n| !n.is_empty()) {
                None => true,
                Some(name) => self.constants.get(name).is_some_and(|t| t.numel() == 0),
            };
            if !axes_empty {
                return Ok(false);
            }
            let x = self.data_value(x)?;
            self.define(y, x)?;
            return Ok(true);
        }
        let Some(AttrValue::I64s(axes)) = attribute(node, "axes", AttrType::I64s, label)? else {
            return Ok(false);
        };
        let op = match node.op_type.as_str() {
            "ReduceMean" => ops::reduce_mean::NAME,
            "ReduceMax" => ops::reduce_max::NAME,
            _ => ops::reduce_sum::NAME,
        };
        let keepdims = !matches!(
            attribute(node, "keepdims", AttrType::I64, label)?,
            Some(AttrValue::I64(0))
        );
        let x = self.data_value(x)?;
        let attrs = Attributes::from([
            ("axes".to_owned(), AttrValue::I64s(axes)),
            ("keepdims".to_owned(), AttrValue::Bool(keepdims)),
        ]);
        let reduced = self.one(op, &[x], attrs, label)?;
        self.define(y, reduced)?;
        Ok(true)
    }

    /// Softmax: from opset 13 the table's op (over one axis, `axis` defaulting to -1); at
    /// opsets 11 and 12 over the input flattened to 2-D at `axis` (default 1), that is over
    /// every axis from `axis` on: the table's op over the last axis of `x` reshaped to
    /// `[prod(dims[..axis]), prod(dims[axis..])]`, reshaped back (no reshape when `axis` is
    /// the last, where both forms are the same). Opsets before 11 are refused by name.
    pub(super) fn softmax(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        let opset = match self.default_opset {
            Some(version) if version >= 13 => return self.table_op(node, label),
            Some(version @ (11 | 12)) => version,
            declared => {
                return Err(OnnxError::node(
                    label,
                    format!(
                        "Softmax is imported in its forms of opsets 11 and 13, but the model \
                         imports opset {} of the default domain: export the model with opset \
                         11 or later",
                        declared.map_or_else(|| "none".to_owned(), |v| v.to_string())
                    ),
                ));
            }
        };
        let ([x], [y]) = (node.input.as_slice(), node.output.as_slice()) else {
            return Err(OnnxError::node(
                label,
                "Softmax has one input and one output".into(),
            ));
        };
        if let Some(other) = node.attribute.iter().find(|a| a.name != "axis") {
            return Err(OnnxError::Attribute {
                node: label.to_owned(),
                attribute: other.name.clone(),
                problem: format!("not an attribute of Softmax-{opset}"),
            });
        }
        let axis = match attribute(node, "axis", AttrType::I64, label)? {
            Some(AttrValue::I64(a)) => a,
            _ => 1,
        };
        let x = self.data_value(x)?;
        let dims = x.shape().dims().to_vec();
        let rank = dims.len() as i64;
        let split = usize::try_from(if axis < 0 { axis + rank } else { axis })
            .ok()
            .filter(|&a| a < dims.len())
            .ok_or_else(|| OnnxError::Attribute {
                node: label.to_owned(),
                attribute: "axis".to_owned(),
                problem: format!(
                    "axis {axis} is out of range for input `{}` of rank {rank} (Softmax-{opset} \
                     takes [-{rank}, {}])",
                    node.input[0],
                    rank - 1
                ),
            })?;
        let last_axis = Attributes::from([("axis".to_owned(), AttrValue::I64(-1))]);
        if split + 1 == dims.len() {
            let result = self.one(ops::softmax::NAME, &[x], last_axis, label)?;
            return self.define(y, result);
        }
        let outer: usize = dims[..split].iter().product();
        let inner: usize = dims[split..].iter().product();
        let flat = self.reshape(&x, &[outer, inner], label)?;
        let normalized = self.one(ops::softmax::NAME, &[flat], last_axis, label)?;
        let result = self.reshape(&normalized, &dims, label)?;
        self.define(y, result)
    }
}
