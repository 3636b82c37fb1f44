//! `cargo xtask check-readme`: what the README tells a new user, done as a new user would, from
//! the packaged crates; and what it quotes from a run, compared with a run.
//!
//! Run after `cargo package` (CI's step before it), which leaves every publishable package in
//! `target/package/NAME-VERSION.crate`.
//!
//! 1. **Consumers.** The README's code blocks marked `<!-- check-readme: CRATE/FILE -->` are
//!    the files of brand-new crates (`first-program`, `first-kernels`), made with `cargo new`:
//!    `CRATE/Cargo.toml` is the `[dependencies]` part of the manifest. The packages are
//!    unpacked from their `.crate` files (nothing else of the repository) into a local git
//!    repository, which stands in for the README's git URL: the manifests' one change is that
//!    URL. The packages name each other as crates.io dependencies, as published crates do; a
//!    `[patch.crates-io]` in the consumer's `.cargo/config.toml` points those at the same
//!    packages. Each crate is built with `RUSTFLAGS=-D warnings` (the generated launchers
//!    included: they are part of the consumer's crate), checked with `cargo clippy -- -D
//!    warnings`, and run: without a driver (CI) its stderr must be the README's block marked
//!    `<!-- check-readme: CRATE stderr -->` and its exit status 1. nvcc is the one of the pinned
//!    wheels, found the way the README says (`CUDA_PATH`).
//! 2. **`links`.** A crate that depends on the packaged `cuda-driver-sys` and on crates.io's
//!    unrelated `cuda-driver-sys` 0.3 (cust's, `links = "cuda"`) builds and runs, and type-checks
//!    with `dynamic-loading`, as the README says.
//! 3. **The GPU tests without a GPU.** The block marked `gpu-tests-without-gpu` is what
//!    `cargo test -p cuda-driver --test gpu` prints on a machine without a GPU: its `running N
//!    tests` and summary lines must be the run's (the time aside), and each test line quoted
//!    must be among the run's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::util;

/// The repository URL of the README's git dependencies.
const REPO_URL: &str = "https://github.com/cuda-driver-rs/cuda-driver";
/// The consumer crates the README describes.
const CONSUMERS: [&str; 2] = ["first-program", "first-kernels"];

pub fn run(args: &[String]) -> Result<(), String> {
    if let Some(a) = args.first() {
        return Err(format!("unknown option `{a}` (check-readme takes none)"));
    }
    let root = util::root();
    let readme = std::fs::read_to_string(root.join("README.md"))
        .map_err(|e| format!("cannot read README.md: {e}"))?;
    let blocks = marked_blocks(&readme)?;
    let work = work_dir(&root)?;

    let repo = packages_repo(&root, &work.join("packages"))?;
    for name in CONSUMERS {
        consumer(name, &blocks, &work, &repo)?;
    }
    links_consumer(&work, &repo)?;
    gpu_tests_output(&root, &blocks)?;
    println!("check-readme: the README's programs build and run from the packages as it says");
    Ok(())
}

/// Outside the workspace, or cargo would take the new crates for its members; one folder per
/// checkout, kept between runs with its target folder, so unchanged packages are not rebuilt.
fn work_dir(root: &Path) -> Result<PathBuf, String> {
    let work = std::env::temp_dir().join(format!(
        "cuda-driver-check-readme{}",
        root.display().to_string().replace(['/', '\\', ':'], "_")
    ));
    std::fs::create_dir_all(&work).map_err(|e| format!("cannot create {}: {e}", work.display()))?;
    Ok(work)
}

/// The README's `first-kernels` program, built in release from freshly packaged crates (for the
/// GPU bundle, where it must print its result and exit 0). Returns the executable.
pub fn release_first_kernels() -> Result<PathBuf, String> {
    let root = util::root();
    let mut package = Command::new(cargo());
    package
        .args(["package", "--no-verify", "--allow-dirty", "-q"])
        .current_dir(&root);
    for name in publishable(&root)? {
        package.args(["-p", &name]);
    }
    checked(&mut package)?;
    let readme = std::fs::read_to_string(root.join("README.md"))
        .map_err(|e| format!("cannot read README.md: {e}"))?;
    let blocks = marked_blocks(&readme)?;
    let work = work_dir(&root)?;
    let repo = packages_repo(&root, &work.join("packages"))?;
    let name = "first-kernels";
    let c = Consumer::new(name, &blocks, &work, &repo)?;
    checked(
        c.cargo(&["build", "--release"])
            .env("CARGO_PROFILE_RELEASE_STRIP", "true"),
    )?;
    Ok(work.join("target/release").join(name))
}

