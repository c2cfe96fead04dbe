//! `y = a @ b` in f32 for fast paths: the kernel picked for the product and the CPU
//! ([`MatmulKernel::for_product`]), the output split into column pieces over threads.

// The two kernels write disjoint columns of one output from several threads through raw
// pointers (`gemm_crate`, `matmul_avx512`); the calls below say why each holds.
#![allow(unsafe_code)]

use pto_op::OpError;

use super::for_each_piece;
use super::gemm_crate::{Operand, Output, gemm_columns};

/// How the second operand of [`matmul`] is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `b` (depth x n) row-major.
    RowMajor,
    /// `b`'s transpose (n x depth) row-major: `a @ b^T` of a stored `b^T`, as in `q k^T`.
    Transposed,
}

/// The kernels a [`matmul`] can run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MatmulKernel {
    /// AVX-512F (x86-64), for a row-major `b` only: `b` read where it lies, not packed
    /// per call, so nothing is allocated; the depth is summed in order, one fused
    /// multiply-add at a time.
    Avx512,
    /// The `gemm` crate: any layout and CPU; it packs `b` per call, into a buffer it
    /// allocates.
    GemmCrate,
}

impl MatmulKernel {
    /// The kernel [`matmul`] runs for an m x depth by depth x n product with `b` stored
    /// as `b_layout` on this CPU: the AVX-512 one where it can (a row-major `b`, a CPU with
    /// AVX-512F) and where it is the faster, else the `gemm` crate.
    ///
    /// Faster, as measured (CPU time of one thread, AMD EPYC with AVX-512): with few rows
    /// the `gemm` crate's copy of `b` per call costs more than it saves (32 x 4096 @ 4096 x
    /// 11008: 45 ms against 55; 48 x 2048 @ 2048 x 5632: 15 against 16), with more rows it
    /// pays (64 rows: 20 against 17; 128 x 2048 @ 2048 x 5632: 35 against 30); a `b` that
    /// stays in cache is not worth copying at any size (64 x 64 @ 64 x 64: 4.6 us against
    /// 5.1).
    ///
    /// ```
    /// use pto_backends::cpu::{Layout, MatmulKernel};
    /// let kernel = MatmulKernel::for_product(Layout::Transposed, (32, 4096, 4096));
    /// assert_eq!(kernel, MatmulKernel::GemmCrate);
    /// ```
    pub fn for_product(b_layout: Layout, (m, depth, n): (usize, usize, usize)) -> Self {
        /// Rows up to which the AVX-512 kernel is the faster for any `b`.
        const FEW_ROWS: usize = 48;
        /// Elements of a `b` that stays in L2 (256 KiB of f32).
        const CACHED_B: usize = 1 << 16;
        let faster = m <= FEW_ROWS || depth.saturating_mul(n) <= CACHED_B;
        if b_layout == Layout::RowMajor && faster && Self::Avx512.available() {
            Self::Avx512
        } else {
            Self::GemmCrate
        }
    }

    /// Whether this CPU runs the kernel.
    pub fn available(self) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            Self::Avx512 => super::matmul_avx512::available(),
            #[cfg(not(target_arch = "x86_64"))]
            Self::Avx512 => false,
            Self::GemmCrate => true,
        }
    }
}

/// Output columns per piece of a product: the pieces are fixed by `n` alone, so the
/// result does not depend on the number of threads.
const MATMUL_COLUMNS: usize = 256;

/// `y = a @ b` in f32: `a` m x depth row-major, `b` depth x n stored as `b_layout` says,
/// `y` m x n row-major, on [`MatmulKernel::for_product`], over [`threads`](fn@super::threads) threads in
/// pieces of 256 output columns (fixed by `n` alone).
///
/// ```
/// use pto_backends::cpu::{Layout, matmul};
/// let (a, b) = ([1.0f32, 2.0, 3.0, 4.0], [1.0f32, 0.0, 0.0, 1.0]);
/// let mut y = [0.0f32; 4];
/// matmul(&a, &b, Layout::Transposed, (2, 2, 2), &mut y).unwrap();
/// assert_eq!(y, [1.0, 2.0, 3.0, 4.0]);
/// ```
///
/// # Errors
///
/// Slices of other lengths than the dims say.
pub fn matmul(
    a: &[f32],
    b: &[f32],
    b_layout: Layout,
    dims: (usize, usize, usize),
    y: &mut [f32],
) -> Result<(), OpError> {
    matmul_on(
        MatmulKernel::for_product(b_layout, dims),
        a,
        b,
        b_layout,
        dims,
        y,
    )
}

