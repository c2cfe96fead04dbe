//! The end-to-end flow every example model program shows: describe, export, compile, run
//! on cpu and on sim, compare.

use std::error::Error;
use std::path::Path;

use pto_backends::compiler::compile;
use pto_backends::parity::compare_compiled;
use pto_onnx::OnnxFile;
use pto_op::Model;
use pto_op::table::column_width;

/// Runs `model` end to end, writing its exported files into `dir`:
///
/// 1. describe: the traced model's nodes and types;
/// 2. export: a model file and an ONNX file, and loads the ONNX file back;
/// 3. compile the loaded model for `cpu` and for `sim` (compile reports);
/// 4. run both on the same random inputs, with the per-node timing on sim;
/// 5. compare every output, with each producing op's tolerance.
///
/// Returns the printed text; fails if the outputs differ.
pub fn walkthrough(model: &Model, dir: &Path) -> Result<String, Box<dyn Error>> {
    let mut out = format!("== 1. describe: model `{}`\n", model.name);
    let op_w = column_width("", model.graph.nodes.iter().map(|n| n.op.as_str()));
    for (index, node) in model.graph.nodes.iter().enumerate() {
        let types: Vec<String> = node
            .outputs
            .iter()
            .filter_map(|&id| model.graph.values.get(id))
            .map(|v| format!("{} {}", v.name, v.ty))
            .collect();
        out.push_str(&format!(
            "{index:>4}  {:<op_w$} -> {}\n",
            node.op,
            types.join(", ")
        ));
    }

    std::fs::create_dir_all(dir)?;
    let model_file = dir.join(format!("{}.pto", model.name));
    let onnx_file = dir.join(format!("{}.onnx", model.name));
    model.save(&model_file)?;
    model.save_onnx(&onnx_file)?;
    let loaded = Model::load_onnx(&onnx_file)?;
    out.push_str(&format!(
        "\n== 2. export: {} and {}; the ONNX file loads back{}, with {} shipped kernel(s)\n",
        model_file.display(),
        onnx_file.display(),
        if loaded == model.with_traced_kernels() {
            " identical"
        } else {
            ""
        },
        loaded.kernels.len()
    ));

    let cpu = compile(&loaded, "cpu")?;
    let sim = compile(&loaded, "sim")?;
    out.push_str(&format!(
        "\n== 3. compile\n{}\n{}\n",
        cpu.report(),
        sim.report()
    ));

    let inputs = cpu.random_inputs(0);
    let timed = sim.run(&inputs)?;
    out.push_str(&format!("\n== 4. run on sim\n{}", timed.timing_table()));

    let parity = compare_compiled(&sim, &cpu, &inputs)?;
    out.push_str(&format!("\n== 5. compare\n{parity}\n"));
    if !parity.passed() {
        return Err(parity.to_string().into());
    }
    Ok(out)
}
