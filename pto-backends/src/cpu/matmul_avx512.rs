//! `y = a @ b` in f32 with AVX-512, reading `b` where it lies: no packing.
//!
//! A model's matrix products are mostly a few rows of activations (`a`, m x depth) times a
//! large weight (`b`, depth x n, row-major). General GEMM libraries copy (pack) panels of
//! `b` into their microkernel's layout on every call; with few rows that copy is a large
//! share of the work, since each element of `b` is then used only m times. Here the
//! microkernel reads `ROWS` rows of `a` (broadcast) and `COLUMNS` contiguous columns of a
//! row of `b` per step of the depth, accumulating a `ROWS` x `COLUMNS` tile of `y` in
//! registers. The depth is walked in blocks of `DEPTH_BLOCK`, so a `DEPTH_BLOCK` x
//! `COLUMNS` strip of `b` (16 KiB) stays in L1 while every row tile of `a` passes over it,
//! and rows in blocks of `ROW_BLOCK`, so the `ROW_BLOCK` x `DEPTH_BLOCK` block of `a` stays
//! in L2 across the columns. A strip's rows are a whole row of `b` apart (44 KiB for
//! 11008 columns), too far for the hardware's prefetchers, so the first row tile of each
//! strip fetches the strip `PREFETCH_AHEAD` strips later in software: with few rows the
//! product waits on memory otherwise.
//!
//! Each element of `y` is one sum over the depth in increasing order (a chain of fused
//! multiply-adds, continued from block to block through `y`), so the result does not
//! depend on how the columns are split over threads.

// The kernel is made of `core::arch` intrinsics and raw pointers; every `unsafe` block
// says why it holds.
#![allow(unsafe_code)]

use core::arch::x86_64::{
    __mmask16, _MM_HINT_T0, _mm_prefetch, _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_mask_storeu_ps,
    _mm512_maskz_loadu_ps, _mm512_set1_ps, _mm512_setzero_ps, _mm512_storeu_ps,
};
use core::ops::Range;

/// f32 lanes of one AVX-512 register.
const LANES: usize = 16;
/// Rows of `y` in a register tile.
const ROWS: usize = 8;
/// Columns of `y` in a register tile: two registers.
const COLUMNS: usize = 2 * LANES;
/// Depth steps per block: a `DEPTH_BLOCK` x `COLUMNS` strip of `b` is 16 KiB (half of L1).
const DEPTH_BLOCK: usize = 128;
/// Rows of `a` per block: a `ROW_BLOCK` x `DEPTH_BLOCK` block of `a` is 64 KiB (in L2).
const ROW_BLOCK: usize = 128;

/// How many strips of `b` ahead of the one computed the first row tile of a strip
/// fetches. Measured on the 7B MLP block's products (32 rows, AMD EPYC, CPU time under
/// load): one strip ahead 51 / 57 ms (4096 -> 11008 / 11008 -> 4096), two 40-46 / 49-51,
/// four 45 / 53, eight 48-50 / 60-64; none 68 / 76; the `gemm` crate 54-60 / 61-69.
const PREFETCH_AHEAD: usize = 2;

/// Whether this CPU has the instructions of [`matmul_columns`].
pub(super) fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx512f")
}

/// The shared output of [`matmul_columns`]: threads write disjoint columns of it.
#[derive(Clone, Copy)]
pub(super) struct Output {
    /// The first element of the m x n row-major output.
    pub(super) ptr: *mut f32,
    /// Its elements: m * n.
    pub(super) len: usize,
}

// SAFETY: the address of one product's output, which outlives the scoped threads that use
// it; the callers give each thread its own columns (see `matmul_columns`).
unsafe impl Send for Output {}
// SAFETY: as for `Send`: threads write disjoint columns, and nothing reads them meanwhile.
unsafe impl Sync for Output {}

