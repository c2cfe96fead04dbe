//! The files a user names on the command line, as the built binary treats them: only
//! regular files are read or replaced (issue 31 items 2 and 4). A FIFO, a device, a socket
//! or a directory is refused by name, at once; a symbolic link is followed. Every run is
//! watched: one that is still going after 30 s (a blocked read of a FIFO, an endless read of
//! `/dev/zero`) fails the test instead of hanging it.

#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long one run of the binary may take before it counts as a hang.
const HANG: Duration = Duration::from_secs(30);

/// The exit code and stderr of the built binary run with `args`, killed (and the test
/// failed) when it runs past [`HANG`].
fn pto(args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pto"))
        .args(args)
        .env_remove("PTO_DEVICE")
        .env_remove("PTO_TARGET")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("waitable") {
            let mut stderr = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().expect("piped"), &mut stderr)
                .expect("stderr is text");
            return (status.code(), stderr);
        }
        if start.elapsed() > HANG {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`pto {}` still runs after {HANG:?}", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A fresh directory for one test.
fn dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-files-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("writable");
    dir
}

fn fifo(path: &Path) -> &str {
    let status = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
    path.to_str().expect("UTF-8 path")
}

fn is_fifo(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt as _;
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_fifo())
}

/// The names in `dir`, sorted: what a refused write must leave as it was (no temporary).
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("listable")
        .map(|e| {
            e.expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

#[test]
fn every_output_onto_a_fifo_is_refused_and_the_fifo_kept() {
    let dir = dir("out-fifo");
    let out = |name: &str| dir.join(name);
    let cases: [(&str, Vec<String>); 5] = [
        (
            "model.pto",
            vec!["export".into(), "pipeline".into(), "-o".into()],
        ),
        (
            "model.onnx",
            vec!["export".into(), "pipeline".into(), "-o".into()],
        ),
        (
            "plot.svg",
            vec!["estimate".into(), "pipeline".into(), "--plot".into()],
        ),
        (
            "outputs.safetensors",
            vec!["run".into(), "pipeline".into(), "--outputs".into()],
        ),
        (
            "profile.json",
            vec![
                "calibrate".into(),
                "--device".into(),
                "kirin9030".into(),
                "-o".into(),
            ],
        ),
    ];
    for (name, args) in cases {
        let path = fifo(&out(name)).to_owned();
        let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
        args.push(&path);
        let (code, stderr) = pto(&args);
        assert_eq!(code, Some(1), "{name}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "writing `{path}`: refusing to replace it: it is a FIFO (named pipe), not a \
                 regular file"
            )),
            "{name}: {stderr}"
        );
        assert!(is_fifo(&out(name)), "{name}: the FIFO was replaced");
    }
    let mut expected = vec![
        "model.onnx",
        "model.pto",
        "outputs.safetensors",
        "plot.svg",
        "profile.json",
    ];
    expected.sort_unstable();
    assert_eq!(entries(&dir), expected, "no temporary is left");
}

/// A device node made in the test's directory (`mknod` needs root, as CI has), never the
/// system's `/dev/null`: before the fix, `export -o /dev/null` as root replaced the system's.
#[cfg(target_os = "linux")]
#[test]
fn an_export_onto_a_device_is_refused() {
    use std::os::unix::fs::FileTypeExt as _;
    let dir = dir("out-device");
    let node = dir.join("null");
    let made = Command::new("mknod")
        .arg(&node)
        .args(["c", "1", "3"])
        .output()
        .is_ok_and(|o| o.status.success());
    // Without root, the refusal is checked on the system's node: it comes before any write,
    // and the rename would fail for want of permission anyway.
    let target = if made {
        node.clone()
    } else {
        PathBuf::from("/dev/null")
    };
    let path = target.to_str().expect("UTF-8 path");
    let (code, stderr) = pto(&["export", "pipeline", "-o", path]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "writing `{path}`: refusing to replace it: it is a character device"
        )),
        "{stderr}"
    );
    let kept = std::fs::symlink_metadata(&target).expect("still there");
    assert!(kept.file_type().is_char_device(), "the device was replaced");
    if made {
        assert_eq!(entries(&dir), ["null"]);
    }
}

#[test]
fn an_export_through_a_symbolic_link_replaces_its_target_and_keeps_the_link() {
    let dir = dir("out-link");
    std::fs::create_dir(dir.join("v2")).expect("writable");
    std::fs::write(dir.join("v2/model.pto"), b"an older model").expect("writable");
    std::os::unix::fs::symlink("v2/model.pto", dir.join("model.pto")).expect("can link");
    let link = dir.join("model.pto");
    let link = link.to_str().expect("UTF-8 path");
    let (code, stderr) = pto(&["export", "pipeline", "-o", link]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        std::fs::symlink_metadata(dir.join("model.pto"))
            .expect("exists")
            .file_type()
            .is_symlink(),
        "the link is kept"
    );
    let (code, stderr) = pto(&["inspect", link]);
    assert_eq!(
        code,
        Some(0),
        "the model written through the link loads: {stderr}"
    );
    assert_eq!(entries(&dir.join("v2")), ["model.pto"]);

    std::os::unix::fs::symlink("nowhere/model.onnx", dir.join("dangling.onnx")).expect("link");
    let dangling = dir.join("dangling.onnx");
    let dangling = dangling.to_str().expect("UTF-8 path");
    let (code, stderr) = pto(&["export", "pipeline", "-o", dangling]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "it is a symbolic link to `nowhere/model.onnx`, which does not exist; pto-op does \
             not create the target of a link"
        ),
        "{stderr}"
    );
    assert!(!dir.join("nowhere").exists(), "nothing is created");
}

#[test]
fn inputs_that_are_no_regular_file_are_refused_at_once() {
    let dir = dir("in-special");
    let pipe = fifo(&dir.join("pipe")).to_owned();
    let fifo_error =
        "it is a FIFO (named pipe), not a regular file; pto-op reads only regular files";
    let device_error = "it is a character device, not a regular file";
    let cases: [(Vec<&str>, &str); 6] = [
        (vec!["inspect", &pipe], fifo_error),
        (vec!["run", "pipeline", "--inputs", &pipe], fifo_error),
        (
            vec!["run", "pipeline", "--inputs", "/dev/zero"],
            device_error,
        ),
        (vec!["estimate", "pipeline", "--device", &pipe], fifo_error),
        (
            vec!["estimate", "pipeline", "--device", "/dev/zero"],
            device_error,
        ),
        (
            vec!["run", "pipeline", "--inputs", "/dev/null"],
            device_error,
        ),
    ];
    for (args, expected) in cases {
        let (code, stderr) = pto(&args);
        assert_eq!(code, Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(!stderr.contains("no model file"), "{args:?}: {stderr}");
    }
    assert!(is_fifo(&dir.join("pipe")));
}
