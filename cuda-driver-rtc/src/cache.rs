//! An on-disk cache of compiled programs: [`Cache`]. Off unless given to
//! [`Options::cache`](crate::Options::cache).
//!
//! * **Key**: everything that changes the output: NVRTC's version, the program's name and
//!   source, every in-memory header (name and text), the name expressions, and the options as
//!   NVRTC gets them (the architecture included, also where
//!   [`Program::compile_for`](crate::Program::compile_for) chose it). Files found through
//!   [`Options::include_path`](crate::Options::include_path) are not read: the key holds their
//!   directory's path, not their contents, so a program that includes files from disk that
//!   change should not be cached (or the cache should be [cleared](Cache::clear)).
//! * **Entry**: one file per key, named by a 128-bit hash of the key and holding the whole key
//!   (compared on every hit, so two keys with one hash never mix), the outputs (PTX, CUBIN,
//!   LTO-IR), the log and the lowered names, and a checksum. A file that does not parse, fails
//!   its checksum or holds another key is a miss; the loaders of `cuda-driver` check every
//!   image again before the driver sees it.
//! * **Concurrency**: an entry is written to a temporary file in the cache's directory and
//!   renamed over its name, so a process reading it sees either the old file or the whole new
//!   one; processes and threads may share a directory.
//! * **Size**: after each write, the oldest entries (by modification time; a hit refreshes
//!   it) are removed until the directory holds at most [`max_bytes`](Cache::max_bytes)
//!   (default [`Cache::DEFAULT_MAX_BYTES`]); an entry larger than the limit is not stored.
//! * **Failures** to read or write an entry are misses, logged with `log::debug!`: the cache
//!   never makes a compilation fail.
//! * **Trust**: an entry is code the program loads onto the GPU. Give the cache a directory
//!   that only users you trust can write (the per-user [`Cache::user_dir`], not a shared
//!   temporary directory): the checksum catches damage, not forgery.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::arch::Arch;
use crate::error::{Error, Result};
use crate::library::Nvrtc;
use crate::output::Compiled;
use crate::output::{Cubin, LtoIr, Ptx};
use crate::report::log_guarded;

/// The format of an entry; a change of layout changes it.
const MAGIC: &[u8; 8] = b"CDRTC\x00\x00\x01";
/// Entries are named `<hash>.rtc-cache`.
const EXTENSION: &str = "rtc-cache";
/// Temporary files older than this are left over by a process that died while writing.
const STALE_TEMP: Duration = Duration::from_secs(3600);

/// A directory of compiled programs, shared by every process that uses it (see the
/// [module docs](self)).
///
/// ```no_run
/// use cuda_driver_rtc::{Cache, Options, Program};
///
/// let cache = Cache::new(std::env::temp_dir().join("my-kernels"))?.with_max_bytes(64 << 20);
/// let opts = Options::new().cache(cache);
/// let mut p = Program::new("k.cu", "extern \"C\" __global__ void k() {}")?;
/// let first = p.compile(&opts)?; // compiled, then stored
/// let again = Program::new("k.cu", "extern \"C\" __global__ void k() {}")?.compile(&opts)?;
/// assert!(!first.from_cache() && again.from_cache());
/// # Ok::<(), cuda_driver_rtc::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct Cache {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    dir: PathBuf,
    max_bytes: u64,
}

impl Cache {
    /// The default size limit: 256 MiB.
    pub const DEFAULT_MAX_BYTES: u64 = 256 << 20;

    /// A cache in `dir`, created if missing ([`Error::Cache`] when it cannot be).
    pub fn new(dir: impl Into<PathBuf>) -> Result<Cache> {
        let dir = dir.into();
        fs::create_dir_all(&dir).map_err(|source| Error::Cache {
            path: dir.clone(),
            source,
        })?;
        Ok(Cache {
            inner: Arc::new(Inner {
                dir,
                max_bytes: Cache::DEFAULT_MAX_BYTES,
            }),
        })
    }

    /// The per-user cache directory: `$XDG_CACHE_HOME/cuda-driver-rtc`, else
    /// `$HOME/.cache/cuda-driver-rtc` (`%LOCALAPPDATA%\cuda-driver-rtc` on Windows); `None`
    /// where neither is set.
    pub fn user_dir() -> Option<PathBuf> {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        if cfg!(windows) {
            return var("LOCALAPPDATA").map(|d| d.join("cuda-driver-rtc"));
        }
        var("XDG_CACHE_HOME")
            .or_else(|| var("HOME").map(|h| h.join(".cache")))
            .map(|d| d.join("cuda-driver-rtc"))
    }

