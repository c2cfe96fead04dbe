//! Matrix multiplication on the cube unit.

use pto_op::prelude::*;

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
        let (m, k) = a.expect_matrix("a")?;
        let (bk, n) = b.expect_matrix("b")?;
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
        let y = a.to_f32_matrix("a")?.dot(&b.to_f32_matrix("b")?);
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
        // The tiled cube kernel of the tile language's library: read it in
        // pto-kernel/src/cube.rs, a K-loop over L1 tiles with an L0C accumulator.
        pto_op::kernel::cube::tiled_matmul(k, a, b, y)
    }
}

pto_op::register_sweep!(
    MATMUL_SWEEP,
    pto_op::sweep::SweepDef {
        op: matmul::NAME,
        sizes: pto_op::sweep::matmul,
        location: pto_op::source_location!(),
    }
);
