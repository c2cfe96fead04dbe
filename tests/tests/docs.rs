//! The guide's pages stay checked: each is a doctest module of this crate, its Rust blocks
//! are compiled, and no page points outside the repository.

use std::fs;
use std::path::{Path, PathBuf};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives in the repository")
        .to_path_buf()
}

/// Every `docs/*.md`, by file name, sorted.
fn pages() -> Vec<String> {
    let dir = repository().join("docs");
    let mut pages: Vec<String> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.expect("a readable directory entry").file_name())
        .map(|name| name.to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .collect();
    pages.sort();
    pages
}

/// The info strings of the fenced blocks of a Markdown text, with their line numbers.
fn fences(text: &str) -> Vec<(usize, String)> {
    let mut open = false;
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if let Some(info) = line.trim_start().strip_prefix("```") {
            if !open {
                found.push((n + 1, info.trim().to_owned()));
            }
            open = !open;
        }
    }
    found
}

#[test]
fn every_page_is_a_doctest_module() {
    let lib = fs::read_to_string(repository().join("tests/src/lib.rs")).expect("tests/src/lib.rs");
    let missing: Vec<String> = pages()
        .into_iter()
        .filter(|page| !lib.contains(&format!("include_str!(\"../../docs/{page}\")")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs pages whose Rust blocks are never compiled: {missing:?}; add a \
         `#[doc = include_str!(\"../../docs/PAGE\")] pub mod page {{}}` for each to the `docs` \
         module of tests/src/lib.rs"
    );
    assert!(pages().contains(&"new-op-crate.md".to_owned()));
}

#[test]
fn every_block_says_what_it_is_and_ignored_rust_says_why() {
    let mut problems = Vec::new();
    for page in pages() {
        let text = fs::read_to_string(repository().join("docs").join(&page)).expect("a page");
        let lines: Vec<&str> = text.lines().collect();
        for (line, info) in fences(&text) {
            if info.is_empty() {
                // rustdoc compiles an unlabelled block as Rust; say which language it is.
                problems.push(format!("docs/{page}:{line}: a block without a language"));
            }
            let ignored = info.split(',').any(|attr| attr.trim() == "ignore");
            // The reason is in the paragraph right before the block (past its `<!-- -->`
            // marker, if any).
            let before: Vec<&str> = lines[..line - 1]
                .iter()
                .rev()
                .skip_while(|l| l.trim().is_empty() || l.trim_start().starts_with("<!--"))
                .take_while(|l| !l.trim().is_empty())
                .copied()
                .collect();
            if ignored && !before.join(" ").contains("not compiled") {
                problems.push(format!(
                    "docs/{page}:{line}: `{info}` needs its reason (\"not compiled: ..\") in the paragraph before"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_page_links_outside_the_repository() {
    let mut texts = vec![("README.md".to_owned(), repository().join("README.md"))];
    texts.extend(
        pages()
            .into_iter()
            .map(|p| (format!("docs/{p}"), repository().join("docs").join(p))),
    );
    let mut problems = Vec::new();
    for (name, path) in texts {
        let text = fs::read_to_string(&path).expect("a page");
        for (n, line) in text.lines().enumerate() {
            for outside in ["../shared", "/work/", "](/"] {
                if line.contains(outside) {
                    problems.push(format!("{name}:{}: `{outside}` is not in a clone", n + 1));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
