//! Images of device code in memory (PTX text, ELF cubins, fatbins): what the safe loaders
//! accept, checked before the driver sees them, and what the crate learns from them.
//!
//! The driver loads a cubin or a fatbin from a bare pointer and reads as far as the image's
//! own headers say, so [`Image::check`] refuses anything that is not self-contained and in
//! bounds of the bytes given ([`ModuleError::MalformedImage`] naming what is wrong):
//!
//! * an ELF cubin: a little-endian 64-bit ELF file whose program headers, section header table,
//!   section-name string table and sections all lie within the bytes (see [`elf`]);
//! * a fatbin: a header with the magic `0xBA55ED50`, version 1, and a size that lies within
//!   the bytes, and entries whose headers and payloads lie within that size, each embedded
//!   cubin checked as above (see [`fatbin`]);
//! * PTX text: UTF-8 without a NUL byte before its end (NUL-terminated by a copy only when
//!   it is not already).
//!
//! Images that hold pointers which the driver would follow are refused: the fat-binary
//! wrapper `__fatBinC_Wrapper_t` (magic `0x466243B1`, which the CUDA runtime registers) and
//! the fat binary of CUDA before 4.0 (`__cudaFatCudaBinary`, magic `0x1EE55A01`).
//!
//! Under [`ParamSource::Image`](crate::launch::ParamSource::Image) (not the default) the loaders also
//! read each kernel's parameter count from the image ([`ParamCounts`]: PTX `.entry`
//! declarations, a cubin's `.nv.info.<kernel>` sections, the uncompressed entries of a
//! fatbin), so that a checked launch can ask the driver for exactly that many parameters
//! instead of probing until it fails; from PTX also each parameter's offset and size, so that
//! it need not ask at all. By default a load reads nothing but the check, and a kernel's
//! parameters come from the driver at its first checked launch.

pub(crate) mod elf;
pub(crate) mod fatbin;
pub(crate) mod ptx;

use std::ffi::{c_void, CStr};
use std::sync::Arc;

use crate::cstr::with_nul_terminated;
use crate::error::module::ModuleError;
use crate::error::{Error, Result};

/// Device code in memory that the driver can load: PTX text, a cubin (ELF) or a fatbin.
///
/// Implemented for `str`, `String`, `[u8]`, `Vec<u8>`, `[u8; N]` and `CStr`. What the bytes
/// are is told by their first bytes: the ELF magic (a cubin), the fatbin magic, or else
/// PTX text. The safe loaders check the image first (see
/// [`ModuleError::MalformedImage`](crate::error::module::ModuleError::MalformedImage)).
pub trait ModuleImage {
    /// The image's bytes.
    fn image_bytes(&self) -> &[u8];
}

