//! How every verb prints its report: as JSON (`--json`) or as its `Display` text.

use serde::Serialize;

use crate::error::CliError;

/// A report as JSON or as its `Display` text.
pub(crate) fn render<R: Serialize + core::fmt::Display>(
    report: &R,
    json: bool,
) -> Result<String, CliError> {
    if json {
        Ok(serde_json::to_string_pretty(report)?)
    } else {
        Ok(report.to_string())
    }
}
