//! The verbs that take a model without running it: `export`, `inspect`.

use std::collections::BTreeMap;
use std::path::Path;

use pto_backends::buffers::{BufferPlan, human_bytes};
use pto_backends::compiler::ValueInfo;
use pto_onnx::OnnxFile;
use pto_onnx::{LoadedModel, SymbolicModel, SymbolicValue};
use pto_op::table::column_width;
use pto_op::{AttrValue, Model};
use serde::Serialize;

use crate::args::LoadArgs;
use crate::error::CliError;
use crate::load::{import_options, is_onnx, load_loaded};
use crate::output::render;

/// `pto export MODEL -o FILE`: the model as an ONNX file or a model file.
pub(crate) fn export(
    model: &str,
    load: &LoadArgs,
    output: &Path,
    json: bool,
) -> Result<String, CliError> {
    let model = match load_loaded(model, load)? {
        LoadedModel::Static(model) => model,
        LoadedModel::Symbolic(symbolic) => {
            if is_onnx(output) {
                return Err(CliError::unbound(&symbolic, "writing it as ONNX"));
            }
            symbolic.save(output)?;
            return render(&Symbolic::of(&symbolic, Some(output)), json);
        }
    };
    let mut warning = None;
    if is_onnx(output) {
        model.save_onnx(output)?;
        warning = onnx_warning(output);
    } else {
        model.save(output)?;
    }
    let exported = Exported {
        model: model.name.clone(),
        file: output.display().to_string(),
        nodes: model.graph.nodes.len(),
        ops: model.schemas.keys().cloned().collect(),
        weight_bytes: model.weight_bytes(),
        warning,
    };
    render(&exported, json)
}

/// `pto inspect MODEL`: values, nodes and memory.
pub(crate) fn inspect(model: &str, load: &LoadArgs, json: bool) -> Result<String, CliError> {
    match load_loaded(model, load)? {
        LoadedModel::Static(model) => render(&Inspection::of(&model), json),
        LoadedModel::Symbolic(model) => render(&Symbolic::of(&model, None), json),
    }
}

/// `pto import MODEL.onnx [--shape ..] [--fuse] [-o FILE]`: the imported model, what was
/// fused, and the file written.
pub(crate) fn import(
    model: &str,
    load: &LoadArgs,
    output: Option<&Path>,
    json: bool,
) -> Result<String, CliError> {
    let path = Path::new(model);
    if !is_onnx(path) {
        return Err(CliError::NotOnnx {
            path: model.to_owned(),
        });
    }
    let options = import_options(load)?;
    let imported = if options.is_empty() {
        match LoadedModel::load_onnx(path)? {
            LoadedModel::Static(model) => model,
            LoadedModel::Symbolic(symbolic) => {
                if load.fuse {
                    return Err(CliError::unbound(&symbolic, "`--fuse`"));
                }
                if let Some(output) = output {
                    if is_onnx(output) {
                        return Err(CliError::unbound(&symbolic, "writing it as ONNX"));
                    }
                    symbolic.save(output)?;
                }
                return render(&Symbolic::of(&symbolic, output), json);
            }
        }
    } else {
        Model::load_onnx_with(path, &options)?
    };
    let nodes_imported = imported.graph.nodes.len();
    let (model, fused) = match load.fuse {
        true => pto_op::fusion::fuse(&imported).map_err(|source| CliError::Fuse {
            model: imported.name.clone(),
            source,
        })?,
        false => (imported, Vec::new()),
    };
    let mut warning = None;
    if let Some(output) = output {
        if is_onnx(output) {
            model.save_onnx(output)?;
            warning = onnx_warning(output);
        } else {
            model.save(output)?;
        }
    }
    let g = &model.graph;
    let value = |&id: &usize| format!("{} {}", g.values[id].name, g.values[id].ty);
    let report = Imported {
        model: model.name.clone(),
        file: path.display().to_string(),
        inputs: g.inputs.iter().map(value).collect(),
        outputs: g.outputs.iter().map(value).collect(),
        nodes_imported,
        nodes: g.nodes.len(),
        ops: model.schemas.keys().cloned().collect(),
        weight_bytes: model.weight_bytes(),
        fused,
        written: output.map(|p| p.display().to_string()),
        warning,
    };
    render(&report, json)
}

