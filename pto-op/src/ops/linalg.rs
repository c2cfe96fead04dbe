//! Linear algebra: the matrix product on the cube unit.

use ndarray::{ArrayD, ArrayView2, IxDyn};

use super::checks::{expect_dtype_of, kernel_unsupported};
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
        // ndarray's product (matrixmultiply): safe code, equal to the fast path's within
        // f32 rounding (another order of the sums); the cpu target's fast path runs the
        // faster kernels (AVX-512, the gemm crate) in pto-backends.
        let product = a2
            .dot(&b2)
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
            let product = a3
                .index_axis(ndarray::Axis(0), i)
                .dot(&b3.index_axis(ndarray::Axis(0), i));
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
