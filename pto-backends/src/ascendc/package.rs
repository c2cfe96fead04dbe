//! The custom-op package of a model: the msopgen project CANN builds into a vendor op package
//! that ATC and the graph engine load, one op per custom (non-`std`) op of the model.
//!
//! ```text
//! DIR/ pto_package.json                      the manifest: ops, fingerprints, instances, SoC
//!      CMakePresets.json  CMakeLists.txt  build.sh  op_desc.json
//!      op_host/<stem>.cpp                    OpDef, InferShape/InferDataType, TilingFunc
//!      op_host/<stem>_infer.h                the op's C ABI calls (pto_infer_shapes/_dtypes)
//!      op_host/<stem>_tiling.h, op_kernel/<stem>.cpp, op_kernel/<stem>_tiling.h
//!      op_kernel/<stem>.pto                  the kernel's text form, one per instance: editable
//!      op_host/pto_capi.h, op_host/pto_infer_common.h
//!      op_graph/<stem>_proto.h               REG_OP ... OP_END_FACTORY_REG
//!      framework/onnx_plugin/<stem>_plugin.cc, framework/onnx_plugin/pto_onnx_attrs.h
//! ```
//!
//! Shape and dtype inference of the deployed op are the Rust description's own: op_host
//! calls the C ABI of `pto-capi` (`libpto_capi.so`), which runs the op's `#[infer_shape]`
//! and `#[infer_dtype]`. Standard ops (`std.*`) are exported as ONNX standard operators and
//! served by CANN's built-in kernels, so they are not part of the package.
//!
//! Each op's kernel ships in the tile language's text form beside its lowering, and the
//! manifest holds the deployed kernels: an edit of either form is checked and swapped in by
//! [`redeploy()`](redeploy::redeploy) (`pto redeploy`), and [`with_package_kernels`] makes a
//! model run the deployed kernels.
//!
//! One kernel serves each op: every instance of an op in the model (its input types and
//! params) must lower to the same kernel source, and the TilingFunc picks the instance's
//! tiling values by input shapes and params. A model whose instances of one op lower to
//! different kernels is refused with [`PackageError::InstancesDiffer`].
//!
//! Nothing here has run through a CANN toolkit on this machine (none is installed): the
//! generated kernels compile against the host implementation of the Ascend C API (see
//! [`super::host`]), the op_host inference headers compile and run against `libpto_capi.so`;
//! the graph-engine glue (OpDef, REG_OP, the ONNX plug-in, the CMake files) follows the
//! documented API and is marked unverified in its comments.

mod cpp;
mod project;
pub mod redeploy;

pub use redeploy::{
    RedeployError, RedeployOptions, RedeployReport, package_kernels, redeploy, with_package_kernels,
};

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use pto_op::{Attributes, Fingerprint, Model, OpDef, TensorType};
use serde::{Deserialize, Serialize};

use pto_op::model::kernels::text_digest;

use super::{LowerError, LoweredKernel, Soc, lower_program};

/// The manifest's file name in a package directory.
pub const MANIFEST_FILE: &str = "pto_package.json";

/// The manifest format written (and the only one read).
pub const MANIFEST_FORMAT: u32 = 1;

/// The environment variable of the CANN toolkit's install directory (`set_env.sh` sets it);
/// read by the program's edge (the `pto` command line), passed to [`build_package`].
pub const TOOLKIT_ENV: &str = "ASCEND_HOME_PATH";

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
    /// Generated lines of this op's own files.
    pub fn lines(&self) -> usize {
        self.files.values().sum()
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
        write!(
            f,
            "shared files: {} lines; total {} lines",
            self.shared_files.values().sum::<usize>(),
            self.ops.iter().map(PackagedOp::lines).sum::<usize>()
                + self.shared_files.values().sum::<usize>()
        )
    }
}

/// A custom op of a model with its instances, before lowering.
struct OpUse {
    def: &'static OpDef,
    domain: String,
    onnx_op_type: String,
    instances: Vec<Instance>,
}

