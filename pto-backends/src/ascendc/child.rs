//! The limits the `ascendc-host` target runs its children under: the C++ compiler, and the
//! compiled kernel. Both run code that may come from someone else (a redeployed package's
//! Ascend C, a shipped kernel's lowering), so each runs with a wall-clock timeout, in a
//! process group of its own that is killed whole when it is exceeded, and (on Linux) with an
//! address-space limit (`RLIMIT_AS`) set in the child before it starts.
//!
//! The timeouts can be set from the environment: [`BUILD_TIMEOUT_ENV`] for the compiler,
//! [`RUN_TIMEOUT_ENV`] for the kernel, in seconds.

use std::io::Read;
use std::process::{Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The environment variable that sets the C++ compiler's wall-clock timeout, in seconds.
pub const BUILD_TIMEOUT_ENV: &str = "PTO_HOST_BUILD_TIMEOUT_S";

/// The environment variable that sets the compiled kernel's wall-clock timeout, in seconds.
pub const RUN_TIMEOUT_ENV: &str = "PTO_HOST_RUN_TIMEOUT_S";

/// The limits of one child process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChildLimits {
    /// Wall-clock time until the child (and its process group) is killed.
    pub timeout: Duration,
    /// The child's address-space limit, in bytes (`RLIMIT_AS`; Linux only).
    pub address_space: u64,
}

impl ChildLimits {
    /// The C++ compiler's: 300 s, 4 GiB.
    pub const BUILD: ChildLimits = ChildLimits {
        timeout: Duration::from_secs(300),
        address_space: 4 << 30,
    };

    /// The compiled kernel's: 60 s, 2 GiB.
    pub const RUN: ChildLimits = ChildLimits {
        timeout: Duration::from_secs(60),
        address_space: 2 << 30,
    };

    /// These limits with the timeout `variable` sets, if it is set.
    ///
    /// # Errors
    ///
    /// A message naming the variable and its value when it is not a positive number of
    /// seconds.
    pub fn with_env_timeout(self, variable: &str) -> Result<ChildLimits, String> {
        match std::env::var(variable) {
            Ok(value) => Ok(ChildLimits {
                timeout: parse_timeout(variable, &value)?,
                ..self
            }),
            Err(_) => Ok(self),
        }
    }

    /// The address-space limit as text: `2 GiB`, `256 MiB`.
    pub fn address_space_text(&self) -> String {
        bytes_text(self.address_space)
    }
}

/// A size in bytes as text, in whole MiB or GiB: `2 GiB`, `256 MiB`.
pub(crate) fn bytes_text(bytes: u64) -> String {
    let mib = bytes >> 20;
    if mib >= 1024 && mib.is_multiple_of(1024) {
        format!("{} GiB", mib / 1024)
    } else {
        format!("{mib} MiB")
    }
}

/// The timeout `variable=value` sets: a positive number of seconds.
fn parse_timeout(variable: &str, value: &str) -> Result<Duration, String> {
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|s| *s > 0.0)
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .ok_or_else(|| format!("{variable}={value:?}: expected a positive number of seconds"))
}

/// How a limited child ended.
#[derive(Debug)]
pub(crate) enum Ended {
    /// It exited (or was killed by a signal not ours): its status and output.
    Exited(Output),
    /// It ran past its timeout and was killed, with its process group.
    TimedOut,
}

/// Whether `output` shows the child running out of memory: what a C++ program or the
/// compiler prints when an allocation fails (which the address-space limit makes happen).
pub(crate) fn out_of_memory(output: &Output) -> bool {
    let stderr = String::from_utf8_lossy(&output.stderr);
    [
        "bad_alloc",
        "out of memory",
        "memory exhausted",
        "Cannot allocate memory",
    ]
    .iter()
    .any(|sign| stderr.contains(sign))
}

