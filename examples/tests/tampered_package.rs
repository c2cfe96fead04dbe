//! A package turned against its user (issue 31, feature `device`): a package of `pipeline`
//! (gelu_affine -> rms_norm -> softmax) is written with the real `pto` binary, then tampered
//! with, and every tampering is refused by name or is harmless.
//!
//! The tamperings: a deployed kernel edited with wrong numbers (refused under `--kernels` and
//! `--check` with its parity report, digest forged or not) or to an equivalent one (runs,
//! noted; `pto parity --kernels` checks the model with it); a stem `../../outside/evil` or absolute; a link to `/etc/passwd` inside; a FIFO
//! inside (in place of the manifest, of the kernel text, or beside them); an emptied kernel
//! list; `pto package -o` over a directory of notes with a bogus manifest; a read-only
//! package; and, as the control, an untampered edit that redeploys.
//!
//! Each `pto` run has a 60 s watchdog, so a regression that blocks (on a FIFO, say) fails
//! rather than hangs. Each run that redeploys (or writes a package) runs under `strace -f`
//! when strace is on PATH (on CI, `CI=true`, it must be), and a write-mode open, a creat, a
//! rename, an unlink, a mkdir or a link of a path outside the package's parent directory
//! (which holds the build cache: `XDG_CACHE_HOME` is set there) and the system temp dir fails
//! the test, naming the syscall.

#![cfg(feature = "device")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use pto_backends::ascendc::package::MANIFEST_FILE;
use pto_op::model::kernels::text_digest;

/// The packaged model: three custom ops, each one instance.
const MODEL: &str = "pipeline";

/// How long one `pto` run may take before the test fails it.
const WATCHDOG: Duration = Duration::from_secs(60);

/// A fresh directory under the target's temp dir, removed first if a previous run left it.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("tampered-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// The output of `pto ARGS` run in `cwd`, killed and failed after [`WATCHDOG`].
fn pto(cwd: &Path, args: &[&str]) -> Output {
    pto_command(
        cwd,
        Command::new(env!("CARGO_BIN_EXE_pto")).args(args),
        args,
    )
}

