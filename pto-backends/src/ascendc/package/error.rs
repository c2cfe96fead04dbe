//! The error of writing, checking or building a package ([`PackageError`]).

use std::path::PathBuf;

use pto_op::Fingerprint;

use super::toolkit::TOOLKIT_ENV;
use crate::ascendc::{LowerError, Soc};

/// An error of writing, checking or building a package. Messages name the op, the file or
/// the directory, and what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PackageError {
    /// An op of the model is not linked into this binary.
    #[error("op `{op}` of the model is not linked: {source}")]
    UnknownOp {
        /// The op.
        op: String,
        /// The registry's error.
        #[source]
        source: Box<pto_op::RegistryError>,
    },
    /// A custom op's name has no domain (`domain.op`), so it has no ONNX op type.
    #[error("op `{op}` has no domain: a packaged op is named `domain.op`")]
    NoDomain {
        /// The op.
        op: String,
    },
    /// A node's call is missing a param that has no default.
    #[error("node #{node} ({op}): param `{param}` is missing and has no default")]
    MissingParam {
        /// The node's index.
        node: usize,
        /// The op.
        op: String,
        /// The param.
        param: String,
    },
    /// A node leaves out an optional input: the package's OpDef declares every input, and
    /// its kernel takes each as a global-memory address, which the lowering gives only for
    /// the inputs a traced kernel has.
    #[error(
        "node #{node} ({op}): leaves out optional input `{input}`; a package declares it \
         (OPTIONAL in the OpDef) but packages only calls that give every input, since the \
         device kernel takes one address per declared input and the lowering has none for a \
         left-out one: give `{input}` (e.g. zeros) in the model you package"
    )]
    AbsentOptionalInput {
        /// The node's index.
        node: usize,
        /// The op.
        op: String,
        /// The first input left out.
        input: String,
    },
    /// The graph refers to a value it does not have.
    #[error("node #{node} ({op}): the graph has no value {value}")]
    Graph {
        /// The node's index.
        node: usize,
        /// The op.
        op: String,
        /// The value id.
        value: usize,
    },
    /// Ops defined outside a library crate: the package's C ABI library, which links the
    /// crates defining its ops, could not link them and would answer `PTO_UNKNOWN_OP`.
    #[error(
        "the package's C ABI library links the library crates that define its ops, and these \
         ops are defined outside one (a binary, test, example or build script), so it would \
         not answer for them: {}; move each into a library crate (`src/lib.rs` or a module of \
         it) that the binary depends on",
        ops.join(", ")
    )]
    OpsOutsideALibrary {
        /// Each op, with its source file and crate.
        ops: Vec<String>,
    },
    /// The model has no custom op: nothing to package.
    #[error(
        "model `{model}` has no custom op (its ops are all standard `std.*` ops, which CANN \
         runs with its built-in kernels): nothing to package"
    )]
    NothingToPackage {
        /// The model.
        model: String,
    },
    /// An instance of an op could not be lowered to Ascend C for the SoC.
    #[error("op `{op}`, instance {instance}: lowering for {soc} failed: {source}")]
    Lower {
        /// The op.
        op: String,
        /// The instance (input types), as text.
        instance: String,
        /// The SoC.
        soc: Soc,
        /// The lowering's error.
        #[source]
        source: Box<LowerError>,
    },
    /// Two instances of one op lower to different kernels; a package holds one per op.
    #[error(
        "op `{op}`: instances {first} and {second} lower to different kernel sources, and a \
         package holds one kernel per op; package the model's uses of `{op}` with one shape \
         class (or split the model)"
    )]
    InstancesDiffer {
        /// The op.
        op: String,
        /// One instance.
        first: String,
        /// Another, with a different kernel.
        second: String,
    },
    /// A file or directory could not be written, read, renamed or removed.
    #[error("{action} `{}`: {source}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A deployed kernel of the package is not the kernel its op traces (edited by hand, or
    /// by a redeploy) and does not pass what a redeploy checks: it validates as a kernel of
    /// its instance and agrees with the op's reference on the simulator. Running it would
    /// give other numbers than the op's.
    #[error(
        "the package in `{}`: op `{op}`, instance {instance}: the deployed kernel is not the \
         one the op traces (it was edited), and it is refused: {problem}; redeploy an edit \
         with `pto redeploy`, or re-run `pto package`",
        dir.display()
    )]
    EditedKernel {
        /// The package.
        dir: PathBuf,
        /// The op.
        op: String,
        /// The instance's number and description.
        instance: String,
        /// What failed: the parity report (max error vs tolerance), or why it does not run.
        problem: String,
    },
    /// The package has more than one problem for the model: every one, one a line.
    #[error(
        "the package in `{}` is refused for the model, {} problems:\n{}",
        dir.display(),
        problems.len(),
        problems.iter().map(|p| format!("- {p}")).collect::<Vec<_>>().join("\n")
    )]
    Differences {
        /// The package.
        dir: PathBuf,
        /// Each difference (none of them `Differences`), in the model's order.
        problems: Vec<PackageError>,
    },
    /// The output path holds something that is not a package: a file, or a directory with
    /// other files and no manifest. Writing the package would replace it, so nothing is
    /// written.
    #[error(
        "`{}` is {found}, not a package directory: writing the package there would replace \
         it; give a new or empty directory, or one `pto package` wrote",
        dir.display()
    )]
    NotAPackage {
        /// The output path.
        dir: PathBuf,
        /// What is there, e.g. `a file`.
        found: String,
    },
    /// The manifest does not parse, or is of another format.
    #[error("the package manifest `{}` is unreadable: {message}", path.display())]
    Manifest {
        /// The manifest's path.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// A name in the manifest that becomes a path leaves the package: absolute, with a `..`
    /// component, empty, or through a symbolic link.
    #[error(
        "the package manifest `{}`: {field} `{value}` {reason}; a package's paths stay inside \
         the package, so it is refused (re-run `pto package` for a package of your own)",
        manifest.display()
    )]
    UnsafePath {
        /// The manifest's path.
        manifest: PathBuf,
        /// The manifest's field, e.g. `ops[0].stem (op `demo.rms_norm`)`.
        field: String,
        /// The value found there.
        value: String,
        /// Why it is refused.
        reason: String,
    },
    /// An op's deployed kernels are not one per instance (an emptied list, or a package
    /// written before kernels were shipped): what would run is not what the package says.
    #[error(
        "the package manifest `{}`: op `{op}` has {instances} instance(s) and {kernels} \
         deployed kernel(s) (`kernels`), expected one kernel per instance (and at least one \
         instance); re-run `pto package`",
        manifest.display()
    )]
    DeployedKernels {
        /// The manifest's path.
        manifest: PathBuf,
        /// The op.
        op: String,
        /// Its instances in the manifest.
        instances: usize,
        /// Its deployed kernels in the manifest.
        kernels: usize,
    },
    /// The package to replace has a read-only directory: replacing it would remove it.
    #[error(
        "the package in `{}` is read-only (`{}` does not allow writing), and replacing it \
         removes the previous package; make it writable (`chmod -R u+w`) or write the \
         package elsewhere",
        dir.display(),
        path.display()
    )]
    ReadOnly {
        /// The package directory.
        dir: PathBuf,
        /// Its read-only directory (the package directory itself, or one inside it).
        path: PathBuf,
    },
    /// A package holds something that is neither a directory nor a regular file.
    #[error(
        "`{}` is {found}: a package holds only directories and regular files, so it is \
         refused",
        path.display()
    )]
    NotAFile {
        /// The entry's path.
        path: PathBuf,
        /// What it is (`a symbolic link`, `a FIFO`, `a device`, `a socket`).
        found: &'static str,
    },
    /// The model uses an op the package does not hold.
    #[error(
        "the package in `{}` has no op `{op}`, which the model uses; re-run `pto package`",
        dir.display()
    )]
    MissingOp {
        /// The package directory.
        dir: PathBuf,
        /// The op.
        op: String,
    },
    /// The model's op and the packaged op have different signatures.
    #[error(
        "op `{op}`: the model was built with fingerprint {model}, the package in `{}` holds \
         fingerprint {package}; the op's signature changed, so re-run `pto package`",
        dir.display()
    )]
    FingerprintMismatch {
        /// The package directory.
        dir: PathBuf,
        /// The op.
        op: String,
        /// The fingerprint in the model.
        model: Fingerprint,
        /// The fingerprint in the package.
        package: Fingerprint,
    },
    /// The model calls an op with input types or params the package has no tiling for.
    #[error(
        "op `{op}`: the package in `{}` has no instance for inputs {inputs} with params \
         {attrs}; its instances: {known}; re-run `pto package` with this model",
        dir.display()
    )]
    MissingInstance {
        /// The package directory.
        dir: PathBuf,
        /// The op.
        op: String,
        /// The call's input types.
        inputs: String,
        /// The call's params.
        attrs: String,
        /// The packaged instances.
        known: String,
    },
    /// The package is for another SoC than asked.
    #[error("the package in `{}` is for {package}, not {asked}", dir.display())]
    SocMismatch {
        /// The package directory.
        dir: PathBuf,
        /// The SoC asked for.
        asked: String,
        /// The SoC of the package.
        package: String,
    },
    /// No CANN toolkit: the package's sources are written, but cannot be built here.
    #[error(
        "no CANN toolkit: `{TOOLKIT_ENV}` is {state}; the package sources are in `{}`; \
         install the CANN toolkit (the Kirin mobile-station toolkit for Kirin), `source \
         <toolkit>/set_env.sh`, then run `{}/build.sh`",
        dir.display(),
        dir.display()
    )]
    ToolkitAbsent {
        /// The package directory.
        dir: PathBuf,
        /// Why the toolkit is taken as absent (unset, or a directory that does not exist).
        state: String,
    },
    /// The package's `capi/build.sh` failed.
    #[error("`{}/capi/build.sh` failed; its output:\n{output}", dir.display())]
    CapiBuildFailed {
        /// The package directory.
        dir: PathBuf,
        /// The end of its output.
        output: String,
    },
    /// The package's C ABI library, built, does not answer for every op of the package.
    #[error(
        "the C ABI library `{}` does not answer for every op of the package: {}; op_host's \
         InferShape would fail inside ATC for them. Point PTO_CRATE_<LIB> (capi/build.sh \
         lists them) at the crates the package was made from",
        library.display(),
        ops.join(", ")
    )]
    CapiDoesNotAnswer {
        /// The library.
        library: PathBuf,
        /// Each op it does not answer for, and why.
        ops: Vec<String>,
    },
    /// The package's `build.sh` failed.
    #[error("`{}/build.sh` failed ({status}); its output:\n{output}", dir.display())]
    BuildFailed {
        /// The package directory.
        dir: PathBuf,
        /// The exit status.
        status: String,
        /// The end of its output.
        output: String,
    },
}
