//! Normalization example ops.

use pto_op::prelude::*;

/// y = x * rsqrt(mean(x^2, last axis) + eps) * gamma. `gamma` has the size of the last axis
/// and the dtype of `x`, a float dtype; computed in f32.
#[custom_op(name = "demo.rms_norm", params(eps: f32 = 1e-6))]
pub mod rms_norm {
    use super::*;

    /// What the kernel keeps in UB at its peak: five tiles of the rows and `gamma`,
    /// as `std.rms_norm`. Its row tiles are sized for it
    /// (`pto_op::kernel::rows::row_tiles`).
    pub const LIVE: pto_op::kernel::rows::RowLive = pto_op::kernel::rows::RowLive {
        tiles: 5,
        params: 1,
    };

    #[infer_shape]
    fn infer_shape(x: &Shape, gamma: &Shape, _p: &Params) -> Result<Shape, OpError> {
        x.expect_min_rank("x", 1)?;
        gamma.expect_eq("gamma", &Shape::from([x.last()?]))?;
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, gamma: DType, _p: &Params) -> Result<DType, OpError> {
        if !x.is_float() {
            return Err(OpError::input(
                "x",
                format!("expected f32, f16 or bf16, got {x}"),
            ));
        }
        if gamma != x {
            return Err(OpError::input(
                "gamma",
                format!("expected dtype {x} (that of x), got {gamma}"),
            ));
        }
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor, gamma: &Tensor, p: &Params) -> Result<Tensor, OpError> {
        let x32 = x.to_f32_array();
        let axis = ndarray::Axis(x32.ndim() - 1);
        let mean_square = x32
            .mapv(|v| v * v)
            .mean_axis(axis)
            .ok_or_else(|| OpError::input("x", format!("rows of shape {} are empty", x.shape())))?;
        let inv = mean_square
            .mapv(|m| 1.0 / (m + p.eps).sqrt())
            .insert_axis(axis);
        let y = &x32 * &inv * &gamma.to_f32_array();
        Ok(Tensor::from_array(y).cast(x.dtype()))
    }

    #[parity(x = f32[32, 256], gamma = f32[256])]
    #[parity(x = f32[13, 100], gamma = f32[100], eps = 1e-5)]
    #[parity(x = f32[2, 7, 48], gamma = f32[48])]
    #[parity(x = f16[32, 256], gamma = f16[256])]
    #[parity(x = f16[13, 100], gamma = f16[100], eps = 1e-5)]
    #[parity(x = f16[2, 7, 48], gamma = f16[48])]
    #[kernel]
    fn kernel(
        k: &mut Kernel,
        x: &Global,
        gamma: &Global,
        y: &Global,
        p: &Params,
    ) -> Result<(), OpError> {
        let tiles = pto_op::kernel::rows::row_tiles(k, x, LIVE)?;
        let cols = *tiles.shape.last().unwrap_or(&1);
        let xt = k
            .load(x, tiles.offsets.clone(), &tiles.shape)?
            .cast(DType::F32);
        let g = k.load(gamma, [0], [cols])?.cast(DType::F32);
        let inv = (xt.square().mean(-1) + p.eps).rsqrt();
        k.store(y, tiles.offsets, &(xt * inv * g).cast(y.dtype()))
    }
}

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

pto_op::register_sweep!(
    RMS_NORM_SWEEP,
    pto_op::sweep::SweepDef {
        op: rms_norm::NAME,
        sizes: || pto_op::sweep::rows_cols(|r, c| vec![vec![r, c], vec![c]]),
        location: pto_op::source_location!(),
    }
);

/// RMSNorm as exporters write it, `gamma * (x * (1 / sqrt(mean(x ^ 2, last axis) + eps)))`
/// (torch's `x.pow(2).mean(-1, keepdim=True)`, `torch.rsqrt`), fused into
/// [`demo.rms_norm`](rms_norm).
pub mod rms_norm_fusion {
    use pto_op::fusion::{Match, Pattern, Pattern::*};
    use pto_op::prelude::*;

    /// `gamma * (x * (one / sqrt(mean(pow(x, two)) + eps)))`.
    pub const PATTERN: Pattern = Commutative(
        "std.mul",
        &[
            Weight("gamma"),
            Commutative(
                "std.mul",
                &[
                    Any("x"),
                    Op(
                        "std.div",
                        &[
                            Weight("one"),
                            Op(
                                "std.sqrt",
                                &[Commutative(
                                    "std.add",
                                    &[
                                        Named(
                                            "mean",
                                            &Op(
                                                "std.reduce_mean",
                                                &[Op("std.pow", &[Any("x"), Weight("two")])],
                                            ),
                                        ),
                                        Weight("eps"),
                                    ],
                                )],
                            ),
                        ],
                    ),
                ],
            ),
        ],
    );

    /// The `demo.rms_norm` call, when the constants are 1 and 2, the mean is over the last
    /// axis with its dim kept, and `gamma` has the size of that axis.
    pub fn rewrite(m: &Match<'_>) -> Result<Option<Value>, OpError> {
        let x = m.value("x")?;
        let rank = x.shape().rank() as i64;
        let last_axis = |axes: &[i64]| matches!(axes, [a] if *a == -1 || *a == rank - 1);
        let mean_ok = m.attrs("mean").is_some_and(|attrs| {
            matches!(attrs.get("axes"), Some(AttrValue::I64s(axes)) if last_axis(axes))
                && matches!(attrs.get("keepdims"), Some(AttrValue::Bool(true)) | None)
        });
        let (Some(one), Some(two), Some(eps)) = (m.scalar("one"), m.scalar("two"), m.scalar("eps"))
        else {
            return Ok(None);
        };
        let gamma = m.weight("gamma");
        let gamma_ok = gamma
            .is_some_and(|g| g.dims() == [x.shape().last().unwrap_or(0)] && g.dtype() == x.dtype());
        if one != 1.0 || two != 2.0 || !mean_ok || !gamma_ok {
            return Ok(None);
        }
        let params = super::rms_norm::Params { eps: eps as f32 };
        Ok(Some(super::rms_norm::apply(
            &x,
            &m.value("gamma")?,
            &params,
        )?))
    }
}

pto_op::register_fusion!(
    RMS_NORM_FUSION,
    pto_op::fusion::FusionDef {
        name: "demo.rms_norm",
        op: rms_norm::NAME,
        patterns: &[rms_norm_fusion::PATTERN],
        rewrite: rms_norm_fusion::rewrite,
        location: pto_op::source_location!(),
    }
);
