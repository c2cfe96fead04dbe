//! Linear algebra: the matrix product on the cube unit.

use ndarray::{Array2, Ix2};

use super::expect_dtype_of;
use crate::prelude::*;

/// Output rows and columns of one block program: a 64 x 64 f32 accumulator is 16 KiB of
/// L0C, so the running sum and the next partial product (32 KiB) fit the 64 KiB of L0C of
/// every built-in profile.
const TILE_MN: usize = 64;

/// Bytes of one row of an A tile (and one column of a B tile) per K step: 128 f16 or bf16
/// elements, 64 f32 ones. Each A and B tile is then 16 KiB, 32 KiB double-buffered, within
/// the 64 KiB of L0A and of L0B.
const TILE_K_BYTES: usize = 256;

/// The cube works on 16 x 16 fractals: tile dims are multiples of this.
const FRACTAL: usize = 16;

/// A tile dim: `tile`, or `dim` rounded up to a fractal when the tensor is smaller, so
/// that small operands do not pay for a full tile of padding.
fn tile_dim(tile: usize, dim: usize) -> usize {
    tile.min(dim.max(1).next_multiple_of(FRACTAL))
}

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
        let rows = leading.iter().product();
        let matrix = |name: &str, t: &Tensor, dims: [usize; 2]| -> Result<Array2<f32>, OpError> {
            t.to_f32_array()
                .into_shape_with_order(dims.to_vec())
                .and_then(|m| m.into_dimensionality::<Ix2>())
                .map_err(|e| OpError::input(name, format!("shape {}: {e}", t.shape())))
        };
        let product = matrix("a", a, [rows, depth])?.dot(&matrix("b", b, [depth, *n])?);
        let y = Tensor::from_array(product.into_dyn())
            .reshape(a.shape().with_dim(-1, *n)?)?
            .cast(a.dtype());
        Ok(y)
    }

    #[kernel]
    fn kernel(k: &mut Kernel, a: &Global, b: &Global, y: &Global) -> Result<(), OpError> {
        let (m, depth) = a.dims2().map_err(|_| {
            OpError::input(
                "a",
                format!(
                    "the kernel takes a rank-2 a, got shape {}: reshape the batch into the rows, \
                     [B * m, k]",
                    a.shape()
                ),
            )
        })?;
        let (_, n) = b.dims2()?;
        let (tm, tn) = (tile_dim(TILE_MN, m), tile_dim(TILE_MN, n));
        let tk = tile_dim(TILE_K_BYTES / a.dtype().size_bytes(), depth);
        let col_tiles = n.div_ceil(tn);
        k.grid(m.div_ceil(tm) * col_tiles)?;
        let pid = k.program_id();
        let r0 = (pid.clone() / col_tiles) * tm;
        let c0 = (pid % col_tiles) * tn;

        // The first K step starts the L0C accumulator (there is no zero-filled L0C tile);
        // the fold carries it through the rest.
        let a0 = k.load_l1(a, (r0.clone(), 0), [tm, tk])?;
        let b0 = k.load_l1(b, (0, c0.clone()), [tk, tn])?;
        let first = k.matmul(&a0, &b0, None, false)?;
        let k_steps = depth.div_ceil(tk).max(1);
        let acc = k.fold(k_steps - 1, &[first], |k, step, carried| {
            let k0 = (step + 1) * tk;
            let at = k.load_l1(a, (r0.clone(), k0.clone()), [tm, tk])?;
            let bt = k.load_l1(b, (k0, c0.clone()), [tk, tn])?;
            Ok(vec![k.matmul(&at, &bt, Some(&carried[0]), false)?])
        })?;
        k.store(y, (r0, c0), &acc[0].to_ub(y.dtype()))
    }
}