/// Runs `command` to its end under `limits`, with stdin closed and stdout and stderr
/// collected.
///
/// # Errors
///
/// The system's error when the child cannot be started or waited for.
pub(crate) fn output_limited(
    command: &mut Command,
    limits: &ChildLimits,
) -> std::io::Result<Ended> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    confine(command, limits.address_space);
    let mut child = command.spawn()?;
    let (sender, receiver) = mpsc::channel();
    for (index, pipe) in [
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .enumerate()
    {
        let sender = sender.clone();
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                // A read error ends the output there: what was read is still shown.
                let _ = pipe.read_to_end(&mut bytes);
            }
            let _ = sender.send((index, bytes));
        });
    }
    drop(sender);
    let deadline = Instant::now() + limits.timeout;
    let mut pause = Duration::from_millis(1);
    let status: Option<ExitStatus> = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        let now = Instant::now();
        if now >= deadline {
            kill_group(&child);
            // The group is gone; `kill` only reaps the child if it was not in it.
            let _ = child.kill();
            child.wait()?;
            break None;
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(50));
    };
    // The pipes close when the last process holding them ends; one the child left behind
    // outside its group could hold them open, so the output is waited for only a while.
    let mut streams = [Vec::new(), Vec::new()];
    let collect_until = Instant::now() + Duration::from_secs(5);
    for _ in 0..2 {
        let left = collect_until.saturating_duration_since(Instant::now());
        match receiver.recv_timeout(left) {
            Ok((index, bytes)) => streams[index] = bytes,
            Err(_) => break,
        }
    }
    let [stdout, stderr] = streams;
    Ok(match status {
        Some(status) => Ended::Exited(Output {
            status,
            stdout,
            stderr,
        }),
        None => Ended::TimedOut,
    })
}

/// Puts the child of `command` in a process group of its own, with its address space
/// limited to `bytes` (Linux).
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn confine(command: &mut Command, bytes: u64) {
    use std::os::unix::process::CommandExt;
    command.process_group(0);
    // SAFETY: the closure runs in the forked child before `exec`, where only
    // async-signal-safe calls are allowed: it makes two system calls through rustix's raw
    // Linux backend (no allocation, no lock) and touches nothing of the parent's.
    unsafe {
        command.pre_exec(move || {
            use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
            let hard = getrlimit(Resource::As).maximum;
            let limit = hard.map_or(bytes, |hard| hard.min(bytes));
            setrlimit(
                Resource::As,
                Rlimit {
                    current: Some(limit),
                    maximum: Some(limit),
                },
            )
            .map_err(std::io::Error::from)
        });
    }
}

/// Elsewhere the child gets a process group of its own (Unix) but no address-space limit.
#[cfg(not(target_os = "linux"))]
fn confine(command: &mut Command, _bytes: u64) {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        command.process_group(0);
    }
    #[cfg(not(unix))]
    let _ = command;
}

/// Kills the process group the child leads (the compiler's own children with it).
#[cfg(target_os = "linux")]
fn kill_group(child: &std::process::Child) {
    use rustix::process::{Pid, Signal, kill_process_group};
    // Not reaped yet, so the child's id is still its group's; a failure leaves `kill`.
    let _ = kill_process_group(Pid::from_child(child), Signal::KILL);
}

#[cfg(not(target_os = "linux"))]
fn kill_group(_child: &std::process::Child) {}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut command = Command::new("sh");
        command.arg("-c").arg(script);
        command
    }

    #[test]
    fn a_child_past_its_timeout_is_killed_with_its_group() {
        let limits = ChildLimits {
            timeout: Duration::from_millis(300),
            ..ChildLimits::RUN
        };
        let started = Instant::now();
        // A loop, and a grandchild holding the output pipes: both go.
        let ended =
            output_limited(&mut sh("sleep 600 & while :; do :; done"), &limits).expect("started");
        assert!(matches!(ended, Ended::TimedOut), "{ended:?}");
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "killed after {:?}",
            started.elapsed()
        );
        let ended = output_limited(&mut sh("echo done"), &limits).expect("started");
        let Ended::Exited(output) = ended else {
            panic!("a quick child is not killed: {ended:?}")
        };
        assert_eq!(String::from_utf8_lossy(&output.stdout), "done\n");
        assert!(output.status.success());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_child_runs_under_its_address_space_limit() {
        let limits = ChildLimits {
            address_space: 256 << 20,
            ..ChildLimits::RUN
        };
        assert_eq!(limits.address_space_text(), "256 MiB");
        let Ended::Exited(output) = output_limited(&mut sh("ulimit -v"), &limits).expect("ran")
        else {
            panic!("`ulimit -v` timed out")
        };
        // `ulimit -v` reports KiB.
        assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "262144");
    }

    #[test]
    fn a_timeout_is_a_positive_number_of_seconds() {
        assert_eq!(
            parse_timeout(RUN_TIMEOUT_ENV, " 2.5"),
            Ok(Duration::from_millis(2500))
        );
        for value in ["0", "-1", "soon", ""] {
            let err = parse_timeout(RUN_TIMEOUT_ENV, value).expect_err(value);
            assert_eq!(
                err,
                format!("{RUN_TIMEOUT_ENV}={value:?}: expected a positive number of seconds")
            );
        }
    }
}
