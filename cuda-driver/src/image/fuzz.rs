//! The entry points of the fuzz targets in `fuzz/` (feature `__fuzz`; not part of the API):
//! each runs the byte parsers of one kind of image on arbitrary bytes and holds what they
//! accept to what they promise. Any panic is a bug the fuzzer reports.

use super::in_bounds::{elf_in_bounds, fatbin_in_bounds};
use super::{elf, fatbin, ptx, CountsBuilder, Image, ImageKind};

/// The check of a safe load, as the loaders run it: what the first bytes say the image is,
/// its check, and the parameter counts (and PTX layouts) of what it accepts. An accepted
/// binary lies within its bytes (an independent statement of the bounds); accepted text has
/// NUL bytes only at its end, and is passed to the driver NUL-terminated.
pub fn image(data: &[u8]) {
    let Ok(img) = Image::check(data) else { return };
    match img.kind() {
        ImageKind::Elf => assert!(elf_in_bounds(data), "an ELF image accepted out of bounds"),
        ImageKind::FatBinary => {
            assert!(fatbin_in_bounds(data), "a fatbin accepted out of bounds")
        }
        ImageKind::Text => {
            let end = memchr::memchr(0, data).unwrap_or(data.len());
            assert!(
                data[end..].iter().all(|&c| c == 0),
                "text accepted with an inner NUL"
            );
            img.with_ptr(|p| {
                // SAFETY: with_ptr passes text NUL-terminated: a copy, or `data` itself when
                // it ends with a NUL (checked: no NUL before its end), valid during the call.
                let c = unsafe { std::ffi::CStr::from_ptr(p.cast()) };
                assert_eq!(c.to_bytes(), &data[..end]);
            });
        }
    }
    if let Some(counts) = img.param_counts() {
        for (name, _, _) in counts.sorted.iter() {
            let _ = (counts.get(name), counts.layout(name));
        }
    }
}

/// An ELF cubin: its check, its sections, its kernels' `.nv.info` parameter counts. What the
/// check accepts lies within its bytes.
pub fn elf(data: &[u8]) {
    if elf::check(data).is_ok() {
        assert!(elf_in_bounds(data), "an ELF image accepted out of bounds");
    }
    for (_, section) in elf::sections(data) {
        let _ = elf::nv_info_param_count(section);
    }
    let _ = elf::nv_info_param_count(data);
    let mut counts = CountsBuilder::default();
    elf::param_counts(data, &mut counts);
    let _ = counts.build();
}

/// A fatbin: its entries, its check, the parameter counts of its entries. What the check
/// accepts lies within its bytes.
pub fn fatbin(data: &[u8]) {
    let _ = fatbin::entries(data);
    if fatbin::check(data).is_ok() {
        assert!(fatbin_in_bounds(data), "a fatbin accepted out of bounds");
    }
    let mut counts = CountsBuilder::default();
    fatbin::param_counts(data, &mut counts);
    let _ = counts.build();
}

/// PTX text: the parameter counts and layouts of its `.entry` declarations.
pub fn ptx(data: &[u8]) {
    let mut counts = CountsBuilder::default();
    ptx::param_counts(data, &mut counts);
    if let Some(counts) = counts.build() {
        for (name, count, layout) in counts.sorted.iter() {
            if let Some(layout) = layout {
                assert_eq!(layout.len(), *count as usize, "a layout of another length");
            }
            let _ = counts.get(name);
        }
    }
}
