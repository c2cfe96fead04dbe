//! `pto estimate --llm`: serving steps of published LLMs from their Hugging Face configs
//! (`pto-estimator/data/llm/*.json`, the model cards' values), their graphs, communication
//! and memory.

use std::path::PathBuf;

use pto_cli::run;
use pto_estimator::Estimator;
use pto_estimator::llm::{self, LlmConfig, MemoryReport, Phase, Quant, Workload, graph};
use pto_estimator::report::Stream;
use pto_op::DeviceProfile;
// Links the example ops (the fused attention and the collectives) into this test.
use pto_examples as _;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../pto-estimator/data/llm/{name}.json"))
}

fn config(name: &str) -> LlmConfig {
    LlmConfig::load(&fixture(name)).expect("the fixture parses")
}

fn workload(phase: Phase, batch: usize, tp: usize) -> Workload {
    Workload {
        name: "test".to_owned(),
        phase,
        batch,
        seq: 1024,
        context: 1536,
        tp,
        quant: Quant::None,
    }
}

#[test]
fn the_graphs_weights_are_the_models_parameters() {
    // Llama-2-7B by hand from its config (4096 wide, 11008 MLP, 32 layers, 32000 tokens):
    // per layer 4 x 4096^2 attention + 3 x 4096 x 11008 MLP + 2 norms of 4096; the
    // embedding, the final norm and the untied LM head. 6,738,415,616 parameters: the
    // "6.7B" of the Llama 2 paper's model table.
    let layer = 4 * 4096u64 * 4096 + 3 * 4096 * 11008 + 2 * 4096;
    let params = 2 * 32000 * 4096 + 32 * layer + 4096;
    assert_eq!(params, 6_738_415_616);
    let c = config("llama-2-7b");
    assert_eq!(c.parameters(), params);
    let g = graph::build(&c, &workload(Phase::Decode, 1, 1)).unwrap();
    let bytes: u64 = g.weights.iter().map(|&id| g.values[id].ty.bytes()).sum();
    assert_eq!(bytes, 2 * params, "f16: two bytes a parameter");
    // Qwen2-7B: grouped-query (28 query heads, 4 key-value heads of 128) with Q/K/V bias,
    // 3584 wide, 18944 MLP, 28 layers, 152064 tokens, untied: 7,615,616,512, the model
    // card's "7.6B" (7.07B without the embeddings' 2 x 0.545B).
    let (h, kv) = (3584u64, 4 * 128u64);
    let layer = 2 * h * h + 2 * h * kv + (h + 2 * kv) + 3 * h * 18944 + 2 * h;
    let params = 2 * 152064 * h + 28 * layer + h;
    assert_eq!(params, 7_615_616_512);
    assert_eq!(config("qwen2-7b").parameters(), params);
}

#[test]
fn every_layer_has_one_fused_attention_and_decode_reads_its_kv_cache() {
    let c = config("llama-2-70b");
    let count = |g: &pto_op::GraphDef, op: &str| g.nodes.iter().filter(|n| n.op == op).count();
    let decode = graph::build(&c, &workload(Phase::Decode, 2, 1)).unwrap();
    assert_eq!(count(&decode, graph::ops::DECODE_ATTENTION), 80);
    assert_eq!(count(&decode, graph::ops::PREFILL_ATTENTION), 0);
    assert_eq!(count(&decode, graph::ops::LM_HEAD), 1);
    let prefill = graph::build(&c, &workload(Phase::Prefill, 2, 1)).unwrap();
    assert_eq!(count(&prefill, graph::ops::PREFILL_ATTENTION), 80);
    // The LM head sees the last position of each sequence only, in both phases.
    let logits = &decode.values[decode.outputs[0]].ty.shape;
    assert_eq!(logits.dims(), &[2, 32000]);
    assert_eq!(
        prefill.values[prefill.outputs[0]].ty.shape.dims(),
        &[2, 32000]
    );
    // KV cache per token: 2 (K and V) x 8 key-value heads x 128 x 2 bytes x 80 layers =
    // 320 KiB; on one of 8 devices, one head: 40 KiB.
    let one = MemoryReport::of(&c, &workload(Phase::Decode, 2, 1), &decode, None).unwrap();
    assert_eq!(one.kv_bytes_per_token, 2 * 8 * 128 * 2 * 80);
    assert_eq!(one.kv_cache_bytes, one.kv_bytes_per_token * 2 * 1537);
    let tp8 = graph::build(&c, &workload(Phase::Decode, 2, 8)).unwrap();
    let eighth = MemoryReport::of(&c, &workload(Phase::Decode, 2, 8), &tp8, None).unwrap();
    assert_eq!(eighth.kv_bytes_per_token, one.kv_bytes_per_token / 8);
}

