//! The memory budget: how much memory a model may need before anything is allocated for it.
//!
//! A model states the sizes of its values, so what a run needs is known before it starts:
//! its weights, and the activations alive at once at the peak of its [`Liveness`] plan.
//! The graph compiler checks both against a [`MemoryBudget`] and refuses a model that
//! exceeds it, naming the value that weighs most, instead of trying to allocate terabytes
//! for a 77-byte ONNX file. The default budget is the least of [`MemoryBudget::SHARE_PERCENT`]
//! percent of the machine's memory (`MemTotal` of `/proc/meminfo` on Linux), what the
//! process's address-space limit (`RLIMIT_AS`, as `/proc/self/limits` gives it) leaves
//! beyond what it maps already (`VmSize`), and what its cgroup's `memory.max` (cgroup v2)
//! leaves beyond its `memory.current` (less the page cache it may reclaim): a run in a
//! container or under `ulimit -v` is refused before it allocates, not killed or aborted
//! while it does. It is
//! [`MemoryBudget::FALLBACK_BYTES`] where none can be read; a program passes another one
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
    /// What the address-space limit leaves: the limit, and what the process maps already.
    AddressSpace {
        /// `RLIMIT_AS`, in bytes.
        limit: u64,
        /// `VmSize`, in bytes.
        mapped: u64,
    },
    /// What the cgroup's memory limit leaves: `memory.max`, and `memory.current`.
    Cgroup {
        /// `memory.max`, in bytes.
        max: u64,
        /// `memory.current`, in bytes.
        current: u64,
    },
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

    /// The default, read once: the least of [`SHARE_PERCENT`](Self::SHARE_PERCENT) percent
    /// of the machine's memory, what the address-space limit leaves and what the cgroup's
    /// memory limit leaves (see the module's docs), else
    /// [`FALLBACK_BYTES`](Self::FALLBACK_BYTES).
    pub fn machine() -> MemoryBudget {
        static MACHINE: OnceLock<MemoryBudget> = OnceLock::new();
        *MACHINE.get_or_init(|| MemoryBudget::of_limits(&MemoryLimits::of_this_process()))
    }

    /// The least budget that `limits` allow, and which limit it is.
    fn of_limits(limits: &MemoryLimits) -> MemoryBudget {
        let share = limits.mem_total.map(|total| MemoryBudget {
            bytes: total / 100 * Self::SHARE_PERCENT,
            source: Source::Machine(total),
        });
        let address_space = limits.address_space.map(|(limit, mapped)| MemoryBudget {
            bytes: limit.saturating_sub(mapped),
            source: Source::AddressSpace { limit, mapped },
        });
        let cgroup = limits.cgroup.map(|(max, current)| MemoryBudget {
            bytes: max.saturating_sub(current),
            source: Source::Cgroup { max, current },
        });
        [share, address_space, cgroup]
            .into_iter()
            .flatten()
            .min_by_key(|budget| budget.bytes)
            .unwrap_or(MemoryBudget {
                bytes: Self::FALLBACK_BYTES,
                source: Source::Fallback,
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
            Source::AddressSpace { limit, mapped } => write!(
                f,
                " (what this process's address-space limit of {} leaves beyond the {} it maps)",
                human_bytes(limit),
                human_bytes(mapped)
            ),
            Source::Cgroup { max, current } => write!(
                f,
                " (what this process's cgroup memory limit of {} leaves beyond the {} it uses)",
                human_bytes(max),
                human_bytes(current)
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

/// The limits on this process's memory, in bytes, each where it is set and can be read.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct MemoryLimits {
    /// The machine's memory.
    mem_total: Option<u64>,
    /// The address-space limit (`RLIMIT_AS`), and what the process maps already.
    address_space: Option<(u64, u64)>,
    /// The cgroup's `memory.max`, and its `memory.current` less the page cache it may
    /// reclaim (`inactive_file` of `memory.stat`).
    cgroup: Option<(u64, u64)>,
}

impl MemoryLimits {
    /// This process's limits, from `/proc` and `/sys/fs/cgroup` (Linux; none elsewhere).
    fn of_this_process() -> MemoryLimits {
        let read = |path: &str| std::fs::read_to_string(path).ok();
        let address_space = read("/proc/self/limits")
            .and_then(|text| address_space_limit(&text))
            .map(|limit| {
                let mapped = read("/proc/self/status")
                    .and_then(|text| status_vm_size(&text))
                    .unwrap_or(0);
                (limit, mapped)
            });
        let cgroup = read("/proc/self/cgroup")
            .and_then(|text| cgroup_dir(&text))
            .and_then(|dir| {
                let file = |name: &str| std::fs::read_to_string(format!("{dir}/{name}")).ok();
                let max = cgroup_bytes(&file("memory.max")?)?;
                let current = cgroup_bytes(&file("memory.current")?)?;
                // The page cache the kernel drops before it runs out of memory is not in use.
                let reclaimable = file("memory.stat")
                    .and_then(|text| memory_stat_inactive_file(&text))
                    .unwrap_or(0);
                Some((max, current.saturating_sub(reclaimable)))
            });
        MemoryLimits {
            mem_total: read("/proc/meminfo").and_then(|text| meminfo_total(&text)),
            address_space,
            cgroup,
        }
    }
}

/// The soft `Max address space` of a `/proc/self/limits` text, in bytes; `None` when it is
/// unlimited or not there.
fn address_space_limit(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("Max address space"))?;
    let soft = line["Max address space".len()..]
        .split_whitespace()
        .next()?;
    soft.parse().ok()
}

/// `VmSize` of a `/proc/self/status` text (the bytes the process maps), in bytes.
fn status_vm_size(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("VmSize:"))?;
    let mut words = line["VmSize:".len()..].split_whitespace();
    let number: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => number.checked_mul(1024),
        _ => None,
    }
}

