//! The verbs that list what is linked: `ops`, `models`, `estimators`.

use pto_op::models::builtin_models;
use serde::Serialize;

use crate::error::CliError;

/// `pto ops`: every linked op, with its signature and whether it has a kernel.
pub(crate) fn ops(json: bool) -> Result<String, CliError> {
    let ops = pto_op::registry::ops()?;
    if json {
        let schemas: Vec<pto_op::OpSchema> = ops.iter().map(|op| op.schema()).collect();
        return Ok(serde_json::to_string_pretty(&schemas)?);
    }
    let mut out = format!("{} linked op(s)\n", ops.len());
    for op in ops {
        let params: Vec<String> = op
            .params
            .iter()
            .map(|p| format!("{}: {}", p.name, p.ty))
            .collect();
        out.push_str(&format!(
            "{:<22} v{}  ({}) -> ({})  params({})  {}\n",
            op.name,
            op.version,
            op.inputs.join(", "),
            op.outputs.join(", "),
            params.join(", "),
            if op.kernel.is_some() {
                "kernel"
            } else {
                "reference only"
            }
        ));
    }
    Ok(out.trim_end().to_owned())
}

/// `pto models`: every built-in model.
pub(crate) fn models(json: bool) -> Result<String, CliError> {
    #[derive(Serialize)]
    struct Entry {
        name: &'static str,
        description: &'static str,
    }
    let all: Vec<Entry> = builtin_models()?
        .into_iter()
        .map(|m| Entry {
            name: m.name,
            description: m.description,
        })
        .collect();
    if json {
        return Ok(serde_json::to_string_pretty(&all)?);
    }
    let mut out = format!("built-in models ({})", all.len());
    for m in all {
        out.push_str(&format!("\n{:<16} {}", m.name, m.description));
    }
    Ok(out)
}

/// `pto estimators`: every estimator and properties registration.
pub(crate) fn estimators(json: bool) -> Result<String, CliError> {
    let all = pto_estimator::chain::Chain::linked()?.registrations();
    if json {
        return Ok(serde_json::to_string_pretty(&all)?);
    }
    let mut out = format!(
        "{} registration(s)\n{:<22} {:<11} {:<8} {:<11} {:<9} {:<9} source",
        all.len(),
        "op",
        "device",
        "level",
        "kind",
        "override",
        "in force"
    );
    for r in all {
        out.push_str(&format!(
            "\n{:<22} {:<11} {:<8} {:<11} {:<9} {:<9} {}",
            r.op,
            r.device.as_deref().unwrap_or("all"),
            r.level,
            r.kind,
            if r.overrides { "yes" } else { "no" },
            if r.in_force { "yes" } else { "NO" },
            r.source
        ));
    }
    Ok(out)
}