    /// The same directory with another size limit, in bytes.
    pub fn with_max_bytes(self, max_bytes: u64) -> Cache {
        Cache {
            inner: Arc::new(Inner {
                dir: self.inner.dir.clone(),
                max_bytes,
            }),
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The size limit, in bytes.
    pub fn max_bytes(&self) -> u64 {
        self.inner.max_bytes
    }

    /// The bytes the entries take now.
    pub fn size(&self) -> u64 {
        self.entries().iter().map(|e| e.1).sum()
    }

    /// Removes every entry.
    pub fn clear(&self) -> Result<()> {
        for (path, _, _) in self.entries() {
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => return Err(Error::Cache { path, source }),
            }
        }
        Ok(())
    }

    fn path(&self, key: &Key) -> PathBuf {
        self.inner
            .dir
            .join(format!("{}.{EXTENSION}", key.hash_name()))
    }

    /// The entry of `key`, if there is a good one.
    pub(crate) fn get(&self, key: &Key) -> Option<Compiled> {
        let path = self.path(key);
        let bytes = fs::read(&path).ok()?;
        match decode(&bytes, key) {
            Some(mut c) => {
                c.from_cache = true;
                // Refresh the entry's age for the size limit (best effort).
                if let Ok(f) = fs::File::options().append(true).open(&path) {
                    let _ = f.set_modified(SystemTime::now());
                }
                Some(c)
            }
            None => {
                log_guarded(|| {
                    log::debug!(
                        "cuda-driver-rtc: cache entry {} is not the key's: a miss",
                        path.display()
                    )
                });
                None
            }
        }
    }

    /// Stores `c` under `key` (best effort: a failure is logged), then trims the directory.
    pub(crate) fn put(&self, key: &Key, c: &Compiled) {
        let bytes = encode(key, c);
        if bytes.len() as u64 > self.inner.max_bytes {
            return;
        }
        if let Err(e) = self.write(&self.path(key), &bytes) {
            log_guarded(|| log::debug!("cuda-driver-rtc: cannot write a cache entry: {e}"));
            return;
        }
        self.trim();
    }

    /// Writes `bytes` to a temporary file in the directory, then renames it to `path`.
    fn write(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let tmp = self.inner.dir.join(format!(
            ".tmp-{}-{}-{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let result = (|| {
            let mut f = fs::File::options()
                .write(true)
                .create_new(true)
                .open(&tmp)?;
            f.write_all(bytes)?;
            f.sync_data()?;
            drop(f);
            fs::rename(&tmp, path)
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result
    }

    /// The entries: path, size, modification time.
    fn entries(&self) -> Vec<(PathBuf, u64, SystemTime)> {
        let Ok(dir) = fs::read_dir(&self.inner.dir) else {
            return Vec::new();
        };
        dir.flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == EXTENSION))
            .filter_map(|e| {
                let m = e.metadata().ok()?;
                Some((
                    e.path(),
                    m.len(),
                    m.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                ))
            })
            .collect()
    }

    /// Removes the oldest entries until the directory is within the limit, and temporary
    /// files left by processes that died while writing.
    fn trim(&self) {
        if let Ok(dir) = fs::read_dir(&self.inner.dir) {
            for e in dir.flatten() {
                let stale = e.file_name().to_string_lossy().starts_with(".tmp-")
                    && e.metadata()
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.elapsed().ok())
                        .is_some_and(|age| age > STALE_TEMP);
                if stale {
                    let _ = fs::remove_file(e.path());
                }
            }
        }
        let mut entries = self.entries();
        let mut total: u64 = entries.iter().map(|e| e.1).sum();
        if total <= self.inner.max_bytes {
            return;
        }
        entries.sort_by_key(|e| e.2);
        for (path, size, _) in entries {
            if total <= self.inner.max_bytes {
                break;
            }
            // Another process may have removed it: counted as gone either way.
            let _ = fs::remove_file(&path);
            total = total.saturating_sub(size);
        }
    }
}

/// The key of one compilation: length-prefixed fields, so that no two different inputs give
/// the same bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Key {
    bytes: Vec<u8>,
}

impl Key {
    /// A key for `nvrtc`'s output (its version; the format of the entries).
    pub(crate) fn new(nvrtc: &Nvrtc) -> Key {
        let mut k = Key {
            bytes: MAGIC.to_vec(),
        };
        let v = nvrtc.version();
        k.count(v.major as usize);
        k.count(v.minor as usize);
        k
    }

    #[cfg(test)]
    fn for_tests() -> Key {
        Key {
            bytes: MAGIC.to_vec(),
        }
    }

    /// Adds a field.
    pub(crate) fn field(&mut self, bytes: &[u8]) {
        self.count(bytes.len());
        self.bytes.extend_from_slice(bytes);
    }

    /// Adds a number.
    pub(crate) fn count(&mut self, n: usize) {
        self.bytes.extend_from_slice(&(n as u64).to_le_bytes());
    }

