//! Matrix multiplication on the cube unit.

use ndarray::{Array2, Ix2};
use pto_op::prelude::*;

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

/// The two dims of a rank-2 input, or an error naming it.
fn matrix(name: &str, shape: &Shape) -> Result<(usize, usize), OpError> {
    shape.expect_rank(name, 2)?;
    Ok((shape.dims()[0], shape.dims()[1]))
}

/// A tile dim: `tile`, or `dim` rounded up to a fractal when the tensor is smaller, so
/// that small operands do not pay for a full tile of padding.
fn tile_dim(tile: usize, dim: usize) -> usize {
    tile.min(dim.max(1).next_multiple_of(FRACTAL))
}

/// `y[m, n] = a[m, k] @ b[k, n]`, a matrix product.
///
/// `a` and `b` have one float dtype (f16, bf16 or f32), which the output keeps; products
/// are accumulated in f32 and rounded to the output dtype once, at the end.
///
/// The kernel gives each block program a 64 x 64 tile of `y` and walks K in steps of 128
/// (f16, bf16) or 64 (f32) elements on the cube, accumulating in L0C. Edge tiles are loaded
/// masked (zero padding), so no dim needs to divide a tile.
#[custom_op(name = "demo.matmul")]
pub mod matmul {
    use super::*;

    #[infer_shape]
    fn infer_shape(a: &Shape, b: &Shape, _p: &Params) -> Result<Shape, OpError> {
        let (m, k) = matrix("a", a)?;
        let (bk, n) = matrix("b", b)?;
        if k != bk {
            return Err(OpError::input(
                "b",
                format!(
                    "a of shape {a} has {k} columns, so b must have {k} rows, got shape {b}: \
                     the inner dims of a [m, k] @ b [k, n] must agree"
                ),
            ));
        }
        Ok(Shape::from([m, n]))
    }

    #[infer_dtype]
    fn infer_dtype(a: DType, b: DType, _p: &Params) -> Result<DType, OpError> {
        if !matches!(a, DType::F16 | DType::BF16 | DType::F32) {
            return Err(OpError::input(
                "a",
                format!("expected f16, bf16 or f32, got {a}"),
            ));
        }
        if b != a {
            return Err(OpError::input(
                "b",
                format!("expected the dtype of a, {a}, got {b}"),
            ));
        }
        Ok(a)
    }

    #[reference]
    fn reference(a: &Tensor, b: &Tensor, _p: &Params) -> Result<Tensor, OpError> {
        let as_matrix = |name: &str, t: &Tensor| -> Result<Array2<f32>, OpError> {
            t.to_f32_array().into_dimensionality::<Ix2>().map_err(|_| {
                OpError::input(name, format!("expected rank 2, got shape {}", t.shape()))
            })
        };
        let y = as_matrix("a", a)?.dot(&as_matrix("b", b)?);
        Ok(Tensor::from_array(y.into_dyn()).cast(a.dtype()))
    }

    #[parity(a = f32[64, 128], b = f32[128, 64])]
    #[parity(a = f32[100, 70], b = f32[70, 50], seed = 1)]
    #[parity(a = f32[130, 300], b = f32[300, 90], seed = 2)]
    #[parity(a = f16[64, 128], b = f16[128, 64])]
    #[parity(a = f16[100, 70], b = f16[70, 50], seed = 1)]
    #[parity(a = f16[130, 300], b = f16[300, 90], seed = 2)]
    #[parity(a = bf16[33, 200], b = bf16[200, 17], seed = 3)]
    #[parity(a = f32[5, 3], b = f32[3, 7], seed = 4)]
    #[kernel]
    fn kernel(
        k: &mut Kernel,
        a: &Global,
        b: &Global,
        y: &Global,
        _p: &Params,
    ) -> Result<(), OpError> {
        let (m, depth) = a.dims2()?;
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
