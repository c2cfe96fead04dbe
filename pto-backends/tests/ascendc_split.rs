//! The 910B's split cores: a kernel that uses the cube and the vector unit lowers to a mix
//! kernel (one cube core and two vector cores per block, tiles handed over through the
//! workspace with cross-core flags), which the host implementation runs as three threads per
//! block; the host refuses the coupled form there, and a cross-core wait that can never end
//! stops with the kernel, block and flag named.
#![cfg(feature = "device")]

use pto_backends::ascendc::{
    AscendcHost, KernelType, LoweredKernel, Soc, lower, lower_program, lower_with_profile,
};
use pto_backends::cpu::Cpu;
use pto_op::parity::{ParityCase, check_parity};
use pto_op::{Attributes, DType, DeviceProfile, Executor, Shape, Tensor, TensorType, ops};

fn ty(dtype: DType, dims: &[usize]) -> TensorType {
    TensorType {
        shape: Shape::from(dims),
        dtype,
    }
}

fn ascend() -> DeviceProfile {
    DeviceProfile::builtin("ascend910b").expect("built-in profile")
}

/// `std.matmul` f32 [130, 64] x [64, 96] (several block programs) lowered for `soc`.
fn matmul(soc: Soc) -> LoweredKernel {
    let a = ty(DType::F32, &[130, 64]);
    let b = ty(DType::F32, &[64, 96]);
    lower(ops::matmul::def(), &[a, b], &Attributes::new(), soc).expect("lowers")
}

/// The lines of `source` that call `api`.
fn calls<'s>(source: &'s str, api: &str) -> Vec<&'s str> {
    source
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with(api))
        .collect()
}

#[test]
fn a_matmul_staged_through_ub_is_a_mix_kernel_on_the_910b_and_refused_on_kirin() {
    // Kirin has no float cube (Mmad.md, tables 11 and 12) and no L0C -> UB Fixpipe: the
    // lowering refuses, naming the SoC, the call and the source.
    for soc in [Soc::Kirin9030, Soc::KirinX90] {
        let a = ty(DType::F32, &[130, 64]);
        let b = ty(DType::F32, &[64, 96]);
        let err = lower(ops::matmul::def(), &[a, b], &Attributes::new(), soc)
            .expect_err("no float cube on Kirin");
        assert!(err.is_unsupported_on_soc(), "{err}");
        let text = err.to_string();
        assert!(text.contains(&format!("does not exist on {soc}")), "{text}");
        assert!(text.contains("asc-devkit docs/zh/api"), "{text}");
    }

    let ascend = matmul(Soc::Ascend910B);
    assert_eq!(ascend.kernel_type, KernelType::MixAic1Aiv2);
    let source = &ascend.kernel_source;
    for part in [
        "KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIC_1_2);",
        "op.Init(a, b, y, GetUserWorkspace(workspace), tilingData);",
        "GM_ADDR slots = workspace + GetBlockIdx() / GetTaskRatio() * ",
        "if ASCEND_IS_AIC {",
        "if ASCEND_IS_AIV {",
        // Both AIVs on every block program, each on 64 of its 128 rows.
        "const int64_t aivRow = GetSubBlockIdx() * 64;",
        ", ws0[aivRow * 96], 6144);",
        "CrossCoreSetFlag<2, PIPE_FIX>(0);",
        "CrossCoreWaitFlag(0);",
        "CrossCoreSetFlag<2, PIPE_MTE2>(1);",
        "DataCopy(t",
    ] {
        assert!(source.contains(part), "{part:?} not in:\n{source}");
    }
    // No L0C -> UB Fixpipe: every Fixpipe writes a workspace slot (GM).
    let fixpipes = calls(source, "Fixpipe<");
    assert!(!fixpipes.is_empty());
    for line in fixpipes {
        assert!(
            line.contains("(ws"),
            "a Fixpipe not into the workspace: {line}"
        );
    }
    // Each core reserves only its own buffers: UB on the AIV, L1 and L0 on the AIC.
    let init = &source[source.find("if ASCEND_IS_AIV {").expect("an AIV part")..];
    let aiv = &init[..init.find('}').expect("its end")];
    assert!(aiv.contains("calcBuf") || aiv.contains("Queue"), "{aiv}");
    assert!(!aiv.contains("l1Buf") && !aiv.contains("l0cBuf"), "{aiv}");
    // One 512-byte aligned slot of [rows, pitch] f32 per block: 128 x 96 x 4 bytes.
    let per_block = (128 * 96 * 4_u64).next_multiple_of(512);
    assert_eq!(
        ascend.workspace_bytes,
        per_block * u64::from(ascend.block_dim)
    );
    assert!(ascend.block_dim > 1);

    let rms = lower(
        ops::rms_norm::def(),
        &[ty(DType::F32, &[13, 100]), ty(DType::F32, &[100])],
        &Attributes::new(),
        Soc::Ascend910B,
    )
    .expect("lowers");
    assert_eq!(
        (rms.kernel_type, rms.workspace_bytes),
        (KernelType::AivOnly, 0)
    );
    assert!(
        rms.kernel_source
            .contains("KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);")
    );
    assert!(!rms.kernel_source.contains("CrossCore"));
}

