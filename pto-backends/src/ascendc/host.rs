//! The `ascendc-host` execution target: each op call's kernel lowered to Ascend C, compiled
//! with the system C++ compiler against the host implementation of the Ascend C API
//! (`pto-backends/ascendc/include/`), and run as a subprocess, every block of the grid in
//! turn.
//!
//! - The SoC and buffer sizes come from the target configuration's device profile (default
//!   `kirin9030`, like `sim`: `--target ascendc-host --device ascend910b` chooses another);
//!   the profile must be one of a known SoC ([`Soc`]).
//! - The compiler is `CXX`, else `g++`, run as `-std=c++17 -O1` (`CXX` is the one variable
//!   read here: the conventional name of the C++ compiler, as build tools read it).
//! - Builds are cached on disk by a hash of every source and flag, under
//!   `$XDG_CACHE_HOME/pto-op/ascendc-host`, else `$HOME/.cache/pto-op/ascendc-host`, else
//!   `pto-op-ascendc-host-<uid>` in the system temp directory ([`AscendcHost::new`] takes
//!   another); a cache directory that is not this user's own, or that others may write, is
//!   refused, since its binaries are run. Each build is made in a private directory that
//!   appears in the cache by an atomic rename, so concurrent processes share it safely.
//! - The compiler and the compiled kernel run under limits ([`ChildLimits`]): a wall-clock
//!   timeout (300 s and 60 s; `PTO_HOST_BUILD_TIMEOUT_S`, `PTO_HOST_RUN_TIMEOUT_S`) and an
//!   address-space limit (4 GiB and 2 GiB), in a process group killed whole at the timeout.
//! - Inputs and outputs go through files in a fresh private directory per call.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

use pto_op::__private::linkme;
use pto_op::kernel::ValidProgram;
use pto_op::target::TargetDef;
use pto_op::{
    Attributes, DeviceProfile, Execution, Executor, Lowering, OpDef, OpError, Tensor, TensorError,
    TensorType,
};

use super::child::{
    BUILD_TIMEOUT_ENV, ChildLimits, Ended, RUN_TIMEOUT_ENV, out_of_memory, output_limited,
};
use super::{LowerError, LoweredKernel, Soc, lower_program, lower_with_profile};
use crate::cpu::Cpu;
use crate::instances::InstanceCache;

/// The headers of the host implementation, by path under `include/`.
const HEADERS: [(&str, &str); 9] = [
    (
        "kernel_operator.h",
        include_str!("../../ascendc/include/kernel_operator.h"),
    ),
    (
        "ascendc_host/common.h",
        include_str!("../../ascendc/include/ascendc_host/common.h"),
    ),
    (
        "ascendc_host/pipes.h",
        include_str!("../../ascendc/include/ascendc_host/pipes.h"),
    ),
    (
        "ascendc_host/tensor.h",
        include_str!("../../ascendc/include/ascendc_host/tensor.h"),
    ),
    (
        "ascendc_host/copy.h",
        include_str!("../../ascendc/include/ascendc_host/copy.h"),
    ),
    (
        "ascendc_host/vector.h",
        include_str!("../../ascendc/include/ascendc_host/vector.h"),
    ),
    (
        "ascendc_host/logic.h",
        include_str!("../../ascendc/include/ascendc_host/logic.h"),
    ),
    (
        "ascendc_host/sort.h",
        include_str!("../../ascendc/include/ascendc_host/sort.h"),
    ),
    (
        "ascendc_host/cube.h",
        include_str!("../../ascendc/include/ascendc_host/cube.h"),
    ),
];

/// The profile the target uses when `PTO_DEVICE` is not set.
pub const DEFAULT_DEVICE: &str = "kirin9030";

#[linkme::distributed_slice(pto_op::__private::TARGETS)]
#[linkme(crate = pto_op::__private::linkme)]
static ASCENDC_HOST_TARGET: TargetDef = TargetDef {
    name: "ascendc-host",
    description: "each op's #[kernel] lowered to Ascend C and run on the host against the \
                  host implementation of the Ascend C API (default kirin9030; compiler CXX, \
                  else g++)",
    make: |device| Box::new(AscendcHost::on(device)),
    source: pto_op::source_location!(),
};

