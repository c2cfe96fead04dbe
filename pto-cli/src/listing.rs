//! The verbs that list what is linked: `ops`, `models`, `estimators`.

use pto_op::models::builtin_models;
use pto_op::table::column_width;
use serde::Serialize;

use crate::error::CliError;

/// `pto ops`: every linked op, with its signature and whether it has a kernel.
pub(crate) fn ops(json: bool) -> Result<String, CliError> {
    let ops = pto_op::registry::ops()?;
    if json {
        let schemas: Vec<pto_op::OpSchema> = ops.iter().map(|op| op.schema()).collect();
        return Ok(serde_json::to_string_pretty(&schemas)?);
    }
    let name_w = column_width("", ops.iter().map(|op| op.name));
    let mut out = format!("{} linked op(s)\n", ops.len());
    for op in ops {
        let params: Vec<String> = op
            .params
            .iter()
            .map(|p| format!("{}: {}", p.name, p.ty))
            .collect();
        out.push_str(&format!(
            "{:<name_w$} v{}  ({}) -> ({})  params({})  {}\n",
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
    let name_w = column_width("", all.iter().map(|m| m.name));
    let mut out = format!("built-in models ({})", all.len());
    for m in all {
        out.push_str(&format!("\n{:<name_w$} {}", m.name, m.description));
    }
    Ok(out)
}

/// `pto estimators`: every estimator and properties registration.
pub(crate) fn estimators(json: bool) -> Result<String, CliError> {
    let all = pto_estimator::chain::Chain::linked()?.registrations();
    if json {
        return Ok(serde_json::to_string_pretty(&all)?);
    }
    // Level and kind are rendered first: their `Display` ignores a width.
    let devices: Vec<&str> = all
        .iter()
        .map(|r| r.device.as_deref().unwrap_or("all"))
        .collect();
    let levels: Vec<String> = all.iter().map(|r| r.level.to_string()).collect();
    let kinds: Vec<String> = all.iter().map(|r| r.kind.to_string()).collect();
    let op_w = column_width("op", all.iter().map(|r| r.op.as_str()));
    let device_w = column_width("device", devices.iter().copied());
    let level_w = column_width("level", levels.iter().map(String::as_str));
    let kind_w = column_width("kind", kinds.iter().map(String::as_str));
    let mut out = format!(
        "{} registration(s)\n{:<op_w$} {:<device_w$} {:<level_w$} {:<kind_w$} {:<9} {:<9} source",
        all.len(),
        "op",
        "device",
        "level",
        "kind",
        "override",
        "in force"
    );
    for (i, r) in all.iter().enumerate() {
        out.push_str(&format!(
            "\n{:<op_w$} {:<device_w$} {:<level_w$} {:<kind_w$} {:<9} {:<9} {}",
            r.op,
            devices[i],
            levels[i],
            kinds[i],
            if r.overrides { "yes" } else { "no" },
            if r.in_force { "yes" } else { "NO" },
            r.source
        ));
    }
    Ok(out)
}
