//! Linear algebra: the matrix product on the cube unit.

use ndarray::{Array2, ArrayD, ArrayView2, IxDyn};

use super::expect_dtype_of;
use crate::prelude::*;

/// `y [.., m, n] = a [.., m, k] @ b [k, n]`, a matrix product; the leading dims of `a`
/// (if any) are a batch sharing `b`.
///
/// `a` has rank >= 2 and `b` rank 2. They have one float dtype (f16, bf16 or f32), which
/// the output keeps; products are accumulated in f32 and rounded to the output dtype once,
/// at the end.
///
/// The kernel takes a rank-2 `a` (reshape a batch to `[B * m, k]`). It gives each block
/// program a 64 x 64 tile of `y` and walks K in steps of 128 (f16, bf16) or 64 (f32)
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
            OpError::input(
                "a",
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
    let (a_rows, a_cols) = (a.strides()[0], a.strides()[1]);
    let (b_rows, b_cols) = (b.strides()[0], b.strides()[1]);
    let y_rows = n as isize;
    // SAFETY: `y` is an owned, contiguous m x n row-major array (row stride n, column
    // stride 1), written only here; `a` (m x depth) and `b` (depth x n) are live views
    // whose pointers and element strides describe exactly their elements, so every
    // address gemm reads is inside them. `read_dst = false` with alpha 0 and beta 1
    // computes y = a @ b without reading `y`; no conjugation (real numbers); one thread.
    unsafe {
        gemm::gemm(
            m,
            n,
            depth,
            y.as_mut_ptr(),
            1,
            y_rows,
            false,
            a.as_ptr(),
            a_cols,
            a_rows,
            b.as_ptr(),
            b_cols,
            b_rows,
            0.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
    y
}

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