    /// 32 hex digits: two 64-bit FNV-1a hashes of the key with different bases.
    fn hash_name(&self) -> String {
        format!(
            "{:016x}{:016x}",
            fnv1a(0xcbf2_9ce4_8422_2325, &self.bytes),
            fnv1a(0x6c62_272e_07bb_0142, &self.bytes)
        )
    }
}

fn fnv1a(basis: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(basis, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// An entry: the magic, the key, the outputs, the checksum of all that.
fn encode(key: &Key, c: &Compiled) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    let mut put = |b: &[u8]| {
        out.extend_from_slice(&(b.len() as u64).to_le_bytes());
        out.extend_from_slice(b);
    };
    put(&key.bytes);
    put(c.name.as_bytes());
    let arch = c.arch.map(|a| a.to_string()).unwrap_or_default();
    put(arch.as_bytes());
    let optional = |o: Option<&[u8]>| match o {
        Some(b) => [&[1u8][..], b].concat(),
        None => vec![0u8],
    };
    put(&optional(c.ptx.as_ref().map(|p| p.as_bytes_with_nul())));
    put(&optional(c.cubin.as_ref().map(|b| b.as_bytes())));
    put(&optional(c.lto_ir.as_ref().map(|b| b.as_bytes())));
    put(c.log.as_bytes());
    put(&(c.lowered.len() as u64).to_le_bytes());
    for (e, l) in &c.lowered {
        put(e.as_bytes());
        put(l.as_bytes());
    }
    let sum = fnv1a(0xcbf2_9ce4_8422_2325, &out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

/// Reads fields back; `None` on anything unexpected.
struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.rest.len() < n {
            return None;
        }
        let (a, b) = self.rest.split_at(n);
        self.rest = b;
        Some(a)
    }

    fn field(&mut self) -> Option<&'a [u8]> {
        let n = u64::from_le_bytes(self.take(8)?.try_into().ok()?);
        self.take(usize::try_from(n).ok()?)
    }

    fn text(&mut self) -> Option<String> {
        String::from_utf8(self.field()?.to_vec()).ok()
    }

    fn optional(&mut self) -> Option<Option<&'a [u8]>> {
        let f = self.field()?;
        match f.split_first()? {
            (0, []) => Some(None),
            (1, rest) => Some(Some(rest)),
            _ => None,
        }
    }
}

/// The compiled program in an entry, if the entry is whole and holds `key`.
fn decode(bytes: &[u8], key: &Key) -> Option<Compiled> {
    let (body, sum) = bytes.split_at(bytes.len().checked_sub(8)?);
    if fnv1a(0xcbf2_9ce4_8422_2325, body).to_le_bytes() != sum {
        return None;
    }
    let mut r = Reader { rest: body };
    if r.take(MAGIC.len())? != MAGIC || r.field()? != key.bytes.as_slice() {
        return None;
    }
    let name = r.text()?;
    let arch = parse_arch(&r.text()?)?;
    let ptx = match r.optional()? {
        Some(b) => Some(Ptx::from_nul_terminated(b.to_vec())?),
        None => None,
    };
    let cubin = r.optional()?.map(|b| Cubin::from_bytes(b.to_vec()));
    let lto_ir = r.optional()?.map(|b| LtoIr::from_bytes(b.to_vec()));
    let log = r.text()?;
    let n = u64::from_le_bytes(r.field()?.try_into().ok()?);
    let mut lowered = Vec::new();
    for _ in 0..n {
        lowered.push((r.text()?, r.text()?));
    }
    if !r.rest.is_empty() {
        return None;
    }
    Some(Compiled {
        name,
        arch,
        target: None,
        ptx,
        cubin,
        lto_ir,
        log,
        lowered,
        from_cache: true,
    })
}

