//! The `ascendc-host` target and the host implementation of the Ascend C API: a wrong
//! lowering fails parity with a readable report, and generated code that breaks a rule of
//! the device stops with the rule named.
#![cfg(feature = "device")]

use pto_backends::ascendc::{AscendcHost, HostError, Soc, lower, lower_with_profile};
use pto_backends::compiler::compile;
use pto_backends::cpu::Cpu;
use pto_op::parity::{ParityCase, assert_parity, check_parity};
use pto_op::{
    Attributes, DType, DeviceProfile, Execution, Executor, Graph, OpDef, OpError, Shape, Tensor,
    TensorType, ops,
};

fn ty(dtype: DType, dims: &[usize]) -> TensorType {
    TensorType {
        shape: Shape::from(dims),
        dtype,
    }
}

fn profile() -> DeviceProfile {
    DeviceProfile::builtin("kirin9030").expect("built-in profile")
}

/// The `ascendc-host` target with an edit applied to every generated kernel source.
struct Edited {
    host: AscendcHost,
    name: String,
    edit: fn(&str) -> String,
}

impl Executor for Edited {
    fn target(&self) -> &str {
        &self.name
    }

    fn execute(
        &self,
        op: &'static OpDef,
        inputs: &[&Tensor],
        attrs: &Attributes,
    ) -> Result<Execution, OpError> {
        let types: Vec<TensorType> = inputs
            .iter()
            .map(|t| TensorType {
                shape: t.shape(),
                dtype: t.dtype(),
            })
            .collect();
        let fail = |e: HostError| e.into_op_error(op.name);
        let mut kernel = lower_with_profile(op, &types, attrs, Soc::Kirin9030, &profile())
            .map_err(|e| fail(e.into()))?;
        kernel.kernel_source = (self.edit)(&kernel.kernel_source);
        let build = self.host.compile(kernel, &profile()).map_err(fail)?;
        self.host
            .run(&build, inputs)
            .map(Execution::untimed)
            .map_err(fail)
    }
}

fn edited(name: &str, edit: fn(&str) -> String) -> Edited {
    Edited {
        host: AscendcHost::on(None),
        name: name.to_owned(),
        edit,
    }
}

fn case(shapes: &[&[usize]], dtype: DType) -> ParityCase {
    ParityCase {
        inputs: shapes.iter().map(|d| ty(dtype, d)).collect(),
        attrs: Attributes::new(),
        ranges: Vec::new(),
        seed: 3,
        tolerance: None,
    }
}

#[test]
fn the_unedited_kernel_passes_and_a_flipped_instruction_fails_with_a_readable_report() {
    let add = ops::add::def();
    let case = case(&[&[13, 100], &[13, 100]], DType::F32);
    let same = edited("ascendc-host", str::to_owned);
    let report = check_parity(add, &case, &Cpu, &same).expect("runs");
    assert!(report.passed(), "{report}");

    let flipped = edited("ascendc-host, Add flipped to Sub", |source| {
        assert!(source.contains("Add(t"), "no Add in:\n{source}");
        source.replacen("Add(t", "Sub(t", 1)
    });
    let report = check_parity(add, &case, &Cpu, &flipped).expect("runs");
    assert!(!report.passed(), "{report}");
    let text = report.to_string();
    for part in [
        "parity of `std.add` (ascendc-host, Add flipped to Sub vs cpu) failed for \
         a=f32[13, 100], b=f32[13, 100], seed 3: output `y`: ",
        "elements differ",
        "first at [0, 0]: actual ",
    ] {
        assert!(text.contains(part), "{part:?} not in: {text}");
    }
}

/// An edit of a generated kernel source.
type Edit = fn(&str) -> String;

/// Runs softmax f32[13, 100] with `edit` applied to its kernel and returns the failure.
fn broken(edit: fn(&str) -> String, rule: &str) -> String {
    let host = edited("ascendc-host, edited", edit);
    let x = Tensor::random([13, 100], DType::F32, 1);
    match host.execute(ops::softmax::def(), &[&x], &Attributes::new()) {
        Ok(_) => panic!("the kernel edited to break {rule:?} ran"),
        Err(e) => e.to_string(),
    }
}

