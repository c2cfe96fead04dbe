//! Row-wise top-k as the vector unit's sort instructions: the steps the simulator prices
//! for a [`Inst::TopK`](crate::ir::Inst::TopK).
//!
//! The steps are those of the Ascend C sort APIs (asc-devkit, `docs/api/context/Sort32.md`
//! and `MrgSort.md`): `Sort32` sorts each block of 32 elements of a row, descending, into
//! `(score, index)` pairs of 8 bytes (the index in the high 4 bytes, for f16 and f32
//! alike), equal scores keeping their order (the lower index first); `MrgSort` merges up
//! to 4 sorted lists into one; a last step (`Extract`) splits the first `k` pairs into the
//! values and the indices. A top-k needs only the first `k` pairs of each list, so every
//! merge keeps `min(k, merged length)` pairs of each merged group:
//!
//! - `Sort32`: `ceil(n / 32)` repeats per row (a row padded to whole blocks of 32 with the
//!   lowest value), each 32 pairs = 256 bytes;
//! - merges while more than one list is left: `lists` lists of `len` pairs, 4 at a time,
//!   `ceil(lists * len * 8 / 256)` repeats per row; after it `ceil(lists / 4)` lists of
//!   `min(k, 4 * len)` pairs (the first lists are `min(k, 32)` pairs);
//! - `Extract`: `ceil(k * 8 / 256)` repeats per row.
//!
//! Each step is one instruction over all the rows of the tile. No public source gives the
//! sort instructions' throughput: each repeat is priced as a reduce repeat of the profile
//! (`vector_cycles_per_repeat.reduce`, or the pipe model's `topk` entry when it has one),
//! an assumption.
//!
//! ```
//! use pto_kernel::top_k::{TopKPlan, TopKStep};
//! // [8, 1024], k = 8: 32 blocks of 32, merged 32 -> 8 -> 2 -> 1 lists of 8 pairs.
//! let plan = TopKPlan::new(8, 1024, 8);
//! assert_eq!(plan.steps, [
//!     (TopKStep::Sort32, 32), (TopKStep::Merge, 8), (TopKStep::Merge, 2),
//!     (TopKStep::Merge, 1), (TopKStep::Extract, 1),
//! ]);
//! assert_eq!(plan.repeats_per_row(), 44);
//! ```

/// One instruction of a top-k.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopKStep {
    /// Sorts each block of 32 elements into `(score, index)` pairs.
    Sort32,
    /// Merges up to 4 sorted lists, keeping the first `k` pairs.
    Merge,
    /// Splits the first `k` pairs into values and indices.
    Extract,
}

/// The bytes of one `(score, index)` pair.
pub const PAIR_BYTES: usize = 8;

/// Elements sorted by one `Sort32` repeat.
pub const SORT_BLOCK: usize = 32;

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
        let repeats = |pairs: usize| (pairs * PAIR_BYTES).div_ceil(256).max(1);
        let blocks = row_len.div_ceil(SORT_BLOCK).max(1);
        let mut steps = vec![(TopKStep::Sort32, blocks)];
        let (mut lists, mut len) = (blocks, k.min(SORT_BLOCK));
        while lists > 1 {
            steps.push((TopKStep::Merge, repeats(lists * len)));
            lists = lists.div_ceil(4);
            len = k.min(4 * len);
        }
        steps.push((TopKStep::Extract, repeats(k)));
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
