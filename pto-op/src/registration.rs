//! One pattern for every linkme registry (ops, targets, models, estimators, properties):
//! each registration has a key and a source location, and two registrations of one key are
//! a [`DuplicateRegistration`] naming both places, in source order so the message is the
//! same every build whatever the link order. Kinds that allow `override` let the one
//! registration marked so win.

use std::collections::BTreeMap;
use std::fmt;

/// Where a definition was written, for messages that must name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceLocation {
    /// `module_path!()` of the op module.
    pub module_path: &'static str,
    /// `file!()`.
    pub file: &'static str,
    /// `line!()`.
    pub line: u32,
}

impl core::fmt::Display for SourceLocation {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} ({}:{})", self.module_path, self.file, self.line)
    }
}

/// A definition placed in a linkme registry.
pub trait Registered {
    /// What two registrations must not share.
    type Key: Ord + fmt::Display;

    /// The key of this registration.
    fn key(&self) -> Self::Key;

    /// What it is, for messages: `op`, `target`, `model`, `user estimator`, ...
    fn kind(&self) -> String;

    /// Where it is written.
    fn location(&self) -> SourceLocation;

    /// Whether this kind of registration can win a duplicate by being marked `override`.
    fn can_override(&self) -> bool {
        false
    }

    /// Whether this registration is marked `override`.
    fn overrides(&self) -> bool {
        false
    }

    /// What to do about a duplicate that `override` cannot settle.
    fn rename_advice(&self) -> &'static str {
        "rename one of them"
    }
}

impl<T: Registered + ?Sized> Registered for &T {
    type Key = T::Key;

    fn key(&self) -> Self::Key {
        (**self).key()
    }

    fn kind(&self) -> String {
        (**self).kind()
    }

    fn location(&self) -> SourceLocation {
        (**self).location()
    }

    fn can_override(&self) -> bool {
        (**self).can_override()
    }

    fn overrides(&self) -> bool {
        (**self).overrides()
    }

    fn rename_advice(&self) -> &'static str {
        (**self).rename_advice()
    }
}

/// A name as a registry key: shown in backquotes (`` `demo.gelu` ``).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Quoted(pub &'static str);

impl fmt::Display for Quoted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`", self.0)
    }
}

/// Two registrations of one key, neither of which wins.
///
/// ```
/// use pto_op::registration::{Registered, check_unique};
/// use pto_op::SourceLocation;
/// struct Target(&'static str, u32);
/// impl Registered for Target {
///     type Key = String;
///     fn key(&self) -> String { format!("`{}`", self.0) }
///     fn kind(&self) -> String { "target".to_owned() }
///     fn location(&self) -> SourceLocation {
///         SourceLocation { module_path: "backend", file: "backend.rs", line: self.1 }
///     }
/// }
/// let err = check_unique(&[Target("sim", 9), Target("cpu", 1), Target("sim", 4)]).unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "two target registrations of `sim`: one in backend (backend.rs:4), \
///      one in backend (backend.rs:9); rename one of them"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("two {kind} registrations of {key}: one in {first}, one in {second}; {advice}")]
pub struct DuplicateRegistration {
    /// What is registered twice (`op`, `target`, ...).
    pub kind: String,
    /// The shared key, as messages show it.
    pub key: String,
    /// Where one is written (the first in source order).
    pub first: SourceLocation,
    /// Where the other is written.
    pub second: SourceLocation,
    /// What to do about it.
    pub advice: Advice,
}

/// What to do about a [`DuplicateRegistration`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advice {
    /// Rename one (the text says how names are formed).
    Rename(&'static str),
    /// Neither is marked `override`: mark one, or remove the other.
    MarkOverride,
    /// Both are marked `override`, so neither wins.
    BothOverride,
}

impl fmt::Display for Advice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Advice::Rename(advice) => f.write_str(advice),
            Advice::MarkOverride => {
                f.write_str("mark the one that should win `override`, or remove the other")
            }
            Advice::BothOverride => f.write_str(
                "both are marked `override`, so neither wins: remove `override` from one",
            ),
        }
    }
}

/// The place order messages use: by file, line, then module.
fn place_order(location: &SourceLocation) -> (&'static str, u32, &'static str) {
    (location.file, location.line, location.module_path)
}

