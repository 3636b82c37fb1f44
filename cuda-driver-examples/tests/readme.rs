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
