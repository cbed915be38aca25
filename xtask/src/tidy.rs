//! `cargo xtask tidy`: checks the invariants of docs/ARCHITECTURE.md that a
//! compiler does not, by reading the library sources (std only, no parsing
//! beyond lines):
//!
//! - only `wgrad-device` calls `submit`, `poll` and `map_async`;
//! - `wgrad-core`, `wgrad-cpu` and `wgrad-autograd` never name wgpu;
//! - library code has no `unwrap()`, `expect(..)`, `panic!`, `todo!`,
//!   `unimplemented!` or `unreachable!` (test modules, comments and doc
//!   examples excepted);
//! - no source file of a library crate is over [`MAX_LINES`] lines;
//! - the crates of [`FULLY_DOCUMENTED`] deny `missing_docs`.

use std::fs;
use std::path::{Path, PathBuf};

/// Longest library source file allowed (lines).
pub const MAX_LINES: usize = 600;

/// Library crates under `crates/` (binaries such as wgrad-bench may unwrap).
const LIBRARY_CRATES: &[&str] = &[
    "wgrad-core",
    "wgrad-device",
    "wgrad-kernels",
    "wgrad-gpu",
    "wgrad-cpu",
    "wgrad-autograd",
    "wgrad-nn",
    // A proc macro, but library code all the same: it reports bad input as
    // `syn::Error`s (compile errors), never by panicking.
    "wgrad-derive",
    "wgrad",
];

/// Library crates whose every public item is documented (`lib.rs` denies
/// `missing_docs`): every crate of [`LIBRARY_CRATES`]; a new library crate
/// belongs in both lists.
const FULLY_DOCUMENTED: &[&str] = &[
    "wgrad-core",
    "wgrad-device",
    "wgrad-kernels",
    "wgrad-gpu",
    "wgrad-cpu",
    "wgrad-autograd",
    "wgrad-nn",
    "wgrad-derive",
    "wgrad",
];

/// Crates that must stay free of wgpu.
const NO_WGPU: &[&str] = &["wgrad-core", "wgrad-cpu", "wgrad-autograd"];

/// Calls only `wgrad-device` may make (the one place that submits and maps).
const DEVICE_ONLY_CALLS: &[&str] = &[".submit(", ".poll(", "map_async("];

/// Calls that abort on bad input instead of returning an error.
const PANICKING: &[&str] = &[
    ".unwrap()",
    ".expect(",
    "panic!(",
    "todo!(",
    "unimplemented!(",
    "unreachable!(",
];

/// One finding: where and what.
pub struct Finding {
    pub path: PathBuf,
    pub line: usize,
    pub what: String,
}

/// Every finding under `root` (the workspace root).
pub fn check(root: &Path) -> Vec<Finding> {
    let mut findings = Vec::new();
    for krate in LIBRARY_CRATES {
        let src = root.join("crates").join(krate).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        files.sort();
        for path in files {
            let Ok(text) = fs::read_to_string(&path) else {
                continue;
            };
            check_file(krate, &path, &text, &mut findings);
        }
        if FULLY_DOCUMENTED.contains(krate) {
            let lib = src.join("lib.rs");
            let denies = fs::read_to_string(&lib)
                .is_ok_and(|text| text.lines().any(|l| l.trim() == "#![deny(missing_docs)]"));
            if !denies {
                findings.push(Finding {
                    path: lib,
                    line: 1,
                    what: format!("{krate} must deny missing_docs (`#![deny(missing_docs)]`)"),
                });
            }
        }
        if NO_WGPU.contains(krate) {
            let manifest = root.join("crates").join(krate).join("Cargo.toml");
            if let Ok(text) = fs::read_to_string(&manifest) {
                for (i, line) in text.lines().enumerate() {
                    if line.trim_start().starts_with("wgpu") {
                        findings.push(Finding {
                            path: manifest.clone(),
                            line: i + 1,
                            what: format!("{krate} must not depend on wgpu"),
                        });
                    }
                }
            }
        }
    }
    findings
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

fn check_file(krate: &str, path: &Path, text: &str, findings: &mut Vec<Finding>) {
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() > MAX_LINES {
        findings.push(Finding {
            path: path.to_path_buf(),
            line: lines.len(),
            what: format!(
                "{} lines; split the file by concern (at most {MAX_LINES})",
                lines.len()
            ),
        });
    }
    for (i, raw) in library_lines(&lines) {
        let line = code_part(raw);
        if line.is_empty() {
            continue;
        }
        let mut flag = |what: String| {
            findings.push(Finding {
                path: path.to_path_buf(),
                line: i + 1,
                what,
            })
        };
        for call in PANICKING {
            if line.contains(call) {
                flag(format!(
                    "`{call}` in library code: return a wgrad_core::Error instead"
                ));
            }
        }
        if krate != "wgrad-device" {
            for call in DEVICE_ONLY_CALLS {
                if line.contains(call) {
                    flag(format!(
                        "`{call}` outside wgrad-device: record through GpuDevice instead"
                    ));
                }
            }
        }
        if NO_WGPU.contains(&krate) && line.contains("wgpu::") {
            flag(format!("{krate} must not name wgpu"));
        }
    }
}

/// The lines of a file that are library code: everything before the first
/// `#[cfg(test)]` item at column 0 (test modules sit at the end of a file,
/// as rustfmt and this project keep them), and nothing of a file that is a
/// test module of its own (`#![cfg(test)]`).
fn library_lines<'a>(lines: &'a [&'a str]) -> impl Iterator<Item = (usize, &'a str)> + 'a {
    let test_file = lines.iter().any(|l| l.starts_with("#![cfg(test)]"));
    lines
        .iter()
        .copied()
        .enumerate()
        .take_while(move |(_, l)| !test_file && !l.starts_with("#[cfg(test)]"))
}

/// A line without its `//` comment (doc comments and their examples
/// included). Good enough for this codebase: `//` inside a string literal
/// only shortens what is checked.
fn code_part(line: &str) -> &str {
    let trimmed = line.trim_start();
    if trimmed.starts_with("//") {
        return "";
    }
    match line.find("//") {
        Some(i) => &line[..i],
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn findings(krate: &str, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        check_file(krate, Path::new("x.rs"), text, &mut out);
        out.into_iter().map(|f| f.what).collect()
    }

    #[test]
    fn flags_panicking_calls_in_library_code_only() {
        let text = "fn f() { x.unwrap(); }\n/// y.unwrap()\n// z.expect(\"\")\n#[cfg(test)]\nmod tests { fn t() { a.unwrap(); } }\n";
        let found = findings("wgrad-nn", text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains(".unwrap()"));
        assert!(findings("wgrad-nn", "let v = r.unwrap_or(0);\n").is_empty());
    }

    #[test]
    fn flags_wgpu_where_it_must_not_be() {
        assert_eq!(findings("wgrad-cpu", "use wgpu::Buffer;\n").len(), 1);
        assert!(findings("wgrad-gpu", "use wgpu::Buffer;\n").is_empty());
        assert_eq!(findings("wgrad-gpu", "b.map_async(m, .., f);\n").len(), 1);
        assert!(findings("wgrad-device", "b.map_async(m, .., f);\n").is_empty());
    }

    #[test]
    fn flags_long_files() {
        let long = "fn f() {}\n".repeat(MAX_LINES + 1);
        assert_eq!(findings("wgrad-core", &long).len(), 1);
    }
}
