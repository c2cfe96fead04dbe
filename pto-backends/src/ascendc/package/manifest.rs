//! The manifest `pto_package.json`: what a package holds (its ops, their instances, tilings
//! and deployed kernels, the SoC), and reading it back.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::path::Path;

use pto_op::fs::FileKind;
use pto_op::{Attributes, DeviceProfile, Fingerprint, TensorType};
use serde::{Deserialize, Serialize};

use super::error::PackageError;
use super::paths::{check_no_link, check_relative, kernel_file, read_package_text, stem_name};
use crate::ascendc::Soc;

pub use super::paths::MANIFEST_FILE;

/// The manifest format written (and the only one read).
pub const MANIFEST_FORMAT: u32 = 1;

/// One use of an op: input types, inferred output types and the full params (defaults
/// filled in, as the ONNX export writes them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Instance {
    /// Input types, in the op's input order.
    pub inputs: Vec<TensorType>,
    /// Output types, by the op's rules.
    pub outputs: Vec<TensorType>,
    /// Every param of the op.
    pub attrs: Attributes,
}

impl Instance {
    /// The input types as text (`[f32[64, 64], f32[64]]`).
    pub fn inputs_text(&self) -> String {
        types_text(&self.inputs)
    }
}

/// The tiling of one instance: its struct's field values and launch size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstanceTiling {
    /// Field name to value, in declaration order.
    pub fields: Vec<(String, u32)>,
    /// Cores launched (on the 910B: AI cores, each one AIC and two AIVs for a mix kernel).
    pub block_dim: u32,
    /// Bytes of user workspace the kernel needs (the hand-off slots of a mix kernel); the
    /// TilingFunc asks for them plus the system workspace.
    #[serde(default)]
    pub workspace_bytes: u64,
    /// The kernel type the kernel declares (`KERNEL_TYPE_MIX_AIC_1_2`), empty on a coupled
    /// SoC.
    #[serde(default)]
    pub kernel_type: String,
}

/// One packaged op in the manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackagedOp {
    /// The pto-op name (`demo.rms_norm`).
    pub op: String,
    /// The graph-engine op type (`DemoRmsNorm`).
    pub op_type: String,
    /// The file stem (`demo_rms_norm`).
    pub stem: String,
    /// The op description's version.
    pub version: u32,
    /// The op's signature fingerprint when packaged.
    pub fingerprint: Fingerprint,
    /// The ONNX op type the plug-in maps (`demo::1::rms_norm`).
    pub origin_op_type: String,
    /// The instances the model uses.
    pub instances: Vec<Instance>,
    /// Their tilings, in the same order.
    pub tilings: Vec<InstanceTiling>,
    /// The op's generated files (relative to the package) and their line counts.
    pub files: BTreeMap<String, usize>,
    /// The kernel of each instance as deployed, in the order of `instances` (empty in a
    /// package written before kernels were shipped).
    #[serde(default)]
    pub kernels: Vec<DeployedKernel>,
    /// What `op_kernel/<stem>.cpp` is: the lowering of the text form, or Ascend C edited
    /// by hand.
    #[serde(default)]
    pub kernel_origin: KernelOrigin,
    /// The digest of `op_kernel/<stem>.cpp` as deployed, to tell a hand edit.
    #[serde(default)]
    pub cpp_digest: String,
}

impl PackagedOp {
    /// Generated lines of this op's own files (saturating: the counts are the manifest's,
    /// which anyone may have written).
    pub fn lines(&self) -> usize {
        saturating_sum(self.files.values().copied())
    }
}

/// The manifest `pto_package.json`: what was packaged, from what, for which SoC.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`MANIFEST_FORMAT`].
    pub format: u32,
    /// The model packaged.
    pub model: String,
    /// The SoC's profile name (`kirin9030`).
    pub soc: String,
    /// Its `--soc_version` (`Kirin9030`).
    pub soc_version: String,
    /// The CANN version whose API the sources use.
    pub cann_version: String,
    /// The pto-op version that wrote the package.
    pub pto_op_version: String,
    /// The ops, by name.
    pub ops: Vec<PackagedOp>,
    /// Files shared by every op, with their line counts.
    pub shared_files: BTreeMap<String, usize>,
}

