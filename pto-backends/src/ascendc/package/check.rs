//! Checking a package against a model before running the model with it.

use core::fmt;
use std::collections::BTreeSet;
use std::path::Path;

use pto_op::Model;

use super::custom_ops::custom_ops;
use super::error::PackageError;
use super::generate::instance_text;
use super::manifest::{Manifest, attrs_text, read_manifest};
use super::redeploy::{check_deployed_kernel, package_kernels};

/// A deployed kernel of a package that is not the kernel its op traces (edited by hand, or
/// by a redeploy) and passed the checks on load: it validates as a kernel of its instance and
/// agrees with the op's reference on the simulator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedEdit {
    /// The op.
    pub op: String,
    /// The instance's number in the package and its description.
    pub instance: String,
    /// The parity cases it passed.
    pub cases: usize,
}

/// `op `demo.rms_norm`, instance 0 (x=f32[64, 64], ...): kernel edited, parity passed (3
/// cases on sim)`.
impl fmt::Display for CheckedEdit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "op `{}`, instance {}: kernel edited, parity passed ({} case(s) on sim against \
             the op's reference)",
            self.op, self.instance, self.cases
        )
    }
}

/// Loads the package in `dir` for running `model`: refuses it (an error naming the op) when
/// an op of the model is missing from it, has another fingerprint in the model than in the
/// package, or is called with input types or params the package has no instance of, or when a
/// deployed kernel of an op the model uses is not the kernel the op traces and fails parity
/// against the op's reference (see [`check_package_kernels`]).
///
/// # Errors
///
/// As [`check_package_kernels`].
pub fn check_package(model: &Model, dir: &Path) -> Result<Manifest, PackageError> {
    check_package_kernels(model, dir).map(|(manifest, _)| manifest)
}

/// [`check_package`], with the edited kernels that passed: every deployed kernel of an op the
/// model uses whose text is not the one the linked op traces for the package's SoC is
/// validated as a kernel of its instance and run on the simulator against the op's reference
/// (the op's `#[parity]` cases of the instance and random inputs of its own types, as a
/// redeploy does) before anything runs it.
///
/// Every difference is reported, not only the first: one is returned as itself, several as
/// [`PackageError::Differences`], in the model's order.
///
/// # Errors
///
/// [`PackageError::MissingOp`], [`PackageError::FingerprintMismatch`],
/// [`PackageError::MissingInstance`], [`PackageError::EditedKernel`] (with the parity report:
/// the max error against the tolerance), several of them as [`PackageError::Differences`],
/// or an error of [`read_manifest`].
pub fn check_package_kernels(
    model: &Model,
    dir: &Path,
) -> Result<(Manifest, Vec<CheckedEdit>), PackageError> {
    let manifest = read_manifest(dir)?;
    let mut problems = Vec::new();
    // Ops whose packaged kernels are not the model's op's: nothing more to compare.
    let mut unusable = BTreeSet::new();
    for node in &model.graph.nodes {
        if node.op.starts_with("std.") || unusable.contains(&node.op) {
            continue;
        }
        let Some(packaged) = manifest.op(&node.op) else {
            unusable.insert(node.op.clone());
            problems.push(PackageError::MissingOp {
                dir: dir.to_path_buf(),
                op: node.op.clone(),
            });
            continue;
        };
        if packaged.fingerprint != node.fingerprint {
            unusable.insert(node.op.clone());
            problems.push(PackageError::FingerprintMismatch {
                dir: dir.to_path_buf(),
                op: node.op.clone(),
                model: node.fingerprint,
                package: packaged.fingerprint,
            });
        }
    }
    let uses = custom_ops(model).unwrap_or_else(|e| {
        problems.push(e);
        Vec::new()
    });
    // The kernels are checked on the package's device; without one, they cannot be.
    let profile = manifest.profile(dir).map_err(|e| problems.push(e)).ok();
    let mut edits = Vec::new();
    for u in &uses {
        let Some(packaged) = manifest
            .op(u.def.name)
            .filter(|_| !unusable.contains(u.def.name))
        else {
            continue;
        };
        for instance in &u.instances {
            let found = packaged
                .instances
                .iter()
                .any(|p| p.inputs == instance.inputs && p.attrs == instance.attrs);
            if !found {
                problems.push(PackageError::MissingInstance {
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
        let Some((_, profile)) = &profile else {
            continue;
        };
        for (i, (instance, kernel)) in packaged.instances.iter().zip(&packaged.kernels).enumerate()
        {
            let name = || format!("{i} ({})", instance_text(u.def, instance));
            match check_deployed_kernel(u.def, packaged, instance, kernel, profile) {
                Ok(None) => {}
                Ok(Some(cases)) => edits.push(CheckedEdit {
                    op: packaged.op.clone(),
                    instance: name(),
                    cases,
                }),
                Err(problem) => problems.push(PackageError::EditedKernel {
                    dir: dir.to_path_buf(),
                    op: packaged.op.clone(),
                    instance: name(),
                    problem,
                }),
            }
        }
    }
    match problems.len() {
        0 => Ok((manifest, edits)),
        1 => Err(problems.remove(0)),
        _ => Err(PackageError::Differences {
            dir: dir.to_path_buf(),
            problems,
        }),
    }
}

/// `model` with the kernels deployed in the package in `dir` in place of its own shipped
/// kernels of the same instances, after checking the package against the model
/// ([`super::check_package`], which runs every edited deployed kernel against the op's
/// reference first): compiled, it runs the package's kernels, and its compile report says
/// `kernel: shipped` or `kernel: shipped (edited)`.
///
/// # Errors
///
/// The errors of [`super::check_package`]: an edited kernel that fails parity is refused
/// ([`PackageError::EditedKernel`]) before anything runs it.
pub fn with_package_kernels(model: &Model, dir: &Path) -> Result<Model, PackageError> {
    load_package_kernels(model, dir).map(|(model, _)| model)
}

/// [`with_package_kernels`], with the edited kernels that passed parity on load (what
/// `--kernels` says of them: `kernel edited, parity passed`).
///
/// # Errors
///
/// As [`with_package_kernels`].
pub fn load_package_kernels(
    model: &Model,
    dir: &Path,
) -> Result<(Model, Vec<CheckedEdit>), PackageError> {
    let (_, edits) = check_package_kernels(model, dir)?;
    let packaged = package_kernels(dir)?;
    let mut model = model.clone();
    model.kernels.retain(|k| {
        !packaged
            .iter()
            .any(|p| p.is_for(&k.op, &k.inputs, &k.params))
    });
    model.kernels.extend(packaged);
    Ok((model, edits))
}
