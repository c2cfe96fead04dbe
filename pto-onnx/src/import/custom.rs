//! Nodes of domains other than ONNX's: the registry's op `{domain}.{op_type}`, refused when
//! the node was exported against another schema fingerprint, its attributes read with the
//! types its params have.

use pto_op::attr::Attributes;
use pto_op::registry;

use super::attribute::{check_required, param_value};
use super::importer::Importer;
use super::std_op::unknown;
use crate::error::OnnxError;
use crate::format::FINGERPRINT_KEY;
use crate::proto::NodeProto;

impl Importer {
    /// Imports `node`, of a custom domain, as the registry's op of its name.
    pub(super) fn custom(&mut self, node: &NodeProto, label: &str) -> Result<(), OnnxError> {
        let name = format!("{}.{}", node.domain, node.op_type);
        let def = registry::find(&name).map_err(|e| unknown(node, label, e.to_string()))?;
        if let Some(recorded) = node
            .metadata_props
            .iter()
            .find(|e| e.key == FINGERPRINT_KEY)
            && recorded.value != def.fingerprint().to_string()
        {
            return Err(OnnxError::Node {
                node: label.to_owned(),
                problem: format!(
                    "exported against `{name}` with schema fingerprint {}, but the linked op has \
                     fingerprint {}: its signature changed since; export the model again",
                    recorded.value,
                    def.fingerprint()
                ),
            });
        }
        let mut attrs = Attributes::new();
        for attr in &node.attribute {
            let param = def
                .params
                .iter()
                .find(|p| p.name == attr.name)
                .ok_or_else(|| OnnxError::Attribute {
                    node: label.to_owned(),
                    attribute: attr.name.clone(),
                    problem: format!(
                        "`{name}` has no param of this name (its params: {})",
                        def.params
                            .iter()
                            .map(|p| p.name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                })?;
            let value = param_value(attr, param.ty).map_err(|problem| OnnxError::Attribute {
                node: label.to_owned(),
                attribute: attr.name.clone(),
                problem,
            })?;
            attrs.insert(attr.name.clone(), value);
        }
        check_required(def, &attrs, label)?;
        let inputs = self.inputs(&node.input, def, &node.op_type, label)?;
        self.call(def, &inputs, attrs, &node.output, label)
    }
}
