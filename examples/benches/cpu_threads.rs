//! What handing one op's work to the CPU fast paths' threads costs: `pto_backends::cpu::
//! for_each_piece` on its kept worker threads against the same job on threads started for
//! the call (`std::thread::scope`, as every call did before the pool), and on one thread,
//! side by side in one run.
//!
//! `cargo bench -p pto-examples --bench cpu_threads` (a few seconds).
//!
//! The job is small on purpose, as the element-wise ops and norms of a decoder layer are
//! (8 pieces of 2,048 f32 summed, just over `PARALLEL_MIN_WORK` as declared work): what is
//! measured is mostly the handing out and the wait.

use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};

use criterion::{Criterion, criterion_group, criterion_main};
use pto_backends::cpu::{self, PARALLEL_MIN_WORK};

const PIECES: usize = 8;
const PIECE_LEN: usize = 2048;

fn piece(data: &[f32], p: usize) -> f32 {
    data[p * PIECE_LEN..(p + 1) * PIECE_LEN].iter().sum()
}

/// `for_each_piece` as it was before the kept pool: threads started for the call.
fn on_threads_started_per_call(threads: usize, pieces: usize, job: impl Fn(usize) + Sync) {
    let next = AtomicUsize::new(0);
    let worker = || {
        loop {
            let piece = next.fetch_add(1, Ordering::Relaxed);
            if piece >= pieces {
                break;
            }
            job(piece);
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(worker);
        }
        worker();
    });
}

fn dispatch(c: &mut Criterion) {
    let data: Vec<f32> = (0..PIECES * PIECE_LEN).map(|i| (i % 7) as f32).collect();
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let job = |p: usize| {
        black_box(piece(&data, p));
    };
    let mut group = c.benchmark_group(format!("for_each_piece_{PIECES}x{PIECE_LEN}"));
    group.bench_function(format!("kept_pool_{threads}_threads"), |b| {
        cpu::set_threads(threads);
        b.iter(|| cpu::for_each_piece(PIECES, PARALLEL_MIN_WORK, job))
    });
    group.bench_function(format!("threads_per_call_{threads}_threads"), |b| {
        b.iter(|| on_threads_started_per_call(threads, PIECES, job))
    });
    group.bench_function("one_thread", |b| b.iter(|| (0..PIECES).for_each(job)));
    group.finish();
}

criterion_group!(benches, dispatch);
criterion_main!(benches);