/// The code blocks that follow a `<!-- check-readme: KEY -->` line, by key, without their
/// fences and their indentation.
fn marked_blocks(readme: &str) -> Result<BTreeMap<String, String>, String> {
    let mut blocks = BTreeMap::new();
    let mut lines = readme.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        let Some(key) = line
            .trim()
            .strip_prefix("<!-- check-readme:")
            .and_then(|k| k.strip_suffix("-->"))
            .map(str::trim)
        else {
            continue;
        };
        let fence = lines
            .next()
            .filter(|(_, l)| l.trim_start().starts_with("```"))
            .ok_or_else(|| format!("README.md:{}: a code block must follow `{key}`", n + 1))?
            .1;
        let indent = fence.len() - fence.trim_start().len();
        let mut body = String::new();
        loop {
            let (_, l) = lines
                .next()
                .ok_or_else(|| format!("README.md:{}: the block `{key}` does not end", n + 1))?;
            if l.trim() == "```" {
                break;
            }
            body.push_str(l.get(indent..).unwrap_or(l.trim_start()));
            body.push('\n');
        }
        if blocks.insert(key.to_string(), body).is_some() {
            return Err(format!("README.md: two blocks are marked `{key}`"));
        }
    }
    Ok(blocks)
}

fn block<'a>(blocks: &'a BTreeMap<String, String>, key: &str) -> Result<&'a str, String> {
    blocks
        .get(key)
        .map(String::as_str)
        .ok_or_else(|| format!("README.md has no block marked `<!-- check-readme: {key} -->`"))
}

/// The publishable packages: every `*/Cargo.toml` of the workspace without `publish = false`.
fn publishable(root: &Path) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    let entries = std::fs::read_dir(root).map_err(|e| format!("cannot read the root: {e}"))?;
    for e in entries.flatten() {
        let Ok(manifest) = std::fs::read_to_string(e.path().join("Cargo.toml")) else {
            continue;
        };
        if manifest.lines().any(|l| l.trim() == "publish = false") {
            continue;
        }
        if let Some(name) = manifest.lines().find_map(|l| {
            l.trim()
                .strip_prefix("name = \"")
                .and_then(|n| n.strip_suffix('"'))
        }) {
            names.push(name.to_string());
        }
    }
    names.sort();
    Ok(names)
}

/// A git repository holding the unpacked `.crate` files of every publishable package, with a
/// commit that depends only on their contents (so an unchanged package set is the same
/// revision, which cargo has built before). Returns its `file://` URL.
fn packages_repo(root: &Path, dir: &Path) -> Result<String, String> {
    let packaged = root.join("target/package");
    let mut crates = Vec::new();
    for name in publishable(root)? {
        let mut found: Vec<PathBuf> = std::fs::read_dir(&packaged)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.extension().is_some_and(|x| x == "crate")
                    && p.file_stem()
                        .and_then(|s| s.to_str())
                        .and_then(|s| s.strip_prefix(&format!("{name}-")))
                        .is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()))
            })
            .collect();
        found.sort_by_key(|p| p.metadata().and_then(|m| m.modified()).ok());
        let newest = found.pop().ok_or_else(|| {
            format!(
                "target/package has no {name}-*.crate: run `cargo package --workspace` (less the \
                 publish = false crates) first, as .ci/run does"
            )
        })?;
        crates.push(newest);
    }
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for c in &crates {
        // -m: the files get the time of unpacking, not the package's fixed one.
        checked(Command::new("tar").arg("-xzmf").arg(c).current_dir(dir))?;
        println!("check-readme: unpacked {}", c.display());
    }
    let git = |args: &[&str]| {
        let mut cmd = Command::new("git");
        cmd.args(args)
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "check-readme")
            .env("GIT_AUTHOR_EMAIL", "check-readme@localhost")
            .env("GIT_AUTHOR_DATE", "2000-01-01T00:00:00Z")
            .env("GIT_COMMITTER_NAME", "check-readme")
            .env("GIT_COMMITTER_EMAIL", "check-readme@localhost")
            .env("GIT_COMMITTER_DATE", "2000-01-01T00:00:00Z");
        checked(&mut cmd)
    };
    git(&["init", "-q", "-b", "main"])?;
    git(&["add", "-A"])?;
    git(&[
        "-c",
        "commit.gpgsign=false",
        "commit",
        "-q",
        "-m",
        "packages",
    ])?;
    Ok(format!("file://{}", dir.display()))
}