/// The output of `command` (a `pto` run, described by `args`), under the watchdog.
fn pto_command(cwd: &Path, command: &mut Command, args: &[&str]) -> Output {
    let mut child = command
        .current_dir(cwd)
        .env_remove("PTO_DEVICE")
        .env_remove("PTO_TARGET")
        .env("XDG_CACHE_HOME", cwd.join("cache"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let started = Instant::now();
    while child.try_wait().expect("waitable").is_none() {
        if started.elapsed() > WATCHDOG {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`pto {}` ran for over {WATCHDOG:?}: killed", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("its output")
}

/// Stdout and stderr of a run, for messages and matching.
fn text(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr)
}

/// A fresh package of [`MODEL`] at `<scratch>/pkg`: the scratch directory and the package.
fn package(name: &str) -> (PathBuf, PathBuf) {
    let root = scratch(name);
    let out = pto(&root, &["package", MODEL, "-o", "pkg"]);
    assert!(out.status.success(), "pto package: {}", text(&out));
    let dir = root.join("pkg");
    (root, dir)
}

/// Edits the manifest of the package in `dir` as JSON.
fn edit_manifest(dir: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let path = dir.join(MANIFEST_FILE);
    let mut manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("readable"))
            .expect("a JSON manifest");
    edit(&mut manifest);
    std::fs::write(
        &path,
        serde_json::to_string_pretty(&manifest).expect("serialized"),
    )
    .expect("written");
}

/// Replaces `from` by `to` in the deployed kernel (the manifest's) of op number `op`;
/// with `forge_digest`, records the edited text's digest as the traced one, as a tamperer who
/// read the source would.
fn edit_deployed_kernel(dir: &Path, op: usize, from: &str, to: &str, forge_digest: bool) {
    edit_manifest(dir, |manifest| {
        let kernel = &mut manifest["ops"][op]["kernels"][0];
        let text = kernel["text"].as_str().expect("a kernel text");
        assert!(
            text.contains(from),
            "op {op}'s kernel has no `{from}`:\n{text}"
        );
        let edited = text.replace(from, to);
        if forge_digest {
            kernel["traced_digest"] = text_digest(&edited).into();
        }
        kernel["text"] = edited.into();
    });
}

/// The ops of [`MODEL`]'s package, in the manifest's order.
const GELU_AFFINE: usize = 0;
const RMS_NORM: usize = 1;

/// `demo.rms_norm`'s epsilon (1e-6 as f32) in its traced kernel.
const RMS_NORM_EPS: &str = "binary add %5, 9.999999974752427e-7";

#[test]
fn a_deployed_kernel_edited_with_a_wrong_constant_is_refused_under_kernels_with_its_parity() {
    let (root, dir) = package("wrong-constant");
    let ran = pto(
        &root,
        &["run", MODEL, "--target", "sim", "--kernels", "pkg"],
    );
    assert!(ran.status.success(), "as packaged: {}", text(&ran));
    for forge_digest in [false, true] {
        edit_deployed_kernel(
            &dir,
            RMS_NORM,
            RMS_NORM_EPS,
            "binary add %5, 0.5",
            forge_digest,
        );
        for verb in ["run", "compile"] {
            let out = pto(&root, &[verb, MODEL, "--target", "sim", "--kernels", "pkg"]);
            let message = text(&out);
            assert!(!out.status.success(), "{verb} ran the edit: {message}");
            for part in [
                "op `demo.rms_norm`, instance 0 (x=f32[64, 256], gamma=f32[256], eps=1e-6)",
                "it was edited",
                "parity of `demo.rms_norm` (sim vs cpu) failed",
                "max abs error",
                "atol 1e-5",
            ] {
                assert!(message.contains(part), "{verb}: no `{part}` in: {message}");
            }
            assert!(!message.contains("simulated"), "{verb} ran: {message}");
        }
        edit_deployed_kernel(&dir, RMS_NORM, "binary add %5, 0.5", RMS_NORM_EPS, false);
    }
}

#[test]
fn a_deployed_kernel_edited_to_an_equivalent_one_runs_after_passing_parity() {
    let (root, dir) = package("equivalent");
    // The same epsilon, written another way.
    edit_deployed_kernel(
        &dir,
        RMS_NORM,
        RMS_NORM_EPS,
        "binary add %5, 0.000001",
        false,
    );
    let out = pto(
        &root,
        &["run", MODEL, "--target", "sim", "--kernels", "pkg"],
    );
    let message = text(&out);
    assert!(out.status.success(), "{message}");
    assert!(
        message.contains(
            "op `demo.rms_norm`, instance 0 (x=f32[64, 256], gamma=f32[256], eps=1e-6): kernel \
             edited, parity passed"
        ),
        "{message}"
    );
    assert!(message.contains("demo.rms_norm"), "{message}");
    assert!(
        !message.contains("demo.gelu_affine`, instance"),
        "{message}"
    );
}

/// `text` without its first cast to the type its source has already (a copy), every use of
/// the cast reading the source instead: the later tile ids keep their numbers, a gap where
/// the cast was.
fn without_a_copying_cast(text: &str) -> String {
    let mut types: Vec<(&str, &str)> = Vec::new();
    let mut copy: Option<(String, String)> = None;
    let mut lines: Vec<String> = Vec::new();
    for line in text.lines() {
        let definition = line.trim_start().split_once(": ").and_then(|(tile, rest)| {
            let (ty, source) = rest.split_once(" = ")?;
            Some((tile, ty, source))
        });
        if let (None, Some((tile, ty, source))) = (&copy, definition) {
            let from = source.strip_prefix("cast ");
            if let Some(from) = from.filter(|from| types.contains(&(*from, ty))) {
                copy = Some((tile.to_owned(), from.to_owned()));
                continue;
            }
            types.push((tile, ty));
        }
        let line = match &copy {
            Some((cast, from)) => line
                .split(' ')
                .map(|word| match word.strip_suffix(',') {
                    Some(w) if w == cast => format!("{from},"),
                    _ if word == cast => from.clone(),
                    _ => word.to_owned(),
                })
                .collect::<Vec<_>>()
                .join(" "),
            None => line.to_owned(),
        };
        lines.push(line);
    }
    assert!(copy.is_some(), "no copying cast in:\n{text}");
    lines.join("\n") + "\n"
}

#[test]
fn parity_under_kernels_checks_the_model_with_the_deployed_kernels() {
    let (root, dir) = package("parity-kernels");
    let parity = |args: &[&str]| {
        let out = pto(&root, &[&["parity", MODEL, "--json"], args].concat());
        let message = text(&out);
        assert!(out.status.success(), "parity {args:?}: {message}");
        let json: serde_json::Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {message}"));
        (json, String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (traced, _) = parity(&[]);
    let (packaged, notes) = parity(&["--kernels", "pkg"]);
    assert_eq!(
        packaged["outputs"], traced["outputs"],
        "the same kernels as traced"
    );
    assert!(notes.is_empty(), "{notes}");
    // The rms_norm kernel with an instruction deleted (its gamma tile's copy): it loads (the
    // loader checks the edit's parity, and says so), and the model passes parity with it, in
    // less simulated time than with the kernel as traced.
    edit_manifest(&dir, |manifest| {
        let kernel = &mut manifest["ops"][RMS_NORM]["kernels"][0];
        let text = kernel["text"].as_str().expect("a kernel text");
        kernel["text"] = without_a_copying_cast(text).into();
    });
    let (edited, notes) = parity(&["--kernels", "pkg"]);
    assert!(
        notes.contains("op `demo.rms_norm`, instance 0 (x=f32[64, 256], gamma=f32[256], eps=1e-6): kernel edited, parity passed"),
        "{notes}"
    );
    let report = text(&pto(&root, &["parity", MODEL, "--kernels", "pkg"]));
    assert!(
        report.contains("parity of model `pipeline` (sim vs cpu) passed"),
        "{report}"
    );
    let seconds =
        |parity: &serde_json::Value| parity["simulated_seconds"].as_f64().expect("sim time");
    assert!(
        seconds(&edited) < seconds(&packaged),
        "the deletion runs: {} s, as packaged {} s",
        seconds(&edited),
        seconds(&packaged)
    );
}

#[test]
fn check_lists_every_tampered_op() {
    let (root, dir) = package("check-all");
    let out = pto(&root, &["package", MODEL, "--check", "pkg"]);
    assert!(out.status.success(), "as packaged: {}", text(&out));
    edit_deployed_kernel(&dir, RMS_NORM, RMS_NORM_EPS, "binary add %5, 0.5", false);
    edit_deployed_kernel(
        &dir,
        GELU_AFFINE,
        "binary mul %1, 0.5",
        "binary mul %1, 2.0",
        false,
    );
    let out = pto(&root, &["package", MODEL, "--check", "pkg"]);
    let message = text(&out);
    assert!(!out.status.success(), "{message}");
    assert!(message.contains("2 problems"), "{message}");
    for op in ["demo.gelu_affine", "demo.rms_norm"] {
        assert!(
            message.contains(&format!("- the package in `pkg`: op `{op}`, instance 0")),
            "no line for {op}: {message}"
        );
        assert!(
            message.contains(&format!("parity of `{op}` (sim vs cpu) failed")),
            "{message}"
        );
    }
}

// The tampered-package suite: each way issue 31 lists, refused or harmless. Every run that
// redeploys (or writes a package) runs under strace when it is on PATH, and no file outside
// the package's parent directory, the system temp dir and the build cache may be written.

/// The syscalls traced: every one that writes, creates, renames, removes or links a path,
/// and those that change or pass on a process's working directory (to resolve relative
/// paths).
const TRACED: &str = "trace=openat,open,creat,rename,renameat,renameat2,unlink,unlinkat,\
                      mkdir,mkdirat,symlink,symlinkat,link,linkat,chdir,fchdir,clone,clone3,\
                      fork,vfork";

/// Whether strace is on PATH; without it the traced runs run untraced, except on CI
/// (`CI=true`), where that is a failure: CI must have it (scripts/test installs it).
fn strace_available() -> bool {
    let found = Command::new("strace")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        assert!(
            std::env::var("CI").map_or(true, |ci| ci != "true"),
            "strace is not on PATH, and CI=true: the tampered-package tests trace what `pto \
             redeploy` writes; install it (`apt-get install -y strace`, as scripts/test does)"
        );
        eprintln!("strace is not on PATH: the writes of `pto` runs are not traced");
    }
    found
}

/// `pto ARGS` in `root` (the package's parent), traced with strace when it is available, and
/// checked to write nothing outside `root` (which holds the build cache, `root/cache`) and
/// the system temp dir. The run's output, and the number of path-writing syscalls checked.
fn pto_traced(root: &Path, args: &[&str]) -> (Output, usize) {
    if !strace_available() {
        return (pto(root, args), 0);
    }
    let log = root.join(format!("strace-{}.log", args.join("-").replace('/', "_")));
    let mut command = Command::new("strace");
    command
        .args(["-f", "-y", "-qq", "-e", TRACED, "-o"])
        .arg(&log)
        .arg(env!("CARGO_BIN_EXE_pto"))
        .args(args);
    let output = pto_command(root, &mut command, args);
    // strace runs but may not trace (no ptrace in a container): say so, not a missing match.
    let trace = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        trace.contains("openat("),
        "strace traced nothing of `pto {}` (is ptrace permitted here?): {}",
        args.join(" "),
        text(&output)
    );
    let root = root.canonicalize().expect("the scratch dir");
    let temp = std::env::temp_dir().canonicalize().expect("the temp dir");
    let allowed = [root.clone(), temp];
    let writes = written_paths(&trace, &root);
    let outside: Vec<&(PathBuf, String)> = writes
        .iter()
        .filter(|(path, _)| !allowed.iter().any(|dir| path.starts_with(dir)))
        .collect();
    assert!(
        outside.is_empty(),
        "`pto {}` wrote outside {allowed:?}:\n{}",
        args.join(" "),
        outside
            .iter()
            .map(|(path, line)| format!("{}: {line}", path.display()))
            .collect::<Vec<_>>()
            .join("\n")
    );
    eprintln!(
        "`pto {}`: {} syscalls traced, {} of them writing a path, none outside {allowed:?}",
        args.join(" "),
        trace.lines().count(),
        writes.len()
    );
    (output, writes.len())
}

/// Every path an `strace -f -y` log shows written (a write-mode open, a creat, a rename's
/// both ends, an unlink, a mkdir, a link's or symlink's new name), resolved against each
/// process's working directory (`cwd` for the first), with the syscall's line.
fn written_paths(trace: &str, cwd: &Path) -> Vec<(PathBuf, String)> {
    let mut cwds: std::collections::HashMap<String, PathBuf> = Default::default();
    let mut pending: std::collections::HashMap<String, String> = Default::default();
    let mut writes = Vec::new();
    for line in trace.lines() {
        let Some((pid, call)) = line.split_once(' ') else {
            continue;
        };
        let call = call.trim_start();
        if call.starts_with("---") || call.starts_with("+++") {
            continue;
        }
        // A syscall interrupted by another process's: its start, then `<... name resumed>`.
        let call = if let Some(start) = call.strip_suffix("<unfinished ...>") {
            pending.insert(pid.to_owned(), start.to_owned());
            continue;
        } else if call.starts_with("<...") {
            let rest = call.split_once("resumed>").map_or("", |(_, rest)| rest);
            pending.remove(pid).unwrap_or_default() + rest
        } else {
            call.to_owned()
        };
        let Some((name, rest)) = call.split_once('(') else {
            continue;
        };
        let Some((args, result)) = rest.rsplit_once(") = ") else {
            continue;
        };
        let args = split_args(args);
        let here = cwds.get(pid).cloned().unwrap_or_else(|| cwd.to_path_buf());
        // `-y` shows the working directory with every `AT_FDCWD`: the process's own.
        if let Some(dir) = args
            .iter()
            .find_map(|a| a.strip_prefix("AT_FDCWD<")?.strip_suffix('>'))
        {
            cwds.insert(pid.to_owned(), PathBuf::from(dir));
        }
        let path = |dirfd: Option<usize>, index: usize| -> Option<PathBuf> {
            let relative = unquote(args.get(index)?)?;
            let base = dirfd
                .and_then(|d| args.get(d))
                .and_then(|a| Some(PathBuf::from(a.split_once('<')?.1.strip_suffix('>')?)))
                .unwrap_or_else(|| here.clone());
            Some(normalize(&base.join(relative)))
        };
        let write_mode = |flags: Option<&String>| {
            flags.is_some_and(|f| {
                ["O_WRONLY", "O_RDWR", "O_CREAT"]
                    .iter()
                    .any(|w| f.contains(w))
            })
        };
        let written: Vec<Option<PathBuf>> = match name {
            "open" if write_mode(args.get(1)) => vec![path(None, 0)],
            "openat" if write_mode(args.get(2)) => vec![path(Some(0), 1)],
            "creat" | "unlink" | "mkdir" => vec![path(None, 0)],
            "unlinkat" | "mkdirat" => vec![path(Some(0), 1)],
            "rename" => vec![path(None, 0), path(None, 1)],
            "renameat" | "renameat2" => vec![path(Some(0), 1), path(Some(2), 3)],
            "symlink" | "link" => vec![path(None, 1)],
            "symlinkat" => vec![path(Some(1), 2)],
            "linkat" => vec![path(Some(2), 3)],
            "chdir" if result.starts_with('0') => {
                if let Some(dir) = path(None, 0) {
                    cwds.insert(pid.to_owned(), dir);
                }
                continue;
            }
            "fchdir" if result.starts_with('0') => {
                if let Some(dir) = args
                    .first()
                    .and_then(|a| a.split_once('<'))
                    .and_then(|(_, d)| d.strip_suffix('>'))
                {
                    cwds.insert(pid.to_owned(), PathBuf::from(dir));
                }
                continue;
            }
            "clone" | "clone3" | "fork" | "vfork" => {
                if let Some(child) = result.split_whitespace().next()
                    && child.parse::<u32>().is_ok()
                {
                    cwds.entry(child.to_owned()).or_insert(here);
                }
                continue;
            }
            _ => continue,
        };
        for path in written {
            let path = path.unwrap_or_else(|| panic!("an unparsed path in: {line}"));
            writes.push((path, line.to_owned()));
        }
    }
    writes
}

/// The arguments of a syscall as strace prints them, split at top-level commas.
fn split_args(args: &str) -> Vec<String> {
    let (mut parts, mut current, mut depth, mut quoted, mut escaped) =
        (Vec::new(), String::new(), 0_i32, false, false);
    for c in args.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '{' | '[' | '(' | '<' if !quoted => depth += 1,
            '}' | ']' | ')' | '>' if !quoted => depth -= 1,
            ',' if !quoted && depth == 0 => {
                parts.push(current.trim().to_owned());
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    parts.push(current.trim().to_owned());
    parts
}

/// A quoted strace string argument, unescaped; `None` when the argument is no string.
fn unquote(arg: &str) -> Option<String> {
    let body = arg.strip_prefix('"')?;
    let body = &body[..body.rfind('"')?];
    let mut text = String::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => text.push('\n'),
                Some('t') => text.push('\t'),
                Some(other) => text.push(other),
                None => {}
            }
        } else {
            text.push(c);
        }
    }
    Some(text)
}