/// [`matmul`] on a kernel of the caller's choice, for tests and benchmarks: a CPU with
/// AVX-512 can still run the `gemm` crate's path.
///
/// ```
/// use pto_backends::cpu::{Layout, MatmulKernel, matmul_on};
/// let (a, b) = ([1.0f32, 2.0, 3.0, 4.0], [0.0f32, 1.0, 1.0, 0.0]);
/// let mut y = [0.0f32; 4];
/// matmul_on(MatmulKernel::GemmCrate, &a, &b, Layout::RowMajor, (2, 2, 2), &mut y).unwrap();
/// assert_eq!(y, [2.0, 1.0, 4.0, 3.0]);
/// ```
///
/// # Errors
///
/// Slices of other lengths than the dims say, or a kernel that this CPU cannot run
/// ([`MatmulKernel::available`]) or that does not take `b_layout`.
pub fn matmul_on(
    kernel: MatmulKernel,
    a: &[f32],
    b: &[f32],
    b_layout: Layout,
    (m, depth, n): (usize, usize, usize),
    y: &mut [f32],
) -> Result<(), OpError> {
    let b_transposed = b_layout == Layout::Transposed;
    if a.len() != m * depth || b.len() != depth * n || y.len() != m * n {
        return Err(OpError::invalid(format!(
            "a matrix product of [{m}, {depth}] @ [{depth}, {n}] was given {}, {} and {} \
             elements",
            a.len(),
            b.len(),
            y.len()
        )));
    }
    let refused = if !kernel.available() {
        Some("this CPU cannot run it")
    } else if kernel == MatmulKernel::Avx512 && b_transposed {
        Some("it takes a row-major b, got a transposed one")
    } else {
        None
    };
    if let Some(why) = refused {
        return Err(OpError::Unsupported {
            op: pto_op::ops::matmul::NAME.to_owned(),
            message: format!(
                "the {kernel:?} matrix product kernel was asked for, but {why}: \
                 `MatmulKernel::for_product` picks one that runs ({:?} here)",
                MatmulKernel::for_product(b_layout, (m, depth, n))
            ),
        });
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    if depth == 0 {
        y.fill(0.0);
        return Ok(());
    }
    let pieces = n.div_ceil(MATMUL_COLUMNS);
    let columns = |piece: usize| {
        let start = piece * MATMUL_COLUMNS;
        start..(start + MATMUL_COLUMNS).min(n)
    };
    #[cfg(target_arch = "x86_64")]
    if kernel == MatmulKernel::Avx512 {
        use super::matmul_avx512::{Output, matmul_columns};
        let out = Output {
            ptr: y.as_mut_ptr(),
            len: y.len(),
        };
        for_each_piece(pieces, m * depth * n, |piece| {
            // SAFETY: `out` is `y`, borrowed mutably until every piece has run (the
            // threads are scoped), and each piece writes only its own columns.
            unsafe { matmul_columns(a, b, out, (m, depth, n), columns(piece)) }
        });
        return Ok(());
    }
    let a = Operand {
        ptr: a.as_ptr(),
        rows: depth as isize,
        cols: 1,
    };
    let b = if b_transposed {
        Operand {
            ptr: b.as_ptr(),
            rows: 1,
            cols: depth as isize,
        }
    } else {
        Operand {
            ptr: b.as_ptr(),
            rows: n as isize,
            cols: 1,
        }
    };
    let out = Output(y.as_mut_ptr());
    for_each_piece(pieces, m * depth * n, |piece| {
        // SAFETY: `out` is `y`, borrowed mutably until every piece has run (the threads
        // are scoped); each piece writes only its own columns; the operands are the
        // checked slices `a` and `b`; m, depth, n are non-zero here.
        unsafe {
            gemm_columns(m, depth, n, a, b, out, columns(piece));
        }
    });
    Ok(())
}
