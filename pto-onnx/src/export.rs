//! Model -> ONNX bytes.

use std::collections::{BTreeMap, HashSet};

use prost::Message;

use crate::error::OnnxError;
use crate::format::{FINGERPRINT_KEY, IR_VERSION, KERNELS_KEY, PRODUCER, VERSION_KEY};
use crate::proto::{
    AttributeProto, AttributeType, Dimension, GraphProto, ModelProto, NodeProto,
    OperatorSetIdProto, StringStringEntryProto, TensorProto, TensorShapeProto, TensorTypeProto,
    TypeProto, ValueInfoProto, data_type,
};
use crate::standard::{self, Lowering, ParamForm, SIGMOID_MUL_OPSET, StandardOp};
use pto_op::attr::{AttrValue, Attributes};
use pto_op::dtype::DType;
use pto_op::graph::{NodeDef, ValueId};
use pto_op::model::Model;
use pto_op::op::{OpDef, TensorType};
use pto_op::registry;
use pto_op::tensor::Tensor;

/// The newest default-domain (`ai.onnx`) opset ONNX Runtime loads, as of its release 1.23:
/// it refuses a model that imports a later one ("Opset 24 is under development ... Current
/// official support for domain ai.onnx is till opset 23").
pub const ONNX_RUNTIME_MAX_OPSET: i64 = 23;

/// The model as ONNX protobuf bytes. See the [crate docs](crate) for the mapping.
///
/// The default-domain opset written is the newest that any node's form needs. A `std.cast`
/// with a `round_mode` other than `up` (to f8e8m0) needs Cast's attribute of opset 24:
/// ONNX Runtime (1.23, the newest release the tests run) refuses to load such a file, above
/// its [`ONNX_RUNTIME_MAX_OPSET`]; onnx's reference evaluator (`onnx.reference`, onnx 1.20)
/// runs it. [`runtime_warning`] says so for a written file; a `saturate = false` needs
/// opset 19, which ONNX Runtime loads.
///
/// Fails on a model whose weights do not match its graph, on an op that is not linked, on a
/// custom op whose name has no domain (`domain.op`), and on a param that ONNX cannot carry.
pub fn to_onnx(model: &Model) -> Result<Vec<u8>, OnnxError> {
    Ok(model_proto(model)?.encode_to_vec())
}

/// The default-domain opset of the ONNX model in `bytes` (its weights are skipped, not
/// read), and, when it is newer than ONNX Runtime loads ([`ONNX_RUNTIME_MAX_OPSET`]), a
/// warning that says which runtimes can load it.
///
/// ```
/// use pto_onnx::{runtime_warning, to_onnx};
/// use pto_op::ops::cast;
/// use pto_op::prelude::*;
/// let graph = Graph::new();
/// let x = graph.input("x", Shape::from([4]), DType::F32);
/// let params = |round_mode: &str| cast::Params {
///     to: "f8e8m0".to_owned(),
///     saturate: true,
///     round_mode: round_mode.to_owned(),
/// };
/// graph.output(&cast::apply(&x, &params("nearest")).unwrap());
/// let bytes = to_onnx(&graph.to_model("m").unwrap()).unwrap();
/// let (opset, warning) = runtime_warning(&bytes).unwrap();
/// assert_eq!(opset, Some(24));
/// assert!(warning.unwrap().contains("ONNX Runtime refuses to load it"));
/// ```
///
/// # Errors
///
/// Bytes that are not an ONNX model.
pub fn runtime_warning(bytes: &[u8]) -> Result<(Option<i64>, Option<String>), OnnxError> {
    let skeleton = crate::read::skeleton(&mut std::io::Cursor::new(bytes), bytes.len() as u64)?;
    Ok(opset_warning(&skeleton.model))
}

/// [`runtime_warning`] of the ONNX file `path`, reading the model without its weights.
///
/// # Errors
///
/// A file that cannot be read or is not an ONNX model.
pub fn file_runtime_warning(
    path: impl AsRef<std::path::Path>,
) -> Result<(Option<i64>, Option<String>), OnnxError> {
    let path = path.as_ref();
    let pto_op::fs::RegularFile { file, len } =
        pto_op::fs::open_regular(path, pto_op::fs::FileKind::Onnx)
            .map_err(|e| OnnxError::Model(e.to_string()))?;
    let skeleton = crate::read::skeleton(&mut std::io::BufReader::new(file), len)?;
    Ok(opset_warning(&skeleton.model))
}