/// The warning of an ONNX file just written that ONNX Runtime cannot load (its opset is
/// newer, see `pto_onnx::runtime_warning`).
fn onnx_warning(path: &Path) -> Option<String> {
    pto_onnx::file_runtime_warning(path)
        .ok()
        .and_then(|(_, warning)| warning)
}

/// What `pto import` prints.
#[derive(Debug, Serialize)]
struct Imported {
    model: String,
    file: String,
    inputs: Vec<String>,
    outputs: Vec<String>,
    nodes_imported: usize,
    nodes: usize,
    ops: Vec<String>,
    weight_bytes: u64,
    fused: Vec<pto_op::fusion::Fused>,
    written: Option<String>,
    /// Why runtimes may not load the ONNX file written (its opset), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    warning: Option<String>,
}

impl core::fmt::Display for Imported {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        writeln!(f, "imported `{}` from {}", self.model, self.file)?;
        writeln!(f, "inputs:  {}", self.inputs.join(", "))?;
        writeln!(f, "outputs: {}", self.outputs.join(", "))?;
        writeln!(
            f,
            "{} node(s) of {} op(s) ({}), weights {}",
            self.nodes,
            self.ops.len(),
            self.ops.join(", "),
            human_bytes(self.weight_bytes)
        )?;
        if self.fused.is_empty() {
            write!(f, "fused: nothing")?;
        } else {
            let mut counts: BTreeMap<(&str, usize), usize> = BTreeMap::new();
            for fused in &self.fused {
                *counts
                    .entry((fused.fusion.as_str(), fused.nodes))
                    .or_default() += 1;
            }
            write!(
                f,
                "fused {} match(es), {} -> {} node(s):",
                self.fused.len(),
                self.nodes_imported,
                self.nodes
            )?;
            for ((fusion, nodes), count) in counts {
                write!(f, "\n  {count} x {fusion} (replacing {nodes} nodes each)")?;
            }
        }
        if let Some(written) = &self.written {
            write!(f, "\nwritten to {written}")?;
        }
        if let Some(warning) = &self.warning {
            write!(f, "\nwarning: {warning}")?;
        }
        Ok(())
    }
}

/// What `pto import`, `inspect` and `export` print of a model with symbolic dims.
#[derive(Debug, Serialize)]
struct Symbolic {
    model: String,
    /// The names of the symbolic dims.
    dims: Vec<String>,
    inputs: Vec<SymbolicValue>,
    outputs: Vec<SymbolicValue>,
    weight_bytes: u64,
    written: Option<String>,
}

impl Symbolic {
    fn of(model: &SymbolicModel, written: Option<&Path>) -> Symbolic {
        Symbolic {
            model: model.name.clone(),
            dims: model.dims(),
            inputs: model.inputs.clone(),
            outputs: model.outputs.clone(),
            weight_bytes: model
                .weights
                .values()
                .map(|t| (t.numel() as u64).saturating_mul(t.dtype().size_bytes() as u64))
                .fold(0, u64::saturating_add),
            written: written.map(|p| p.display().to_string()),
        }
    }
}

impl core::fmt::Display for Symbolic {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let list = |values: &[SymbolicValue]| {
            values
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        writeln!(f, "model `{}`", self.model)?;
        writeln!(f, "inputs:  {}", list(&self.inputs))?;
        writeln!(f, "outputs: {}", list(&self.outputs))?;
        let bind: Vec<String> = self.dims.iter().map(|d| format!("{d}=<size>")).collect();
        writeln!(
            f,
            "symbolic dims: {} (bound when the model compiles: `--shape {}`, or an input's \
             whole shape `--shape INPUT=DIMS`)",
            if self.dims.is_empty() {
                "unnamed only".to_owned()
            } else {
                self.dims.join(", ")
            },
            if bind.is_empty() {
                "INPUT=DIMS".to_owned()
            } else {
                bind.join(",")
            }
        )?;
        write!(f, "weights {}", human_bytes(self.weight_bytes))?;
        if let Some(written) = &self.written {
            write!(f, "\nwritten to {written}")?;
        }
        Ok(())
    }
}

