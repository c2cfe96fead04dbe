//! Published models and measurements: the Hugging Face configs of the models the public
//! measurements ran (`pto-estimator/data/llm/*.json`, each citing its model card), the
//! measurements themselves (`measurements.json`, each citing its file and table), and the
//! page that sets the estimates beside them (`pto estimate --published`,
//! `docs/serving.md`).

use serde::{Deserialize, Serialize};

use super::config::LlmConfig;
use super::estimate;
use super::workload::{Phase, Quant, Workload};
use crate::{EstimateError, Estimator};

/// Llama-2-7B's config.json.
pub const LLAMA_2_7B: &str = include_str!("../../data/llm/llama-2-7b.json");
/// Llama-2-70B's config.json.
pub const LLAMA_2_70B: &str = include_str!("../../data/llm/llama-2-70b.json");
/// Llama-3-70B's config.json.
pub const LLAMA_3_70B: &str = include_str!("../../data/llm/llama-3-70b.json");
/// Mixtral-8x7B's config.json (a mixture of experts).
pub const MIXTRAL_8X7B: &str = include_str!("../../data/llm/mixtral-8x7b.json");
/// Qwen2-7B's config.json.
pub const QWEN2_7B: &str = include_str!("../../data/llm/qwen2-7b.json");
/// Qwen2-72B's config.json.
pub const QWEN2_72B: &str = include_str!("../../data/llm/qwen2-72b.json");

const MEASUREMENTS: &str = include_str!("../../data/llm/measurements.json");

/// The config of a published model by its fixture's name (`qwen2-7b`).
pub fn config(name: &str) -> Option<&'static str> {
    match name {
        "llama-2-7b" => Some(LLAMA_2_7B),
        "llama-2-70b" => Some(LLAMA_2_70B),
        "llama-3-70b" => Some(LLAMA_3_70B),
        "mixtral-8x7b" => Some(MIXTRAL_8X7B),
        "qwen2-7b" => Some(QWEN2_7B),
        "qwen2-72b" => Some(QWEN2_72B),
        _ => None,
    }
}

/// The bar of a case: within 25% on one device, 30% on a tensor-parallel group.
pub fn bar(tp: usize) -> f64 {
    if tp > 1 { 0.30 } else { 0.25 }
}

/// A public source of measurements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeasurementSource {
    /// Its id in the cases.
    pub id: String,
    /// The repository.
    pub repo: String,
    /// The commit read.
    pub commit: String,
    /// The file.
    pub file: String,
    /// The table in it.
    pub table: String,
    /// How the measurements were taken, as the file says.
    pub setup: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct MeasuredCase {
    model: String,
    source: String,
    tp: usize,
    batch: usize,
    phase: String,
    measured_ms: f64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Measurements {
    device: String,
    seq: usize,
    context: usize,
    sources: Vec<MeasurementSource>,
    cases: Vec<MeasuredCase>,
}

/// One measurement and its estimate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PublishedCase {
    /// The model.
    pub model: String,
    /// The measurement's source id.
    pub source: String,
    /// Prefill or decode.
    pub phase: Phase,
    /// Sequences at once.
    pub batch: usize,
    /// Devices of the tensor-parallel group.
    pub tp: usize,
    /// The measured step, in ms.
    pub measured_ms: f64,
    /// The estimate, in ms.
    pub estimated_ms: f64,
    /// `estimated / measured`.
    pub ratio: f64,
    /// Whether the ratio is within [`bar`] of 1.
    pub within_bar: bool,
}

/// Every published measurement beside its estimate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PublishedReport {
    /// The device profile estimated on.
    pub device: String,
    /// Prompt tokens of the prefill cases.
    pub seq: usize,
    /// Cached tokens of the decode cases.
    pub context: usize,
    /// The sources.
    pub sources: Vec<MeasurementSource>,
    /// The cases, in the sources' order.
    pub cases: Vec<PublishedCase>,
}