/// `source` with `line` inserted after the first instruction marker of the block.
fn after_first_instruction(source: &str, line: &str) -> String {
    let at = source.find("PTO_INST(0, ").expect("an instruction");
    let end = at + source[at..].find('\n').expect("a line end") + 1;
    format!("{}{line}\n{}", &source[..end], &source[end..])
}

#[test]
fn the_host_implementation_stops_at_broken_device_rules() {
    let cases: [(Edit, &str); 8] = [
        (
            |s| s.replacen("inQueue_t0.FreeTensor(t0);", "", 1),
            "TQue: queue discipline: a tensor of the VECIN queue at UB address 0 was not \
             freed (FreeTensor) before the kernel ended",
        ),
        (
            |s| s.replacen("inQueue_t0.EnQue(t0);", "", 1),
            "TQue::DeQue: queue discipline: DeQue of an empty VECIN queue (EnQue first)",
        ),
        (
            |s| {
                let at = s.find("pipe.InitBuffer(calcBuf, ").expect("a calcBuf");
                let end = at + s[at..].find(')').expect("a call");
                format!("{}pipe.InitBuffer(calcBuf, 200000{}", &s[..at], &s[end..])
            },
            "TPipe::InitBuffer: buffer capacity: VECCALC needs 200000 bytes after",
        ),
        (
            |s| {
                after_first_instruction(
                    s,
                    "{ LocalTensor<float> probe = calcBuf.Get<float>(); DataCopy(probe, probe[64], 7); }",
                )
            },
            "DataCopy: 32-byte alignment: 7 elements of 4 bytes are 28 bytes, not a multiple of 32",
        ),
        (
            |s| {
                after_first_instruction(
                    s,
                    "{ LocalTensor<float> probe = calcBuf.Get<float>(); \
                     Adds(probe, probe, 1.0f, 64, 300, UnaryRepeatParams{}); }",
                )
            },
            "Adds: repeat limit: repeatTimes 300 is not in 0..255",
        ),
        (
            |s| s.replacen("SetFlag<HardEvent::V_S>(sync);", "", 1),
            "WaitFlag: synchronisation: WaitFlag of HardEvent::V_S id 0 without a SetFlag before it",
        ),
        // The scalar reads a vector result with no V_S between them: a race of two pipes.
        (
            |s| {
                let at = s
                    .find("SetFlag<HardEvent::V_S>(sync);")
                    .expect("a V_S pair");
                let wait = "WaitFlag<HardEvent::V_S>(sync);";
                let end = at + s[at..].find(wait).expect("its wait") + wait.len();
                format!("{}{}", &s[..at], &s[end..])
            },
            "LocalTensor::GetValue: pipe race: read after write on UB bytes",
        ),
        // A fixed event id beside the TQues, on the id the input queue's EnQue holds.
        (
            |s| {
                let at = s.find("inQueue_t0.EnQue(t0);").expect("an EnQue");
                let end = at + "inQueue_t0.EnQue(t0);".len();
                format!(
                    "{}\nSetFlag<HardEvent::MTE2_V>(EVENT_ID0);{}",
                    &s[..end],
                    &s[end..]
                )
            },
            "SetFlag: event id: event id 0 of HardEvent::MTE2_V is held by a TQue of the TPipe",
        ),
    ];
    for (edit, rule) in cases {
        let message = broken(edit, rule);
        assert!(message.contains("ascendc-host: block 0: "), "{message}");
        assert!(message.contains(rule), "{rule:?} not in: {message}");
    }
}

#[test]
fn bf16_is_a_lowering_error_on_kirin_and_lowers_for_the_910b() {
    let a = ty(DType::BF16, &[32, 64]);
    let b = ty(DType::BF16, &[64, 32]);
    let add = ops::matmul::def();
    let error = lower(
        add,
        &[a.clone(), b.clone()],
        &Attributes::new(),
        Soc::Kirin9030,
    )
    .expect_err("Kirin has no bf16");
    assert!(error.is_unsupported_dtype(), "{error}");
    assert!(
        error
            .to_string()
            .contains("dtype bf16 of `a` is not supported on kirin9030 (dav-l311)"),
        "{error}"
    );
    let kernel = lower(add, &[a, b], &Attributes::new(), Soc::Ascend910B).expect("lowers");
    assert!(kernel.kernel_source.contains("Mmad("));
    assert!(kernel.kernel_source.contains("bfloat16_t"));
}