/// `path` with its `.` and `..` components folded (lexically: no link is followed).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[test]
fn the_write_check_reads_strace_logs() {
    let log = r#"100 mkdir(".", 0777) = -1 EEXIST (File exists)
100 openat(AT_FDCWD</r>, "pkg/a.pto", O_RDONLY|O_CLOEXEC) = 3</r/pkg/a.pto>
100 openat(AT_FDCWD</r>, "/etc/x", O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0666) = 3</etc/x>
100 clone3({flags=CLONE_VM|CLONE_VFORK, exit_signal=SIGCHLD, stack=0x7f, stack_size=0x9000}, 88 <unfinished ...>
101 chdir("/tmp/build") = 0
100 <... clone3 resumed>) = 101
101 mkdir("obj", 0700) = 0
101 unlinkat(3</tmp/build/obj>, "../../../outside", 0) = 0
100 renameat2(AT_FDCWD</r>, "./.pkg.staging", AT_FDCWD</r>, "pkg", RENAME_EXCHANGE) = 0
100 symlink("/etc/passwd", "pkg/link") = 0
101 +++ exited with 0 +++
"#;
    let writes: Vec<String> = written_paths(log, Path::new("/r"))
        .into_iter()
        .map(|(path, _)| path.display().to_string())
        .collect();
    assert_eq!(
        writes,
        [
            "/r",
            "/etc/x",
            "/tmp/build/obj",
            "/outside",
            "/r/.pkg.staging",
            "/r/pkg",
            "/r/pkg/link"
        ]
    );
}

