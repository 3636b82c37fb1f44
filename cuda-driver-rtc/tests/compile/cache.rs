//! The on-disk cache with NVRTC: hits return what NVRTC produced, every input is in the key,
//! processes share a directory.

use std::path::Path;
use std::process::Command;

use cuda_driver_rtc::{Arch, Cache, Options, Program};

use crate::common::{nvrtc, temp_dir, SCALE};

fn compile(
    cache: &Cache,
    src: &str,
    headers: &[(&str, &str)],
    exprs: &[&str],
    opts: Options,
) -> cuda_driver_rtc::Compiled {
    let mut p = Program::with_headers("scale.cu", src, headers).unwrap();
    for e in exprs {
        p.add_name_expression(e).unwrap();
    }
    p.compile(&opts.cache(cache.clone())).unwrap()
}

#[gpu_test]
fn a_hit_returns_what_nvrtc_produced_and_every_input_is_in_the_key() {
    nvrtc();
    let dir = temp_dir("cache-key");
    let cache = Cache::new(&dir).unwrap();
    let opts = || Options::new().arch(Arch::sm(8, 0));
    let first = compile(&cache, SCALE, &[], &["scale<float>"], opts());
    assert!(!first.from_cache());
    let hit = compile(&cache, SCALE, &[], &["scale<float>"], opts());
    assert!(hit.from_cache());
    assert_eq!(hit.ptx().unwrap(), first.ptx().unwrap());
    assert_eq!(hit.cubin().unwrap(), first.cubin().unwrap());
    assert_eq!(hit.log(), first.log());
    assert_eq!(
        hit.lowered_name("scale<float>").unwrap(),
        first.lowered_name("scale<float>").unwrap()
    );
    assert_eq!(hit.arch(), Some(Arch::sm(8, 0)));

    // Each change of an input is a miss.
    let misses = [
        compile(
            &cache,
            &format!("{SCALE}\n// changed"),
            &[],
            &["scale<float>"],
            opts(),
        ),
        compile(&cache, SCALE, &[("x.h", "")], &["scale<float>"], opts()),
        compile(&cache, SCALE, &[], &["scale<double>"], opts()),
        compile(
            &cache,
            SCALE,
            &[],
            &["scale<float>"],
            Options::new().arch(Arch::sm(9, 0)),
        ),
        compile(
            &cache,
            SCALE,
            &[],
            &["scale<float>"],
            opts().define("X", "1"),
        ),
        compile(&cache, SCALE, &[], &[], opts()),
    ];
    for (i, m) in misses.iter().enumerate() {
        assert!(!m.from_cache(), "change {i} hit the cache");
    }
    // A header's text is in the key, not only its name.
    let a = compile(&cache, SCALE, &[("x.h", "// a")], &[], opts());
    assert!(!a.from_cache());
    // The cache is off unless given.
    let mut p = Program::new("scale.cu", SCALE).unwrap();
    assert!(!p.compile(&opts()).unwrap().from_cache());
    cache.clear().unwrap();
    assert!(!compile(&cache, SCALE, &[], &["scale<float>"], opts()).from_cache());
    let _ = std::fs::remove_dir_all(&dir);
}

#[gpu_test]
fn a_failed_compilation_is_not_cached() {
    nvrtc();
    let dir = temp_dir("cache-fail");
    let cache = Cache::new(&dir).unwrap();
    for _ in 0..2 {
        let mut p = Program::new("bad.cu", "__global__ void k( {").unwrap();
        let e = p.compile(&Options::new().cache(cache.clone())).unwrap_err();
        assert!(matches!(e, cuda_driver_rtc::Error::Compile { .. }));
    }
    assert_eq!(cache.size(), 0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[gpu_test]
fn a_cache_directory_that_cannot_be_created_is_an_error() {
    nvrtc();
    let dir = temp_dir("cache-file");
    let file = dir.join("a-file");
    std::fs::write(&file, b"").unwrap();
    let e = Cache::new(file.join("sub")).unwrap_err();
    assert!(matches!(e, cuda_driver_rtc::Error::Cache { .. }), "{e:?}");
    assert!(e.to_string().contains("a-file"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Set in the child processes of [`processes_share_one_cache_directory`]: the directory.
const CHILD_VAR: &str = "CUDA_DRIVER_RTC_TEST_CACHE_CHILD";

fn fill(cache: &Cache) {
    for i in 0..3 {
        let src = format!("{SCALE}\n// program {i}");
        compile(cache, &src, &[], &["scale<float>"], Options::new());
    }
}

#[gpu_test]
fn processes_share_one_cache_directory() {
    nvrtc();
    if let Some(dir) = std::env::var_os(CHILD_VAR) {
        // A child: compile the same programs into the shared directory.
        fill(&Cache::new(Path::new(&dir)).unwrap());
        return;
    }
    let dir = temp_dir("cache-processes");
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..3)
        .map(|_| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "cache::processes_share_one_cache_directory",
                    "--nocapture",
                ])
                .env(CHILD_VAR, &dir)
                .output()
        })
        .collect();
    for c in children {
        let out = c.unwrap();
        assert!(
            out.status.success(),
            "child failed: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let cache = Cache::new(&dir).unwrap();
    // Three entries, whole, and no temporary file left.
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(names.iter().all(|n| n.ends_with(".rtc-cache")), "{names:?}");
    for i in 0..3 {
        let src = format!("{SCALE}\n// program {i}");
        assert!(compile(&cache, &src, &[], &["scale<float>"], Options::new()).from_cache());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[gpu_test]
fn the_size_limit_holds_with_real_outputs() {
    nvrtc();
    let dir = temp_dir("cache-limit");
    let cache = Cache::new(&dir).unwrap();
    compile(&cache, SCALE, &[], &["scale<float>"], Options::new());
    let one = cache.size();
    assert!(one > 0);
    let small = cache.clone().with_max_bytes(one * 2 + one / 2);
    for i in 0..6 {
        compile(
            &small,
            &format!("{SCALE}\n// {i}"),
            &[],
            &["scale<float>"],
            Options::new(),
        );
        assert!(small.size() <= small.max_bytes());
    }
    let _ = std::fs::remove_dir_all(&dir);
}
