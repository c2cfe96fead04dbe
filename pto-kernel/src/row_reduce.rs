//! Row reductions (a `reduce` over the last axis) as the vector instructions that compute
//! them: the sequence the simulator prices and the Ascend C lowering emits, so the two
//! cannot drift apart.
//!
//! The sequence is the one of the public A2/A3 implementation of row reductions (pto-isa,
//! `include/pto/npu/a2a3/TRowReduceOps.hpp`, `TRowSum.hpp`, `TRowMax.hpp`), which does
//! **not** reduce a long row with one reduce instruction over all of its repeats. With `E`
//! elements per 256-byte repeat, `n = cols / E` whole repeats per row and `r = cols % E`
//! left over:
//!
//! - `cols <= E`: one reduce instruction (`vcadd` / `vcmax` / `vcmin`) of one repeat per
//!   row ([`StepKind::Reduce`], `rows` repeats).
//! - `E < cols < 2E`: the row's first repeat copied into a tmp tile of one repeat per row
//!   ([`StepKind::Copy`]), the rest folded into it with a masked element-wise add / max /
//!   min ([`StepKind::Fold`]), then one reduce per row.
//! - `cols >= 2E`: `n - 1` element-wise folds of the row's repeats into the tmp tile, each
//!   one instruction over all rows (count mode: `rows` repeats), one more masked fold when
//!   `r > 0`, then one reduce per row. (pto-isa's row sum folds the repeats pairwise, a
//!   tree with a tmp of `n / 2` repeats per row, its row max sequentially into one repeat;
//!   both are `n - 1` folds of `rows` repeats each. Here both fold sequentially, into one
//!   repeat per row: the same instructions and cost, the smaller tmp.)
//! - f32 tiles of exactly 64 x 128, 32 x 256, 16 x 512 or 8 x 1024 (per vector core) take
//!   pto-isa's group-reduce path (`ReduceOptFP32_*`: `vcgadd` / `vcgmax`, one sum or max
//!   per 32-byte block, with a few folds between) when the device prices group reduces
//!   ([`RowReduce::group_priced`], [`RowReduce::plan`]'s `group`): 128 repeats of group
//!   reduce, then a few short steps, into a tmp tile of 4 KiB. pto-isa takes that path
//!   only for a column-major result tile (`[rows, 1]` values contiguous, as the measured
//!   flash-attention kernel's): its last group reduce writes the rows' values packed, 8
//!   per 32-byte block. Our `[rows, 1]` UB tile pads each row to whole 32-byte blocks, so
//!   the last group reduce writes the packed values into the tmp tile (past the 2 KiB the
//!   last steps read) and one more instruction, a block broadcast (`vbrcb`,
//!   [`StepKind::Brcb`], `rows / 8` repeats), writes each value into its row's first block
//!   (the whole block holds the value). The Ascend C lowering emits exactly these steps
//!   (`BlockReduceSum` / `Max` / `Min`, the folds, `Brcb`), deciding with this plan.
//!
//! Each step is separated from the next by a barrier of the vector pipe
//! (`pipe_barrier(PIPE_V)` in pto-isa), so a step starts when the previous one's result is
//! ready: the cost model charges every step's latency but the last's to the pipe.
//! A mean is the sum's sequence followed by a scaling of the result ([`StepKind::Scale`]).
//!
//! On a split core the block program's rows are shared by its vector cores
//! ([`DeviceProfile::vector_cores`](crate::device::DeviceProfile::vector_cores)): each runs the sequence on its share of the
//! rows, in parallel, with a repeat of `vector_bytes_per_repeat / vector_cores` bytes.
//!
//! ```
//! use pto_kernel::DType;
//! use pto_kernel::ir::ReduceOp;
//! use pto_kernel::row_reduce::{RowReduce, StepKind};
//! // 64 rows of 256 f32 (4 repeats each): 3 folds over the 64 rows, one reduce per row.
//! let plan = RowReduce::plan(ReduceOp::Sum, DType::F32, 64, 256, 256, false);
//! let steps: Vec<_> = plan.steps.iter().map(|s| (s.kind, s.repeats)).collect();
//! assert_eq!(steps, [(StepKind::Fold, 64), (StepKind::Fold, 64), (StepKind::Fold, 64), (StepKind::Reduce, 64)]);
//! assert_eq!(plan.tmp_bytes, 64 * 256);
//! ```

use crate::device::{CubeVector, DeviceProfile};
use crate::dtype::DType;

use super::ir::{Inst, Program, ReduceOp};

/// Elements of one row of a tile in UB are padded to a multiple of this (32 bytes of f16,
/// 64 of f32), so every row of every dtype starts 32-byte aligned: the Ascend C lowering's
/// layout. A row reduction's `[rows, 1]` result takes one padded row per value, and the
/// mean's scaling ([`StepKind::Scale`]) is one instruction over that padded tile.
pub const UB_ROW_ALIGN_ELEMS: usize = 16;

