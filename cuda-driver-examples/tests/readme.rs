//! The README's first program is the example `first_program` and the crate docs' first
//! program: the three copies stay the same.

use std::path::Path;

fn read(path: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The Rust code block under the README heading `heading`.
fn readme_block(readme: &str, heading: &str) -> String {
    let section = &readme[readme.find(heading).expect("the README has the heading")..];
    let start = section.find("```rust\n").expect("a rust block") + "```rust\n".len();
    let end = start + section[start..].find("\n```\n").expect("its end");
    format!("{}\n", &section[start..end])
}

/// The example's code: the file without its leading `//` comment lines.
fn example_code(file: &str) -> String {
    file.lines()
        .skip_while(|l| l.starts_with("//"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// The crate docs' code block under `# Your first program`, without the `//! ` prefixes.
fn doc_block(lib: &str) -> String {
    let lines: Vec<&str> = lib
        .lines()
        .take_while(|l| l.starts_with("//!"))
        .map(|l| {
            l.strip_prefix("//! ")
                .unwrap_or(l.strip_prefix("//!").unwrap())
        })
        .collect();
    let heading = lines
        .iter()
        .position(|l| *l == "# Your first program")
        .expect("the crate docs have the heading");
    let start = heading
        + lines[heading..]
            .iter()
            .position(|l| l.starts_with("```"))
            .expect("a code block")
        + 1;
    let end = start
        + lines[start..]
            .iter()
            .position(|l| *l == "```")
            .expect("its end");
    lines[start..end].iter().map(|l| format!("{l}\n")).collect()
}

#[test]
fn the_readme_first_program_is_the_example() {
    let readme = readme_block(&read("README.md"), "## Your first program");
    let example = example_code(&read("cuda-driver-examples/examples/first_program.rs"));
    assert_eq!(
        readme, example,
        "README.md and examples/first_program.rs differ"
    );
}

#[test]
fn the_crate_docs_first_program_is_the_example() {
    let doc = doc_block(&read("cuda-driver/src/lib.rs"));
    let example = example_code(&read("cuda-driver-examples/examples/first_program.rs"));
    assert_eq!(
        doc, example,
        "cuda-driver's crate docs and examples/first_program.rs differ"
    );
}

#[test]
fn the_crate_readme_first_program_is_the_example() {
    let readme = readme_block(&read("cuda-driver/README.md"), "## Your first program");
    let example = example_code(&read("cuda-driver-examples/examples/first_program.rs"));
    assert_eq!(
        readme, example,
        "cuda-driver/README.md and examples/first_program.rs differ"
    );
}

/// The files that tell users how to depend on the crates: the READMEs and the crate docs.
const INSTALL_DOCS: &[&str] = &[
    "README.md",
    "cuda-driver/README.md",
    "cuda-driver-sys/README.md",
    "cuda-driver-build/README.md",
    "cuda-driver-macros/README.md",
    "cuda-driver/src/lib.rs",
    "cuda-driver-sys/src/lib.rs",
    "cuda-driver-build/src/lib.rs",
    "cuda-driver-macros/src/lib.rs",
];

const GIT_ROUTE: &str = "{ git = \"https://github.com/cuda-driver-rs/cuda-driver\" }";

/// Regression: cuda-driver-build's docs said `cuda-driver = "0.1"`, which no registry has (and
/// `cuda-driver-sys = "0.1"` resolves to an unrelated crate). Every dependency line on one of
/// the workspace's crates is the git route, written the same way.
#[test]
fn every_install_line_is_the_one_git_route() {
    let mut wrong = Vec::new();
    let mut seen = 0;
    for file in INSTALL_DOCS {
        for (n, line) in read(file).lines().enumerate() {
            let l = line.trim_start_matches("//!").trim();
            let Some((name, value)) = l.split_once(" = ") else {
                continue;
            };
            if !name.starts_with("cuda-driver") || name.contains(' ') {
                continue;
            }
            seen += 1;
            let with_features = value.starts_with(&GIT_ROUTE[..GIT_ROUTE.len() - 2])
                && value.contains(", features = [")
                && value.ends_with("] }");
            if value != GIT_ROUTE && !with_features {
                wrong.push(format!("{file}:{}: {l}", n + 1));
            }
        }
    }
    assert!(seen >= 8, "only {seen} install lines found");
    assert!(
        wrong.is_empty(),
        "not the git route {GIT_ROUTE}:\n{}",
        wrong.join("\n")
    );
}

/// Every `at FILE:LINE:COLUMN` that the READMEs quote from a run points at the call that fails
/// without a driver (`Device::get(0)`), in the source it names: the numbers cannot go stale.
#[test]
fn quoted_error_locations_point_at_the_failing_call() {
    let first_program = example_code(&read("cuda-driver-examples/examples/first_program.rs"));
    let readme = read("README.md");
    let first_kernels = {
        let marker = "<!-- check-readme: first-kernels/src/main.rs -->\n```rust\n";
        let start = readme.find(marker).expect("the marked block") + marker.len();
        let end = start + readme[start..].find("\n```\n").expect("its end");
        readme[start..end].to_string()
    };
    // The first-kernels program's output block; every other `src/main.rs` is the first
    // program.
    let kernels_stderr = {
        let start = readme
            .find("<!-- check-readme: first-kernels stderr -->")
            .expect("the marked block");
        let end = start + readme[start..].find("\n```\n").expect("its end");
        start..end
    };
    let mut checked = 0;
    for file in ["README.md", "cuda-driver/README.md"] {
        let text = read(file);
        for (at, _) in text.match_indices(" at ") {
            let rest = &text[at + 4..];
            let loc: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "/._-:".contains(*c))
                .collect();
            let mut parts = loc.rsplitn(3, ':');
            let (Some(col), Some(line), Some(path)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let (Ok(line), Ok(col)) = (line.parse::<usize>(), col.parse::<usize>()) else {
                continue;
            };
            // Only the failures of a run: cuInit's, without a driver or a device (the sentence
            // may be wrapped: this line or the one before).
            let line_start = text[..at].rfind('\n').unwrap_or(0);
            let prev_start = text[..line_start].rfind('\n').unwrap_or(0);
            if !text[prev_start..at].contains("cuInit") {
                continue;
            }
            let source = match path {
                "src/main.rs" if file == "README.md" && kernels_stderr.contains(&at) => {
                    first_kernels.clone()
                }
                "src/main.rs" => first_program.clone(),
                p if p.starts_with("cuda-driver-examples/") => read(p),
                _ => continue,
            };
            let text_at = source
                .lines()
                .nth(line - 1)
                .and_then(|l| l.get(col - 1..))
                .unwrap_or("");
            assert!(
                text_at.starts_with("Device::get(0)"),
                "{file}: `{loc}` points at `{text_at}`, not at Device::get(0)"
            );
            checked += 1;
        }
    }
    assert!(checked >= 5, "only {checked} locations found");
}
