//! Linear algebra: the matrix product on the cube unit.

use ndarray::{Array2, ArrayD, ArrayView2, IxDyn};

use super::{expect_dtype_of, kernel_unsupported};
use crate::cpu::{CpuKernel, Layout, MatmulKernel, PreparedCpuKernel};
use crate::op::TensorType;
use crate::prelude::*;

/// `y [.., m, n] = a [.., m, k] @ b [k, n]`, a matrix product; the leading dims of `a`
/// (if any) are a batch sharing `b`.
///
/// `a` has rank >= 2 and `b` rank 2. They have one float dtype (f16, bf16 or f32), which
/// the output keeps; products are accumulated in f32 and rounded to the output dtype once,
/// at the end.
///
/// The kernel takes a rank-2 `a` (reshape a batch to `[B * m, k]`). It gives each block
/// program a 128 x 64 tile of `y` and walks K in steps of 128 (f16, bf16) or 64 (f32)
/// elements on the cube, accumulating in L0C. Edge tiles are loaded masked (zero
/// padding), so no dim needs to divide a tile.
#[custom_op(name = "std.matmul")]
pub mod matmul {
    use super::*;

    #[infer_shape]
    fn infer_shape(a: &Shape, b: &Shape) -> Result<Shape, OpError> {
        a.expect_min_rank("a", 2)?;
        b.expect_rank("b", 2)?;
        let depth = a.dim(-1)?;
        let (rows_b, n) = (b.dims()[0], b.dims()[1]);
        if depth != rows_b {
            return Err(OpError::input(
                "b",
                format!(
                    "a of shape {a} has {depth} columns, so b must have {depth} rows, got shape \
                     {b}: the inner dims of a [.., m, k] @ b [k, n] must agree"
                ),
            ));
        }
        a.with_dim(-1, n)
    }

    #[infer_dtype]
    fn infer_dtype(a: DType, b: DType) -> Result<DType, OpError> {
        if !a.is_float() {
            return Err(OpError::input(
                "a",
                format!("expected f16, bf16 or f32, got {a}"),
            ));
        }
        expect_dtype_of("b", b, "a", a)?;
        Ok(a)
    }

    #[reference]
    fn reference(a: &Tensor, b: &Tensor) -> Result<Tensor, OpError> {
        let (a_dims, b_dims) = (a.dims(), b.dims());
        let (Some((&depth, leading)), [_, n]) = (a_dims.split_last(), b_dims) else {
            return Err(OpError::input(
                "b",
                format!("expected rank 2, got shape {}", b.shape()),
            ));
        };
        let rows: usize = leading.iter().product();
        // f32 operands are read in place; f16/bf16 are widened once (in bulk).
        let (a_wide, b_wide) = (widened(a), widened(b));
        let a2 = matrix("a", a, a_wide.as_ref(), (rows, depth))?;
        let b2 = matrix("b", b, b_wide.as_ref(), (depth, *n))?;
        let out = a.shape().with_dim(-1, *n)?;
        let product = gemm_f32(a2, b2)
            .into_dyn()
            .into_shape_with_order(IxDyn(out.dims()))
            .map_err(|e| OpError::invalid(format!("matmul result of shape {out}: {e}")))?;
        Ok(Tensor::from_f32_array(product, a.dtype()))
    }

    #[kernel]
    fn kernel(k: &mut Kernel, a: &Global, b: &Global, y: &Global) -> Result<(), OpError> {
        a.dims2().map_err(|_| {
            kernel_unsupported(
                NAME,
                "input `a`",
                format!(
                    "the kernel takes a rank-2 a, got shape {}: reshape the batch into the rows, \
                     [B * m, k]",
                    a.shape()
                ),
            )
        })?;
        crate::kernel::cube::tiled_matmul(k, a, b, y)
    }
}

