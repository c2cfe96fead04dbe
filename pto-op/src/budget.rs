//! The memory budget: how much memory a model may need before anything is allocated for it.
//!
//! A model states the sizes of its values, so what a run needs is known before it starts:
//! its weights, and the activations alive at once at the peak of its [`Liveness`] plan.
//! The graph compiler checks both against a [`MemoryBudget`] and refuses a model that
//! exceeds it, naming the value that weighs most, instead of trying to allocate terabytes
//! for a 77-byte ONNX file. The default budget is [`MemoryBudget::SHARE_PERCENT`] percent of
//! the machine's memory (`MemTotal` of `/proc/meminfo` on Linux), or
//! [`MemoryBudget::FALLBACK_BYTES`] where that cannot be read; a program passes another one
//! where it knows better (`pto run --max-memory 64G`).
//!
//! ```
//! use pto_op::budget::MemoryBudget;
//! use pto_op::{DType, Graph, Shape};
//! use pto_op::ops::add;
//!
//! let g = Graph::new();
//! let a = g.input("a", Shape::from([1 << 20, 1]), DType::F32);
//! let b = g.input("b", Shape::from([1, 1 << 20]), DType::F32);
//! let y = add::apply(&a, &b, &add::Params {}).unwrap(); // f32[1048576, 1048576]: 4 TiB
//! g.output(&y);
//! let model = g.to_model("broadcast").unwrap();
//! let budget: MemoryBudget = "16G".parse().unwrap();
//! let err = budget.check(&model.name, &model.graph).unwrap_err().to_string();
//! assert!(err.contains("4.0 TiB"), "{err}");
//! assert!(err.contains("`n0.y` f32[1048576, 1048576]"), "{err}");
//! assert!(err.contains("budget of 16.0 GiB"), "{err}");
//! ```

use core::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

use crate::graph::{GraphDef, Liveness, ValueKind};

/// The most memory a model may need: weights and peak activations together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryBudget {
    bytes: u64,
    source: Source,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// Given by the caller.
    Given,
    /// A share of the machine's memory, of this many bytes.
    Machine(u64),
    /// The machine's memory could not be read.
    Fallback,
}

impl MemoryBudget {
    /// The share of the machine's memory the default budget allows, in percent.
    pub const SHARE_PERCENT: u64 = 50;

    /// The default budget where the machine's memory cannot be read (4 GiB).
    pub const FALLBACK_BYTES: u64 = 4 << 30;

    /// A budget of `bytes`.
    pub const fn bytes(bytes: u64) -> MemoryBudget {
        MemoryBudget {
            bytes,
            source: Source::Given,
        }
    }

    /// The default: [`SHARE_PERCENT`](Self::SHARE_PERCENT) percent of the machine's memory
    /// (read once, from `/proc/meminfo`), else [`FALLBACK_BYTES`](Self::FALLBACK_BYTES).
    pub fn machine() -> MemoryBudget {
        static MACHINE: OnceLock<MemoryBudget> = OnceLock::new();
        *MACHINE.get_or_init(|| match machine_memory() {
            Some(total) => MemoryBudget {
                bytes: total / 100 * Self::SHARE_PERCENT,
                source: Source::Machine(total),
            },
            None => MemoryBudget {
                bytes: Self::FALLBACK_BYTES,
                source: Source::Fallback,
            },
        })
    }

    /// The budget, in bytes.
    pub const fn limit(&self) -> u64 {
        self.bytes
    }

    /// Checks that `graph`'s weights, and its weights with the activations alive at the
    /// peak of its [`Liveness`] plan, fit the budget.
    ///
    /// # Errors
    ///
    /// A [`BudgetError`] naming what does not fit, its size, and the largest value in it.
    pub fn check(&self, model: &str, graph: &GraphDef) -> Result<(), BudgetError> {
        self.check_with(model, graph, &Liveness::of(graph))
    }

    /// [`check`](Self::check) with the graph's liveness already computed.
    ///
    /// # Errors
    ///
    /// As [`check`](Self::check).
    pub fn check_with(
        &self,
        model: &str,
        graph: &GraphDef,
        liveness: &Liveness,
    ) -> Result<(), BudgetError> {
        let value_bytes = |id: usize| graph.values.get(id).map_or(0, |v| v.ty.bytes());
        let describe = |id: usize| {
            graph
                .values
                .get(id)
                .map_or_else(String::new, |v| format!("`{}` {}", v.name, v.ty))
        };
        let weights: u64 = graph
            .weights
            .iter()
            .map(|&id| value_bytes(id))
            .fold(0, u64::saturating_add);
        if weights > self.bytes {
            let largest = graph
                .weights
                .iter()
                .copied()
                .max_by_key(|&id| value_bytes(id))
                .unwrap_or(0);
            return Err(BudgetError {
                model: model.to_owned(),
                what: format!(
                    "its weights take {}, the largest {} alone {}",
                    human_bytes(weights),
                    describe(largest),
                    human_bytes(value_bytes(largest))
                ),
                budget: *self,
            });
        }
        let total = weights.saturating_add(liveness.peak_bytes);
        if total > self.bytes {
            let peak = liveness.peak_node;
            // The largest activation alive during the peak node (or, without nodes, input).
            let largest = liveness
                .spans
                .iter()
                .enumerate()
                .filter(|(id, span)| match (span, peak) {
                    (Some(span), Some(node)) => span.first <= node && node <= span.last,
                    (Some(_), None) => graph
                        .values
                        .get(*id)
                        .is_some_and(|v| v.kind == ValueKind::Input),
                    (None, _) => false,
                })
                .map(|(id, _)| id)
                .max_by_key(|&id| value_bytes(id))
                .unwrap_or(0);
            let during = match peak.and_then(|n| graph.nodes.get(n).map(|node| (n, node))) {
                Some((n, node)) => format!(" during node {n} (`{}`)", node.op),
                None => String::new(),
            };
            return Err(BudgetError {
                model: model.to_owned(),
                what: format!(
                    "a run needs {} of activations at its peak{during}, where value {} alone \
                     takes {}, and {} of weights",
                    human_bytes(liveness.peak_bytes),
                    describe(largest),
                    human_bytes(value_bytes(largest)),
                    human_bytes(weights)
                ),
                budget: *self,
            });
        }
        Ok(())
    }
}

