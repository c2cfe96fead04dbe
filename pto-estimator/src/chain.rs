//! The priority chain: which performance model answers for one op on one device.
//!
//! In order, the first that exists wins:
//!
//! 1. a user direct estimator (`#[op_estimator(op = ..)]`, or the op module's `#[estimator]`),
//! 2. a default direct estimator (`#[op_estimator(op = .., default)]`),
//! 3. user properties (`#[op_properties(op = ..)]`, or the op module's `#[properties]`),
//! 4. system default properties: default `#[op_properties(.., default)]`, else counted from
//!    the op's kernel IR, else every input read once and every output written once (see
//!    [`crate::derive`]).
//!
//! Properties (levels 3 and 4) go through the roofline; when the op has a kernel that
//! traces for the call, its pipe-model time stays a lower bound of the estimate whichever
//! level gave the properties (see [`crate::Estimator`]): user properties describe the work,
//! they do not make the kernel faster than its own instructions allow.
//!
//! Within one level, an estimator for the device asked about beats one for every device,
//! for that device only: registrations are keyed by op first, so a device-specific
//! estimator of one op never hides another op's estimators.
//!
//! Two registrations of the same op, device, level and kind are an error at first use of
//! the op, naming both, unless exactly one of them is marked `override`: that one wins.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use pto_op::op::{EstimatorFn, PropertiesFn};
use pto_op::perf::{ESTIMATORS, PROPERTIES};
use pto_op::registration::{self, DuplicateRegistration, Registered};
use pto_op::{
    EstimatorRegistration, Level, OpDef, PropertiesRegistration, SourceLocation, registry,
};
use serde::Serialize;

use crate::error::EstimateError;

/// The two levels of registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A direct time estimate.
    Estimator,
    /// Compute and memory properties, for the roofline.
    Properties,
}

impl core::fmt::Display for Kind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.pad(match self {
            Kind::Estimator => "estimator",
            Kind::Properties => "properties",
        })
    }
}

/// Where an estimate's numbers came from: the link of the chain that answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A user direct estimator.
    UserEstimator,
    /// A framework default direct estimator.
    DefaultEstimator,
    /// User properties, through the roofline.
    UserProperties,
    /// Framework default properties, through the roofline.
    DefaultProperties,
    /// Properties counted from the op's kernel IR, through the roofline.
    KernelIr,
    /// Every input read once and every output written once, no compute (the op has no
    /// kernel, or its kernel does not trace for this call).
    MemoryTraffic,
    /// The op's kernel traces but does not fit the device's buffers (the estimator's
    /// buffer check refused it): priced as memory traffic, a lower bound of what a kernel
    /// that fits would take, and listed in the report.
    Overflow,
}

impl core::fmt::Display for Source {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.pad(match self {
            Source::UserEstimator => "user estimator",
            Source::DefaultEstimator => "default estimator",
            Source::UserProperties => "user properties",
            Source::DefaultProperties => "default properties",
            Source::KernelIr => "kernel IR",
            Source::MemoryTraffic => "memory traffic",
            Source::Overflow => "kernel over buffers",
        })
    }
}

/// The function of one registration.
#[derive(Debug, Clone, Copy)]
pub enum Model {
    /// A direct estimator.
    Estimator(EstimatorFn),
    /// A properties function.
    Properties(PropertiesFn),
}

/// One registration, from any of the places one can be written.
#[derive(Debug, Clone, Copy)]
struct Entry {
    op: &'static str,
    device: Option<&'static str>,
    level: Level,
    overrides: bool,
    source: SourceLocation,
    model: Model,
}

impl Entry {
    fn kind(&self) -> Kind {
        match self.model {
            Model::Estimator(_) => Kind::Estimator,
            Model::Properties(_) => Kind::Properties,
        }
    }
}

/// Registrations compete only with those of the same op, kind, level and device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct SlotKey {
    op: &'static str,
    kind: Kind,
    level: Level,
    device: Option<&'static str>,
}

impl core::fmt::Display for SlotKey {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.device {
            Some(device) => write!(f, "op `{}` for device `{device}`", self.op),
            None => write!(f, "op `{}` for every device", self.op),
        }
    }
}

impl Registered for Entry {
    type Key = SlotKey;

    fn key(&self) -> SlotKey {
        SlotKey {
            op: self.op,
            kind: self.kind(),
            level: self.level,
            device: self.device,
        }
    }

    fn kind(&self) -> String {
        format!("{} {}", self.level, Entry::kind(self))
    }

    fn location(&self) -> SourceLocation {
        self.source
    }

    fn can_override(&self) -> bool {
        true
    }

    fn overrides(&self) -> bool {
        self.overrides
    }
}