/// An error of the `ascendc-host` target.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// The kernel could not be lowered.
    #[error(transparent)]
    Lower(#[from] LowerError),
    /// The target has no usable device profile or SoC.
    #[error("the ascendc-host target has no device: {0}")]
    Device(String),
    /// The C++ compiler could not be started.
    #[error("starting the C++ compiler `{compiler}` (set CXX to choose another)")]
    CompilerMissing {
        /// The compiler command.
        compiler: String,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// The generated sources did not compile.
    #[error(
        "op `{op}`: the generated Ascend C sources in {dir} did not compile with `{compiler}` \
         ({status}):\n{stderr}"
    )]
    Compile {
        /// The op.
        op: String,
        /// The compiler command.
        compiler: String,
        /// Where the sources are.
        dir: String,
        /// The exit status.
        status: String,
        /// The compiler's diagnostics (the first lines).
        stderr: String,
    },
    /// The compiled kernel broke a rule of the device, or failed otherwise.
    #[error("op `{op}`: the generated kernel failed on the host ({status}): {message}")]
    Run {
        /// The op.
        op: String,
        /// The exit status.
        status: String,
        /// The host implementation's report (`ascendc-host: block B: inst N (...): API:
        /// rule: detail`).
        message: String,
    },
    /// The compiler or the compiled kernel ran past its wall-clock limit and was killed.
    #[error(
        "op `{op}`: {action} `{}` took longer than its wall-clock limit of {limit:?}, so it \
         was killed with its process group (set {variable} to a number of seconds to allow \
         more)",
        file.display()
    )]
    TimedOut {
        /// The op.
        op: String,
        /// `compiling` or `running`.
        action: &'static str,
        /// The source compiled or the binary run.
        file: PathBuf,
        /// The limit exceeded.
        limit: Duration,
        /// The environment variable that sets it.
        variable: &'static str,
    },
    /// The compiler or the compiled kernel ran out of memory under its address-space limit.
    #[error(
        "op `{op}`: {action} `{}` exceeded its address-space limit of {} and failed: \
         {message}",
        file.display(),
        super::child::bytes_text(*limit)
    )]
    MemoryLimit {
        /// The op.
        op: String,
        /// `compiling` or `running`.
        action: &'static str,
        /// The source compiled or the binary run.
        file: PathBuf,
        /// The limit, in bytes.
        limit: u64,
        /// The exit status, then what it printed (the first lines of its errors).
        message: String,
    },
    /// A setting of the target is not valid (an environment variable).
    #[error("the ascendc-host target: {0}")]
    Setting(String),
    /// The build cache directory is not this user's own private one: its binaries would be
    /// run, so it is not used.
    #[error(
        "the ascendc-host build cache `{}` {why}; its builds are run, so it is not used: \
         remove it, or set XDG_CACHE_HOME to a directory of your own",
        dir.display()
    )]
    UntrustedCache {
        /// The cache directory.
        dir: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// A file of the build or of a run could not be written or read.
    #[error("{path}")]
    Io {
        /// The file or directory.
        path: String,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// An output file does not hold the output's shape and dtype.
    #[error("op `{op}`: output `{output}` of the host run")]
    Output {
        /// The op.
        op: String,
        /// The output.
        output: String,
        /// The error.
        #[source]
        source: TensorError,
    },
}

impl HostError {
    /// The error as an [`OpError`] of `op`, with its causes in the message.
    pub fn into_op_error(self, op: &str) -> OpError {
        let mut message = self.to_string();
        let mut source = std::error::Error::source(&self);
        while let Some(cause) = source {
            message.push_str(": ");
            message.push_str(&cause.to_string());
            source = cause.source();
        }
        let prefix = format!("op `{op}`: ");
        OpError::Unsupported {
            op: op.to_owned(),
            message: format!(
                "ascendc-host: {}",
                message.strip_prefix(&prefix).unwrap_or(&message)
            ),
        }
    }
}

/// A kernel lowered and compiled.
#[derive(Debug)]
pub struct HostBuild {
    /// The lowered kernel.
    pub kernel: LoweredKernel,
    /// The build directory: `<entry>.cpp`, `<entry>_tiling.h`, `main.cpp`, `include/`.
    pub dir: PathBuf,
    /// The compiled harness.
    pub binary: PathBuf,
    /// Whether this call compiled it (false: found in the cache).
    pub compiled: bool,
}

/// The `ascendc-host` target.
///
/// ```no_run
/// use pto_backends::ascendc::AscendcHost;
/// use pto_op::{DType, Executor, Tensor};
/// let host = AscendcHost::on(None);
/// let x = Tensor::random([4, 64], DType::F32, 1);
/// let y = host.execute(pto_op::ops::add::def(), &[&x, &x], &Default::default()).unwrap();
/// assert_eq!(y.outputs[0].dims(), &[4, 64]);
/// ```
#[derive(Debug)]
pub struct AscendcHost {
    device: Result<(DeviceProfile, Soc), String>,
    compiler: String,
    cache_dir: PathBuf,
    /// The compiler's limits, or why the environment's are not valid.
    build_limits: Result<ChildLimits, String>,
    /// The compiled kernel's limits, or why the environment's are not valid.
    run_limits: Result<ChildLimits, String>,
    /// Compiled builds by op instance.
    builds: InstanceCache<HostBuild>,
}

impl AscendcHost {
    /// The target on `device`, else on the built-in [`DEFAULT_DEVICE`]: what the
    /// `ascendc-host` target of a [`pto_op::target::TargetConfig`] makes. The compiler is
    /// `CXX`, else `g++`; builds are cached in the user's cache directory; the limits are
    /// [`ChildLimits::BUILD`] and [`ChildLimits::RUN`] with the environment's timeouts.
    /// Should the profile be of no known SoC, or a timeout variable not be a number of
    /// seconds, every call fails with that error.
    pub fn on(device: Option<&DeviceProfile>) -> AscendcHost {
        let profile = match device {
            Some(profile) => Ok(profile.clone()),
            None => DeviceProfile::builtin(DEFAULT_DEVICE).map_err(|e| e.to_string()),
        };
        let device = profile.and_then(|profile| match Soc::from_profile_name(&profile.name) {
            Some(soc) => Ok((profile, soc)),
            None => Err(format!(
                "profile `{}` is of no SoC the lowering knows ({})",
                profile.name,
                Soc::profile_names()
            )),
        });
        AscendcHost {
            device,
            compiler: std::env::var("CXX").unwrap_or_else(|_| "g++".to_owned()),
            cache_dir: default_cache_dir(),
            build_limits: ChildLimits::BUILD.with_env_timeout(BUILD_TIMEOUT_ENV),
            run_limits: ChildLimits::RUN.with_env_timeout(RUN_TIMEOUT_ENV),
            builds: InstanceCache::new(),
        }
    }

    /// The target on `profile` (of `soc`), compiling with `compiler`, caching under
    /// `cache_dir`, with the limits of [`AscendcHost::on`].
    pub fn new(profile: DeviceProfile, soc: Soc, compiler: &str, cache_dir: &Path) -> AscendcHost {
        AscendcHost {
            device: Ok((profile, soc)),
            compiler: compiler.to_owned(),
            cache_dir: cache_dir.to_owned(),
            build_limits: ChildLimits::BUILD.with_env_timeout(BUILD_TIMEOUT_ENV),
            run_limits: ChildLimits::RUN.with_env_timeout(RUN_TIMEOUT_ENV),
            builds: InstanceCache::new(),
        }
    }

    /// The target with `build` as the compiler's limits and `run` as the compiled kernel's,
    /// in place of the defaults and the environment's.
    pub fn with_limits(self, build: ChildLimits, run: ChildLimits) -> AscendcHost {
        AscendcHost {
            build_limits: Ok(build),
            run_limits: Ok(run),
            ..self
        }
    }

    /// The SoC the target lowers for, or why it has none.
    pub fn soc(&self) -> Result<Soc, HostError> {
        self.device
            .as_ref()
            .map(|(_, soc)| *soc)
            .map_err(|e| HostError::Device(e.clone()))
    }

    /// Lowers and compiles `op`'s kernel for `inputs` and `attrs` (cached).
    ///
    /// # Errors
    ///
    /// The lowering's, the compiler's or the file system's error.
    pub fn build(
        &self,
        op: &'static OpDef,
        inputs: &[TensorType],
        attrs: &Attributes,
    ) -> Result<Arc<HostBuild>, HostError> {
        let (profile, soc) = self
            .device
            .as_ref()
            .map_err(|e| HostError::Device(e.clone()))?;
        self.builds.get_or_try_insert_with(op, inputs, attrs, || {
            let kernel = lower_with_profile(op, inputs, attrs, *soc, profile)?;
            self.compile(kernel, profile)
        })
    }

    /// Compiles `kernel` (lowered from a shipped program, or with an edited Ascend C
    /// source) and runs it for the calls of `op` on `inputs` with `attrs` from now on, in
    /// place of the op's own kernel.
    ///
    /// # Errors
    ///
    /// The compiler's or the file system's error.
    pub fn use_kernel(
        &self,
        op: &'static OpDef,
        inputs: &[TensorType],
        attrs: &Attributes,
        kernel: LoweredKernel,
    ) -> Result<Arc<HostBuild>, HostError> {
        let (profile, _) = self
            .device
            .as_ref()
            .map_err(|e| HostError::Device(e.clone()))?;
        let build = self.compile(kernel, profile)?;
        Ok(self.builds.insert(op, inputs, attrs, build))
    }

    /// The device profile and SoC of the target, or why it has none.
    pub fn device(&self) -> Result<(&DeviceProfile, Soc), HostError> {
        self.device
            .as_ref()
            .map(|(p, soc)| (p, *soc))
            .map_err(|e| HostError::Device(e.clone()))
    }

    /// Compiles `kernel` with a generated harness, or finds the build in the cache.
    ///
    /// # Errors
    ///
    /// The compiler's or the file system's error.
    pub fn compile(
        &self,
        kernel: LoweredKernel,
        profile: &DeviceProfile,
    ) -> Result<HostBuild, HostError> {
        let harness = harness(&kernel);
        let b = &profile.buffers;
        let mut flags: Vec<String> = vec![
            "-std=c++17".to_owned(),
            "-O1".to_owned(),
            format!("-DASCENDC_HOST_UB_BYTES={}", b.ub),
            format!("-DASCENDC_HOST_L1_BYTES={}", b.l1),
            format!("-DASCENDC_HOST_L0A_BYTES={}", b.l0a),
            format!("-DASCENDC_HOST_L0B_BYTES={}", b.l0b),
            format!("-DASCENDC_HOST_L0C_BYTES={}", b.l0c),
        ];
        if kernel.kernel_type.declaration().is_some() {
            // The cores of a split AI core run as threads.
            flags.push("-pthread".to_owned());
        }
        let mut hash = Fnv::default();
        hash.write(self.compiler.as_bytes());
        for f in &flags {
            hash.write(f.as_bytes());
        }
        for (path, text) in HEADERS {
            hash.write(path.as_bytes());
            hash.write(text.as_bytes());
        }
        let soc_header = super::capability::host_header(kernel.soc);
        hash.write(soc_header.as_bytes());
        hash.write(kernel.kernel_source.as_bytes());
        hash.write(kernel.tiling_header.as_bytes());
        hash.write(harness.as_bytes());
        let dir = self
            .cache_dir
            .join(format!("{}-{:016x}", kernel.entry, hash.finish()));
        let binary = dir.join("kernel");
        // Checked before a cached binary is trusted.
        self.check_cache()?;
        if binary.is_file() {
            return Ok(HostBuild {
                kernel,
                dir,
                binary,
                compiled: false,
            });
        }
        let io = |path: &Path| {
            let path = path.display().to_string();
            move |source| HostError::Io { path, source }
        };
        let limits = self.build_limits.clone().map_err(HostError::Setting)?;
        let staging = private_dir(&self.cache_dir, &format!(".tmp-{}-", kernel.entry))?;
        let tmp = staging.path().to_path_buf();
        std::fs::create_dir_all(tmp.join("include/ascendc_host")).map_err(io(&tmp))?;
        let source = format!("{}.cpp", kernel.entry);
        let files = [
            (source.clone(), kernel.kernel_source.as_str()),
            (
                format!("{}_tiling.h", kernel.entry),
                kernel.tiling_header.as_str(),
            ),
            ("main.cpp".to_owned(), harness.as_str()),
        ];
        for (name, text) in files {
            let path = tmp.join(name);
            std::fs::write(&path, text).map_err(io(&path))?;
        }
        for (name, text) in HEADERS
            .iter()
            .copied()
            .chain([(super::capability::HOST_HEADER, soc_header.as_str())])
        {
            let path = tmp.join("include").join(name);
            std::fs::write(&path, text).map_err(io(&path))?;
        }
        let mut command = Command::new(&self.compiler);
        command
            .args(&flags)
            .arg("-Iinclude")
            .arg("-I.")
            .arg(&source)
            .arg("main.cpp")
            .arg("-o")
            .arg("kernel")
            .current_dir(&tmp);
        let ended =
            output_limited(&mut command, &limits).map_err(|source| HostError::CompilerMissing {
                compiler: self.compiler.clone(),
                source,
            })?;
        // A failed build stays for the error to point at.
        let tmp = staging.keep();
        let output = limited_output(
            ended,
            &kernel.op,
            "compiling",
            &tmp.join(&source),
            &limits,
            BUILD_TIMEOUT_ENV,
        )?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let shown: Vec<&str> = stderr.lines().take(40).collect();
            return Err(HostError::Compile {
                op: kernel.op.clone(),
                compiler: self.compiler.clone(),
                dir: tmp.display().to_string(),
                status: output.status.to_string(),
                stderr: shown.join("\n"),
            });
        }
        // Another process may have finished the same build first: theirs is as good.
        if std::fs::rename(&tmp, &dir).is_err() && binary.is_file() {
            let _ = std::fs::remove_dir_all(&tmp);
        } else if !binary.is_file() {
            return Err(HostError::Io {
                path: dir.display().to_string(),
                source: std::io::Error::other("the build directory could not be put in place"),
            });
        }
        Ok(HostBuild {
            kernel,
            dir,
            binary,
            compiled: true,
        })
    }

    /// Runs a build on `inputs` and reads its outputs.
    ///
    /// # Errors
    ///
    /// A rule of the device broken by the kernel ([`HostError::Run`]), or a file error.
    pub fn run(&self, build: &HostBuild, inputs: &[&Tensor]) -> Result<Vec<Tensor>, HostError> {
        let io = |path: &Path| {
            let path = path.display().to_string();
            move |source| HostError::Io { path, source }
        };
        let limits = self.run_limits.clone().map_err(HostError::Setting)?;
        let runs = self.cache_dir.join("runs");
        std::fs::create_dir_all(&runs).map_err(io(&runs))?;
        // Removed when dropped, at the end of the run.
        let run_dir = private_dir(&runs, &format!("{}-", build.kernel.entry))?;
        let dir = run_dir.path();
        {
            for (i, t) in inputs.iter().enumerate() {
                let path = dir.join(format!("in{i}.bin"));
                std::fs::write(&path, t.to_le_bytes()).map_err(io(&path))?;
            }
            let mut command = Command::new(&build.binary);
            command.arg(dir).current_dir(dir);
            let ended = output_limited(&mut command, &limits).map_err(io(&build.binary))?;
            let output = limited_output(
                ended,
                &build.kernel.op,
                "running",
                &build.binary,
                &limits,
                RUN_TIMEOUT_ENV,
            )?;
            if !output.status.success() {
                let stderr = String::from_utf8_lossy(&output.stderr);
                let message = stderr
                    .lines()
                    .find(|l| l.starts_with("ascendc-host:"))
                    .map_or_else(|| stderr.trim().to_owned(), str::to_owned);
                return Err(HostError::Run {
                    op: build.kernel.op.clone(),
                    status: output.status.to_string(),
                    message,
                });
            }
            build
                .kernel
                .outputs
                .iter()
                .enumerate()
                .map(|(i, o)| {
                    let path = dir.join(format!("out{i}.bin"));
                    let bytes = std::fs::read(&path).map_err(io(&path))?;
                    Tensor::from_le_bytes(o.dtype, o.shape.as_slice(), &bytes).map_err(|source| {
                        HostError::Output {
                            op: build.kernel.op.clone(),
                            output: o.name.clone(),
                            source,
                        }
                    })
                })
                .collect()
        }
    }

    /// Refuses a build cache directory that is not this user's own private one (Unix): one
    /// another user owns, or that others may write, could hold a planted `kernel` binary
    /// under a build's name, which would then be run.
    fn check_cache(&self) -> Result<(), HostError> {
        let dir = &self.cache_dir;
        std::fs::create_dir_all(dir).map_err(|source| HostError::Io {
            path: dir.display().to_string(),
            source,
        })?;
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::fs::MetadataExt;
            let metadata = std::fs::symlink_metadata(dir).map_err(|source| HostError::Io {
                path: dir.display().to_string(),
                source,
            })?;
            let untrusted = |why: String| HostError::UntrustedCache {
                dir: dir.clone(),
                why,
            };
            if metadata.file_type().is_symlink() {
                return Err(untrusted("is a symbolic link".to_owned()));
            }
            let user = rustix::process::geteuid().as_raw();
            if metadata.uid() != user {
                return Err(untrusted(format!(
                    "is owned by user {}, not by this user ({user})",
                    metadata.uid()
                )));
            }
            if metadata.mode() & 0o022 != 0 {
                return Err(untrusted(format!(
                    "may be written by others (mode {:o})",
                    metadata.mode() & 0o777
                )));
            }
        }
        Ok(())
    }
}