/// Every file under `dir`, by path relative to it, with its bytes (a link as its target).
fn snapshot(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, files: &mut std::collections::BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).expect("readable") {
            let path = entry.expect("an entry").path();
            let relative = path.strip_prefix(root).expect("inside").to_path_buf();
            let kind = std::fs::symlink_metadata(&path)
                .expect("a file type")
                .file_type();
            if kind.is_symlink() {
                let target = std::fs::read_link(&path).expect("a link");
                files.insert(relative, target.display().to_string().into_bytes());
            } else if kind.is_dir() {
                walk(root, &path, files);
            } else if kind.is_file() {
                files.insert(relative, std::fs::read(&path).expect("readable"));
            } else {
                files.insert(relative, b"(not a regular file)".to_vec());
            }
        }
    }
    let mut files = std::collections::BTreeMap::new();
    walk(dir, dir, &mut files);
    files
}

/// `pto redeploy pkg` (traced) in `root` is refused with a message holding every one of
/// `parts`, and changes nothing in the package.
fn assert_redeploy_refused(root: &Path, parts: &[&str]) {
    let dir = root.join("pkg");
    let before = snapshot(&dir);
    let (out, _) = pto_traced(root, &["redeploy", "pkg"]);
    let message = text(&out);
    assert!(!out.status.success(), "redeployed: {message}");
    for part in parts {
        assert!(message.contains(part), "no `{part}` in: {message}");
    }
    assert_eq!(
        snapshot(&dir),
        before,
        "the refused redeploy changed the package"
    );
}