/// One slot per op, kind, level and device, holding the winner or the two in conflict.
#[derive(Debug)]
struct Slot {
    kind: Kind,
    level: Level,
    device: Option<&'static str>,
    winner: Result<usize, Box<DuplicateRegistration>>,
}

/// What the chain chose for one op on one device.
#[derive(Debug, Clone, Copy)]
pub struct Choice {
    /// The link that answers.
    pub source: Source,
    /// Where the chosen function is written (`None` when the system derives properties).
    pub location: Option<SourceLocation>,
    /// The function; `None` when the system derives properties (chain step 4 without a
    /// default registration).
    pub model: Option<Model>,
}

/// One row of [`Chain::registrations`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RegistrationInfo {
    /// The op.
    pub op: String,
    /// The device; `None` for every device.
    pub device: Option<String>,
    /// User or default.
    pub level: Level,
    /// Estimator or properties.
    pub kind: Kind,
    /// Marked `override`.
    pub overrides: bool,
    /// Where it is written.
    pub source: String,
    /// Whether it is the one its op, device, level and kind use (false: overridden, or in
    /// conflict with another).
    pub in_force: bool,
}

/// The registrations of a program, indexed for lookups.
#[derive(Debug)]
pub struct Chain {
    entries: Vec<Entry>,
    /// The slots of each op: keyed by op first, so no registration of one op can hide
    /// another op's.
    slots: BTreeMap<&'static str, Vec<Slot>>,
}