/// A new directory in `parent` only this user may enter, named `<prefix>XXXXXX` (random),
/// removed when dropped.
fn private_dir(parent: &Path, prefix: &str) -> Result<tempfile::TempDir, HostError> {
    let mut builder = tempfile::Builder::new();
    builder.prefix(prefix);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o700));
    }
    builder.tempdir_in(parent).map_err(|source| HostError::Io {
        path: parent.display().to_string(),
        source,
    })
}

/// The output of a child that ended under `limits`, or the error of one that exceeded them:
/// killed at the timeout, or out of memory under the address-space limit.
fn limited_output(
    ended: Ended,
    op: &str,
    action: &'static str,
    file: &Path,
    limits: &ChildLimits,
    variable: &'static str,
) -> Result<Output, HostError> {
    let output = match ended {
        Ended::Exited(output) => output,
        Ended::TimedOut => {
            return Err(HostError::TimedOut {
                op: op.to_owned(),
                action,
                file: file.to_path_buf(),
                limit: limits.timeout,
                variable,
            });
        }
    };
    if !output.status.success() && out_of_memory(&output) {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(HostError::MemoryLimit {
            op: op.to_owned(),
            action,
            file: file.to_path_buf(),
            limit: limits.address_space,
            message: format!(
                "{}; its output:\n{}",
                output.status,
                stderr.lines().take(10).collect::<Vec<_>>().join("\n")
            ),
        });
    }
    Ok(output)
}

