//! Nodes imported as the standard op of the table (`standard.rs`): the node's params read
//! from its attributes and constant inputs by the table's forms, its fixed attributes
//! checked, an operator of any number of inputs chained, and a node of constants folded by
//! its op's reference. The default handler of an operator of the table is [`Importer::table_op`].

use pto_op::attr::{AttrType, AttrValue, Attributes};
use pto_op::dtype::DType;
use pto_op::graph::Value;
use pto_op::op::OpDef;
use pto_op::registry;

use super::attribute::{check_required, param_value};
use super::importer::Importer;
use pto_op::graph::ValueKind;

use crate::error::OnnxError;
use crate::proto::NodeProto;
use crate::standard::{self, Lowering, ParamForm, StandardOp};

/// What the error of an ONNX operator without a standard op says.
pub(super) const NO_STANDARD_OP: &str = "this ONNX operator has no pto-op standard op";

impl Importer {
    /// The handler of an operator of the table without a form of its own: the node
    /// imported as the table's op ([`Importer::standard`]). (A node of constants is folded
    /// before its handler runs, `fold.rs`.)
    pub(super) fn table_op(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        self.standard(node, label)
    }

    /// Imports `node` as the table's op: its params by the table's forms, its fixed
    /// attributes checked, the model's opset against the form's.
    pub(super) fn standard(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        let entry = standard::by_op_type(&node.op_type)
            .ok_or_else(|| unknown(node, label, NO_STANDARD_OP.to_owned()))?;
        let Lowering::Node {
            opset,
            since,
            params: maps,
            fixed,
            variadic,
            ..
        } = entry.lowering
        else {
            return Err(unknown(node, label, "not an importable form".to_owned()));
        };
        let opset = since.unwrap_or(opset);
        match self.default_opset {
            Some(version) if version >= opset => {}
            declared => {
                return Err(OnnxError::Node {
                    node: label.to_owned(),
                    problem: format!(
                        "{} is imported in its form of opset {opset}, but the model imports \
                         opset {} of the default domain: export the model with opset {opset} \
                         or later",
                        node.op_type,
                        declared.map_or_else(|| "none".to_owned(), |v| v.to_string())
                    ),
                });
            }
        }
        let def = registry::find(entry.op).map_err(|e| unknown(node, label, e.to_string()))?;
        let attrs = self.standard_params(node, entry, def, label)?;
        for attr in &node.attribute {
            if maps.iter().any(|m| matches!(m.form, ParamForm::Attr(n) | ParamForm::AttrSince { name: n, .. } | ParamForm::IntsOrAbsent(n) | ParamForm::DTypeCode(n) if n == attr.name)) {
                continue;
            }
            let Some(&(_, wanted)) = fixed.iter().find(|(n, _)| *n == attr.name) else {
                return Err(OnnxError::Attribute {
                    node: label.to_owned(),
                    attribute: attr.name.clone(),
                    problem: format!("not supported by pto-op's `{}`", entry.op),
                });
            };
            let actual =
                param_value(attr, AttrType::I64).map_err(|problem| OnnxError::Attribute {
                    node: label.to_owned(),
                    attribute: attr.name.clone(),
                    problem,
                })?;
            if actual != AttrValue::I64(wanted) {
                return Err(OnnxError::Attribute {
                    node: label.to_owned(),
                    attribute: attr.name.clone(),
                    problem: format!(
                        "pto-op's `{}` needs {wanted}, the node has {actual}",
                        entry.op
                    ),
                });
            }
        }
        let param_inputs: Vec<usize> = maps
            .iter()
            .filter_map(|m| match m.form {
                ParamForm::Input { index, .. } => Some(index),
                _ => None,
            })
            .collect();
        if let Some(extra) = (0..node.input.len()).find(|&i| {
            i >= def.inputs.len()
                && !variadic
                && !param_inputs.contains(&i)
                && !node.input[i].is_empty()
        }) {
            return Err(OnnxError::Node {
                node: label.to_owned(),
                problem: format!(
                    "input #{extra} `{}` of {} is not supported by pto-op's `{}`",
                    node.input[extra], node.op_type, entry.op
                ),
            });
        }
        if variadic {
            return self.chain(def, node, attrs, label);
        }
        let data = node.input.get(..def.inputs.len()).unwrap_or(&node.input);
        let inputs = self.inputs(data, def, &node.op_type, label)?;
        self.call(def, &inputs, attrs, &node.output, label)
    }

