use pto_op::prelude::*;

/// y = x / sqrt(sum(x^2, last axis) + eps): every row scaled to unit length.
/// Float dtypes; computed in f32.
#[custom_op(name = "myops.l2_normalize", params(eps: f32 = 1e-6))]
pub mod l2_normalize {
    use super::*;

    /// What the kernel keeps in UB at its peak: five tiles of the rows (four and the
    /// lowering's temporaries of the sum). Its row tiles are sized for it
    /// (`pto_op::kernel::rows::row_tiles`).
    pub const LIVE: pto_op::kernel::rows::RowLive = pto_op::kernel::rows::RowLive {
        tiles: 5,
        params: 0,
    };

    #[infer_shape]
    fn infer_shape(x: &Shape, _p: &Params) -> Result<Shape, OpError> {
        x.expect_min_rank("x", 1)?;
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _p: &Params) -> Result<DType, OpError> {
        match x.is_float() {
            true => Ok(x),
            false => Err(OpError::input(
                "x",
                format!("expected f32, f16 or bf16, got {x}"),
            )),
        }
    }

    #[reference]
    fn reference(x: &Tensor, p: &Params) -> Result<Tensor, OpError> {
        let x32 = x.to_f32_array();
        let axis = ndarray::Axis(x32.ndim() - 1);
        let inv_norm = x32
            .mapv(|v| v * v)
            .sum_axis(axis)
            .mapv(|s| 1.0 / (s + p.eps).sqrt())
            .insert_axis(axis);
        Ok(Tensor::from_array(&x32 * &inv_norm).cast(x.dtype()))
    }

    #[parity(x = f32[16, 64])]
    #[parity(x = f32[37, 100], eps = 1e-3)]
    #[parity(x = f16[4, 9, 130])]
    #[kernel]
    fn kernel(k: &mut Kernel, x: &Global, y: &Global, p: &Params) -> Result<(), OpError> {
        let tiles = pto_op::kernel::rows::row_tiles(k, x, LIVE)?; // sets the grid
        let xt = k
            .load(x, tiles.offsets.clone(), &tiles.shape)?
            .cast(DType::F32);
        let inv_norm = (xt.square().sum(-1) + p.eps).rsqrt();
        k.store(y, tiles.offsets, &(xt * inv_norm).cast(y.dtype()))
    }
}

// The parity tests run on the `cpu` and `sim` targets of pto-backends: name it in tests.
#[cfg(test)]
use pto_backends as _;

pub mod model;
