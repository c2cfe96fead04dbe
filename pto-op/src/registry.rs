//! The registry of every op linked into the program.
//!
//! `#[custom_op]` places each op's [`OpDef`] in one linkme distributed slice, so an op is
//! registered by being linked: no central list is edited.
//!
//! # Ops in other crates
//!
//! The linker only sees a crate that the program refers to. An operator crate that the
//! binary depends on but never names is dropped whole, and its ops with it. Name it once,
//! anywhere in the binary:
//!
//! ```ignore
//! use my_ops as _; // links my_ops, and so registers its ops
//! ```
//!
//! (`pto-tests` has a test that does exactly this for an op defined in another crate.)

use std::collections::BTreeMap;
use std::sync::OnceLock;

use crate::op::{OpDef, SourceLocation};
use crate::registration::{DuplicateRegistration, Quoted, Registered, check_unique};

impl Registered for OpDef {
    type Key = Quoted;

    fn key(&self) -> Quoted {
        Quoted(self.name)
    }

    fn kind(&self) -> String {
        "op".to_owned()
    }

    fn location(&self) -> SourceLocation {
        self.source
    }

    fn rename_advice(&self) -> &'static str {
        "rename one of them (names are `domain.op`, and the domain should be your team's)"
    }
}

#[doc(hidden)]
#[linkme::distributed_slice]
pub static OPERATORS: [OpDef];

/// An error of looking up ops.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// No linked op has this name.
    #[error("no op named {} is registered{}", crate::name::quoted(name), suggestion(.close))]
    Unknown {
        /// The name looked up.
        name: String,
        /// Registered names that look alike, for the message.
        close: Vec<String>,
    },
    /// Two linked ops share one name.
    #[error(transparent)]
    Duplicate(#[from] Box<DuplicateRegistration>),
}

fn suggestion(close: &[String]) -> String {
    if close.is_empty() {
        "; is the crate that defines it linked (see `pto_op::registry`)?".to_owned()
    } else {
        format!("; did you mean {}?", close.join(" or "))
    }
}

/// The ops of this program, by name.
#[derive(Debug)]
pub struct Registry {
    by_name: BTreeMap<&'static str, &'static OpDef>,
}

impl Registry {
    /// Indexes `ops`; fails on the first name defined twice (see [`check_unique`]).
    pub fn new(ops: impl IntoIterator<Item = &'static OpDef>) -> Result<Registry, RegistryError> {
        let ops: Vec<&'static OpDef> = ops.into_iter().collect();
        let by_name = check_unique(&ops)?
            .into_iter()
            .map(|(name, position)| (name.0, ops[position]))
            .collect();
        Ok(Registry { by_name })
    }

    /// The op named `name`.
    pub fn find(&self, name: &str) -> Result<&'static OpDef, RegistryError> {
        self.by_name
            .get(name)
            .copied()
            .ok_or_else(|| RegistryError::Unknown {
                name: name.to_owned(),
                close: self.close_names(name),
            })
    }

    /// Every op, ordered by name.
    pub fn ops(&self) -> impl ExactSizeIterator<Item = &'static OpDef> + '_ {
        self.by_name.values().copied()
    }

    /// The number of ops.
    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    /// True when no op is linked.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    fn close_names(&self, name: &str) -> Vec<String> {
        let short = name.rsplit('.').next().unwrap_or(name);
        self.by_name
            .keys()
            .filter(|k| k.rsplit('.').next() == Some(short) || edit_distance(k, name) <= 2)
            .map(|k| (*k).to_owned())
            .collect()
    }
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// The registry of every op linked into this program, built at first use.
///
/// Fails, at every call, if two linked ops share a name.
pub fn registry() -> Result<&'static Registry, RegistryError> {
    static REGISTRY: OnceLock<Result<Registry, RegistryError>> = OnceLock::new();
    REGISTRY
        .get_or_init(|| Registry::new(OPERATORS.iter()))
        .as_ref()
        .map_err(Clone::clone)
}

/// The linked op named `name`.
pub fn find(name: &str) -> Result<&'static OpDef, RegistryError> {
    registry()?.find(name)
}

/// Every linked op, ordered by name.
pub fn ops() -> Result<Vec<&'static OpDef>, RegistryError> {
    Ok(registry()?.ops().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_single_edits() {
        assert_eq!(edit_distance("demo.gelu", "demo.gelu"), 0);
        assert_eq!(edit_distance("demo.gelu", "demo.gleu"), 2);
        assert_eq!(edit_distance("abc", "abcd"), 1);
        assert_eq!(edit_distance("", "ab"), 2);
    }
}