/// A bf16 matmul: Kirin has no bf16, the 910B does.
fn bf16_matmul() -> ParityCase {
    case(&[&[32, 64], &[64, 32]], DType::BF16)
}

#[test]
fn a_parity_run_names_the_device_that_refused_the_kernel_and_why() {
    let run = assert_parity(ops::matmul::def(), &bf16_matmul());
    let text = run.to_string();
    for line in [
        "parity of `std.matmul` for a=bf16[32, 64], b=bf16[64, 32], seed 3 (reference on cpu):",
        "\n  sim: ran, passed: output `y`: all 1024 elements match (max abs error ",
        "\n  ascendc-host on kirin9030: skipped: the lowering refused the kernel: ",
        "dtype bf16 of `a` is not supported on kirin9030 (dav-l311)",
        "\n  ascendc-host on ascend910b: ran, passed: output `y`: all 1024 elements match",
    ] {
        assert!(text.contains(line), "{line:?} not in:\n{text}");
    }
    assert_eq!(run.targets.len(), 3, "{text}");
}

#[test]
fn compile_says_why_the_lowering_refused_a_kernel() {
    let graph = Graph::new();
    let a = graph.input("a", Shape::from([32, 64]), DType::BF16);
    let b = graph.input("b", Shape::from([64, 32]), DType::BF16);
    let y = ops::matmul::apply(&a, &b, &ops::matmul::Params {}).expect("valid shapes");
    graph.output(&y);
    let model = graph.to_model("bf16_matmul").expect("std ops are linked");
    let compiled = compile(&model, "ascendc-host").expect("falls back to the CPU");
    let report = compiled.report();
    let reason = report.nodes[0].declined.as_deref().unwrap_or_default();
    assert!(
        reason.contains("dtype bf16 of `a` is not supported on kirin9030 (dav-l311)"),
        "{reason}"
    );
    let text = report.to_string();
    assert!(
        text.contains("reference (fallback: kernel refused, see below)"),
        "{text}"
    );
    assert!(
        text.contains("node 0 `std.matmul`: the ascendc-host lowering refused the op's kernel: "),
        "{text}"
    );
    assert!(!text.contains("fallback: no kernel"), "{text}");
}

#[test]
fn every_soc_runs_its_profile_and_bf16_runs_on_the_910b() {
    for soc in Soc::ALL {
        let profile = DeviceProfile::builtin(soc.profile_name()).expect("built-in profile");
        let host = AscendcHost::on(Some(&profile));
        assert_eq!(host.soc().expect("a SoC"), soc);
        let mut dtypes = vec![DType::F32, DType::F16];
        if soc.supports(DType::BF16) {
            dtypes.push(DType::BF16);
        }
        for dtype in dtypes {
            let rms = case(&[&[13, 100], &[100]], dtype);
            let report = check_parity(ops::rms_norm::def(), &rms, &Cpu, &host).expect("runs");
            assert!(report.passed(), "{soc}: {report}");
            let mm = case(&[&[33, 40], &[40, 17]], dtype);
            if soc.has(Soc::mmad_cap(dtype, DType::F32).expect("a float Mmad row")) {
                let report = check_parity(ops::matmul::def(), &mm, &Cpu, &host).expect("runs");
                assert!(report.passed(), "{soc}: {report}");
            } else {
                // Kirin has no float L0C (Mmad.md, tables 11 and 12): the lowering refuses
                // rather than emitting a cube the device would not run.
                let types = [ty(dtype, &[33, 40]), ty(dtype, &[40, 17])];
                let error = lower(ops::matmul::def(), &types, &Attributes::new(), soc)
                    .expect_err("no float accumulator on Kirin");
                assert!(error.is_unsupported_on_soc(), "{soc}: {error}");
                let text = error.to_string();
                assert!(
                    text.contains(&soc.to_string()) && text.contains("Mmad"),
                    "{text}"
                );
            }
        }
    }
}

