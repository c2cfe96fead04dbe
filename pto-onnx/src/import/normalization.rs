//! LayerNormalization and RMSNormalization on any axis: the normalized axes `axis..rank`
//! are reshaped into the rows' last axis, which `std.layer_norm` and `std.rms_norm`
//! normalize, and the result is reshaped back. LayerNormalization's optional outputs `Mean`
//! and `InvStdDev` are computed with `std.reduce_mean`, `std.sub`, `std.mul`, `std.add`,
//! `std.sqrt` and `std.div`.

use pto_op::attr::{AttrType, AttrValue, Attributes};
use pto_op::graph::Value;
use pto_op::ops;
use pto_op::tensor::Tensor;

use super::attribute::attribute;
use super::importer::Importer;
use crate::error::OnnxError;
use crate::proto::NodeProto;
use crate::standard::{self, Lowering};

impl Importer {
    /// LayerNormalization or RMSNormalization (the table's line says which).
    pub(super) fn normalization(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        let layer = node.op_type == "LayerNormalization";
        if let Some(Lowering::Node { opset, .. }) =
            standard::by_op_type(&node.op_type).map(|s| s.lowering)
            && self.default_opset.is_none_or(|v| v < opset)
        {
            return Err(OnnxError::node(
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
            return Err(OnnxError::node(
                label,
                format!("{} needs inputs X and Scale", node.op_type),
            ));
        };
        if node.input.len() > inputs {
            return Err(OnnxError::node(
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
                return Err(OnnxError::node(
                    label,
                    format!(
                        "{what} has shape {}, pto-op needs the normalized dims {:?} of X \
                         (axis {axis}); broadcast it first",
                        v.shape(),
                        &dims[first..]
                    ),
                ));
            }
            importer.reshape(&v, &[cols], label)
        };
        let scale = self.data_value(scale)?;
        let gamma = per_row(self, scale, "Scale")?;
        // Over the last axis the ops take X as it is; else its rows are reshaped into rank 2.
        let last = first + 1 == dims.len();
        let x2 = match last {
            true => x.clone(),
            false => self.reshape(&x, &[rows, cols], label)?,
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
            self.one(
                ops::layer_norm::NAME,
                &[x2.clone(), gamma, beta],
                eps_attrs,
                label,
            )?
        } else {
            self.one(ops::rms_norm::NAME, &[x2.clone(), gamma], eps_attrs, label)?
        };
        let y = self.reshape(&y2, &dims, label)?;
        let outputs = &node.output;
        let Some(y_name) = outputs.first().filter(|n| !n.is_empty()) else {
            return Err(OnnxError::node(
                label,
                format!("{} names no output Y", node.op_type),
            ));
        };
        self.define(y_name, y)?;
        let extra: Vec<&String> = outputs[1..].iter().filter(|n| !n.is_empty()).collect();
        if extra.is_empty() {
            return Ok(());
        }
        if !layer || outputs.len() > 3 {
            return Err(OnnxError::node(
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
        let mean = self.one(
            ops::reduce_mean::NAME,
            std::slice::from_ref(&x2),
            reduce.clone(),
            label,
        )?;
        if let Some(name) = outputs.get(1).filter(|n| !n.is_empty()) {
            let m = self.reshape(&mean, &stat_dims, label)?;
            self.define(name, m)?;
        }
        if let Some(name) = outputs.get(2).filter(|n| !n.is_empty()) {
            let centered = self.one(ops::sub::NAME, &[x2, mean], none(), label)?;
            let squares = self.one(ops::mul::NAME, &[centered.clone(), centered], none(), label)?;
            let variance = self.one(ops::reduce_mean::NAME, &[squares], reduce, label)?;
            let constant = |importer: &mut Importer, what: &str, value: f32| {
                let key = format!("{name}:{what}");
                let tensor = Tensor::from_vec([1], vec![value])
                    .map_err(|e| OnnxError::node(label, e.to_string()))?
                    .cast(x.dtype());
                importer.new_constant(&key, tensor)?;
                importer.data_value(&key)
            };
            let eps_w = constant(self, "epsilon", eps)?;
            let one = constant(self, "one", 1.0)?;
            let shifted = self.one(ops::add::NAME, &[variance, eps_w], none(), label)?;
            let std = self.one(ops::sqrt::NAME, &[shifted], none(), label)?;
            let inv = self.one(ops::div::NAME, &[one, std], none(), label)?;
            let inv = self.reshape(&inv, &stat_dims, label)?;
            self.define(name, inv)?;
        }
        Ok(())
    }
}
