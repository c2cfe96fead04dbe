//! The command line's edge: the one place that reads the environment. `PTO_TARGET` and
//! `PTO_DEVICE` stand in for `--target` and `--device`, `PTO_CPU_THREADS` sets the CPU
//! fast paths' threads, `PTO_WORK_BUDGET` the kernels' work budget; the libraries below
//! take a [`TargetConfig`], a [`DeviceProfile`], `pto_backends::cpu::set_threads` and
//! `pto_op::kernel::validate::set_work_budget`, and read no environment.

use pto_op::DeviceProfile;
use pto_op::target::TargetConfig;

/// The environment variable that names the target when no `--target` does.
pub const TARGET_ENV: &str = "PTO_TARGET";

/// The environment variable that names the device profile (or a profile file) when no
/// `--device` does.
pub const DEVICE_ENV: &str = "PTO_DEVICE";

/// The environment variable that sets the number of threads of the CPU fast paths
/// (`pto_backends::cpu::set_threads`); unset: every core.
pub const CPU_THREADS_ENV: &str = "PTO_CPU_THREADS";

/// Sets the CPU fast paths' threads from [`CPU_THREADS_ENV`], when it is set.
///
/// # Errors
///
/// A value that is not a positive integer, named.
pub fn apply_cpu_threads() -> Result<(), crate::CliError> {
    let Some(value) = or_env(None, CPU_THREADS_ENV) else {
        return Ok(());
    };
    match value.trim().parse::<usize>() {
        Ok(threads) if threads >= 1 => {
            pto_backends::cpu::set_threads(threads);
            Ok(())
        }
        _ => Err(crate::CliError::CpuThreads { value }),
    }
}

/// The environment variable that sets the kernels' work budget, the most instructions a
/// kernel may execute over its grid (`pto_op::kernel::validate::set_work_budget`); unset:
/// [`DEFAULT_WORK_BUDGET`](pto_op::kernel::validate::DEFAULT_WORK_BUDGET).
pub const WORK_BUDGET_ENV: &str = "PTO_WORK_BUDGET";

/// Sets the kernels' work budget from [`WORK_BUDGET_ENV`], when it is set.
///
/// # Errors
///
/// A value that is not a positive integer, named.
pub fn apply_work_budget() -> Result<(), crate::CliError> {
    let Some(value) = or_env(None, WORK_BUDGET_ENV) else {
        return Ok(());
    };
    match value.trim().replace('_', "").parse::<u64>() {
        Ok(budget) if budget >= 1 => {
            pto_op::kernel::validate::set_work_budget(budget);
            Ok(())
        }
        _ => Err(crate::CliError::WorkBudget { value }),
    }
}

/// The target used when neither `--target` nor [`TARGET_ENV`] names one.
pub const DEFAULT_TARGET: &str = "cpu";

/// The device used when neither `--device` nor [`DEVICE_ENV`] names one, by the verbs
/// that need one (estimate, accuracy, calibrate); targets use their own default.
pub const DEFAULT_DEVICE: &str = pto_backends::sim::DEFAULT_DEVICE;

/// `requested`, else the non-empty value of the variable `env`.
fn or_env(requested: Option<&str>, env: &str) -> Option<String> {
    requested
        .map(str::to_owned)
        .or_else(|| std::env::var(env).ok().filter(|value| !value.is_empty()))
}

/// The device profile `--device` (else `PTO_DEVICE`) names, if either does.
///
/// # Errors
///
/// When the name is no built-in profile and no readable profile file.
pub fn requested_device(
    requested: Option<&str>,
) -> Result<Option<DeviceProfile>, pto_op::DeviceError> {
    or_env(requested, DEVICE_ENV)
        .map(|name| DeviceProfile::resolve(&name))
        .transpose()
}

/// The device profile `--device` (else `PTO_DEVICE`, else [`DEFAULT_DEVICE`]) names.
///
/// # Errors
///
/// As [`requested_device`].
pub fn device(requested: Option<&str>) -> Result<DeviceProfile, pto_op::DeviceError> {
    match requested_device(requested)? {
        Some(profile) => Ok(profile),
        None => DeviceProfile::resolve(DEFAULT_DEVICE),
    }
}

/// The target name: `requested`, else `PTO_TARGET`, else [`DEFAULT_TARGET`].
pub fn target_name(requested: Option<&str>) -> String {
    or_env(requested, TARGET_ENV).unwrap_or_else(|| DEFAULT_TARGET.to_owned())
}

/// The target `name` on the device `--device` (else `PTO_DEVICE`) names, else on the
/// target's own default device.
///
/// # Errors
///
/// As [`requested_device`].
pub fn target_config(
    name: &str,
    device: Option<&str>,
) -> Result<TargetConfig, pto_op::DeviceError> {
    let config = TargetConfig::new(name);
    Ok(match requested_device(device)? {
        Some(profile) => config.on(profile),
        None => config,
    })
}

/// The CANN toolkit's directory, from `ASCEND_HOME_PATH` (what `pto package --build` builds
/// with); `None` when unset.
#[cfg(feature = "device")]
pub fn toolkit() -> Option<std::path::PathBuf> {
    std::env::var_os(pto_backends::ascendc::package::TOOLKIT_ENV).map(std::path::PathBuf::from)
}
