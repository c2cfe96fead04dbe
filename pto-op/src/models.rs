//! Built-in models: builders that crates register by name, so tools like the `pto` command
//! line can run a model that has no file (`pto run decoder-block`).
//!
//! A crate registers a builder with [`register_model!`](crate::register_model); as with
//! ops, the crate must be linked into the binary (`use my_models as _;`).

use crate::error::OpError;
use crate::graph::GraphDef;
use crate::model::Model;

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

#[doc(hidden)]
#[linkme::distributed_slice]
pub static MODELS: [ModelDef];

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
        static $static_name: $crate::models::ModelDef = $def;
    };
}

/// Every registered model, ordered by name.
pub fn builtin_models() -> Vec<&'static ModelDef> {
    let mut all: Vec<&'static ModelDef> = MODELS.iter().collect();
    all.sort_by_key(|m| m.name);
    all
}

/// The registered model named `name`; `_` and `-` are interchangeable.
pub fn find_builtin(name: &str) -> Option<&'static ModelDef> {
    let wanted = name.replace('_', "-");
    MODELS.iter().find(|m| m.name.replace('_', "-") == wanted)
}