impl Manifest {
    /// The packaged op named `op`.
    pub fn op(&self, op: &str) -> Option<&PackagedOp> {
        self.ops.iter().find(|p| p.op == op)
    }

    /// The package's SoC and its built-in device profile (what its kernels were traced and
    /// sized for), the manifest being the one in `dir`.
    ///
    /// # Errors
    ///
    /// [`PackageError::Manifest`] for an unknown SoC.
    pub fn profile(&self, dir: &Path) -> Result<(Soc, DeviceProfile), PackageError> {
        let manifest_error = |message: String| PackageError::Manifest {
            path: dir.join(MANIFEST_FILE),
            message,
        };
        let soc = Soc::from_profile_name(&self.soc)
            .ok_or_else(|| manifest_error(format!("unknown SoC `{}`", self.soc)))?;
        let profile = DeviceProfile::builtin(soc.profile_name()).map_err(|e| {
            manifest_error(format!("no device profile for SoC `{}`: {e}", self.soc))
        })?;
        Ok((soc, profile))
    }
}

impl fmt::Display for Manifest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "package of `{}` for {} ({}), CANN {} API, pto-op {}",
            self.model, self.soc, self.soc_version, self.cann_version, self.pto_op_version
        )?;
        writeln!(
            f,
            "{:<24} {:<22} {:>9} {:>6}  fingerprint",
            "op", "op type", "instances", "lines"
        )?;
        for op in &self.ops {
            writeln!(
                f,
                "{:<24} {:<22} {:>9} {:>6}  {}",
                op.op,
                op.op_type,
                op.instances.len(),
                op.lines(),
                op.fingerprint
            )?;
        }
        let shared = saturating_sum(self.shared_files.values().copied());
        write!(
            f,
            "shared files: {shared} lines; total {} lines",
            saturating_sum(self.ops.iter().map(PackagedOp::lines)).saturating_add(shared)
        )
    }
}

/// The sum of line counts read from a manifest, `usize::MAX` rather than an overflow.
fn saturating_sum(counts: impl Iterator<Item = usize>) -> usize {
    counts.fold(0, usize::saturating_add)
}

/// What `op_kernel/<stem>.cpp` of a packaged op is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelOrigin {
    /// The lowering of the text-form kernels (`op_kernel/<stem>.pto`).
    #[default]
    Lowered,
    /// Ascend C edited by hand and redeployed: the text form no longer describes it.
    EditedAscendC,
}

/// The kernel of one instance as deployed, in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeployedKernel {
    /// The text form that runs (on the simulator, and lowered into the package).
    pub text: String,
    /// The digest of the text as it was traced from the op: a text that no longer has it was
    /// edited.
    pub traced_digest: String,
}

/// Reads the manifest of the package in `dir`, which is untrusted input: every path it names
/// must stay inside the package, and every op must have one deployed kernel per instance.
///
/// # Errors
///
/// [`PackageError::Io`] when it cannot be read, [`PackageError::Manifest`] when it does not
/// parse or is of another format, [`PackageError::UnsafePath`] for a path that leaves the
/// package (or a manifest that is a symbolic link), [`PackageError::DeployedKernels`] for an op
/// whose deployed kernels are not one per instance.
pub fn read_manifest(dir: &Path) -> Result<Manifest, PackageError> {
    let manifest = parse_manifest(dir)?;
    check_manifest_paths(dir, &manifest)?;
    for op in &manifest.ops {
        check_instance_sizes(dir, op)?;
        if op.instances.is_empty() || op.kernels.len() != op.instances.len() {
            return Err(PackageError::DeployedKernels {
                manifest: dir.join(MANIFEST_FILE),
                op: op.op.clone(),
                instances: op.instances.len(),
                kernels: op.kernels.len(),
            });
        }
    }
    Ok(manifest)
}

