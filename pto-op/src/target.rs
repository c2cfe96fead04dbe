//! The registry of execution targets (`cpu`, `sim`, devices), so that code which only knows
//! a target's name (a test, the command line, `PTO_TARGET`) can run on it.
//!
//! Backend crates register their targets in a linkme slice, like ops. As with operator
//! crates, a binary must link the backend crate for its targets to exist: name it once,
//! `use pto_backends as _;`.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use crate::executor::Executor;
use crate::op::SourceLocation;
use crate::registration::{DuplicateRegistration, Quoted, Registered, check_unique};

/// A registered target.
#[derive(Debug)]
pub struct TargetDef {
    /// The target's name, as `--target` and `PTO_TARGET` take it.
    pub name: &'static str,
    /// One line on what it runs.
    pub description: &'static str,
    /// Makes an executor for the target.
    pub make: fn() -> Box<dyn Executor>,
    /// Where it is registered: `pto_op::source_location!()`.
    pub source: SourceLocation,
}

impl Registered for TargetDef {
    type Key = Quoted;

    fn key(&self) -> Quoted {
        Quoted(self.name)
    }

    fn kind(&self) -> String {
        "target".to_owned()
    }

    fn location(&self) -> SourceLocation {
        self.source
    }
}

#[doc(hidden)]
#[linkme::distributed_slice]
pub static TARGETS: [TargetDef];

/// An error of looking up a target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TargetError {
    /// No linked target has the name.
    #[error(
        "no execution target `{name}`; linked targets: {}{}",
        if known.is_empty() { "none".to_owned() } else { known.join(", ") },
        if known.is_empty() { " (add `use pto_backends as _;` to the binary or test to link them)" } else { "" }
    )]
    Unknown {
        /// The name asked for.
        name: String,
        /// The linked targets' names.
        known: Vec<String>,
    },
    /// Two linked targets share a name.
    #[error(transparent)]
    Duplicate(#[from] Box<DuplicateRegistration>),
}

/// Every linked target, ordered by name.
pub fn targets() -> Vec<&'static TargetDef> {
    let mut all: Vec<&'static TargetDef> = TARGETS.iter().collect();
    all.sort_by_key(|t| t.name);
    all
}

/// The linked targets by name, built at first use; fails, at every call, if two linked
/// targets share a name.
fn by_name() -> Result<&'static BTreeMap<&'static str, usize>, TargetError> {
    static BY_NAME: OnceLock<Result<BTreeMap<&'static str, usize>, Box<DuplicateRegistration>>> =
        OnceLock::new();
    BY_NAME
        .get_or_init(|| {
            let unique = check_unique(&TARGETS[..])?;
            Ok(unique.into_iter().map(|(name, at)| (name.0, at)).collect())
        })
        .as_ref()
        .map_err(|e| TargetError::Duplicate(e.clone()))
}

/// An executor for the target named `name`.
///
/// # Errors
///
/// [`TargetError::Unknown`] when no linked target has the name, listing those that are;
/// [`TargetError::Duplicate`] when two linked targets share any name.
pub fn target(name: &str) -> Result<Box<dyn Executor>, TargetError> {
    by_name()?
        .get(name)
        .map(|&position| (TARGETS[position].make)())
        .ok_or_else(|| TargetError::Unknown {
            name: name.to_owned(),
            known: targets().iter().map(|t| t.name.to_owned()).collect(),
        })
}
