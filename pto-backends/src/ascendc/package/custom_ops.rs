//! The custom (non-`std`) ops of a model, each with the instances the model calls it with:
//! what a package is generated for, and what checking a package compares.

use pto_op::{Attributes, Model, OpDef};

use super::error::PackageError;
use super::manifest::Instance;

/// A custom op of a model with its instances, before lowering.
pub(super) struct OpUse {
    /// The op.
    pub(super) def: &'static OpDef,
    /// Its domain (`demo` of `demo.rms_norm`), its ONNX domain.
    pub(super) domain: String,
    /// Its ONNX op type (`rms_norm`).
    pub(super) onnx_op_type: String,
    /// Its distinct instances, in first-use order.
    pub(super) instances: Vec<Instance>,
}

/// The custom (non-`std`) ops of `model`, in first-use order, each with its distinct
/// instances.
pub(super) fn custom_ops(model: &Model) -> Result<Vec<OpUse>, PackageError> {
    let graph = &model.graph;
    let mut uses: Vec<OpUse> = Vec::new();
    for (index, node) in graph.nodes.iter().enumerate() {
        if node.op.starts_with("std.") {
            continue;
        }
        let def = pto_op::registry::find(&node.op).map_err(|source| PackageError::UnknownOp {
            op: node.op.clone(),
            source: Box::new(source),
        })?;
        if let Some(input) = def.inputs.get(node.inputs.len()) {
            return Err(PackageError::AbsentOptionalInput {
                node: index,
                op: node.op.clone(),
                input: (*input).to_owned(),
            });
        }
        let types =
            |ids: &[usize]| {
                ids.iter()
                    .map(|&id| {
                        graph.values.get(id).map(|v| v.ty.clone()).ok_or_else(|| {
                            PackageError::Graph {
                                node: index,
                                op: node.op.clone(),
                                value: id,
                            }
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()
            };
        let attrs = def
            .params
            .iter()
            .map(|p| {
                let value = match (node.attrs.get(p.name), p.default) {
                    (Some(v), _) => v.clone(),
                    (None, Some(default)) => default(),
                    (None, None) => {
                        return Err(PackageError::MissingParam {
                            node: index,
                            op: node.op.clone(),
                            param: p.name.to_owned(),
                        });
                    }
                };
                Ok((p.name.to_owned(), value))
            })
            .collect::<Result<Attributes, _>>()?;
        let instance = Instance {
            inputs: types(&node.inputs)?,
            outputs: types(&node.outputs)?,
            attrs,
        };
        let position = match uses.iter().position(|u| u.def.name == def.name) {
            Some(position) => position,
            None => {
                let (domain, op_type) = def
                    .name
                    .rsplit_once('.')
                    .filter(|(d, o)| !d.is_empty() && !o.is_empty())
                    .ok_or_else(|| PackageError::NoDomain {
                        op: def.name.to_owned(),
                    })?;
                uses.push(OpUse {
                    def,
                    domain: domain.to_owned(),
                    onnx_op_type: op_type.to_owned(),
                    instances: Vec::new(),
                });
                uses.len() - 1
            }
        };
        let instances = &mut uses[position].instances;
        if !instances.contains(&instance) {
            instances.push(instance);
        }
    }
    Ok(uses)
}
