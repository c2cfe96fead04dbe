//! Built-in models: builders that crates register by name, so tools like the `pto` command
//! line can run a model that has no file (`pto run decoder-block`).
//!
//! A crate registers a builder with [`register_model!`](crate::register_model); as with
//! ops, the crate must be linked into the binary (`use my_models as _;`).

use crate::error::OpError;
use crate::graph::GraphDef;
use crate::model::Model;
use crate::op::SourceLocation;
use crate::registration::{DuplicateRegistration, Registered, check_unique};

/// A registered model builder.
#[derive(Debug)]
pub struct ModelDef {
    /// The name the command line takes (`decoder-block`).
    pub name: &'static str,
    /// One line on what the model is.
    pub description: &'static str,
    /// Builds (traces) the model, weights included.
    pub build: fn() -> Result<Model, OpError>,
    /// Builds the graph alone, weights declared by type without data, for a model too
    /// large to materialize: estimation reads this when it is given, else `build`'s graph.
    pub describe: Option<fn() -> Result<GraphDef, OpError>>,
}

impl ModelDef {
    /// The model's graph: `describe` when given, else the graph of `build`.
    ///
    /// # Errors
    ///
    /// The builder's error.
    pub fn graph(&self) -> Result<GraphDef, OpError> {
        match self.describe {
            Some(describe) => describe(),
            None => Ok((self.build)()?.graph),
        }
    }
}

/// A [`ModelDef`] as [`register_model!`](crate::register_model) places it in the registry:
/// with where it is registered, for duplicate-name messages.
#[derive(Debug)]
pub struct ModelRegistration {
    /// The model.
    pub def: ModelDef,
    /// Where it is registered.
    pub source: SourceLocation,
}

impl Registered for ModelRegistration {
    /// The name with `_` read as `-`, the way lookups compare names.
    type Key = String;

    fn key(&self) -> String {
        format!("`{}`", self.def.name.replace('_', "-"))
    }

    fn kind(&self) -> String {
        "model".to_owned()
    }

    fn location(&self) -> SourceLocation {
        self.source
    }
}

#[doc(hidden)]
#[linkme::distributed_slice]
pub static MODELS: [ModelRegistration];

/// Registers a model builder under a name.
///
/// ```ignore
/// pto_op::register_model!(PIPELINE, pto_op::models::ModelDef {
///     name: "pipeline",
///     description: "gelu_affine -> rms_norm -> softmax",
///     build: pipeline::build,
///     describe: None,
/// });
/// ```
#[macro_export]
macro_rules! register_model {
    ($static_name:ident, $def:expr) => {
        #[$crate::__private::linkme::distributed_slice($crate::__private::MODELS)]
        #[linkme(crate = $crate::__private::linkme)]
        static $static_name: $crate::models::ModelRegistration =
            $crate::models::ModelRegistration {
                def: $def,
                source: $crate::__private::SourceLocation {
                    module_path: ::core::module_path!(),
                    file: ::core::file!(),
                    line: ::core::line!(),
                },
            };
    };
}

/// Every registered model, ordered by name.
///
/// # Errors
///
/// [`DuplicateRegistration`] when two registered models share a name (`_` and `-` count as
/// the same), naming both places.
pub fn builtin_models() -> Result<Vec<&'static ModelDef>, Box<DuplicateRegistration>> {
    let unique = check_unique(&MODELS[..])?;
    let mut all: Vec<&'static ModelDef> = unique.values().map(|&at| &MODELS[at].def).collect();
    all.sort_by_key(|m| m.name);
    Ok(all)
}

/// The registered model named `name`, if any; `_` and `-` are interchangeable.
///
/// # Errors
///
/// As [`builtin_models`].
pub fn find_builtin(name: &str) -> Result<Option<&'static ModelDef>, Box<DuplicateRegistration>> {
    let wanted = name.replace('_', "-");
    Ok(builtin_models()?
        .into_iter()
        .find(|m| m.name.replace('_', "-") == wanted))
}
