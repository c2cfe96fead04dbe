//! What a kernel sees of a split core's vector cores (`Kernel::vector_cores`), and that the
//! simulator and the Ascend C lowering agree on it: a kernel may size its UB tiles for both
//! of the 910B's vector cores when its rows split between them; one whose program does not
//! split is traced again for one vector core (`OpDef::trace_kernel_for`), and both targets
//! refuse the program sized for two that does not split.
#![cfg(feature = "device")]

use pto_backends::ascendc::{LowerError, Soc, lower, lower_program};
use pto_backends::sim::{Sim, SimOptions, Simulator};
use pto_op::kernel::ir::MemLevel;
use pto_op::kernel::vector_split::vector_cores_sharing;
use pto_op::prelude::*;
use pto_op::{Attributes, DeviceProfile, TensorType};

/// Columns of `x`.
const COLS: usize = 256;

/// The rows of one block program: as many per vector core as three f32 rows of `x` fit its
/// UB (a multiple of 16), times the vector cores sharing the block.
fn block_rows(k: &Kernel) -> usize {
    let ub = k.buffer_capacity(MemLevel::Ub).unwrap_or(96 * 1024) as usize;
    (ub / (3 * COLS * 4) / 16 * 16).max(16) * k.vector_cores()
}

/// One block of rows `r0..r0 + rows`: `2 x + rowsum(a @ b)`, with the matmul's rows handed
/// from the cube to the vector side.
fn block(
    k: &mut Kernel,
    a: &Global,
    b: &Global,
    x: &Global,
    r0: impl Into<Idx> + Clone,
    rows: usize,
) -> Result<Tile, OpError> {
    let at = k.load_l1(a, (r0.clone(), 0), [rows, 16])?;
    let bt = k.load_l1(b, (0, 0), [16, 16])?;
    let c = k.matmul(&at, &bt, None, false)?.to_ub(DType::F32);
    let xt = k.load(x, (r0, 0), [rows, COLS])?;
    Ok(xt * 2.0 + c.sum(-1))
}

fn reference_rows(a: &Tensor, b: &Tensor, x: &Tensor) -> Result<ndarray::Array2<f32>, OpError> {
    let c = a.to_f32_matrix("a")?.dot(&b.to_f32_matrix("b")?);
    let sums = c.sum_axis(ndarray::Axis(1)).insert_axis(ndarray::Axis(1));
    Ok(x.to_f32_matrix("x")? * 2.0 + sums)
}

fn same_rows(x: &Shape, a: &Shape) -> Result<(), OpError> {
    let (rows, cols) = x.expect_matrix("x")?;
    if cols != COLS || a.dims() != [rows, 16] {
        return Err(OpError::input(
            "a",
            format!("expected [{rows}, 16] and x of [rows, {COLS}], got {a} and {x}"),
        ));
    }
    Ok(())
}

/// `y = 2 x + rowsum(a @ b)` in blocks of rows sized for the vector cores: the rows split.
#[custom_op(name = "test.rows_split")]
pub mod rows_split {
    use super::*;

    #[infer_shape]
    fn infer_shape(a: &Shape, _b: &Shape, x: &Shape) -> Result<Shape, OpError> {
        same_rows(x, a)?;
        Ok(x.clone())
    }

    #[infer_dtype]
    fn infer_dtype(_a: DType, _b: DType, _x: DType) -> Result<DType, OpError> {
        Ok(DType::F32)
    }

    #[reference]
    fn reference(a: &Tensor, b: &Tensor, x: &Tensor) -> Result<Tensor, OpError> {
        Ok(Tensor::from_array(reference_rows(a, b, x)?.into_dyn()))
    }

    #[kernel]
    fn kernel(
        k: &mut Kernel,
        a: &Global,
        b: &Global,
        x: &Global,
        y: &Global,
    ) -> Result<(), OpError> {
        let (n, _) = x.dims2()?;
        let rows = block_rows(k);
        k.grid(n.div_ceil(rows))?;
        let r0 = k.program_id() * rows;
        let yt = block(k, a, b, x, r0, rows)?;
        k.store(y, (r0, 0), &yt)
    }
}

/// `y = colsum(2 x + rowsum(a @ b))` in one block program walking blocks of rows sized for
/// the vector cores: the column sum mixes rows, so they do not split.
#[custom_op(name = "test.rows_summed")]
pub mod rows_summed {
    use super::*;

    #[infer_shape]
    fn infer_shape(a: &Shape, _b: &Shape, x: &Shape) -> Result<Shape, OpError> {
        same_rows(x, a)?;
        Ok(Shape::from([1, COLS]))
    }

    #[infer_dtype]
    fn infer_dtype(_a: DType, _b: DType, _x: DType) -> Result<DType, OpError> {
        Ok(DType::F32)
    }

    #[reference]
    fn reference(a: &Tensor, b: &Tensor, x: &Tensor) -> Result<Tensor, OpError> {
        let rows = reference_rows(a, b, x)?;
        Ok(Tensor::from_array(
            rows.sum_axis(ndarray::Axis(0))
                .insert_axis(ndarray::Axis(0))
                .into_dyn(),
        ))
    }