/// The default-domain opset of `model` and the warning of [`runtime_warning`].
fn opset_warning(model: &ModelProto) -> (Option<i64>, Option<String>) {
    let opset = model
        .opset_import
        .iter()
        .filter(|o| o.domain.is_empty() || o.domain == "ai.onnx")
        .map(|o| o.version)
        .max();
    let warning = opset.filter(|&v| v > ONNX_RUNTIME_MAX_OPSET).map(|v| {
        format!(
            "the model imports ai.onnx opset {v} (a Cast with `round_mode` needs 24): ONNX \
             Runtime refuses to load it (release 1.23 loads up to opset \
             {ONNX_RUNTIME_MAX_OPSET}); onnx's reference evaluator (`onnx.reference`, onnx \
             1.20) runs it. Keep `round_mode` at `up` for a file ONNX Runtime loads"
        )
    });
    (opset, warning)
}

fn model_proto(model: &Model) -> Result<ModelProto, OnnxError> {
    model
        .check_weights()
        .map_err(|e| OnnxError::Model(e.to_string()))?;
    let mut exporter = Exporter {
        model,
        names: model.graph.values.iter().map(|v| v.name.clone()).collect(),
        node_names: HashSet::new(),
        nodes: Vec::new(),
        constants: Vec::new(),
        opsets: BTreeMap::new(),
    };
    for (index, node) in model.graph.nodes.iter().enumerate() {
        exporter.node(index, node)?;
    }
    let graph = &model.graph;
    let value_infos = |ids: &[ValueId]| -> Result<Vec<ValueInfoProto>, OnnxError> {
        ids.iter().map(|&id| exporter.value_info(id)).collect()
    };
    let produced: Vec<ValueId> = graph
        .nodes
        .iter()
        .flat_map(|n| n.outputs.iter().copied())
        .filter(|id| !graph.outputs.contains(id))
        .collect();
    let mut initializer = Vec::with_capacity(graph.weights.len());
    for &id in &graph.weights {
        let name = exporter.name(id)?;
        let tensor = model.weights.get(name).ok_or_else(|| OnnxError::Value {
            value: name.to_owned(),
            problem: "the weight has no data".to_owned(),
        })?;
        initializer.push(tensor_proto(name, tensor));
    }
    let graph_proto = GraphProto {
        name: model.name.clone(),
        input: value_infos(&graph.inputs)?,
        output: value_infos(&graph.outputs)?,
        value_info: value_infos(&produced)?,
        initializer: initializer.into_iter().chain(exporter.constants).collect(),
        node: exporter.nodes,
        doc_string: String::new(),
    };
    Ok(ModelProto {
        ir_version: IR_VERSION,
        opset_import: exporter
            .opsets
            .into_iter()
            .map(|(domain, version)| OperatorSetIdProto { domain, version })
            .collect(),
        producer_name: PRODUCER.to_owned(),
        producer_version: env!("CARGO_PKG_VERSION").to_owned(),
        doc_string: format!("model `{}`, exported by pto-op", model.name),
        graph: Some(graph_proto),
        metadata_props: vec![entry(
            KERNELS_KEY,
            serde_json::to_string(&model.traced_kernels())
                .map_err(|e| OnnxError::Model(format!("the shipped kernels: {e}")))?,
        )],
    })
}

struct Exporter<'a> {
    model: &'a Model,
    /// Every value name in use, so that generated names (constants, the Sigmoid of a SiLU)
    /// never collide.
    names: HashSet<String>,
    /// The node names written so far.
    node_names: HashSet<String>,
    nodes: Vec<NodeProto>,
    /// Initializers of constant inputs (Reshape's shape, Slice's starts...).
    constants: Vec<TensorProto>,
    /// Opset version per domain.
    opsets: BTreeMap<String, i64>,
}