/// `y[:, columns] = a @ b[:, columns]`: `a` m x depth, `b` depth x n and `y` m x n, all
/// row-major.
///
/// # Panics
///
/// When the CPU lacks AVX-512F ([`available`]), when the slices' lengths are not those
/// of the dims, or when `columns` is not within `0..n`: the callers check all of these
/// before, so a panic here is a bug of theirs, not of their input.
///
/// # Safety
///
/// `y` points to `y.len` writable f32 that nothing else reads or writes in `columns` of
/// each row during the call.
pub(super) unsafe fn matmul_columns(
    a: &[f32],
    b: &[f32],
    y: Output,
    (m, depth, n): (usize, usize, usize),
    columns: Range<usize>,
) {
    assert!(available(), "matmul_columns runs on AVX-512F only");
    assert!(
        a.len() == m * depth && b.len() == depth * n && y.len == m * n,
        "matmul_columns of [{m}, {depth}] @ [{depth}, {n}] was given {}, {} and {} elements",
        a.len(),
        b.len(),
        y.len
    );
    assert!(
        columns.start <= columns.end && columns.end <= n,
        "columns {columns:?} of {n}"
    );
    if m == 0 || columns.is_empty() {
        return;
    }
    if depth == 0 {
        for row in 0..m {
            for column in columns.clone() {
                // SAFETY: row < m and column < n, so the element is inside `y`, in the
                // columns the caller gave this call.
                unsafe { *y.ptr.add(row * n + column) = 0.0 };
            }
        }
        return;
    }
    // SAFETY: AVX-512F is present (checked above); the dims match the slices and `y`,
    // and `columns` lies within `0..n` (checked above); the caller gives `columns` of `y`
    // to this call.
    unsafe { blocks(a.as_ptr(), b.as_ptr(), y.ptr, (m, depth, n), columns) }
}

/// [`matmul_columns`] once checked: walks the blocks and calls the register tiles.
///
/// # Safety
///
/// AVX-512F is present; `a`, `b`, `y` point to m x depth, depth x n and m x n row-major
/// f32 (readable, readable, writable), with depth, m and `columns` non-empty and
/// `columns.end <= n`; the call has `columns` of `y` to itself.
#[target_feature(enable = "avx512f")]
unsafe fn blocks(
    a: *const f32,
    b: *const f32,
    y: *mut f32,
    (m, depth, n): (usize, usize, usize),
    columns: Range<usize>,
) {
    let strips = (columns.end - columns.start).div_ceil(COLUMNS);
    // The strip `PREFETCH_AHEAD` strips after `strip` of the depth block from `first_step`, in the
    // order they are computed (the strips of a block, then those of the next block).
    let ahead = |first_step: usize, strip: usize| -> *const f32 {
        let later = strip + PREFETCH_AHEAD;
        let step = first_step + later / strips * DEPTH_BLOCK;
        let column = columns.start + later % strips * COLUMNS;
        b.wrapping_add(step * n + column)
    };
    let mut first_row = 0;
    while first_row < m {
        let rows = ROW_BLOCK.min(m - first_row);
        let mut first_step = 0;
        while first_step < depth {
            let steps = DEPTH_BLOCK.min(depth - first_step);
            for strip in 0..strips {
                let column = columns.start + strip * COLUMNS;
                let width = COLUMNS.min(columns.end - column);
                let mut row = first_row;
                while row < first_row + rows {
                    let height = ROWS.min(first_row + rows - row);
                    let tile = Tile {
                        // SAFETY: row < m and first_step < depth: inside `a`.
                        a: unsafe { a.add(row * depth + first_step) },
                        a_stride: depth,
                        // SAFETY: first_step < depth and column < n: inside `b`.
                        b: unsafe { b.add(first_step * n + column) },
                        b_stride: n,
                        // SAFETY: row < m and column < n: inside `y`.
                        y: unsafe { y.add(row * n + column) },
                        y_stride: n,
                        steps,
                        accumulate: first_step > 0,
                        prefetch: (row == first_row).then(|| ahead(first_step, strip)),
                    };
                    // SAFETY: the tile's `height` rows, `width` columns and `steps` depth
                    // steps lie inside the operands (row + height <= m, column + width
                    // <= columns.end <= n, first_step + steps <= depth), and its columns
                    // of `y` are this call's.
                    unsafe { tile.run(height, width) };
                    row += height;
                }
            }
            first_step += steps;
        }
        first_row += rows;
    }
}

/// One register tile of `y`: up to `ROWS` x `COLUMNS` elements, over `steps` of the depth.
struct Tile {
    /// `a` at the tile's first row and first depth step.
    a: *const f32,
    a_stride: usize,
    /// `b` at the first depth step and the tile's first column.
    b: *const f32,
    b_stride: usize,
    /// `y` at the tile's first row and column.
    y: *mut f32,
    y_stride: usize,
    steps: usize,
    /// Add to the sums already in `y` (a later block of the depth) instead of starting
    /// from zero.
    accumulate: bool,
    /// A strip of `b` to fetch into the cache while this one is computed (`steps` rows
    /// of `COLUMNS` columns from there, which may lie past the end of `b`: a prefetch
    /// never faults). The first row tile of a strip does it for the later strips, as
    /// the hardware's prefetchers do not follow rows this far apart.
    prefetch: Option<*const f32>,
}

