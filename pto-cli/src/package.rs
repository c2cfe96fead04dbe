//! `pto package` (feature `device`): write a model's custom-op package and build it where a
//! CANN toolkit is present, or check a package against a model.

use std::path::{Path, PathBuf};

use pto_backends::ascendc::Soc;
use pto_backends::ascendc::package::{
    PackageError, RedeployOptions, build_capi_library, build_package, check_capi_library,
    check_package_kernels, framework_source, redeploy, write_package,
};

use crate::error::CliError;
use crate::load::load_model;

/// What `pto package` does after writing a package.
pub(crate) struct Steps {
    /// `--capi`: build the package's C ABI library and check it answers for every op.
    pub capi: bool,
    /// `Some` with `--build`: the toolkit directory the edge read, itself `None` when unset.
    pub toolkit: Option<Option<PathBuf>>,
}

/// `pto package MODEL [--device SOC] (-o DIR [--capi] [--build] | --check DIR)`.
pub(crate) fn package(
    model: &str,
    load: &crate::args::LoadArgs,
    device: Option<&str>,
    (output, check): (Option<&Path>, Option<&Path>),
    steps: &Steps,
    json: bool,
) -> Result<String, CliError> {
    let soc = device
        .map(|name| {
            Soc::from_profile_name(name).ok_or_else(|| CliError::UnknownSoc {
                name: name.to_owned(),
                known: Soc::profile_names(),
            })
        })
        .transpose()?;
    let model = load_model(model, load)?;
    if let Some(dir) = check {
        let (manifest, edits) = check_package_kernels(&model, dir)?;
        if let Some(soc) = soc
            && manifest.soc != soc.profile_name()
        {
            return Err(PackageError::SocMismatch {
                dir: dir.to_path_buf(),
                asked: soc.profile_name().to_owned(),
                package: manifest.soc,
            }
            .into());
        }
        return if json {
            Ok(serde_json::to_string_pretty(&manifest)?)
        } else {
            Ok(format!(
                "the package in `{}` matches model `{}`\n{manifest}{}",
                dir.display(),
                model.name,
                edits
                    .iter()
                    .map(|edit| format!("\n{edit}"))
                    .collect::<String>()
            ))
        };
    }
    let Some(dir) = output else {
        return Err(CliError::Usage(clap::Error::raw(
            clap::error::ErrorKind::MissingRequiredArgument,
            "pto package needs -o DIR (or --check DIR)\n",
        )));
    };
    let manifest = write_package(&model, soc.unwrap_or(Soc::Kirin9030), dir)?;
    let library = match steps.capi {
        true => {
            let source =
                std::env::var_os("PTO_SOURCE").map_or_else(framework_source, PathBuf::from);
            let library = build_capi_library(dir, &source)?;
            check_capi_library(&library, &manifest)?;
            Some(library)
        }
        false => None,
    };
    let built = match &steps.toolkit {
        Some(toolkit) => Some(build_package(dir, toolkit.as_deref())?),
        None => None,
    };
    if json {
        return Ok(serde_json::to_string_pretty(&manifest)?);
    }
    let next = match built {
        Some(output) => format!("built with build.sh:\n{}", output.trim_end()),
        None => format!(
            "next: `{}/build.sh` with a CANN toolkit (or `pto package --build`)",
            dir.display()
        ),
    };
    let library = library.map_or_else(String::new, |lib| {
        format!(
            "the C ABI library `{}` answers for every op\n",
            lib.display()
        )
    });
    Ok(format!(
        "wrote `{}`\n{manifest}\n{library}{next}",
        dir.display()
    ))
}

/// `pto redeploy DIR [--op NAME] [--replace-ascend-c] [--random-cases N]`.
pub(crate) fn redeploy_package(
    dir: &Path,
    options: &RedeployOptions,
    json: bool,
) -> Result<String, CliError> {
    let report = redeploy(dir, options).map_err(Box::new)?;
    Ok(crate::output::render(&report, json)?.trim_end().to_owned())
}