#[test]
fn a_mix_kernel_matches_the_cpu_on_the_910b_host() {
    let host = AscendcHost::on(Some(&ascend()));
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        for shapes in [[[130, 64], [64, 96]], [[33, 40], [40, 17]]] {
            let case = ParityCase {
                inputs: shapes.iter().map(|s| ty(dtype, s)).collect(),
                attrs: Attributes::new(),
                ranges: Vec::new(),
                seed: 5,
                tolerance: None,
            };
            let report = check_parity(ops::matmul::def(), &case, &Cpu, &host).expect("runs");
            assert!(report.passed(), "{report}");
        }
    }
}

#[test]
fn the_two_vector_cores_share_the_block_programs_of_an_ai_core() {
    // One AI core: both block programs of a [130, 64] x [64, 96] matmul (128 rows each) on
    // it, AIV 0 running rows 0..64 of each and AIV 1 rows 64..128.
    let mut profile = ascend();
    profile.ai_cores = 1;
    let host = AscendcHost::on(Some(&profile));
    for dtype in [DType::F32, DType::F16] {
        let case = ParityCase {
            inputs: vec![ty(dtype, &[130, 64]), ty(dtype, &[64, 96])],
            attrs: Attributes::new(),
            ranges: Vec::new(),
            seed: 7,
            tolerance: None,
        };
        let report = check_parity(ops::matmul::def(), &case, &Cpu, &host).expect("runs");
        assert!(report.passed(), "{report}");
    }
    // The test sees a lost half: with AIV 1 on AIV 0's rows, no core stores rows 64..128
    // and the output differs from the CPU's.
    let profile_one = profile.clone();
    let host = AscendcHost::on(Some(&profile_one));
    let mut kernel = lower_with_profile(
        ops::matmul::def(),
        &[ty(DType::F32, &[130, 64]), ty(DType::F32, &[64, 96])],
        &Attributes::new(),
        Soc::Ascend910B,
        &profile_one,
    )
    .expect("lowers");
    assert_eq!((kernel.grid, kernel.block_dim), (2, 1));
    let split = "const int64_t aivRow = GetSubBlockIdx() * 64;";
    assert!(kernel.kernel_source.contains(split));
    kernel.kernel_source = kernel
        .kernel_source
        .replace(split, "const int64_t aivRow = 0;");
    let build = host.compile(kernel, &profile_one).expect("compiles");
    let a = Tensor::random([130, 64], DType::F32, 1);
    let b = Tensor::random([64, 96], DType::F32, 2);
    let out = host.run(&build, &[&a, &b]).expect("runs");
    let expected = Cpu
        .execute(ops::matmul::def(), &[&a, &b], &Attributes::new())
        .expect("cpu")
        .outputs;
    assert_ne!(out[0].to_le_bytes(), expected[0].to_le_bytes());
}