impl Executor for AscendcHost {
    fn target(&self) -> &str {
        "ascendc-host"
    }

    fn execute(
        &self,
        op: &'static OpDef,
        inputs: &[&Tensor],
        attrs: &Attributes,
    ) -> Result<Execution, OpError> {
        let types: Vec<TensorType> = inputs
            .iter()
            .map(|t| TensorType {
                shape: t.shape(),
                dtype: t.dtype(),
            })
            .collect();
        let expected = op.infer(&types, attrs)?;
        let build = self
            .build(op, &types, attrs)
            .map_err(|e| e.into_op_error(op.name))?;
        let outputs = self
            .run(&build, inputs)
            .map_err(|e| e.into_op_error(op.name))?;
        op.check_outputs("kernel", &expected, &outputs)?;
        Ok(Execution::untimed(outputs))
    }

    /// Lowers and compiles the kernel; [`Lowering::NoKernel`] for an op without one,
    /// [`Lowering::Declined`] with the lowering's reason for one whose instance the SoC
    /// cannot run ([`LowerError::declines`]: bf16 on Kirin, a call
    /// path the SoC lacks such as an f32 `Mmad` on Kirin).
    fn prepare(
        &self,
        op: &'static OpDef,
        inputs: &[TensorType],
        attrs: &Attributes,
    ) -> Result<Lowering, OpError> {
        op.infer(inputs, attrs)?;
        if op.kernel.is_none() {
            return Ok(Lowering::NoKernel);
        }
        match self.build(op, inputs, attrs) {
            Ok(build) => Ok(Lowering::Kernel {
                grid: build.kernel.grid as usize,
            }),
            Err(HostError::Lower(e)) if e.declines() => Ok(Lowering::Declined {
                reason: e.to_string(),
            }),
            Err(e) => Err(e.into_op_error(op.name)),
        }
    }

