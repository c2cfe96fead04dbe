//! Writes large ONNX models, to measure what importing, inspecting, compiling and running
//! them costs (issue 11 item 4, issue 12 item 7):
//!
//! - `mlp FILE [SEQ D_MODEL D_HIDDEN]`: the standard-op SwiGLU MLP block (`build_mlp_std`),
//!   default `32 4096 11008` (LLaMA-7B width: 541 MB of f32 weights);
//! - `chain FILE N`: `N` Relu nodes in a chain over an f32 `[4]` input;
//! - `concat FILE N [WIDTH]`: one Concat node of `N` f32 `[1, WIDTH]` inputs (axis 0;
//!   default width 4).
//!
//! `cargo run --release -p pto-examples --example big_onnx -- mlp /tmp/mlp.onnx`, then for
//! example `/usr/bin/time -v target/release/pto inspect /tmp/mlp.onnx`.

use prost::Message as _;
use pto_examples::models::decoder_block::build_mlp_std;
use pto_onnx::OnnxFile;
use pto_onnx::proto::{
    AttributeProto, AttributeType, Dimension, GraphProto, ModelProto, NodeProto,
    OperatorSetIdProto, TensorShapeProto, TensorTypeProto, TypeProto, ValueInfoProto,
};
use pto_op::ops::relu;
use pto_op::prelude::*;

type Error = Box<dyn std::error::Error>;

// Errors are printed as `pto` prints them (`error: ...` and their causes), not as the
// `Error: {:?}` of a `main` returning `Result`.
fn main() -> std::process::ExitCode {
    pto_cli::exit_code(run())
}

fn run() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage =
        "usage: big_onnx (mlp FILE [SEQ D_MODEL D_HIDDEN] | chain FILE N | concat FILE N [WIDTH])";
    let (Some(kind), Some(path)) = (args.first(), args.get(1)) else {
        return Err(usage.into());
    };
    let size = |index: usize, default: Option<usize>| -> Result<usize, Error> {
        match (args.get(index), default) {
            (Some(text), _) => Ok(text.parse()?),
            (None, Some(default)) => Ok(default),
            (None, None) => Err(usage.into()),
        }
    };
    match kind.as_str() {
        "mlp" => {
            let (seq, d_model, d_hidden) = (
                size(2, Some(32))?,
                size(3, Some(4096))?,
                size(4, Some(11008))?,
            );
            let model = build_mlp_std(seq, d_model, d_hidden)?;
            model.save_onnx(path)?;
            println!(
                "wrote {path}: mlp-block-std seq {seq}, d_model {d_model}, d_hidden {d_hidden}, \
                 {} weight bytes",
                model.weight_bytes()
            );
        }
        "chain" => {
            let n = size(2, None)?;
            let graph = Graph::new();
            let mut value = graph.input("x", Shape::from([4]), DType::F32);
            for _ in 0..n {
                value = relu::apply(&value, &relu::Params {})?;
            }
            graph.output(&value);
            graph.to_model("relu-chain")?.save_onnx(path)?;
            println!("wrote {path}: {n} Relu nodes in a chain");
        }
        "concat" => {
            let (n, width) = (size(2, None)?, size(3, Some(4))?);
            std::fs::write(path, concat_model(n, width).encode_to_vec())?;
            println!("wrote {path}: one Concat of {n} inputs of [1, {width}]");
        }
        _ => return Err(usage.into()),
    }
    Ok(())
}

fn tensor_info(name: String, dims: &[i64]) -> ValueInfoProto {
    ValueInfoProto {
        name,
        r#type: Some(TypeProto {
            tensor_type: Some(TensorTypeProto {
                elem_type: DType::F32.onnx_code(),
                shape: Some(TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|&d| Dimension {
                            dim_value: Some(d),
                            dim_param: None,
                        })
                        .collect(),
                }),
            }),
        }),
    }
}

fn concat_model(n: usize, width: usize) -> ModelProto {
    let inputs: Vec<String> = (0..n).map(|i| format!("x{i}")).collect();
    let rows = i64::try_from(n).unwrap_or(i64::MAX);
    let width = i64::try_from(width).unwrap_or(i64::MAX);
    ModelProto {
        ir_version: pto_onnx::IR_VERSION,
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: 13,
        }],
        graph: Some(GraphProto {
            name: "concat".to_owned(),
            node: vec![NodeProto {
                input: inputs.clone(),
                output: vec!["y".to_owned()],
                name: "concat".to_owned(),
                op_type: "Concat".to_owned(),
                attribute: vec![AttributeProto {
                    name: "axis".to_owned(),
                    r#type: AttributeType::Int.into(),
                    i: Some(0),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            input: inputs
                .into_iter()
                .map(|name| tensor_info(name, &[1, width]))
                .collect(),
            output: vec![tensor_info("y".to_owned(), &[rows, width])],
            ..Default::default()
        }),
        ..Default::default()
    }
}
