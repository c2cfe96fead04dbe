//! Redeploying edited kernels of a package in one step: [`redeploy`] (`pto redeploy DIR`).
//!
//! A package ships each op's kernel twice: in the tile language's text form,
//! `op_kernel/<stem>.pto` (one kernel per instance), and lowered to Ascend C,
//! `op_kernel/<stem>.cpp`. Either may be edited:
//!
//! - **The text form.** Each kernel is parsed and validated (errors give the file, line and
//!   column), checked to be a kernel of its instance (the op, the globals' types) and to fit
//!   the package's device (the simulator's buffer check and the lowering's), run against the
//!   op's reference on the op's `#[parity]` cases of the instance's input types and params
//!   and on random inputs of the instance's own types, on `sim` and on `ascendc-host` (the
//!   lowered kernel compiled against the host implementation of the Ascend C API); then the
//!   op's lowered sources are regenerated (the kernel, its tiling struct, op_host's tiling
//!   values) and the manifest records the new text.
//! - **The Ascend C.** The edited `op_kernel/<stem>.cpp` is compiled against the host
//!   implementation and run against the reference on the same cases (host parity); the
//!   manifest then marks the op's kernel as edited Ascend C, which the text form no longer
//!   describes. A later text edit of that op is refused unless it is asked to replace the
//!   hand edit ([`RedeployOptions::replace_ascend_c`]).
//!
//! Only then is the package replaced, atomically: the whole package is rewritten beside it and
//! swapped in with one rename ([`super::write_package`]'s way), so every file of the op
//! switches together, and a redeploy that fails (or is killed) leaves the package as it was.
//! The deployed kernels are the manifest's, never the editable file's: a refused edit stays in
//! `op_kernel/<stem>.pto` for the user to fix, and the previous kernel keeps running.

use core::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use pto_op::fs::FileKind;
use pto_op::kernel::ValidProgram;
use pto_op::kernel::text::ParseError;
use pto_op::model::kernels::text_digest;
use pto_op::model::{ShippedKernel, ShippedKernelError};
use pto_op::parity::{ParityCase, check_parity};
use pto_op::{DeviceProfile, OpDef, OpError};

use super::custom_ops::OpUse;
use super::error::PackageError;
use super::generate::{GeneratedFile, InstanceKernel, instance_text, kernel_file, op_package};
use super::manifest::{
    DeployedKernel, Instance, KernelOrigin, MANIFEST_FILE, Manifest, PackagedOp, read_manifest,
};
use super::paths::{package_file, read_package_text};
use super::write::{check_writable, replace_dir, staging_dir, write_file};
use crate::ascendc::{AscendcHost, HostError, LowerError, Soc, lower_program};
use crate::cpu::Cpu;
use crate::sim::{Sim, SimError, SimOptions, Simulator};

/// How [`redeploy`] runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedeployOptions {
    /// Redeploy this op only (by its pto-op name); `None`: every op with an edit.
    pub op: Option<String>,
    /// Let a text edit replace an op's hand-edited Ascend C.
    pub replace_ascend_c: bool,
    /// Random parity cases of each instance's own input types (seeds 0, 1, ...), besides the
    /// op's `#[parity]` cases of the instance.
    pub random_cases: u64,
}

impl Default for RedeployOptions {
    /// Every edited op, no replacing of hand-edited Ascend C, two random cases per instance.
    fn default() -> RedeployOptions {
        RedeployOptions {
            op: None,
            replace_ascend_c: false,
            random_cases: 2,
        }
    }
}