/// `pto ARGS` in `root` (traced) fails with a message holding every one of `parts`.
fn assert_refused(root: &Path, args: &[&str], parts: &[&str]) {
    let (out, _) = pto_traced(root, args);
    let message = text(&out);
    assert!(
        !out.status.success(),
        "`pto {}` ran: {message}",
        args.join(" ")
    );
    for part in parts {
        assert!(
            message.contains(part),
            "`pto {}`: no `{part}` in: {message}",
            args.join(" ")
        );
    }
}

const RUN_WITH_KERNELS: [&str; 6] = ["run", MODEL, "--target", "sim", "--kernels", "pkg"];
const CHECK: [&str; 4] = ["package", MODEL, "--check", "pkg"];

/// Edits the editable kernel text of `demo.rms_norm`, replacing `from` by `to`.
fn edit_kernel_text(dir: &Path, from: &str, to: &str) {
    let file = dir.join("op_kernel/demo_rms_norm.pto");
    let text = std::fs::read_to_string(&file).expect("readable");
    assert!(text.contains(from), "no `{from}` in {}", file.display());
    std::fs::write(&file, text.replace(from, to)).expect("edited");
}

#[test]
fn a_stem_that_leaves_the_package_is_refused_and_nothing_is_written_outside() {
    for (case, stem, reason) in [
        (
            "stem-dotdot",
            "../../outside/evil".to_owned(),
            "has a `..` component, which leaves the package",
        ),
        (
            "stem-absolute",
            std::env::temp_dir()
                .join("pto-tampered-evil")
                .display()
                .to_string(),
            "is an absolute path, outside the package",
        ),
    ] {
        let (root, dir) = package(case);
        // An edit, so that a redeploy that followed the stem would write there.
        edit_kernel_text(&dir, RMS_NORM_EPS, "binary add %5, 0.000001");
        edit_manifest(&dir, |manifest| {
            manifest["ops"][RMS_NORM]["stem"] = stem.clone().into()
        });
        let parts = ["ops[1].stem (op `demo.rms_norm`)", stem.as_str(), reason];
        assert_redeploy_refused(&root, &parts);
        assert_refused(&root, &RUN_WITH_KERNELS, &parts);
        assert_refused(&root, &CHECK, &parts);
        // Where a redeploy that followed the stem would write the op's files.
        for extension in ["pto", "cpp"] {
            let target = normalize(&dir.join("op_kernel").join(format!("{stem}.{extension}")));
            assert!(!target.exists(), "{case}: {} was written", target.display());
        }
    }
}

