//! The registry of execution targets (`cpu`, `sim`, devices), so that code which only knows
//! a target's name (a test, the command line, `PTO_TARGET`) can run on it.
//!
//! Backend crates register their targets in a linkme slice, like ops. As with operator
//! crates, a binary must link the backend crate for its targets to exist: name it once,
//! `use pto_backends as _;`.

use crate::executor::Executor;

/// A registered target.
#[derive(Debug)]
pub struct TargetDef {
    /// The target's name, as `--target` and `PTO_TARGET` take it.
    pub name: &'static str,
    /// One line on what it runs.
    pub description: &'static str,
    /// Makes an executor for the target.
    pub make: fn() -> Box<dyn Executor>,
}

#[doc(hidden)]
#[linkme::distributed_slice]
pub static TARGETS: [TargetDef];

/// An error of looking up a target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "no execution target `{name}`; linked targets: {}{}",
    if known.is_empty() { "none".to_owned() } else { known.join(", ") },
    if known.is_empty() { " (add `use pto_backends as _;` to the binary or test to link them)" } else { "" }
)]
pub struct UnknownTarget {
    /// The name asked for.
    pub name: String,
    /// The linked targets' names.
    pub known: Vec<String>,
}

/// Every linked target, ordered by name.
pub fn targets() -> Vec<&'static TargetDef> {
    let mut all: Vec<&'static TargetDef> = TARGETS.iter().collect();
    all.sort_by_key(|t| t.name);
    all
}

/// An executor for the target named `name`.
pub fn target(name: &str) -> Result<Box<dyn Executor>, UnknownTarget> {
    TARGETS
        .iter()
        .find(|t| t.name == name)
        .map(|t| (t.make)())
        .ok_or_else(|| UnknownTarget {
            name: name.to_owned(),
            known: targets().iter().map(|t| t.name.to_owned()).collect(),
        })
}
