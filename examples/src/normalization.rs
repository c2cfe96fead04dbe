//! Normalization example ops.

use pto_op::prelude::*;

/// The mean and reciprocal standard deviation of each row (the last axis): the statistics a
/// layer norm normalizes with. `mean = sum(x) / n`, `rstd = 1 / sqrt(sum((x - mean)^2) / n + eps)`.
///
/// Both outputs keep the last axis with size 1 and are f32 whatever the float input dtype,
/// because the statistics are accumulated in f32.
#[custom_op(name = "demo.moments", params(eps: f32 = 1e-5), outputs(mean, rstd))]
pub mod moments {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, _p: &Params) -> Result<(Shape, Shape), OpError> {
        x.expect_min_rank("x", 1)?;
        if x.last()? == 0 {
            return Err(OpError::input(
                "x",
                format!("rows of shape {x} are empty: no statistics"),
            ));
        }
        let stats = x.with_dim(-1, 1)?;
        Ok((stats.clone(), stats))
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _p: &Params) -> Result<(DType, DType), OpError> {
        match x.is_float() {
            true => Ok((DType::F32, DType::F32)),
            false => Err(OpError::input(
                "x",
                format!("expected f32, f16 or bf16, got {x}"),
            )),
        }
    }

    #[reference]
    fn reference(x: &Tensor, p: &Params) -> Result<(Tensor, Tensor), OpError> {
        let x = x.to_f32_array();
        let axis = ndarray::Axis(x.ndim() - 1);
        let n = x.len_of(axis) as f32;
        let mean = x.sum_axis(axis) / n;
        let centered = &x - &mean.clone().insert_axis(axis);
        let variance = centered.mapv(|v| v * v).sum_axis(axis) / n;
        let rstd = variance.mapv(|v| 1.0 / (v + p.eps).sqrt());
        Ok((
            Tensor::from_array(mean.insert_axis(axis)),
            Tensor::from_array(rstd.insert_axis(axis)),
        ))
    }
}