impl Chain {
    /// The chain of `ops` (their own `#[estimator]` and `#[properties]`, at user level) and
    /// of the free-standing registrations.
    pub fn new<'a>(
        ops: impl IntoIterator<Item = &'a OpDef>,
        estimators: impl IntoIterator<Item = &'a EstimatorRegistration>,
        properties: impl IntoIterator<Item = &'a PropertiesRegistration>,
    ) -> Chain {
        let mut entries = Vec::new();
        for op in ops {
            let own = |model| Entry {
                op: op.name,
                device: None,
                level: Level::User,
                overrides: false,
                source: op.source,
                model,
            };
            entries.extend(op.estimator.map(|f| own(Model::Estimator(f))));
            entries.extend(op.properties.map(|f| own(Model::Properties(f))));
        }
        entries.extend(estimators.into_iter().map(|r| Entry {
            op: r.op,
            device: r.device,
            level: r.level,
            overrides: r.overrides,
            source: r.source,
            model: Model::Estimator(r.estimate),
        }));
        entries.extend(properties.into_iter().map(|r| Entry {
            op: r.op,
            device: None,
            level: r.level,
            overrides: r.overrides,
            source: r.source,
            model: Model::Properties(r.properties),
        }));
        // Link order is arbitrary: order by place, so listings read the same every build.
        entries.sort_by_key(|e| (e.op, e.source.file, e.source.line, e.source.module_path));
        let mut slots: BTreeMap<&'static str, Vec<Slot>> = BTreeMap::new();
        for (key, winner) in registration::index(&entries) {
            slots.entry(key.op).or_default().push(Slot {
                kind: key.kind,
                level: key.level,
                device: key.device,
                winner,
            });
        }
        Chain { entries, slots }
    }

    /// The chain of every op and registration linked into this program, built at first use.
    ///
    /// # Errors
    ///
    /// The op registry's error, when two linked ops share a name.
    pub fn linked() -> Result<&'static Chain, EstimateError> {
        static CHAIN: OnceLock<Chain> = OnceLock::new();
        let ops = registry::ops()?;
        Ok(CHAIN.get_or_init(|| Chain::new(ops, ESTIMATORS.iter(), PROPERTIES.iter())))
    }

    /// What answers for `op` on `device`.
    ///
    /// # Errors
    ///
    /// [`EstimateError::Duplicate`] when any registration of `op` that applies on `device`
    /// is in conflict with another, naming both.
    pub fn resolve(&self, op: &str, device: &str) -> Result<Choice, EstimateError> {
        self.check_conflicts(op, device)?;
        let steps = [
            (Kind::Estimator, Level::User, Source::UserEstimator),
            (Kind::Estimator, Level::Default, Source::DefaultEstimator),
            (Kind::Properties, Level::User, Source::UserProperties),
            (Kind::Properties, Level::Default, Source::DefaultProperties),
        ];
        for (kind, level, source) in steps {
            let specific = self.find_slot(op, kind, level, Some(device));
            if let Some(Ok(index)) = specific.or_else(|| self.find_slot(op, kind, level, None)) {
                let entry = &self.entries[*index];
                return Ok(Choice {
                    source,
                    location: Some(entry.source),
                    model: Some(entry.model),
                });
            }
        }
        Ok(Choice {
            source: Source::KernelIr,
            location: None,
            model: None,
        })
    }

    fn find_slot(
        &self,
        op: &str,
        kind: Kind,
        level: Level,
        device: Option<&str>,
    ) -> Option<&Result<usize, Box<DuplicateRegistration>>> {
        self.slots.get(op)?.iter().find_map(|slot| {
            (slot.kind == kind && slot.level == level && slot.device == device)
                .then_some(&slot.winner)
        })
    }

    fn check_conflicts(&self, op: &str, device: &str) -> Result<(), EstimateError> {
        for slot in self.slots.get(op).into_iter().flatten() {
            if slot.device.is_some_and(|d| d != device) {
                continue;
            }
            if let Err(duplicate) = &slot.winner {
                return Err(EstimateError::Duplicate(duplicate.clone()));
            }
        }
        Ok(())
    }

    /// Every registration, ordered by op, with whether it is in force.
    pub fn registrations(&self) -> Vec<RegistrationInfo> {
        self.entries
            .iter()
            .enumerate()
            .map(|(index, e)| RegistrationInfo {
                op: e.op.to_owned(),
                device: e.device.map(str::to_owned),
                level: e.level,
                kind: e.kind(),
                overrides: e.overrides,
                source: e.source.to_string(),
                in_force: matches!(
                    self.find_slot(e.op, e.kind(), e.level, e.device),
                    Some(Ok(winner)) if *winner == index
                ),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use pto_op::{DeviceProfile, Estimate, OpInvokeInfo, PerformanceProperties};

    use super::*;

    fn at(line: u32) -> SourceLocation {
        SourceLocation {
            module_path: "tests",
            file: "chain.rs",
            line,
        }
    }

    fn one(_: &OpInvokeInfo, _: &DeviceProfile) -> Estimate {
        Estimate::seconds(1.0)
    }

    fn props(info: &OpInvokeInfo) -> PerformanceProperties {
        info.memory_access_properties()
    }

    fn estimator(
        op: &'static str,
        device: Option<&'static str>,
        level: Level,
        overrides: bool,
        line: u32,
    ) -> EstimatorRegistration {
        EstimatorRegistration {
            op,
            device,
            level,
            overrides,
            source: at(line),
            estimate: one,
        }
    }

    fn properties(op: &'static str, level: Level, line: u32) -> PropertiesRegistration {
        PropertiesRegistration {
            op,
            level,
            overrides: false,
            source: at(line),
            properties: props,
        }
    }

    fn chosen(chain: &Chain, op: &str, device: &str) -> (Source, Option<u32>) {
        let choice = chain.resolve(op, device).unwrap();
        (choice.source, choice.location.map(|l| l.line))
    }

    fn infinite(_: &OpInvokeInfo, _: &DeviceProfile) -> Estimate {
        Estimate::seconds(f64::INFINITY)
    }

    fn add_call() -> OpInvokeInfo {
        let t = pto_op::TensorType {
            shape: pto_op::Shape::from([64, 128]),
            dtype: pto_op::DType::F16,
        };
        let add = pto_op::registry::find("std.add").unwrap();
        add.invoke_info(&[t.clone(), t], &Default::default())
            .unwrap()
    }

    /// An infinite estimate is an error naming where it came from, not a report of `inf`.
    #[test]
    fn an_estimate_that_is_not_finite_is_an_error_naming_its_source() {
        let kirin = DeviceProfile::builtin("kirin9030").unwrap();
        let all = [EstimatorRegistration {
            estimate: infinite,
            ..estimator("std.add", None, Level::User, false, 9)
        }];
        let chain = Chain::new([], &all, &[]);
        let error = crate::Estimator::new(&chain, &kirin)
            .estimate(&add_call())
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "op `std.add` on `kirin9030`: the estimate is inf seconds, not a finite time (the \
             estimate of the user estimator at tests (chain.rs:9))"
        );
        // A calibration whose correction overflows, on the kernel's own estimate.
        let mut calibrated = kirin.clone();
        calibrated.calibration.insert(
            "std.add".to_owned(),
            pto_op::OpCalibration {
                log_scale: 1000.0,
                exponent: 1.0,
                cases: 1,
            },
        );
        let chain = Chain::new([], &[], &[]);
        let error = crate::Estimator::new(&chain, &calibrated)
            .estimate(&add_call())
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "op `std.add` on `kirin9030`: the estimate is inf seconds, not a finite time (the \
             calibrated estimate of the kernel IR)"
        );
    }

    #[test]
    fn each_link_of_the_chain_beats_the_next() {
        use Level::{Default, User};
        let all = [
            estimator("a", None, User, false, 1),
            estimator("a", None, Default, false, 2),
            estimator("b", None, Default, false, 3),
        ];
        let props = [
            properties("a", User, 4),
            properties("b", User, 5),
            properties("c", User, 6),
            properties("c", Default, 7),
            properties("d", Default, 8),
        ];
        let chain = Chain::new([], &all, &props);
        assert_eq!(chosen(&chain, "a", "x"), (Source::UserEstimator, Some(1)));
        assert_eq!(
            chosen(&chain, "b", "x"),
            (Source::DefaultEstimator, Some(3))
        );
        assert_eq!(chosen(&chain, "c", "x"), (Source::UserProperties, Some(6)));
        assert_eq!(
            chosen(&chain, "d", "x"),
            (Source::DefaultProperties, Some(8))
        );
        assert_eq!(chosen(&chain, "e", "x"), (Source::KernelIr, None));
    }

    #[test]
    fn a_device_estimator_wins_on_its_device_only() {
        let all = [
            estimator("a", None, Level::User, false, 1),
            estimator("a", Some("kirin9030"), Level::User, false, 2),
        ];
        let chain = Chain::new([], &all, []);
        assert_eq!(chosen(&chain, "a", "kirin9030").1, Some(2));
        assert_eq!(chosen(&chain, "a", "ascend910b").1, Some(1));
    }

    #[test]
    fn a_device_estimator_of_one_op_leaves_other_ops_alone() {
        // The bug of the RFC's family: lookups keyed by device first found the device's
        // table (with op A only) and lost op B's all-devices estimator there.
        let all = [
            estimator("a", Some("kirin9030"), Level::User, false, 1),
            estimator("b", None, Level::User, false, 2),
        ];
        let chain = Chain::new([], &all, []);
        assert_eq!(
            chosen(&chain, "b", "kirin9030"),
            (Source::UserEstimator, Some(2))
        );
        assert_eq!(
            chosen(&chain, "b", "ascend910b"),
            (Source::UserEstimator, Some(2))
        );
        assert_eq!(chosen(&chain, "a", "ascend910b"), (Source::KernelIr, None));
    }

    #[test]
    fn a_device_estimator_does_not_beat_a_higher_level() {
        let all = [
            estimator("a", None, Level::User, false, 1),
            estimator("a", Some("kirin9030"), Level::Default, false, 2),
        ];
        let chain = Chain::new([], &all, []);
        assert_eq!(chosen(&chain, "a", "kirin9030").1, Some(1));
    }

    #[test]
    fn override_wins_and_the_listing_says_so() {
        let all = [
            estimator("a", None, Level::User, false, 1),
            estimator("a", None, Level::User, true, 2),
        ];
        let chain = Chain::new([], &all, []);
        assert_eq!(chosen(&chain, "a", "x").1, Some(2));
        let listed: Vec<(u32, bool)> = chain
            .registrations()
            .iter()
            .map(|r| (if r.source.ends_with(":1)") { 1 } else { 2 }, r.in_force))
            .collect();
        assert_eq!(listed, vec![(1, false), (2, true)]);
    }

    #[test]
    fn a_duplicate_is_an_error_naming_both_at_first_use_of_the_op() {
        let all = [
            estimator("a", Some("kirin9030"), Level::User, false, 9),
            estimator("a", Some("kirin9030"), Level::User, false, 4),
            estimator("b", None, Level::User, false, 5),
        ];
        let chain = Chain::new([], &all, []);
        let err = chain.resolve("a", "kirin9030").unwrap_err().to_string();
        assert_eq!(
            err,
            "two user estimator registrations of op `a` for device `kirin9030`: one in tests \
             (chain.rs:4), one in tests (chain.rs:9); mark the one that should win `override`, \
             or remove the other"
        );
        // Other devices and other ops are not affected.
        assert!(chain.resolve("a", "ascend910b").is_ok());
        assert!(chain.resolve("b", "kirin9030").is_ok());
        assert!(
            chain
                .registrations()
                .iter()
                .all(|r| r.op != "a" || !r.in_force)
        );
    }

    #[test]
    fn two_overrides_are_an_error() {
        let all = [
            estimator("a", None, Level::User, true, 1),
            estimator("a", None, Level::User, true, 2),
        ];
        let err = Chain::new([], &all, [])
            .resolve("a", "x")
            .unwrap_err()
            .to_string();
        assert!(err.contains("both are marked `override`"), "{err}");
        assert!(
            err.contains("chain.rs:1") && err.contains("chain.rs:2"),
            "{err}"
        );
    }

    #[test]
    fn two_properties_of_one_op_and_level_are_a_duplicate_naming_both() {
        let all = [
            properties("p", Level::Default, 12),
            properties("p", Level::Default, 3),
        ];
        let err = Chain::new([], [], &all)
            .resolve("p", "kirin9030")
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "two default properties registrations of op `p` for every device: one in tests \
             (chain.rs:3), one in tests (chain.rs:12); mark the one that should win `override`, \
             or remove the other"
        );
    }
}