/// `""` (none), `compute_86`, `sm_90`; `None` (a bad entry) for anything else.
fn parse_arch(s: &str) -> Option<Option<Arch>> {
    if s.is_empty() {
        return Some(None);
    }
    let (real, code) = match (s.strip_prefix("sm_"), s.strip_prefix("compute_")) {
        (Some(c), _) => (true, c),
        (_, Some(c)) => (false, c),
        _ => return None,
    };
    Some(Some(Arch::from_code(code.parse().ok()?, real)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> Compiled {
        Compiled {
            name: "k.cu".into(),
            arch: Some(Arch::sm(8, 6)),
            target: None,
            ptx: Some(Ptx::from_text(".version 9.0\n")),
            cubin: Some(Cubin::from_bytes(b"\x7fELF....".to_vec())),
            lto_ir: None,
            log: "warning: x".into(),
            lowered: vec![("scale<float>".into(), "_Z5scaleIfEvPT_i".into())],
            from_cache: false,
        }
    }

    fn key(s: &str) -> Key {
        let mut k = Key::for_tests();
        k.field(s.as_bytes());
        k
    }

    fn temp_cache(name: &str) -> Cache {
        let d = std::env::temp_dir().join(format!(
            "cuda-driver-rtc-cache-{name}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&d);
        Cache::new(d).unwrap()
    }

    #[test]
    fn an_entry_round_trips_and_holds_its_key() {
        let c = sample();
        let bytes = encode(&key("a"), &c);
        let back = decode(&bytes, &key("a")).unwrap();
        assert_eq!(back.ptx, c.ptx);
        assert_eq!(back.cubin, c.cubin);
        assert_eq!(back.lto_ir, None);
        assert_eq!(back.arch, c.arch);
        assert_eq!(back.log, c.log);
        assert_eq!(back.lowered, c.lowered);
        assert!(back.from_cache);
        // Another key with the same file: a miss.
        assert!(decode(&bytes, &key("b")).is_none());
    }

    #[test]
    fn keys_of_different_inputs_differ() {
        // Length prefixes: ("ab", "c") is not ("a", "bc").
        let mut a = Key::for_tests();
        a.field(b"ab");
        a.field(b"c");
        let mut b = Key::for_tests();
        b.field(b"a");
        b.field(b"bc");
        assert_ne!(a, b);
        assert_ne!(a.hash_name(), b.hash_name());
        assert_eq!(a.hash_name().len(), 32);
    }

    proptest! {
        #[test]
        fn garbage_and_damaged_entries_are_misses(
            garbage in proptest::collection::vec(any::<u8>(), 0..512),
            flip in any::<usize>(),
            cut in any::<usize>(),
        ) {
            let k = key("k");
            prop_assert!(decode(&garbage, &k).is_none() || garbage.starts_with(MAGIC));
            let good = encode(&k, &sample());
            let mut damaged = good.clone();
            let i = flip % damaged.len();
            damaged[i] ^= 0x5a;
            prop_assert!(decode(&damaged, &k).is_none());
            prop_assert!(decode(&good[..cut % good.len()], &k).is_none());
        }
    }

    #[test]
    fn entries_are_stored_read_and_trimmed_oldest_first() {
        let cache = temp_cache("trim");
        let c = sample();
        let size = encode(&key("0"), &c).len() as u64;
        let cache = cache.with_max_bytes(size * 3);
        for i in 0..5 {
            cache.put(&key(&i.to_string()), &c);
            // Distinct modification times.
            let p = cache.path(&key(&i.to_string()));
            let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + i);
            fs::File::options()
                .append(true)
                .open(&p)
                .unwrap()
                .set_modified(t)
                .unwrap();
        }
        // After each write at most three entries stay: the last ones written.
        cache.put(&key("5"), &c);
        assert!(cache.size() <= size * 3);
        assert!(cache.get(&key("5")).is_some());
        assert!(cache.get(&key("0")).is_none());
        assert!(cache.get(&key("1")).is_none());
        // No temporary file is left behind.
        let leftovers = fs::read_dir(cache.dir())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(".tmp-"))
            .count();
        assert_eq!(leftovers, 0);
        cache.clear().unwrap();
        assert_eq!(cache.size(), 0);
        let _ = fs::remove_dir_all(cache.dir());
    }

    #[test]
    fn an_entry_over_the_limit_is_not_stored_and_garbage_on_disk_is_a_miss() {
        let cache = temp_cache("limit").with_max_bytes(16);
        cache.put(&key("big"), &sample());
        assert_eq!(cache.size(), 0);
        let cache = cache.with_max_bytes(Cache::DEFAULT_MAX_BYTES);
        fs::write(cache.path(&key("g")), b"garbage").unwrap();
        assert!(cache.get(&key("g")).is_none());
        // A good write replaces it.
        cache.put(&key("g"), &sample());
        assert!(cache.get(&key("g")).is_some());
        let _ = fs::remove_dir_all(cache.dir());
    }

    #[test]
    fn concurrent_writers_and_readers_see_whole_entries() {
        let cache = temp_cache("concurrent");
        let c = sample();
        std::thread::scope(|s| {
            for t in 0..4 {
                let cache = cache.clone();
                let c = c.clone();
                s.spawn(move || {
                    for i in 0..50 {
                        let k = key(&format!("{}", (i + t) % 5));
                        cache.put(&k, &c);
                        if let Some(got) = cache.get(&k) {
                            assert_eq!(got.ptx, c.ptx);
                        }
                    }
                });
            }
        });
        for i in 0..5 {
            assert!(cache.get(&key(&i.to_string())).is_some());
        }
        let _ = fs::remove_dir_all(cache.dir());
    }

    #[test]
    fn the_user_dir_is_under_the_cache_home() {
        if let Some(d) = Cache::user_dir() {
            assert!(d.ends_with("cuda-driver-rtc"));
        }
    }
}