/// The most repeats one instruction in normal (masked) mode takes; pto-isa splits the
/// rows of a masked step into chunks of it.
pub const REPEAT_MAX: usize = 255;

/// The f32 tile shapes (rows, cols per vector core) that pto-isa reduces with group
/// reduces (`TryOptimizeFP32Reduce`).
pub const GROUP_SHAPES: [(usize, usize); 4] = [(64, 128), (32, 256), (16, 512), (8, 1024)];

/// Bytes of the tmp tile of the group-reduce path: every special shape's first group
/// reduce writes 128 repeats x 8 blocks = 1024 f32.
pub const GROUP_TMP_BYTES: usize = 4096;

/// Where the group path's last group reduce writes its packed result, in f32 elements
/// into the tmp tile: past the at most 512 values (64 rows x 8) its last steps read, so
/// the block broadcast ([`StepKind::Brcb`]) reads a source apart from everything else
/// (`vbrcb` takes no overlap), still inside [`GROUP_TMP_BYTES`].
pub const GROUP_PACKED_AT: usize = 512;

/// What one step of a row reduction does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StepKind {
    /// An element-wise add / max / min of two repeats per row (`vadd` / `vmax` / `vmin`).
    Fold,
    /// A copy of one repeat per row into the tmp tile, UB to UB (`copy_ubuf_to_ubuf`).
    Copy,
    /// A reduce of each repeat to one value (`vcadd` / `vcmax` / `vcmin`).
    Reduce,
    /// A reduce of each 32-byte block of a repeat to one value (`vcgadd` / `vcgmax` /
    /// `vcgmin`).
    GroupReduce,
    /// A broadcast of each of 8 packed values to one 32-byte block (`vbrcb`): the group
    /// path's last step, from its packed result to the first block of each row of the
    /// `[rows, 1]` tile (its rows padded to whole blocks).
    Brcb,
    /// The mean's scaling of the result by `1 / cols` (`vmuls`), over the padded result
    /// tile (one row of [`UB_ROW_ALIGN_ELEMS`] elements per value).
    Scale,
}

/// One instruction of a row reduction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// What it does.
    pub kind: StepKind,
    /// Its repeats of 256 bytes (one per row for the folds, copies and reduces).
    pub repeats: usize,
}

/// The instructions of one row reduction on one vector core.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowReduce {
    /// The reduction.
    pub op: ReduceOp,
    /// The element type.
    pub dtype: DType,
    /// Rows one vector core reduces.
    pub rows: usize,
    /// Elements per row.
    pub cols: usize,
    /// Elements per repeat.
    pub elems_per_repeat: usize,
    /// Whether it takes pto-isa's group-reduce path.
    pub group: bool,
    /// The instructions, in order, a barrier of the vector pipe between each two.
    pub steps: Vec<Step>,
    /// Bytes of the tmp tile it needs in UB (0 when the row is one repeat or less).
    pub tmp_bytes: usize,
}

impl RowReduce {
    /// The instructions of reducing `rows` rows of `cols` elements of `dtype` with repeats
    /// of `repeat_bytes` bytes; `group` allows the group-reduce path for the f32 shapes of
    /// [`GROUP_SHAPES`] (only with 256-byte repeats, as pto-isa's shapes assume).
    pub fn plan(
        op: ReduceOp,
        dtype: DType,
        rows: usize,
        cols: usize,
        repeat_bytes: usize,
        group: bool,
    ) -> RowReduce {
        let rows = rows.max(1);
        let cols = cols.max(1);
        let e = (repeat_bytes / dtype.size_bytes().max(1)).max(1);
        let mut steps = Vec::new();
        let masked = |kind: StepKind, steps: &mut Vec<Step>| {
            let mut left = rows;
            while left > 0 {
                let repeats = left.min(REPEAT_MAX);
                steps.push(Step { kind, repeats });
                left -= repeats;
            }
        };
        let step = |kind, repeats| Step { kind, repeats };
        let group = group && Self::group_shape(dtype, rows, cols, repeat_bytes);
        let tmp_bytes;
        if group {
            use StepKind::{Fold, GroupReduce};
            let r = rows;
            steps.push(step(GroupReduce, 128));
            // pto-isa's steps after the first, the last a group reduce of `r / 8` repeats
            // (8 rows of 8 values each) into the packed result.
            match cols {
                128 => steps.extend([step(Fold, r / 8), step(GroupReduce, r / 8)]),
                256 => steps.extend([
                    step(Fold, r / 4),
                    step(Fold, r / 8),
                    step(GroupReduce, r / 8),
                ]),
                512 => steps.extend([step(GroupReduce, r), step(GroupReduce, r / 8)]),
                _ => steps.extend([
                    step(GroupReduce, r * 2),
                    step(Fold, r / 8),
                    step(GroupReduce, r / 8),
                ]),
            }
            // The packed result to each row's first block.
            steps.push(step(StepKind::Brcb, r / 8));
            tmp_bytes = GROUP_TMP_BYTES;
        } else if cols <= e {
            if cols == e {
                steps.push(step(StepKind::Reduce, rows));
            } else {
                masked(StepKind::Reduce, &mut steps);
            }
            tmp_bytes = 0;
        } else {
            let whole = cols / e;
            let remain = cols % e;
            if whole == 1 {
                steps.push(step(StepKind::Copy, rows));
            }
            for _ in 1..whole {
                steps.push(step(StepKind::Fold, rows));
            }
            if remain > 0 {
                masked(StepKind::Fold, &mut steps);
            }
            steps.push(step(StepKind::Reduce, rows));
            tmp_bytes = rows * e * dtype.size_bytes();
        }
        if op == ReduceOp::Mean {
            // One `Muls` over the padded result tile: a row of [`UB_ROW_ALIGN_ELEMS`]
            // elements per value.
            let bytes = rows * UB_ROW_ALIGN_ELEMS * dtype.size_bytes();
            steps.push(step(StepKind::Scale, bytes.div_ceil(repeat_bytes.max(1))));
        }
        RowReduce {
            op,
            dtype,
            rows,
            cols,
            elems_per_repeat: e,
            group,
            steps,
            tmp_bytes,
        }
    }

