//! Import and the models read as they are, on hand-built ONNX models: the file read once,
//! and a constant never taking an initializer's place.

use std::io::{Cursor, Read, Seek, SeekFrom};

use prost::Message;
use pto_op::dtype::DType;
use pto_op::tensor::Tensor;

use crate::proto::{
    AttributeProto, AttributeType, Dimension, GraphProto, ModelProto, NodeProto,
    OperatorSetIdProto, TensorProto, TensorShapeProto, TensorTypeProto, TypeProto, ValueInfoProto,
};
use crate::{ImportOptions, LoadedModel, from_onnx, loaded};

/// A reader that counts the bytes read through it.
struct Counting<R> {
    inner: R,
    read: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

impl<R: Seek> Seek for Counting<R> {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(pos)
    }
}

fn value(name: &str, dims: &[Option<i64>]) -> ValueInfoProto {
    ValueInfoProto {
        name: name.to_owned(),
        r#type: Some(TypeProto {
            tensor_type: Some(TensorTypeProto {
                elem_type: 1,
                shape: Some(TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|d| Dimension {
                            dim_value: *d,
                            dim_param: d.is_none().then(|| "batch".to_owned()),
                        })
                        .collect(),
                }),
            }),
        }),
    }
}

fn initializer(name: &str, tensor: &Tensor) -> TensorProto {
    TensorProto {
        name: name.to_owned(),
        dims: tensor.dims().iter().map(|&d| d as i64).collect(),
        data_type: tensor.dtype().onnx_code(),
        raw_data: tensor.to_le_bytes(),
        ..Default::default()
    }
}

/// A node of `op` reading `inputs`, writing `output`.
fn node(op: &str, inputs: &[&str], output: &str) -> NodeProto {
    NodeProto {
        op_type: op.to_owned(),
        input: inputs.iter().map(|&n| n.to_owned()).collect(),
        output: vec![output.to_owned()],
        ..Default::default()
    }
}

/// The bytes of a model of `graph` importing opset 17 of the default domain.
fn opset_17(graph: GraphProto) -> Vec<u8> {
    ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: 17,
        }],
        graph: Some(graph),
        ..Default::default()
    }
    .encode_to_vec()
}

#[test]
fn a_symbolic_model_is_read_once_and_keeps_every_initializer() {
    // `x: f32[batch, 64] @ w: f32[64, 4096]` (1 MiB), then a Reshape whose target is an
    // initializer the import folds, and an initializer no node uses.
    let w = Tensor::random([64, 4096], DType::F32, 3);
    let target = Tensor::from_vec([2], vec![-1i64, 4096]).unwrap();
    let spare = Tensor::random([3, 5], DType::F16, 4);
    let bytes = opset_17(GraphProto {
        name: "read_once".to_owned(),
        node: vec![
            node("MatMul", &["x", "w"], "p"),
            node("Reshape", &["p", "target"], "y"),
        ],
        initializer: vec![
            initializer("w", &w),
            initializer("target", &target),
            initializer("spare", &spare),
        ],
        input: vec![value("x", &[None, Some(64)])],
        output: vec![value("y", &[None, Some(4096)])],
        ..Default::default()
    });
    let mut reader = Counting {
        inner: Cursor::new(bytes.as_slice()),
        read: 0,
    };
    let loaded = loaded::from_reader(&mut reader, bytes.len() as u64, None).unwrap();
    // Each byte once (the skeleton reads the small fields byte by byte, the weights in
    // chunks): reading the file again for the weights read it twice.
    assert_eq!(reader.read, bytes.len() as u64);
    let LoadedModel::Symbolic(model) = loaded else {
        panic!("x has a symbolic dim")
    };
    assert_eq!(model.weights.len(), 3);
    assert_eq!(model.weights["w"], w);
    assert_eq!(model.weights["target"], target);
    assert_eq!(model.weights["spare"], spare);
    let bound = model
        .bind(&ImportOptions::default().dim("batch", 2))
        .unwrap();
    assert_eq!(bound.weights["w"], w);
}

#[test]
fn a_constant_never_replaces_an_initializer() {
    // An Identity of a Constant node whose output takes the name of an initializer that
    // a Reshape reads as its target: refused, not a silent replacement of the
    // initializer's tensor.
    let square = Tensor::from_vec([2], vec![2i64, 2]).unwrap();
    let flat = Tensor::from_vec([1], vec![4i64]).unwrap();
    let bytes = opset_17(GraphProto {
        name: "twice".to_owned(),
        node: vec![
            NodeProto {
                attribute: vec![AttributeProto {
                    name: "value".to_owned(),
                    r#type: AttributeType::Tensor as i32,
                    t: Some(initializer("", &square)),
                    ..Default::default()
                }],
                ..node("Constant", &[], "square")
            },
            node("Identity", &["square"], "flat"),
            node("Reshape", &["x", "flat"], "y"),
        ],
        initializer: vec![initializer("flat", &flat)],
        input: vec![value("x", &[Some(4)])],
        output: vec![ValueInfoProto {
            name: "y".to_owned(),
            r#type: None,
        }],
        ..Default::default()
    });
    let err = from_onnx(&bytes).unwrap_err().to_string();
    assert!(
        err.contains("`flat`") && err.contains("defined twice"),
        "{err}"
    );
}