impl Exporter<'_> {
    fn name(&self, id: ValueId) -> Result<&str, OnnxError> {
        self.model
            .graph
            .values
            .get(id)
            .map(|v| v.name.as_str())
            .ok_or_else(|| OnnxError::Model(format!("the graph has no value {id}")))
    }

    fn value_info(&self, id: ValueId) -> Result<ValueInfoProto, OnnxError> {
        let value = self
            .model
            .graph
            .values
            .get(id)
            .ok_or_else(|| OnnxError::Model(format!("the graph has no value {id}")))?;
        value_info(&value.name, &value.ty)
    }

    /// A fresh value name starting with `base`.
    fn fresh_name(&mut self, base: String) -> String {
        let mut name = base.clone();
        let mut suffix = 1;
        while self.names.contains(&name) {
            name = format!("{base}_{suffix}");
            suffix += 1;
        }
        self.names.insert(name.clone());
        name
    }

    fn use_opset(&mut self, domain: &str, version: i64) {
        let entry = self.opsets.entry(domain.to_owned()).or_insert(version);
        *entry = (*entry).max(version);
    }

    fn node(&mut self, index: usize, node: &NodeDef) -> Result<(), OnnxError> {
        let label = format!("#{index} ({})", node.op);
        let def = registry::find(&node.op).map_err(|e| OnnxError::UnknownOp {
            node: label.clone(),
            domain: String::new(),
            op_type: node.op.clone(),
            reason: e.to_string(),
        })?;
        let params = full_params(def, &node.attrs, &label)?;
        let inputs = node
            .inputs
            .iter()
            .map(|&id| self.name(id).map(str::to_owned))
            .collect::<Result<Vec<_>, _>>()?;
        let outputs = node
            .outputs
            .iter()
            .map(|&id| self.name(id).map(str::to_owned))
            .collect::<Result<Vec<_>, _>>()?;
        // The node's own name (an imported node's), unless an earlier node took it.
        let name = if node.name.is_empty() || !self.node_names.insert(node.name.clone()) {
            format!("n{index}")
        } else {
            node.name.clone()
        };
        match standard::by_op(&node.op) {
            Some(entry) => self.standard_node(entry, name, inputs, outputs, &params, &label),
            None => self.custom_node(def, name, inputs, outputs, &params, &label),
        }
    }

    fn custom_node(
        &mut self,
        def: &OpDef,
        name: String,
        input: Vec<String>,
        output: Vec<String>,
        params: &Attributes,
        label: &str,
    ) -> Result<(), OnnxError> {
        let (domain, op_type) = def
            .name
            .rsplit_once('.')
            .filter(|(domain, op)| !domain.is_empty() && !op.is_empty())
            .ok_or_else(|| OnnxError::Node {
                node: label.to_owned(),
                problem: format!(
                    "op `{}` has no domain: a custom op is exported in the domain before the \
                     last dot of its name, so name it `domain.op`",
                    def.name
                ),
            })?;
        if domain == "ai.onnx" {
            return Err(OnnxError::Node {
                node: label.to_owned(),
                problem: format!(
                    "op `{}` claims the ONNX default domain `ai.onnx`; custom ops need a domain \
                     of their own",
                    def.name
                ),
            });
        }
        self.use_opset(domain, i64::from(def.version));
        let fingerprint = def.fingerprint();
        self.nodes.push(NodeProto {
            input,
            output,
            name,
            op_type: op_type.to_owned(),
            domain: domain.to_owned(),
            attribute: params
                .iter()
                .map(|(name, value)| attribute(name, value))
                .collect(),
            doc_string: format!(
                "pto-op op `{}` version {}, schema fingerprint {fingerprint}",
                def.name, def.version
            ),
            metadata_props: vec![
                entry(VERSION_KEY, def.version.to_string()),
                entry(FINGERPRINT_KEY, fingerprint.to_string()),
            ],
        });
        Ok(())
    }

    fn standard_node(
        &mut self,
        entry: &StandardOp,
        name: String,
        mut input: Vec<String>,
        output: Vec<String>,
        params: &Attributes,
        label: &str,
    ) -> Result<(), OnnxError> {
        let (op_type, opset, maps, fixed) = match entry.lowering {
            Lowering::Node {
                op_type,
                opset,
                params,
                fixed,
                ..
            } => (op_type, opset, params, fixed),
            Lowering::SigmoidTimesInput => {
                return self.sigmoid_times_input(name, input, output, label);
            }
        };
        if let Some(extra) = params
            .keys()
            .find(|k| !maps.iter().any(|m| m.param == k.as_str()))
        {
            return Err(OnnxError::Attribute {
                node: label.to_owned(),
                attribute: extra.clone(),
                problem: format!(
                    "the table of standard ops has no ONNX form for this param of {}",
                    entry.op
                ),
            });
        }
        let mut attribute = Vec::new();
        for map in maps {
            let Some(value) = params.get(map.param) else {
                continue;
            };
            match map.form {
                ParamForm::Attr(onnx_name) => attribute.push(self::attribute(onnx_name, value)),
                ParamForm::AttrSince { name, since } => {
                    let default = registry::find(entry.op)
                        .ok()
                        .and_then(|def| def.params.iter().find(|p| p.name == map.param))
                        .and_then(|p| p.default)
                        .map(|f| f());
                    if default.as_ref() != Some(value) {
                        attribute.push(self::attribute(name, value));
                        self.use_opset("", since);
                    }
                }
                ParamForm::IntsOrAbsent(onnx_name) => {
                    if !matches!(value, AttrValue::I64s(list) if list.is_empty()) {
                        attribute.push(self::attribute(onnx_name, value));
                    }
                }
                ParamForm::DTypeCode(onnx_name) => {
                    let code = match value {
                        AttrValue::String(dtype) => {
                            dtype.parse::<DType>().map(DType::onnx_code).ok()
                        }
                        _ => None,
                    }
                    .ok_or_else(|| OnnxError::Attribute {
                        node: label.to_owned(),
                        attribute: map.param.to_owned(),
                        problem: format!("expected a dtype name such as \"f16\", got {value}"),
                    })?;
                    attribute.push(int_attribute(onnx_name, i64::from(code)));
                }
                ParamForm::Input { index, omit_empty } => {
                    let tensor = match value {
                        AttrValue::I64s(list) if list.is_empty() && omit_empty => continue,
                        AttrValue::I64s(list) => Tensor::from_vec([list.len()], list.clone())
                            .map_err(|e| OnnxError::Model(e.to_string()))?,
                        // A scalar param (Trilu's k) is a 0-D input.
                        AttrValue::I64(v) => Tensor::scalar(*v),
                        _ => {
                            return Err(OnnxError::Attribute {
                                node: label.to_owned(),
                                attribute: map.param.to_owned(),
                                problem: format!(
                                    "expected a Vec<i64> or an i64, got {} value {value}",
                                    value.ty()
                                ),
                            });
                        }
                    };
                    let constant = self.fresh_name(format!("{name}.{}", map.param));
                    self.constants.push(tensor_proto(&constant, &tensor));
                    if input.len() <= index {
                        input.resize(index + 1, String::new());
                    }
                    input[index] = constant;
                }
            }
        }
        attribute.extend(
            fixed
                .iter()
                .map(|&(name, value)| int_attribute(name, value)),
        );
        self.use_opset("", opset);
        self.nodes.push(NodeProto {
            input,
            output,
            name,
            op_type: op_type.to_owned(),
            attribute,
            ..NodeProto::default()
        });
        Ok(())
    }

    fn sigmoid_times_input(
        &mut self,
        name: String,
        input: Vec<String>,
        output: Vec<String>,
        label: &str,
    ) -> Result<(), OnnxError> {
        let [x] = input.as_slice() else {
            return Err(OnnxError::Node {
                node: label.to_owned(),
                problem: format!("expected one input, got {}", input.len()),
            });
        };
        let sigmoid = self.fresh_name(format!("{name}.sigmoid"));
        self.nodes.push(NodeProto {
            input: vec![x.clone()],
            output: vec![sigmoid.clone()],
            name: format!("{name}.sigmoid"),
            op_type: "Sigmoid".to_owned(),
            ..NodeProto::default()
        });
        self.nodes.push(NodeProto {
            input: vec![x.clone(), sigmoid],
            output,
            name,
            op_type: "Mul".to_owned(),
            ..NodeProto::default()
        });
        self.use_opset("", SIGMOID_MUL_OPSET);
        Ok(())
    }
}

