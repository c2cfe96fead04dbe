//! What a MODEL argument names: a model file, an ONNX file, or a built-in model.

use std::path::Path;

use pto_onnx::ImportOptions;
use pto_onnx::LoadedModel;
use pto_onnx::OnnxFile;
use pto_op::models::{builtin_models, find_builtin};
use pto_op::{GraphDef, Model};

use crate::args::LoadArgs;
use crate::error::CliError;

/// True for a path that names an ONNX file.
pub(crate) fn is_onnx(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("onnx"))
}

/// The model a MODEL argument names: an ONNX or model file if one exists at that path,
/// else a built-in model; fused when `--fuse` asks.
pub(crate) fn load_model(name: &str, load: &LoadArgs) -> Result<Model, CliError> {
    let model = load_unfused(name, load)?;
    if !load.fuse {
        return Ok(model);
    }
    Ok(pto_op::fusion::fuse(&model)
        .map_err(|source| CliError::Fuse {
            model: model.name.clone(),
            source,
        })?
        .0)
}

/// The model a MODEL argument names, as it is.
pub(crate) fn load_unfused(name: &str, load: &LoadArgs) -> Result<Model, CliError> {
    let path = Path::new(name);
    if path.is_dir() {
        return Err(CliError::ModelIsDirectory {
            path: name.to_owned(),
        });
    }
    if names_file(path) {
        return Ok(if is_onnx(path) {
            Model::load_onnx_with(path, &import_options(load)?)?
        } else {
            LoadedModel::load(path)?.bind(&import_options(load)?)?
        });
    }
    let def = find_builtin(name)?.ok_or_else(|| CliError::UnknownModel {
        name: name.to_owned(),
        known: match builtin_models().unwrap_or_default().as_slice() {
            [] => "none (link a crate that registers some)".to_owned(),
            all => all.iter().map(|m| m.name).collect::<Vec<_>>().join(", "),
        },
    })?;
    (def.build)().map_err(|e| CliError::build(def, e))
}

/// The model a MODEL argument names, its symbolic dims kept when `--shape` binds none (an
/// ONNX file or a model file saved so): what `import`, `inspect` and `export` show or write.
pub(crate) fn load_loaded(name: &str, load: &LoadArgs) -> Result<LoadedModel, CliError> {
    let path = Path::new(name);
    let options = import_options(load)?;
    let loaded = if names_file(path) && options.is_empty() {
        if is_onnx(path) {
            LoadedModel::load_onnx(path)?
        } else {
            LoadedModel::load(path)?
        }
    } else {
        LoadedModel::Static(load_unfused(name, load)?)
    };
    match loaded {
        LoadedModel::Static(model) if load.fuse => Ok(LoadedModel::Static(
            pto_op::fusion::fuse(&model)
                .map_err(|source| CliError::Fuse {
                    model: model.name.clone(),
                    source,
                })?
                .0,
        )),
        LoadedModel::Symbolic(model) if load.fuse => Err(CliError::unbound(&model, "`--fuse`")),
        other => Ok(other),
    }
}

/// True when `path` names something that is not a directory: a file, or a FIFO, a device or
/// a link, which the loaders then refuse by name (never "no model file" for a path that is
/// there).
fn names_file(path: &Path) -> bool {
    path.symlink_metadata().is_ok_and(|m| !m.is_dir())
}

/// True when a MODEL argument names a built-in model (no file at that path).
pub(crate) fn names_builtin(name: &str) -> bool {
    !Path::new(name).exists() && find_builtin(name).ok().flatten().is_some()
}

/// The graph a MODEL argument names, for estimation: a built-in model's weights need not
/// exist (see [`pto_op::models::ModelDef::describe`]).
pub(crate) fn load_graph(name: &str, load: &LoadArgs) -> Result<(String, GraphDef), CliError> {
    if !names_file(Path::new(name))
        && let Some(def) = find_builtin(name)?
    {
        let graph = def.graph().map_err(|e| CliError::build(def, e))?;
        return Ok((def.name.to_owned(), graph));
    }
    let model = load_model(name, load)?;
    Ok((model.name, model.graph))
}

/// The import options of `--shape`; a name given two different values is an error.
pub(crate) fn import_options(load: &LoadArgs) -> Result<ImportOptions, CliError> {
    let mut options = ImportOptions::default();
    for (name, shape) in &load.shapes {
        if let Some(first) = options.shapes.insert(name.clone(), shape.clone())
            && first != *shape
        {
            return Err(CliError::Onnx(pto_onnx::OnnxError::Value {
                value: name.clone(),
                problem: format!("`--shape` gives it twice, {first} and {shape}"),
            }));
        }
    }
    for (name, value) in &load.constants {
        if let Some(first) = options.constants.insert(name.clone(), value.clone())
            && first != *value
        {
            return Err(CliError::Onnx(pto_onnx::OnnxError::Value {
                value: name.clone(),
                problem: "`--constant` gives it twice, with two values".to_owned(),
            }));
        }
    }
    Ok(options)
}
