//! The `pto` command line, as a library: any operator crate gets the whole tool with
//!
//! ```ignore
//! use my_ops as _; // links the crate's ops (and the models and sweeps it registers)
//! fn main() -> std::process::ExitCode {
//!     pto_cli::main()
//! }
//! ```
//!
//! Subcommands: `ops`, `models`, `export`, `compile`, `run`, `parity`, `estimate`,
//! `estimators`, `accuracy`, `calibrate`, `fidelity`, `tune`, `inspect`, and with the feature
//! `device` `package`;
//! `--json` on every report. A MODEL
//! argument is an ONNX or model file (`pto export` writes both), else the name of a
//! built-in model (see [`pto_op::models`]). The target is `--target`, else
//! `PTO_TARGET`, else `cpu`; the device `--device`, else `PTO_DEVICE`, else the target's
//! default (kirin9030), read in one place: [`edge`].
//!
//! One module per concern: `args` (clap), `load` (MODEL arguments), one module
//! per group of verbs (`listing`, `model`, `exec`, `perf`), [`accuracy`] (the estimator
//! against the simulator), [`tensor_file`] (safetensors inputs), [`CliError`], `output` (a
//! report as JSON or text). A new verb
//! is a variant of `args::Command`, a function in its group's module, and one arm of
//! [`run`]'s match.

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

pub mod accuracy;
mod args;
pub mod edge;
mod error;
mod exec;
pub mod fidelity;
mod listing;
mod load;
mod model;
mod output;
#[cfg(feature = "device")]
mod package;
mod perf;
pub mod tensor_file;
pub mod tune;

pub use error::CliError;

use args::{Cli, Command};
use output::render;

/// Runs the command line on the process's arguments: prints the report on stdout, an error
/// on stderr (as [`error_text`] writes it), and returns the exit code (2 for usage errors, 1
/// for other failures).
pub fn main() -> ExitCode {
    match run(std::env::args_os()) {
        Ok(report) => {
            // A closed pipe (`pto ops | head`) is not a failure of the command.
            let _ = writeln!(std::io::stdout(), "{report}");
            ExitCode::SUCCESS
        }
        Err(CliError::Usage(e)) => {
            // clap formats help, version and usage errors itself.
            let _ = e.print();
            ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2))
        }
        Err(e) => exit_with(&e),
    }
}

/// The text the command line prints for a failure: `error: ` and the error's message, then
/// one `  caused by: ` line per error of its [`source`](std::error::Error::source) chain,
/// leaving out a cause whose message is already part of a message printed above it (many
/// errors quote their source), so no reason is printed twice.
///
/// ```
/// #[derive(Debug)]
/// struct Outer(std::io::Error);
/// impl std::fmt::Display for Outer {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///         f.write_str("reading the weights failed")
///     }
/// }
/// impl std::error::Error for Outer {
///     fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
///         Some(&self.0)
///     }
/// }
/// let e = Outer(std::io::Error::other("disk on fire"));
/// assert_eq!(
///     pto_cli::error_text(&e),
///     "error: reading the weights failed\n  caused by: disk on fire"
/// );
/// ```
pub fn error_text(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = format!("error: {error}");
    let mut printed = vec![error.to_string()];
    let mut cause = error.source();
    while let Some(e) = cause {
        let message = e.to_string();
        if !message.is_empty() && !printed.iter().any(|p| p.contains(&message)) {
            text.push_str("\n  caused by: ");
            text.push_str(&message);
            printed.push(message);
        }
        cause = e.source();
    }
    text
}

/// Prints `error` on stderr as [`error_text`] writes it and returns the failure exit code.
fn exit_with(error: &(dyn std::error::Error + 'static)) -> ExitCode {
    eprintln!("{}", error_text(error));
    ExitCode::FAILURE
}

/// The end of a program's `main` that prints its errors the way `pto` does: `Ok` is
/// success; an error is printed on stderr as [`error_text`] writes it (not as the `Error:
/// {:?}` of a `main` returning `Result`) and exits with code 1.
///
/// ```no_run
/// fn run() -> Result<(), Box<dyn std::error::Error>> {
///     Err("usage: my_tool FILE".into())
/// }
/// fn main() -> std::process::ExitCode {
///     pto_cli::exit_code(run())
/// }
/// ```
pub fn exit_code<E: Into<Box<dyn std::error::Error>>>(result: Result<(), E>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => exit_with(&*e.into()),
    }
}