    #[kernel]
    fn kernel(
        k: &mut Kernel,
        a: &Global,
        b: &Global,
        x: &Global,
        y: &Global,
    ) -> Result<(), OpError> {
        let (n, _) = x.dims2()?;
        let rows = block_rows(k);
        k.grid(1)?;
        let init = [k.full([1, COLS], DType::F32, 0.0)];
        let last = k.fold(n.div_ceil(rows), &init, |k, i, carried| {
            let [sum] = carried else {
                return Err(OpError::invalid("the fold carries the sum"));
            };
            let yt = block(k, a, b, x, i * rows, rows)?;
            Ok(vec![sum + yt.sum(0)])
        })?;
        let [sum] = last.as_slice() else {
            return Err(OpError::invalid("the fold returns the sum"));
        };
        k.store(y, (0, 0), sum)
    }
}

fn inputs() -> Vec<TensorType> {
    let t = |dims: [usize; 2], dtype| TensorType {
        shape: Shape::from(dims),
        dtype,
    };
    vec![
        t([384, 16], DType::F16),
        t([16, 16], DType::F16),
        t([384, COLS], DType::F32),
    ]
}

/// The rows of the `x` tile of `program` (its only `[rows, COLS]` load).
fn x_rows(program: &pto_op::kernel::ValidProgram) -> usize {
    program
        .tiles
        .iter()
        .find(|t| {
            t.level == MemLevel::Ub && t.shape.len() == 2 && t.shape[1] == COLS && t.shape[0] > 1
        })
        .map(|t| t.shape[0])
        .expect("an x tile")
}

#[test]
fn a_kernel_sizes_for_both_vector_cores_only_where_its_rows_split() {
    let ascend = DeviceProfile::builtin("ascend910b").expect("built-in");
    let kirin = DeviceProfile::builtin("kirin9030").expect("built-in");
    let attrs = Attributes::new();
    // 184 KiB / (3 x 1 KiB) -> 48 rows per vector core on the 910B; 118 KiB -> 32 on Kirin.
    for (op, device, rows, sharing) in [
        (rows_split::def(), &ascend, 96, 2),
        (rows_summed::def(), &ascend, 48, 1),
        (rows_split::def(), &kirin, 32, 1),
        (rows_summed::def(), &kirin, 32, 1),
    ] {
        let what = format!("{} on {}", op.name, device.name);
        let traced = op
            .trace_kernel_for(&inputs(), &attrs, device)
            .expect("traces");
        assert_eq!(x_rows(&traced), rows, "{what}: the traced block rows");
        assert_eq!(vector_cores_sharing(device, &traced), sharing, "{what}");
        // The simulator runs it, and the lowering lowers the same program.
        let sim = Sim::new(device.clone());
        let program = sim.program(op, &inputs(), &attrs).expect("traces");
        assert_eq!(
            program.to_string(),
            traced.to_string(),
            "{what}: the simulator's program"
        );
        sim.time_call(op, &inputs(), &attrs)
            .expect("fits the simulator's buffers");
        let soc = if device.name == "ascend910b" {
            Soc::Ascend910B
        } else {
            Soc::Kirin9030
        };
        if soc == Soc::Kirin9030 {
            // Its f16 matmul accumulates in f32, which Kirin's cube does not have: the
            // capability table refuses it by name (docs/deploying.md, "What each SoC lowers").
            let err = lower(op, &inputs(), &attrs, soc).expect_err("no cube path on Kirin");
            assert!(err.is_unsupported_on_soc(), "{what}: {err}");
            continue;
        }
        let lowered = lower(op, &inputs(), &attrs, soc).expect("lowers within UB");
        let of_sim =
            lower_program(&program, &op.call_text(&inputs(), &attrs), soc, device).expect("lowers");
        assert_eq!(lowered.kernel_source, of_sim.kernel_source, "{what}");
    }
}

/// The column-summed program traced for two vector cores (96-row blocks, what
/// `trace_kernel_for` would give without tracing again) needs one vector core to hold whole
/// 96-row tiles: over its 184 KiB, and both targets say so.
#[test]
fn a_program_sized_for_two_vector_cores_that_does_not_split_fits_neither_target() {
    let ascend = DeviceProfile::builtin("ascend910b").expect("built-in");
    let mut k = Kernel::new("test.rows_summed")
        .with_core_count(ascend.ai_cores as usize)
        .with_buffers(ascend.buffers)
        .with_vector_cores(2);
    let types = inputs();
    let globals: Vec<Global> = ["a", "b", "x"]
        .iter()
        .zip(&types)
        .map(|(name, t)| k.input(name, t.shape.clone(), t.dtype))
        .collect();
    let y = k.output("y", Shape::from([1, COLS]), DType::F32);
    let rows = block_rows(&k);
    assert_eq!(rows, 96);
    k.grid(1).expect("grid");
    let init = [k.full([1, COLS], DType::F32, 0.0)];
    let last = k
        .fold(384 / rows, &init, |k, i, carried| {
            let yt = block(k, &globals[0], &globals[1], &globals[2], i * rows, rows)?;
            Ok(vec![&carried[0] + yt.sum(0)])
        })
        .expect("traces");
    k.store(&y, (0, 0), &last[0]).expect("stores");
    let program = k.finish().expect("valid");
    assert_eq!(vector_cores_sharing(&ascend, &program), 1);

    let sim = Simulator::new(ascend.clone(), SimOptions::default());
    let error = sim.time(&program).expect_err("over one UB").to_string();
    assert!(error.contains("UB") || error.contains("ub"), "{error}");
    match lower_program(&program, "test", Soc::Ascend910B, &ascend) {
        Err(LowerError::Capacity { buffer: "UB", .. }) => {}
        other => panic!(
            "expected the UB capacity error, got {:?}",
            other.map(|k| k.grid)
        ),
    }
}
