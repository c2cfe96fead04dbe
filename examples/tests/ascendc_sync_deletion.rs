//! The deletion test of the race checker (feature `device`): each synchronisation the Ascend
//! C lowering emits in a kernel (each `SetFlag` and each `WaitFlag` of a pair, each
//! `PipeBarrier`, each cross-core flag) is deleted from the generated C++ one at a time, and
//! the kernel is built and run on the host implementation, whose race checker
//! (`pto-backends/ascendc/include/ascendc_host/pipes.h`) must stop every deletion that lets
//! two pipes race. The TQues' own `EnQue` / `DeQue` are not deleted (the queue discipline
//! refuses that before any race).
//!
//! The kernels are those of the linked ops' parity cases on kirin9030, kirinx90 and
//! ascend910b, on one AI core, so that the core runs every block program in turn and reuses
//! its buffers across them; per op, the parity case whose kernel runs the most
//! synchronisations (`busiest_case`). Each deletion is a build of the kernel (seconds), so
//! `PTO_SYNC_DELETIONS` sets how many:
//! - unset (CI): every third synchronisation of `demo.softmax` on kirin9030 (the vector
//!   path) and of `demo.matmul` on ascend910b (the cube path of a mix kernel);
//! - `representative`: each synchronisation of those and of `demo.flash_attention` on
//!   ascend910b (both hand-off directions);
//! - `all`: each synchronisation of every linked op with a kernel, on each SoC;
//! - `every-case`: the same for every parity case.
//!
//! A deletion that runs to the end is redundant or a miss; the test tells the two kinds it
//! can tell from the source alone (code in a loop of no iterations, a `WaitFlag` whose order
//! a later pair of the same event gives before the destination pipe's next instruction) and
//! lists the rest. It prints one line per deletion and the totals.
#![cfg(feature = "device")]

use pto_backends::ascendc::{AscendcHost, Soc, lower_with_profile};
use pto_op::{DeviceProfile, OpDef, Tensor, TensorType};
// Links the example ops (and pto-team-b's) into this test.
use pto_examples as _;

/// What a deletion did when the kernel ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// The race checker stopped it: two pipes would race.
    Race,
    /// The flag rules stopped it (a wait with no set, a set flag set again, a cross-core wait
    /// that can never end, a cross-core flag left set).
    Flag,
    /// It ran to the end.
    Ran,
    /// Not run: it lies in a loop of no iterations (redundant by the source alone).
    Dead,
    /// Anything else (a build error): a bug of this test or of the host.
    Other,
}

/// One emitted synchronisation: its line in the source and the call.
struct Sync {
    line: usize,
    text: String,
}

/// The lines of `source` that synchronise, each a deletion.
fn syncs(source: &str) -> Vec<Sync> {
    source
        .lines()
        .enumerate()
        .filter(|(_, l)| {
            let t = l.trim_start();
            t.starts_with("SetFlag<")
                || t.starts_with("WaitFlag<")
                || t.starts_with("PipeBarrier<")
                || t.starts_with("CrossCoreSetFlag<")
                || t.starts_with("CrossCoreWaitFlag(")
        })
        .map(|(line, l)| Sync {
            line,
            text: l.trim().to_owned(),
        })
        .collect()
}

/// Whether line `line` of `source` lies in a loop that runs no iteration (the lowering writes
/// a loop of no trips as `for (int64_t iN = 0; iN < 0; ++iN)`): a deletion there deletes
/// code that never runs, redundant without running it.
fn in_zero_trip_loop(source: &str, line: usize) -> bool {
    let lines: Vec<&str> = source.lines().collect();
    let mut depth = 0i32;
    for l in lines[..line].iter().rev() {
        depth += l.matches('}').count() as i32 - l.matches('{').count() as i32;
        if depth < 0 {
            // `l` opens a block that holds `line`.
            if l.trim_start().starts_with("for (") && l.contains(" < 0;") {
                return true;
            }
            depth = 0;
        }
    }
    false
}