impl ModuleImage for str {
    fn image_bytes(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl ModuleImage for String {
    fn image_bytes(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl ModuleImage for [u8] {
    fn image_bytes(&self) -> &[u8] {
        self
    }
}

impl ModuleImage for Vec<u8> {
    fn image_bytes(&self) -> &[u8] {
        self
    }
}

impl<const N: usize> ModuleImage for [u8; N] {
    fn image_bytes(&self) -> &[u8] {
        self
    }
}

impl ModuleImage for CStr {
    fn image_bytes(&self) -> &[u8] {
        self.to_bytes_with_nul()
    }
}

/// What kind of image a byte string holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ImageKind {
    /// A cubin: an ELF file whose tables and sections lie within the bytes.
    Elf,
    /// A fatbin whose header and entries lie within the bytes.
    FatBinary,
    /// PTX text, loaded NUL-terminated.
    Text,
}

/// The magic of `__fatBinC_Wrapper_t`, the CUDA runtime's wrapper around a pointer to a fatbin.
pub(crate) const FATBIN_WRAPPER_MAGIC: u32 = 0x4662_43B1;
/// The magic of `__cudaFatCudaBinary`, the fat binary of CUDA before 4.0 (a struct of
/// pointers).
pub(crate) const OLD_FATBIN_MAGIC: u32 = 0x1EE5_5A01;

/// An image checked by [`Image::check`]: the driver can load it through a bare pointer
/// without reading outside `bytes`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Image<'a> {
    bytes: &'a [u8],
    kind: ImageKind,
}

impl<'a> Image<'a> {
    /// Checks `bytes` (see the module docs); [`ModuleError::MalformedImage`] names what is wrong.
    #[track_caller]
    pub(crate) fn check(bytes: &'a [u8]) -> Result<Image<'a>> {
        let kind = classify(bytes).map_err(|(kind, reason)| {
            Error::Module(ModuleError::MalformedImage { kind, reason })
        })?;
        Ok(Image { bytes, kind })
    }

    /// What the bytes hold.
    pub(crate) fn kind(&self) -> ImageKind {
        self.kind
    }

    /// The checked bytes.
    pub(crate) fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Calls `f` with a pointer the driver can load: a binary as it is, text NUL-terminated
    /// (copied only when it is not already).
    pub(crate) fn with_ptr<R>(&self, f: impl FnOnce(*const c_void) -> R) -> R {
        match self.kind {
            ImageKind::Elf | ImageKind::FatBinary => f(self.bytes.as_ptr().cast()),
            ImageKind::Text => with_nul_terminated(self.bytes, |p| f(p.cast())),
        }
    }

    /// The parameter counts of the image's kernels, where the image tells them.
    pub(crate) fn param_counts(&self) -> Option<Arc<ParamCounts>> {
        let bytes: &'a [u8] = self.bytes;
        let mut counts = CountsBuilder::default();
        match self.kind {
            ImageKind::Elf => elf::param_counts(bytes, &mut counts),
            ImageKind::FatBinary => fatbin::param_counts(bytes, &mut counts),
            // Checked text has NUL bytes only at its end (`check_text`): no need to look for
            // the first one through the whole text again.
            ImageKind::Text => {
                let end = bytes.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
                ptx::param_counts_before_nul(&bytes[..end], &mut counts)
            }
        }
        counts.build()
    }
}

/// What kind of image `b` holds, or what kind of bad image and why.
fn classify(b: &[u8]) -> std::result::Result<ImageKind, (&'static str, String)> {
    let magic = b
        .get(..4)
        .map(|m| u32::from_le_bytes(m.try_into().unwrap()));
    if b.starts_with(b"\x7fELF") {
        elf::check(b).map_err(|reason| ("ELF", reason))?;
        Ok(ImageKind::Elf)
    } else if magic == Some(fatbin::MAGIC) {
        fatbin::check(b).map_err(|reason| ("fatbin", reason))?;
        Ok(ImageKind::FatBinary)
    } else if magic == Some(FATBIN_WRAPPER_MAGIC) {
        Err((
            "fat-binary wrapper",
            "a `__fatBinC_Wrapper_t` (magic 0x466243B1) holds a pointer to its fatbin, which \
             the driver would follow; load the fatbin itself"
                .into(),
        ))
    } else if magic == Some(OLD_FATBIN_MAGIC) {
        Err((
            "fat binary",
            "a pre-CUDA 4.0 `__cudaFatCudaBinary` (magic 0x1EE55A01) is a struct of pointers, \
             which the driver would follow"
                .into(),
        ))
    } else {
        check_text(b).map_err(|reason| ("PTX", reason))?;
        Ok(ImageKind::Text)
    }
}

/// PTX text: NUL bytes only at the end, so that the driver, which reads up to the first NUL,
/// reads exactly these bytes. Whether they are PTX is the JIT compiler's to say.
fn check_text(b: &[u8]) -> std::result::Result<(), String> {
    let Some(end) = memchr::memchr(0, b) else {
        return Ok(());
    };
    match b[end..].iter().position(|&c| c != 0) {
        None => Ok(()),
        Some(at) => Err(format!(
            "the text ends with a NUL byte at offset {end}, but more follows at offset {}",
            end + at
        )),
    }
}

/// The parameter counts of the kernels of one image, by kernel name: a small sorted map.
/// A name whose counts disagree (two entries of a fatbin, a declaration and a definition) is
/// left out.
///
/// PTX also tells each parameter's offset and size (its `.param` declaration): where every
/// declaration of a kernel agrees on them, they are kept as its layout.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ParamCounts {
    sorted: Box<[Entry]>,
}

/// A kernel's name, parameter count and, where known, parameter layout.
type Entry = (Box<str>, u32, Option<Layout>);

/// A kernel's parameters as `(offset, size)` in bytes, in order.
pub(crate) type Layout = Box<[(u32, u32)]>;

impl ParamCounts {
    fn find(&self, name: &str) -> Option<&Entry> {
        self.sorted
            .binary_search_by(|(n, _, _)| (**n).cmp(name))
            .ok()
            .map(|i| &self.sorted[i])
    }

    /// The parameter count of the kernel `name`, if the image told it.
    pub(crate) fn get(&self, name: &str) -> Option<u32> {
        self.find(name).map(|e| e.1)
    }

    /// The parameters of the kernel `name` as `(offset, size)`, if the image told them.
    pub(crate) fn layout(&self, name: &str) -> Option<&[(u32, u32)]> {
        self.find(name).and_then(|e| e.2.as_deref())
    }

    /// How many kernels the image told the count of.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.sorted.len()
    }

    /// Every `(name, count)`, sorted by name.
    #[cfg(test)]
    pub(crate) fn entries(&self) -> Vec<(String, u32)> {
        self.sorted
            .iter()
            .map(|(n, c, _)| (n.to_string(), *c))
            .collect()
    }
}

/// Collects the counts an image tells, borrowing the names from it; a name seen with two
/// different counts (or once without one) becomes unknown.
#[derive(Default)]
pub(crate) struct CountsBuilder<'a> {
    found: Vec<(&'a str, Option<u32>, Option<Layout>)>,
    /// Set when the image could not be read reliably: nothing of it is kept.
    poisoned: bool,
}

impl<'a> CountsBuilder<'a> {
    /// Marks the image unreadable: [`build`](Self::build) then tells nothing.
    pub(crate) fn poison(&mut self) {
        self.poisoned = true;
    }

