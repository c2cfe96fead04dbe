//! Generating a package in memory: which files it holds for each op and for all of them,
//! their text (from [`cpp`], [`project`] and [`build`]), and the manifest that records them.

use std::collections::BTreeMap;
use std::path::PathBuf;

use pto_op::model::kernels::text_digest;
use pto_op::{Model, OpDef};

pub use super::paths::{kernel_file, stem_name};

use super::custom_ops::{OpUse, custom_ops};
use super::error::PackageError;
use super::manifest::{
    DeployedKernel, Instance, InstanceTiling, KernelOrigin, MANIFEST_FILE, MANIFEST_FORMAT,
    Manifest, PackagedOp,
};
use super::{capi, cmake, cpp, project};
use crate::ascendc::{LowerError, LoweredKernel, Soc, lower_program};

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
pub(super) struct GeneratedFile {
    /// The path, relative to the package directory.
    pub(super) path: String,
    /// The text.
    pub(super) text: String,
}

impl GeneratedFile {
    /// The file at `path` with `text`.
    pub(super) fn new(path: impl Into<String>, text: String) -> GeneratedFile {
        GeneratedFile {
            path: path.into(),
            text,
        }
    }

    /// Its line count, as the manifest records it.
    pub(super) fn lines(&self) -> usize {
        self.text.lines().count()
    }
}

/// One instance's kernel: its text form (what runs on the simulator and what a user edits)
/// and its lowering to Ascend C.
pub(super) struct InstanceKernel {
    /// The text form, as deployed.
    pub(super) text: String,
    /// The digest of the text as traced from the op (see [`text_digest`]).
    pub(super) traced_digest: String,
    /// The text's program lowered for the SoC.
    pub(super) lowered: LoweredKernel,
}

/// The instance of a call as the lowering's header comment names it:
/// `x=f32[64, 256], gamma=f32[256], eps=0.000001`.
pub(super) fn instance_text(def: &OpDef, instance: &Instance) -> String {
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

/// One op's files and manifest entry, from its kernel per instance (`kernels`, in the order
/// of `u.instances`); `cpp` replaces the lowered `op_kernel/<stem>.cpp` (an Ascend C edit).
pub(super) fn op_package(
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
pub(super) fn generate(
    model: &Model,
    soc: Soc,
) -> Result<(Manifest, Vec<GeneratedFile>), PackageError> {
    let uses = custom_ops(model)?;
    if uses.is_empty() {
        return Err(PackageError::NothingToPackage {
            model: model.name.clone(),
        });
    }
    // Before any lowering: the C ABI library must be able to answer for every op.
    let defs: Vec<&OpDef> = uses.iter().map(|u| u.def).collect();
    let crates = capi::op_crates(&defs)?;
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
    let shared = shared_files(model, soc, op_descs, &crates);
    let manifest = Manifest {
        format: MANIFEST_FORMAT,
        model: model.name.clone(),
        soc: soc.profile_name().to_owned(),
        soc_version: soc.soc_version().to_owned(),
        cann_version: crate::ascendc::CANN_VERSION.to_owned(),
        pto_op_version: env!("CARGO_PKG_VERSION").to_owned(),
        ops,
        shared_files: shared.iter().map(|f| (f.path.clone(), f.lines())).collect(),
    };
    files.extend(shared);
    Ok((manifest, files))
}

/// The files every op of a package shares.
fn shared_files(
    model: &Model,
    soc: Soc,
    op_descs: Vec<serde_json::Value>,
    crates: &[capi::OpCrate],
) -> Vec<GeneratedFile> {
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
        GeneratedFile::new("build.sh", cmake::build_script(&model.name, soc)),
        GeneratedFile::new("capi/src/lib.rs", capi::lib_rs(&model.name, crates)),
        GeneratedFile::new("capi/build.sh", capi::build_script(&model.name, crates)),
        GeneratedFile::new("op_desc.json", project::op_desc_json(op_descs)),
    ]
    .into_iter()
    .chain(
        cmake::project_files(&model.name, soc)
            .into_iter()
            .map(|(path, text)| GeneratedFile::new(path, text)),
    )
    .chain(
        cmake::build_and_install_script(soc)
            .map(|text| GeneratedFile::new("build_and_install.sh", text)),
    )
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pto_op::AttrValue;

    #[test]
    fn names_follow_the_op() {
        assert_eq!(op_type_name("demo.rms_norm"), "DemoRmsNorm");
        assert_eq!(op_type_name("teamb.scaled_tanh"), "TeambScaledTanh");
        assert_eq!(stem_name("demo.rms_norm"), "demo_rms_norm");
        assert_eq!(cpp::literal(&AttrValue::Bool(true)), "true");
    }
}