#[test]
fn a_kernel_over_the_unified_buffer_is_a_lowering_error_naming_the_buffers() {
    // Traced for kirin9030's UB (its row tiles sized for 118 KiB), lowered for 16 KiB: a
    // kernel traced for the small profile would size its row tiles to fit it.
    let x = ty(DType::F32, &[32, 256]);
    let program = ops::softmax::def()
        .trace_kernel_for(&[x], &Attributes::new(), &profile())
        .expect("traces");
    let mut profile = profile();
    profile.buffers.ub = 16 * 1024;
    let error =
        pto_backends::ascendc::lower_program(&program, "x=f32[32, 256]", Soc::Kirin9030, &profile)
            .expect_err("over the UB");
    let text = error.to_string();
    for part in [
        "op `std.softmax`: the kernel reserves ",
        " bytes of UB (inQueue_t0 1x",
        "calcBuf ",
        "the kirin9030 profile has 16384",
    ] {
        assert!(text.contains(part), "{part:?} not in: {text}");
    }
}

#[test]
fn a_lowered_kernel_has_the_entry_tiling_and_pipe_of_an_ascend_c_kernel() {
    let x = ty(DType::F16, &[37, 100]);
    let kernel = lower(ops::gelu::def(), &[x], &Attributes::new(), Soc::Kirin9030).expect("lowers");
    assert_eq!(
        (kernel.entry.as_str(), kernel.grid),
        ("std_gelu", kernel.block_dim.max(1))
    );
    assert_eq!(kernel.tiling_struct, "StdGeluTilingData");
    assert!(kernel.tiling_header.contains(
        "struct StdGeluTilingData {\n    uint32_t grid;\n    uint32_t x_dim0;\n    uint32_t x_dim1;"
    ));
    let source = &kernel.kernel_source;
    for part in [
        "// op `std.gelu`, instance x=f16[37, 100]",
        "// SoC kirin9030 (dav-l311, __NPU_ARCH__ 3113), Ascend C API of CANN 9.0.0",
        "#include \"kernel_operator.h\"",
        "#include \"std_gelu_tiling.h\"",
        "extern \"C\" __global__ __aicore__ void std_gelu(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling)",
        "GET_TILING_DATA_WITH_STRUCT(StdGeluTilingData, tilingData, tiling);",
        "for (int64_t pid = GetBlockIdx(); pid < static_cast<int64_t>(grid); pid += GetBlockNum())",
        "TPipe pipe;",
        "TQue<TPosition::VECIN, 1> inQueue_t0;",
        "TQue<TPosition::VECOUT, 1>",
        "LocalTensor<half> t0 = inQueue_t0.AllocTensor<half>();",
        "inQueue_t0.EnQue(t0);",
        "t0 = inQueue_t0.DeQue<half>();",
        "inQueue_t0.FreeTensor(t0);",
        "Cast(t1, t0, RoundMode::CAST_NONE, ",
        "RoundMode::CAST_RINT",
        "DataCopyPad(",
    ] {
        assert!(source.contains(part), "{part:?} not in:\n{source}");
    }
    assert_eq!(kernel.buffer_bytes.l0c, 0);
    assert!(kernel.buffer_bytes.ub > 0);
}