/// Every param of `def` for a call with `attrs`: set ones, then defaults. Unknown and
/// missing params are errors.
fn full_params(def: &OpDef, attrs: &Attributes, label: &str) -> Result<Attributes, OnnxError> {
    if let Some(unknown) = attrs
        .keys()
        .find(|k| !def.params.iter().any(|p| p.name == k.as_str()))
    {
        return Err(OnnxError::Attribute {
            node: label.to_owned(),
            attribute: unknown.clone(),
            problem: format!("`{}` has no param of this name", def.name),
        });
    }
    def.params
        .iter()
        .map(|p| {
            let value = match (attrs.get(p.name), p.default) {
                (Some(v), _) => v.clone(),
                (None, Some(default)) => default(),
                (None, None) => {
                    return Err(OnnxError::Attribute {
                        node: label.to_owned(),
                        attribute: p.name.to_owned(),
                        problem: format!("missing, and `{}` has no default for it", def.name),
                    });
                }
            };
            Ok((p.name.to_owned(), value))
        })
        .collect()
}

fn entry(key: &str, value: String) -> StringStringEntryProto {
    StringStringEntryProto {
        key: key.to_owned(),
        value,
    }
}

fn int_attribute(name: &str, value: i64) -> AttributeProto {
    AttributeProto {
        name: name.to_owned(),
        r#type: AttributeType::Int.into(),
        i: Some(value),
        ..AttributeProto::default()
    }
}