/// Runs the 910B matmul with `edit` applied to its source; the host's failure message.
fn run_edited(kernel: LoweredKernel, edit: impl Fn(&str) -> String) -> String {
    let profile = ascend();
    let host = AscendcHost::on(Some(&profile));
    let mut kernel = kernel;
    kernel.kernel_source = edit(&kernel.kernel_source);
    let build = host.compile(kernel, &profile).expect("compiles");
    let a = Tensor::random([130, 64], DType::F32, 1);
    let b = Tensor::random([64, 96], DType::F32, 2);
    match host.run(&build, &[&a, &b]) {
        Ok(_) => panic!("the edited kernel ran"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_coupled_form_is_refused_on_split_cores() {
    // The coupled form (both sides on one core, as on Da Vinci Lite) launched as the 910B's
    // mix kernel: the mix kernel with its core guards removed, so that every core runs the
    // cube and the vector side. Its cube core reserves UB, which it does not have, and its
    // vector cores reserve L1 and L0, which they do not have. The three cores run as
    // threads, so whichever reaches its `InitBuffer` first reports: either diagnosis is
    // right, and one of them must be given.
    let message = run_edited(matmul(Soc::Ascend910B), |s| {
        s.replace("if ASCEND_IS_AIC {", "if (true) {")
            .replace("if ASCEND_IS_AIV {", "if (true) {")
    });
    let cube = "ascendc-host: kernel std_matmul, block 0 (AIC): TPipe::InitBuffer: split cores: ";
    let vector = "ascendc-host: kernel std_matmul, block 0 (AIV";
    if message.contains(cube) {
        assert!(
            message.contains("is in UB, which the cube core (AIC) does not have"),
            "{message}"
        );
    } else {
        assert!(
            message.contains(vector),
            "neither core's refusal in: {message}"
        );
        for part in [
            "TPipe::InitBuffer: split cores: ",
            ", which the vector core (AIV) does not have",
        ] {
            assert!(message.contains(part), "{part:?} not in: {message}");
        }
    }
    // A mix kernel that declares another kernel type than it is launched as.
    let message = run_edited(matmul(Soc::Ascend910B), |s| {
        s.replace("KERNEL_TYPE_MIX_AIC_1_2", "KERNEL_TYPE_AIV_ONLY")
    });
    assert!(
        message.contains(
            "KERNEL_TASK_TYPE_DEFAULT: kernel type: the kernel declares KERNEL_TYPE_AIV_ONLY, \
             it is launched as KERNEL_TYPE_MIX_AIC_1_2"
        ),
        "{message}"
    );
}

#[test]
fn a_cross_core_wait_that_can_never_end_stops_naming_the_kernel_block_and_flag() {
    // The cube core never says the slot holds the tile: the vector cores would wait forever.
    let message = run_edited(matmul(Soc::Ascend910B), |s| {
        s.replacen("CrossCoreSetFlag<2, PIPE_FIX>(0);", "", 1)
    });
    for part in [
        "ascendc-host: kernel std_matmul, block 0 (",
        "CrossCoreWaitFlag: cross-core synchronisation: flag ",
        "is never set: no core of the block can set it (AIC: ",
        "the wait would never end",
    ] {
        assert!(message.contains(part), "{part:?} not in: {message}");
    }

    // The cube core never finishes: the vector cores' wait times out.
    let message = run_edited(matmul(Soc::Ascend910B), |s| {
        s.replacen(
            "CrossCoreSetFlag<2, PIPE_FIX>(0);",
            "for (;;) { std::this_thread::sleep_for(std::chrono::milliseconds(5)); }",
            1,
        )
        .replacen(
            "KERNEL_TASK_TYPE_DEFAULT(",
            "setenv(\"ASCENDC_HOST_FLAG_TIMEOUT_MS\", \"300\", 1);\n    KERNEL_TASK_TYPE_DEFAULT(",
            1,
        )
    });
    for part in [
        "ascendc-host: kernel std_matmul, block 0 (AIV ",
        "CrossCoreWaitFlag: cross-core synchronisation: flag 0 not set after 300 ms \
         (ASCENDC_HOST_FLAG_TIMEOUT_MS) (AIC: running; ",
    ] {
        assert!(message.contains(part), "{part:?} not in: {message}");
    }

    // The cube core does not take its last credit back: a flag is left set.
    let message = run_edited(matmul(Soc::Ascend910B), |s| {
        let at = s
            .find("if ASCEND_IS_AIC {")
            .expect("the AIC part of Process");
        let end = at
            + s[at..]
                .find("CrossCoreWaitFlag(1);")
                .expect("the last credit");
        format!("{}{}", &s[..end], &s[end + "CrossCoreWaitFlag(1);".len()..])
    });
    assert!(
        message.contains("after the kernel, flag 1 is left set"),
        "{message}"
    );
}

/// What each core of a launch sees, from a kernel written against the host implementation:
/// sorted lines `type core blockIdx subBlockIdx blockNum taskRatio`.
fn core_ids(kernel_type: &str, blocks: u32) -> Vec<String> {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("core-ids-{kernel_type}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let source = format!(
        r#"#include <mutex>
#include "kernel_operator.h"
using namespace AscendC;
static std::mutex printing;
extern "C" __global__ __aicore__ void ids(GM_ADDR workspace, GM_ADDR tiling)
{{
    KERNEL_TASK_TYPE_DEFAULT({kernel_type});
    std::lock_guard<std::mutex> lock(printing);
    std::printf("%s %lld %lld %lld %lld\n", ASCEND_IS_AIC ? "AIC" : (ASCEND_IS_AIV ? "AIV" : "MIX"),
                static_cast<long long>(GetBlockIdx()), static_cast<long long>(GetSubBlockIdx()),
                static_cast<long long>(GetBlockNum()), static_cast<long long>(GetTaskRatio()));
}}
int main()
{{
    AscendC::host::Launch("ids", AscendC::{kernel_type}, {blocks}, [] {{ ids(nullptr, nullptr); }});
    return 0;
}}
"#
    );
    std::fs::write(dir.join("ids.cpp"), source).expect("source");
    std::fs::write(
        dir.join(pto_backends::ascendc::capability::HOST_HEADER),
        pto_backends::ascendc::capability::host_header(pto_backends::ascendc::Soc::Ascend910B),
    )
    .expect("the SoC header");
    let include = concat!(env!("CARGO_MANIFEST_DIR"), "/ascendc/include");
    let compiler = std::env::var("CXX").unwrap_or_else(|_| "g++".to_owned());
    let mut args: Vec<String> = [
        "-std=c++17",
        "-pthread",
        "-I",
        include,
        "-I.",
        "ids.cpp",
        "-o",
        "ids",
    ]
    .map(str::to_owned)
    .to_vec();
    for name in ["UB", "L1", "L0A", "L0B", "L0C"] {
        args.push(format!("-DASCENDC_HOST_{name}_BYTES=65536"));
    }
    let built = std::process::Command::new(&compiler)
        .args(&args)
        .current_dir(&dir)
        .output()
        .expect("the C++ compiler runs");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let run = std::process::Command::new(dir.join("ids"))
        .output()
        .expect("runs");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let mut lines: Vec<String> = String::from_utf8_lossy(&run.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

#[test]
fn block_and_sub_block_ids_follow_the_core_type() {
    // MIX_AIC_1_2 on 2 blocks: per block one AIC (GetBlockIdx in [0, 2)) and two AIVs
    // (GetBlockIdx in [0, 4), GetSubBlockIdx 0 and 1, GetTaskRatio 2); GetBlockNum is the
    // launched block count everywhere.
    assert_eq!(
        core_ids("KERNEL_TYPE_MIX_AIC_1_2", 2),
        [
            "AIC 0 0 2 1",
            "AIC 1 0 2 1",
            "AIV 0 0 2 2",
            "AIV 1 1 2 2",
            "AIV 2 0 2 2",
            "AIV 3 1 2 2",
        ]
    );
    assert_eq!(
        core_ids("KERNEL_TYPE_AIV_ONLY", 3),
        ["AIV 0 0 3 1", "AIV 1 0 3 1", "AIV 2 0 3 1"]
    );
    assert_eq!(
        core_ids("KERNEL_TYPE_AIC_ONLY", 2),
        ["AIC 0 0 2 1", "AIC 1 0 2 1"]
    );
}

/// The vector side of [`mix_program`].
#[derive(Clone, Copy, PartialEq)]
enum Vector {
    /// `exp(c) + 1 + r / 1000` of each element, `r` its row in `a`: rows independent.
    Rows,
    /// The sum of each column of `exp(c)`: a column reduction, `y` [2, 32].
    ColumnSum,
    /// `Rows`, and `2 * x` of a second input `x` in tiles of 15 rows (an odd count), into
    /// a second output `z`.
    OddTile,
}

/// Rows of the `x` tile of [`Vector::OddTile`].
const ODD: usize = 15;

/// A mix kernel of two block programs: `c = a @ b` on the cube for `rows` rows of `a`
/// ([2 * rows, 32] x [32, 32], `dtype`), then `vector` on the vector side, stored as f32.
fn mix_program(rows: usize, vector: Vector, dtype: DType) -> pto_op::kernel::ValidProgram {
    use pto_op::kernel::Kernel;
    let mut k = Kernel::new("test.mix_rows").with_buffers(ascend().buffers);
    let a = k.input("a", Shape::from([2 * rows, 32]), dtype);
    let b = k.input("b", Shape::from([32, 32]), dtype);
    let x =
        (vector == Vector::OddTile).then(|| k.input("x", Shape::from([2 * ODD, 32]), DType::F32));
    let y_rows = if vector == Vector::ColumnSum {
        2
    } else {
        2 * rows
    };
    let y = k.output("y", Shape::from([y_rows, 32]), DType::F32);
    let z = x
        .as_ref()
        .map(|_| k.output("z", Shape::from([2 * ODD, 32]), DType::F32));
    k.grid(2).expect("grid");
    let pid = k.program_id();
    let a1 = k.load_l1(&a, (pid * rows, 0), [rows, 32]).expect("a");
    let b1 = k.load_l1(&b, (0, 0), [32, 32]).expect("b");
    let c = k
        .matmul(&a1.to_l0a(), &b1.to_l0b(), None, false)
        .expect("matmul");
    let e = c.to_ub(DType::F32).exp();
    if vector == Vector::ColumnSum {
        k.store(&y, (pid, 0), &e.sum(0)).expect("store");
    } else {
        // Plus a thousandth of each row's index in `a` (an iota along the rows).
        let row = k.iota([rows, 1], 0, pid * rows, DType::F32);
        k.store(&y, (pid * rows, 0), &(e + 1.0 + row * 0.001))
            .expect("store");
    }
    if let (Some(x), Some(z)) = (x, z) {
        let t = k.load(&x, (pid * ODD, 0), [ODD, 32]).expect("x");
        k.store(&z, (pid * ODD, 0), &(t * 2.0)).expect("store z");
    }
    k.finish().expect("valid")
}

/// [`mix_program`]'s `y` computed on the host in f64, from the inputs rounded to `dtype`.
fn mix_reference(a: &Tensor, b: &Tensor, vector: Vector) -> Vec<f64> {
    let (a, b) = (a.to_f32_array(), b.to_f32_array());
    let m = a.shape()[0];
    let mut e = vec![0.0_f64; m * 32];
    for i in 0..m {
        for j in 0..32 {
            let dot: f64 = (0..32)
                .map(|p| f64::from(a[[i, p]]) * f64::from(b[[p, j]]))
                .sum();
            e[i * 32 + j] = dot.exp();
        }
    }
    if vector != Vector::ColumnSum {
        return e
            .iter()
            .enumerate()
            .map(|(at, v)| v + 1.0 + 0.001 * (at / 32) as f64)
            .collect();
    }
    let half = m / 2;
    (0..2)
        .flat_map(|p| {
            let e = &e;
            (0..32).map(move |j| (0..half).map(|i| e[(p * half + i) * 32 + j]).sum())
        })
        .collect()
}

/// Lowers [`mix_program`] for the 910B (of `ai_cores` AI cores), runs it on the host with
/// `edit` applied to its source, and returns the source and the largest relative error of
/// the outputs against [`mix_reference`] (or the host's error).
fn run_mix(
    rows: usize,
    vector: Vector,
    dtype: DType,
    ai_cores: u32,
    edit: impl Fn(&str) -> String,
) -> (String, Result<f64, String>) {
    let mut profile = ascend();
    profile.ai_cores = ai_cores;
    let program = mix_program(rows, vector, dtype);
    let mut kernel = lower_program(&program, "test", Soc::Ascend910B, &profile).expect("lowers");
    assert_eq!(kernel.kernel_type, KernelType::MixAic1Aiv2);
    let source = kernel.kernel_source.clone();
    kernel.kernel_source = edit(&kernel.kernel_source);
    let host = AscendcHost::on(Some(&profile));
    let build = host.compile(kernel, &profile).expect("compiles");
    // Small values: exp stays near 1.
    let small = |shape: [usize; 2], dtype, seed| {
        Tensor::from_f32_array(
            Tensor::random(shape, DType::F32, seed).to_f32_array() * 0.1,
            dtype,
        )
    };
    let a = small([2 * rows, 32], dtype, 11);
    let b = small([32, 32], dtype, 12);
    let x = small([2 * ODD, 32], DType::F32, 13);
    let mut inputs = vec![&a, &b];
    if vector == Vector::OddTile {
        inputs.push(&x);
    }
    let result = host.run(&build, &inputs).map(|out| {
        let mut expected = vec![mix_reference(&a, &b, vector)];
        if vector == Vector::OddTile {
            expected.push(
                x.to_f32_array()
                    .iter()
                    .map(|v| 2.0 * f64::from(*v))
                    .collect(),
            );
        }
        assert_eq!(out.len(), expected.len());
        let mut most = 0.0_f64;
        for (got, expected) in out.iter().zip(&expected) {
            let got = got.to_f32_array();
            assert_eq!(got.len(), expected.len());
            for (g, e) in got.iter().zip(expected) {
                most = most.max((f64::from(*g) - e).abs() / e.abs().max(1.0));
            }
        }
        most
    });
    (source, result.map_err(|e| e.to_string()))
}

#[test]
fn the_two_vector_cores_share_each_block_program_by_rows() {
    for dtype in [DType::F32, DType::F16] {
        for ai_cores in [1, 24] {
            let (source, error) = run_mix(64, Vector::Rows, dtype, ai_cores, str::to_owned);
            // Each AIV's rows: 32 of the 64, from GetSubBlockIdx() * 32, in the hand-off slot
            // and the store.
            for part in [
                "const int64_t aivRow = GetSubBlockIdx() * 32;",
                "// Both AIVs run every block program, each on 32 of the 64 rows of its vector tiles (aivRow).",
                ", ws0[aivRow * 32], 1024);",
                "const int64_t offsets[2] = {(pid * 64) + aivRow, 0};",
                // The iota along the rows counts from this AIV's first row.
                "PTO_INDEX_AS(float, ((pid * 64) + aivRow) + (r / 1) % 32)",
            ] {
                assert!(source.contains(part), "{part:?} not in:\n{source}");
            }
            assert!(!source.contains("BlockVectorSync"), "{source}");
            let error = error.expect("runs");
            assert!(
                error < 1e-3,
                "{dtype} on {ai_cores} AI cores: error {error}"
            );
        }
    }
    // Both AIVs at row 0: rows 32..64 of each block program are never computed.
    let (_, error) = run_mix(64, Vector::Rows, DType::F32, 1, |s| {
        s.replace(
            "const int64_t aivRow = GetSubBlockIdx() * 32;",
            "const int64_t aivRow = 0;",
        )
    });
    let error = error.expect("runs");
    assert!(error > 0.5, "error {error}");
    // The iota without AIV 1's row offset: its rows count from 0 again.
    let (_, error) = run_mix(64, Vector::Rows, DType::F32, 1, |s| {
        s.replace("((pid * 64) + aivRow) + (r / 1)", "(pid * 64) + (r / 1)")
    });
    let error = error.expect("runs");
    assert!(error > 1e-2, "error {error}");
}

#[test]
fn an_odd_row_count_or_a_column_reduction_keeps_the_vector_cores_taking_turns() {
    for (vector, reason) in [
        (
            Vector::OddTile,
            "has 15 rows, neither the 16 of the handed-over tiles nor 1.",
        ),
        (Vector::ColumnSum, "along its rows (a column reduction)."),
    ] {
        for dtype in [DType::F32, DType::F16] {
            let (source, error) = run_mix(16, vector, dtype, 1, str::to_owned);
            for part in [
                "// The rows are not split between the AIVs: ",
                reason,
                "if ((pid - block) / GetBlockNum() % 2 == GetSubBlockIdx()) {",
                "BlockVectorSync(pid);",
            ] {
                assert!(source.contains(part), "{part:?} not in:\n{source}");
            }
            assert!(!source.contains("aivRow"), "{source}");
            let error = error.expect("runs");
            assert!(error < 1e-3, "{dtype}: error {error}");
        }
    }
    // The test sees a lost turn: with AIV 1's turn taken away, no core stores block
    // program 1 and the output differs from the reference.
    let (_, error) = run_mix(16, Vector::ColumnSum, DType::F32, 1, |s| {
        s.replace(
            "if ((pid - block) / GetBlockNum() % 2 == GetSubBlockIdx()) {",
            "if (GetSubBlockIdx() == 0 && pid != 1) {",
        )
    });
    let error = error.expect("runs");
    assert!(error > 0.5, "error {error}");
}

#[test]
fn the_ub_check_of_a_row_split_program_is_per_vector_core() {
    let program = mix_program(64, Vector::Rows, DType::F32);
    let profile = ascend();
    let split = lower_program(&program, "test", Soc::Ascend910B, &profile).expect("lowers");
    // Each AIV of the 910B holds 32 rows of the 64-row tiles (the coupled Kirin form, which
    // held the whole tiles, is refused now: Kirin has no float cube).
    let aiv = split.buffer_bytes.ub;
    assert!(aiv > 0, "{aiv} bytes per AIV");
    // One byte less UB than an AIV reserves: refused, with the per-AIV figure.
    let mut small = profile.clone();
    small.buffers.ub = aiv - 1;
    let Err(error) = lower_program(&program, "test", Soc::Ascend910B, &small) else {
        panic!("lowered over the UB");
    };
    let error = error.to_string();
    for part in [
        format!(
            "the kernel reserves {aiv} bytes of UB (on each of the two vector cores, which hold half the rows of the block program's tiles: "
        ),
        format!("profile has {}", aiv - 1),
    ] {
        assert!(error.contains(&part), "{part:?} not in {error}");
    }
    small.buffers.ub = aiv;
    lower_program(&program, "test", Soc::Ascend910B, &small).expect("fits");

    // A program whose AIVs take turns: one AIV holds the whole tiles, and the error says why.
    let program = mix_program(64, Vector::ColumnSum, DType::F32);
    let whole = lower_program(&program, "test", Soc::Ascend910B, &profile).expect("lowers");
    small.buffers.ub = whole.buffer_bytes.ub - 1;
    let Err(error) = lower_program(&program, "test", Soc::Ascend910B, &small) else {
        panic!("lowered over the UB");
    };
    let error = error.to_string();
    let part = format!(
        "the kernel reserves {} bytes of UB (on one vector core, which holds the block program's whole tiles: the two take turns, their rows are not split (instruction ",
        whole.buffer_bytes.ub
    );
    assert!(error.contains(&part), "{part:?} not in {error}");
    assert!(error.contains("(a column reduction)): "), "{error}");
}
