//! Estimating whole models.
//!
//! `cargo bench -p pto-examples --bench estimate`. Graphs and configs are made outside
//! the timed loop unless the group says otherwise.
//!
//! - `estimate_llama_7b_prefill_kirin9030`: the per-head LLaMA-7B prefill (6,019 nodes) on
//!   kirin9030. `cold`: a new [`Estimator`] per iteration, so every distinct call is
//!   resolved and its kernel traced and counted again: what one `pto estimate` run pays.
//!   `warm`: one estimator for every iteration, so each distinct call is answered from
//!   its cache: the cost of the per-node work alone.
//! - `llm_ascend910b`: `pto estimate --llm`'s whole work for one step, cold (a new
//!   estimator, the graph built from the config, the report, memory): Llama-2-7B prefill
//!   of 1,024 tokens and decode after 1,536 on one device, Llama-2-70B on 8 (tensor
//!   parallel, with its 161 collectives).
//! - `llm_sweep_ascend910b`: 100 decode steps of Llama-2-7B (batch 1 to 25 x tp 1, 2, 4,
//!   8) over every core, as `--sweep` runs them.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use pto_estimator::Estimator;
use pto_estimator::llm::{self, LlmConfig, Phase, Quant, Workload, published, sweep};
use pto_estimator::report::ModelReport;
use pto_examples as _;
use pto_op::DeviceProfile;
use pto_op::models::find_builtin;

const MODEL: &str = "llama-7b-prefill";

fn llama_7b(c: &mut Criterion) {
    let def = find_builtin(MODEL)
        .expect("unique model names")
        .expect("pto-examples registers the 7B prefill");
    let graph = def.graph().expect("the 7B prefill describes itself");
    assert!(graph.nodes.len() >= 1_000, "{} nodes", graph.nodes.len());
    let kirin = DeviceProfile::builtin("kirin9030").expect("built-in profile");

    let mut group = c.benchmark_group("estimate_llama_7b_prefill_kirin9030");
    group.sample_size(20);
    group.bench_function("cold", |b| {
        b.iter(|| {
            let mut estimator = Estimator::linked(&kirin).expect("the linked ops are sound");
            black_box(ModelReport::of_graph(MODEL, &graph, &mut estimator).expect("estimates"))
        })
    });
    let mut estimator = Estimator::linked(&kirin).expect("the linked ops are sound");
    group.bench_function("warm", |b| {
        b.iter(|| {
            black_box(ModelReport::of_graph(MODEL, &graph, &mut estimator).expect("estimates"))
        })
    });
    group.finish();
}

fn step(name: &str, phase: Phase, batch: usize, tp: usize) -> Workload {
    Workload {
        name: name.to_owned(),
        phase,
        batch,
        seq: 1024,
        context: 1536,
        tp,
        quant: Quant::None,
    }
}

fn serving(c: &mut Criterion) {
    let device = DeviceProfile::builtin("ascend910b").expect("built-in profile");
    let cases = [
        (
            "llama_2_7b_prefill",
            published::LLAMA_2_7B,
            Phase::Prefill,
            1,
        ),
        ("llama_2_7b_decode", published::LLAMA_2_7B, Phase::Decode, 1),
        (
            "llama_2_70b_prefill_tp8",
            published::LLAMA_2_70B,
            Phase::Prefill,
            8,
        ),
        (
            "llama_2_70b_decode_tp8",
            published::LLAMA_2_70B,
            Phase::Decode,
            8,
        ),
    ];
    let mut group = c.benchmark_group("llm_ascend910b");
    group.sample_size(20);
    for (name, text, phase, tp) in cases {
        let config = LlmConfig::parse(text).expect("the fixture parses");
        let workload = step(name, phase, 1, tp);
        group.bench_function(name, |b| {
            b.iter(|| {
                let mut estimator = Estimator::linked(&device).expect("the linked ops are sound");
                black_box(llm::estimate(&config, &workload, &mut estimator).expect("estimates"))
            })
        });
    }
    group.finish();

    let config = LlmConfig::parse(published::LLAMA_2_7B).expect("the fixture parses");
    let axes = [
        sweep::Axis {
            field: "batch".to_owned(),
            values: (1..=25).collect(),
        },
        sweep::Axis {
            field: "tp".to_owned(),
            values: vec![1, 2, 4, 8],
        },
    ];
    let workloads = sweep::grid(&step("llama-2-7b", Phase::Decode, 1, 1), &axes);
    assert_eq!(workloads.len(), 100);
    let mut group = c.benchmark_group("llm_sweep_ascend910b");
    group.sample_size(10);
    group.bench_function("llama_2_7b_decode_100", |b| {
        b.iter(|| black_box(sweep::sweep(&config, &workloads, &device).expect("sweeps")))
    });
    group.finish();
}

criterion_group!(benches, llama_7b, serving);
criterion_main!(benches);