impl Default for MemoryBudget {
    /// [`MemoryBudget::machine`].
    fn default() -> MemoryBudget {
        MemoryBudget::machine()
    }
}

impl fmt::Display for MemoryBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", human_bytes(self.bytes))?;
        match self.source {
            Source::Given => Ok(()),
            Source::Machine(total) => write!(
                f,
                " ({}% of this machine's {})",
                Self::SHARE_PERCENT,
                human_bytes(total)
            ),
            Source::Fallback => f.write_str(" (the default where the machine's memory is unknown)"),
        }
    }
}

impl FromStr for MemoryBudget {
    type Err = String;

    /// A size: a number of bytes, or a number with a unit `K`, `M`, `G` or `T` (powers of
    /// 1024, optionally followed by `B` or `iB`, any case): `4096`, `512M`, `1.5GiB`.
    fn from_str(text: &str) -> Result<MemoryBudget, String> {
        parse_size(text).map(MemoryBudget::bytes)
    }
}

/// The bytes a size such as `512M`, `1.5GiB` or `4096` stands for.
fn parse_size(text: &str) -> Result<u64, String> {
    let bad = || {
        format!(
            "`{text}` is not a size: give bytes, or a number with K, M, G or T (powers of 1024), \
             e.g. 512M or 1.5G"
        )
    };
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let unit = unit.trim().to_ascii_lowercase();
    let unit = unit
        .strip_suffix("ib")
        .or_else(|| unit.strip_suffix('b'))
        .unwrap_or(&unit);
    let scale: u64 = match unit {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        _ => return Err(bad()),
    };
    let value: f64 = number.parse().map_err(|_| bad())?;
    let bytes = value * scale as f64;
    // 2^63 bytes is beyond any machine; it also keeps the cast exact in range.
    if !(1.0..9.2e18).contains(&bytes) {
        return Err(format!(
            "`{text}` is not a usable memory budget: give at least one byte and less than 8 EiB"
        ));
    }
    Ok(bytes as u64)
}

/// A model needs more memory than its [`MemoryBudget`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "model `{model}`: {what}: more than the memory budget of {budget}; nothing was allocated \
     (give a larger budget, e.g. `--max-memory SIZE`, if the machine can hold it)"
)]
pub struct BudgetError {
    /// The model.
    pub model: String,
    /// What does not fit: its size and its largest value.
    pub what: String,
    /// The budget.
    pub budget: MemoryBudget,
}

/// Bytes for people: `512 B`, `48.0 KiB`, `3.2 MiB`, up to EiB.
fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// The machine's memory in bytes: `MemTotal` of `/proc/meminfo` (Linux).
fn machine_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    meminfo_total(&text)
}

/// `MemTotal` of a `/proc/meminfo` text, in bytes.
fn meminfo_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut words = line["MemTotal:".len()..].split_whitespace();
    let number: u64 = words.next()?.parse().ok()?;
    let scale = match words.next() {
        Some("kB") => 1024,
        None => 1,
        Some(_) => return None,
    };
    number.checked_mul(scale).filter(|&b| b > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_in_powers_of_1024() {
        for (text, bytes) in [
            ("4096", 4096),
            ("1K", 1024),
            ("512M", 512 << 20),
            ("512mb", 512 << 20),
            ("1.5G", 3 << 29),
            ("2GiB", 2 << 30),
            (" 3 T ", 3 << 40),
        ] {
            assert_eq!(parse_size(text), Ok(bytes), "{text}");
        }
        for text in [
            "",
            "G",
            "-1G",
            "0",
            "1Q",
            "1e30",
            "nan",
            "1.2.3M",
            "99999999T",
        ] {
            assert!(parse_size(text).is_err(), "{text} parsed");
        }
    }

    #[test]
    fn meminfo_gives_the_total_in_bytes() {
        let text = "MemTotal:       24576000 kB\nMemFree:         1000 kB\n";
        assert_eq!(meminfo_total(text), Some(24_576_000 * 1024));
        assert_eq!(meminfo_total("MemFree: 10 kB\n"), None);
        assert_eq!(meminfo_total("MemTotal: lots kB\n"), None);
        assert_eq!(meminfo_total("MemTotal: 0 kB\n"), None);
        assert_eq!(meminfo_total("MemTotal: 10 MB\n"), None);
    }

    #[test]
    fn the_machine_budget_is_a_share_of_its_memory() {
        let budget = MemoryBudget::machine();
        match machine_memory() {
            Some(total) => {
                assert_eq!(budget.limit(), total / 100 * MemoryBudget::SHARE_PERCENT);
                assert!(budget.to_string().contains("% of this machine's"));
            }
            None => assert_eq!(budget.limit(), MemoryBudget::FALLBACK_BYTES),
        }
    }
}
