//! Small builders of ONNX protos for the tests that write model files by hand.

use pto_onnx::proto::{
    Dimension, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorShapeProto,
    TensorTypeProto, TypeProto, ValueInfoProto,
};

/// The ONNX element type of f32.
const FLOAT: i32 = 1;

/// A graph input or output `name`: f32 of the static `dims`.
pub fn f32_value(name: impl Into<String>, dims: &[i64]) -> ValueInfoProto {
    ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            tensor_type: Some(TensorTypeProto {
                elem_type: FLOAT,
                shape: Some(TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|&d| Dimension {
                            dim_value: Some(d),
                            ..Default::default()
                        })
                        .collect(),
                }),
            }),
        }),
    }
}

/// A graph output `name` without a type: the importer infers it.
pub fn untyped_value(name: &str) -> ValueInfoProto {
    ValueInfoProto {
        name: name.to_owned(),
        ..Default::default()
    }
}

/// The node `name`: `output = op_type(inputs...)`.
pub fn node(name: &str, op_type: &str, inputs: &[&str], output: &str) -> NodeProto {
    NodeProto {
        name: name.to_owned(),
        op_type: op_type.to_owned(),
        input: inputs.iter().map(|s| (*s).to_owned()).collect(),
        output: vec![output.to_owned()],
        ..Default::default()
    }
}

/// A model of IR version 8 holding `graph`, importing the standard domain at `opset`.
pub fn model(opset: i64, graph: GraphProto) -> ModelProto {
    ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: opset,
        }],
        graph: Some(graph),
        ..Default::default()
    }
}