/// A fold loading a UB chunk per iteration: the loads are double-buffered (queue depth 2)
/// and the loop carries the running sum; the host run matches the simulator's.
#[test]
fn a_vector_loop_double_buffers_its_loads_and_matches_the_simulator() {
    use pto_backends::sim::exec::execute;
    use pto_op::Kernel;

    let mut k = Kernel::new("test.rowsum");
    let x = k.input("x", Shape::from([8, 250]), DType::F32);
    let y = k.output("y", Shape::from([8, 1]), DType::F32);
    k.grid(1).expect("grid");
    let zero = k.full([8, 1], DType::F32, 0.0);
    let total = k
        .fold(4, &[zero], |k, i, carried| {
            let chunk = k.load(&x, (0, i * 64), [8, 64])?;
            Ok(vec![&carried[0] + chunk.exp().sum(-1)])
        })
        .expect("traces");
    k.store(&y, [0, 0], &total[0]).expect("stores");
    let program = k.finish().expect("a program");

    let kernel =
        pto_backends::ascendc::lower_program(&program, "x=f32[8, 250]", Soc::Kirin9030, &profile())
            .expect("lowers");
    let source = &kernel.kernel_source;
    for part in [
        "TQue<TPosition::VECIN, 2> inQueue_t",
        "for (int64_t i0 = 0; i0 < 4; ++i0) {",
        "DataCopyPad(",
    ] {
        assert!(source.contains(part), "{part:?} not in:\n{source}");
    }
    let host = AscendcHost::on(None);
    let build = host.compile(kernel, &profile()).expect("compiles");
    let input = Tensor::random([8, 250], DType::F32, 4);
    let actual = host.run(&build, &[&input]).expect("runs");
    let expected = execute(&program, &[&input]).expect("simulates");
    let comparison = actual[0]
        .compare(&expected[0], pto_op::Tolerance::new(1e-5, 1e-5))
        .expect("comparable");
    assert!(comparison.passed(), "{comparison}");
}