/// Checks the types of `op`'s instances as a graph's values are checked
/// ([`pto_op::Shape::check_size`]): they are traced for their kernels, and a manifest may
/// hold any dims (the mutation fuzzer's `usize::MAX` overflowed a row count in a trace).
///
/// # Errors
///
/// [`PackageError::Manifest`] naming the op, the instance, the value and the size problem.
fn check_instance_sizes(dir: &Path, op: &PackagedOp) -> Result<(), PackageError> {
    for (index, instance) in op.instances.iter().enumerate() {
        let values = instance
            .inputs
            .iter()
            .enumerate()
            .map(|(i, ty)| (format!("input {i}"), ty))
            .chain(
                instance
                    .outputs
                    .iter()
                    .enumerate()
                    .map(|(i, ty)| (format!("output {i}"), ty)),
            );
        for (value, ty) in values {
            if let Err(problem) = ty.shape.check_size(ty.dtype) {
                return Err(PackageError::Manifest {
                    path: dir.join(MANIFEST_FILE),
                    message: format!("op `{}`, instance {index}, {value} {ty}: {problem}", op.op),
                });
            }
        }
    }
    Ok(())
}

/// Reads and parses the manifest of the package in `dir`, without checking what it names:
/// enough to tell a directory `pto package` wrote. A manifest that is a symbolic link is
/// refused (it is not this package's).
pub(super) fn parse_manifest(dir: &Path) -> Result<Manifest, PackageError> {
    let path = dir.join(MANIFEST_FILE);
    if fs::symlink_metadata(&path).is_ok_and(|m| m.is_symlink()) {
        return Err(PackageError::UnsafePath {
            manifest: path,
            field: "the manifest".to_owned(),
            value: MANIFEST_FILE.to_owned(),
            reason: "is a symbolic link; a package holds no links".to_owned(),
        });
    }
    let text = read_package_text(
        &path,
        FileKind::PackageManifest,
        "reading the package manifest",
    )?;
    let manifest: Manifest = serde_json::from_str(&text).map_err(|e| PackageError::Manifest {
        path: path.clone(),
        message: e.to_string(),
    })?;
    if manifest.format != MANIFEST_FORMAT {
        return Err(PackageError::Manifest {
            path,
            message: format!(
                "format {}, this pto-op reads format {MANIFEST_FORMAT}",
                manifest.format
            ),
        });
    }
    Ok(manifest)
}