#[test]
fn tensor_parallelism_adds_two_all_reduces_a_layer_on_their_own_stream() {
    let c = config("llama-2-70b");
    let w = workload(Phase::Decode, 1, 8);
    let g = graph::build(&c, &w).unwrap();
    let reduces = g
        .nodes
        .iter()
        .filter(|n| n.op == graph::ops::ALL_REDUCE)
        .count();
    let gathers = g
        .nodes
        .iter()
        .filter(|n| n.op == graph::ops::ALL_GATHER)
        .count();
    assert_eq!((reduces, gathers), (2 * 80, 1));
    let device = DeviceProfile::builtin("ascend910b").unwrap();
    let mut estimator = Estimator::linked(&device).unwrap();
    let report = llm::estimate(&c, &w, &mut estimator).unwrap();
    let comm: Vec<_> = report
        .report
        .ops
        .iter()
        .filter(|r| r.stream == Stream::Communication)
        .collect();
    assert_eq!(comm.len(), 161);
    // Each all-reduce of one token's 8192 f16 (16 KiB) over the 8-device mesh: the
    // node profile's tree (small message), 6 x 0.5 us + 2 x 16 KiB / (196 GB/s x 0.7).
    let expected = 6.0 * 0.5e-6 + 2.0 * 16384.0 / (196e9 * 0.7);
    assert!(
        (comm[0].seconds - expected).abs() < 1e-12,
        "{}",
        comm[0].seconds
    );
    // The timeline ends when its last op does; nothing overlaps an all-reduce whose sum
    // the residual waits for, so the total is the sum of both streams' busy time.
    let busy: f64 = report.report.seconds_by_stream.values().sum();
    assert!((report.report.total_seconds - busy).abs() < 1e-9 * busy);
    let trace = report.report.chrome_trace().to_json().unwrap();
    assert!(
        trace.contains(r#""tid": 1"#) || trace.contains(r#""tid":1"#),
        "{trace}"
    );
    // Weights on one device: an eighth of every sharded matrix, the embedding whole.
    let per_device = report.memory.weight_bytes as f64;
    let whole = 2.0 * c.parameters() as f64;
    assert!(per_device > whole / 8.0 && per_device < whole / 8.0 + 2.0 * 32000.0 * 8192.0 + 1e6);
}

#[test]
fn quantised_linears_store_their_weights_in_int8_or_int4_with_a_scale_per_channel() {
    // Llama-2-7B's decoder linears by hand: per layer 4 x 4096^2 + 3 x 4096 x 11008
    // weights and 4 x 4096 + 2 x 11008 + 4096 output channels (one f16 scale each).
    let c = config("llama-2-7b");
    let linear = 4 * 4096u64 * 4096 + 3 * 4096 * 11008;
    let channels = 4 * 4096u64 + 2 * 11008 + 4096;
    let f16 = 2 * c.parameters();
    let bytes = |quant| {
        let w = Workload {
            quant,
            ..workload(Phase::Decode, 1, 1)
        };
        let g = graph::build(&c, &w).unwrap();
        g.weights
            .iter()
            .map(|&id| g.values[id].ty.bytes())
            .sum::<u64>()
    };
    assert_eq!(bytes(Quant::W8A8), f16 - 32 * linear + 32 * 2 * channels);
    assert_eq!(
        bytes(Quant::W4A16),
        f16 - 32 * 3 * linear / 2 + 32 * 2 * channels
    );
    // A w8a8 linear's multiply-accumulates go to the cube's int8 rate.
    let w = Workload {
        quant: Quant::W8A8,
        ..workload(Phase::Prefill, 1, 1)
    };
    let g = graph::build(&c, &w).unwrap();
    let node = g
        .nodes
        .iter()
        .find(|n| n.op == graph::ops::QUANT_LINEAR)
        .unwrap();
    let def = pto_op::registry::find(&node.op).unwrap();
    let types: Vec<_> = node
        .inputs
        .iter()
        .map(|&id| g.values[id].ty.clone())
        .collect();
    let info = def.invoke_info(&types, &node.attrs).unwrap();
    let p = (def.properties.expect("has properties"))(&info);
    assert_eq!(
        p.compute_ops[&pto_op::DType::I8].mma_ops,
        1024 * 4096 * 4096
    );
}

#[test]
fn a_mixture_of_experts_reads_the_experts_its_tokens_touch() {
    // Mixtral-8x7B by hand: per layer attention 2 x 4096^2 + 2 x 4096 x 1024, 2 norms, a
    // router of 4096 x 8 and 8 experts of 3 x 4096 x 14336; the embedding, the LM head and
    // the final norm: 46,702,792,704, the model card's "46.7B".
    let attention = 2 * 4096u64 * 4096 + 2 * 4096 * 1024 + 2 * 4096;
    let moe = 4096 * 8 + 8 * 3 * 4096 * 14336u64;
    let params = 32 * (attention + moe) + 2 * 32000 * 4096 + 4096;
    assert_eq!(params, 46_702_792_704);
    let c = config("mixtral-8x7b");
    assert_eq!(c.parameters(), params);
    let w = workload(Phase::Decode, 1, 2);
    let g = graph::build(&c, &w).unwrap();
    assert_eq!(
        g.nodes.iter().filter(|n| n.op == graph::ops::MOE).count(),
        32
    );
    // One token routed to 2 of 8 experts reads those two experts' weights (on one of two
    // devices, half of each), not all eight.
    let device = DeviceProfile::builtin("ascend910b").unwrap();
    let mut estimator = Estimator::linked(&device).unwrap();
    let report = llm::estimate(&c, &w, &mut estimator).unwrap();
    let row = report
        .report
        .ops
        .iter()
        .find(|r| r.op == graph::ops::MOE)
        .unwrap();
    let experts = 2 * 3 * 4096 * (14336 / 2) * 2u64;
    let activations = 4096 * 2 + 8 * 2 + 4096 * 2;
    assert_eq!(row.bytes, Some(experts + activations));
    // Multi-head latent attention is refused, not estimated as something else.
    let deepseek = r#"{"model_type": "deepseek_v3", "hidden_size": 7168,
        "intermediate_size": 18432, "num_hidden_layers": 61, "num_attention_heads": 128,
        "vocab_size": 129280, "n_routed_experts": 256, "num_experts_per_tok": 8,
        "moe_intermediate_size": 2048, "n_shared_experts": 1, "first_k_dense_replace": 3,
        "kv_lora_rank": 512}"#;
    let refused = LlmConfig::parse(deepseek).unwrap_err().to_string();
    assert!(refused.contains("multi-head latent attention"), "{refused}");
}