    fn device_profile(&self) -> Option<&DeviceProfile> {
        self.device().ok().map(|(profile, _)| profile)
    }

    fn runs_programs(&self) -> bool {
        true
    }

    /// Lowers `program` for the target's SoC, compiles it and runs it for these calls
    /// ([`AscendcHost::use_kernel`]); [`Lowering::Declined`] for an instance whose dtype the
    /// SoC cannot hold, as [`Executor::prepare`] does.
    fn prepare_program(
        &self,
        op: &'static OpDef,
        inputs: &[TensorType],
        attrs: &Attributes,
        program: &ValidProgram,
    ) -> Result<Option<Lowering>, OpError> {
        op.infer(inputs, attrs)?;
        let (profile, soc) = self.device().map_err(|e| e.into_op_error(op.name))?;
        let kernel = match lower_program(program, &op.call_text(inputs, attrs), soc, profile) {
            Ok(kernel) => kernel,
            // As for the op's own kernel: the CPU reference runs an instance the SoC cannot
            // hold (bf16 on Kirin).
            Err(e) if e.declines() => {
                return Ok(Some(Lowering::Declined {
                    reason: e.to_string(),
                }));
            }
            Err(e) => return Err(HostError::from(e).into_op_error(op.name)),
        };
        let build = self
            .use_kernel(op, inputs, attrs, kernel)
            .map_err(|e| e.into_op_error(op.name))?;
        Ok(Some(Lowering::Kernel {
            grid: build.kernel.grid as usize,
        }))
    }

