//! The conformance suite of the host implementation of the Ascend C API
//! (`pto-backends/ascendc/include/`): call sequences from public doc examples and official
//! samples, each citing its source, checked against values from mathematics (a plain matrix
//! product, the documented element mapping), never against the host implementation.
//!
//! The cases are C++ (`tests/conformance/*.cpp`, with `harness.h`), built with the system C++
//! compiler against the host headers and the capability header of a SoC
//! (`capability::host_header`). `PTO_CONFORMANCE_INCLUDE=DIR` runs them against another
//! copy of the host headers (an older checkout, to show what it gets wrong) and prints the
//! counts without asserting them.
#![cfg(feature = "device")]

use std::path::{Path, PathBuf};
use std::process::Command;

use pto_backends::ascendc::Soc;
use pto_backends::ascendc::capability::{HOST_HEADER, host_header};

/// One line of the suite's report.
#[derive(Debug)]
struct Outcome {
    name: String,
    verdict: String,
    source: String,
    detail: String,
}

/// Builds `file` (of `tests/conformance`) for `soc` against `include` and runs every case.
fn run_suite(file: &str, soc: Soc, include: &Path) -> Vec<Outcome> {
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance");
    let dir = std::env::temp_dir().join(format!(
        "pto-conformance-{}-{}-{}",
        file.trim_end_matches(".cpp"),
        soc,
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    std::fs::write(dir.join(HOST_HEADER), host_header(soc)).expect("the SoC header");
    let compiler = std::env::var("CXX").unwrap_or_else(|_| "g++".to_owned());
    let binary = dir.join("suite");
    let mut command = Command::new(&compiler);
    command.args(["-std=c++17", "-O1"]);
    for (name, bytes) in [
        ("UB", 196_608),
        ("L1", 524_288),
        ("L0A", 65_536),
        ("L0B", 65_536),
        ("L0C", 131_072),
    ] {
        command.arg(format!("-DASCENDC_HOST_{name}_BYTES={bytes}"));
    }
    let built = command
        .arg(format!("-I{}", include.display()))
        .arg(format!("-I{}", dir.display()))
        .arg(format!("-I{}", here.display()))
        .arg(here.join(file))
        .arg("-o")
        .arg(&binary)
        .output()
        .expect("the C++ compiler runs");
    assert!(
        built.status.success(),
        "{file} does not compile against {}:\n{}",
        include.display(),
        String::from_utf8_lossy(&built.stderr)
    );
    let run = Command::new(&binary).output().expect("the suite runs");
    let _ = std::fs::remove_dir_all(&dir);
    let stdout = String::from_utf8_lossy(&run.stdout);
    let outcomes: Vec<Outcome> = stdout
        .lines()
        .filter_map(|line| {
            let mut fields = line.split('\t');
            (fields.next()? == "CASE").then(|| Outcome {
                name: fields.next().unwrap_or_default().to_owned(),
                verdict: fields.next().unwrap_or_default().to_owned(),
                source: fields.next().unwrap_or_default().to_owned(),
                detail: fields.next().unwrap_or_default().trim().to_owned(),
            })
        })
        .collect();
    assert!(
        !outcomes.is_empty(),
        "{file} reported no case:\n{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    outcomes
}

fn include_dir() -> (PathBuf, bool) {
    match std::env::var_os("PTO_CONFORMANCE_INCLUDE") {
        Some(dir) => (PathBuf::from(dir), true),
        None => (
            Path::new(env!("CARGO_MANIFEST_DIR")).join("ascendc/include"),
            false,
        ),
    }
}

/// Prints the report and, unless another host is under test, fails on any case not passed.
fn check(file: &str, soc: Soc) {
    let (include, other) = include_dir();
    let outcomes = run_suite(file, soc, &include);
    let passed = outcomes.iter().filter(|o| o.verdict == "PASS").count();
    for o in &outcomes {
        println!("{:8} {} ({soc})  {}", o.verdict, o.name, o.detail);
        assert!(
            o.source.contains("asc-devkit") || o.source.contains("cann-recipes"),
            "case {} cites no public source: {:?}",
            o.name,
            o.source
        );
    }
    println!(
        "{file} on {soc} against {}: {passed} of {} cases pass",
        include.display(),
        outcomes.len()
    );
    if !other {
        let failed: Vec<String> = outcomes
            .iter()
            .filter(|o| o.verdict != "PASS")
            .map(|o| format!("{} {}: {} ({})", o.verdict, o.name, o.detail, o.source))
            .collect();
        assert!(failed.is_empty(), "{}", failed.join("\n"));
    }
}

#[test]
fn the_cube_path_on_the_910b_computes_what_the_samples_and_docs_say() {
    check("cube.cpp", Soc::Ascend910B);
}

#[test]
fn calls_kirin_lacks_are_refused_with_the_soc_and_the_source() {
    check("kirin.cpp", Soc::Kirin9030);
    check("kirin_x90.cpp", Soc::KirinX90);
}

/// The race checker of the host implementation: the K-loop matmul sample's flag points pass,
/// each one removed is a race naming the event it needed, and the flag-bit and event-id
/// rules of the docs hold (`conformance/pipes.cpp`).
#[test]
fn the_pipes_race_unless_the_samples_flags_order_them() {
    check("pipes.cpp", Soc::Ascend910B);
}
