//! The command line's arguments (clap): one variant of [`Command`] per verb.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use pto_op::budget::MemoryBudget;
use pto_op::{MAX_DIM, Shape, Tensor};

/// Describe, compile, run and compare pto-op models on any linked target.
#[derive(Debug, Parser)]
#[command(
    name = "pto",
    version,
    about = "Operators described once: list them, and export, compile, run, compare and inspect models on a target (cpu, sim)"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: Command,
    #[command(flatten)]
    pub load: LoadArgs,
}

/// The verbs.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// List the linked ops (`--json`: their schemas).
    Ops {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the built-in models.
    Models {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write a model to an ONNX file (`.onnx`) or a model file (any other name: one
    /// safetensors file of weights, graph and op schemas).
    Export {
        /// An ONNX file (`.onnx`), a model file, or a built-in model's name.
        model: String,
        /// The file to write (atomically).
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Compile a model for a target and print the compile report: nodes, what runs each,
    /// kernels and fallbacks, peak activation and weight memory.
    Compile {
        /// An ONNX file (`.onnx`), a model file, or a built-in model's name.
        model: String,
        #[command(flatten)]
        target: TargetArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run a model: a summary of each output and the per-node timing table.
    Run {
        /// An ONNX file (`.onnx`), a model file, or a built-in model's name.
        model: String,
        #[command(flatten)]
        target: TargetArgs,
        #[command(flatten)]
        inputs: InputArgs,
        /// Write the outputs, by the model's output names, to FILE: a safetensors file when
        /// it ends in `.safetensors`, else a directory of one `.npy` file per output
        /// (written atomically either way).
        #[arg(long, value_name = "FILE.safetensors|DIR")]
        outputs: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run a model (an ONNX file, a model file or a built-in model) on a target and on a
    /// reference target with the same inputs and compare every output.
    Parity {
        /// An ONNX file (`.onnx`), a model file, or a built-in model's name.
        model: String,
        /// The target checked.
        #[arg(long, default_value = "sim")]
        target: String,
        /// The target it is checked against.
        #[arg(long, default_value = "cpu")]
        reference: String,
        #[command(flatten)]
        device: DeviceArg,
        #[command(flatten)]
        budget: BudgetArg,
        #[command(flatten)]
        package: KernelsArg,
        #[command(flatten)]
        inputs: InputArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Estimate a model's time on a device: per-op table (time, share, bound, source),
    /// totals, weight and peak activation memory.
    Estimate {
        /// An ONNX file (`.onnx`), a model file, or a built-in model's name (or `--llm`).
        #[arg(required_unless_present_any = ["llm", "published"])]
        model: Option<String>,
        #[command(flatten)]
        device: DeviceArg,
        #[command(flatten)]
        serving: ServingArgs,
        /// Write the roofline plot as SVG to this file (atomically).
        #[arg(long, value_name = "FILE.svg")]
        plot: Option<PathBuf>,
        /// Write the timeline as a Chrome trace to this file (atomically).
        #[arg(long, value_name = "FILE.json")]
        trace: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// List every estimator and properties registration: op, device, level, kind, source,
    /// and whether it is in force.
    Estimators {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// The estimator against the tile simulator on the held-out shape sweep of every linked
    /// op with a kernel and a registered sweep: per op the median and largest error, and
    /// the overall median.
    Accuracy {
        #[command(flatten)]
        device: DeviceArg,
        /// Print every case too.
        #[arg(long)]
        cases: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Fit per-op corrections of the estimator to the simulator on the training sweep,
    /// write the calibrated profile, and print the held-out error before and after.
    Calibrate {
        #[command(flatten)]
        device: DeviceArg,
        /// The calibrated profile to write (atomically); default `NAME.calibrated.json` in
        /// the current directory.
        #[arg(short, long, value_name = "FILE.json")]
        output: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// The tile simulator against public measurements of Ascend hardware (flash attention,
    /// GEMM) on the ascend910b profile (ascend910b2 for the 910B2 measurements): per case
    /// measured and simulated time, their ratio, the simulator's bound, and whether it is
    /// within 25%. Prints the Markdown table kept in docs/fidelity.md.
    Fidelity {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Search an op's kernel tiling for one shape and device on the tile simulator: every
    /// candidate tiling traced, timed, the fastest chosen. Only `std.matmul`:
    /// `pto tune std.matmul 1024x4096x4096 --device ascend910b` (M x K x N; a positional
    /// argument, as `--shape` binds a model's dims).
    Tune {
        /// The op (`std.matmul`).
        op: String,
        /// The product's shape, `MxKxN`: `a [M, K] @ b [K, N]`.
        #[arg(value_name = "MxKxN")]
        shape: String,
        #[command(flatten)]
        device: DeviceArg,
        /// The element type of `a`, `b` and `y` (default f16).
        #[arg(long, default_value = "f16")]
        dtype: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Import an ONNX file (binding symbolic dims with `--shape`, fusing std-op patterns into
    /// the linked custom ops with `--fuse`), report what it holds and what was fused, and
    /// write it as a model file or ONNX (`-o`).
    Import {
        /// The ONNX file.
        model: String,
        /// Write the imported model here: an ONNX file (`.onnx`) or a model file (any other
        /// name), atomically.
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show a model: inputs, weights, outputs, nodes with their shapes and dtypes, memory.
    Inspect {
        /// An ONNX file (`.onnx`), a model file, or a built-in model's name.
        model: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Write the custom-op package of a model's custom ops for a SoC (the public samples'
    /// Ascend C project: op_host, op_kernel, op_graph, ONNX plug-in, a CMakeLists.txt per
    /// folder, build.sh, the C ABI library's crate capi/, manifest), or check
    /// a package against a model (`--check DIR`).
    #[cfg(feature = "device")]
    Package {
        /// A model file or a built-in model's name.
        model: String,
        /// The SoC: kirin9030, kirinx90, ascend910b or ascend910b2 (packaged as ascend910b)
        /// (default kirin9030; with `--check`, the package must be for it when given).
        #[arg(long)]
        device: Option<String>,
        /// The package directory to write (atomically: a failure leaves a previous package).
        #[arg(short, long, value_name = "DIR", required_unless_present = "check")]
        output: Option<PathBuf>,
        /// Check the package in DIR against the model instead: every custom op present, with
        /// the model's fingerprint and instances.
        #[arg(long, value_name = "DIR", conflicts_with_all = ["output", "build"])]
        check: Option<PathBuf>,
        /// Then build it with its build.sh, where a CANN toolkit is present
        /// (ASCEND_HOME_PATH).
        #[arg(long)]
        build: bool,
        /// Then build the package's C ABI library (capi/build.sh, with cargo: no toolkit
        /// needed; PTO_CRATE_<LIB> name the ops' crates, PTO_SOURCE the pto-op checkout,
        /// by default the one this pto was built from) and refuse, naming the ops, when it
        /// does not answer for every op with the package's fingerprint.
        #[arg(long, conflicts_with = "check")]
        capi: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Redeploy the edited kernels of a package in one step: each edited text-form kernel
    /// (`op_kernel/<stem>.pto`) or Ascend C source (`op_kernel/<stem>.cpp`) is parsed,
    /// checked against the device's buffers and, against the op's reference, on the op's
    /// parity cases and the model's input types (sim and ascendc-host), lowered, and only
    /// then swapped into the package atomically. A refused edit changes nothing.
    #[cfg(feature = "device")]
    Redeploy {
        /// The package directory (written by `pto package`).
        dir: PathBuf,
        /// Redeploy this op only (its pto-op name, `demo.flash_attention`).
        #[arg(long)]
        op: Option<String>,
        /// Let a text edit replace Ascend C that was edited by hand and redeployed.
        #[arg(long)]
        replace_ascend_c: bool,
        /// Random parity cases of each instance's own input types, besides the op's
        /// `#[parity]` cases.
        #[arg(long, default_value_t = 2, value_name = "N")]
        random_cases: u64,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Where a model runs: the target and its device.
#[derive(Debug, Args)]
pub(crate) struct TargetArgs {
    /// The target (default: PTO_TARGET, else cpu).
    #[arg(long)]
    pub target: Option<String>,
    #[command(flatten)]
    pub device: DeviceArg,
    #[command(flatten)]
    pub budget: BudgetArg,
    #[command(flatten)]
    pub package: KernelsArg,
}

/// Which kernels a model runs (`--kernels linked|shipped|DIR`).
#[derive(Debug, Args)]
pub(crate) struct KernelsArg {
    /// Which kernel runs a node that has a kernel shipped with the model. `shipped` (the
    /// default): the shipped one, as exported or edited, so a run is the one that was
    /// measured and deployed; the report says `kernel: shipped`, `kernel: shipped (edited)`
    /// or `kernel: shipped (stale: the op's kernel changed since export)`. `linked`: the
    /// linked op's kernel, traced now, for every node. DIR (with the device feature): the
    /// kernels deployed in this package (`pto package`, `pto redeploy`) where they match a
    /// node (on both targets of `pto parity`); without `--device` (or PTO_DEVICE), the model
    /// runs on the package's device.
    #[arg(long, value_name = "linked|shipped|DIR", value_parser = parse_kernels)]
    pub kernels: Option<KernelsChoice>,
}

/// A `--kernels` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum KernelsChoice {
    /// The model's shipped kernels where they match a node.
    Shipped,
    /// The linked ops' kernels: shipped kernels are set aside.
    Linked,
    /// The kernels of the package in this directory.
    Package(PathBuf),
}

/// `linked`, `shipped`, or a package directory (`./linked` names a directory of that name).
fn parse_kernels(value: &str) -> Result<KernelsChoice, String> {
    match value {
        "shipped" => Ok(KernelsChoice::Shipped),
        "linked" => Ok(KernelsChoice::Linked),
        _ if cfg!(feature = "device") => Ok(KernelsChoice::Package(PathBuf::from(value))),
        _ => Err(format!(
            "`{value}` is neither `linked` nor `shipped`; a package directory needs pto built \
             with the device feature"
        )),
    }
}

/// The memory a model may need.
#[derive(Debug, Args)]
pub(crate) struct BudgetArg {
    /// Refuse, before allocating, a model whose weights and peak activations need more
    /// than SIZE (bytes, or K, M, G, T: 512M, 1.5G; default: half of this machine's memory,
    /// or less where the address-space limit or the cgroup's memory limit leaves less).
    #[arg(long, value_name = "SIZE")]
    pub max_memory: Option<MemoryBudget>,
}

/// `pto estimate --llm CONFIG.json`: a serving step of a decoder-only LLM from its Hugging
/// Face config.
#[derive(Debug, Args)]
pub(crate) struct ServingArgs {
    /// Estimate the LLM a Hugging Face `config.json` describes (Llama, Mistral, Qwen2),
    /// instead of a MODEL.
    #[arg(long, value_name = "CONFIG.json", conflicts_with = "model")]
    pub llm: Option<PathBuf>,
    /// The serving step: the whole prompt (prefill) or one new token (decode).
    #[arg(long, value_enum, default_value = "prefill", requires = "llm")]
    pub phase: PhaseArg,
    /// Sequences at once.
    #[arg(long, default_value_t = 1, requires = "llm")]
    pub batch: usize,
    /// Prompt tokens per sequence (prefill).
    #[arg(long, default_value_t = 1024, requires = "llm")]
    pub seq: usize,
    /// Tokens already in each sequence's KV cache (decode).
    #[arg(long, default_value_t = 1024, requires = "llm")]
    pub context: usize,
    /// Devices of the tensor-parallel group.
    #[arg(long, default_value_t = 1, requires = "llm")]
    pub tp: usize,
    /// The decoder layers' linears: in the model's dtype, int8 weights and activations
    /// (w8a8), or int4 weights with f16 activations (w4a16).
    #[arg(long, value_enum, default_value = "none", requires = "llm")]
    pub quant: QuantArg,
    /// Estimate every published serving measurement (`pto-estimator/data/llm/
    /// measurements.json`, on the device profile it names) and print the table of
    /// docs/serving.md: measured, estimated, ratio, within the bar.
    #[arg(long, conflicts_with_all = ["model", "llm", "device"])]
    pub published: bool,
    /// Also find the largest batch whose weights, KV cache and activations fit one
    /// device's memory at this phase and length.
    #[arg(long, requires = "llm")]
    pub max_batch: bool,
    /// Estimate a grid instead of one step: `--sweep batch=1,8,32 --sweep tp=1,2,4,8`
    /// (FIELD one of batch, seq, context, tp; repeatable), on every core.
    #[arg(long, value_name = "FIELD=V1,V2,..", requires = "llm")]
    pub sweep: Vec<pto_estimator::llm::sweep::Axis>,
}

/// The `--quant` of `pto estimate --llm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum QuantArg {
    /// The model's dtype.
    None,
    /// int8 weights and activations.
    W8a8,
    /// int4 weights, f16 activations.
    W4a16,
}

/// The `--phase` of `pto estimate --llm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum PhaseArg {
    /// The whole prompt.
    Prefill,
    /// One new token per sequence.
    Decode,
}

/// The device profile of a verb that simulates or estimates.
#[derive(Debug, Args)]
pub(crate) struct DeviceArg {
    /// A built-in device profile's name, or a profile file (default: PTO_DEVICE, else
    /// kirin9030). Targets that model no device (cpu) ignore it.
    #[arg(long, value_name = "NAME|FILE.json")]
    pub device: Option<String>,
}

/// Where a run's inputs come from.
#[derive(Debug, Args)]
pub(crate) struct InputArgs {
    /// Read the inputs, by name, from a safetensors file.
    #[arg(long, value_name = "FILE.safetensors")]
    pub inputs: Option<PathBuf>,
    /// Random inputs from this seed (the default, with seed 0).
    #[arg(long, value_name = "SEED", conflicts_with = "inputs")]
    pub random: Option<u64>,
}

/// How an ONNX file is read, for every verb that takes a MODEL.
#[derive(Debug, Args)]
pub(crate) struct LoadArgs {
    /// Bind symbolic dims: by name, `--shape batch=1,seq=128`, or by an input's whole shape,
    /// `--shape input_ids=1x128` (comma-separated or repeated). At import (an ONNX MODEL)
    /// they bind early, and the model is static; a model file saved with its dims symbolic
    /// binds them when it compiles. A symbolic dim left unbound is an error naming the input
    /// and the dim.
    #[arg(
        long = "shape",
        value_name = "DIM=SIZE|INPUT=DIMS",
        global = true,
        value_delimiter = ',',
        value_parser = parse_shape
    )]
    pub shapes: Vec<(String, Shape)>,
    /// Fix the value of a graph input at import, `--constant axes=[0,1]` (a number, or a
    /// list, nested for more dims, in JSON; repeated for several inputs): read as an
    /// initializer of that name, so the params it feeds (a Reshape's shape, a Slice's
    /// starts, pads, axes) are known, and no longer an input of the model. Whole numbers make
    /// an i64 value, others f32; it is cast to the input's declared dtype where that loses
    /// nothing.
    #[arg(long = "constant", value_name = "INPUT=JSON", global = true, value_parser = parse_constant)]
    pub constants: Vec<(String, Tensor)>,
    /// Rewrite the std-op subgraphs that linked custom ops declare (`pto_op::fusion`) into
    /// those ops, after import.
    #[arg(long, global = true)]
    pub fuse: bool,
}

/// `NAME=JSON`: a number, or a list (nested for more dims) of numbers, all whole (an i64
/// tensor) or not (f32).
fn parse_constant(text: &str) -> Result<(String, Tensor), String> {
    let (name, json) = text
        .split_once('=')
        .ok_or_else(|| format!("expected INPUT=JSON such as axes=[0,1], got `{text}`"))?;
    if name.is_empty() {
        return Err(format!("no input name before `=` in `{text}`"));
    }
    let value: serde_json::Value = serde_json::from_str(json)
        .map_err(|e| format!("the value of `{name}` is not JSON ({e}): `{json}`"))?;
    let mut dims = Vec::new();
    let mut level = &value;
    while let serde_json::Value::Array(items) = level {
        dims.push(items.len());
        match items.first() {
            Some(first) => level = first,
            None => break,
        }
    }
    let mut numbers = Vec::new();
    flatten_numbers(&value, 0, &dims, name, &mut numbers)?;
    let whole = numbers.iter().all(|n| n.is_i64());
    let tensor = match whole {
        true => Tensor::from_vec(dims, numbers.iter().filter_map(|n| n.as_i64()).collect()),
        false => Tensor::from_vec(
            dims,
            numbers
                .iter()
                .map(|n| n.as_f64().unwrap_or(f64::NAN) as f32)
                .collect(),
        ),
    }
    .map_err(|e| format!("the value of `{name}`: {e}"))?;
    Ok((name.to_owned(), tensor))
}

/// The numbers of `value`, a (nested) list of the sizes `dims[depth..]`, in order.
fn flatten_numbers(
    value: &serde_json::Value,
    depth: usize,
    dims: &[usize],
    name: &str,
    out: &mut Vec<serde_json::Number>,
) -> Result<(), String> {
    match (value, dims.get(depth)) {
        (serde_json::Value::Number(n), None) => {
            out.push(n.clone());
            Ok(())
        }
        (serde_json::Value::Array(items), Some(&len)) if items.len() == len => items
            .iter()
            .try_for_each(|item| flatten_numbers(item, depth + 1, dims, name, out)),
        _ => Err(format!(
            "the value of `{name}` is not a number or a rectangular list of numbers"
        )),
    }
}

/// `NAME=D0xD1x...` (a scalar input is `NAME=`; a dim `NAME=SIZE`).
fn parse_shape(text: &str) -> Result<(String, Shape), String> {
    let (name, dims) = text.split_once('=').ok_or_else(|| {
        format!(
            "expected DIM=SIZE such as seq=128 or INPUT=DIMS such as input_ids=1x128, got `{text}`"
        )
    })?;
    if name.is_empty() {
        return Err(format!("no input name before `=` in `{text}`"));
    }
    // A message suggests the form that was written: one size binds a dim by name.
    let form = if dims.contains(['x', 'X']) {
        "INPUT=DIMS such as input_ids=1x128"
    } else {
        "DIM=SIZE such as seq=128"
    };
    let dims = match dims {
        "" => Vec::new(),
        dims => dims
            .split(['x', 'X'])
            .map(|dim| parse_dim(dim, text, form))
            .collect::<Result<_, _>>()?,
    };
    Ok((name.to_owned(), Shape::new(dims)))
}

/// One size of `--shape` `text`: a whole number from 0 to [`MAX_DIM`] (ONNX dims are int64).
fn parse_dim(dim: &str, text: &str, form: &str) -> Result<usize, String> {
    let digits = dim.trim();
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return digits
            .parse::<u64>()
            .ok()
            .filter(|&size| size <= MAX_DIM)
            .and_then(|size| usize::try_from(size).ok())
            .ok_or_else(|| {
                format!(
                    "dim `{dim}` of `{text}` is too large: a dim is at most {MAX_DIM} \
                     (ONNX dims are int64)"
                )
            });
    }
    let problem = if digits.starts_with('-') {
        "is negative"
    } else {
        "is not a size"
    };
    Err(format!(
        "dim `{dim}` of `{text}` {problem}: a size is a whole number from 0 to {MAX_DIM}; \
         expected {form}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_parse_by_dim_and_by_input() {
        assert_eq!(
            parse_shape("batch=2"),
            Ok(("batch".to_owned(), Shape::from([2])))
        );
        assert_eq!(
            parse_shape("input_ids=0x9223372036854775807"),
            Ok(("input_ids".to_owned(), Shape::from([0, i64::MAX as usize])))
        );
        assert_eq!(parse_shape("x="), Ok(("x".to_owned(), Shape::scalar())));
    }

    #[test]
    fn a_dim_above_int64_is_too_large_not_unknown() {
        assert_eq!(
            parse_shape("batch=9223372036854775808").unwrap_err(),
            "dim `9223372036854775808` of `batch=9223372036854775808` is too large: a dim is \
             at most 9223372036854775807 (ONNX dims are int64)"
        );
        assert_eq!(
            parse_shape("input_ids=0x18446744073709551615").unwrap_err(),
            "dim `18446744073709551615` of `input_ids=0x18446744073709551615` is too large: a \
             dim is at most 9223372036854775807 (ONNX dims are int64)"
        );
        // Beyond u64 too.
        assert!(
            parse_shape("batch=99999999999999999999999")
                .unwrap_err()
                .contains("is too large")
        );
    }

    #[test]
    fn a_negative_dim_suggests_the_form_written() {
        assert_eq!(
            parse_shape("batch=-1").unwrap_err(),
            "dim `-1` of `batch=-1` is negative: a size is a whole number from 0 to \
             9223372036854775807; expected DIM=SIZE such as seq=128"
        );
        assert_eq!(
            parse_shape("input_ids=2x-1").unwrap_err(),
            "dim `-1` of `input_ids=2x-1` is negative: a size is a whole number from 0 to \
             9223372036854775807; expected INPUT=DIMS such as input_ids=1x128"
        );
        assert_eq!(
            parse_shape("input_ids=2xbig").unwrap_err(),
            "dim `big` of `input_ids=2xbig` is not a size: a size is a whole number from 0 to \
             9223372036854775807; expected INPUT=DIMS such as input_ids=1x128"
        );
    }
}