    /// The CPU reference runs the ops without a kernel, as on `sim`.
    fn fallback(&self) -> Option<&dyn Executor> {
        Some(&Cpu)
    }
}

/// The build cache: `$XDG_CACHE_HOME/pto-op/ascendc-host`, else
/// `$HOME/.cache/pto-op/ascendc-host`, else `pto-op-ascendc-host-<uid>` in the system temp
/// directory (a name of this user's: [`AscendcHost::check_cache`] refuses one of another's).
fn default_cache_dir() -> PathBuf {
    let from = |variable: &str| {
        std::env::var_os(variable)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    if let Some(cache) = from("XDG_CACHE_HOME") {
        return cache.join("pto-op").join("ascendc-host");
    }
    if let Some(home) = from("HOME") {
        return home.join(".cache").join("pto-op").join("ascendc-host");
    }
    #[cfg(target_os = "linux")]
    let user = rustix::process::geteuid().as_raw().to_string();
    #[cfg(not(target_os = "linux"))]
    let user = "user".to_owned();
    std::env::temp_dir().join(format!("pto-op-ascendc-host-{user}"))
}

/// FNV-1a, 64 bits: a hash stable across Rust releases, for cache keys.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes.iter().chain(&(bytes.len() as u64).to_le_bytes()) {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// The `main.cpp` that runs `kernel` on the host: inputs from `<dir>/in<i>.bin`, outputs
/// to `<dir>/out<i>.bin`, every block of the grid in turn.
pub fn harness(kernel: &LoweredKernel) -> String {
    let mut out = String::new();
    let entry = &kernel.entry;
    out.push_str(&format!(
        "// Generated by pto-op: the ascendc-host harness of `{}` ({entry}).\n\
         #include <cstdio>\n#include <fstream>\n#include <iterator>\n#include <string>\n\
         #include <vector>\n\n#include \"kernel_operator.h\"\n#include \"{entry}_tiling.h\"\n\n",
        kernel.op
    ));
    let params: Vec<String> = kernel
        .inputs
        .iter()
        .chain(&kernel.outputs)
        .map(|t| format!("GM_ADDR {}", super::lower::c_identifier(&t.name)))
        .collect();
    out.push_str(&format!(
        "extern \"C\" __global__ __aicore__ void {entry}({}, GM_ADDR workspace, GM_ADDR tiling);\n\n",
        params.join(", ")
    ));
    out.push_str(
        r#"static std::vector<uint8_t> ReadInput(const std::string& path, size_t bytes)
{
    std::ifstream file(path, std::ios::binary);
    std::vector<uint8_t> data((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    if (!file.good() && !file.eof()) {
        std::fprintf(stderr, "harness: cannot read %s\n", path.c_str());
        std::exit(2);
    }
    if (data.size() != bytes) {
        std::fprintf(stderr, "harness: %s has %zu bytes, expected %zu\n", path.c_str(), data.size(), bytes);
        std::exit(2);
    }
    return data;
}

static void WriteOutput(const std::string& path, const std::vector<uint8_t>& data)
{
    std::ofstream file(path, std::ios::binary);
    file.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
    if (!file.good()) {
        std::fprintf(stderr, "harness: cannot write %s\n", path.c_str());
        std::exit(2);
    }
}

int main(int argc, char** argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    const std::string dir = argv[1];
"#,
    );
    let mut args = Vec::new();
    for (i, t) in kernel.inputs.iter().enumerate() {
        let bytes = t.shape.iter().product::<usize>() * t.dtype.size_bytes();
        out.push_str(&format!(
            "    std::vector<uint8_t> in{i} = ReadInput(dir + \"/in{i}.bin\", {bytes});  // {}\n",
            t.name
        ));
        args.push(format!("in{i}.data()"));
    }
    for (i, t) in kernel.outputs.iter().enumerate() {
        let bytes = t.shape.iter().product::<usize>() * t.dtype.size_bytes();
        out.push_str(&format!(
            "    std::vector<uint8_t> out{i}({bytes}, 0);  // {}\n",
            t.name
        ));
        args.push(format!("out{i}.data()"));
    }
    out.push_str(&format!("    {} tiling{{}};\n", kernel.tiling_struct));
    for f in &kernel.tiling {
        out.push_str(&format!("    tiling.{} = {};\n", f.name, f.value));
    }
    match kernel.kernel_type.declaration() {
        None => {
            out.push_str("    std::vector<uint8_t> workspace(32, 0);\n");
            out.push_str(&format!(
                "    for (int64_t block = 0; block < {bd}; ++block) {{\n\
                 \x20       AscendC::host::BeginBlock(block, {bd});\n\
                 \x20       {entry}({}, workspace.data(), reinterpret_cast<GM_ADDR>(&tiling));\n\
                 \x20   }}\n",
                args.join(", "),
                bd = kernel.block_dim
            ));
        }
        Some(kernel_type) => {
            // Fresh device memory is not zero: the workspace starts as NaN bytes.
            out.push_str(&format!(
                "    std::vector<uint8_t> workspace({}, 0xff);\n",
                kernel.workspace_bytes.max(32)
            ));
            out.push_str(&format!(
                "    AscendC::host::Launch(\"{entry}\", AscendC::{kernel_type}, {bd}, [&]() {{\n\
                 \x20       {entry}({}, workspace.data(), reinterpret_cast<GM_ADDR>(&tiling));\n\
                 \x20   }});\n",
                args.join(", "),
                bd = kernel.block_dim
            ));
        }
    }
    for i in 0..kernel.outputs.len() {
        out.push_str(&format!(
            "    WriteOutput(dir + \"/out{i}.bin\", out{i});\n"
        ));
    }
    out.push_str("    return 0;\n}\n");
    out
}