/// The cgroup v2 directory of a `/proc/self/cgroup` text (its `0::/path` line).
fn cgroup_dir(text: &str) -> Option<String> {
    let path = text.lines().find_map(|l| l.strip_prefix("0::"))?;
    Some(format!("/sys/fs/cgroup{}", path.trim_end_matches('/')))
}

/// `inactive_file` of a cgroup v2 `memory.stat` text: the page cache the kernel reclaims
/// first, counted in `memory.current`.
fn memory_stat_inactive_file(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("inactive_file "))?;
    line["inactive_file ".len()..].trim().parse().ok()
}

/// The bytes of a cgroup v2 `memory.max` or `memory.current`; `None` for `max` (no limit).
fn cgroup_bytes(text: &str) -> Option<u64> {
    text.trim().parse().ok()
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
    fn the_machine_budget_is_the_least_of_its_limits() {
        const GIB: u64 = 1 << 30;
        let total = |gib: u64| MemoryLimits {
            mem_total: Some(gib * GIB),
            ..MemoryLimits::default()
        };
        let budget = MemoryBudget::of_limits(&total(24));
        assert_eq!(budget.limit(), 24 * GIB / 100 * 50);
        assert_eq!(
            budget.to_string(),
            "12.0 GiB (50% of this machine's 24.0 GiB)"
        );
        let budget = MemoryBudget::of_limits(&MemoryLimits {
            address_space: Some((4 * GIB, GIB)),
            ..total(24)
        });
        assert_eq!(budget.limit(), 3 * GIB);
        assert_eq!(
            budget.to_string(),
            "3.0 GiB (what this process's address-space limit of 4.0 GiB leaves beyond the \
             1.0 GiB it maps)"
        );
        let budget = MemoryBudget::of_limits(&MemoryLimits {
            address_space: Some((4 * GIB, GIB)),
            cgroup: Some((2 * GIB, GIB / 2)),
            ..total(24)
        });
        assert_eq!(budget.limit(), 3 * GIB / 2);
        assert_eq!(
            budget.to_string(),
            "1.5 GiB (what this process's cgroup memory limit of 2.0 GiB leaves beyond the \
             512.0 MiB it uses)"
        );
        // A limit already used up leaves nothing; no limit at all leaves the fallback.
        let used_up = MemoryLimits {
            cgroup: Some((GIB, 2 * GIB)),
            ..total(24)
        };
        assert_eq!(MemoryBudget::of_limits(&used_up).limit(), 0);
        assert_eq!(
            MemoryBudget::of_limits(&MemoryLimits::default()).limit(),
            MemoryBudget::FALLBACK_BYTES
        );
    }

    #[test]
    fn the_limits_parse_from_proc_and_the_cgroup_files() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max stack size            8388608              unlimited            bytes     \n\
                      Max address space         4294967296           unlimited            bytes     \n";
        assert_eq!(address_space_limit(limits), Some(4 << 30));
        let unlimited =
            "Max address space         unlimited            unlimited            bytes\n";
        assert_eq!(address_space_limit(unlimited), None);
        assert_eq!(
            address_space_limit("Max stack size 8388608 unlimited bytes\n"),
            None
        );
        let status = "Name:\tpto\nVmPeak:\t  20000 kB\nVmSize:\t   12288 kB\nVmRSS:\t 1000 kB\n";
        assert_eq!(status_vm_size(status), Some(12288 * 1024));
        assert_eq!(status_vm_size("VmSize:\t12 MB\n"), None);
        assert_eq!(
            cgroup_dir("0::/user.slice/session-1.scope\n").as_deref(),
            Some("/sys/fs/cgroup/user.slice/session-1.scope")
        );
        assert_eq!(cgroup_dir("0::/\n").as_deref(), Some("/sys/fs/cgroup"));
        assert_eq!(cgroup_dir("12:memory:/docker/abc\n"), None);
        assert_eq!(cgroup_bytes("max\n"), None);
        assert_eq!(cgroup_bytes("2147483648\n"), Some(2 << 30));
        let stat = "anon 1000\nfile 5000\nactive_file 2000\ninactive_file 3000\n";
        assert_eq!(memory_stat_inactive_file(stat), Some(3000));
        assert_eq!(memory_stat_inactive_file("anon 1000\n"), None);
    }
}