#[cfg(unix)]
#[test]
fn a_link_to_etc_passwd_inside_the_package_is_refused_not_followed() {
    let passwd = std::fs::read("/etc/passwd").expect("/etc/passwd is readable");
    // In place of the kernel text a redeploy reads, and as another file it would copy.
    for (case, link, parts) in [
        (
            "link-kernel-text",
            "op_kernel/demo_rms_norm.pto",
            vec![
                "a symbolic link (to `/etc/passwd`)",
                "a package holds no links",
            ],
        ),
        (
            "link-other-file",
            "op_kernel/notes",
            vec![
                "`pkg/op_kernel/notes` is a symbolic link",
                "so it is refused",
            ],
        ),
    ] {
        let (root, dir) = package(case);
        edit_kernel_text(&dir, RMS_NORM_EPS, "binary add %5, 0.000001");
        let path = dir.join(link);
        let _ = std::fs::remove_file(&path);
        std::os::unix::fs::symlink("/etc/passwd", &path).expect("a link");
        assert_redeploy_refused(&root, &parts);
        assert_eq!(std::fs::read("/etc/passwd").expect("readable"), passwd);
    }
}

#[cfg(unix)]
#[test]
fn a_fifo_inside_the_package_is_refused_by_name_not_blocked_on() {
    for (case, fifo, parts) in [
        (
            "fifo-kernel-text",
            "op_kernel/demo_rms_norm.pto",
            vec!["reading the kernel source", "a FIFO (named pipe)"],
        ),
        (
            "fifo-manifest",
            MANIFEST_FILE,
            vec!["reading the package manifest", "a FIFO (named pipe)"],
        ),
        (
            "fifo-other-file",
            "op_kernel/notes",
            vec!["`pkg/op_kernel/notes` is a FIFO", "so it is refused"],
        ),
    ] {
        let (root, dir) = package(case);
        if fifo != "op_kernel/demo_rms_norm.pto" {
            // An edit, so that the redeploy goes on to copy the package.
            edit_kernel_text(&dir, RMS_NORM_EPS, "binary add %5, 0.000001");
        }
        let path = dir.join(fifo);
        let _ = std::fs::remove_file(&path);
        let status = Command::new("mkfifo").arg(&path).status().expect("mkfifo");
        assert!(status.success(), "mkfifo {}", path.display());
        assert_redeploy_refused(&root, &parts);
        if fifo == MANIFEST_FILE {
            assert_refused(&root, &RUN_WITH_KERNELS, &parts);
            assert_refused(&root, &CHECK, &parts);
        }
    }
}

