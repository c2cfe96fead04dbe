//! Reductions in their forms before opset 18 (13 for ReduceSum), with `axes` an attribute,
//! and ReduceSum with `noop_with_empty_axes` and no axes (its input); the table reads the
//! later forms.

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
}
