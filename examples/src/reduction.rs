//! Reductions along the last axis: softmax.

use pto_op::prelude::*;

/// y = exp(x - max(x)) / sum(exp(x - max(x))) along the last axis. Float dtypes; the output
/// has the input's dtype; computed in f32.
#[custom_op(name = "demo.softmax")]
pub mod softmax {
    use super::*;

    /// What the kernel keeps in UB at its peak: four tiles of the rows, as `std.softmax`.
    /// Its row tiles are sized for it (`pto_op::kernel::rows::row_tiles`).
    pub const LIVE: pto_op::kernel::rows::RowLive = pto_op::kernel::rows::RowLive {
        tiles: 4,
        params: 0,
    };

    #[infer_shape]
    fn infer_shape(x: &Shape) -> Result<Shape, OpError> {
        x.expect_min_rank("x", 1)?;
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType) -> Result<DType, OpError> {
        match x.is_float() {
            true => Ok(x),
            false => Err(OpError::input(
                "x",
                format!("expected f32, f16 or bf16, got {x}"),
            )),
        }
    }

    #[reference]
    fn reference(x: &Tensor) -> Result<Tensor, OpError> {
        let x32 = x.to_f32_array();
        let axis = ndarray::Axis(x32.ndim() - 1);
        let max = x32.fold_axis(axis, f32::NEG_INFINITY, |m, v| m.max(*v));
        let e = (&x32 - &max.insert_axis(axis)).mapv(f32::exp);
        let sum = e.sum_axis(axis).insert_axis(axis);
        Ok(Tensor::from_array(&e / &sum).cast(x.dtype()))
    }

    #[parity(x = f32[16, 128])]
    #[parity(x = f32[13, 77])]
    #[parity(x = f32[2, 9, 40])]
    #[parity(x = f16[16, 128])]
    #[parity(x = f16[13, 77])]
    #[parity(x = f16[2, 9, 40])]
    #[kernel]
    fn kernel(k: &mut Kernel, x: &Global, y: &Global) -> Result<(), OpError> {
        let tiles = pto_op::kernel::rows::row_tiles(k, x, LIVE)?;
        let xt = k
            .load(x, tiles.offsets.clone(), &tiles.shape)?
            .cast(DType::F32);
        let e = (&xt - xt.max_axis(-1)).exp();
        k.store(y, tiles.offsets, &(&e / e.sum(-1)).cast(y.dtype()))
    }
}

pto_op::register_sweep!(
    SOFTMAX_SWEEP,
    pto_op::sweep::SweepDef {
        op: softmax::NAME,
        sizes: || pto_op::sweep::rows_cols(|r, c| vec![vec![r, c]]),
        location: pto_op::source_location!(),
    }
);