    pub(crate) fn insert(&mut self, name: &'a str, count: Option<u32>) {
        self.found.push((name, count, None));
    }

    /// A kernel whose parameters' offsets and sizes are known too (`layout.len()` of them).
    pub(crate) fn insert_layout(&mut self, name: &'a str, layout: Layout) {
        let count = u32::try_from(layout.len()).ok();
        self.found.push((name, count, Some(layout)));
    }

    pub(crate) fn build(mut self) -> Option<Arc<ParamCounts>> {
        if self.poisoned {
            return None;
        }
        self.found.sort_by(|a, b| a.0.cmp(b.0));
        // Group equal names, moving each first entry's layout out (no clone): a name is kept
        // where every entry agrees on the count, its layout where they agree on that too.
        let mut sorted: Vec<Entry> = Vec::with_capacity(self.found.len());
        let mut found = self.found.into_iter().peekable();
        while let Some((name, count, layout)) = found.next() {
            let (mut same_count, mut same_layout) = (true, true);
            while let Some(next) = found.next_if(|e| e.0 == name) {
                same_count &= next.1 == count;
                same_layout &= next.2 == layout;
            }
            if let Some(count) = count.filter(|_| same_count) {
                sorted.push((Box::from(name), count, layout.filter(|_| same_layout)));
            }
        }
        if sorted.is_empty() {
            return None;
        }
        Some(Arc::new(ParamCounts {
            sorted: sorted.into_boxed_slice(),
        }))
    }
}

/// Little-endian reads that fail instead of panicking past the end.
pub(crate) fn read_u16(b: &[u8], at: u64) -> Option<u64> {
    let at = usize::try_from(at).ok()?;
    Some(u16::from_le_bytes(b.get(at..at.checked_add(2)?)?.try_into().ok()?) as u64)
}

pub(crate) fn read_u32(b: &[u8], at: u64) -> Option<u64> {
    let at = usize::try_from(at).ok()?;
    Some(u32::from_le_bytes(b.get(at..at.checked_add(4)?)?.try_into().ok()?) as u64)
}

pub(crate) fn read_u64(b: &[u8], at: u64) -> Option<u64> {
    let at = usize::try_from(at).ok()?;
    Some(u64::from_le_bytes(
        b.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}

/// Whether `offset + size` lies within `len` bytes.
pub(crate) fn within(offset: u64, size: u64, len: usize) -> bool {
    offset
        .checked_add(size)
        .is_some_and(|end| end <= len as u64)
}

/// `b[offset..offset + size]`, if it lies within `b`.
pub(crate) fn sub(b: &[u8], offset: u64, size: u64) -> Option<&[u8]> {
    if !within(offset, size, b.len()) {
        return None;
    }
    Some(&b[offset as usize..(offset + size) as usize])
}

#[cfg(feature = "__fuzz")]
pub mod fuzz;
#[cfg(any(test, feature = "__fuzz"))]
pub(crate) mod in_bounds;
#[cfg(test)]
pub(crate) mod testing;

#[cfg(test)]
mod tests {
    use super::in_bounds::{elf_in_bounds, fatbin_in_bounds};
    use super::testing::{cubin, fatbin_of, or_few_under_miri, FatEntry};
    use super::*;
    use proptest::prelude::*;

    fn malformed(b: &[u8]) -> (&'static str, String) {
        match Image::check(b) {
            Err(Error::Module(ModuleError::MalformedImage { kind, reason })) => (kind, reason),
            other => panic!("expected MalformedImage, got {other:?}"),
        }
    }

    #[test]
    fn anything_else_is_text() {
        assert_eq!(
            Image::check(b".version 8.0\n").unwrap().kind(),
            ImageKind::Text
        );
        assert_eq!(Image::check(b"").unwrap().kind(), ImageKind::Text);
        assert_eq!(Image::check(b"text\0\0\0").unwrap().kind(), ImageKind::Text);
    }

    #[test]
    fn binaries_with_pointers_are_refused() {
        let mut wrapper = FATBIN_WRAPPER_MAGIC.to_le_bytes().to_vec();
        wrapper.extend_from_slice(&[1, 0, 0, 0]);
        wrapper.extend_from_slice(&0x7fff_0000_1000u64.to_le_bytes());
        wrapper.extend_from_slice(&0u64.to_le_bytes());
        let (kind, reason) = malformed(&wrapper);
        assert_eq!(kind, "fat-binary wrapper");
        assert!(reason.contains("0x466243B1"), "{reason}");
        let mut old = OLD_FATBIN_MAGIC.to_le_bytes().to_vec();
        old.extend_from_slice(&[0x55; 60]);
        assert_eq!(malformed(&old).0, "fat binary");
        // The magics alone (no room for the pointers) are refused as well.
        assert_eq!(
            malformed(&FATBIN_WRAPPER_MAGIC.to_le_bytes()).0,
            "fat-binary wrapper"
        );
    }

    #[test]
    fn text_has_no_inner_nul() {
        let (kind, reason) = malformed(b".version 8.0\0.entry x\n");
        assert_eq!(kind, "PTX");
        assert!(reason.contains("offset 12"), "{reason}");
        // Bytes that are no PTX (not even UTF-8) are the JIT compiler's to refuse.
        assert_eq!(
            Image::check(b"\x80\x81binary").unwrap().kind(),
            ImageKind::Text
        );
    }

    #[test]
    fn text_is_passed_nul_terminated() {
        let img = Image::check(b"abc").unwrap();
        img.with_ptr(|p| {
            // SAFETY: with_ptr passes a NUL-terminated copy of the text.
            assert_eq!(unsafe { CStr::from_ptr(p.cast()) }, c"abc");
        });
        let bin = cubin(&[]);
        let img = Image::check(&bin).unwrap();
        assert_eq!(img.kind(), ImageKind::Elf);
        img.with_ptr(|p| assert_eq!(p, bin.as_ptr().cast()));
    }

    #[test]
    fn counts_disagreeing_are_unknown() {
        let mut b = CountsBuilder::default();
        b.insert("a", Some(2));
        b.insert("b", Some(1));
        b.insert("a", Some(2));
        b.insert("b", Some(3));
        b.insert("c", None);
        let c = b.build().unwrap();
        assert_eq!(
            (c.get("a"), c.get("b"), c.get("c"), c.len()),
            (Some(2), None, None, 1)
        );
        assert!(CountsBuilder::default().build().is_none());
    }

    /// A seed image, then random byte and word writes and a random cut.
    fn mutated(seed: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
        let len = seed.len();
        (
            proptest::collection::vec((0..len, any::<u64>(), 0usize..4), 0..6),
            proptest::option::weighted(0.2, 0..=len),
        )
            .prop_map(move |(writes, cut)| {
                let mut b = seed.clone();
                for (at, v, width) in writes {
                    let w = [1, 2, 4, 8][width];
                    for i in 0..w {
                        if let Some(x) = b.get_mut(at + i) {
                            *x = (v >> (8 * i)) as u8;
                        }
                    }
                }
                if let Some(cut) = cut {
                    b.truncate(cut);
                }
                b
            })
    }

    fn seeds() -> impl Strategy<Value = Vec<u8>> {
        let elf = cubin(&[("k", &[8, 4]), ("z", &[])]);
        let fat = fatbin_of(&[
            FatEntry::elf(&elf),
            FatEntry::ptx(b".entry p(.param .u32 a)\n{}"),
        ]);
        prop_oneof![mutated(elf), mutated(fat)]
    }

    proptest! {
        #![proptest_config(or_few_under_miri(ProptestConfig::with_cases(2000)))]

        /// Whatever the bytes, checking and counting never panic, and an accepted binary lies
        /// within its bytes by the independent statement above.
        #[test]
        fn mutated_images_are_refused_or_in_bounds(b in seeds()) {
            if let Ok(img) = Image::check(&b) {
                match img.kind() {
                    ImageKind::Elf => prop_assert!(elf_in_bounds(&b), "accepted out of bounds"),
                    ImageKind::FatBinary => prop_assert!(fatbin_in_bounds(&b), "accepted out of bounds"),
                    ImageKind::Text => {
                        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
                        prop_assert!(b[end..].iter().all(|&c| c == 0));
                    }
                }
                let _ = img.param_counts();
            }
        }

        #[test]
        fn random_bytes_with_any_magic_never_panic(
            magic in prop_oneof![
                Just(b"\x7fELF".to_vec()),
                Just(fatbin::MAGIC.to_le_bytes().to_vec()),
                Just(FATBIN_WRAPPER_MAGIC.to_le_bytes().to_vec()),
                Just(Vec::new()),
            ],
            rest in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            let mut b = magic;
            b.extend_from_slice(&rest);
            if let Ok(img) = Image::check(&b) {
                let _ = img.param_counts();
                match img.kind() {
                    ImageKind::Elf => prop_assert!(elf_in_bounds(&b)),
                    ImageKind::FatBinary => prop_assert!(fatbin_in_bounds(&b)),
                    ImageKind::Text => {}
                }
            }
        }
    }

    #[test]
    fn the_seeds_are_accepted_and_in_bounds() {
        let elf = cubin(&[("k", &[8, 4]), ("z", &[])]);
        assert!(Image::check(&elf).is_ok() && elf_in_bounds(&elf));
        let fat = fatbin_of(&[FatEntry::elf(&elf), FatEntry::ptx(b".version 8.0\n")]);
        assert!(Image::check(&fat).is_ok() && fatbin_in_bounds(&fat));
    }

    #[test]
    fn counts_come_from_every_kind_of_image() {
        let ptx = ".version 8.0\n.visible .entry k(.param .u64 a, .param .u32 b)\n{ ret; }\n";
        let img = Image::check(ptx.as_bytes()).unwrap();
        assert_eq!(img.param_counts().unwrap().get("k"), Some(2));
        let elf = cubin(&[("k", &[8, 4, 4]), ("none", &[])]);
        let counts = Image::check(&elf).unwrap().param_counts().unwrap();
        assert_eq!((counts.get("k"), counts.get("none")), (Some(3), Some(0)));
        let fat = fatbin_of(&[
            FatEntry::elf(&elf),
            FatEntry::ptx(ptx.replace(".entry k(", ".entry p(").as_bytes()),
        ]);
        let counts = Image::check(&fat).unwrap().param_counts().unwrap();
        assert_eq!((counts.get("k"), counts.get("p")), (Some(3), Some(2)));
    }
}
