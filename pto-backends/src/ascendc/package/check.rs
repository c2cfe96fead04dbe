//! Checking a package against a model before running the model with it.

use std::path::Path;

use pto_op::Model;

use super::custom_ops::custom_ops;
use super::error::PackageError;
use super::manifest::{Manifest, attrs_text, read_manifest};

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
