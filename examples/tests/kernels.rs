//! The example kernels on the simulator: failures that must be readable, buffers that must
//! be checked, and kernel files that must read back.

use pto_backends::cpu::Cpu;
use pto_backends::sim::Sim;
use pto_examples::{gelu_affine, rms_norm, softmax};
use pto_op::kernel::ir::Pipe;
use pto_op::parity::{ParityCase, check_parity};
use pto_op::prelude::*;
use pto_op::{Attributes, OpDef, TensorType};

fn kirin9030() -> DeviceProfile {
    DeviceProfile::builtin("kirin9030").expect("a built-in profile")
}

fn ty(dims: &[usize], dtype: DType) -> TensorType {
    TensorType {
        shape: Shape::from(dims),
        dtype,
    }
}

/// y = x * 2, with a kernel that gets the scale wrong on purpose.
#[custom_op(name = "test.wrong_kernel")]
pub mod wrong_kernel {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape) -> Result<Shape, OpError> {
        x.expect_rank("x", 2).cloned()
    }

    #[infer_dtype]
    fn infer_dtype(x: DType) -> Result<DType, OpError> {
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor) -> Result<Tensor, OpError> {
        Ok(Tensor::from_array(x.to_f32_array().mapv(|v| v * 2.0)).cast(x.dtype()))
    }

    #[kernel]
    fn kernel(k: &mut Kernel, x: &Global, y: &Global) -> Result<(), OpError> {
        let (rows, cols) = x.dims2()?;
        k.grid(rows.div_ceil(8))?;
        let r0 = k.program_id() * 8;
        let t = k.load(x, (r0, 0), [8, cols])?;
        k.store(y, (r0, 0), &(t * 2.02))
    }
}

/// A row kernel that loads a whole [256, 256] f32 tile: 256 KiB, over any unified buffer.
#[custom_op(name = "test.huge_tile")]
pub mod huge_tile {
    use super::*;

    #[infer_shape]
    fn infer_shape(x: &Shape) -> Result<Shape, OpError> {
        x.expect_rank("x", 2).cloned()
    }

    #[infer_dtype]
    fn infer_dtype(x: DType) -> Result<DType, OpError> {
        Ok(x)
    }

    #[reference]
    fn reference(x: &Tensor) -> Result<Tensor, OpError> {
        Ok(x.clone())
    }

    #[kernel]
    fn kernel(k: &mut Kernel, x: &Global, y: &Global) -> Result<(), OpError> {
        k.grid(1)?;
        let t = k.load(x, (0, 0), [256, 256])?;
        k.store(y, (0, 0), &t)
    }
}

#[test]
fn a_wrong_kernel_fails_parity_with_a_readable_report() {
    let case = ParityCase {
        inputs: vec![ty(&[5, 33], DType::F32)],
        attrs: Attributes::new(),
        ranges: Vec::new(),
        seed: 3,
        tolerance: None,
    };
    let report = check_parity(wrong_kernel::def(), &case, &Cpu, &Sim::new(kirin9030())).unwrap();
    assert!(!report.passed());
    let text = report.to_string();
    assert!(
        text.starts_with("parity of `test.wrong_kernel` (sim vs cpu) failed for x=f32[5, 33], seed 3: output `y`: "),
        "{text}"
    );
    assert!(text.contains("elements differ (max abs error"), "{text}");
    // The first element whose 1% error exceeds f32's tolerance, and both of its values.
    let x = case.input_values().remove(0).to_vec::<f32>().unwrap();
    let first = x
        .iter()
        .position(|v| (v * 0.02).abs() > 1e-5 + 1.3e-6 * (v * 2.0).abs())
        .unwrap();
    let index = format!("[{}, {}]", first / 33, first % 33);
    assert!(
        text.contains(&format!("first at {index}: actual ")),
        "{text}"
    );
    let comparison = &report.outputs[0].1;
    let mismatch = comparison.first_mismatch.as_ref().unwrap();
    assert_eq!(mismatch.expected, f64::from(x[first] * 2.0));
    assert_eq!(mismatch.actual, f64::from((x[first] * 2.02f32) as f32));
}

#[test]
fn a_tile_over_the_unified_buffer_names_buffer_bytes_and_limit() {
    let x = Tensor::random([256, 256], DType::F32, 0);
    let err = huge_tile::run(&Sim::new(kirin9030()), &x, &huge_tile::Params {}).unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with(
            "op `test.huge_tile`: inst 0 (load): UB working set 262144 bytes exceeds the \
             kirin9030 limit of 120832 bytes"
        ),
        "{text}"
    );
    // On the Ascend 910B a program with vector work only runs on one vector core, whose UB
    // (184 KiB) holds the whole tile, as the Ascend C lowering's AIV-only kernel does: only a
    // program whose rows split between the two vector cores holds twice that
    // (`pto_op::kernel::vector_split::block_capacity`).
    let err = huge_tile::run(
        &Sim::new(DeviceProfile::builtin("ascend910b").unwrap()),
        &x,
        &huge_tile::Params {},
    )
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with(
            "op `test.huge_tile`: inst 0 (load): UB working set 262144 bytes exceeds the \
             ascend910b limit of 188416 bytes"
        ),
        "{text}"
    );
}

/// Sample calls of the example ops that have kernels.
fn sample_calls() -> Vec<(&'static OpDef, Vec<TensorType>, Attributes)> {
    vec![
        (
            gelu_affine::def(),
            vec![ty(&[3, 37, 100], DType::F16)],
            gelu_affine::Params::default().to_attributes(),
        ),
        (
            rms_norm::def(),
            vec![ty(&[130, 96], DType::F32), ty(&[96], DType::F32)],
            rms_norm::Params::default().to_attributes(),
        ),
        (
            softmax::def(),
            vec![ty(&[9, 4000], DType::F16)],
            softmax::Params {}.to_attributes(),
        ),
    ]
}

#[test]
fn every_example_kernel_reads_back_from_its_text_form() {
    for (def, inputs, attrs) in sample_calls() {
        let program = def.trace_kernel(&inputs, &attrs).unwrap();
        let text = program.to_string();
        let parsed = pto_op::kernel::text::parse(&text)
            .unwrap_or_else(|e| panic!("{}: {e}\n{text}", def.name));
        assert_eq!(parsed, program, "{}", def.name);
    }
}

#[test]
fn row_kernels_spread_rows_over_the_grid_and_are_vector_bound() {
    let sim = Sim::new(kirin9030());
    let x = Tensor::random([130, 96], DType::F32, 1);
    let gamma = Tensor::random([96], DType::F32, 2);
    let y = rms_norm::run(&sim, &x, &gamma, &rms_norm::Params::default()).unwrap();
    assert_eq!(
        y,
        rms_norm::run(&Cpu, &x, &gamma, &rms_norm::Params::default()).unwrap()
    );
    let report = sim
        .call(
            rms_norm::def(),
            &[&x, &gamma],
            &rms_norm::Params::default().to_attributes(),
        )
        .unwrap()
        .report;
    // 96 f32 columns: 42 rows per 16 KiB tile, so 4 block programs on kirin9030's one core.
    assert_eq!(report.per_core_cycles.len(), 1, "{report}");
    assert!(
        report.per_pipe_busy[&Pipe::V] > 0 && report.per_pipe_busy[&Pipe::Mte2] > 0,
        "{report}"
    );
}