/// `a @ b` in f32 with the `gemm` crate on one thread: the same sum of products as
/// `a.dot(&b)`, in another order (its blocking), so equal within f32 rounding.
#[allow(unsafe_code)]
fn gemm_f32(a: ArrayView2<'_, f32>, b: ArrayView2<'_, f32>) -> Array2<f32> {
    let ((m, depth), n) = (a.dim(), b.ncols());
    let mut y = Array2::<f32>::zeros((m, n));
    if m == 0 || n == 0 || depth == 0 || b.nrows() != depth {
        // Nothing to sum (or a shape the caller never passes; its inputs are checked).
        return y;
    }
    if let Some(out) = y.as_slice_mut() {
        let (a_rows, a_cols) = (a.strides()[0], a.strides()[1]);
        let (b_rows, b_cols) = (b.strides()[0], b.strides()[1]);
        let a_operand = Operand {
            ptr: a.as_ptr(),
            rows: a_rows,
            cols: a_cols,
        };
        let b_operand = Operand {
            ptr: b.as_ptr(),
            rows: b_rows,
            cols: b_cols,
        };
        let out = Output(out.as_mut_ptr());
        // SAFETY: `out` is the m x n slice of `y`, borrowed mutably for this call; the
        // operands describe the live views `a` and `b`.
        unsafe {
            gemm_columns(m, depth, n, a_operand, b_operand, out, 0..n);
        }
    }
    y
}

/// An f32 matrix operand of [`gemm_columns`]: its first element and element strides.
#[derive(Clone, Copy)]
struct Operand {
    ptr: *const f32,
    rows: isize,
    cols: isize,
}

