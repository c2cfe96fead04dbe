//! Team B's operators: a crate of its own, written without knowing the other operator
//! crates, and used together with them in one model (see `pto-examples`' `mixed` model).
//!
//! - [`scaled_tanh`]: `y = alpha * tanh(x / alpha)`, a soft clamp to (-alpha, alpha).
//!
//! Its performance model is registered here too (`estimate.rs`, `#[op_estimator]`): the
//! estimator chain of any program that links this crate picks it up.

mod estimate;

use pto_op::prelude::*;

/// `y = alpha * tanh(x / alpha)`, element-wise: a soft clamp of `x` to `(-alpha, alpha)`
/// that is the identity near 0. Float dtypes; computed in f32.
#[custom_op(name = "teamb.scaled_tanh", params(alpha: f32 = 4.0))]
pub mod scaled_tanh {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, p: &Params) -> Result<Shape, OpError> {
        if !(p.alpha.is_finite() && p.alpha > 0.0) {
            return Err(OpError::invalid(format!(
                "param `alpha` must be a positive number, got {}",
                p.alpha
            )));
        }
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
        let y = x.to_f32_array().mapv(|v| p.alpha * (v / p.alpha).tanh());
        Ok(Tensor::from_array(y).cast(x.dtype()))
    }

    #[parity(x = f32[64, 128])]
    #[parity(x = f32[10, 30], alpha = 0.5)]
    #[parity(x = f16[64, 128], alpha = 2.0)]
    #[kernel]
    fn kernel(k: &mut Kernel, x: &Global, y: &Global, p: &Params) -> Result<(), OpError> {
        let dims = x.shape().dims().to_vec();
        let [rows, cols] = dims.as_slice() else {
            return Err(OpError::input(
                "x",
                format!("the kernel takes rank 2, got shape {}", x.shape()),
            ));
        };
        // 16 rows per block program: 8 KiB of f32 per 128 columns, well within UB.
        let block = 16.min(*rows);
        k.grid(rows.div_ceil(block))?;
        let r0 = k.program_id() * block;
        let xt = k.load(x, (r0, 0), [block, *cols])?.cast(DType::F32);
        let y_tile = ((xt * (1.0 / p.alpha)).tanh() * p.alpha).cast(y.dtype());
        k.store(y, (r0, 0), &y_tile)
    }
}

// The parity tests run on the `cpu` and `sim` targets of pto-backends.
#[cfg(test)]
use pto_backends as _;

/// `rows, cols` at which `pto accuracy` and `pto calibrate` time `scaled_tanh`, smallest
/// first: a decode row to 4096 rows. The kernel holds 16 whole rows in the unified buffer
/// (twice, in f32), so the columns stay within what the Kirin UB takes (at most 944).
const SCALED_TANH_SWEEP_SIZES: [[usize; 2]; 12] = [
    [1, 128],
    [8, 256],
    [16, 512],
    [37, 100],
    [64, 768],
    [100, 300],
    [128, 512],
    [250, 700],
    [512, 768],
    [1000, 640],
    [2048, 768],
    [4096, 768],
];

pto_op::register_sweep!(
    SCALED_TANH_SWEEP,
    pto_op::sweep::SweepDef {
        op: scaled_tanh::NAME,
        sizes: || {
            SCALED_TANH_SWEEP_SIZES
                .iter()
                .map(|&[rows, cols]| pto_op::sweep::f16(vec![vec![rows, cols]]))
                .collect()
        },
        location: pto_op::source_location!(),
    }
);