/// Why a redeploy was refused. Nothing in the package changed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RedeployError {
    /// Reading the package, or writing the new one, failed.
    #[error(transparent)]
    Package(#[from] PackageError),
    /// `--op` names an op the package does not hold.
    #[error("the package in `{}` has no op `{op}`; its ops: {known}", dir.display())]
    UnknownOp {
        /// The package.
        dir: PathBuf,
        /// The op asked for.
        op: String,
        /// The packaged ops.
        known: String,
    },
    /// The packaged op is not linked into this program: its reference is the parity baseline.
    #[error(
        "op `{op}` is not linked into this program, and a redeploy checks the kernel against \
         the op's reference: run the `pto` of the operator crate that defines it ({source})"
    )]
    NotLinked {
        /// The op.
        op: String,
        /// The registry's error.
        source: Box<pto_op::RegistryError>,
    },
    /// The kernel file holds another number of kernels than the op has instances.
    #[error(
        "`{}`: expected {expected} kernel(s), one per instance of the op in the manifest's \
         order, each starting with a `kernel` line; found {actual}",
        file.display()
    )]
    KernelCount {
        /// The kernel file.
        file: PathBuf,
        /// The op's instances.
        expected: usize,
        /// `kernel` lines found.
        actual: usize,
    },
    /// An edited kernel does not parse, does not validate, or is not a kernel of its
    /// instance, or the op's signature changed since the package was written.
    #[error("`{}`: kernel {instance}: {source}", file.display())]
    Kernel {
        /// The kernel file.
        file: PathBuf,
        /// The instance's number and description.
        instance: String,
        /// Why.
        source: Box<ShippedKernelError>,
    },
    /// An edited kernel does not fit the package's device (a buffer overflows).
    #[error("`{}`: kernel {instance} does not fit {device}: {source}", file.display())]
    Fit {
        /// The kernel file.
        file: PathBuf,
        /// The instance.
        instance: String,
        /// The device profile.
        device: String,
        /// The simulator's check.
        source: Box<SimError>,
    },
    /// An edited kernel does not lower to Ascend C for the SoC.
    #[error("`{}`: kernel {instance}: {source}", file.display())]
    Lower {
        /// The kernel file.
        file: PathBuf,
        /// The instance.
        instance: String,
        /// The lowering's error.
        source: Box<LowerError>,
    },
    /// The edited Ascend C does not compile against the host implementation.
    #[error("`{}`: {source}", file.display())]
    Host {
        /// The edited file.
        file: PathBuf,
        /// The compiler's (or the harness's) error.
        source: Box<HostError>,
    },
    /// A parity case could not run (the kernel failed on its inputs).
    #[error("op `{op}`: parity on `{target}` for {case}: {source}")]
    ParityRun {
        /// The op.
        op: String,
        /// The target of the kernel.
        target: String,
        /// The case.
        case: String,
        /// The error.
        source: Box<OpError>,
    },
    /// The edited kernel's outputs differ from the reference's.
    #[error("{report}; the edit is not deployed")]
    Parity {
        /// The failed report.
        report: Box<pto_op::parity::ParityReport>,
    },
    /// Both forms of one op's kernel were edited.
    #[error(
        "op `{op}`: both `{text}` and `{cpp}` were edited; redeploy one of them (restore the \
         other)"
    )]
    BothEdited {
        /// The op.
        op: String,
        /// The text-form file.
        text: String,
        /// The Ascend C file.
        cpp: String,
    },
    /// A text edit of an op whose Ascend C was edited by hand and redeployed.
    #[error(
        "op `{op}`: `{cpp}` was edited by hand and redeployed, so `{text}` no longer \
         describes the deployed kernel; redeploying this text edit replaces the hand-edited \
         Ascend C with the text's lowering: run again with --replace-ascend-c to do that"
    )]
    AscendCEdited {
        /// The op.
        op: String,
        /// The text-form file.
        text: String,
        /// The Ascend C file.
        cpp: String,
    },
}

/// What was redeployed of one op.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct OpRedeploy {
    /// The op.
    pub op: String,
    /// The file whose edit was deployed (`op_kernel/<stem>.pto` or `.cpp`).
    pub file: String,
    /// What the deployed kernel now is.
    pub origin: KernelOrigin,
    /// The parity cases run, with the targets: `sim: x=f32[..], seed 0`.
    pub parity: Vec<String>,
    /// Per instance: its description and the simulated time before and after.
    pub instances: Vec<InstanceTimes>,
    /// Things the user should know (a hand edit replaced, a text form that no longer
    /// describes the kernel).
    pub notes: Vec<String>,
}

/// The simulated time of one instance's kernel before and after a redeploy.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct InstanceTimes {
    /// The instance (`q=f16[64, 64], ..., causal=true`).
    pub instance: String,
    /// Simulated cycles of the kernel deployed before.
    pub cycles_before: u64,
    /// Simulated cycles of the kernel deployed now.
    pub cycles_after: u64,
    /// `cycles_before` in seconds at the device's clock.
    pub seconds_before: f64,
    /// `cycles_after` in seconds.
    pub seconds_after: f64,
}