    /// Whether `rows` x `cols` of `dtype` with repeats of `repeat_bytes` is one of
    /// pto-isa's group-reduce shapes ([`GROUP_SHAPES`], f32, 256-byte repeats): the shape
    /// half of the rule [`RowReduce::plan`] applies (the other half: the device prices
    /// group reduces, [`RowReduce::group_priced`]).
    pub fn group_shape(dtype: DType, rows: usize, cols: usize, repeat_bytes: usize) -> bool {
        dtype == DType::F32 && repeat_bytes == 256 && GROUP_SHAPES.contains(&(rows, cols))
    }

    /// Whether `profile` prices the group reduce of `op` on `dtype` (its pipe model has
    /// `group_reduce_sum` / `_max` / `_min`): the device half of the group path's rule, for
    /// [`RowReduce::of`] and the Ascend C lowering alike.
    pub fn group_priced(profile: &DeviceProfile, op: ReduceOp, dtype: DType) -> bool {
        profile
            .pipe_model
            .as_ref()
            .is_some_and(|m| m.vector_op(group_reduce_name(op), dtype).is_some())
    }

    /// The row reduction `inst` is on `profile`, per vector core: `None` unless `inst` is
    /// a `reduce` over the last axis of a tile of `program`. The rows are the product of
    /// the tile's other axes (1 for a rank-1 tile), shared by the vector cores of a split
    /// core; the group-reduce path is taken where the profile's pipe model prices group
    /// reduces of the reduction (`group_reduce_sum` / `_max` / `_min`).
    pub fn of(program: &Program, inst: &Inst, profile: &DeviceProfile) -> Option<RowReduce> {
        let Inst::Reduce { op, src, axis, .. } = inst else {
            return None;
        };
        let ty = program.tile(*src)?;
        let rank = ty.shape.len();
        if rank == 0 || *axis + 1 != rank {
            return None;
        }
        let cols = ty.shape[rank - 1];
        let rows: usize = ty.shape[..rank - 1].iter().product();
        let cores = match profile.cube_vector {
            CubeVector::Split => profile.vector_cores.max(1) as usize,
            CubeVector::Coupled => 1,
        };
        let repeat_bytes = (profile.vector_bytes_per_repeat / cores as f64).round() as usize;
        let group = Self::group_priced(profile, *op, ty.dtype);
        Some(RowReduce::plan(
            *op,
            ty.dtype,
            rows.div_ceil(cores),
            cols,
            repeat_bytes,
            group,
        ))
    }

    /// The name of `kind`'s instruction in a pipe model's table
    /// ([`crate::device::PipeModel::vector_ops`]) for this reduction: `add` / `max` /
    /// `min` for a fold, `ub_copy`, `reduce_sum` / `reduce_max` / `reduce_min`,
    /// `group_reduce_sum` / `_max` / `_min`, `brcb`, `mul` for the mean's scaling.
    pub fn step_name(&self, kind: StepKind) -> &'static str {
        let op = self.op;
        match kind {
            StepKind::Fold => match op {
                ReduceOp::Sum | ReduceOp::Mean => "add",
                ReduceOp::Max => "max",
                ReduceOp::Min => "min",
            },
            StepKind::Copy => "ub_copy",
            StepKind::Reduce => match op {
                ReduceOp::Sum | ReduceOp::Mean => "reduce_sum",
                ReduceOp::Max => "reduce_max",
                ReduceOp::Min => "reduce_min",
            },
            StepKind::GroupReduce => group_reduce_name(op),
            StepKind::Brcb => "brcb",
            StepKind::Scale => "mul",
        }
    }
}

