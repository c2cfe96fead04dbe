//! `#[kernel]`, `#[estimator]` and `#[properties]` are checked, registered and callable
//! through the op's description.

use pto_op::TensorType;
use pto_op::prelude::*;

/// y = x + 1, with every optional function.
#[custom_op(name = "test.full", params(block_rows: i64 = 8))]
pub mod full {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape, _p: &Params) -> Result<Shape, OpError> {
        x.expect_rank("x", 2).cloned()
    }

    #[infer_dtype]
    fn infer_dtype(x: DType, _p: &Params) -> Result<DType, OpError> {
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor, _p: &Params) -> Result<Tensor, OpError> {
        Ok(Tensor::from_array(x.to_f32_array().mapv(|v| v + 1.0)).cast(x.dtype()))
    }

    #[kernel]
    fn kernel(k: &mut Kernel, x: &Global, y: &Global, p: &Params) -> Result<(), OpError> {
        let (rows, _) = x.dims2()?;
        assert_eq!(y.shape(), x.shape());
        k.grid(rows.div_ceil(p.block_rows as usize))
    }

    #[estimator]
    fn estimate(info: &OpInvokeInfo, dev: &DeviceProfile) -> Estimate {
        let p = info.memory_access_properties();
        Estimate::seconds(
            (p.memory_read_bytes + p.memory_write_bytes) as f64 / dev.memory_bandwidth,
        )
    }

    #[properties]
    fn properties(info: &OpInvokeInfo) -> PerformanceProperties {
        let mut p = info.memory_access_properties();
        p.compute(info.inputs[0].dtype).gp_ops = info.inputs[0].shape.numel() as u64;
        p
    }
}

fn x_type() -> TensorType {
    TensorType {
        shape: Shape::from([20, 64]),
        dtype: DType::F16,
    }
}

#[test]
fn the_kernel_is_registered_and_traced_with_named_globals_and_params() {
    let def = full::def();
    let attrs = full::Params { block_rows: 8 }.to_attributes();
    let kernel = def.trace_kernel(&[x_type()], &attrs).unwrap();
    assert_eq!((kernel.op(), kernel.grid_size()), ("test.full", 3));
    let err = def.trace_kernel(
        &[TensorType {
            shape: Shape::from([4]),
            dtype: DType::F16,
        }],
        &attrs,
    );
    assert_eq!(
        err.unwrap_err().to_string(),
        "op `test.full`: input `x`: expected rank 2, got shape [4] of rank 1"
    );
}

#[test]
fn estimator_and_properties_are_registered() {
    let def = full::def();
    let schema = def.schema();
    assert!(
        schema.implements.kernel && schema.implements.estimator && schema.implements.properties
    );

    let info = def
        .invoke_info(&[x_type()], &full::Params::default().to_attributes())
        .unwrap();
    assert_eq!(info.outputs, vec![x_type()]);
    let props = (def.properties.unwrap())(&info);
    assert_eq!(props.memory_read_bytes, 20 * 64 * 2);
    assert_eq!(props.compute_ops[&DType::F16].gp_ops, 20 * 64);
    let dev = DeviceProfile::builtin("kirin9030").unwrap();
    let estimate = (def.estimator.unwrap())(&info, &dev);
    assert_eq!(estimate.seconds, 2.0 * 20.0 * 64.0 * 2.0 / 6.8e10);
}

#[test]
fn an_op_without_a_kernel_says_so() {
    let err = pto_examples::gelu_affine::def()
        .trace_kernel(&[x_type()], &Default::default())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "op `demo.gelu_affine`: it has no #[kernel], so it runs on the CPU reference only"
    );
}
