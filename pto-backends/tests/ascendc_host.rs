//! The `ascendc-host` target: std ops' kernels lowered to Ascend C, compiled and run on the
//! host, against their references.
#![cfg(feature = "device")]

use pto_backends::ascendc::AscendcHost;
use pto_backends::cpu::Cpu;
use pto_op::parity::{ParityCase, check_parity};
use pto_op::{Attributes, DType, OpDef, Shape, TensorType, ops};

fn ty(dtype: DType, dims: &[usize]) -> TensorType {
    TensorType {
        shape: Shape::from(dims),
        dtype,
    }
}

fn run(def: &'static OpDef, shapes: &[&[usize]], dtype: DType) -> String {
    let host = AscendcHost::from_env();
    let case = ParityCase {
        inputs: shapes.iter().map(|d| ty(dtype, d)).collect(),
        attrs: Attributes::new(),
        seed: 3,
        tolerance: None,
    };
    match check_parity(def, &case, &Cpu, &host) {
        Ok(report) => report.to_string(),
        Err(e) => format!("ERROR {e}"),
    }
}

#[test]
fn smoke() {
    for dtype in [DType::F32, DType::F16] {
        println!("{}", run(ops::add::def(), &[&[13, 100], &[13, 100]], dtype));
        println!("{}", run(ops::add::def(), &[&[13, 100], &[100]], dtype));
        println!("{}", run(ops::softmax::def(), &[&[13, 100]], dtype));
        println!(
            "{}",
            run(ops::matmul::def(), &[&[100, 70], &[70, 50]], dtype)
        );
    }
}