#[test]
fn an_emptied_kernel_list_is_refused_not_traced_again() {
    let (root, dir) = package("emptied");
    edit_manifest(&dir, |manifest| {
        manifest["ops"][RMS_NORM]["kernels"] = serde_json::Value::Array(Vec::new());
    });
    let parts = [
        "demo.rms_norm",
        "has 1 instance(s) and 0 deployed kernel(s)",
    ];
    assert_redeploy_refused(&root, &parts);
    assert_refused(&root, &RUN_WITH_KERNELS, &parts);
    assert_refused(&root, &CHECK, &parts);
}

#[test]
fn a_hand_edited_kernel_with_wrong_numbers_is_refused_everywhere() {
    let (root, dir) = package("wrong-numbers");
    // In the editable text: the redeploy's parity refuses it.
    edit_kernel_text(&dir, RMS_NORM_EPS, "binary add %5, 0.5");
    assert_redeploy_refused(
        &root,
        &[
            "parity of `demo.rms_norm` (sim vs cpu) failed",
            "max abs error",
            "the edit is not deployed",
        ],
    );
    // In the manifest's deployed kernel, the digest forged: `--kernels` and `--check`.
    edit_deployed_kernel(&dir, RMS_NORM, RMS_NORM_EPS, "binary add %5, 0.5", true);
    let parts = [
        "op `demo.rms_norm`, instance 0",
        "parity of `demo.rms_norm` (sim vs cpu) failed",
        "max abs error",
    ];
    assert_refused(&root, &RUN_WITH_KERNELS, &parts);
    assert_refused(&root, &CHECK, &parts);
}