    /// `op(op(a, b), op(c, d))` for a node with inputs a, b, c, d: a balanced tree of the
    /// binary op, in input order (for an associative op such as concat, the same value as
    /// the chain `op(op(op(a, b), c), d)`). A tree, because a chain of `n` concats copies
    /// `O(n^2)` elements, the tree `O(n log n)`: a Concat of 16k inputs runs in the time of
    /// its log2 levels, not of 16k ever longer copies.
    fn chain(
        &mut self,
        def: &'static OpDef,
        node: &NodeProto,
        attrs: Attributes,
        label: &str,
    ) -> Result<(), OnnxError> {
        let mut level = node
            .input
            .iter()
            .map(|n| self.data_value(n))
            .collect::<Result<Vec<_>, _>>()?;
        let [output] = node.output.as_slice() else {
            return Err(OnnxError::Node {
                node: label.to_owned(),
                problem: format!(
                    "{} has one output, the node names {}",
                    node.op_type,
                    node.output.len()
                ),
            });
        };
        match level.as_slice() {
            [] => {
                return Err(OnnxError::Node {
                    node: label.to_owned(),
                    problem: format!("{} needs at least 1 input, the node has none", node.op_type),
                });
            }
            // One input (valid ONNX: a KV-cache decode step's Concat of one past): the output
            // is the input, once the op's own rules accept it alone (Concat's axis).
            [only] => {
                let ty = only.ty().clone();
                def.infer(&[ty.clone(), ty], &attrs)
                    .map_err(|source| OnnxError::Op {
                        node: label.to_owned(),
                        source,
                    })?;
                let only = only.clone();
                return self.define(output, only);
            }
            _ => {}
        }
        let mut made = 0;
        while level.len() > 1 {
            let last_level = level.len() == 2;
            let mut next = Vec::with_capacity(level.len().div_ceil(2));
            for pair in level.chunks(2) {
                let [a, b] = pair else {
                    next.extend(pair.iter().cloned());
                    continue;
                };
                let outputs = self.trace(def, &[a.clone(), b.clone()], attrs.clone(), label)?;
                let [result] =
                    <[Value; 1]>::try_from(outputs).map_err(|outputs| OnnxError::Node {
                        node: label.to_owned(),
                        problem: format!(
                            "`{}` has {} outputs, a chain needs 1",
                            def.name,
                            outputs.len()
                        ),
                    })?;
                if last_level {
                    self.define(output, result.clone())?;
                } else {
                    // An intermediate value of the tree, named after the node's output.
                    let name = self.graph.fresh_name(&format!("{output}.part{made}"));
                    self.graph
                        .rename(result.id(), &name)
                        .map_err(|source| OnnxError::Op {
                            node: label.to_owned(),
                            source,
                        })?;
                }
                made += 1;
                next.push(result);
            }
            level = next;
        }
        Ok(())
    }