/// `[patch.crates-io]` entries for the packages that other packages depend on (published
/// packages name each other as crates.io dependencies).
fn crates_io_patch(repo: &str) -> Result<String, String> {
    let dir = Path::new(repo.trim_start_matches("file://"));
    let mut manifests = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))? {
        let path = e.map_err(|e| e.to_string())?.path();
        if let Ok(m) = std::fs::read_to_string(path.join("Cargo.toml")) {
            let name = m
                .lines()
                .find_map(|l| {
                    l.strip_prefix("name = \"")
                        .and_then(|n| n.strip_suffix('"'))
                })
                .unwrap_or_default()
                .to_string();
            manifests.push((name, m));
        }
    }
    let mut patch = String::from("[patch.crates-io]\n");
    for (name, _) in &manifests {
        let used = manifests.iter().any(|(_, m)| {
            m.contains(&format!("[dependencies.{name}]"))
                || m.contains(&format!("[build-dependencies.{name}]"))
        });
        if used {
            patch.push_str(&format!("{name} = {{ git = \"{repo}\" }}\n"));
        }
    }
    Ok(patch)
}

/// The pinned toolkit's root, for `CUDA_PATH`: the first candidate with `bin/nvcc`.
fn toolkit() -> Result<PathBuf, String> {
    util::toolkit_roots()
        .into_iter()
        .find(|r| r.join("bin/nvcc").is_file())
        .ok_or_else(|| {
            "nvcc not found: install the pinned CUDA 13.0 wheels into .venv (see .ci/run) or set \
             CUDA_PATH"
                .into()
        })
}

/// A new crate `name` under `work`, made by `cargo new` and given the README's files.
fn new_crate(name: &str, work: &Path) -> Result<PathBuf, String> {
    let dir = work.join(name);
    let _ = std::fs::remove_dir_all(&dir);
    checked(
        Command::new(cargo())
            .args(["new", "-q", "--vcs", "none", "--name", name])
            .arg(&dir),
    )?;
    Ok(dir)
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(|e| format!("cannot create {}: {e}", d.display()))?;
    }
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// `cargo new`'s manifest with its empty `[dependencies]` replaced by `deps`, and the README's
/// git URL by the packages' repository.
fn manifest(dir: &Path, deps: &str, repo: &str) -> Result<(), String> {
    let path = dir.join("Cargo.toml");
    let new = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let package = new
        .trim_end()
        .strip_suffix("[dependencies]")
        .ok_or_else(|| format!("cargo new wrote an unexpected manifest:\n{new}"))?;
    if !deps.contains(REPO_URL) {
        return Err(format!(
            "the README's manifest does not name {REPO_URL}:\n{deps}"
        ));
    }
    write(&path, &format!("{package}{}", deps.replace(REPO_URL, repo)))
}

/// A new crate with the README's files for `name`, and how to run cargo in it.
struct Consumer {
    dir: PathBuf,
    target: PathBuf,
    cuda: PathBuf,
}

