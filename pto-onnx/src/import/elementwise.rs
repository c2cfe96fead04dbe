//! Element-wise operators beyond the table's one-node-one-op form: a binary op's rank-0
//! constant operand read as shape `[1]`, Pow of a float base and an integer exponent, Max
//! and Min of one input, Clip with its bounds omitted, and CastLike (a `std.cast` to the
//! dtype of its second input).

use pto_op::attr::{AttrType, AttrValue, Attributes};
use pto_op::ops;
use pto_op::shape::Shape;
use pto_op::tensor::Tensor;

use super::attribute::attribute;
use super::importer::Importer;
use crate::error::OnnxError;
use crate::proto::NodeProto;

impl Importer {
    /// Add, Sub, Mul, Div (and Pow of one dtype): of constants, folded; else the table's op,
    /// a rank-0 constant operand read as `[1]` when the other has a rank
    /// ([`Importer::widen_scalar_constants`]).
    pub(super) fn binary(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        let node = self.widen_scalar_constants(node);
        self.standard(&node, label)
    }

    /// Pow: of a float base and an integer exponent, the exponent cast to the base's dtype
    /// ([`Importer::pow_of_other_types`]); else as [`Importer::binary`].
    pub(super) fn pow(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        if self.pow_of_other_types(node, label)? {
            return Ok(());
        }
        self.binary(node, label)
    }

    /// Max and Min: of one input, the input itself; else the table's op, chained over the
    /// inputs.
    pub(super) fn max_min(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        if node.input.len() != 1 {
            return self.table_op(node, label);
        }
        let ([x], [y]) = (node.input.as_slice(), node.output.as_slice()) else {
            return Err(OnnxError::node(
                label,
                format!("{} has one output", node.op_type),
            ));
        };
        let x = self.data_value(x)?;
        self.define(y, x)
    }

    /// Clip (opset 11 on: `min` and `max` are optional inputs): `std.clip`, an omitted bound
    /// given as a constant of the input's dtype that clips nothing (-inf and +inf for
    /// floats, the dtype's lowest and highest value for integers); of constants, folded.
    /// Clip before opset 11 (bounds as attributes) is refused by name.
    pub(super) fn clip(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        match self.default_opset {
            Some(version) if version >= 11 => {}
            declared => {
                return Err(OnnxError::node(
                    label,
                    format!(
                        "Clip is imported in its form of opset 11 (bounds as inputs), but the \
                         model imports opset {} of the default domain: export the model with \
                         opset 11 or later",
                        declared.map_or_else(|| "none".to_owned(), |v| v.to_string())
                    ),
                ));
            }
        }
        let ([x, bounds @ ..], [y]) = (node.input.as_slice(), node.output.as_slice()) else {
            return Err(OnnxError::node(
                label,
                "Clip has an input, optional `min` and `max`, and one output".into(),
            ));
        };
        if bounds.len() > 2 {
            return Err(OnnxError::node(
                label,
                format!(
                    "Clip has at most 3 inputs, the node has {}",
                    node.input.len()
                ),
            ));
        }
        let dtype = match (self.values.get(x), self.constants.get(x)) {
            (Some(value), _) => value.dtype(),
            (None, Some(tensor)) => tensor.dtype(),
            (None, None) => {
                return Err(OnnxError::Value {
                    value: x.clone(),
                    problem: "used before it is defined (nodes must be in a topological order)"
                        .to_owned(),
                });
            }
        };
        let mut inputs = vec![x.clone()];
        for (k, (bound, unbounded)) in ["min", "max"]
            .into_iter()
            .zip([f64::NEG_INFINITY, f64::INFINITY])
            .enumerate()
        {
            match bounds.get(k).filter(|name| !name.is_empty()) {
                Some(name) => inputs.push(name.clone()),
                None => {
                    // Saturating: -inf is an integer dtype's lowest value.
                    let tensor = Tensor::from_vec(Shape::scalar(), vec![unbounded])
                        .map_err(|e| OnnxError::node(label, e.to_string()))?
                        .cast(dtype);
                    let name = self.graph.fresh_name(&format!("{y}:{bound}"));
                    self.new_constant(&name, tensor)?;
                    inputs.push(name);
                }
            }
        }
        let node = NodeProto {
            input: inputs,
            ..node.clone()
        };
        self.table_op(&node, label)
    }

