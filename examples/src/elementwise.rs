//! Element-wise example ops.

use pto_op::prelude::*;

/// y = gelu(x * scale + bias), element-wise, GELU in its tanh form. Float dtypes; computes in f32.
#[custom_op(name = "demo.gelu_affine", params(scale: f32 = 1.0, bias: f32 = 0.0))]
pub mod gelu_affine {
    use super::*;
    use pto_op::ops::math::gelu_tanh;

    /// What the kernel keeps in UB at its peak: three tiles of the rows (the input and
    /// output queues and the computed tile). Its row tiles are sized for it
    /// (`pto_op::kernel::rows::row_tiles`).
    pub const LIVE: pto_op::kernel::rows::RowLive = pto_op::kernel::rows::RowLive {
        tiles: 3,
        params: 0,
    };

    #[infer_shape]
    fn infer_shape(x: &Shape, _p: &Params) -> Result<Shape, OpError> {
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
        let y = x.to_f32_array().mapv(|v| gelu_tanh(v * p.scale + p.bias));
        Ok(Tensor::from_array(y).cast(x.dtype()))
    }

    #[parity(x = f32[64, 256])]
    #[parity(x = f32[37, 100], scale = 0.5, bias = -1.0)]
    #[parity(x = f32[3, 5, 33], scale = 2.0)]
    #[parity(x = f16[64, 256])]
    #[parity(x = f16[37, 100], scale = 0.5, bias = -1.0)]
    #[parity(x = f16[3, 5, 33], scale = 2.0)]
    #[kernel]
    fn kernel(k: &mut Kernel, x: &Global, y: &Global, p: &Params) -> Result<(), OpError> {
        let tiles = pto_op::kernel::rows::row_tiles(k, x, LIVE)?;
        let xt = k
            .load(x, tiles.offsets.clone(), &tiles.shape)?
            .cast(DType::F32);
        k.store(
            y,
            tiles.offsets,
            &(xt * p.scale + p.bias).gelu().cast(y.dtype()),
        )
    }
}

pto_op::register_sweep!(
    GELU_AFFINE_SWEEP,
    pto_op::sweep::SweepDef {
        op: gelu_affine::NAME,
        sizes: || pto_op::sweep::rows_cols(|r, c| vec![vec![r, c]]),
        location: pto_op::source_location!(),
    }
);
