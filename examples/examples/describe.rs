//! Describe, register, inspect and run the example ops on the CPU.
//!
//! `cargo run -p pto-examples --example describe`

use pto_backends::cpu::Cpu;
use pto_backends::sim::Sim;
use pto_examples::{gelu_affine, moments};
use pto_op::prelude::*;

// Errors are printed as `pto` prints them (`error: ...` and their causes), not as the
// `Error: {:?}` of a `main` returning `Result`.
fn main() -> std::process::ExitCode {
    pto_cli::exit_code(run())
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    // Registration: every #[custom_op] linked into this program, ordered by name.
    println!("== registered ops");
    for op in pto_op::registry::ops()? {
        let params: Vec<String> = op
            .params
            .iter()
            .map(|p| format!("{}: {}", p.name, p.ty))
            .collect();
        println!(
            "{:<20} v{}  ({}) -> ({})  params({})  fingerprint {}",
            op.name,
            op.version,
            op.inputs.join(", "),
            op.outputs.join(", "),
            params.join(", "),
            op.fingerprint()
        );
    }

    // The serialized schema: what model files and other tools read.
    println!("\n== schema of {}", gelu_affine::NAME);
    println!("{}", gelu_affine::def().schema().to_json_pretty());

    // Typed params, and the attributes they travel as.
    let params = gelu_affine::Params {
        scale: 2.0,
        ..Default::default()
    };
    println!(
        "\n== params {params:?} travel as {:?}",
        params.to_attributes()
    );

    // Eager calls on the CPU target, which runs each op's reference.
    let x = Tensor::random([2, 8], DType::F32, 7);
    let y = gelu_affine::run(&Cpu, &x, &params)?;
    println!(
        "\n== {} on cpu: x {} -> y {} {}",
        gelu_affine::NAME,
        x.shape(),
        y.dtype(),
        y.shape()
    );
    println!("x[0, ..4] = {:?}", &x.to_vec::<f32>()?[..4]);
    println!("y[0, ..4] = {:?}", &y.to_vec::<f32>()?[..4]);

    // The same call on the simulator target: the kernel, traced and run on a Kirin 9030.
    let sim = Sim::new(DeviceProfile::builtin("kirin9030")?);
    let y_sim = gelu_affine::run(&sim, &x, &params)?;
    let comparison = y_sim.compare(&y, Tolerance::for_dtype(y.dtype()))?;
    println!(
        "\n== {} on sim (kirin9030) vs cpu: {comparison}",
        gelu_affine::NAME
    );
    // `Sim::call` runs the same call and returns the simulator's whole report with it.
    let report = sim
        .call(gelu_affine::def(), &[&x], &params.to_attributes())?
        .report;
    println!("{report}");

    let (mean, rstd) = moments::run(&Cpu, &y.cast(DType::F16), &moments::Params::default())?;
    println!(
        "\n== {} on cpu (f16 input): mean {} {} = {:?}, rstd {} {} = {:?}",
        moments::NAME,
        mean.dtype(),
        mean.shape(),
        mean.to_vec::<f32>()?,
        rstd.dtype(),
        rstd.shape(),
        rstd.to_vec::<f32>()?
    );

    // Tracing: the same shape and dtype rules run while a model is built.
    let graph = Graph::new();
    let input = graph.input("x", Shape::from([4, 64]), DType::F16);
    let activated = gelu_affine::apply(&input, &params)?;
    let (mean, rstd) = moments::apply(&activated, &moments::Params { eps: 1e-6 })?;
    println!("\n== traced graph");
    for node in graph.def().nodes {
        println!(
            "{} {:?} -> {:?}  attrs {:?}",
            node.op, node.inputs, node.outputs, node.attrs
        );
    }
    println!("outputs: mean {}, rstd {}", mean.ty(), rstd.ty());

    // A call that breaks the op's rules fails with the op, the input and the values named.
    let ints = graph.input("ids", Shape::from([4, 64]), DType::I32);
    match moments::apply(&ints, &moments::Params::default()) {
        Err(e) => println!("\n== a bad call, caught while tracing:\n{e}"),
        Ok(_) => return Err("moments accepted an i32 input".into()),
    }
    Ok(())
}
