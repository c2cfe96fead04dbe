//! Operators imported as a few standard ops:
//!
//! - LayerNormalization and RMSNormalization on any axis: the normalized axes `axis..rank`
//!   are reshaped into the rows' last axis, which `std.layer_norm` and `std.rms_norm`
//!   normalize, and the result is reshaped back. LayerNormalization's optional outputs
//!   `Mean` and `InvStdDev` are computed with `std.reduce_mean`, `std.sub`, `std.mul`,
//!   `std.add`, `std.sqrt` and `std.div`.
//! - Flatten: a reshape to rank 2.
//! - Dropout in inference (no training mode, or a ratio of 0): its input, and an all-true
//!   mask.
//! - CastLike: `std.cast` to the dtype of its second input.

use super::{Importer, param_value};
use crate::attr::{AttrType, AttrValue, Attributes};
use crate::graph::Value;
use crate::onnx::OnnxError;
use crate::onnx::proto::NodeProto;
use crate::onnx::standard::{self, Lowering};
use crate::ops;
use crate::registry;
use crate::tensor::Tensor;

fn node_error(label: &str, problem: String) -> OnnxError {
    OnnxError::Node {
        node: label.to_owned(),
        problem,
    }
}

/// The attribute `name` of `node` read as a param of type `ty`, if present.
fn attribute(
    node: &NodeProto,
    name: &str,
    ty: AttrType,
    label: &str,
) -> Result<Option<AttrValue>, OnnxError> {
    node.attribute
        .iter()
        .find(|a| a.name == name)
        .map(|a| {
            param_value(a, ty).map_err(|problem| OnnxError::Attribute {
                node: label.to_owned(),
                attribute: name.to_owned(),
                problem,
            })
        })
        .transpose()
}

impl Importer {
    fn traced(
        &self,
        op: &str,
        inputs: &[Value],
        attrs: Attributes,
        label: &str,
    ) -> Result<Value, OnnxError> {
        let def = registry::find(op).map_err(|e| node_error(label, e.to_string()))?;
        self.trace(def, inputs, attrs, label)?
            .into_iter()
            .next()
            .ok_or_else(|| node_error(label, format!("`{op}` has no output")))
    }

    fn reshaped(&self, x: &Value, dims: &[usize], label: &str) -> Result<Value, OnnxError> {
        if x.shape().dims() == dims {
            return Ok(x.clone());
        }
        let shape = dims.iter().map(|&d| d as i64).collect();
        let attrs = Attributes::from([("shape".to_owned(), AttrValue::I64s(shape))]);
        self.traced(ops::reshape::NAME, std::slice::from_ref(x), attrs, label)
    }

    /// Imports `node` if it is one of the operators of this module (`Ok(true)`).
    pub(super) fn extra(&mut self, node: &NodeProto, label: &str) -> Result<bool, OnnxError> {
        match node.op_type.as_str() {
            "Flatten" => self.flatten(node, label).map(|()| true),
            "Dropout" => self.dropout(node, label).map(|()| true),
            "CastLike" => self.cast_like(node, label).map(|()| true),
            "Max" | "Min" if node.input.len() == 1 => {
                // One input: the input itself.
                let ([x], [y]) = (node.input.as_slice(), node.output.as_slice()) else {
                    return Err(node_error(
                        label,
                        format!("{} has one output", node.op_type),
                    ));
                };
                let x = self.data_value(x)?;
                self.define(y, x).map(|()| true)
            }
            "Pow" => self.pow_of_other_types(node, label),
            "ReduceMean" | "ReduceMax" | "ReduceSum" => self.reduction(node, label),
            _ => self.normalization(node, label),
        }
    }

    /// Pow of a float base and an integer exponent (ONNX allows mixed types; the result has
    /// the base's dtype): the exponent cast to the base's dtype (`Ok(true)`). A constant
    /// exponent (a Constant node, or computed from constants) is cast here, and must be
    /// exact in the base's dtype (every integer of magnitude up to 2^24 is, in f32; up to
    /// 2048 in f16), so the power is that of the integer, as ONNX Runtime computes it. An
    /// exponent that is a value, an initializer among them (a weight, as every initializer
    /// used as data), is cast by a `std.cast` node; an initializer's values are checked the
    /// same way once the model is built ([`crate::Model::check_pow_exponents`]). A base and exponent both constant fold
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
                    crate::model::first_inexact(&integer, base_dtype)
                {
                    return Err(node_error(
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
                        .map_err(|e| node_error(label, e.to_string()))?,
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
                self.traced(ops::cast::NAME, &[integer], to, label)?
            }
        };
        let power = self.traced(ops::pow::NAME, &[base, exponent], Attributes::new(), label)?;
        self.define(y, power)?;
        Ok(true)
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
        let reduced = self.traced(op, &[x], attrs, label)?;
        self.define(y, reduced)?;
        Ok(true)
    }