impl Consumer {
    fn new(
        name: &str,
        blocks: &BTreeMap<String, String>,
        work: &Path,
        repo: &str,
    ) -> Result<Consumer, String> {
        let dir = new_crate(name, work)?;
        manifest(&dir, block(blocks, &format!("{name}/Cargo.toml"))?, repo)?;
        let prefix = format!("{name}/");
        for (key, text) in blocks {
            if let Some(file) = key.strip_prefix(&prefix) {
                if file != "Cargo.toml" && !file.contains(' ') {
                    write(&dir.join(file), text)?;
                }
            }
        }
        write(&dir.join(".cargo/config.toml"), &crates_io_patch(repo)?)?;
        Ok(Consumer {
            dir,
            target: work.join("target"),
            cuda: toolkit()?,
        })
    }

    /// cargo in the crate, with warnings denied and nvcc of the pinned wheels at `CUDA_PATH`.
    fn cargo(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(cargo());
        cmd.args(args)
            .current_dir(&self.dir)
            .env("CARGO_TARGET_DIR", &self.target)
            .env("CARGO_INCREMENTAL", "0")
            .env("RUSTFLAGS", "-D warnings")
            .env("CUDA_PATH", &self.cuda)
            .env_remove("NVCC")
            .env_remove("CUDA_HOME")
            .env_remove("RUSTC_WRAPPER");
        cmd
    }
}

fn consumer(
    name: &str,
    blocks: &BTreeMap<String, String>,
    work: &Path,
    repo: &str,
) -> Result<(), String> {
    let c = Consumer::new(name, blocks, work, repo)?;
    println!(
        "check-readme: {name}: cargo build (-D warnings), with CUDA_PATH={}",
        c.cuda.display()
    );
    checked(&mut c.cargo(&["build"]))?;
    checked(&mut c.cargo(&["clippy", "--", "-D", "warnings"]))?;
    let out = output(&mut c.cargo(&["run", "-q"]))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let expected = block(blocks, &format!("{name} stderr"))?;
    if stderr.contains("CUDA_ERROR_STUB_LIBRARY") {
        if out.status.code() != Some(1) || stderr != expected {
            return Err(format!(
                "{name}: without a driver the README says it prints\n{expected}and exits with \
                 status 1; it printed\n{stderr}{stdout}and exited with {}",
                out.status
            ));
        }
        println!("check-readme: {name}: prints the README's sentence and exits with status 1");
    } else if out.status.success() {
        println!("check-readme: {name}: ran on a GPU: {}", stdout.trim());
    } else {
        println!(
            "check-readme: {name}: a driver is installed, so the README's no-driver output is \
             not compared; it printed {}",
            stderr.trim()
        );
    }
    Ok(())
}

/// The packaged cuda-driver-sys next to crates.io's unrelated cuda-driver-sys 0.3 (cust's,
/// `links = "cuda"`), which one `links` value would forbid.
fn links_consumer(work: &Path, repo: &str) -> Result<(), String> {
    let name = "with-cust-sys";
    let dir = new_crate(name, work)?;
    manifest(
        &dir,
        &format!(
            "[dependencies]\n\
             cuda-driver-sys = {{ git = \"{REPO_URL}\" }}\n\
             rust-cuda-sys = {{ package = \"cuda-driver-sys\", version = \"=0.3.0\" }}\n\n\
             [features]\n\
             dynamic-loading = [\"cuda-driver-sys/dynamic-loading\"]\n"
        ),
        repo,
    )?;
    write(
        &dir.join("src/main.rs"),
        "fn main() {\n    \
             // Both are linked into this program.\n    \
             let _theirs = rust_cuda_sys::cuInit as unsafe extern \"C\" fn(u32) -> _;\n    \
             // SAFETY: cuInit takes flags, which must be 0.\n    \
             let ours = unsafe { cuda_driver_sys::cuInit(0) };\n    \
             println!(\"cuInit: {ours}\");\n\
         }\n",
    )?;
    write(&dir.join(".cargo/config.toml"), &crates_io_patch(repo)?)?;
    let target = work.join("target");
    let cargo_in = |args: &[&str]| {
        let mut cmd = Command::new(cargo());
        cmd.args(args)
            .current_dir(&dir)
            .env("CARGO_TARGET_DIR", &target)
            .env("CARGO_INCREMENTAL", "0");
        cmd
    };
    println!("check-readme: {name}: next to crates.io's cuda-driver-sys 0.3 (links = \"cuda\")");
    let printed = checked(&mut cargo_in(&["run", "-q"]))?;
    if !printed.starts_with("cuInit: ") {
        return Err(format!("{name} printed {printed}"));
    }
    checked(&mut cargo_in(&[
        "check",
        "-q",
        "--features",
        "dynamic-loading",
    ]))?;
    println!("check-readme: {name}: builds and runs, and type-checks with dynamic-loading");
    Ok(())
}