    pub(super) fn standard_params(
        &self,
        node: &NodeProto,
        entry: &StandardOp,
        def: &OpDef,
        label: &str,
    ) -> Result<Attributes, OnnxError> {
        let Lowering::Node { params: maps, .. } = entry.lowering else {
            return Ok(Attributes::new());
        };
        let mut attrs = Attributes::new();
        for map in maps {
            let Some(param) = def.params.iter().find(|p| p.name == map.param) else {
                return Err(OnnxError::Node {
                    node: label.to_owned(),
                    problem: format!(
                        "the linked `{}` has no param `{}`; the table of standard ops does not match it",
                        def.name, map.param
                    ),
                });
            };
            let attribute_error = |attribute: &str, problem: String| OnnxError::Attribute {
                node: label.to_owned(),
                attribute: attribute.to_owned(),
                problem,
            };
            let value = match map.form {
                // Absent: the default, which is what the operator does without it (tracing
                // records every param, so a round trip gives the same node).
                ParamForm::AttrSince { name, .. } => {
                    Some(match node.attribute.iter().find(|a| a.name == name) {
                        Some(a) => {
                            param_value(a, param.ty).map_err(|p| attribute_error(name, p))?
                        }
                        None => match param.default {
                            Some(default) => default(),
                            None => {
                                return Err(attribute_error(
                                    name,
                                    format!("missing, and `{}` has no default", def.name),
                                ));
                            }
                        },
                    })
                }
                ParamForm::Attr(name) => node
                    .attribute
                    .iter()
                    .find(|a| a.name == name)
                    .map(|a| param_value(a, param.ty).map_err(|p| attribute_error(name, p)))
                    .transpose()?,
                ParamForm::IntsOrAbsent(name) => {
                    Some(match node.attribute.iter().find(|a| a.name == name) {
                        Some(a) => {
                            param_value(a, param.ty).map_err(|p| attribute_error(name, p))?
                        }
                        None => AttrValue::I64s(Vec::new()),
                    })
                }
                ParamForm::DTypeCode(name) => node
                    .attribute
                    .iter()
                    .find(|a| a.name == name)
                    .map(|a| {
                        let AttrValue::I64(code) =
                            param_value(a, AttrType::I64).map_err(|p| attribute_error(name, p))?
                        else {
                            return Err(attribute_error(name, "expected an INT".to_owned()));
                        };
                        i32::try_from(code)
                            .ok()
                            .and_then(DType::from_onnx_code)
                            .map(|d| AttrValue::String(d.name().to_owned()))
                            .ok_or_else(|| {
                                attribute_error(
                                    name,
                                    format!("data type {code} is not one of pto-op's dtypes"),
                                )
                            })
                    })
                    .transpose()?,
                ParamForm::Input { index, omit_empty } => {
                    match node.input.get(index).filter(|n| !n.is_empty()) {
                        // An omitted input is what export writes for an empty list: read it
                        // back as one, as tracing records every param.
                        None if omit_empty => Some(AttrValue::I64s(Vec::new())),
                        None => None,
                        Some(name) => {
                            let tensor = self.constants.get(name).ok_or_else(|| {
                                let graph_input = self.values.get(name).is_some_and(|v| {
                                    self.graph.kind(v.id()) == Some(ValueKind::Input)
                                });
                                let hint = match graph_input {
                                    true => format!(
                                        "; `{name}` is a graph input: give its value at import \
                                         (`--constant {name}=[..]`, `ImportOptions::constant`)"
                                    ),
                                    false => String::new(),
                                };
                                OnnxError::Node {
                                    node: label.to_owned(),
                                    problem: format!(
                                        "input #{index} `{name}` ({}) must be a constant: an \
                                         initializer or a Constant node, or computed from \
                                         those and static shapes{hint}",
                                        map.param
                                    ),
                                }
                            })?;
                            let list = tensor.to_vec::<i64>().map_err(|e| OnnxError::Value {
                                value: name.clone(),
                                problem: format!(
                                    "{} of node {label} must be int64: {e}",
                                    map.param
                                ),
                            })?;
                            if param.ty == AttrType::I64 {
                                // A scalar param (Trilu's k): one value.
                                let [value] = list.as_slice() else {
                                    return Err(OnnxError::Value {
                                        value: name.clone(),
                                        problem: format!(
                                            "{} must hold one value, got shape {}",
                                            map.param,
                                            tensor.shape()
                                        ),
                                    });
                                };
                                Some(AttrValue::I64(*value))
                            } else if tensor.shape().rank() > 1 {
                                return Err(OnnxError::Value {
                                    value: name.clone(),
                                    problem: format!(
                                        "{} of node {label} must be 1-D, got shape {}",
                                        map.param,
                                        tensor.shape()
                                    ),
                                });
                            } else {
                                Some(AttrValue::I64s(list))
                            }
                        }
                    }
                }
            };
            if let Some(value) = value {
                attrs.insert(map.param.to_owned(), value);
            }
        }
        check_required(def, &attrs, label)?;
        Ok(attrs)
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
}

/// The error of a node whose operator has no pto-op op, and why.
pub(super) fn unknown(node: &NodeProto, label: &str, reason: String) -> OnnxError {
    OnnxError::UnknownOp {
        node: label.to_owned(),
        domain: node.domain.clone(),
        op_type: node.op_type.clone(),
        reason,
    }
}