/// `y[:, columns] = a @ b[:, columns]` for `a` m x depth, `b` depth x n, `y` the m x n
/// row-major output, with the `gemm` crate on this thread.
///
/// # Safety
///
/// `a` and `b` describe live m x depth and depth x n views; `y` points to m * n writable
/// f32 that nothing else reads or writes in `columns` during the call; `columns` lies
/// within `0..n` and all of m, depth, n are non-zero.
#[allow(unsafe_code)]
unsafe fn gemm_columns(
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

/// Output columns per piece of the fast path's product: the pieces are fixed by `n`
/// alone, so the result does not depend on the number of threads.
const MATMUL_COLUMNS: usize = 256;

/// The fast path of an f32 `std.matmul`: the product written straight into the output
/// buffer, in pieces of [`MATMUL_COLUMNS`] output columns over threads (each piece reads
/// its own columns of `b`, so threads share the reading of the weights).
#[derive(Debug)]
struct MatmulCpu {
    rows: usize,
    depth: usize,
    n: usize,
}

fn prepare_matmul(inputs: &[TensorType], _: &Attributes) -> PreparedCpuKernel {
    let [a, b] = inputs else {
        return Ok(None);
    };
    if a.dtype != DType::F32 || b.dtype != DType::F32 || b.shape.rank() != 2 {
        return Ok(None);
    }
    let Some((&depth, leading)) = a.shape.dims().split_last() else {
        return Ok(None);
    };
    Ok(Some(Box::new(MatmulCpu {
        rows: leading.iter().product(),
        depth,
        n: b.shape.dims()[1],
    })))
}

impl CpuKernel for MatmulCpu {
    fn run(&self, inputs: &[&Tensor], outputs: &mut [Tensor]) -> Result<(), OpError> {
        let (a, b, y) = crate::cpu::binary_f32(inputs, outputs)?;
        matmul_f32(a, b, false, (self.rows, self.depth, self.n), y)
    }
}

/// `y = a @ b` (`b_transposed`: `a @ b^T` of a stored `b^T`) on f32 slices, in pieces of
/// [`MATMUL_COLUMNS`] output columns over threads, on the faster kernel this CPU has for
/// the product: [`crate::cpu::matmul`].
pub(crate) fn matmul_f32(
    a: &[f32],
    b: &[f32],
    b_transposed: bool,
    dims: (usize, usize, usize),
    y: &mut [f32],
) -> Result<(), OpError> {
    let layout = if b_transposed {
        Layout::Transposed
    } else {
        Layout::RowMajor
    };
    matmul_f32_on(
        MatmulKernel::for_product(layout, dims),
        a,
        b,
        b_transposed,
        dims,
        y,
    )
}

/// [`matmul_f32`] on `kernel`: [`crate::cpu::matmul_on`].
///
/// # Errors
///
/// Slices of other lengths than the dims say, or a kernel this CPU cannot run or that
/// does not take the layout.
#[allow(unsafe_code)]
pub(crate) fn matmul_f32_on(
    kernel: MatmulKernel,
    a: &[f32],
    b: &[f32],
    b_transposed: bool,
    (m, depth, n): (usize, usize, usize),
    y: &mut [f32],
) -> Result<(), OpError> {
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
            op: matmul::NAME.to_owned(),
            message: format!(
                "the {kernel:?} matrix product kernel was asked for, but {why}: \
                 `MatmulKernel::for_product` picks one that runs ({:?} here)",
                MatmulKernel::for_product(
                    if b_transposed {
                        Layout::Transposed
                    } else {
                        Layout::RowMajor
                    },
                    (m, depth, n)
                )
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
        use crate::cpu::matmul_avx512::{Output, matmul_columns};
        let out = Output {
            ptr: y.as_mut_ptr(),
            len: y.len(),
        };
        crate::cpu::for_each_piece(pieces, m * depth * n, |piece| {
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
    crate::cpu::for_each_piece(pieces, m * depth * n, |piece| {
        // SAFETY: `out` is `y`, borrowed mutably until every piece has run (the threads
        // are scoped); each piece writes only its own columns; the operands are the
        // checked slices `a` and `b`; m, depth, n are non-zero here.
        unsafe {
            gemm_columns(m, depth, n, a, b, out, columns(piece));
        }
    });
    Ok(())
}

/// The output of [`gemm_columns`]: threads write disjoint columns of it.
#[derive(Clone, Copy)]
struct Output(*mut f32);

// SAFETY: the pointers are plain addresses of the operands and the output of one product,
// which outlive the scoped threads that use them; the output's columns are split
// between threads (see `gemm_columns`), and the operands are only read.
#[allow(unsafe_code)]
unsafe impl Send for Output {}
#[allow(unsafe_code)]
unsafe impl Sync for Output {}
#[allow(unsafe_code)]
unsafe impl Send for Operand {}
#[allow(unsafe_code)]
unsafe impl Sync for Operand {}

crate::register_cpu_kernel!(MATMUL_CPU, matmul::NAME, prepare_matmul);

/// `t` converted to f32 unless it already is f32 (then it is read in place).
fn widened(t: &Tensor) -> Option<ArrayD<f32>> {
    (t.dtype() != DType::F32).then(|| t.to_f32_array())
}

/// The f32 elements of `t` (or of its widened copy `wide`) as a `dims` matrix; an error
/// naming input `name` if they do not fit.
fn matrix<'a>(
    name: &str,
    t: &'a Tensor,
    wide: Option<&'a ArrayD<f32>>,
    dims: (usize, usize),
) -> Result<ArrayView2<'a, f32>, OpError> {
    let elements = match wide {
        Some(wide) => wide.view(),
        None => t.view::<f32>()?,
    };
    elements
        .into_shape_with_order(dims)
        .map_err(|e| OpError::input(name, format!("shape {}: {e}", t.shape())))
}

crate::register_sweep!(
    MATMUL_SWEEP,
    crate::sweep::SweepDef {
        op: matmul::NAME,
        sizes: crate::sweep::matmul,
        location: crate::source_location!(),
    }
);

/// `y [.., m, n] = a [.., m, k] @ b [.., k, n]`: a batch of matrix products, the batch dims
/// (all but the last two) broadcast numpy-style, as ONNX MatMul of two operands of rank
/// >= 2.
///
/// `a` and `b` have rank >= 2 and one float dtype (f16, bf16 or f32), which the output
/// keeps; products are accumulated in f32 and rounded once.
///
/// The kernel runs each matrix of the batch as `std.matmul`'s kernel runs its product
/// ([`crate::kernel::cube::batched_matmul`]): one block program per matrix and output tile
/// (sized for the device), K in staged steps on the cube, accumulated in L0C; a broadcast
/// batch dim reads the same matrix of `a` or `b` for every index.
#[custom_op(name = "std.batch_matmul")]
pub mod batch_matmul {
    use super::*;

    #[infer_shape]
    fn infer_shape(a: &Shape, b: &Shape) -> Result<Shape, OpError> {
        batch_shapes(a, b).map(|(_, _, _, _, y)| y)
    }

    #[infer_dtype]
    fn infer_dtype(a: DType, b: DType) -> Result<DType, OpError> {
        if !a.is_float() {
            return Err(OpError::input(
                "a",
                format!("expected f16, bf16 or f32, got {a}"),
            ));
        }
        expect_dtype_of("b", b, "a", a)?;
        Ok(a)
    }

    #[reference]
    fn reference(a: &Tensor, b: &Tensor) -> Result<Tensor, OpError> {
        let (batch, m, depth, n, out) = batch_shapes(&a.shape(), &b.shape())?;
        let (a32, b32) = (a.to_f32_array(), b.to_f32_array());
        let batch_dims = |mut dims: Vec<usize>, last: [usize; 2]| {
            dims.extend(last);
            IxDyn(&dims)
        };
        let not_broadcast = |name: &str, shape: Shape| {
            OpError::input(
                name,
                format!("shape {shape} does not broadcast to the batch {batch}"),
            )
        };
        let a_b = a32
            .broadcast(batch_dims(batch.dims().to_vec(), [m, depth]))
            .ok_or_else(|| not_broadcast("a", a.shape()))?;
        let b_b = b32
            .broadcast(batch_dims(batch.dims().to_vec(), [depth, n]))
            .ok_or_else(|| not_broadcast("b", b.shape()))?;
        let count = batch.numel();
        let a3 = a_b
            .to_shape((count, m, depth))
            .map_err(|e| OpError::invalid(format!("batch of a: {e}")))?;
        let b3 = b_b
            .to_shape((count, depth, n))
            .map_err(|e| OpError::invalid(format!("batch of b: {e}")))?;
        let mut values = Vec::with_capacity(count * m * n);
        for i in 0..count {
            let product = gemm_f32(
                a3.index_axis(ndarray::Axis(0), i),
                b3.index_axis(ndarray::Axis(0), i),
            );
            values.extend(product.iter().copied());
        }
        let y = ArrayD::from_shape_vec(IxDyn(out.dims()), values)
            .map_err(|e| OpError::invalid(format!("batch_matmul result of shape {out}: {e}")))?;
        Ok(Tensor::from_f32_array(y, a.dtype()))
    }

    #[kernel]
    fn kernel(k: &mut Kernel, a: &Global, b: &Global, y: &Global) -> Result<(), OpError> {
        crate::kernel::cube::batched_matmul(k, a, b, y)
    }
}

/// The broadcast batch, m, k, n and the output shape of `a [.., m, k] @ b [.., k, n]`.
fn batch_shapes(a: &Shape, b: &Shape) -> Result<(Shape, usize, usize, usize, Shape), OpError> {
    a.expect_min_rank("a", 2)?;
    b.expect_min_rank("b", 2)?;
    let (ad, bd) = (a.dims(), b.dims());
    let (m, depth) = (ad[ad.len() - 2], ad[ad.len() - 1]);
    let (rows_b, n) = (bd[bd.len() - 2], bd[bd.len() - 1]);
    if depth != rows_b {
        return Err(OpError::input(
            "b",
            format!(
                "a of shape {a} has {depth} columns, so b must have {depth} rows, got shape {b}: \
                 the inner dims of a [.., m, k] @ b [.., k, n] must agree"
            ),
        ));
    }
    let batch_a = Shape::from(&ad[..ad.len() - 2]);
    let batch_b = Shape::from(&bd[..bd.len() - 2]);
    let batch = batch_a.broadcast(&batch_b).map_err(|_| {
        OpError::input(
            "b",
            format!("the batch dims of b (shape {b}) do not broadcast with those of a (shape {a})"),
        )
    })?;
    let mut out = batch.dims().to_vec();
    out.extend([m, n]);
    Ok((batch, m, depth, n, Shape::new(out)))
}
