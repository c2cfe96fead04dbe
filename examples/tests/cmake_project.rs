//! The recorded-CMake test: every package of every built-in model, for kirin9030, kirinx90
//! and ascend910b, configured with the system's `cmake` against a stand-in of the toolkit's
//! ASC CMake package whose `npu_op_*` functions record their calls. The calls, their
//! arguments, the files and the targets must be those of the public samples:
//!
//! - Kirin: hicann/cann-recipes-harmony-infer, `ops/ascendc/src/add_custom/CMakeLists.txt`,
//!   `op_host/CMakeLists.txt`, `op_kernel/CMakeLists.txt`, `framework/CMakeLists.txt`,
//!   `framework/onnx_plugin/CMakeLists.txt`, `build_and_install.sh`;
//! - Ascend 910B: Ascend/msopgen,
//!   `test/test_msopgen/st/msopgen/golden/golden_from_json/golden_output_cpp/CMakeLists.txt`,
//!   `op_host/CMakeLists.txt`, `op_kernel/CMakeLists.txt`, `framework/CMakeLists.txt`, and
//!   the ONNX plug-in's `COMMON_PLUGIN_CMAKLIST` of `msopgen/interface/op_tmpl.py`.
//!
//! Only the project is checked: the toolkit's functions are stand-ins, so nothing is compiled.
#![cfg(feature = "device")]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use pto_backends::ascendc::Soc;
use pto_backends::ascendc::package::{PackageError, write_package};
// Links the example ops and models into this test.
use pto_examples as _;

/// The stand-in ASC package: each function the samples call records its name, the folder it
/// is called from and its arguments (paths relative to the source and build trees); the
/// libraries get a target so that the projects' target_* calls configure. At the end, the
/// targets' definitions and libraries.
const ASC_CONFIG: &str = r#"
set(ASC_FOUND TRUE)
set(ASCEND_AUTOGEN_PATH "${CMAKE_BINARY_DIR}/autogen")
set(PTO_RECORD "${CMAKE_BINARY_DIR}/calls.txt")
set(PTO_STUB_SOURCE "${CMAKE_CURRENT_LIST_DIR}/empty.cpp")
file(WRITE "${PTO_RECORD}" "find_package(ASC)\n")
function(pto_record name)
    file(RELATIVE_PATH dir "${CMAKE_SOURCE_DIR}" "${CMAKE_CURRENT_SOURCE_DIR}")
    if(dir STREQUAL "")
        set(dir ".")
    endif()
    string(JOIN " " args ${ARGN})
    string(REPLACE "${CMAKE_BINARY_DIR}" "<build>" args "${args}")
    string(REPLACE "${CMAKE_SOURCE_DIR}/" "" args "${args}")
    file(APPEND "${PTO_RECORD}" "${dir}: ${name}(${args})\n")
endfunction()
function(npu_op_package)
    pto_record(npu_op_package ${ARGN})
endfunction()
function(npu_op_code_gen)
    pto_record(npu_op_code_gen ${ARGN})
endfunction()
function(npu_op_library name)
    pto_record(npu_op_library ${name} ${ARGN})
    add_library(${name} STATIC "${PTO_STUB_SOURCE}")
endfunction()
function(npu_op_kernel_sources)
    pto_record(npu_op_kernel_sources ${ARGN})
endfunction()
function(npu_op_kernel_library)
    pto_record(npu_op_kernel_library ${ARGN})
endfunction()
function(npu_op_package_add)
    pto_record(npu_op_package_add ${ARGN})
endfunction()
function(pto_record_targets)
    foreach(target cust_onnx_parsers cust_op_proto cust_optiling)
        get_target_property(definitions ${target} COMPILE_DEFINITIONS)
        get_target_property(libraries ${target} LINK_LIBRARIES)
        file(APPEND "${PTO_RECORD}" "target ${target}: definitions ${definitions}; libraries ${libraries}\n")
    endforeach()
endfunction()
cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL pto_record_targets)
"#;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pto-cmake-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// The folders of `dir` (relative, `.` for itself) that hold a `CMakeLists.txt`.
fn cmake_folders(dir: &Path, rel: &str, out: &mut BTreeSet<String>) {
    if dir.join("CMakeLists.txt").is_file() {
        out.insert(rel.to_owned());
    }
    for entry in std::fs::read_dir(dir).expect("reads") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            let name = path
                .file_name()
                .expect("a name")
                .to_string_lossy()
                .into_owned();
            let rel = if rel == "." {
                name
            } else {
                format!("{rel}/{name}")
            };
            cmake_folders(&path, &rel, out);
        }
    }
}

/// The `.cpp` files of `dir`, relative to the package, sorted.
fn sources(package: &Path, folder: &str) -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(package.join(folder))
        .expect("reads")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.ends_with(".cpp"))
        .map(|name| format!("{folder}/{name}"))
        .collect();
    found.sort();
    found
}