/// The pipe-model name of the group reduce of `op`.
fn group_reduce_name(op: ReduceOp) -> &'static str {
    match op {
        ReduceOp::Sum | ReduceOp::Mean => "group_reduce_sum",
        ReduceOp::Max => "group_reduce_max",
        ReduceOp::Min => "group_reduce_min",
    }
}

// The step names a pipe model's table may price are part of the table's vocabulary, which
// the device profile checks a profile's `vector_ops` against: defined there, named here too.
pub use crate::device::ROW_REDUCE_STEP_NAMES as STEP_NAMES;

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(plan: &RowReduce) -> Vec<(StepKind, usize)> {
        plan.steps.iter().map(|s| (s.kind, s.repeats)).collect()
    }

    #[test]
    fn the_general_path_by_row_length() {
        use StepKind::*;
        let p = |dtype, rows, cols| RowReduce::plan(ReduceOp::Max, dtype, rows, cols, 256, false);
        // One element, less than a repeat, exactly one (f16: 128 per repeat).
        assert_eq!(kinds(&p(DType::F16, 3, 1)), [(Reduce, 3)]);
        assert_eq!(kinds(&p(DType::F16, 3, 100)), [(Reduce, 3)]);
        assert_eq!(kinds(&p(DType::F16, 3, 128)), [(Reduce, 3)]);
        assert_eq!(p(DType::F16, 3, 128).tmp_bytes, 0);
        // One and a half repeats: copy, masked fold, reduce.
        assert_eq!(
            kinds(&p(DType::F16, 3, 192)),
            [(Copy, 3), (Fold, 3), (Reduce, 3)]
        );
        assert_eq!(p(DType::F16, 3, 192).tmp_bytes, 3 * 256);
        // 2.5 repeats of f32 (64 per repeat): one fold, one masked fold, reduce.
        assert_eq!(
            kinds(&p(DType::F32, 2, 160)),
            [(Fold, 2), (Fold, 2), (Reduce, 2)]
        );
        // Many repeats and more rows than one masked instruction takes.
        assert_eq!(
            kinds(&p(DType::F32, 300, 200)),
            [
                (Fold, 300),
                (Fold, 300),
                (Fold, 255),
                (Fold, 45),
                (Reduce, 300)
            ]
        );
        // A mean scales the result: 64 padded rows of 16 f32 are 16 repeats (f16: 8).
        let mean = RowReduce::plan(ReduceOp::Mean, DType::F32, 64, 64, 256, false);
        assert_eq!(kinds(&mean), [(Reduce, 64), (Scale, 16)]);
        let mean = RowReduce::plan(ReduceOp::Mean, DType::F16, 64, 64, 256, false);
        assert_eq!(kinds(&mean), [(Reduce, 64), (Scale, 8)]);
    }

    #[test]
    fn the_group_path_only_for_its_f32_shapes() {
        use StepKind::*;
        let p = |dtype, rows, cols| RowReduce::plan(ReduceOp::Sum, dtype, rows, cols, 256, true);
        assert_eq!(
            kinds(&p(DType::F32, 64, 128)),
            [(GroupReduce, 128), (Fold, 8), (GroupReduce, 8), (Brcb, 8)]
        );
        assert_eq!(
            kinds(&p(DType::F32, 32, 256)),
            [
                (GroupReduce, 128),
                (Fold, 8),
                (Fold, 4),
                (GroupReduce, 4),
                (Brcb, 4)
            ]
        );
        assert_eq!(
            kinds(&p(DType::F32, 16, 512)),
            [
                (GroupReduce, 128),
                (GroupReduce, 16),
                (GroupReduce, 2),
                (Brcb, 2)
            ]
        );
        assert_eq!(
            kinds(&p(DType::F32, 8, 1024)),
            [
                (GroupReduce, 128),
                (GroupReduce, 16),
                (Fold, 1),
                (GroupReduce, 1),
                (Brcb, 1)
            ]
        );
        assert_eq!(p(DType::F32, 64, 128).tmp_bytes, GROUP_TMP_BYTES);
        // Not for f16, another shape, or a device without group reduces.
        assert!(!p(DType::F16, 64, 128).group);
        assert!(!p(DType::F32, 128, 128).group);
        assert!(!RowReduce::plan(ReduceOp::Sum, DType::F32, 64, 128, 256, false).group);
    }
}
