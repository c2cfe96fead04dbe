//! `#[kernel]`, `#[estimator]` and `#[properties]` are checked, registered and callable
//! through the op's description.

use pto_op::TensorType;
use pto_op::kernel::ir::{GlobalRole, Inst, TileId};
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
        let (rows, cols) = x.dims2()?;
        let tr = p.block_rows as usize;
        k.grid(rows.div_ceil(tr))?;
        let r0 = k.program_id() * tr;
        let xt = k.load(x, (r0, 0), [tr, cols])?.cast(DType::F32);
        k.store(y, (r0, 0), &(xt + 1.0).cast(y.dtype()))
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
    let program = def.trace_kernel(&[x_type()], &attrs).unwrap();
    assert_eq!((program.op.as_str(), program.grid), ("test.full", 3));
    let names: Vec<(&str, GlobalRole)> = program
        .globals
        .iter()
        .map(|g| (g.name.as_str(), g.role))
        .collect();
    assert_eq!(names, [("x", GlobalRole::Input), ("y", GlobalRole::Output)]);
    let mnemonics: Vec<&str> = program.body.iter().map(Inst::mnemonic).collect();
    assert_eq!(mnemonics, ["load", "cast", "binary", "cast", "store"]);
    assert_eq!(program.tiles[TileId::new(0)].to_string(), "f16[8, 64]@ub");
    let text = program.to_string();
    assert_eq!(
        pto_op::kernel::text::parse(&text).unwrap(),
        program,
        "{text}"
    );
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
    let err = pto_examples::moments::def()
        .trace_kernel(&[x_type()], &Default::default())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "op `demo.moments`: it has no #[kernel], so it runs on the CPU reference only"
    );
}
