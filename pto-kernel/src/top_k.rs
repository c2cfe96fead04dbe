//! Row-wise top-k as the vector unit's sort instructions: the steps the simulator prices
//! for a [`Inst::TopK`](crate::ir::Inst::TopK) and the Ascend C lowering emits.
//!
//! Each row is sorted whole with the Ascend C `Sort<T, true>` (asc-devkit
//! `docs/api/context/Sort.md`, listed for Atlas A2 / A3 and Kirin X90 / 9030): the row,
//! padded to whole blocks of 32 with the lowest value, with the indices `0..` beside it,
//! into `(score, index)` pairs of 8 bytes, descending, equal scores in input order (the
//! lower index first). Inside, that is the `Sort32` of each block of 32 (`Sort32.md`) and
//! merges of up to 4 sorted lists (`MrgSort.md`) until one is left. Then `Extract` splits
//! the first `k` pairs (whole blocks of 32) into values and indices:
//!
//! - `Sort32`: `blocks = ceil(n / 32)` repeats per row, each 32 pairs = 256 bytes;
//! - `ceil(log4(blocks))` merges, each over the row's `blocks` repeats of pairs;
//! - `Extract`: `ceil(k / 32)` repeats per row.
//!
//! Each step is one instruction over all the rows of the tile. No public source gives the
//! sort instructions' throughput: each repeat is priced as a reduce repeat of the profile
//! (`vector_cycles_per_repeat.reduce`, or the pipe model's `topk` entry when it has one),
//! an assumption.
//!
//! ```
//! use pto_kernel::top_k::{TopKPlan, TopKStep};
//! // [8, 1024], k = 8: 32 blocks of 32, merged 32 -> 8 -> 2 -> 1 lists, 1 block split.
//! let plan = TopKPlan::new(8, 1024, 8);
//! assert_eq!(plan.steps, [
//!     (TopKStep::Sort32, 32), (TopKStep::Merge, 32), (TopKStep::Merge, 32),
//!     (TopKStep::Merge, 32), (TopKStep::Extract, 1),
//! ]);
//! assert_eq!(plan.repeats_per_row(), 129);
//! ```

/// One instruction of a top-k.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopKStep {
    /// Sorts each block of 32 elements into `(score, index)` pairs.
    Sort32,
    /// Merges up to 4 sorted lists of pairs.
    Merge,
    /// Splits the first `k` pairs into values and indices.
    Extract,
}

/// The bytes of one `(score, index)` pair.
pub const PAIR_BYTES: usize = 8;

/// Elements sorted by one `Sort32` repeat.
pub const SORT_BLOCK: usize = 32;

/// A row of `row_len` padded to whole blocks of [`SORT_BLOCK`] (at least one).
pub fn padded_row(row_len: usize) -> usize {
    row_len.max(1).next_multiple_of(SORT_BLOCK)
}

/// The steps of a top-k of `k` over rows of `row_len` (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopKPlan {
    /// Rows of the tile.
    pub rows: usize,
    /// Elements per row.
    pub row_len: usize,
    /// Elements kept per row.
    pub k: usize,
    /// Each step with its 256-byte repeats per row.
    pub steps: Vec<(TopKStep, usize)>,
}

impl TopKPlan {
    /// The plan for `rows` rows of `row_len` elements, keeping `k` of each.
    pub fn new(rows: usize, row_len: usize, k: usize) -> TopKPlan {
        let blocks = padded_row(row_len) / SORT_BLOCK;
        let mut steps = vec![(TopKStep::Sort32, blocks)];
        let mut lists = blocks;
        while lists > 1 {
            steps.push((TopKStep::Merge, blocks));
            lists = lists.div_ceil(4);
        }
        steps.push((TopKStep::Extract, k.div_ceil(SORT_BLOCK).max(1)));
        TopKPlan {
            rows,
            row_len,
            k,
            steps,
        }
    }

    /// The repeats of every step, per row.
    pub fn repeats_per_row(&self) -> usize {
        self.steps.iter().map(|(_, r)| r).sum()
    }
}