/// The attribute carrying `value` (see the module docs for the types).
fn attribute(name: &str, value: &AttrValue) -> AttributeProto {
    let typed = |ty: AttributeType| AttributeProto {
        name: name.to_owned(),
        r#type: ty.into(),
        ..AttributeProto::default()
    };
    match value {
        AttrValue::F32(v) => AttributeProto {
            f: Some(*v),
            ..typed(AttributeType::Float)
        },
        AttrValue::F64(v) => AttributeProto {
            t: Some(TensorProto {
                data_type: data_type::DOUBLE,
                raw_data: v.to_le_bytes().to_vec(),
                ..TensorProto::default()
            }),
            ..typed(AttributeType::Tensor)
        },
        AttrValue::I32(v) => int_attribute(name, i64::from(*v)),
        AttrValue::I64(v) => int_attribute(name, *v),
        AttrValue::Bool(v) => int_attribute(name, i64::from(*v)),
        AttrValue::String(v) => AttributeProto {
            s: Some(v.as_bytes().to_vec()),
            ..typed(AttributeType::String)
        },
        AttrValue::I64s(v) => AttributeProto {
            ints: v.clone(),
            ..typed(AttributeType::Ints)
        },
        AttrValue::F32s(v) => AttributeProto {
            floats: v.clone(),
            ..typed(AttributeType::Floats)
        },
    }
}

fn tensor_proto(name: &str, tensor: &Tensor) -> TensorProto {
    TensorProto {
        name: name.to_owned(),
        dims: tensor.dims().iter().map(|&d| d as i64).collect(),
        data_type: tensor.dtype().onnx_code(),
        raw_data: tensor.to_packed_le_bytes(),
        ..TensorProto::default()
    }
}

/// The value's type as ONNX writes it; a dim that int64 cannot hold is an error, never a
/// negative dim (which the import would refuse).
fn value_info(name: &str, ty: &TensorType) -> Result<ValueInfoProto, OnnxError> {
    let dim = |(axis, &d): (usize, &usize)| {
        i64::try_from(d)
            .map(|d| Dimension {
                dim_value: Some(d),
                dim_param: None,
            })
            .map_err(|_| OnnxError::Value {
                value: name.to_owned(),
                problem: format!(
                    "dim {axis} of {}{} is {d}, more than the {} an ONNX dim (int64) may be",
                    ty.dtype,
                    ty.shape,
                    i64::MAX
                ),
            })
    };
    Ok(ValueInfoProto {
        name: name.to_owned(),
        r#type: Some(TypeProto {
            tensor_type: Some(TensorTypeProto {
                elem_type: ty.dtype.onnx_code(),
                shape: Some(TensorShapeProto {
                    dim: ty
                        .shape
                        .dims()
                        .iter()
                        .enumerate()
                        .map(dim)
                        .collect::<Result<_, _>>()?,
                }),
            }),
        }),
    })
}