/// Estimates every published measurement on the device profile the measurements name
/// (the program must link the `llm` and `comm` ops).
///
/// # Errors
///
/// A case's model, source or device unknown, or an estimate's error.
pub fn report() -> Result<PublishedReport, EstimateError> {
    let file = "pto-estimator/data/llm/measurements.json";
    let data: Measurements =
        serde_json::from_str(MEASUREMENTS).map_err(|e| EstimateError::Config {
            config: file.to_owned(),
            message: e.to_string(),
        })?;
    let device =
        pto_op::DeviceProfile::builtin(&data.device).map_err(|e| EstimateError::Config {
            config: file.to_owned(),
            message: format!("device `{}`: {e}", data.device),
        })?;
    let mut estimator = Estimator::linked(&device)?;
    let mut cases = Vec::with_capacity(data.cases.len());
    for case in &data.cases {
        let unknown = |what: &str| EstimateError::Config {
            config: "pto-estimator/data/llm/measurements.json".to_owned(),
            message: format!("case of `{}` names an unknown {what}", case.model),
        };
        let text = config(&case.model).ok_or_else(|| unknown("model"))?;
        if !data.sources.iter().any(|s| s.id == case.source) {
            return Err(unknown("source"));
        }
        let phase = match case.phase.as_str() {
            "prefill" => Phase::Prefill,
            "decode" => Phase::Decode,
            _ => return Err(unknown("phase")),
        };
        let workload = Workload {
            name: case.model.clone(),
            phase,
            batch: case.batch,
            seq: data.seq,
            context: data.context,
            tp: case.tp,
            quant: Quant::None,
        };
        let llm = estimate(&LlmConfig::parse(text)?, &workload, &mut estimator)?;
        let estimated_ms = llm.report.total_seconds * 1e3;
        let ratio = estimated_ms / case.measured_ms;
        cases.push(PublishedCase {
            model: case.model.clone(),
            source: case.source.clone(),
            phase,
            batch: case.batch,
            tp: case.tp,
            measured_ms: case.measured_ms,
            estimated_ms,
            ratio,
            within_bar: (ratio - 1.0).abs() <= bar(case.tp),
        });
    }
    Ok(PublishedReport {
        device: data.device,
        seq: data.seq,
        context: data.context,
        sources: data.sources,
        cases,
    })
}

impl core::fmt::Display for PublishedReport {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        writeln!(
            f,
            "Estimates on `{}`; prefill of {} tokens, decode after {} cached tokens.\n",
            self.device, self.seq, self.context
        )?;
        writeln!(
            f,
            "| model | phase | batch | tp | measured (ms) | estimate (ms) | ratio | within bar |"
        )?;
        writeln!(f, "|---|---|---:|---:|---:|---:|---:|---|")?;
        for c in &self.cases {
            writeln!(
                f,
                "| {} | {} | {} | {} | {} | {:.1} | {:.2} | {} |",
                c.model,
                c.phase,
                c.batch,
                c.tp,
                c.measured_ms,
                c.estimated_ms,
                c.ratio,
                if c.within_bar { "yes" } else { "no" }
            )?;
        }
        writeln!(f)?;
        for tp_group in [false, true] {
            let group: Vec<_> = self
                .cases
                .iter()
                .filter(|c| (c.tp > 1) == tp_group)
                .collect();
            let within = group.iter().filter(|c| c.within_bar).count();
            writeln!(
                f,
                "{}: {within} of {} within {:.0}%.",
                if tp_group {
                    "Tensor-parallel cases"
                } else {
                    "Single-device cases"
                },
                group.len(),
                bar(usize::from(tp_group) + 1) * 100.0
            )?;
        }
        writeln!(f, "\nSources:\n")?;
        for s in &self.sources {
            writeln!(
                f,
                "- `{}`: {} `{}` at {}, {}. {}",
                s.id, s.repo, s.file, s.commit, s.table, s.setup
            )?;
        }
        Ok(())
    }
}