/// Runs the command line on `args` (the first is the program's name) and returns the
/// report it would print.
///
/// ```
/// use pto_cli as _;
/// let out = pto_cli::run(["pto", "models"]).unwrap();
/// assert!(out.starts_with("built-in models"));
/// ```
///
/// # Errors
///
/// A [`CliError`]: bad arguments, an unknown model, a failing compile or run, or a parity
/// check whose outputs differ.
pub fn run<I, T>(args: I) -> Result<String, CliError>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = Cli::try_parse_from(args)?;
    edge::apply_cpu_threads()?;
    edge::apply_work_budget()?;
    let load = &cli.load;
    match cli.command {
        Command::Ops { json } => listing::ops(json),
        Command::Models { json } => listing::models(json),
        Command::Estimators { json } => listing::estimators(json),
        Command::Export {
            model,
            output,
            json,
        } => model::export(&model, load, &output, json),
        Command::Inspect { model, json } => model::inspect(&model, load, json),
        Command::Import {
            model,
            output,
            json,
        } => model::import(&model, load, output.as_deref(), json),
        Command::Compile {
            model,
            target,
            json,
        } => exec::compile_report(&model, load, &target, json),
        Command::Run {
            model,
            target,
            inputs,
            outputs,
            json,
        } => exec::run(&model, load, &target, &inputs, outputs.as_deref(), json),
        Command::Parity {
            model,
            target,
            reference,
            device,
            budget,
            package,
            inputs,
            json,
        } => exec::parity(
            &model,
            load,
            &exec::ParityTargets {
                target: &target,
                reference: &reference,
                device: device.device,
                budget: &budget,
                package: &package,
            },
            &inputs,
            json,
        ),
        Command::Estimate {
            model,
            device,
            serving,
            plot,
            trace,
            json,
        } => match (&serving.llm, model) {
            _ if serving.published => render(&pto_estimator::llm::published::report()?, json),
            (Some(config), _) => perf::estimate_llm(
                config,
                &serving,
                device.device.as_deref(),
                plot.as_deref(),
                trace.as_deref(),
                json,
            ),
            (None, model) => perf::estimate(
                model.as_deref().unwrap_or_default(),
                load,
                device.device.as_deref(),
                plot.as_deref(),
                trace.as_deref(),
                json,
            ),
        },
        Command::Accuracy {
            device,
            cases,
            json,
        } => perf::accuracy_report(device.device.as_deref(), cases, json),
        Command::Calibrate {
            device,
            output,
            json,
        } => perf::calibrate_report(device.device.as_deref(), output.as_deref(), json),
        Command::Fidelity { json } => render(&fidelity::report()?, json),
        Command::Tune {
            op,
            device,
            shape,
            dtype,
            json,
        } => render(
            &tune::tune(&op, device.device.as_deref(), &shape, &dtype)?,
            json,
        ),
        #[cfg(feature = "device")]
        Command::Package {
            model,
            device,
            output,
            check,
            build,
            capi,
            json,
        } => package::package(
            &model,
            load,
            device.as_deref(),
            (output.as_deref(), check.as_deref()),
            &package::Steps {
                capi,
                toolkit: build.then(edge::toolkit),
            },
            json,
        ),
        #[cfg(feature = "device")]
        Command::Redeploy {
            dir,
            op,
            replace_ascend_c,
            random_cases,
            json,
        } => package::redeploy_package(
            &dir,
            &pto_backends::ascendc::package::RedeployOptions {
                op,
                replace_ascend_c,
                random_cases,
            },
            json,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::error_text;

    /// An error with a message and an optional source.
    #[derive(Debug)]
    struct Chain(&'static str, Option<Box<Chain>>);

    impl core::fmt::Display for Chain {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Chain {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|e| e as _)
        }
    }

    #[test]
    fn a_cause_already_quoted_above_is_left_out() {
        let chain = Chain(
            "building model `m`: reading `w`: disk full",
            Some(Box::new(Chain(
                "reading `w`: disk full",
                Some(Box::new(Chain(
                    "disk full",
                    Some(Box::new(Chain("sector 7 failed", None))),
                ))),
            ))),
        );
        assert_eq!(
            error_text(&chain),
            "error: building model `m`: reading `w`: disk full\n  caused by: sector 7 failed"
        );
        assert_eq!(error_text(&Chain("alone", None)), "error: alone");
    }
}
