//! Part of `cargo xtask build-kernels`: the copies of `ptx/*.ptx` that a published package needs
//! inside itself.
//!
//! `cargo package` takes only what lies in a package's directory, so a crate whose tests embed
//! PTX (`include_str!`) includes its own copy, under [`PACKAGES`]. The copies are exactly the
//! `.ptx` files the crate's sources and tests name; after `ptx/*.ptx` are written each is copied
//! byte for byte, and a copy nothing names any longer is removed. `--check` fails on a stale,
//! missing or superfluous copy, and on an `include_str!`/`include_bytes!` that reaches outside
//! the package.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use crate::util;

/// `(package directory, directory of its copies)`, relative to the workspace root and to the
/// package.
const PACKAGES: &[(&str, &str)] = &[("cuda-driver", "tests/ptx")];

/// Writes (or with `check` compares) every package's copies; returns the problems found.
pub fn sync(check: bool) -> Vec<String> {
    let mut errors = Vec::new();
    for (package, copies) in PACKAGES {
        if let Err(e) = sync_package(package, copies, check) {
            errors.push(e);
        }
    }
    errors
}

fn sync_package(package: &str, copies: &str, check: bool) -> Result<(), String> {
    let root = util::root();
    let pkg = root.join(package);
    let copy_dir = pkg.join(copies);
    let re = regex::Regex::new(r#"include_(?:str|bytes)!\(\s*"([^"]+)"\s*\)"#).unwrap();
    let mut needed = BTreeSet::new();
    let mut errors = Vec::new();
    let mut files = Vec::new();
    for dir in ["src", "tests"] {
        rust_files(&pkg.join(dir), &mut files)?;
    }
    for file in &files {
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        let rel_file = file
            .strip_prefix(&root)
            .unwrap_or(file)
            .display()
            .to_string();
        for c in re.captures_iter(&text) {
            let included = normalize(&file.parent().expect("a file").join(&c[1]));
            let Some(name) = included.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            let is_ptx = name.ends_with(".ptx") && root.join("ptx").join(name).is_file();
            if is_ptx {
                needed.insert(name.to_string());
            }
            if !included.starts_with(&pkg) {
                let hint = if is_ptx {
                    format!(
                        ": include the package's copy, {package}/{copies}/{name}, which this task \
                         writes"
                    )
                } else {
                    String::new()
                };
                errors.push(format!(
                    "{rel_file} includes {}, outside the package {package}, which `cargo package` \
                     leaves out{hint}",
                    &c[1]
                ));
            }
        }
    }
    for name in &needed {
        let src = root.join("ptx").join(name);
        let text = std::fs::read_to_string(&src)
            .map_err(|e| format!("cannot read {}: {e}", src.display()))?;
        if let Err(e) = util::write_or_check(&copy_dir.join(name), &text, check, util::exact) {
            errors.push(e);
        }
    }
    if let Ok(entries) = std::fs::read_dir(&copy_dir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".ptx") && !needed.contains(&name) {
                let rel = format!("{package}/{copies}/{name}");
                if check {
                    errors.push(format!(
                        "{rel} is no longer included by {package}: run the task without --check"
                    ));
                } else {
                    std::fs::remove_file(e.path())
                        .map_err(|err| format!("cannot remove {rel}: {err}"))?;
                    println!("removed {rel}");
                }
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n"))
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            rust_files(&p, out)?;
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    Ok(())
}

/// `a/b/../c` -> `a/c`, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}
