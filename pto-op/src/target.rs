//! The registry of execution targets (`cpu`, `sim`, devices), so that code which only knows
//! a target's name and device (a test, the command line) can run on it: a [`TargetConfig`].
//!
//! The library reads no environment: a program that wants `PTO_TARGET`/`PTO_DEVICE` reads
//! them at its edge (the `pto` command line does) and passes a [`TargetConfig`].
//!
//! Backend crates register their targets in a linkme slice, like ops. As with operator
//! crates, a binary must link the backend crate for its targets to exist: name it once,
//! `use pto_backends as _;`.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use crate::budget::MemoryBudget;
use crate::device::DeviceProfile;
use crate::executor::Executor;
use crate::op::SourceLocation;
use crate::registration::{DuplicateRegistration, Quoted, Registered, check_unique};

/// A registered target.
#[derive(Debug)]
pub struct TargetDef {
    /// The target's name, as `--target` takes it.
    pub name: &'static str,
    /// One line on what it runs.
    pub description: &'static str,
    /// Makes an executor for the target on a device profile; `None`: the target's default
    /// device. Targets that model no device (the CPU reference) ignore it.
    pub make: fn(Option<&DeviceProfile>) -> Box<dyn Executor>,
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

/// A target to run on: a registered target's name and, for targets that model a device
/// (`sim`), the device profile.
///
/// ```
/// use pto_op::target::TargetConfig;
/// let sim = TargetConfig::new("sim").on(pto_op::DeviceProfile::builtin("ascend910b").unwrap());
/// assert_eq!(sim.to_string(), "sim on ascend910b");
/// assert_eq!(TargetConfig::from("cpu").to_string(), "cpu");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct TargetConfig {
    /// The target's name.
    pub name: String,
    /// The device profile; `None`: the target's default.
    pub device: Option<DeviceProfile>,
    /// The most memory a model compiled for it may need (weights and peak activations);
    /// `None`: [`MemoryBudget::machine`], a share of the machine's memory.
    pub memory_budget: Option<MemoryBudget>,
}

impl TargetConfig {
    /// The target named `name` on its default device.
    pub fn new(name: impl Into<String>) -> TargetConfig {
        TargetConfig {
            name: name.into(),
            device: None,
            memory_budget: None,
        }
    }

    /// This target on `device`.
    #[must_use]
    pub fn on(mut self, device: DeviceProfile) -> TargetConfig {
        self.device = Some(device);
        self
    }

    /// This target, refusing models that need more memory than `budget`.
    ///
    /// ```
    /// use pto_op::budget::MemoryBudget;
    /// use pto_op::target::TargetConfig;
    /// let cpu = TargetConfig::new("cpu").within(MemoryBudget::bytes(1 << 30));
    /// assert_eq!(cpu.budget().limit(), 1 << 30);
    /// ```
    #[must_use]
    pub fn within(mut self, budget: MemoryBudget) -> TargetConfig {
        self.memory_budget = Some(budget);
        self
    }

    /// The memory budget: the one given with [`within`](Self::within), else the machine's.
    pub fn budget(&self) -> MemoryBudget {
        self.memory_budget.unwrap_or_else(MemoryBudget::machine)
    }

    /// An executor for this target.
    ///
    /// # Errors
    ///
    /// [`TargetError::Unknown`] when no linked target has this name, listing those that are;
    /// [`TargetError::Duplicate`] when two linked targets share any name.
    pub fn executor(&self) -> Result<Box<dyn Executor>, TargetError> {
        find(&self.name).map(|t| (t.make)(self.device.as_ref()))
    }
}

impl From<&str> for TargetConfig {
    fn from(name: &str) -> TargetConfig {
        TargetConfig::new(name)
    }
}

impl From<String> for TargetConfig {
    fn from(name: String) -> TargetConfig {
        TargetConfig::new(name)
    }
}

impl From<&TargetConfig> for TargetConfig {
    fn from(config: &TargetConfig) -> TargetConfig {
        config.clone()
    }
}

impl core::fmt::Display for TargetConfig {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match &self.device {
            Some(device) => write!(f, "{} on {}", self.name, device.name),
            None => f.write_str(&self.name),
        }
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

/// The linked target named `name`.
fn find(name: &str) -> Result<&'static TargetDef, TargetError> {
    by_name()?
        .get(name)
        .map(|&position| &TARGETS[position])
        .ok_or_else(|| TargetError::Unknown {
            name: name.to_owned(),
            known: targets().iter().map(|t| t.name.to_owned()).collect(),
        })
}

/// An executor for the target named `name`, on its default device (see [`TargetConfig`]
/// for another device).
///
/// # Errors
///
/// [`TargetError::Unknown`] when no linked target has this name, listing those that are;
/// [`TargetError::Duplicate`] when two linked targets share any name.
pub fn target(name: &str) -> Result<Box<dyn Executor>, TargetError> {
    TargetConfig::new(name).executor()
}