/// What `pto export` prints.
#[derive(Debug, Serialize)]
struct Exported {
    model: String,
    file: String,
    nodes: usize,
    ops: Vec<String>,
    weight_bytes: u64,
    /// Why runtimes may not load the ONNX file written (its opset), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    warning: Option<String>,
}

impl core::fmt::Display for Exported {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "exported model `{}` to {}: {} node(s) of {} op(s) ({}), weights {}",
            self.model,
            self.file,
            self.nodes,
            self.ops.len(),
            self.ops.join(", "),
            human_bytes(self.weight_bytes)
        )?;
        if let Some(warning) = &self.warning {
            write!(f, "\nwarning: {warning}")?;
        }
        Ok(())
    }
}

/// What `pto inspect` prints: the model's values, nodes and memory, without a target.
#[derive(Debug, Serialize)]
struct Inspection {
    model: String,
    inputs: Vec<ValueInfo>,
    weights: Vec<ValueInfo>,
    outputs: Vec<ValueInfo>,
    nodes: Vec<InspectedNode>,
    peak_activation_bytes: u64,
    weight_bytes: u64,
}

#[derive(Debug, Serialize)]
struct InspectedNode {
    node: usize,
    /// The node's own name (an imported ONNX node's), if it has one.
    #[serde(skip_serializing_if = "String::is_empty")]
    name: String,
    op: String,
    attrs: BTreeMap<String, AttrValue>,
    inputs: Vec<ValueInfo>,
    outputs: Vec<ValueInfo>,
    live_bytes: u64,
}

impl Inspection {
    fn of(model: &Model) -> Inspection {
        let graph = &model.graph;
        let info = |id: &usize| {
            graph.values.get(*id).map(|v| ValueInfo {
                name: v.name.clone(),
                ty: v.ty.clone(),
            })
        };
        let plan = BufferPlan::of(graph);
        Inspection {
            model: model.name.clone(),
            inputs: graph.inputs.iter().filter_map(info).collect(),
            weights: graph.weights.iter().filter_map(info).collect(),
            outputs: graph.outputs.iter().filter_map(info).collect(),
            nodes: graph
                .nodes
                .iter()
                .enumerate()
                .map(|(index, node)| InspectedNode {
                    node: index,
                    name: node.name.clone(),
                    op: node.op.clone(),
                    attrs: node.attrs.clone(),
                    inputs: node.inputs.iter().filter_map(info).collect(),
                    outputs: node.outputs.iter().filter_map(info).collect(),
                    live_bytes: plan.live_bytes.get(index).copied().unwrap_or(0),
                })
                .collect(),
            peak_activation_bytes: plan.peak_activation_bytes,
            weight_bytes: plan.weight_bytes,
        }
    }
}

impl core::fmt::Display for Inspection {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let list = |values: &[ValueInfo]| {
            values
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        writeln!(f, "model `{}`", self.model)?;
        writeln!(f, "inputs:  {}", list(&self.inputs))?;
        writeln!(f, "weights: {}", list(&self.weights))?;
        writeln!(f, "outputs: {}", list(&self.outputs))?;
        let op_w = column_width("", self.nodes.iter().map(|n| n.op.as_str()));
        for node in &self.nodes {
            let attrs: Vec<String> = node.attrs.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let names = |values: &[ValueInfo]| {
                values
                    .iter()
                    .map(|v| v.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let name = if node.name.is_empty() {
                String::new()
            } else {
                format!("  `{}`", node.name)
            };
            writeln!(
                f,
                "{:>4}  {:<op_w$} ({}) -> {}  [{}]  live {}{name}",
                node.node,
                node.op,
                names(&node.inputs),
                list(&node.outputs),
                attrs.join(", "),
                human_bytes(node.live_bytes)
            )?;
        }
        write!(
            f,
            "peak activation memory {}, weights {}",
            human_bytes(self.peak_activation_bytes),
            human_bytes(self.weight_bytes)
        )
    }
}