    fn flatten(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        let ([x], [y]) = (node.input.as_slice(), node.output.as_slice()) else {
            return Err(node_error(
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
        let flat = self.reshaped(&x, &[outer, inner], label)?;
        self.define(y, flat)
    }

    fn dropout(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        let name = |i: usize| node.input.get(i).filter(|n| !n.is_empty());
        let Some(x) = name(0) else {
            return Err(node_error(label, "Dropout needs its input".into()));
        };
        let scalar =
            |importer: &Importer, i: usize, what: &str| -> Result<Option<f64>, OnnxError> {
                let Some(input) = name(i) else {
                    return Ok(None);
                };
                let tensor = importer.constants.get(input).ok_or_else(|| {
                    node_error(
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
            return Err(node_error(
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
            None => return Err(node_error(label, "Dropout names no output".into())),
        }
        if let Some(mask) = outputs.get(1).filter(|n| !n.is_empty()) {
            let all = Tensor::from_f64_fn(x.shape().clone(), crate::dtype::DType::Bool, |_| 1.0);
            self.new_constant(mask, all)?;
        }
        Ok(())
    }

    fn cast_like(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        let ([x, like], [y]) = (node.input.as_slice(), node.output.as_slice()) else {
            return Err(node_error(
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
        let cast = self.traced(ops::cast::NAME, &[x], attrs, label)?;
        self.define(y, cast)
    }

    /// Imports `node` if it is a LayerNormalization or RMSNormalization (`Ok(true)`).
    fn normalization(&mut self, node: &NodeProto, label: &str) -> Result<bool, OnnxError> {
        let layer = match node.op_type.as_str() {
            "LayerNormalization" => true,
            "RMSNormalization" => false,
            _ => return Ok(false),
        };
        if let Some(Lowering::Node { opset, .. }) =
            standard::by_op_type(&node.op_type).map(|s| s.lowering)
            && self.default_opset.is_none_or(|v| v < opset)
        {
            return Err(node_error(
                label,
                format!(
                    "{} is imported in its form of opset {opset}, but the model imports opset \
                     {} of the default domain: export the model with opset {opset} or later",
                    node.op_type,
                    self.default_opset
                        .map_or_else(|| "none".to_owned(), |v| v.to_string())
                ),
            ));
        }
        for attr in &node.attribute {
            if !matches!(attr.name.as_str(), "axis" | "epsilon" | "stash_type") {
                return Err(OnnxError::Attribute {
                    node: label.to_owned(),
                    attribute: attr.name.clone(),
                    problem: format!("not an attribute of {}", node.op_type),
                });
            }
        }
        let axis = match attribute(node, "axis", AttrType::I64, label)? {
            Some(AttrValue::I64(a)) => a,
            _ => -1,
        };
        let eps = match attribute(node, "epsilon", AttrType::F32, label)? {
            Some(AttrValue::F32(e)) => e,
            _ => 1e-5,
        };
        if let Some(AttrValue::I64(stash)) = attribute(node, "stash_type", AttrType::I64, label)?
            && stash != 1
        {
            return Err(OnnxError::Attribute {
                node: label.to_owned(),
                attribute: "stash_type".to_owned(),
                problem: format!("pto-op computes in f32 (stash_type 1), the node has {stash}"),
            });
        }
        let name = |i: usize| node.input.get(i).filter(|n| !n.is_empty());
        let inputs = if layer { 3 } else { 2 };
        let (Some(x), Some(scale)) = (name(0), name(1)) else {
            return Err(node_error(
                label,
                format!("{} needs inputs X and Scale", node.op_type),
            ));
        };
        if node.input.len() > inputs {
            return Err(node_error(
                label,
                format!(
                    "{} takes at most {inputs} inputs, the node has {}",
                    node.op_type,
                    node.input.len()
                ),
            ));
        }
        let x = self.data_value(x)?;
        let dims = x.shape().dims().to_vec();
        let rank = dims.len() as i64;
        let first = if axis < 0 { axis + rank } else { axis };
        let first = usize::try_from(first)
            .ok()
            .filter(|&a| a < dims.len())
            .ok_or_else(|| OnnxError::Attribute {
                node: label.to_owned(),
                attribute: "axis".to_owned(),
                problem: format!("axis {axis} is out of range for X of rank {rank}"),
            })?;
        let rows: usize = dims[..first].iter().product();
        let cols: usize = dims[first..].iter().product();
        let per_row = |importer: &Importer, v: Value, what: &str| {
            if v.shape().dims() != &dims[first..] {
                return Err(node_error(
                    label,
                    format!(
                        "{what} has shape {}, pto-op needs the normalized dims {:?} of X \
                         (axis {axis}); broadcast it first",
                        v.shape(),
                        &dims[first..]
                    ),
                ));
            }
            importer.reshaped(&v, &[cols], label)
        };
        let scale = self.data_value(scale)?;
        let gamma = per_row(self, scale, "Scale")?;
        // Over the last axis the ops take X as it is; else its rows are reshaped into rank 2.
        let last = first + 1 == dims.len();
        let x2 = match last {
            true => x.clone(),
            false => self.reshaped(&x, &[rows, cols], label)?,
        };
        let eps_attrs = Attributes::from([("eps".to_owned(), AttrValue::F32(eps))]);
        let y2 = if layer {
            let beta = match name(2) {
                Some(b) => {
                    let b = self.data_value(b)?;
                    per_row(self, b, "B")?
                }
                None => {
                    let zeros = format!("{}:zero_bias", node.output.first().map_or("", |s| s));
                    self.constants
                        .insert(zeros.clone(), Tensor::zeros([cols], x.dtype()));
                    self.data_value(&zeros)?
                }
            };
            self.traced(
                ops::layer_norm::NAME,
                &[x2.clone(), gamma, beta],
                eps_attrs,
                label,
            )?
        } else {
            self.traced(ops::rms_norm::NAME, &[x2.clone(), gamma], eps_attrs, label)?
        };
        let y = self.reshaped(&y2, &dims, label)?;
        let outputs = &node.output;
        let Some(y_name) = outputs.first().filter(|n| !n.is_empty()) else {
            return Err(node_error(
                label,
                format!("{} names no output Y", node.op_type),
            ));
        };
        self.define(y_name, y)?;
        let extra: Vec<&String> = outputs[1..].iter().filter(|n| !n.is_empty()).collect();
        if extra.is_empty() {
            return Ok(true);
        }
        if !layer || outputs.len() > 3 {
            return Err(node_error(
                label,
                format!(
                    "{} has {} output(s), the node names {}",
                    node.op_type,
                    if layer { 3 } else { 1 },
                    outputs.len()
                ),
            ));
        }
        // Mean and InvStdDev: [rows, 1] statistics, shaped as X with the normalized dims 1.
        let mut stat_dims = dims[..first].to_vec();
        stat_dims.resize(dims.len(), 1);
        let reduce = Attributes::from([
            ("axes".to_owned(), AttrValue::I64s(vec![-1])),
            ("keepdims".to_owned(), AttrValue::Bool(true)),
        ]);
        let none = Attributes::new;
        let mean = self.traced(
            ops::reduce_mean::NAME,
            std::slice::from_ref(&x2),
            reduce.clone(),
            label,
        )?;
        if let Some(name) = outputs.get(1).filter(|n| !n.is_empty()) {
            let m = self.reshaped(&mean, &stat_dims, label)?;
            self.define(name, m)?;
        }
        if let Some(name) = outputs.get(2).filter(|n| !n.is_empty()) {
            let centered = self.traced(ops::sub::NAME, &[x2, mean], none(), label)?;
            let squares =
                self.traced(ops::mul::NAME, &[centered.clone(), centered], none(), label)?;
            let variance = self.traced(ops::reduce_mean::NAME, &[squares], reduce, label)?;
            let constant = |importer: &mut Importer, what: &str, value: f32| {
                let key = format!("{name}:{what}");
                let tensor = Tensor::from_vec([1], vec![value])
                    .map_err(|e| node_error(label, e.to_string()))?
                    .cast(x.dtype());
                importer.new_constant(&key, tensor)?;
                importer.data_value(&key)
            };
            let eps_w = constant(self, "epsilon", eps)?;
            let one = constant(self, "one", 1.0)?;
            let shifted = self.traced(ops::add::NAME, &[variance, eps_w], none(), label)?;
            let std = self.traced(ops::sqrt::NAME, &[shifted], none(), label)?;
            let inv = self.traced(ops::div::NAME, &[one, std], none(), label)?;
            let inv = self.reshaped(&inv, &stat_dims, label)?;
            self.define(name, inv)?;
        }
        Ok(true)
    }
}