#[test]
fn package_o_over_notes_with_a_bogus_manifest_leaves_them() {
    let root = scratch("bogus-manifest");
    let notes = root.join("notes");
    std::fs::create_dir_all(&notes).expect("a directory");
    std::fs::write(notes.join("my_notes.txt"), "mine\n").expect("written");
    std::fs::write(notes.join(MANIFEST_FILE), "{\"bogus\": true}\n").expect("written");
    let before = snapshot(&notes);
    let (out, _) = pto_traced(&root, &["package", MODEL, "-o", "notes"]);
    let message = text(&out);
    assert!(!out.status.success(), "{message}");
    for part in [
        "`notes` is a directory holding a `pto_package.json` that does not parse",
        "not a package directory",
    ] {
        assert!(message.contains(part), "no `{part}` in: {message}");
    }
    assert_eq!(snapshot(&notes), before, "the notes changed");
}

#[cfg(unix)]
#[test]
fn a_read_only_package_is_refused_and_kept() {
    use std::os::unix::fs::PermissionsExt as _;
    let (root, dir) = package("read-only");
    edit_kernel_text(&dir, RMS_NORM_EPS, "binary add %5, 0.000001");
    let kernels = dir.join("op_kernel");
    let set_mode = |mode: u32| {
        std::fs::set_permissions(&kernels, std::fs::Permissions::from_mode(mode)).expect("chmod");
    };
    set_mode(0o555);
    let before = snapshot(&dir);
    let (out, _) = pto_traced(&root, &["redeploy", "pkg"]);
    set_mode(0o755);
    let message = text(&out);
    assert!(!out.status.success(), "{message}");
    assert!(message.contains("read-only"), "{message}");
    assert!(message.contains("pkg/op_kernel"), "{message}");
    assert_eq!(snapshot(&dir), before, "the read-only package changed");
}

#[test]
fn an_untampered_edit_redeploys_and_writes_only_where_it_may() {
    // The control: the write check sees the writes of a redeploy that goes through (the
    // staging copy beside the package, the build cache, the compiler's temporaries).
    let (root, dir) = package("control");
    edit_kernel_text(&dir, RMS_NORM_EPS, "binary add %5, 0.000001");
    let (out, writes) = pto_traced(&root, &["redeploy", "pkg"]);
    assert!(out.status.success(), "{}", text(&out));
    if strace_available() {
        assert!(writes > 10, "only {writes} writes traced");
    }
    let ran = pto(&root, &RUN_WITH_KERNELS);
    assert!(
        text(&ran).contains("kernel edited, parity passed"),
        "{}",
        text(&ran)
    );
}