/// The pipe a line of generated code issues to, by the call it makes (`None`: no call of a
/// pipe, such as a declaration, a comment or a synchronisation); a copy whose direction the
/// line does not show counts as every pipe it could be.
fn pipes_of(line: &str) -> &'static [&'static str] {
    let t = line.trim_start();
    if t.starts_with("//")
        || t.starts_with("PTO_INST")
        || t.contains("EventID")
        || t.contains("Flag<")
    {
        return &[];
    }
    let calls: [(&str, &'static [&'static str]); 8] = [
        ("Mmad(", &["M"]),
        ("LoadSubTile", &["MTE1"]),
        ("LoadData", &["MTE1"]),
        ("Fixpipe", &["FIX"]),
        ("CopyInTile", &["MTE2", "V"]),
        ("CopyOutTile", &["MTE3"]),
        ("DataCopy", &["MTE2", "MTE3", "V"]),
        ("GetValue", &["S"]),
    ];
    for (call, pipes) in calls {
        if t.contains(call) {
            return pipes;
        }
    }
    // Any other call of the API (Add, Exp, Duplicate, ...) is a vector instruction.
    if t.ends_with(");") && t.contains('(') && !t.starts_with("LocalTensor") {
        return &["V"];
    }
    &[]
}

/// Whether deleting the `WaitFlag<HardEvent::X>` at `line` leaves its order to a later pair
/// of the same event: the next `SetFlag<HardEvent::X>` comes before any instruction of the
/// destination pipe, so the later pair orders everything the deleted one did.
fn superseded(source: &str, line: usize, text: &str) -> bool {
    let Some(event) = text
        .strip_prefix("WaitFlag<HardEvent::")
        .and_then(|rest| rest.split('>').next())
    else {
        return false;
    };
    let Some((_, dst)) = event.split_once('_') else {
        return false;
    };
    let set = format!("SetFlag<HardEvent::{event}>");
    for l in source.lines().skip(line + 1) {
        if l.contains(&set) {
            return true;
        }
        if pipes_of(l).contains(&dst) || l.contains("for (") || l.contains("__aicore__") {
            return false;
        }
    }
    false
}