/// A recorded line with its `.cpp` arguments sorted (aux_source_directory's order is the
/// file system's).
fn normalized(line: &str) -> String {
    let Some((head, args)) = line.split_once('(') else {
        return line.to_owned();
    };
    let args = args.trim_end_matches(')');
    let mut words: Vec<&str> = args.split(' ').collect();
    let mut cpp: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| w.ends_with(".cpp"))
        .collect();
    cpp.sort_unstable();
    let mut sorted = cpp.into_iter();
    for word in &mut words {
        if word.ends_with(".cpp") {
            *word = sorted.next().unwrap_or_default();
        }
    }
    format!("{head}({})", words.join(" "))
}

/// The calls and targets the sample's project makes, for a package whose op_host sources are
/// `host`: the Kirin recipe's (`kirin`) or msopgen's Ascend C project's.
fn expected_record(kirin: bool, host: &[String]) -> Vec<String> {
    let host = host.join(" ");
    let config = match kirin {
        // add_custom/CMakeLists.txt: CONFIG ENABLE_SOURCE_PACKAGE True ENABLE_BINARY_PACKAGE
        // True INSTALL_PATH ${CMAKE_BINARY_DIR}/
        true => "ENABLE_SOURCE_PACKAGE True ENABLE_BINARY_PACKAGE True ",
        // golden_output_cpp/CMakeLists.txt: CONFIG INSTALL_PATH ${CMAKE_BINARY_DIR}/
        false => "",
    };
    // add_custom/op_host/CMakeLists.txt passes COMPILE_OPTIONS -g; msopgen's does not.
    let debug = if kirin { "COMPILE_OPTIONS -g " } else { "" };
    let mmpa = if kirin { "mmpa;" } else { "" };
    vec![
        "find_package(ASC)".to_owned(),
        format!(".: npu_op_package(customize TYPE RUN CONFIG {config}INSTALL_PATH <build>/)"),
        format!("op_host: npu_op_code_gen(SRC {host} PACKAGE customize {debug}OUT_DIR <build>/autogen)"),
        // No code generator ran: the globs of its output are empty.
        "op_host: npu_op_library(cust_opapi ACLNN)".to_owned(),
        format!("op_host: npu_op_library(cust_op_proto GRAPH {host})"),
        format!("op_host: npu_op_library(cust_optiling TILING {host})"),
        "op_host: npu_op_package_add(customize LIBRARY cust_opapi cust_optiling cust_op_proto)"
            .to_owned(),
        "op_kernel: npu_op_kernel_sources(ascendc_kernels KERNEL_DIR ./)".to_owned(),
        // SRC_BASE: ${CMAKE_SOURCE_DIR}/op_kernel/ (Kirin), ${CMAKE_CURRENT_SOURCE_DIR}/
        // (msopgen): the same folder.
        "op_kernel: npu_op_kernel_library(ascendc_kernels SRC_BASE op_kernel/ TILING_LIBRARY cust_optiling)"
            .to_owned(),
        "op_kernel: npu_op_package_add(customize LIBRARY ascendc_kernels)".to_owned(),
        // The plug-in: google=ascend_private, intf_pub and graph (both samples' plug-in
        // CMakeLists).
        "target cust_onnx_parsers: definitions google=ascend_private; libraries intf_pub;graph"
            .to_owned(),
        // op_host's libraries: the sample's (and the C ABI library, the package's own).
        "target cust_op_proto: definitions definitions-NOTFOUND; libraries pto_capi_LIB"
            .to_owned(),
        format!("target cust_optiling: definitions definitions-NOTFOUND; libraries {mmpa}pto_capi_LIB"),
    ]
}

