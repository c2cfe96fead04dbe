//! The thread knob the fast paths share, and the two ways they split work over it: pieces
//! ([`for_each_piece`]) and chunks of an output ([`for_each_chunk`]).
//!
//! Kernels split large work over [`threads`] threads in fixed pieces (a piece never depends
//! on the thread count), so results are bit-identical whatever the number of threads:
//! [`set_threads`]`(1)` gives the single-threaded runs benchmarks compare against, and the
//! default is every core. The library reads no environment; the command line sets the
//! knob from `PTO_CPU_THREADS`. The pieces run on this thread and on worker threads kept
//! for the whole process (the [`pool`](super::pool)), so an op does not pay for starting
//! threads.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::pool;

/// 0: not set by [`set_threads`] (the environment or the core count decides).
static THREADS: AtomicUsize = AtomicUsize::new(0);

/// Sets the number of threads fast paths use, for the whole process (at least 1).
///
/// ```
/// pto_backends::cpu::set_threads(1);
/// assert_eq!(pto_backends::cpu::threads(), 1);
/// ```
pub fn set_threads(threads: usize) {
    THREADS.store(threads.max(1), Ordering::Relaxed);
}

/// The number of threads fast paths use: what [`set_threads`] set, else every core.
pub fn threads() -> usize {
    match THREADS.load(Ordering::Relaxed) {
        0 => std::thread::available_parallelism().map_or(1, usize::from),
        n => n,
    }
}

/// Work (in multiply-adds or element operations) below which a job stays on one thread:
/// handing parts to the kept worker threads costs some microseconds (waking a thread that
/// waits), and more on a busy machine, so a job must be worth much more than that.
pub const PARALLEL_MIN_WORK: usize = 1 << 18;

/// Rows of `row` elements per piece of a row-wise job: some 16 K elements, at least one row.
pub fn rows_per_piece(row: usize) -> usize {
    ((1 << 14) / row.max(1)).max(1)
}

/// Runs `job(piece)` for every piece in `0..pieces`, on up to [`threads`] threads when
/// `work` (the whole job's) reaches [`PARALLEL_MIN_WORK`]: this one and workers kept for
/// the whole process (started by the first job that needs them, not per call). Pieces are
/// handed out in order from a shared counter; what a piece computes never depends on the
/// thread that runs it, so results do not depend on the number of threads.
pub fn for_each_piece(pieces: usize, work: usize, job: impl Fn(usize) + Sync) {
    let threads = threads().min(pieces);
    if threads <= 1 || work < PARALLEL_MIN_WORK {
        (0..pieces).for_each(job);
        return;
    }
    let next = AtomicUsize::new(0);
    pool::run(threads - 1, &|_| {
        loop {
            let piece = next.fetch_add(1, Ordering::Relaxed);
            if piece >= pieces {
                break;
            }
            job(piece);
        }
    });
}

/// Runs `job(index, chunk)` for each `chunk_len`-element chunk of `data` (the last may be
/// shorter), on up to [`threads`] threads (as [`for_each_piece`]) when `work` reaches
/// [`PARALLEL_MIN_WORK`]. The chunks are fixed by `chunk_len` alone, so results do not
/// depend on the number of threads.
pub fn for_each_chunk<T: Send>(
    data: &mut [T],
    chunk_len: usize,
    work: usize,
    job: impl Fn(usize, &mut [T]) + Sync,
) {
    let chunk_len = chunk_len.max(1);
    let pieces = data.len().div_ceil(chunk_len);
    let threads = threads().min(pieces);
    if threads <= 1 || work < PARALLEL_MIN_WORK {
        data.chunks_mut(chunk_len)
            .enumerate()
            .for_each(|(i, c)| job(i, c));
        return;
    }
    // Contiguous runs of chunks per thread, balanced to within one chunk: part `p` is
    // chunks `p * per_thread..`, run by whichever thread takes part `p`.
    let per_thread = pieces.div_ceil(threads);
    let parts: Vec<std::sync::Mutex<Option<&mut [T]>>> = data
        .chunks_mut(per_thread * chunk_len)
        .map(|part| std::sync::Mutex::new(Some(part)))
        .collect();
    pool::run(parts.len() - 1, &|p| {
        let part = parts[p]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(part) = part {
            part.chunks_mut(chunk_len)
                .enumerate()
                .for_each(|(i, c)| job(p * per_thread + i, c));
        }
    });
}