/// What [`redeploy`] did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RedeployReport {
    /// The package.
    pub dir: PathBuf,
    /// The device profile of the package's SoC.
    pub device: String,
    /// The ops redeployed; empty when nothing was edited.
    pub ops: Vec<OpRedeploy>,
}

impl fmt::Display for RedeployReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ops.is_empty() {
            return write!(
                f,
                "nothing to redeploy: no kernel of the package in `{}` differs from the deployed one",
                self.dir.display()
            );
        }
        for (index, op) in self.ops.iter().enumerate() {
            if index > 0 {
                writeln!(f)?;
            }
            writeln!(
                f,
                "redeployed `{}` in `{}` from {} ({})",
                op.op,
                self.dir.display(),
                op.file,
                match op.origin {
                    KernelOrigin::Lowered => "text form, lowered to Ascend C",
                    KernelOrigin::EditedAscendC => "Ascend C edited by hand",
                }
            )?;
            writeln!(f, "parity passed, {} case(s):", op.parity.len())?;
            for case in &op.parity {
                writeln!(f, "  {case}")?;
            }
            writeln!(f, "simulated time on {}:", self.device)?;
            for t in &op.instances {
                let change = if t.cycles_before == 0 {
                    String::new()
                } else {
                    format!(
                        " ({:+.1}%)",
                        (t.cycles_after as f64 / t.cycles_before as f64 - 1.0) * 100.0
                    )
                };
                writeln!(
                    f,
                    "  {}: {} cycles ({:.2} us) -> {} cycles ({:.2} us){change}",
                    t.instance,
                    t.cycles_before,
                    t.seconds_before * 1e6,
                    t.cycles_after,
                    t.seconds_after * 1e6
                )?;
            }
            for note in &op.notes {
                writeln!(f, "note: {note}")?;
            }
        }
        Ok(())
    }
}

/// The kernels deployed in the package in `dir` (the manifest's, not the editable files'),
/// as shipped kernels: what a model compiled with them runs (see [`super::with_package_kernels`]).
///
/// # Errors
///
/// The manifest's errors.
pub fn package_kernels(dir: &Path) -> Result<Vec<ShippedKernel>, PackageError> {
    let manifest = read_manifest(dir)?;
    Ok(manifest
        .ops
        .iter()
        .flat_map(|op| {
            op.instances
                .iter()
                .zip(&op.kernels)
                .map(|(instance, kernel)| ShippedKernel {
                    op: op.op.clone(),
                    fingerprint: op.fingerprint,
                    inputs: instance.inputs.clone(),
                    params: instance.attrs.clone(),
                    text: kernel.text.clone(),
                    traced_digest: kernel.traced_digest.clone(),
                    // What the op traced to when the package was made.
                    linked_digest: Some(kernel.traced_digest.clone()),
                })
        })
        .collect())
}