/// The custom (non-`std`) ops of `model`, in first-use order, each with its distinct
/// instances.
fn custom_ops(model: &Model) -> Result<Vec<OpUse>, PackageError> {
    let graph = &model.graph;
    let mut uses: Vec<OpUse> = Vec::new();
    for (index, node) in graph.nodes.iter().enumerate() {
        if node.op.starts_with("std.") {
            continue;
        }
        let def = pto_op::registry::find(&node.op).map_err(|source| PackageError::UnknownOp {
            op: node.op.clone(),
            source: Box::new(source),
        })?;
        let types =
            |ids: &[usize]| {
                ids.iter()
                    .map(|&id| {
                        graph.values.get(id).map(|v| v.ty.clone()).ok_or_else(|| {
                            PackageError::Graph {
                                node: index,
                                op: node.op.clone(),
                                value: id,
                            }
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()
            };
        let attrs = def
            .params
            .iter()
            .map(|p| {
                let value = match (node.attrs.get(p.name), p.default) {
                    (Some(v), _) => v.clone(),
                    (None, Some(default)) => default(),
                    (None, None) => {
                        return Err(PackageError::MissingParam {
                            node: index,
                            op: node.op.clone(),
                            param: p.name.to_owned(),
                        });
                    }
                };
                Ok((p.name.to_owned(), value))
            })
            .collect::<Result<Attributes, _>>()?;
        let instance = Instance {
            inputs: types(&node.inputs)?,
            outputs: types(&node.outputs)?,
            attrs,
        };
        let position = match uses.iter().position(|u| u.def.name == def.name) {
            Some(position) => position,
            None => {
                let (domain, op_type) = def
                    .name
                    .rsplit_once('.')
                    .filter(|(d, o)| !d.is_empty() && !o.is_empty())
                    .ok_or_else(|| PackageError::NoDomain {
                        op: def.name.to_owned(),
                    })?;
                uses.push(OpUse {
                    def,
                    domain: domain.to_owned(),
                    onnx_op_type: op_type.to_owned(),
                    instances: Vec::new(),
                });
                uses.len() - 1
            }
        };
        let instances = &mut uses[position].instances;
        if !instances.contains(&instance) {
            instances.push(instance);
        }
    }
    Ok(uses)
}

/// The ONNX opset version of each custom domain: the highest version of the domain's ops in
/// the model, as the ONNX export writes it.
fn domain_opsets(uses: &[OpUse]) -> BTreeMap<String, u32> {
    let mut opsets = BTreeMap::new();
    for u in uses {
        let entry = opsets.entry(u.domain.clone()).or_insert(u.def.version);
        *entry = (*entry).max(u.def.version);
    }
    opsets
}

/// The graph-engine op type of an op name: `demo.rms_norm` -> `DemoRmsNorm`.
pub fn op_type_name(op: &str) -> String {
    op.split(['.', '_'])
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect()
}

/// The file stem of an op name: `demo.rms_norm` -> `demo_rms_norm` (the kernel entry's
/// name too).
pub fn stem_name(op: &str) -> String {
    op.replace('.', "_")
}

/// The files op_host's shape and dtype inference of `def` needs, by path in a package:
/// `op_host/pto_capi.h`, `op_host/pto_infer_common.h` and `op_host/<stem>_infer.h`. They
/// include no CANN header, so a host program can call an op exactly as op_host does: fill
/// `pto_package::<stem>::Params` (fields named after the params with a trailing `_`, values
/// as [`cpp_literal`] spells them) and call `InferShapes` / `InferDtypes`.
pub fn inference_sources(def: &OpDef) -> Vec<(String, String)> {
    let stem = stem_name(def.name);
    vec![
        ("op_host/pto_capi.h".to_owned(), cpp::CAPI_HEADER.to_owned()),
        (
            "op_host/pto_infer_common.h".to_owned(),
            cpp::INFER_COMMON_HEADER.to_owned(),
        ),
        (
            format!("op_host/{stem}_infer.h"),
            cpp::infer_header(def, &stem),
        ),
    ]
}

/// A param value as a C++ expression of the type op_host holds it in (`1e-6f`, `true`,
/// `std::vector<int64_t>{INT64_C(1)}`).
pub fn cpp_literal(value: &pto_op::AttrValue) -> String {
    cpp::literal(value)
}

/// One generated file: its path in the package and its text.
struct GeneratedFile {
    path: String,
    text: String,
}

impl GeneratedFile {
    fn new(path: impl Into<String>, text: String) -> GeneratedFile {
        GeneratedFile {
            path: path.into(),
            text,
        }
    }

    fn lines(&self) -> usize {
        self.text.lines().count()
    }
}

/// One instance's kernel: its text form (what runs on the simulator and what a user edits)
/// and its lowering to Ascend C.
struct InstanceKernel {
    /// The text form, as deployed.
    text: String,
    /// The digest of the text as traced from the op (see [`text_digest`]).
    traced_digest: String,
    /// The text's program lowered for the SoC.
    lowered: LoweredKernel,
}

/// The instance of a call as the lowering's header comment names it:
/// `x=f32[64, 256], gamma=f32[256], eps=0.000001`.
fn instance_text(def: &OpDef, instance: &Instance) -> String {
    def.call_text(&instance.inputs, &instance.attrs)
}

/// `def`'s kernel traced for each instance and lowered for `soc`.
fn traced_kernels(
    def: &'static OpDef,
    instances: &[Instance],
    soc: Soc,
) -> Result<Vec<InstanceKernel>, PackageError> {
    let lower_error = |instance: &Instance, source: LowerError| PackageError::Lower {
        op: def.name.to_owned(),
        instance: instance.inputs_text(),
        soc,
        source: Box::new(source),
    };
    let profile =
        pto_op::DeviceProfile::builtin(soc.profile_name()).map_err(|e| PackageError::Manifest {
            path: PathBuf::from(MANIFEST_FILE),
            message: format!("no device profile for SoC {soc}: {e}"),
        })?;
    instances
        .iter()
        .map(|instance| {
            let program = def
                .trace_kernel_for(&instance.inputs, &instance.attrs, &profile)
                .map_err(|source| {
                    lower_error(
                        instance,
                        LowerError::Trace {
                            op: def.name.to_owned(),
                            source,
                        },
                    )
                })?;
            let text = program.to_string();
            let lowered = lower_program(&program, &instance_text(def, instance), soc, &profile)
                .map_err(|e| lower_error(instance, e))?;
            Ok(InstanceKernel {
                traced_digest: text_digest(&text),
                text,
                lowered,
            })
        })
        .collect()
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

/// One op's files and manifest entry, from its kernel per instance (`kernels`, in the order
/// of `u.instances`); `cpp` replaces the lowered `op_kernel/<stem>.cpp` (an Ascend C edit).
fn op_package(
    u: &OpUse,
    opset: u32,
    soc: Soc,
    kernels: &[InstanceKernel],
    cpp: Option<&str>,
) -> Result<(PackagedOp, Vec<GeneratedFile>, serde_json::Value), PackageError> {
    let stem = stem_name(u.def.name);
    let op_type = op_type_name(u.def.name);
    let mut tilings = Vec::new();
    let mut kernel: Option<(&LoweredKernel, &Instance)> = None;
    for (instance, k) in u.instances.iter().zip(kernels) {
        let lowered = &k.lowered;
        tilings.push(InstanceTiling {
            fields: lowered
                .tiling
                .iter()
                .map(|f| (f.name.clone(), f.value))
                .collect(),
            block_dim: lowered.block_dim,
            workspace_bytes: lowered.workspace_bytes,
            kernel_type: lowered
                .kernel_type
                .declaration()
                .unwrap_or_default()
                .to_owned(),
        });
        match &kernel {
            Some((first, first_instance)) => {
                if first.kernel_source != lowered.kernel_source
                    || first.tiling_header != lowered.tiling_header
                {
                    return Err(PackageError::InstancesDiffer {
                        op: u.def.name.to_owned(),
                        first: first_instance.inputs_text(),
                        second: instance.inputs_text(),
                    });
                }
            }
            None => kernel = Some((lowered, instance)),
        }
    }
    let Some((kernel, _)) = kernel else {
        return Err(PackageError::NothingToPackage {
            model: u.def.name.to_owned(),
        });
    };
    let op = cpp::OpSources {
        def: u.def,
        stem: &stem,
        op_type: &op_type,
        soc,
        instances: &u.instances,
        tilings: &tilings,
        kernel,
        origin_op_type: format!("{}::{opset}::{}", u.domain, u.onnx_op_type),
    };
    let texts: Vec<&str> = kernels.iter().map(|k| k.text.as_str()).collect();
    let kernel_cpp = cpp.map_or_else(|| kernel.kernel_source.clone(), str::to_owned);
    let op_files = vec![
        GeneratedFile::new(format!("op_host/{stem}.cpp"), op.op_host()),
        GeneratedFile::new(format!("op_host/{stem}_infer.h"), op.infer_header()),
        GeneratedFile::new(
            format!("op_host/{stem}_tiling.h"),
            kernel.tiling_header.clone(),
        ),
        GeneratedFile::new(format!("op_kernel/{stem}.cpp"), kernel_cpp.clone()),
        GeneratedFile::new(
            format!("op_kernel/{stem}_tiling.h"),
            kernel.tiling_header.clone(),
        ),
        GeneratedFile::new(
            kernel_file(&stem),
            kernel_file_text(u.def, &u.instances, &texts),
        ),
        GeneratedFile::new(format!("op_graph/{stem}_proto.h"), op.graph_proto()),
        GeneratedFile::new(
            format!("framework/onnx_plugin/{stem}_plugin.cc"),
            op.onnx_plugin(),
        ),
    ];
    let op_desc = project::op_desc_entry(u.def, &op_type, &op.dtype_columns());
    let packaged = PackagedOp {
        op: u.def.name.to_owned(),
        op_type: op_type.clone(),
        stem: stem.clone(),
        version: u.def.version,
        fingerprint: u.def.fingerprint(),
        origin_op_type: op.origin_op_type.clone(),
        instances: u.instances.clone(),
        tilings,
        files: op_files
            .iter()
            .map(|f| (f.path.clone(), f.lines()))
            .collect(),
        kernels: kernels
            .iter()
            .map(|k| DeployedKernel {
                text: k.text.clone(),
                traced_digest: k.traced_digest.clone(),
            })
            .collect(),
        kernel_origin: if cpp.is_some() {
            KernelOrigin::EditedAscendC
        } else {
            KernelOrigin::Lowered
        },
        cpp_digest: text_digest(&kernel_cpp),
    };
    Ok((packaged, op_files, op_desc))
}

/// The path of an op's text-form kernels in a package: `op_kernel/<stem>.pto`.
pub fn kernel_file(stem: &str) -> String {
    format!("op_kernel/{stem}.pto")
}

/// The text of `op_kernel/<stem>.pto`: a header, then each instance's kernel after a comment
/// naming the instance, in the manifest's order.
fn kernel_file_text(def: &OpDef, instances: &[Instance], texts: &[&str]) -> String {
    let mut out = format!(
        "// The kernel of op `{}`, in the tile language's text form: one kernel per instance, \
         in the order\n// of the manifest's instances. Edit it, then run `pto redeploy DIR` \
         (parity-checked, atomic).\n",
        def.name
    );
    for (index, (instance, text)) in instances.iter().zip(texts).enumerate() {
        out.push_str(&format!(
            "\n// instance {index}: {}\n",
            instance_text(def, instance)
        ));
        out.push_str(text);
        if !text.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// Generates the package of `model` for `soc` in memory: the manifest and every file.
fn generate(model: &Model, soc: Soc) -> Result<(Manifest, Vec<GeneratedFile>), PackageError> {
    let uses = custom_ops(model)?;
    if uses.is_empty() {
        return Err(PackageError::NothingToPackage {
            model: model.name.clone(),
        });
    }
    let opsets = domain_opsets(&uses);
    let mut files = Vec::new();
    let mut ops = Vec::new();
    let mut op_descs = Vec::new();
    for u in &uses {
        if u.instances.is_empty() {
            continue;
        }
        let opset = opsets.get(&u.domain).copied().unwrap_or(u.def.version);
        let kernels = traced_kernels(u.def, &u.instances, soc)?;
        let (packaged, op_files, op_desc) = op_package(u, opset, soc, &kernels, None)?;
        op_descs.push(op_desc);
        ops.push(packaged);
        files.extend(op_files);
    }
    let shared = shared_files(model, soc, op_descs);
    let manifest = Manifest {
        format: MANIFEST_FORMAT,
        model: model.name.clone(),
        soc: soc.profile_name().to_owned(),
        soc_version: soc.soc_version().to_owned(),
        cann_version: super::CANN_VERSION.to_owned(),
        pto_op_version: env!("CARGO_PKG_VERSION").to_owned(),
        ops,
        shared_files: shared.iter().map(|f| (f.path.clone(), f.lines())).collect(),
    };
    files.extend(shared);
    Ok((manifest, files))
}

/// The files every op of a package shares.
fn shared_files(model: &Model, soc: Soc, op_descs: Vec<serde_json::Value>) -> Vec<GeneratedFile> {
    vec![
        GeneratedFile::new("op_host/pto_capi.h", cpp::CAPI_HEADER.to_owned()),
        GeneratedFile::new("op_host/pto_op_host.h", cpp::OP_HOST_HEADER.to_owned()),
        GeneratedFile::new(
            "op_host/pto_infer_common.h",
            cpp::INFER_COMMON_HEADER.to_owned(),
        ),
        GeneratedFile::new(
            "framework/onnx_plugin/pto_onnx_attrs.h",
            cpp::ONNX_ATTRS_HEADER.to_owned(),
        ),
        GeneratedFile::new("CMakePresets.json", project::cmake_presets(soc)),
        GeneratedFile::new("CMakeLists.txt", project::cmake_lists(&model.name)),
        GeneratedFile::new("build.sh", project::build_script(soc)),
        GeneratedFile::new("op_desc.json", project::op_desc_json(op_descs)),
    ]
}

/// Writes the custom-op package of `model` for `soc` into `dir`, atomically: everything is
/// written into a temporary directory beside `dir`, which then replaces `dir`. A failure
/// (an op that does not lower, a full disk) leaves a previous package in `dir` as it was.
///
/// Returns the manifest written.
///
/// # Errors
///
/// A [`PackageError`]: an op not linked or without a domain, an instance that does not
/// lower for `soc`, instances of one op that lower differently, a model without custom ops,
/// or an I/O error naming the path.
pub fn write_package(model: &Model, soc: Soc, dir: &Path) -> Result<Manifest, PackageError> {
    check_replaceable(dir)?;
    let (manifest, files) = generate(model, soc)?;
    let manifest_text =
        serde_json::to_string_pretty(&manifest).map_err(|e| PackageError::Manifest {
            path: dir.join(MANIFEST_FILE),
            message: e.to_string(),
        })?;
    let staging = sibling(dir, "tmp")?;
    let written = (|| {
        for file in &files {
            write_file(&staging.join(&file.path), &file.text)?;
        }
        write_file(&staging.join(MANIFEST_FILE), &(manifest_text + "\n"))?;
        make_executable(&staging.join("build.sh"))?;
        replace_dir(&staging, dir)
    })();
    if written.is_err() {
        // The staging directory is ours alone; a failure to remove it leaves only litter.
        let _ = fs::remove_dir_all(&staging);
    }
    written.map(|()| manifest)
}

/// Refuses an output path that a package must not replace: anything but nothing, an
/// empty directory, or a directory holding a package manifest.
fn check_replaceable(dir: &Path) -> Result<(), PackageError> {
    let refuse = |found: &str| PackageError::NotAPackage {
        dir: dir.to_path_buf(),
        found: found.to_owned(),
    };
    let Ok(metadata) = fs::symlink_metadata(dir) else {
        return Ok(());
    };
    if !metadata.is_dir() {
        return Err(refuse(if metadata.is_symlink() {
            "a symbolic link"
        } else {
            "a file"
        }));
    }
    if dir.join(MANIFEST_FILE).is_file() {
        return Ok(());
    }
    let mut entries = fs::read_dir(dir).map_err(|source| PackageError::Io {
        action: "reading the directory",
        path: dir.to_path_buf(),
        source,
    })?;
    match entries.next() {
        None => Ok(()),
        Some(_) => Err(refuse(&format!(
            "a directory with other files and no `{MANIFEST_FILE}`"
        ))),
    }
}

/// A fresh path beside `dir` (`.<name>.<what>-<pid>-<n>`), not yet existing.
fn sibling(dir: &Path, what: &str) -> Result<PathBuf, PackageError> {
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&parent).map_err(|source| PackageError::Io {
        action: "creating the directory",
        path: parent.clone(),
        source,
    })?;
    let name = dir
        .file_name()
        .map_or_else(|| "package".into(), |n| n.to_string_lossy().into_owned());
    let pid = std::process::id();
    let mut n = 0u32;
    loop {
        let candidate = parent.join(format!(".{name}.{what}-{pid}-{n}"));
        if !candidate.exists() {
            return Ok(candidate);
        }
        n += 1;
    }
}

fn write_file(path: &Path, text: &str) -> Result<(), PackageError> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(|source| PackageError::Io {
            action: "creating the directory",
            path: parent.to_path_buf(),
            source,
        })?;
    }
    fs::write(path, text).map_err(|source| PackageError::Io {
        action: "writing",
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(unix)]
fn make_executable(path: &Path) -> Result<(), PackageError> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).map_err(|source| {
        PackageError::Io {
            action: "making executable",
            path: path.to_path_buf(),
            source,
        }
    })
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> Result<(), PackageError> {
    Ok(())
}

/// Puts the finished `staging` directory in place of `dir`. On Linux the two are exchanged
/// with one `renameat2(RENAME_EXCHANGE)`, so at every instant `dir` is the previous package
/// or the new one, whole, even if the process is killed; the previous package is then
/// removed. Elsewhere (or on a file system without the exchange) a previous package is first
/// renamed aside, and renamed back if the second rename fails; it is removed only once the
/// new package is in place.
fn replace_dir(staging: &Path, dir: &Path) -> Result<(), PackageError> {
    let rename = |from: &Path, to: &Path| {
        fs::rename(from, to).map_err(|source| PackageError::Io {
            action: "renaming into place",
            path: to.to_path_buf(),
            source,
        })
    };
    if !dir.exists() {
        return rename(staging, dir);
    }
    let remove_previous = |previous: &Path| {
        fs::remove_dir_all(previous).map_err(|source| PackageError::Io {
            action: "removing the previous package",
            path: previous.to_path_buf(),
            source,
        })
    };
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{CWD, RenameFlags, renameat_with};
        use rustix::io::Errno;
        match renameat_with(CWD, staging, CWD, dir, RenameFlags::EXCHANGE) {
            // `staging` now holds the previous package.
            Ok(()) => return remove_previous(staging),
            // No exchange on this kernel or file system: rename in two steps below.
            Err(Errno::INVAL | Errno::NOSYS | Errno::NOTSUP) => {}
            Err(e) => {
                return Err(PackageError::Io {
                    action: "swapping into place",
                    path: dir.to_path_buf(),
                    source: e.into(),
                });
            }
        }
    }
    let old = sibling(dir, "old")?;
    rename(dir, &old)?;
    if let Err(e) = rename(staging, dir) {
        // Put the previous package back; if even that fails the error below names `dir`
        // and the previous package is still whole in `old`.
        let _ = fs::rename(&old, dir);
        return Err(e);
    }
    remove_previous(&old)
}

/// Reads the manifest of the package in `dir`.
///
/// # Errors
///
/// [`PackageError::Io`] when it cannot be read, [`PackageError::Manifest`] when it does not
/// parse or is of another format.
pub fn read_manifest(dir: &Path) -> Result<Manifest, PackageError> {
    let path = dir.join(MANIFEST_FILE);
    let text = fs::read_to_string(&path).map_err(|source| PackageError::Io {
        action: "reading the package manifest",
        path: path.clone(),
        source,
    })?;
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

/// Loads the package in `dir` for running `model`: refuses it (an error naming the op) when
/// an op of the model is missing from it, has another fingerprint in the model than in the
/// package, or is called with input types or params the package has no instance of.
///
/// # Errors
///
/// [`PackageError::MissingOp`], [`PackageError::FingerprintMismatch`],
/// [`PackageError::MissingInstance`], or an error of [`read_manifest`].
pub fn check_package(model: &Model, dir: &Path) -> Result<Manifest, PackageError> {
    let manifest = read_manifest(dir)?;
    for node in &model.graph.nodes {
        if node.op.starts_with("std.") {
            continue;
        }
        let packaged = manifest
            .op(&node.op)
            .ok_or_else(|| PackageError::MissingOp {
                dir: dir.to_path_buf(),
                op: node.op.clone(),
            })?;
        if packaged.fingerprint != node.fingerprint {
            return Err(PackageError::FingerprintMismatch {
                dir: dir.to_path_buf(),
                op: node.op.clone(),
                model: node.fingerprint,
                package: packaged.fingerprint,
            });
        }
    }
    for u in custom_ops(model)? {
        let Some(packaged) = manifest.op(u.def.name) else {
            continue;
        };
        for instance in &u.instances {
            let found = packaged
                .instances
                .iter()
                .any(|p| p.inputs == instance.inputs && p.attrs == instance.attrs);
            if !found {
                return Err(PackageError::MissingInstance {
                    dir: dir.to_path_buf(),
                    op: u.def.name.to_owned(),
                    inputs: instance.inputs_text(),
                    attrs: attrs_text(&instance.attrs),
                    known: packaged
                        .instances
                        .iter()
                        .map(|p| format!("{} {}", p.inputs_text(), attrs_text(&p.attrs)))
                        .collect::<Vec<_>>()
                        .join("; "),
                });
            }
        }
    }
    Ok(manifest)
}

/// The CANN toolkit directory: `toolkit` (the value of [`TOOLKIT_ENV`], which the caller
/// reads), if it names an existing directory.
///
/// # Errors
///
/// [`PackageError::ToolkitAbsent`] naming `dir` (the package whose sources stay unbuilt).
pub fn toolkit(dir: &Path, toolkit: Option<&Path>) -> Result<PathBuf, PackageError> {
    let absent = |state: String| PackageError::ToolkitAbsent {
        dir: dir.to_path_buf(),
        state,
    };
    match toolkit {
        None => Err(absent("not set".to_owned())),
        Some(path) if path.as_os_str().is_empty() => Err(absent("empty".to_owned())),
        Some(path) if path.is_dir() => Ok(path.to_path_buf()),
        Some(path) => Err(absent(format!(
            "`{}`, which is not a directory",
            path.display()
        ))),
    }
}

/// Builds the package in `dir` with its `build.sh`, where a CANN toolkit is present
/// (`toolkit`, the value of [`TOOLKIT_ENV`]); returns the build's output. Not run on this
/// project's machines, which have no toolkit.
///
/// # Errors
///
/// [`PackageError::ToolkitAbsent`] when there is no toolkit (the sources stay as written),
/// [`PackageError::BuildFailed`] with the end of the output when the build fails.
pub fn build_package(dir: &Path, toolkit_dir: Option<&Path>) -> Result<String, PackageError> {
    let toolkit_dir = toolkit(dir, toolkit_dir)?;
    let script = dir.join("build.sh");
    let output = Command::new("bash")
        .arg(&script)
        .current_dir(dir)
        .env(TOOLKIT_ENV, &toolkit_dir)
        .output()
        .map_err(|source| PackageError::Io {
            action: "running",
            path: script.clone(),
            source,
        })?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    if output.status.success() {
        Ok(text)
    } else {
        let tail: Vec<&str> = text.lines().rev().take(40).collect();
        Err(PackageError::BuildFailed {
            dir: dir.to_path_buf(),
            status: output.status.to_string(),
            output: tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
        })
    }
}

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

fn attrs_text(attrs: &Attributes) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use pto_op::AttrValue;

    #[test]
    fn a_package_never_replaces_what_is_not_one() {
        let root = std::env::temp_dir().join(format!("pto-not-a-package-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let file = root.join("model.pto");
        write_file(&file, "a model file").expect("written");
        let other = root.join("docs");
        write_file(&other.join("notes.txt"), "notes").expect("written");
        let empty = root.join("empty");
        fs::create_dir_all(&empty).expect("created");
        let package = root.join("pkg");
        write_file(&package.join(MANIFEST_FILE), "{}").expect("written");
        for (dir, found) in [
            (&file, "is a file"),
            (&other, "is a directory with other files"),
        ] {
            let err = check_replaceable(dir).expect_err("refused").to_string();
            assert!(
                err.starts_with(&format!("`{}` {found}", dir.display())),
                "{err}"
            );
        }
        assert_eq!(
            fs::read_to_string(&file).expect("still there"),
            "a model file"
        );
        for dir in [&empty, &package, &root.join("new")] {
            check_replaceable(dir).expect("a package may go there");
        }
        fs::remove_dir_all(&root).expect("cleaned up");
    }

    #[test]
    fn a_failed_rename_puts_the_previous_package_back() {
        let root = std::env::temp_dir().join(format!("pto-replace-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let dir = root.join("pkg");
        write_file(&dir.join(MANIFEST_FILE), "previous").expect("written");
        // A staging directory that vanished: the second rename fails.
        let err = replace_dir(&root.join(".pkg.tmp-gone"), &dir).expect_err("nothing to rename");
        assert!(matches!(err, PackageError::Io { .. }), "{err}");
        assert_eq!(
            fs::read_to_string(dir.join(MANIFEST_FILE)).expect("still there"),
            "previous"
        );
        let siblings: Vec<_> = fs::read_dir(&root)
            .expect("readable")
            .filter_map(Result::ok)
            .map(|e| e.file_name())
            .collect();
        assert_eq!(siblings, [std::ffi::OsString::from("pkg")]);
        // A finished staging directory replaces it whole.
        let staging = sibling(&dir, "tmp").expect("a fresh name");
        write_file(&staging.join(MANIFEST_FILE), "next").expect("written");
        replace_dir(&staging, &dir).expect("replaced");
        assert_eq!(
            fs::read_to_string(dir.join(MANIFEST_FILE)).expect("read"),
            "next"
        );
        assert_eq!(fs::read_dir(&root).expect("readable").count(), 1);
        fs::remove_dir_all(&root).expect("cleaned up");
    }

    #[test]
    fn no_toolkit_is_said_and_named() {
        let dir = Path::new("pkg");
        let err = toolkit(dir, None).expect_err("unset");
        assert!(
            err.to_string().contains("ASCEND_HOME_PATH` is not set"),
            "{err}"
        );
        let missing = Path::new("/nonexistent/ascend");
        let err = toolkit(dir, Some(missing)).expect_err("no such directory");
        assert!(err.to_string().contains("/nonexistent/ascend"), "{err}");
        assert!(err.to_string().contains("pkg/build.sh"), "{err}");
        let here = std::env::temp_dir();
        assert_eq!(toolkit(dir, Some(&here)).expect("a directory"), here);
    }

    #[test]
    fn names_follow_the_op() {
        assert_eq!(op_type_name("demo.rms_norm"), "DemoRmsNorm");
        assert_eq!(op_type_name("teamb.scaled_tanh"), "TeambScaledTanh");
        assert_eq!(stem_name("demo.rms_norm"), "demo_rms_norm");
        assert_eq!(cpp::literal(&AttrValue::Bool(true)), "true");
    }
}