/// Tensor types as text: `[f32[64, 64], f32[64]]`.
fn types_text(types: &[TensorType]) -> String {
    format!(
        "[{}]",
        types
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// Params as text: `{eps: 0.000001}`, `{}` for none.
pub(super) fn attrs_text(attrs: &Attributes) -> String {
    if attrs.is_empty() {
        return "{}".to_owned();
    }
    format!(
        "{{{}}}",
        attrs
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// A manifest of one op, `demo.rms_norm` with one instance and its deployed kernel, for the
/// tests of reading and checking a package.
/// Checks every path `manifest` names against the package in `dir`: each is a relative path
/// of plain names (no root, no `..`, not empty), an op's `stem` is one name (its op's), and
/// no part of any of them is a symbolic link inside `dir`.
///
/// # Errors
///
/// [`PackageError::UnsafePath`] naming the field, the value and why.
pub(super) fn check_manifest_paths(dir: &Path, manifest: &Manifest) -> Result<(), PackageError> {
    let manifest_path = dir.join(MANIFEST_FILE);
    let refuse = |field: String, value: &str, reason: String| PackageError::UnsafePath {
        manifest: manifest_path.clone(),
        field,
        value: value.to_owned(),
        reason,
    };
    let check = |field: String, value: &str| -> Result<(), PackageError> {
        check_relative(value).map_err(|reason| refuse(field.clone(), value, reason.to_owned()))?;
        check_no_link(dir, value).map_err(|reason| refuse(field, value, reason))
    };
    for (i, op) in manifest.ops.iter().enumerate() {
        let field = format!("ops[{i}].stem (op `{}`)", op.op);
        check(field.clone(), &op.stem)?;
        if op.stem.contains(['/', '\\']) {
            return Err(refuse(
                field,
                &op.stem,
                "is not one file name (it holds a path separator)".to_owned(),
            ));
        }
        // A redeploy reads the op's files by the manifest's stem and writes them by the op's
        // name: the two must agree.
        let own = stem_name(&op.op);
        if op.stem != own {
            return Err(refuse(
                field,
                &op.stem,
                format!("is not the stem of the op's name (`{own}`)"),
            ));
        }
        // The files a redeploy reads by the stem.
        for path in [kernel_file(&op.stem), format!("op_kernel/{}.cpp", op.stem)] {
            check_no_link(dir, &path).map_err(|reason| refuse(field.clone(), &op.stem, reason))?;
        }
        for path in op.files.keys() {
            check(format!("ops[{i}].files (op `{}`)", op.op), path)?;
        }
    }
    for path in manifest.shared_files.keys() {
        check("shared_files".to_owned(), path)?;
    }
    Ok(())
}

#[cfg(test)]
pub(super) fn sample_manifest() -> Manifest {
    Manifest {
        format: MANIFEST_FORMAT,
        model: "m".to_owned(),
        soc: "kirin9030".to_owned(),
        soc_version: "Kirin9030".to_owned(),
        cann_version: "9.0".to_owned(),
        pto_op_version: "0".to_owned(),
        ops: vec![PackagedOp {
            op: "demo.rms_norm".to_owned(),
            op_type: "DemoRmsNorm".to_owned(),
            stem: "demo_rms_norm".to_owned(),
            version: 1,
            fingerprint: Fingerprint(1),
            origin_op_type: "demo::1::rms_norm".to_owned(),
            instances: vec![Instance {
                inputs: Vec::new(),
                outputs: Vec::new(),
                attrs: Attributes::new(),
            }],
            tilings: Vec::new(),
            files: [("op_kernel/demo_rms_norm.cpp".to_owned(), 1)].into(),
            kernels: vec![DeployedKernel {
                text: "kernel demo.rms_norm grid 1\n".to_owned(),
                traced_digest: String::new(),
            }],
            kernel_origin: KernelOrigin::Lowered,
            cpp_digest: String::new(),
        }],
        shared_files: [("build.sh".to_owned(), 1)].into(),
    }
}

/// Writes `manifest` as the manifest of a package in `dir`.
#[cfg(test)]
pub(super) fn write_sample(dir: &Path, manifest: &Manifest) {
    fs::create_dir_all(dir).expect("created");
    fs::write(
        dir.join(MANIFEST_FILE),
        serde_json::to_string_pretty(manifest).expect("serialized"),
    )
    .expect("written");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory for one test.
    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("pto-manifest-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    /// Found by the mutation fuzzer (`fuzz_mutation.rs`, stream 99, case seed
    /// 0x9c444a1226dfd80e): an instance input edited to a dim of `usize::MAX` was traced as
    /// it stood and overflowed the row count of the op's kernel (a panic in `pto package
    /// --check`). It is refused on read, as a graph's value would be.
    #[test]
    fn an_instance_of_impossible_size_is_refused_before_it_is_traced() {
        let dir = scratch("huge-instance");
        let mut manifest = sample_manifest();
        manifest.ops[0].instances[0].inputs = vec![pto_op::TensorType {
            shape: pto_op::Shape::from([usize::MAX, 8]),
            dtype: pto_op::DType::F32,
        }];
        write_sample(&dir, &manifest);
        let err = read_manifest(&dir).expect_err("a dim int64 cannot hold");
        let text = err.to_string();
        assert!(
            text.contains("op `demo.rms_norm`, instance 0, input 0 f32[18446744073709551615, 8]"),
            "{text}"
        );
    }

    #[test]
    fn an_op_without_its_deployed_kernels_is_refused_not_traced_again() {
        let dir = scratch("no-kernels");
        let mut manifest = sample_manifest();
        write_sample(&dir, &manifest);
        read_manifest(&dir).expect("a whole manifest");
        manifest.ops[0].kernels.clear();
        write_sample(&dir, &manifest);
        let err = read_manifest(&dir).expect_err("an emptied kernel list");
        assert!(
            matches!(&err, PackageError::DeployedKernels { op, instances: 1, kernels: 0, .. } if op == "demo.rms_norm"),
            "{err}"
        );
        // So is an op with no instance (a kernel file of no kernel would pass as one).
        manifest.ops[0].instances.clear();
        write_sample(&dir, &manifest);
        let err = read_manifest(&dir).expect_err("no instance").to_string();
        assert!(
            err.contains("has 0 instance(s) and 0 deployed kernel(s)"),
            "{err}"
        );
        // `pto package --check` and `--kernels` read the manifest this way too.
        let model = pto_op::Model::new("m".to_owned(), Default::default(), Default::default())
            .expect("an empty model");
        let err = super::super::check_package(&model, &dir).expect_err("a difference");
        assert!(matches!(err, PackageError::DeployedKernels { .. }), "{err}");
        let err = super::super::redeploy::package_kernels(&dir).expect_err("nothing to run");
        assert!(matches!(err, PackageError::DeployedKernels { .. }), "{err}");
        fs::remove_dir_all(&dir).expect("cleaned up");
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_in_place_of_the_manifest_is_refused_by_name_not_blocked_on() {
        let dir = scratch("fifo");
        fs::create_dir_all(&dir).expect("created");
        let status = std::process::Command::new("mkfifo")
            .arg(dir.join(MANIFEST_FILE))
            .status()
            .expect("mkfifo runs");
        assert!(status.success(), "mkfifo");
        // A regression would block on opening the FIFO: the watchdog fails it instead.
        let (sender, receiver) = std::sync::mpsc::channel();
        let reader_dir = dir.clone();
        std::thread::spawn(move || {
            let _ = sender.send(read_manifest(&reader_dir).map(|_| ()));
        });
        let result = receiver
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("read_manifest blocked on the FIFO for 10 s");
        let err = result.expect_err("a FIFO is no manifest").to_string();
        assert!(
            err.contains("reading the package manifest") && err.contains("a FIFO (named pipe)"),
            "{err}"
        );
        fs::remove_dir_all(&dir).expect("cleaned up");
    }

    #[test]
    fn a_huge_sparse_manifest_is_refused_unread() {
        let dir = scratch("sparse");
        fs::create_dir_all(&dir).expect("created");
        let cap = pto_op::fs::FileKind::PackageManifest.max_bytes();
        fs::File::create(dir.join(MANIFEST_FILE))
            .and_then(|file| file.set_len(cap + 1))
            .expect("a sparse file");
        let err = read_manifest(&dir).expect_err("over the cap").to_string();
        assert!(
            err.contains("reading the package manifest")
                && err.contains("over the 67108864 bytes (64.0 MiB) cap of a package manifest"),
            "{err}"
        );
        fs::remove_dir_all(&dir).expect("cleaned up");
    }

    #[test]
    fn line_counts_that_overflow_are_shown_saturated_not_panicked_on() {
        let mut manifest = sample_manifest();
        manifest.ops[0]
            .files
            .insert("op_kernel/more.cpp".to_owned(), usize::MAX);
        manifest
            .shared_files
            .insert("more.sh".to_owned(), usize::MAX);
        assert_eq!(manifest.ops[0].lines(), usize::MAX);
        let shown = manifest.to_string();
        assert!(
            shown.ends_with(&format!(
                "shared files: {0} lines; total {0} lines",
                usize::MAX
            )),
            "{shown}"
        );
    }
}
