//! The `gemm` crate's f32 product, one column range of the output at a time: any layout
//! of `b` and any CPU (it packs `b` per call, into a buffer it allocates).

// gemm's entry point takes raw pointers and strides; `gemm_columns` states what its
// callers guarantee.
#![allow(unsafe_code)]

/// An f32 matrix operand of [`gemm_columns`]: its first element and element strides.
#[derive(Clone, Copy)]
pub(super) struct Operand {
    /// The element at row 0, column 0.
    pub(super) ptr: *const f32,
    /// Elements from one row to the next.
    pub(super) rows: isize,
    /// Elements from one column to the next.
    pub(super) cols: isize,
}

/// `y[:, columns] = a @ b[:, columns]` for `a` m x depth, `b` depth x n, `y` the m x n
/// row-major output, with the `gemm` crate on this thread.
///
/// # Safety
///
/// `a` and `b` describe live m x depth and depth x n views; `y` points to m * n writable
/// f32 that nothing else reads or writes in `columns` during the call; `columns` lies
/// within `0..n` and all of m, depth, n are non-zero.
pub(super) unsafe fn gemm_columns(
    m: usize,
    depth: usize,
    n: usize,
    a: Operand,
    b: Operand,
    y: Output,
    columns: core::ops::Range<usize>,
) {
    let width = columns.end.saturating_sub(columns.start);
    if width == 0 {
        return;
    }
    let start = columns.start;
    // gemm's kernels run down contiguous columns of its output and left operand, so the
    // product is passed transposed, y^T = b^T a^T: the rows of a row-major `y` and `b` are
    // then its contiguous columns (measured: the 32 x 4096 @ 4096 x 11008 products of the
    // 7B MLP block run about 10% faster than passed as is; smaller ones the same).
    // SAFETY: the caller's contract: `y` (row stride n, column stride 1) has columns
    // `start..start + width` to itself, and gemm writes only those; offsetting `b` by
    // `start` columns stays inside it. `read_dst = false` with alpha 0 and beta 1
    // computes y = a @ b without reading `y`; no conjugation (real numbers); one thread.
    unsafe {
        gemm::gemm(
            width,
            m,
            depth,
            y.0.add(start),
            n as isize,
            1,
            false,
            b.ptr.offset(start as isize * b.cols),
            b.rows,
            b.cols,
            a.ptr,
            a.rows,
            a.cols,
            0.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

/// The output of [`gemm_columns`]: threads write disjoint columns of it.
#[derive(Clone, Copy)]
pub(super) struct Output(pub(super) *mut f32);

// SAFETY: the pointers are plain addresses of the operands and the output of one product,
// which outlive the scoped threads that use them; the output's columns are split
// between threads (see `gemm_columns`), and the operands are only read.
unsafe impl Send for Output {}
unsafe impl Sync for Output {}
unsafe impl Send for Operand {}
unsafe impl Sync for Operand {}
