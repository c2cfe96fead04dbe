//! A serving node: how many devices, how much memory each has, and the links between them.

use serde::{Deserialize, Serialize};

/// How the devices of one link level are wired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Topology {
    /// Every device has a link to every other: a group of `n` of the level's `N` devices
    /// gets `(n - 1) / (N - 1)` of a device's bandwidth.
    FullMesh,
    /// Devices pass data around a ring at the full bandwidth.
    Ring,
}

/// One level of the interconnect (HCCS within a node, RoCE between nodes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    /// Its name.
    pub name: String,
    /// Its wiring.
    pub topology: Topology,
    /// Bytes per second one device sends (one direction).
    pub bandwidth: f64,
    /// Seconds of one step of a collective before data flows.
    pub latency_seconds: f64,
    /// The fraction of `bandwidth` a collective reaches.
    pub efficiency: f64,
}

/// A serving node's profile (`pto-estimator/data/nodes/*.json`): the device profiles it
/// holds, devices per node, each device's memory, and the links within and between nodes,
/// every number with its source in `notes`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeProfile {
    /// Its name.
    pub name: String,
    /// What it is.
    pub description: String,
    /// The device profiles (by name) the node is made of.
    pub devices: Vec<String>,
    /// Devices in one node.
    pub devices_per_node: usize,
    /// Memory (HBM) of one device, in bytes.
    pub device_memory_bytes: u64,
    /// The link between the devices of one node.
    pub intra_node: Link,
    /// The link between nodes.
    pub inter_node: Link,
    /// Where every number comes from.
    pub notes: Vec<String>,
}

const BUILTIN: &[&str] = &[include_str!("../../data/nodes/atlas-800i-a2.json")];

impl NodeProfile {
    /// The built-in node profile made of the device profile `device`, if there is one.
    ///
    /// ```
    /// let node = pto_estimator::llm::NodeProfile::of_device("ascend910b").unwrap();
    /// assert_eq!((node.devices_per_node, node.intra_node.name.as_str()), (8, "HCCS"));
    /// ```
    pub fn of_device(device: &str) -> Option<&'static NodeProfile> {
        static PROFILES: std::sync::OnceLock<Vec<NodeProfile>> = std::sync::OnceLock::new();
        PROFILES
            .get_or_init(|| {
                BUILTIN
                    .iter()
                    .filter_map(|text| serde_json::from_str(text).ok())
                    .collect()
            })
            .iter()
            .find(|node| node.devices.iter().any(|d| d == device))
    }

    /// The link a group of `ranks` consecutive devices talks over, and the bandwidth one
    /// device gets on it.
    pub fn link_for(&self, ranks: usize) -> (&Link, f64) {
        let (link, span) = if ranks <= self.devices_per_node {
            (&self.intra_node, self.devices_per_node)
        } else {
            (&self.inter_node, ranks)
        };
        let mut bandwidth = link.bandwidth * link.efficiency;
        if link.topology == Topology::FullMesh && span > 1 {
            bandwidth *= (ranks.saturating_sub(1)) as f64 / (span - 1) as f64;
        }
        (link, bandwidth)
    }

    /// Seconds of an all-reduce of `bytes` over `ranks` devices: the faster of a ring
    /// (`2 (n - 1)` steps, each device sending `2 (n - 1) / n` of the message) and a tree
    /// (recursive doubling: `2 log2 n` steps, the message sent twice).
    pub fn all_reduce_seconds(&self, bytes: u64, ranks: usize) -> f64 {
        if ranks <= 1 {
            return 0.0;
        }
        let (link, bandwidth) = self.link_for(ranks);
        let n = ranks as f64;
        let ring =
            2.0 * (n - 1.0) * link.latency_seconds + 2.0 * (n - 1.0) / n * bytes as f64 / bandwidth;
        let tree = 2.0 * n.log2() * link.latency_seconds + 2.0 * bytes as f64 / bandwidth;
        ring.min(tree)
    }

    /// Seconds of an all-gather whose gathered result is `bytes`, over `ranks` devices (a
    /// ring: `n - 1` steps, each device receiving `(n - 1) / n` of the result); a
    /// reduce-scatter of `bytes` in costs the same.
    pub fn all_gather_seconds(&self, bytes: u64, ranks: usize) -> f64 {
        if ranks <= 1 {
            return 0.0;
        }
        let (link, bandwidth) = self.link_for(ranks);
        let n = ranks as f64;
        (n - 1.0) * link.latency_seconds + (n - 1.0) / n * bytes as f64 / bandwidth
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node() -> &'static NodeProfile {
        NodeProfile::of_device("ascend910b").expect("built-in")
    }

    #[test]
    fn the_built_in_profile_parses_and_covers_both_a2_profiles() {
        assert!(NodeProfile::of_device("ascend910b2").is_some());
        assert!(NodeProfile::of_device("kirin9030").is_none());
        assert_eq!(node().device_memory_bytes, 64 << 30);
    }

    #[test]
    fn a_ring_all_reduce_follows_its_formula() {
        // 8 of 8 devices on the full mesh: 196e9 x 0.7 bytes/s each; 16 MiB is far in the
        // bandwidth regime, where the ring (2 x 7/8 of the message) beats the tree (2x).
        let bytes = 16u64 << 20;
        let bandwidth = 196e9 * 0.7;
        let ring = 14.0 * 0.5e-6 + 2.0 * 7.0 / 8.0 * bytes as f64 / bandwidth;
        assert!((node().all_reduce_seconds(bytes, 8) - ring).abs() < 1e-12);
        assert_eq!(node().all_reduce_seconds(bytes, 1), 0.0);
    }

    #[test]
    fn a_small_all_reduce_takes_the_tree_and_a_smaller_group_less_bandwidth() {
        // 8 KiB over 8 devices: tree 6 latencies + 2 x 8 KiB beats ring 14 latencies.
        let bandwidth = 196e9 * 0.7;
        let tree = 6.0 * 0.5e-6 + 2.0 * 8192.0 / bandwidth;
        assert!((node().all_reduce_seconds(8192, 8) - tree).abs() < 1e-12);
        // Two of the eight devices share one of seven links' worth of bandwidth.
        let (_, pair) = node().link_for(2);
        assert!((pair - bandwidth / 7.0).abs() < 1e-3);
    }
}