#[test]
fn the_largest_batch_fits_and_one_more_does_not() {
    let c = config("llama-2-7b");
    let w = workload(Phase::Decode, 1, 1);
    let capacity = 64u64 << 30;
    let batch = llm::max_batch(&c, &w, capacity).unwrap();
    let peak = |b: usize| {
        let w = Workload {
            batch: b,
            ..w.clone()
        };
        let g = graph::build(&c, &w).unwrap();
        MemoryReport::of(&c, &w, &g, Some(capacity))
            .unwrap()
            .peak_bytes
    };
    assert!(peak(batch) <= capacity && peak(batch + 1) > capacity);
    // By hand: (64 GiB - 12.55 GiB of weights) / (1537 tokens x 512 KiB) = 66.9 sequences
    // before activations, which take the rest of the 68th.
    let by_hand = (capacity - 2 * c.parameters()) / (1537 * 512 * 1024);
    assert!(
        batch as u64 <= by_hand && batch as u64 + 2 >= by_hand,
        "{batch} vs {by_hand}"
    );
}

#[test]
fn the_command_line_prints_the_table_communication_and_memory() {
    let config = fixture("llama-2-70b");
    let out = run([
        "pto",
        "estimate",
        "--llm",
        config.to_str().unwrap(),
        "--device",
        "ascend910b",
        "--phase",
        "decode",
        "--context",
        "1536",
        "--tp",
        "8",
        "--max-batch",
    ])
    .unwrap();
    for part in [
        "model `llama-2-70b (decode, batch 1, context 1536, tp 8)` on `ascend910b`",
        "llm.decode_attention",
        "by stream: compute",
        "communication over atlas-800i-a2 (8 devices):",
        "comm.all_reduce    160",
        "memory per device: weights",
        "largest batch that fits:",
    ] {
        assert!(out.contains(part), "{part:?} not in:\n{out}");
    }
    let refused = run([
        "pto",
        "estimate",
        "--llm",
        fixture("qwen2-7b").to_str().unwrap(),
        "--device",
        "ascend910b",
        "--tp",
        "8",
    ])
    .unwrap_err()
    .to_string();
    assert!(
        refused.contains("does not divide the 28 attention heads"),
        "{refused}"
    );
    let no_links = run([
        "pto",
        "estimate",
        "--llm",
        config.to_str().unwrap(),
        "--device",
        "kirin9030",
        "--tp",
        "2",
    ])
    .unwrap_err()
    .to_string();
    assert!(no_links.contains("has no node profile"), "{no_links}");
}

#[test]
fn a_sweep_estimates_every_point_of_the_grid() {
    let out = run([
        "pto",
        "estimate",
        "--llm",
        fixture("llama-2-7b").to_str().unwrap(),
        "--device",
        "ascend910b",
        "--phase",
        "decode",
        "--sweep",
        "batch=1,8",
        "--sweep",
        "tp=1,2",
    ])
    .unwrap();
    assert_eq!(out.lines().count(), 5, "{out}");
    assert!(
        out.lines()
            .nth(4)
            .unwrap()
            .contains("decode      8     1024   2"),
        "{out}"
    );
}