/// Indexes `items` by key: each key maps to the position of the registration that wins it
/// (the only one, or the only one marked `override` where that is allowed), or to the
/// duplicate that leaves no winner.
pub fn index<R: Registered>(
    items: &[R],
) -> BTreeMap<R::Key, Result<usize, Box<DuplicateRegistration>>> {
    let mut groups: BTreeMap<R::Key, Vec<usize>> = BTreeMap::new();
    for (position, item) in items.iter().enumerate() {
        groups.entry(item.key()).or_default().push(position);
    }
    groups
        .into_iter()
        .filter_map(|(key, mut members)| {
            members.sort_by_key(|&i| place_order(&items[i].location()));
            let marked: Vec<usize> = members
                .iter()
                .copied()
                .filter(|&i| items[i].can_override() && items[i].overrides())
                .collect();
            let winner = match (members.as_slice(), marked.as_slice()) {
                ([only], _) | (_, [only]) => Ok(*only),
                (_, [first, second, ..]) => Err(duplicate(
                    &key,
                    &items[*first],
                    &items[*second],
                    Advice::BothOverride,
                )),
                ([first, second, ..], []) => {
                    let advice = if items[*first].can_override() {
                        Advice::MarkOverride
                    } else {
                        Advice::Rename(items[*first].rename_advice())
                    };
                    Err(duplicate(&key, &items[*first], &items[*second], advice))
                }
                // Groups are made by their first member: never empty.
                ([], []) => return None,
            };
            Some((key, winner))
        })
        .collect()
}

fn duplicate<R: Registered>(
    key: &R::Key,
    first: &R,
    second: &R,
    advice: Advice,
) -> Box<DuplicateRegistration> {
    Box::new(DuplicateRegistration {
        kind: first.kind(),
        key: key.to_string(),
        first: first.location(),
        second: second.location(),
        advice,
    })
}

/// Indexes `items` by key, failing on the first key (in key order) that no single
/// registration wins; see [`index`].
///
/// # Errors
///
/// The [`DuplicateRegistration`] naming both places (boxed: errors stay small).
pub fn check_unique<R: Registered>(
    items: &[R],
) -> Result<BTreeMap<R::Key, usize>, Box<DuplicateRegistration>> {
    index(items)
        .into_iter()
        .map(|(key, winner)| winner.map(|position| (key, position)))
        .collect()
}

/// The [`SourceLocation`] of the macro call: for registrations written by hand.
///
/// ```
/// let here = pto_op::source_location!();
/// assert!(here.file.ends_with(".rs"));
/// ```
#[macro_export]
macro_rules! source_location {
    () => {
        $crate::SourceLocation {
            module_path: ::core::module_path!(),
            file: ::core::file!(),
            line: ::core::line!(),
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Entry {
        key: &'static str,
        line: u32,
        overrides: bool,
    }

    impl Registered for Entry {
        type Key = String;

        fn key(&self) -> String {
            format!("`{}`", self.key)
        }

        fn kind(&self) -> String {
            "estimator".to_owned()
        }

        fn location(&self) -> SourceLocation {
            SourceLocation {
                module_path: "tests",
                file: "a.rs",
                line: self.line,
            }
        }

        fn can_override(&self) -> bool {
            true
        }

        fn overrides(&self) -> bool {
            self.overrides
        }
    }

    fn entry(key: &'static str, line: u32, overrides: bool) -> Entry {
        Entry {
            key,
            line,
            overrides,
        }
    }

    #[test]
    fn the_one_override_wins_and_others_are_duplicates_in_source_order() {
        let items = [
            entry("a", 7, false),
            entry("a", 3, true),
            entry("b", 9, false),
            entry("b", 2, false),
            entry("c", 5, true),
            entry("c", 1, true),
            entry("d", 4, false),
        ];
        let index = index(&items);
        assert_eq!(index["`a`"], Ok(1));
        assert_eq!(index["`d`"], Ok(6));
        let b = index["`b`"].clone().expect_err("no winner");
        assert_eq!((b.first.line, b.second.line), (2, 9));
        assert_eq!(b.advice, Advice::MarkOverride);
        let c = index["`c`"].clone().expect_err("two overrides");
        assert_eq!((c.first.line, c.second.line), (1, 5));
        assert_eq!(
            c.to_string(),
            "two estimator registrations of `c`: one in tests (a.rs:1), one in tests (a.rs:5); \
             both are marked `override`, so neither wins: remove `override` from one"
        );
        // check_unique reports the first key in key order.
        assert_eq!(*check_unique(&items).expect_err("duplicates"), *b);
    }
}