/// Configures the package in `package` (copied first: configuring writes in the source
/// tree) against the stand-in ASC package; the recorded lines.
fn configure(package: &Path, work: &Path, lib: &str) -> Vec<String> {
    let asc = work.join("asc");
    std::fs::create_dir_all(&asc).expect("mkdir");
    std::fs::write(asc.join("ASCConfig.cmake"), ASC_CONFIG).expect("writes");
    std::fs::write(asc.join("empty.cpp"), "").expect("writes");
    let capi = work.join("capi");
    std::fs::create_dir_all(&capi).expect("mkdir");
    std::fs::write(capi.join(format!("lib{lib}.so")), "").expect("a stand-in library");
    let source = work.join("source");
    let copied = Command::new("cp")
        .arg("-r")
        .arg(package)
        .arg(&source)
        .status()
        .expect("cp runs");
    assert!(copied.success());
    // framework/CMakeLists.txt fetches json.hpp unless it is there: no network here.
    std::fs::write(source.join("framework/onnx_plugin/json.hpp"), "").expect("writes");
    let output = Command::new("cmake")
        .arg("-S")
        .arg(&source)
        .arg("--preset=default")
        .arg(format!("-DASC_DIR={}", asc.display()))
        .env("ASCEND_HOME_PATH", work)
        .env("PTO_CAPI_DIR", &capi)
        .env("PTO_CAPI_LIB", lib)
        .output()
        .expect("cmake runs (scripts/test installs it)");
    assert!(
        output.status.success(),
        "cmake configure of {}: {}\n{}",
        package.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let record = std::fs::read_to_string(source.join("build_out/calls.txt")).expect("recorded");
    record
        .lines()
        .map(|line| normalized(&line.replace(lib, "pto_capi_LIB")))
        .collect()
}

#[test]
fn every_package_configures_as_the_public_samples_do() {
    let models = pto_op::models::builtin_models().expect("no duplicates");
    let mut configured = Vec::new();
    let mut refused = Vec::new();
    for soc in [Soc::Kirin9030, Soc::KirinX90, Soc::Ascend910B] {
        let kirin = soc != Soc::Ascend910B;
        for def in &models {
            let Ok(model) = (def.build)() else {
                // llama-7b-prefill, the decode models: weights without data, to estimate.
                refused.push(format!(
                    "{} {}: does not build",
                    soc.profile_name(),
                    def.name
                ));
                continue;
            };
            let work = scratch(&format!("{}-{}", soc.profile_name(), def.name));
            let package = work.join("pkg");
            match write_package(&model, soc, &package) {
                Ok(_) => {}
                Err(
                    // No custom op (decoder-block-std); an instance the SoC's lowering
                    // refuses (f32 cube on Kirin) or an op without a kernel (mixed's
                    // demo.moments): no project to configure.
                    e @ (PackageError::NothingToPackage { .. } | PackageError::Lower { .. }),
                ) => {
                    refused.push(format!("{} {}: {e}", soc.profile_name(), def.name));
                    std::fs::remove_dir_all(&work).expect("removes");
                    continue;
                }
                Err(e) => panic!("{} {}: {e}", soc.profile_name(), def.name),
            }
            // A CMakeLists.txt in every folder the samples have one in, and nowhere else.
            let mut folders = BTreeSet::new();
            cmake_folders(&package, ".", &mut folders);
            assert_eq!(
                folders,
                [
                    ".",
                    "framework",
                    "framework/onnx_plugin",
                    "op_host",
                    "op_kernel"
                ]
                .map(str::to_owned)
                .into(),
                "{} {}",
                soc.profile_name(),
                def.name
            );
            // The recipe's build-and-install script (Kirin); no msopgen run at build time.
            assert_eq!(package.join("build_and_install.sh").is_file(), kirin);
            let build = std::fs::read_to_string(package.join("build.sh")).expect("build.sh");
            assert!(!build.contains("msopgen"), "{build}");
            assert!(
                build.contains("cmake -S . -B build_out --preset=default"),
                "{build}"
            );
            assert!(build.contains("--target binary") && build.contains("--target package"));
            // The json the plug-in includes is fetched, at the recipe's version and hash.
            let framework = std::fs::read_to_string(package.join("framework/CMakeLists.txt"))
                .expect("framework");
            assert!(
                framework.contains("download/v3.11.3/json.hpp")
                    && framework.contains(
                        "SHA256=9bea4c8066ef4a1c206b2be5a36302f8926f7fdc6087af5d20b417d0cf103ea6"
                    ),
                "{framework}"
            );
            let plugin =
                std::fs::read_to_string(package.join("framework/onnx_plugin/CMakeLists.txt"))
                    .expect("the plug-in's CMakeLists");
            assert!(
                plugin
                    .contains("LIBRARY DESTINATION packages/vendors/${vendor_name}/framework/onnx"),
                "{plugin}"
            );

            let lib = format!(
                "pto_capi_{}",
                def.name.replace(|c: char| !c.is_ascii_alphanumeric(), "_")
            );
            let recorded = configure(&package, &work, &lib);
            let expected = expected_record(kirin, &sources(&package, "op_host"));
            assert_eq!(
                recorded,
                expected.iter().map(|l| normalized(l)).collect::<Vec<_>>(),
                "{} {}",
                soc.profile_name(),
                def.name
            );
            configured.push(format!("{} {}", soc.profile_name(), def.name));
            std::fs::remove_dir_all(&work).expect("removes");
        }
    }
    // Every SoC configures at least the pipeline; the 910B the decoder blocks too.
    for expected in [
        "kirin9030 pipeline",
        "kirinx90 pipeline",
        "ascend910b pipeline",
        "ascend910b decoder-block",
        "ascend910b decoder-block-f16",
    ] {
        assert!(
            configured.iter().any(|c| c == expected),
            "{expected} not configured: {configured:?}; refused: {refused:#?}"
        );
    }
    println!("configured: {configured:#?}\nnot packaged: {refused:#?}");
}