    /// Pow of a float base and an integer exponent (ONNX allows mixed types; the result has
    /// the base's dtype): the exponent cast to the base's dtype (`Ok(true)`). A constant
    /// exponent (a Constant node, or computed from constants) is cast here, and must be
    /// exact in the base's dtype (every integer of magnitude up to 2^24 is, in f32; up to
    /// 2048 in f16), so the power is that of the integer, as ONNX Runtime computes it. An
    /// exponent that is a value, an initializer among them (a weight, as every initializer
    /// used as data), is cast by a `std.cast` node; an initializer's values are checked the
    /// same way once the model is built ([`Model::check_pow_exponents`](pto_op::Model::check_pow_exponents)). A base and exponent both constant fold
    /// as they are. Other Pow nodes are left to the table.
    fn pow_of_other_types(&mut self, node: &NodeProto, label: &str) -> Result<bool, OnnxError> {
        let ([a, b], [y]) = (node.input.as_slice(), node.output.as_slice()) else {
            return Ok(false);
        };
        let base_constant = self.constants.contains_key(a);
        let exponent_constant = self.constants.get(b).cloned();
        if base_constant && exponent_constant.is_some() {
            return Ok(false);
        }
        let base_dtype = match self.constants.get(a) {
            Some(t) => t.dtype(),
            None => match self.values.get(a) {
                Some(v) => v.dtype(),
                None => return Ok(false),
            },
        };
        let exponent_dtype = match (&exponent_constant, self.values.get(b)) {
            (Some(t), _) => t.dtype(),
            (None, Some(v)) => v.dtype(),
            (None, None) => return Ok(false),
        };
        if !(base_dtype.is_float() && exponent_dtype.is_integer()) {
            return Ok(false);
        }
        let base = self.data_value(a)?;
        let exponent = match exponent_constant {
            Some(integer) => {
                let cast = integer.cast(base_dtype);
                if let Some((index, wanted, got)) =
                    pto_op::model::first_inexact(&integer, base_dtype)
                {
                    return Err(OnnxError::node(
                        label,
                        format!(
                            "the exponent `{b}` is {exponent_dtype} and the base {base_dtype}, \
                             so the exponent is cast to {base_dtype}, but its element {index}, \
                             {wanted}, is not exact in {base_dtype} (it would be {got}); cast \
                             the base to f32 or f64 first"
                        ),
                    ));
                }
                // Rank 0 is read as shape [1], as for the other elementwise ops: a shape the
                // kernels load.
                let cast = match (cast.dims().is_empty(), base.shape().dims().is_empty()) {
                    (true, false) => cast
                        .reshape([1])
                        .map_err(|e| OnnxError::node(label, e.to_string()))?,
                    _ => cast,
                };
                let name = self.graph.fresh_name(&format!("{b}:{}", base_dtype.name()));
                self.new_constant(&name, cast)?;
                self.data_value(&name)?
            }
            None => {
                let to = Attributes::from([(
                    "to".to_owned(),
                    AttrValue::String(base_dtype.name().to_owned()),
                )]);
                let integer = self.data_value(b)?;
                self.one(ops::cast::NAME, &[integer], to, label)?
            }
        };
        let power = self.one(ops::pow::NAME, &[base, exponent], Attributes::new(), label)?;
        self.define(y, power)?;
        Ok(true)
    }

    /// CastLike: `std.cast` to the dtype of its second input, with Cast's `saturate` and
    /// `round_mode`.
    pub(super) fn cast_like(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        let ([x, like], [y]) = (node.input.as_slice(), node.output.as_slice()) else {
            return Err(OnnxError::node(
                label,
                "CastLike has two inputs and one output".into(),
            ));
        };
        // `saturate` (opset 19) and `round_mode` (opset 24) as Cast has them.
        let saturate = match attribute(node, "saturate", AttrType::I64, label)? {
            Some(AttrValue::I64(v)) => v != 0,
            _ => true,
        };
        let round_mode = match attribute(node, "round_mode", AttrType::String, label)? {
            Some(AttrValue::String(mode)) => mode,
            _ => "up".to_owned(),
        };
        let dtype = match self.constants.get(like) {
            Some(t) => t.dtype(),
            None => self.data_value(like)?.dtype(),
        };
        let x = self.data_value(x)?;
        let attrs = Attributes::from([
            ("to".to_owned(), AttrValue::String(dtype.name().to_owned())),
            ("saturate".to_owned(), AttrValue::Bool(saturate)),
            ("round_mode".to_owned(), AttrValue::String(round_mode)),
        ]);
        let cast = self.one(ops::cast::NAME, &[x], attrs, label)?;
        self.define(y, cast)
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
}
