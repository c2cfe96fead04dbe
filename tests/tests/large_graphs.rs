//! Graphs with many nodes or many inputs go through import, inspection, compiling and
//! running in near-linear time (issue 11 item 4). No timing is asserted: a quadratic path
//! makes these tests take minutes (a 100k-node chain took 10 s in release per verb), which
//! shows. The sizes are knobs: `PTO_LARGE_GRAPH_NODES` (default 20000) and
//! `PTO_LARGE_CONCAT_INPUTS` (default 4096); `cargo run --release -p pto-examples --example
//! big_onnx` writes the sizes of the issue (a 100k chain, a 16k Concat) to time them.

mod common;

use prost::Message;
use pto_backends::compiler::compile;
use pto_onnx::proto::{AttributeProto, AttributeType, GraphProto, NodeProto};
use pto_onnx::{from_onnx, to_onnx};
use pto_op::ops::relu;
use pto_op::prelude::*;

use common::proto::{f32_value, model};

fn knob(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn a_long_chain_imports_compiles_and_runs() {
    let n = knob("PTO_LARGE_GRAPH_NODES", 20_000);
    let graph = Graph::new();
    // Weights by the thousand too: naming them must not scan every value.
    let mut value = graph.input("x", Shape::from([4]), DType::F32);
    for i in 0..n {
        value = relu::apply(&value, &relu::Params {}).unwrap();
        if i % 10 == 0 {
            let w = graph
                .weight(format!("w{i}"), Tensor::zeros([4], DType::F32))
                .unwrap();
            value = pto_op::ops::add::apply(&value, &w, &pto_op::ops::add::Params {}).unwrap();
        }
    }
    graph.output(&value);
    let model = graph.to_model("chain").unwrap();
    let nodes = model.graph.nodes.len();
    assert_eq!(nodes, n + n.div_ceil(10));
    // (Import puts the weights first, in initializer order, so the value ids differ.)
    let back = from_onnx(&to_onnx(&model).unwrap()).unwrap();
    assert_eq!(back.graph.nodes.len(), nodes);
    assert_eq!(back.weights, model.weights);
    for target in ["cpu", "sim"] {
        let compiled = compile(&model, target).unwrap();
        // A chain keeps two activations alive at once.
        assert_eq!(compiled.report().peak_activation_bytes, 2 * 16, "{target}");
        let result = compiled.run(&compiled.random_inputs(0)).unwrap();
        assert_eq!(result.node_times.len(), nodes);
    }
}

/// One ONNX Concat of `n` inputs: imported as a balanced tree of `n - 1` binary concats,
/// `ceil(log2 n)` deep, which copies `O(n log n)` elements instead of a chain's `O(n^2)`.
#[test]
fn a_concat_of_thousands_of_inputs_is_a_balanced_tree() {
    let n = knob("PTO_LARGE_CONCAT_INPUTS", 4096).max(2);
    let inputs: Vec<String> = (0..n).map(|i| format!("x{i}")).collect();
    let proto = model(
        13,
        GraphProto {
            node: vec![NodeProto {
                name: "cat".to_owned(),
                input: inputs.clone(),
                output: vec!["y".to_owned()],
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
                .map(|name| f32_value(name, &[1, 2]))
                .collect(),
            output: vec![f32_value("y", &[n as i64, 2])],
            ..Default::default()
        },
    );
    let model = from_onnx(&proto.encode_to_vec()).unwrap();
    let graph = &model.graph;
    assert_eq!(graph.nodes.len(), n - 1);
    assert!(graph.nodes.iter().all(|node| node.name == "cat"));
    assert_eq!(graph.values[graph.outputs[0]].name, "y");
    // Depth: the longest path of concats from an input to the output.
    let mut depth = vec![0usize; graph.values.len()];
    for node in &graph.nodes {
        let d = node.inputs.iter().map(|&i| depth[i]).max().unwrap_or(0) + 1;
        depth[node.outputs[0]] = d;
    }
    let expected = usize::BITS - (n - 1).leading_zeros();
    assert_eq!(depth[graph.outputs[0]], expected as usize);
    // Row i of the output is input i.
    let compiled = compile(&model, "cpu").unwrap();
    let inputs: Vec<Tensor> = (0..n)
        .map(|i| Tensor::from_vec([1, 2], vec![i as f32, -(i as f32)]).unwrap())
        .collect();
    let y = compiled.run(&inputs).unwrap().outputs.remove(0);
    let values = y.to_vec::<f32>().unwrap();
    for i in 0..n {
        assert_eq!(values[2 * i..2 * i + 2], [i as f32, -(i as f32)], "row {i}");
    }
}