fn without_line(source: &str, line: usize) -> String {
    let mut out = String::with_capacity(source.len());
    for (i, l) in source.lines().enumerate() {
        if i != line {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

fn classify(message: &str) -> Outcome {
    if message.contains(": pipe race: ") {
        Outcome::Race
    } else if message.contains(": synchronisation: ")
        || message.contains(": cross-core synchronisation: ")
    {
        Outcome::Flag
    } else {
        Outcome::Other
    }
}

/// The profile of `soc` with one AI core: every block program of a kernel runs on it, one
/// after the other, reusing its buffers.
fn one_core(soc: Soc) -> DeviceProfile {
    let mut profile = DeviceProfile::builtin(&soc.to_string()).expect("a built-in profile");
    profile.ai_cores = 1;
    profile
}

/// The parity case of `op` whose kernel on `soc` runs the most synchronisations: the most
/// block programs, then the most synchronisations outside loops of no iterations.
fn busiest_case(soc: Soc, op: &'static OpDef) -> usize {
    let profile = one_core(soc);
    let cases = (op.parity_cases)();
    (0..cases.len())
        .max_by_key(|&i| {
            let case = &cases[i];
            lower_with_profile(op, &case.inputs, &case.attrs, soc, &profile).map_or((0, 0), |k| {
                let live = syncs(&k.kernel_source)
                    .iter()
                    .filter(|s| !in_zero_trip_loop(&k.kernel_source, s.line))
                    .count();
                (k.grid, live)
            })
        })
        .unwrap_or(0)
}

/// Which of a kernel's synchronisations are deleted: every third in CI (unset), each one
/// otherwise.
fn stride() -> usize {
    if std::env::var("PTO_SYNC_DELETIONS")
        .unwrap_or_default()
        .is_empty()
    {
        3
    } else {
        1
    }
}

/// The kernels to test: (SoC, op, case index).
fn selection() -> Vec<(Soc, &'static OpDef, usize)> {
    let every = std::env::var("PTO_SYNC_DELETIONS").unwrap_or_default();
    let mut ops = pto_op::registry::ops().expect("the registry");
    ops.sort_by_key(|op| op.name);
    let find = |name: &str| *ops.iter().find(|op| op.name == name).expect("a linked op");
    let busiest = |soc: Soc, name: &str| {
        let op = find(name);
        (soc, op, busiest_case(soc, op))
    };
    match every.as_str() {
        "" => vec![
            busiest(Soc::Kirin9030, "demo.softmax"),
            busiest(Soc::Ascend910B, "demo.matmul"),
        ],
        "representative" => vec![
            busiest(Soc::Kirin9030, "demo.softmax"),
            busiest(Soc::Ascend910B, "demo.matmul"),
            busiest(Soc::Ascend910B, "demo.flash_attention"),
        ],
        "all" | "every-case" => {
            let mut out = Vec::new();
            for soc in [Soc::Kirin9030, Soc::KirinX90, Soc::Ascend910B] {
                for op in ops.iter().filter(|op| op.kernel.is_some()) {
                    if every == "all" {
                        out.push((soc, *op, busiest_case(soc, op)));
                    } else {
                        out.extend((0..(op.parity_cases)().len()).map(|c| (soc, *op, c)));
                    }
                }
            }
            out
        }
        other => {
            panic!("PTO_SYNC_DELETIONS={other:?}: unset, `representative`, `all` or `every-case`")
        }
    }
}

#[test]
fn every_deleted_synchronisation_that_opens_a_race_is_caught() {
    let mut totals = [0usize; 5];
    let mut superseded_count = 0;
    let mut kernels = 0;
    let mut ran = Vec::new();
    let mut other = Vec::new();
    let chosen = selection();
    let chosen_count = chosen.len();
    for (soc, op, index) in chosen {
        let cases = (op.parity_cases)();
        let Some(case) = cases.get(index) else {
            continue;
        };
        let profile = one_core(soc);
        let Ok(kernel) = lower_with_profile(op, &case.inputs, &case.attrs, soc, &profile) else {
            // Refused on this SoC (kirin_kernels.txt lists why).
            continue;
        };
        let host = AscendcHost::on(Some(&profile));
        let inputs: Vec<Tensor> = case
            .inputs
            .iter()
            .enumerate()
            .map(|(i, t): (usize, &TensorType)| {
                Tensor::random(t.shape.clone(), t.dtype, 11 + i as u64)
            })
            .collect();
        let refs: Vec<&Tensor> = inputs.iter().collect();
        let run = |source: &str| {
            let mut edited = kernel.clone();
            // A cross-core wait no core can end stops at once (the host sees the deadlock);
            // one that only times out does so after 2 s, not the default 60.
            edited.kernel_source = source.replacen(
                "KERNEL_TASK_TYPE_DEFAULT(",
                "setenv(\"ASCENDC_HOST_FLAG_TIMEOUT_MS\", \"2000\", 1);\n    KERNEL_TASK_TYPE_DEFAULT(",
                1,
            );
            host.compile(edited, &profile)
                .and_then(|build| host.run(&build, &refs))
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        if let Err(e) = run(&kernel.kernel_source) {
            panic!(
                "{soc} {} case {index}: the unedited kernel fails: {e}",
                op.name
            );
        }
        kernels += 1;
        for sync in syncs(&kernel.kernel_source).into_iter().step_by(stride()) {
            if in_zero_trip_loop(&kernel.kernel_source, sync.line) {
                totals[Outcome::Dead as usize] += 1;
                continue;
            }
            let outcome = match run(&without_line(&kernel.kernel_source, sync.line)) {
                Ok(()) => Outcome::Ran,
                Err(message) => {
                    let outcome = classify(&message);
                    if outcome == Outcome::Other {
                        other.push(format!(
                            "{soc} {} case {index} line {}: {message}",
                            op.name,
                            sync.line + 1
                        ));
                    }
                    outcome
                }
            };
            totals[outcome as usize] += 1;
            println!(
                "{soc} {} case {index} line {}: {:?} without `{}`",
                op.name,
                sync.line + 1,
                outcome,
                sync.text
            );
            if outcome == Outcome::Ran {
                if superseded(&kernel.kernel_source, sync.line, &sync.text) {
                    superseded_count += 1;
                } else {
                    ran.push(format!(
                        "{soc} {} case {index} line {}: {}",
                        op.name,
                        sync.line + 1,
                        sync.text
                    ));
                }
            }
        }
    }
    let deleted: usize = totals.iter().sum();
    println!(
        "{kernels} kernels, {deleted} synchronisations deleted: {} stopped as races, {} by the \
         flag rules, {} ran to the end ({superseded_count} of them a WaitFlag whose order a \
         later pair of the same event gives, {} others listed below), {} in loops of no \
         iterations (not run), {} other",
        totals[Outcome::Race as usize],
        totals[Outcome::Flag as usize],
        totals[Outcome::Ran as usize],
        ran.len(),
        totals[Outcome::Dead as usize],
        totals[Outcome::Other as usize]
    );
    for line in &ran {
        println!("ran, not superseded: {line}");
    }
    assert!(
        kernels == chosen_count || std::env::var_os("PTO_SYNC_DELETIONS").is_some(),
        "only {kernels} of {chosen_count} chosen kernels lowered"
    );
    assert!(
        other.is_empty(),
        "deletions that failed otherwise:\n{}",
        other.join("\n")
    );
    assert!(
        totals[Outcome::Race as usize] > 0,
        "no deletion opened a race"
    );
}
