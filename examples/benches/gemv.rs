//! Decode's matrix product, one token times a weight, on each CPU kernel, against reading
//! the weight once: side by side in one run, one thread.
//!
//! `cargo bench -p pto-examples --bench gemv` (about a minute; `PTO_BENCH_SIZE=small` for
//! a 512 x 1376 weight).
//!
//! A 1 x depth by depth x n product does 2 flops per weight element read, so it is bound by
//! reading the weight: the bar is the speed at which this thread reads the same bytes
//! where nothing else is done with them (`read_weight`, a sum in 16 f32 accumulators,
//! which the compiler vectorises). criterion prints each row's throughput in bytes of the
//! weight per second: the kernels' rows over `read_weight`'s is the share of the measured
//! read bandwidth the product reaches. The weights are the MLP of a LLaMA-7B layer (4096 ->
//! 11008 and 11008 -> 4096, 180 MB of f32 each): far larger than the caches, as a real
//! model's weights are between two uses.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use pto_backends::cpu::{self, Layout, MatmulKernel};

/// Whether `PTO_BENCH_SIZE=small` asks for a small weight.
fn small() -> bool {
    match std::env::var("PTO_BENCH_SIZE").as_deref() {
        Ok("small") => true,
        Ok("full") | Err(_) => false,
        Ok(other) => panic!("PTO_BENCH_SIZE is `small` or `full`, got `{other}`"),
    }
}

/// Every element of `data` summed in 16 accumulators: the read alone.
fn read_once(data: &[f32]) -> f32 {
    let mut sums = [0.0f32; 16];
    let chunks = data.chunks_exact(16);
    let tail: f32 = chunks.remainder().iter().sum();
    for chunk in chunks {
        for (sum, v) in sums.iter_mut().zip(chunk) {
            *sum += v;
        }
    }
    sums.iter().sum::<f32>() + tail
}

fn gemv(c: &mut Criterion) {
    let shapes: &[(usize, usize)] = if small() {
        &[(512, 1376), (1376, 512)]
    } else {
        &[(4096, 11008), (11008, 4096)]
    };
    cpu::set_threads(1);
    for &(depth, n) in shapes {
        let a: Vec<f32> = (0..depth).map(|i| ((i % 13) as f32 - 6.0) / 8.0).collect();
        let b: Vec<f32> = (0..depth * n)
            .map(|i| ((i % 17) as f32 - 8.0) / 16.0)
            .collect();
        let mut y = vec![0.0f32; n];
        let mut group = c.benchmark_group(format!("gemv_1x{depth}x{n}_f32_1_thread"));
        group.sample_size(20);
        group.throughput(Throughput::Bytes((depth * n * 4) as u64));
        group.bench_function("read_weight", |bench| {
            bench.iter(|| black_box(read_once(black_box(&b))))
        });
        for kernel in [MatmulKernel::Avx512, MatmulKernel::GemmCrate] {
            if !kernel.available() {
                eprintln!("{kernel:?} does not run on this CPU");
                continue;
            }
            group.bench_function(format!("{kernel:?}"), |bench| {
                bench.iter(|| {
                    cpu::matmul_on(kernel, &a, &b, Layout::RowMajor, (1, depth, n), &mut y)
                        .expect("runs");
                    black_box(&y);
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, gemv);
criterion_main!(benches);