/// Checks the deployed `kernel` of `instance` of `def` in a package for `profile` before it
/// runs: `None` when it is the kernel the op traces for the profile (unedited, whatever its
/// recorded digest says), the parity cases it passed when it is not, or why it may not run
/// (it is not a kernel of the instance, does not run on the simulator, or the parity report
/// with its max error against the tolerance).
pub(super) fn check_deployed_kernel(
    def: &'static OpDef,
    packaged: &PackagedOp,
    instance: &Instance,
    kernel: &DeployedKernel,
    profile: &DeviceProfile,
) -> Result<Option<usize>, String> {
    let traced = def
        .trace_kernel_for(&instance.inputs, &instance.attrs, profile)
        .map(|program| program.to_string());
    if traced.is_ok_and(|text| text == kernel.text) {
        return Ok(None);
    }
    let shipped = ShippedKernel {
        op: packaged.op.clone(),
        fingerprint: packaged.fingerprint,
        inputs: instance.inputs.clone(),
        params: instance.attrs.clone(),
        text: kernel.text.clone(),
        traced_digest: kernel.traced_digest.clone(),
        linked_digest: Some(kernel.traced_digest.clone()),
    };
    let program = shipped.program(def).map_err(|e| e.to_string())?;
    let sim = Sim::new(profile.clone());
    sim.use_program(def, &instance.inputs, &instance.attrs, program)
        .map_err(|e| format!("it does not run on the simulator: {e}"))?;
    let cases = instance_cases(def, instance, RedeployOptions::default().random_cases);
    match run_parity(def, &cases, &sim) {
        Ok(passed) => Ok(Some(passed.len())),
        Err(RedeployError::Parity { report }) => Err(report.to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// The kernels of a kernel file, one per `kernel` line (comments and blank lines before the
/// first belong to none), each padded with blank lines so that the parser's line numbers are
/// the file's. `None` with the number found when it is not `expected`.
fn split_kernels(text: &str, expected: usize) -> Result<Vec<String>, usize> {
    let lines: Vec<&str> = text.lines().collect();
    let starts: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, line)| {
            let line = line.trim_start();
            line == "kernel" || line.starts_with("kernel ") || line.starts_with("kernel\t")
        })
        .map(|(index, _)| index)
        .collect();
    if starts.len() != expected {
        return Err(starts.len());
    }
    Ok(starts
        .iter()
        .enumerate()
        .map(|(k, &start)| {
            let end = starts.get(k + 1).copied().unwrap_or(lines.len());
            let mut section = "\n".repeat(start);
            for line in &lines[start..end] {
                section.push_str(line);
                section.push('\n');
            }
            section
        })
        .collect())
}

/// The parity cases an instance's kernel is held to: the op's `#[parity]` cases of the
/// instance's input types and params, then `random` cases of its own types (seeds 0, 1, ...).
/// Every case carries the instance's full params, so that it runs the instance's kernel.
fn instance_cases(def: &OpDef, instance: &Instance, random: u64) -> Vec<ParityCase> {
    let declared = (def.parity_cases)().into_iter().filter_map(|case| {
        let params = def.full_params(&case.attrs).ok()?;
        let fits = case.inputs == instance.inputs && params == instance.attrs;
        fits.then_some(ParityCase {
            attrs: params,
            ..case
        })
    });
    let own = (0..random).map(|seed| ParityCase {
        inputs: instance.inputs.clone(),
        attrs: instance.attrs.clone(),
        ranges: Vec::new(),
        seed,
        tolerance: None,
    });
    declared.chain(own).collect()
}

/// Checks `cases` of `def` on `kernel` against the CPU reference; the passed cases, described
/// with the target.
fn run_parity(
    def: &'static OpDef,
    cases: &[ParityCase],
    kernel: &dyn pto_op::Executor,
) -> Result<Vec<String>, RedeployError> {
    let mut passed = Vec::with_capacity(cases.len());
    for case in cases {
        let report =
            check_parity(def, case, &Cpu, kernel).map_err(|source| RedeployError::ParityRun {
                op: def.name.to_owned(),
                target: kernel.target().to_owned(),
                case: case.describe(def.inputs),
                source: Box::new(source),
            })?;
        if !report.passed() {
            return Err(RedeployError::Parity {
                report: Box::new(report),
            });
        }
        passed.push(format!("{}: {}", kernel.target(), report.case));
    }
    Ok(passed)
}

/// Which form of an op's kernel was edited.
enum Edit {
    /// The text form: the new programs, one per instance.
    Text(Vec<ValidProgram>),
    /// The Ascend C: the new source.
    AscendC(String),
}

/// Redeploys the edited kernels of the package in `dir` (see the [module docs](self)): checks
/// every edit, and only when all pass replaces the package, atomically.
///
/// # Errors
///
/// A [`RedeployError`] saying what is wrong (with the file, line and column of a text that
/// does not parse); the package is then as it was.
pub fn redeploy(dir: &Path, options: &RedeployOptions) -> Result<RedeployReport, RedeployError> {
    let mut manifest = read_manifest(dir)?;
    let (soc, profile) = manifest.profile(dir)?;
    if let Some(op) = &options.op
        && manifest.op(op).is_none()
    {
        return Err(RedeployError::UnknownOp {
            dir: dir.to_path_buf(),
            op: op.clone(),
            known: manifest
                .ops
                .iter()
                .map(|p| format!("`{}`", p.op))
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    let mut redeployed = Vec::new();
    let mut files = Vec::new();
    for index in 0..manifest.ops.len() {
        let packaged = &manifest.ops[index];
        if options.op.as_ref().is_some_and(|op| *op != packaged.op) {
            continue;
        }
        let Some(edit) = find_edit(dir, packaged, options)? else {
            continue;
        };
        let (report, new_op, op_files) = redeploy_op(dir, packaged, edit, soc, &profile, options)?;
        manifest.ops[index] = new_op;
        files.extend(op_files);
        redeployed.push(report);
    }
    let report = RedeployReport {
        dir: dir.to_path_buf(),
        device: profile.name.clone(),
        ops: redeployed,
    };
    if report.ops.is_empty() {
        return Ok(report);
    }
    write_redeployed(dir, &manifest, &files)?;
    Ok(report)
}

/// The edit of `packaged` in `dir`, if any: a text form whose programs differ from the
/// deployed ones (comments and layout aside), or an Ascend C source that is not the deployed
/// one.
fn find_edit(
    dir: &Path,
    packaged: &PackagedOp,
    options: &RedeployOptions,
) -> Result<Option<Edit>, RedeployError> {
    let def = pto_op::registry::find(&packaged.op).map_err(|source| RedeployError::NotLinked {
        op: packaged.op.clone(),
        source: Box::new(source),
    })?;
    // `read_manifest` made sure of one deployed kernel per instance, and of the stem.
    let text_path = kernel_file(&packaged.stem);
    let cpp_path = format!("op_kernel/{}.cpp", packaged.stem);
    let read = |path: &str| {
        let file = package_file(dir, &stem_field(packaged), path)?;
        read_package_text(&file, FileKind::KernelSource, "reading the kernel source")
    };
    let text = read(&text_path)?;
    let cpp = read(&cpp_path)?;
    let file = dir.join(&text_path);
    let sections = split_kernels(&text, packaged.instances.len()).map_err(|actual| {
        RedeployError::KernelCount {
            file: file.clone(),
            expected: packaged.instances.len(),
            actual,
        }
    })?;
    let mut programs = Vec::with_capacity(sections.len());
    let mut text_edited = false;
    for (i, ((section, instance), deployed)) in sections
        .into_iter()
        .zip(&packaged.instances)
        .zip(&packaged.kernels)
        .enumerate()
    {
        let shipped = ShippedKernel {
            op: packaged.op.clone(),
            fingerprint: packaged.fingerprint,
            inputs: instance.inputs.clone(),
            params: instance.attrs.clone(),
            text: section,
            traced_digest: deployed.traced_digest.clone(),
            linked_digest: Some(deployed.traced_digest.clone()),
        };
        let instance_name = || format!("{i} ({})", instance_text(def, instance));
        let program = shipped
            .program(def)
            .map_err(|source| RedeployError::Kernel {
                file: file.clone(),
                instance: instance_name(),
                source: Box::new(source),
            })?;
        let deployed_program =
            deployed_program(&file, def, &packaged.kernels[i].text).map_err(|source| {
                RedeployError::Kernel {
                    file: file.clone(),
                    instance: instance_name(),
                    source: Box::new(source),
                }
            })?;
        text_edited |= program.program() != deployed_program.program();
        programs.push(program);
    }
    let cpp_edited = text_digest(&cpp) != packaged.cpp_digest;
    match (text_edited, cpp_edited) {
        (false, false) => Ok(None),
        (true, true) => Err(RedeployError::BothEdited {
            op: packaged.op.clone(),
            text: text_path,
            cpp: cpp_path,
        }),
        (true, false) => {
            if packaged.kernel_origin == KernelOrigin::EditedAscendC && !options.replace_ascend_c {
                return Err(RedeployError::AscendCEdited {
                    op: packaged.op.clone(),
                    text: text_path,
                    cpp: cpp_path,
                });
            }
            Ok(Some(Edit::Text(programs)))
        }
        (false, true) => Ok(Some(Edit::AscendC(cpp))),
    }
}

/// The manifest field a packaged op's file names come from, for errors.
fn stem_field(packaged: &PackagedOp) -> String {
    format!("the stem of op `{}`", packaged.op)
}

/// A deployed kernel's program (the manifest's text).
fn deployed_program(
    file: &Path,
    def: &OpDef,
    text: &str,
) -> Result<ValidProgram, ShippedKernelError> {
    pto_op::kernel::text::parse(text).map_err(|source: ParseError| ShippedKernelError::Parse {
        op: format!(
            "{} (deployed, from the manifest beside `{}`)",
            def.name,
            file.display()
        ),
        source,
    })
}

/// Checks and prepares one op's edit: the report, the new manifest entry and the op's files.
fn redeploy_op(
    dir: &Path,
    packaged: &PackagedOp,
    edit: Edit,
    soc: Soc,
    profile: &DeviceProfile,
    options: &RedeployOptions,
) -> Result<(OpRedeploy, PackagedOp, Vec<GeneratedFile>), RedeployError> {
    let def = pto_op::registry::find(&packaged.op).map_err(|source| RedeployError::NotLinked {
        op: packaged.op.clone(),
        source: Box::new(source),
    })?;
    let text_path = kernel_file(&packaged.stem);
    let cpp_path = format!("op_kernel/{}.cpp", packaged.stem);
    let text_file = dir.join(&text_path);
    let simulator = Simulator::new(profile.clone(), SimOptions::default());
    let instance_name = |i: usize| format!("{i} ({})", instance_text(def, &packaged.instances[i]));
    let time = |i: usize, program: &ValidProgram| {
        simulator
            .time(program)
            .map_err(|source| RedeployError::Fit {
                file: text_file.clone(),
                instance: instance_name(i),
                device: profile.name.clone(),
                source: Box::new(source),
            })
    };
    let deployed: Vec<ValidProgram> = packaged
        .kernels
        .iter()
        .enumerate()
        .map(|(i, k)| {
            deployed_program(&text_file, def, &k.text).map_err(|source| RedeployError::Kernel {
                file: text_file.clone(),
                instance: instance_name(i),
                source: Box::new(source),
            })
        })
        .collect::<Result<_, _>>()?;
    let (programs, cpp, file) = match edit {
        Edit::Text(programs) => (programs, None, text_path.clone()),
        Edit::AscendC(cpp) => (deployed.clone(), Some(cpp), cpp_path.clone()),
    };
    let mut instances = Vec::with_capacity(programs.len());
    let mut kernels = Vec::with_capacity(programs.len());
    for (i, (program, before)) in programs.iter().zip(&deployed).enumerate() {
        let (before, after) = (time(i, before)?, time(i, program)?);
        instances.push(InstanceTimes {
            instance: instance_text(def, &packaged.instances[i]),
            cycles_before: before.cycles,
            cycles_after: after.cycles,
            seconds_before: before.seconds,
            seconds_after: after.seconds,
        });
        let lowered = lower_program(
            program,
            &instance_text(def, &packaged.instances[i]),
            soc,
            profile,
        )
        .map_err(|source| RedeployError::Lower {
            file: text_file.clone(),
            instance: instance_name(i),
            source: Box::new(source),
        })?;
        let text = program.to_string();
        kernels.push(InstanceKernel {
            traced_digest: packaged.kernels[i].traced_digest.clone(),
            text,
            lowered,
        });
    }

    // Parity: the text form on the simulator, and the deployed Ascend C on the host.
    let cases: Vec<Vec<ParityCase>> = packaged
        .instances
        .iter()
        .map(|instance| instance_cases(def, instance, options.random_cases))
        .collect();
    let mut parity = Vec::new();
    if cpp.is_none() {
        let sim = Sim::new(profile.clone());
        for ((instance, program), cases) in packaged.instances.iter().zip(&programs).zip(&cases) {
            sim.use_program(def, &instance.inputs, &instance.attrs, program.clone())
                .map_err(|source| RedeployError::ParityRun {
                    op: def.name.to_owned(),
                    target: "sim".to_owned(),
                    case: instance_text(def, instance),
                    source: Box::new(source),
                })?;
            parity.extend(run_parity(def, cases, &sim)?);
        }
    }
    let host = AscendcHost::on(Some(profile));
    let host_file = if cpp.is_some() { &cpp_path } else { &text_path };
    for ((instance, kernel), cases) in packaged.instances.iter().zip(&kernels).zip(&cases) {
        let mut lowered = kernel.lowered.clone();
        if let Some(cpp) = &cpp {
            lowered.kernel_source.clone_from(cpp);
        }
        host.use_kernel(def, &instance.inputs, &instance.attrs, lowered)
            .map_err(|source| RedeployError::Host {
                file: dir.join(host_file),
                source: Box::new(source),
            })?;
        parity.extend(run_parity(def, cases, &host)?);
    }

    let u = OpUse {
        def,
        domain: def
            .name
            .rsplit_once('.')
            .map_or_else(String::new, |(d, _)| d.to_owned()),
        onnx_op_type: def
            .name
            .rsplit_once('.')
            .map_or_else(|| def.name.to_owned(), |(_, o)| o.to_owned()),
        instances: packaged.instances.clone(),
    };
    let opset = packaged
        .origin_op_type
        .split("::")
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(def.version);
    let (mut new_op, op_files, _) = op_package(&u, opset, soc, &kernels, cpp.as_deref())?;
    // The editable text stays as the user wrote it (comments included).
    let op_files: Vec<GeneratedFile> = op_files
        .into_iter()
        .filter(|f| f.path != text_path)
        .collect();
    let text_lines = read_package_text(
        &package_file(dir, &stem_field(packaged), &text_path)?,
        FileKind::KernelSource,
        "reading the kernel source",
    )?
    .lines()
    .count();
    new_op.files.insert(text_path.clone(), text_lines);
    let mut notes = Vec::new();
    match (&cpp, packaged.kernel_origin) {
        (Some(_), _) => notes.push(format!(
            "`{text_path}` no longer describes the deployed kernel (the manifest marks \
             `{cpp_path}` as edited by hand); the simulator and `--kernels` runs still run \
             the text form, and a text edit is refused unless it replaces the hand edit \
             (--replace-ascend-c)"
        )),
        (None, KernelOrigin::EditedAscendC) => notes.push(format!(
            "the hand-edited `{cpp_path}` was replaced by the lowering of `{text_path}`"
        )),
        (None, KernelOrigin::Lowered) => {}
    }
    Ok((
        OpRedeploy {
            op: def.name.to_owned(),
            file,
            origin: new_op.kernel_origin,
            parity,
            instances,
            notes,
        },
        new_op,
        op_files,
    ))
}

/// Replaces the package in `dir` by a copy with `files` and `manifest` written: the copy is
/// made beside it, then swapped in with one rename ([`replace_dir`]).
fn write_redeployed(
    dir: &Path,
    manifest: &Manifest,
    files: &[GeneratedFile],
) -> Result<(), PackageError> {
    let manifest_text =
        serde_json::to_string_pretty(manifest).map_err(|e| PackageError::Manifest {
            path: dir.join(MANIFEST_FILE),
            message: e.to_string(),
        })?;
    check_writable(dir)?;
    let staging = staging_dir(dir)?;
    let path = staging.path();
    copy_dir(dir, path)?;
    for file in files {
        write_file(&path.join(&file.path), &file.text)?;
    }
    write_file(&path.join(MANIFEST_FILE), &(manifest_text + "\n"))?;
    replace_dir(path, dir)?;
    // Swapped (see `write_package`); dropped on an error above, the copy is removed.
    let _ = staging.keep();
    Ok(())
}

/// Copies the directory `from` into `to` (which is empty): directories and regular
/// files, with their permissions. Anything else in the package is refused, naming it: a
/// symbolic link (whose target would be copied in, or read, from outside the package), a
/// FIFO (which would block the copy), a device or a socket.
fn copy_dir(from: &Path, to: &Path) -> Result<(), PackageError> {
    let io = |action: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| PackageError::Io {
            action,
            path,
            source,
        }
    };
    fs::create_dir_all(to).map_err(io("creating the directory", to))?;
    for entry in fs::read_dir(from).map_err(io("reading the directory", from))? {
        let entry = entry.map_err(io("reading the directory", from))?;
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let kind = entry
            .file_type()
            .map_err(io("reading the file type of", &source))?;
        if kind.is_dir() {
            copy_dir(&source, &target)?;
        } else if kind.is_file() {
            // A package's files are generated sources: one past the cap of such a file (a
            // huge sparse file planted in it) is refused, not copied whole.
            let len = entry
                .metadata()
                .map_err(io("reading the size of", &source))?
                .len();
            let max = FileKind::KernelSource.max_bytes();
            if len > max {
                return Err(io("copying", &source)(std::io::Error::new(
                    std::io::ErrorKind::FileTooLarge,
                    format!("it holds {len} bytes, over the {max} a file of a package may hold"),
                )));
            }
            fs::copy(&source, &target).map_err(io("copying", &source))?;
        } else {
            return Err(PackageError::NotAFile {
                path: source,
                found: file_kind(kind),
            });
        }
    }
    Ok(())
}

/// What a directory entry that is neither a directory nor a regular file is.
#[cfg(unix)]
fn file_kind(kind: fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_block_device() || kind.is_char_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// What a directory entry that is neither a directory nor a regular file is.
#[cfg(not(unix))]
fn file_kind(kind: fs::FileType) -> &'static str {
    if kind.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A package directory with one file, for the copy tests.
    fn scratch(name: &str) -> (PathBuf, PathBuf) {
        let root = std::env::temp_dir().join(format!("pto-copy-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let dir = root.join("pkg");
        write_file(&dir.join("op_kernel/a.cpp"), "a").expect("written");
        (root, dir)
    }

    #[test]
    fn a_link_in_a_package_is_refused_not_followed() {
        let (root, dir) = scratch("link");
        let secret = root.join("secret.txt");
        fs::write(&secret, "not the package's").expect("written");
        let link = dir.join("op_kernel/b.cpp");
        std::os::unix::fs::symlink(&secret, &link).expect("linked");
        let err = copy_dir(&dir, &root.join("copy")).expect_err("a link");
        assert_eq!(
            err.to_string(),
            format!(
                "`{}` is a symbolic link: a package holds only directories and regular files, \
                 so it is refused",
                link.display()
            )
        );
        fs::remove_dir_all(&root).expect("cleaned up");
    }

    #[test]
    fn a_huge_file_in_a_package_is_refused_not_copied() {
        let (root, dir) = scratch("huge");
        let huge = dir.join("op_kernel/b.cpp");
        let file = fs::File::create(&huge).expect("created");
        // Sparse: no disk is used, but a copy would write it all.
        file.set_len(FileKind::KernelSource.max_bytes() + 1)
            .expect("sparse files");
        let err = copy_dir(&dir, &root.join("copy")).expect_err("over the cap");
        assert!(
            err.to_string().contains(
                "it holds 67108865 bytes, over the 67108864 a file of a package may hold"
            ),
            "{err}"
        );
        fs::remove_dir_all(&root).expect("cleaned up");
    }

    #[test]
    fn a_fifo_in_a_package_is_refused_without_blocking() {
        let (root, dir) = scratch("fifo");
        let fifo = dir.join("op_kernel/b.cpp");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo runs");
        assert!(made.success(), "mkfifo {}", fifo.display());
        // Reading a FIFO with no writer blocks: the copy runs on a thread with a deadline.
        let (send, receive) = std::sync::mpsc::channel();
        let (from, to) = (dir.clone(), root.join("copy"));
        std::thread::spawn(move || send.send(copy_dir(&from, &to).map_err(|e| e.to_string())));
        let copied = receive
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("the copy returns instead of blocking on the FIFO");
        let err = copied.expect_err("a FIFO");
        assert!(
            err.starts_with(&format!("`{}` is a FIFO", fifo.display())),
            "{err}"
        );
        fs::remove_dir_all(&root).expect("cleaned up");
    }

    #[test]
    fn kernels_split_on_kernel_lines_and_keep_the_file_s_line_numbers() {
        let text = "// header\n\nkernel a grid 1\n%0 x\n// instance 1\nkernel b grid 2\n%1 y\n";
        let sections = split_kernels(text, 2).expect("two kernels");
        assert_eq!(sections[0], "\n\nkernel a grid 1\n%0 x\n// instance 1\n");
        assert_eq!(sections[1], "\n\n\n\n\nkernel b grid 2\n%1 y\n");
        assert_eq!(split_kernels(text, 3), Err(2));
        assert_eq!(split_kernels("// nothing\n", 1), Err(0));
    }
}
