#!/usr/bin/env python3
"""Median latency of an ONNX model in ONNX Runtime, as JSON.

Usage: scripts/ort_bench.py MODEL.onnx INPUTS_DIR ITERATIONS [THREADS [CLOCK]]

INPUTS_DIR holds one `<input name>.npy` per graph input (the layout the pto-tests ONNX
tests write). Runs one warm-up, then ITERATIONS timed runs on the CPUExecutionProvider with
THREADS intra-op threads (default 1) and one inter-op thread, and prints
{"median_ms": ..., "total_ms": ..., "runs": ITERATIONS}; total_ms is the sum of the timed
runs (what a benchmark harness timing ITERATIONS calls wants). CLOCK is `wall` (the
default) or `cpu`: the CPU time of the calling thread, which on a machine shared with other
work measures a one-thread run without the time it waited for a core.
"""

import json
import os
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort


def main(argv):
    if len(argv) not in (4, 5, 6):
        sys.exit(f"usage: {argv[0]} MODEL.onnx INPUTS_DIR ITERATIONS [THREADS [CLOCK]]")
    model, inputs_dir, iterations = argv[1], argv[2], int(argv[3])
    threads = int(argv[4]) if len(argv) >= 5 else 1
    clock = argv[5] if len(argv) == 6 else "wall"
    if clock not in ("wall", "cpu"):
        sys.exit(f"CLOCK is `wall` or `cpu`, got `{clock}`")
    now = time.perf_counter if clock == "wall" else time.thread_time
    if iterations < 1:
        sys.exit(f"ITERATIONS must be at least 1, got {iterations}")
    if threads < 1:
        sys.exit(f"THREADS must be at least 1, got {threads}")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    feeds = {}
    for arg in session.get_inputs():
        path = os.path.join(inputs_dir, arg.name + ".npy")
        if not os.path.exists(path):
            sys.exit(f"input `{arg.name}` of {model}: {path} does not exist")
        feeds[arg.name] = np.load(path)
    session.run(None, feeds)
    times_ms = []
    for _ in range(iterations):
        start = now()
        session.run(None, feeds)
        times_ms.append((now() - start) * 1e3)
    print(json.dumps({
        "median_ms": statistics.median(times_ms),
        "total_ms": sum(times_ms),
        "runs": iterations,
    }))


if __name__ == "__main__":
    main(sys.argv)