/// The README's quote of the GPU tests without a GPU, against a run.
fn gpu_tests_output(root: &Path, blocks: &BTreeMap<String, String>) -> Result<(), String> {
    let quoted = block(blocks, "gpu-tests-without-gpu")?;
    let out = output(
        Command::new(cargo())
            .args(["test", "-p", "cuda-driver", "--test", "gpu"])
            .current_dir(root)
            .env_remove("CUDA_DRIVER_REQUIRE_GPU"),
    )?;
    let printed = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || !printed.contains("ignored, no GPU:") {
        println!("check-readme: the GPU tests did not skip for want of a GPU: not compared");
        return Ok(());
    }
    let without_time = |l: &str| l.split("; finished in").next().unwrap_or(l).to_string();
    let lines: Vec<String> = printed.lines().map(without_time).collect();
    let mut wrong = Vec::new();
    for q in quoted.lines() {
        let ok = if q.starts_with("running ") || q.starts_with("test result:") {
            let kind = &q[..8];
            lines.iter().find(|l| l.starts_with(kind)) == Some(&without_time(q))
        } else if q.starts_with("test ") {
            lines.iter().any(|l| *l == q)
        } else {
            true
        };
        if !ok {
            wrong.push(q);
        }
    }
    if !wrong.is_empty() {
        let actual: Vec<&String> = lines
            .iter()
            .filter(|l| l.starts_with("running ") || l.starts_with("test result:"))
            .collect();
        return Err(format!(
            "README.md's output of `cargo test -p cuda-driver --test gpu` without a GPU is stale: \
             {wrong:?} not printed; the run printed {actual:?}"
        ));
    }
    println!("check-readme: the GPU tests' output without a GPU is the README's");
    Ok(())
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

fn output(cmd: &mut Command) -> Result<Output, String> {
    cmd.output()
        .map_err(|e| format!("cannot run {:?}: {e}", cmd.get_program()))
}

/// Runs `cmd` with its output shown, failing when it fails; returns its stdout.
fn checked(cmd: &mut Command) -> Result<String, String> {
    let out = output(cmd)?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(format!(
            "{cmd:?} failed ({}):\n{stdout}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marked_blocks_are_found_with_their_indentation_removed() {
        let readme = "x\n<!-- check-readme: a/b.rs -->\n```rust\nfn main() {}\n```\n\
                      * item\n\n  <!-- check-readme: a stderr -->\n  ```text\n  error: x\n  ```\n";
        let b = marked_blocks(readme).unwrap();
        assert_eq!(b["a/b.rs"], "fn main() {}\n");
        assert_eq!(b["a stderr"], "error: x\n");
        assert!(marked_blocks("<!-- check-readme: a -->\ntext\n").is_err());
        assert!(marked_blocks("<!-- check-readme: a -->\n```\nno end\n").is_err());
        let twice = "<!-- check-readme: a -->\n```\n```\n<!-- check-readme: a -->\n```\n```\n";
        assert!(marked_blocks(twice).is_err());
    }

    #[test]
    fn the_readme_marks_every_consumer_file() {
        let readme = std::fs::read_to_string(util::root().join("README.md")).unwrap();
        let b = marked_blocks(&readme).unwrap();
        for key in [
            "first-program/Cargo.toml",
            "first-program/src/main.rs",
            "first-program stderr",
            "first-kernels/Cargo.toml",
            "first-kernels/build.rs",
            "first-kernels/src/main.rs",
            "first-kernels/kernels/saxpy.cu",
            "first-kernels stderr",
            "gpu-tests-without-gpu",
        ] {
            assert!(b.contains_key(key), "{key}");
        }
        for name in CONSUMERS {
            assert!(b[&format!("{name}/Cargo.toml")].contains(REPO_URL));
        }
    }
}