impl Tile {
    /// Runs the tile on `height` (1..=ROWS) rows and `width` (1..=COLUMNS) columns.
    ///
    /// # Safety
    ///
    /// AVX-512F is present; `height` rows of `a` and `y` and `steps` rows of `b` from the
    /// tile's pointers, `width` columns wide (`steps` for `a`), are inside the operands, and
    /// the `y` elements are the caller's alone.
    #[target_feature(enable = "avx512f")]
    unsafe fn run(&self, height: usize, width: usize) {
        let full = width == COLUMNS;
        let lanes = |from: usize| -> __mmask16 {
            let count = width.saturating_sub(from).min(LANES);
            ((1u32 << count) - 1) as __mmask16
        };
        let masks = [lanes(0), lanes(LANES)];
        // SAFETY: the caller's contract, for every height (the match covers 1..=ROWS).
        unsafe {
            match (height, full) {
                (8, true) => self.tile::<8, false>(masks),
                (8, false) => self.tile::<8, true>(masks),
                (7, true) => self.tile::<7, false>(masks),
                (7, false) => self.tile::<7, true>(masks),
                (6, true) => self.tile::<6, false>(masks),
                (6, false) => self.tile::<6, true>(masks),
                (5, true) => self.tile::<5, false>(masks),
                (5, false) => self.tile::<5, true>(masks),
                (4, true) => self.tile::<4, false>(masks),
                (4, false) => self.tile::<4, true>(masks),
                (3, true) => self.tile::<3, false>(masks),
                (3, false) => self.tile::<3, true>(masks),
                (2, true) => self.tile::<2, false>(masks),
                (2, false) => self.tile::<2, true>(masks),
                (_, true) => self.tile::<1, false>(masks),
                (_, false) => self.tile::<1, true>(masks),
            }
        }
    }

    /// The tile with `R` rows; `MASKED`: fewer than `COLUMNS` columns, the lanes of
    /// `masks` (the first register's, the second's).
    ///
    /// # Safety
    ///
    /// As [`Tile::run`], with `R` rows and the columns of `masks`.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn tile<const R: usize, const MASKED: bool>(&self, masks: [__mmask16; 2]) {
        // Pointers to the second register's columns may lie past the end of an operand
        // when its mask is empty, hence `wrapping_add`: masked loads and stores touch only
        // the lanes of their mask (AVX-512 suppresses faults on the others).
        let mut sums = [[_mm512_setzero_ps(); 2]; R];
        if self.accumulate {
            for (row, sums) in sums.iter_mut().enumerate() {
                for (half, sum) in sums.iter_mut().enumerate() {
                    let ptr = self.y.wrapping_add(row * self.y_stride + half * LANES);
                    // SAFETY: unmasked, the 16 lanes are inside `y` (a full tile); masked,
                    // only the mask's lanes are read, and they are inside it.
                    *sum = unsafe {
                        if MASKED {
                            _mm512_maskz_loadu_ps(masks[half], ptr)
                        } else {
                            _mm512_loadu_ps(ptr)
                        }
                    };
                }
            }
        }
        for step in 0..self.steps {
            let b_row = self.b.wrapping_add(step * self.b_stride);
            let b_high = b_row.wrapping_add(LANES);
            if let Some(ahead) = self.prefetch {
                let ahead = ahead.wrapping_add(step * self.b_stride);
                _mm_prefetch::<_MM_HINT_T0>(ahead.cast());
                _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(LANES).cast());
            }
            // SAFETY: as for `y`: step < steps, and the lanes read are inside `b`.
            let b = unsafe {
                if MASKED {
                    [
                        _mm512_maskz_loadu_ps(masks[0], b_row),
                        _mm512_maskz_loadu_ps(masks[1], b_high),
                    ]
                } else {
                    [_mm512_loadu_ps(b_row), _mm512_loadu_ps(b_high)]
                }
            };
            for (row, sums) in sums.iter_mut().enumerate() {
                // SAFETY: row < R <= the tile's height and step < steps: inside `a`.
                let a = _mm512_set1_ps(unsafe { *self.a.add(row * self.a_stride + step) });
                sums[0] = _mm512_fmadd_ps(a, b[0], sums[0]);
                sums[1] = _mm512_fmadd_ps(a, b[1], sums[1]);
            }
        }
        for (row, sums) in sums.iter().enumerate() {
            for (half, &sum) in sums.iter().enumerate() {
                let ptr = self.y.wrapping_add(row * self.y_stride + half * LANES);
                // SAFETY: as for the loads: a full tile's 16 lanes are inside `y`, a
                // masked store writes only the mask's lanes; they are the caller's alone.
                unsafe {
                    if MASKED {
                        _mm512_mask_storeu_ps(ptr, masks[half], sum);
                    } else {
                        _mm512_storeu_ps(ptr, sum);
                    }
                }
            }
        }
    }
}
