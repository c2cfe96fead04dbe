//! After its first run, a compiled model on the CPU allocates per run only what it hands
//! back (the graph outputs, the timing table), not per node: fast paths write into the
//! buffers of the liveness plan, kept from run to run. The one exception is the `gemm`
//! crate, which allocates its packing buffer inside each matrix product it runs: on a CPU
//! with AVX-512 the small products of a row-major `b` (all of them here) run on
//! `pto_backends::cpu::MatmulKernel::Avx512` instead, which allocates nothing. Counted with a
//! global allocator that counts the allocations of the test's own thread (this file holds
//! one test, so no other test runs beside it).

// A global allocator is an `unsafe impl`; it only forwards to the system allocator.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use pto_backends::compiler::compile;
use pto_backends::cpu::{self, MatmulKernel};
use pto_op::ops::{add, matmul, mul, rms_norm, silu, softmax, transpose};
use pto_op::{DType, Graph, Model, Shape, Tensor};

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<usize> = const { Cell::new(0) };
}

fn count_one() {
    // `try_with`: thread-locals may already be gone while a thread exits.
    let _ = COUNTING.try_with(|on| {
        if on.get() {
            let _ = COUNT.try_with(|c| c.set(c.get() + 1));
        }
    });
}

// SAFETY: every call forwards to `System` with the caller's arguments; counting touches
// only `const`-initialized thread-locals, which do not allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Allocations `f` makes on this thread.
fn allocations(f: impl FnOnce()) -> usize {
    COUNT.with(|c| c.set(0));
    COUNTING.with(|on| on.set(true));
    f();
    COUNTING.with(|on| on.set(false));
    COUNT.with(Cell::get)
}

/// `layers` attention-and-MLP blocks of std ops, 12 nodes each (5 of them matrix
/// products), every one with a fast path.
fn blocks(layers: usize) -> Model {
    let (seq, width) = (16, 32);
    let graph = Graph::new();
    let weight = |name: String, dims: [usize; 2], seed| {
        graph
            .weight(name, Tensor::random(dims, DType::F32, seed))
            .expect("a new weight name")
    };
    let mut h = graph.input("x", Shape::from([seq, width]), DType::F32);
    for layer in 0..layers as u64 {
        let gamma = graph
            .weight(
                format!("gamma{layer}"),
                Tensor::random([width], DType::F32, 10 * layer),
            )
            .expect("a new weight name");
        let w_q = weight(format!("w_q{layer}"), [width, width], 10 * layer + 1);
        let w_up = weight(format!("w_up{layer}"), [width, 2 * width], 10 * layer + 2);
        let w_down = weight(format!("w_down{layer}"), [2 * width, width], 10 * layer + 3);
        let mm = |a: &pto_op::Value, b: &pto_op::Value| {
            matmul::apply(a, b, &matmul::Params {}).expect("valid shapes")
        };
        let n = rms_norm::apply(&h, &gamma, &rms_norm::Params { eps: 1e-6 }).expect("valid");
        let q = mm(&n, &w_q);
        let k_t = transpose::apply(&n, &transpose::Params { perm: vec![1, 0] }).expect("valid");
        let probs = softmax::apply(&mm(&q, &k_t), &softmax::Params { axis: -1 }).expect("valid");
        let attended = add::apply(&h, &mm(&probs, &n), &add::Params {}).expect("valid");
        let up = mm(&attended, &w_up);
        let gated = mul::apply(
            &silu::apply(&up, &silu::Params {}).expect("valid"),
            &up,
            &mul::Params {},
        )
        .expect("valid");
        h = add::apply(&attended, &mm(&gated, &w_down), &add::Params {}).expect("valid");
    }
    graph.output(&h);
    graph.to_model("blocks").expect("std ops are linked")
}

#[test]
fn runs_after_the_first_allocate_the_same_few_times_whatever_the_number_of_nodes() {
    // One thread: spawning threads allocates (their stacks, their names), which is not
    // what this test counts.
    cpu::set_threads(1);
    let mut per_run = Vec::new();
    for layers in [1, 4] {
        let compiled = compile(&blocks(layers), "cpu").expect("compiles");
        assert!(
            compiled.report().nodes.iter().all(|n| n.fast_path),
            "every node has a fast path:\n{}",
            compiled.report()
        );
        let inputs = compiled.random_inputs(0);
        let first = allocations(|| {
            compiled.run(&inputs).expect("runs");
        });
        let later: Vec<usize> = (0..3)
            .map(|_| {
                allocations(|| {
                    compiled.run(&inputs).expect("runs");
                })
            })
            .collect();
        assert!(
            later.iter().all(|&n| n == later[0]),
            "{layers} layer(s): runs after the first allocate as often as each other: {later:?}"
        );
        assert!(
            later[0] < first,
            "{layers} layer(s): the first run allocates the buffers ({first}), later runs \
             reuse them ({})",
            later[0]
        );
        let matmuls = compiled
            .report()
            .nodes
            .iter()
            .filter(|n| n.op == matmul::NAME)
            .count();
        per_run.push((compiled.report().nodes.len(), matmuls, later[0]));
    }
    let [
        (nodes_1, matmuls_1, allocs_1),
        (nodes_4, matmuls_4, allocs_4),
    ] = per_run[..]
    else {
        unreachable!("two models")
    };
    assert!(nodes_4 >= 4 * nodes_1, "{nodes_1} and {nodes_4} nodes");
    // The `gemm` crate allocates its packing buffer once per product; the AVX-512 kernel
    // nothing.
    // All of them 16 x 32 @ 32 x 64 or smaller, with a row-major `b`.
    let per_matmul = match MatmulKernel::for_product(cpu::Layout::RowMajor, (16, 32, 64)) {
        MatmulKernel::GemmCrate => 1,
        _ => 0,
    };
    // Beyond that, the values table, the timings, the output list and the output tensor:
    // a handful, the same for 12 nodes as for 48.
    let runtime = |allocs: usize, matmuls: usize| {
        allocs.checked_sub(per_matmul * matmuls).unwrap_or_else(|| {
            panic!("{allocs} allocations per run, fewer than {per_matmul} per matrix product")
        })
    };
    let (runtime_1, runtime_4) = (runtime(allocs_1, matmuls_1), runtime(allocs_4, matmuls_4));
    assert_eq!(
        runtime_1, runtime_4,
        "allocations per run besides the gemm crate's: {runtime_1} for {nodes_1} nodes, \
         {runtime_4} for {nodes_4} nodes"
    );
    assert!(
        runtime_1 <= 6,
        "{runtime_1} allocations per run besides the gemm crate's"
    );
}
