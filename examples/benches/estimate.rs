//! The whole model report of the LLaMA-7B decoder (6,019 nodes) on kirin9030: per node,
//! shape inference, the chain lookup, properties and the roofline; then the totals.
//!
//! `cargo bench -p pto-estimator --bench estimate`. The graph comes from the registered
//! model's `describe` and is built once, outside the timed loop.
//!
//! - `cold`: a new [`Estimator`] per iteration, so every distinct call is resolved and its
//!   kernel traced and counted again: what one `pto estimate` run pays.
//! - `warm`: one estimator for every iteration, so each distinct call is answered from its
//!   cache: the cost of the per-node work alone.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use pto_estimator::Estimator;
use pto_estimator::report::ModelReport;
use pto_examples as _;
use pto_op::DeviceProfile;
use pto_op::models::find_builtin;

const MODEL: &str = "llama-7b-prefill";

fn llama_7b(c: &mut Criterion) {
    let def = find_builtin(MODEL)
        .expect("unique model names")
        .expect("pto-examples registers the 7B decoder");
    let graph = def.graph().expect("the 7B decoder describes itself");
    assert!(graph.nodes.len() >= 1_000, "{} nodes", graph.nodes.len());
    let kirin = DeviceProfile::builtin("kirin9030").expect("built-in profile");

    let mut group = c.benchmark_group("estimate_llama_7b_decoder_kirin9030");
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

criterion_group!(benches, llama_7b);
criterion_main!(benches);
