//! Simulator wall time against the CPU reference, for the same op and inputs.
//!
//! `cargo bench -p pto-examples --bench sim_vs_cpu`. Each group runs `cpu` and `sim` side
//! by side on one input set; the ratio of their medians is what matters on a shared,
//! noisy machine. The sim target caches the traced kernel after the first call, as the
//! graph compiler will; what is measured is execution plus the timing model.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use pto_backends::cpu::Cpu;
use pto_backends::sim::Sim;
use pto_examples as _;
use pto_op::{AttrValue, Attributes, DType, DeviceProfile, Executor, Tensor};

fn bench_op(c: &mut Criterion, group: &str, op: &str, inputs: &[Tensor], attrs: Attributes) {
    let def = pto_op::registry::find(op).expect("the example ops are linked");
    let inputs: Vec<&Tensor> = inputs.iter().collect();
    let sim = Sim::new(DeviceProfile::builtin("kirin9030").expect("built-in profile"));
    // Check once that both run and agree in shape before timing them.
    let expected = Cpu.execute(def, &inputs, &attrs).expect("cpu runs");
    let actual = sim.execute(def, &inputs, &attrs).expect("sim runs");
    assert_eq!(expected.outputs[0].shape(), actual.outputs[0].shape());

    let mut g = c.benchmark_group(group);
    g.sample_size(10);
    g.bench_function("cpu", |b| {
        b.iter(|| black_box(Cpu.execute(def, &inputs, &attrs)))
    });
    g.bench_function("sim", |b| {
        b.iter(|| black_box(sim.execute(def, &inputs, &attrs)))
    });
    g.finish();
}

fn elementwise(c: &mut Criterion) {
    let x = Tensor::random([1024, 1024], DType::F32, 1);
    bench_op(
        c,
        "elementwise_gelu_1024x1024_f32",
        "demo.gelu_affine",
        &[x],
        Attributes::new(),
    );
}

fn matmul(c: &mut Criterion) {
    let a = Tensor::random([512, 512], DType::F16, 1);
    let b = Tensor::random([512, 512], DType::F16, 2);
    bench_op(
        c,
        "matmul_512x512x512_f16",
        "demo.matmul",
        &[a, b],
        Attributes::new(),
    );
}

fn attention(c: &mut Criterion) {
    let q = Tensor::random([1024, 64], DType::F16, 1);
    let k = Tensor::random([1024, 64], DType::F16, 2);
    let v = Tensor::random([1024, 64], DType::F16, 3);
    let attrs = Attributes::from([("causal".to_owned(), AttrValue::Bool(false))]);
    bench_op(
        c,
        "attention_s1024_d64_f16",
        "demo.flash_attention",
        &[q, k, v],
        attrs,
    );
}

criterion_group!(benches, elementwise, matmul, attention);
criterion_main!(benches);