/// Every tile-language math function lowers to its Ascend C call (with a
/// `sharedTmpBuffer` where the API takes one), and the host run matches the simulator's,
/// with tile and scalar operands on either side.
#[test]
fn math_functions_lower_to_their_ascend_c_calls_and_match_the_simulator() {
    use pto_backends::sim::exec::execute;
    use pto_op::{Kernel, Tile};

    type Make = fn(&Tile, &Tile) -> Tile;
    let functions: [(&str, &[&str], Make); 14] = [
        (
            "sin",
            &["Sin(", "calcBuf.GetWithOffset<uint8_t>("],
            |x, _| (x * 4.0).sin(),
        ),
        ("cos", &["Cos("], |x, _| (x * 4.0).cos()),
        ("floor", &["Floor("], |x, _| (x * 4.0).floor()),
        ("ceil", &["Ceil("], |x, _| (x * 4.0).ceil()),
        ("erf", &["Erf("], |x, _| (x * 3.0).erf()),
        ("exp2", &["Muls(", "Exp("], |x, _| (x * 4.0).exp2()),
        ("log2", &["Ln(", "Muls("], |x, _| (x.abs() + 0.5).log2()),
        ("pow", &["Power("], |x, y| (x.abs() + 0.5).pow(&(y * 3.0))),
        ("pow scalar exponent", &["Duplicate(", "Power("], |x, _| {
            (x.abs() + 0.5).pow(2.5)
        }),
        ("exp_base", &["Duplicate(", "Power("], |x, _| {
            (x * 2.0).exp_base(3.0)
        }),
        ("rem", &["Fmod("], |x, y| (x * 8.0) % (y * 3.0)),
        ("rem scalar", &["Fmod("], |x, _| (x * 8.0) % -3.0),
        ("mod", &["Fmod(", "CompareScalar(", "Select("], |x, y| {
            (x * 8.0).modulo(&(y * 3.0))
        }),
        ("mod scalar", &["Fmod(", "Select("], |x, _| {
            (x * 8.0).modulo(3.0)
        }),
    ];
    let host = AscendcHost::on(None);
    let a = Tensor::random([8, 40], DType::F32, 11);
    let b = Tensor::random([8, 40], DType::F32, 12);
    for (name, calls, make) in functions {
        let mut k = Kernel::new("test.math");
        let x = k.input("x", Shape::from([8, 40]), DType::F32);
        let w = k.input("w", Shape::from([8, 40]), DType::F32);
        let y = k.output("y", Shape::from([8, 40]), DType::F32);
        k.grid(1).expect("grid");
        let xt = k.load(&x, [0, 0], [8, 40]).expect("loads");
        let wt = k.load(&w, [0, 0], [8, 40]).expect("loads");
        k.store(&y, [0, 0], &make(&xt, &wt)).expect("stores");
        let program = k.finish().expect("a program");
        let kernel = pto_backends::ascendc::lower_program(
            &program,
            "x=f32[8, 40], w=f32[8, 40]",
            Soc::Kirin9030,
            &profile(),
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        for call in calls {
            assert!(
                kernel.kernel_source.contains(call),
                "{name}: {call:?} not in:\n{}",
                kernel.kernel_source
            );
        }
        let build = host.compile(kernel, &profile()).expect("compiles");
        let actual = host.run(&build, &[&a, &b]).expect("runs");
        let expected = execute(&program, &[&a, &b]).expect("simulates");
        let comparison = actual[0]
            .compare(&expected[0], pto_op::Tolerance::new(1e-5, 1e-5))
            .expect("comparable");
        assert!(comparison.passed(), "{name}: {comparison}");
    }
}

/// Integer remainders are refused by name: `Fmod` is a float API and a route through f32
/// would round past 2^24.
#[test]
fn an_integer_remainder_is_refused_by_name() {
    use pto_op::Kernel;

    let mut k = Kernel::new("test.irem");
    let x = k.input("x", Shape::from([8, 64]), DType::I32);
    let y = k.output("y", Shape::from([8, 64]), DType::I32);
    let t = k.load(&x, [0, 0], [8, 64]).expect("loads");
    k.store(&y, [0, 0], &(&t % 3.0)).expect("stores");
    let program = k.finish().expect("a program");
    let err = pto_backends::ascendc::lower_program(&program, "x", Soc::Kirin9030, &profile())
        .expect_err("an integer rem");
    assert_eq!(
        err.to_string(),
        "op `test.irem`: inst 1 (binary): rem of i32 (the Ascend C math API takes half and \
         float) on kirin9030 (dav-l311)"
    );
}

/// An i32 iota starting at `start` along `axis` of an `[8, 64]` tile, stored: its lowering
/// for kirin9030 run on the host, and the simulator's run of the same program.
fn run_iota(start: i64, axis: isize) -> (Result<Vec<Tensor>, HostError>, Vec<i64>) {
    use pto_op::Kernel;

    let mut k = Kernel::new("test.iota");
    let y = k.output("y", Shape::from([8, 64]), DType::I32);
    let t = k.iota([8, 64], axis, start, DType::I32);
    k.store(&y, [0, 0], &t).expect("stores");
    let program = k.finish().expect("a program");
    let sim = pto_backends::sim::Simulator::new(profile(), Default::default())
        .run(&program, &[])
        .map(|run| {
            run.outputs[0]
                .cast(DType::I64)
                .to_vec::<i64>()
                .expect("i64")
        })
        .map_err(|e| e.to_string());
    let host = AscendcHost::on(None);
    let kernel = pto_backends::ascendc::lower_program(&program, "y", Soc::Kirin9030, &profile())
        .expect("lowers");
    let run = host
        .compile(kernel, &profile())
        .and_then(|build| host.run(&build, &[]));
    (run, sim.unwrap_or_default())
}

/// An i32 iota is exact up to `i32::MAX`, and a start beyond the i32 range stops the kernel
/// naming the value instead of wrapping, along the last axis (`ArithProgression`) and
/// another (`Duplicate` per row), as the simulator refuses it.
#[test]
fn an_i32_iota_is_exact_to_its_range_and_stops_beyond_it() {
    let top = i64::from(i32::MAX) - 63;
    let (run, sim) = run_iota(top, 1);
    let values = run.expect("fits i32")[0]
        .cast(DType::I64)
        .to_vec::<i64>()
        .expect("i64");
    let expected: Vec<i64> = (0..8).flat_map(|_| top..=i64::from(i32::MAX)).collect();
    assert_eq!(values, expected);
    assert_eq!(sim, expected, "the simulator agrees");

    let beyond = i64::from(i32::MAX) + 1;
    for (start, axis) in [
        (beyond, 1),
        (beyond, 0),
        (i64::from(i32::MIN) - 8, 0),
        (3 << 31, 1),
    ] {
        let (run, sim) = run_iota(start, axis);
        assert!(
            sim.is_empty(),
            "the simulator refuses start {start}: {sim:?}"
        );
        let message = match run {
            Err(HostError::Run { message, .. }) => message,
            other => panic!("start {start}, axis {axis}: expected a stop, got {other:?}"),
        };
        assert!(
            message.contains("iota: integer overflow")
                && message.contains(&start.to_string())
                && message.contains("-2147483648..2147483647"),
            "start {start}, axis {axis}: {message}"
        );
    }
}

/// A scratch directory of this test binary's.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("host-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

#[test]
fn a_kernel_that_never_ends_is_killed_at_its_timeout() {
    use pto_backends::ascendc::{ChildLimits, HostBuild};
    use std::os::unix::fs::PermissionsExt;
    use std::time::{Duration, Instant};

    let run = ChildLimits {
        timeout: Duration::from_millis(500),
        ..ChildLimits::RUN
    };
    let host = AscendcHost::on(None).with_limits(ChildLimits::BUILD, run);
    let x = Tensor::random([4, 64], DType::F32, 1);
    let types = [ty(DType::F32, &[4, 64]), ty(DType::F32, &[4, 64])];
    let build = host
        .build(ops::add::def(), &types, &Attributes::new())
        .expect("std.add builds");
    // A kernel that loops forever, as a hostile package's might.
    let looping = scratch("timeout").join("kernel");
    std::fs::write(&looping, "#!/bin/sh\nwhile :; do :; done\n").expect("written");
    std::fs::set_permissions(&looping, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let forever = HostBuild {
        kernel: build.kernel.clone(),
        dir: build.dir.clone(),
        binary: looping.clone(),
        compiled: false,
    };
    let started = Instant::now();
    let err = host.run(&forever, &[&x, &x]).expect_err("killed");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(err, HostError::TimedOut { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        format!(
            "op `std.add`: running `{}` took longer than its wall-clock limit of 500ms, so it \
             was killed with its process group (set PTO_HOST_RUN_TIMEOUT_S to a number of \
             seconds to allow more)",
            looping.display()
        )
    );
    // The real build still runs under the same limits.
    let y = host.run(&build, &[&x, &x]).expect("runs");
    assert_eq!(y[0].dims(), &[4, 64]);
}

#[test]
fn a_compiler_out_of_address_space_is_said_to_be() {
    use pto_backends::ascendc::ChildLimits;

    let cache = scratch("memory");
    let build = ChildLimits {
        address_space: 64 << 20,
        ..ChildLimits::BUILD
    };
    let compiler = std::env::var("CXX").unwrap_or_else(|_| "g++".to_owned());
    let host = AscendcHost::new(profile(), Soc::Kirin9030, &compiler, &cache)
        .with_limits(build, ChildLimits::RUN);
    let types = [ty(DType::F32, &[4, 64]), ty(DType::F32, &[4, 64])];
    let err = host
        .build(ops::add::def(), &types, &Attributes::new())
        .expect_err("no compiler fits in 64 MiB");
    assert!(matches!(err, HostError::MemoryLimit { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.starts_with("op `std.add`: compiling `")
            && text.contains("std_add.cpp` exceeded its address-space limit of 64 MiB"),
        "{text}"
    );
}

#[test]
fn a_build_cache_others_may_write_is_not_used() {
    use std::os::unix::fs::PermissionsExt;

    let cache = scratch("shared-cache");
    std::fs::set_permissions(&cache, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let compiler = std::env::var("CXX").unwrap_or_else(|_| "g++".to_owned());
    let host = AscendcHost::new(profile(), Soc::Kirin9030, &compiler, &cache);
    let types = [ty(DType::F32, &[4, 64]), ty(DType::F32, &[4, 64])];
    let err = host
        .build(ops::add::def(), &types, &Attributes::new())
        .expect_err("a cache others may write");
    assert_eq!(
        err.to_string(),
        format!(
            "the ascendc-host build cache `{}` may be written by others (mode 777); its builds \
             are run, so it is not used: remove it, or set XDG_CACHE_HOME to a directory of \
             your own",
            cache.display()
        )
    );
}
