//! ELF cubins: the bounds check of a safe load, and kernel parameter counts from the
//! `.nv.info.<kernel>` sections.
//!
//! A cubin is a little-endian 64-bit ELF file. The check bounds everything the driver finds
//! through the ELF header against the image: the program header table and each segment's file
//! range, the section header table (with extended numbering), the section-name string table
//! and every section's (offset, size), and every section name within that table.
//!
//! A kernel's `.nv.info.<kernel>` section is a list of attributes, each `format: u8,
//! attribute: u8` followed by a 2-byte value (`EIFMT_NVAL` 0x01, `EIFMT_BVAL` 0x02, `EIFMT_HVAL`
//! 0x03) or by a 2-byte size and that many bytes (`EIFMT_SVAL` 0x04). Each parameter has one
//! `EIATTR_KPARAM_INFO` (0x17, SVAL, 12 bytes: index u32, ordinal u16, offset u16, flags u32);
//! `EIATTR_PARAM_CBANK` (0x0a, SVAL: symbol u32, offset u16, size u16) and
//! `EIATTR_CBANK_PARAM_SIZE` (0x19, HVAL) give the size of all parameters.

use super::{read_u16, read_u32, read_u64, sub, within, CountsBuilder};

/// `SHT_NULL`: an unused section header.
const SHT_NULL: u64 = 0;
/// `SHT_NOBITS`: a section without bytes in the file (`.bss`, `.nv.shared.*`).
const SHT_NOBITS: u64 = 8;
/// `SHN_XINDEX`: the section-name table's index is in section 0's `sh_link`.
const SHN_XINDEX: u64 = 0xFFFF;

const EIFMT_NVAL: u8 = 0x01;
const EIFMT_BVAL: u8 = 0x02;
const EIFMT_HVAL: u8 = 0x03;
const EIFMT_SVAL: u8 = 0x04;
const EIATTR_PARAM_CBANK: u8 = 0x0a;
const EIATTR_KPARAM_INFO: u8 = 0x17;
const EIATTR_CBANK_PARAM_SIZE: u8 = 0x19;

/// One section header.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Section {
    pub(crate) name: u64,
    pub(crate) kind: u64,
    pub(crate) offset: u64,
    pub(crate) size: u64,
    pub(crate) link: u64,
}

impl Section {
    /// Whether the section occupies `size` bytes at `offset` in the file.
    fn has_bytes(&self) -> bool {
        self.kind != SHT_NULL && self.kind != SHT_NOBITS
    }
}

/// The section header table: where it is, and how many entries of what size.
struct Table {
    offset: u64,
    entsize: u64,
    count: u64,
    names: u64,
}

impl Table {
    fn section(&self, b: &[u8], i: u64) -> Option<Section> {
        let at = self.offset.checked_add(i.checked_mul(self.entsize)?)?;
        Some(Section {
            name: read_u32(b, at)?,
            kind: read_u32(b, at.checked_add(0x04)?)?,
            offset: read_u64(b, at.checked_add(0x18)?)?,
            size: read_u64(b, at.checked_add(0x20)?)?,
            link: read_u32(b, at.checked_add(0x28)?)?,
        })
    }
}

/// Reads the section header table's position, checking that it lies within `b`; `None`
/// inside when the file has no sections.
fn table(b: &[u8]) -> Result<Option<Table>, String> {
    let offset = read_u64(b, 0x28).ok_or("truncated ELF header")?;
    let entsize = read_u16(b, 0x3A).ok_or("truncated ELF header")?;
    let mut count = read_u16(b, 0x3C).ok_or("truncated ELF header")?;
    let mut names = read_u16(b, 0x3E).ok_or("truncated ELF header")?;
    if offset == 0 {
        return if count == 0 {
            Ok(None)
        } else {
            Err(format!("{count} sections, but no section header table"))
        };
    }
    if entsize < 0x40 {
        return Err(format!("section headers of {entsize} bytes, fewer than 64"));
    }
    if !within(offset, entsize, b.len()) {
        return Err(format!(
            "the section header table at offset {offset:#x} lies past the end ({:#x} bytes)",
            b.len()
        ));
    }
    let mut t = Table {
        offset,
        entsize,
        count: 1,
        names: 0,
    };
    let first = t.section(b, 0).ok_or("truncated section header 0")?;
    if count == 0 {
        // Extended numbering: the count is section 0's size.
        count = first.size;
    }
    if names == SHN_XINDEX {
        names = first.link;
    }
    let bytes = count.checked_mul(entsize);
    if !bytes.is_some_and(|n| within(offset, n, b.len())) {
        return Err(format!(
            "the section header table ({count} x {entsize} bytes at offset {offset:#x}) lies \
             past the end ({:#x} bytes)",
            b.len()
        ));
    }
    if names >= count {
        return Err(format!(
            "the section-name table is section {names}, but there are {count} sections"
        ));
    }
    t.count = count;
    t.names = names;
    Ok(Some(t))
}

/// Checks that everything the ELF headers point to lies within `b`; the reason otherwise.
pub(crate) fn check(b: &[u8]) -> Result<(), String> {
    if b.len() < 0x40 {
        return Err(format!(
            "{} bytes, fewer than the 64 of an ELF64 header",
            b.len()
        ));
    }
    if b[4] != 2 || b[5] != 1 {
        return Err(format!(
            "not a little-endian 64-bit ELF file (class {}, data encoding {}); cubins are",
            b[4], b[5]
        ));
    }
    let ehsize = read_u16(b, 0x34).unwrap_or(0);
    if ehsize < 0x40 || !within(0, ehsize, b.len()) {
        return Err(format!("an ELF header size of {ehsize} bytes"));
    }
    check_segments(b)?;
    let Some(t) = table(b)? else {
        return Ok(());
    };
    for i in 0..t.count {
        let s = t.section(b, i).ok_or("truncated section header")?;
        if s.has_bytes() && !within(s.offset, s.size, b.len()) {
            return Err(format!(
                "section {i} ({:#x} bytes at offset {:#x}) lies past the end ({:#x} bytes)",
                s.size,
                s.offset,
                b.len()
            ));
        }
    }
    if t.names != 0 {
        let names = t.section(b, t.names).ok_or("truncated section header")?;
        if !names.has_bytes() {
            return Err(format!(
                "the section-name table (section {}) has no bytes in the file",
                t.names
            ));
        }
        for i in 0..t.count {
            let s = t.section(b, i).ok_or("truncated section header")?;
            if s.kind != SHT_NULL && s.name >= names.size.max(1) {
                return Err(format!(
                    "section {i}'s name at {:#x} lies past the section-name table ({:#x} bytes)",
                    s.name, names.size
                ));
            }
        }
    }
    Ok(())
}

fn check_segments(b: &[u8]) -> Result<(), String> {
    let offset = read_u64(b, 0x20).unwrap_or(0);
    let entsize = read_u16(b, 0x36).unwrap_or(0);
    let count = read_u16(b, 0x38).unwrap_or(0);
    if count == 0 {
        return Ok(());
    }
    if entsize < 0x38 || !within(offset, entsize * count, b.len()) {
        return Err(format!(
            "the program header table ({count} x {entsize} bytes at offset {offset:#x}) lies \
             past the end ({:#x} bytes)",
            b.len()
        ));
    }
    for i in 0..count {
        let at = offset + i * entsize;
        let (file_offset, file_size) = (
            read_u64(b, at + 0x08).unwrap_or(u64::MAX),
            read_u64(b, at + 0x20).unwrap_or(u64::MAX),
        );
        if !within(file_offset, file_size, b.len()) {
            return Err(format!(
                "segment {i} ({file_size:#x} bytes at offset {file_offset:#x}) lies past the end \
                 ({:#x} bytes)",
                b.len()
            ));
        }
    }
    Ok(())
}

/// Every section with bytes in the file, with its name (empty when unnamed): for a checked
/// image; on any other input it stops at the first thing out of bounds.
pub(crate) fn sections(b: &[u8]) -> Vec<(&[u8], &[u8])> {
    let mut out = Vec::new();
    let Ok(Some(t)) = table(b) else {
        return out;
    };
    let names = t.section(b, t.names).and_then(|s| sub(b, s.offset, s.size));
    for i in 0..t.count {
        let Some(s) = t.section(b, i) else { break };
        if !s.has_bytes() {
            continue;
        }
        let Some(data) = sub(b, s.offset, s.size) else {
            break;
        };
        let name = names
            .and_then(|n| n.get(usize::try_from(s.name).ok()?..))
            .map(|n| &n[..n.iter().position(|&c| c == 0).unwrap_or(n.len())])
            .unwrap_or_default();
        out.push((name, data));
    }
    out
}

/// The parameter counts of a cubin's kernels, from their `.nv.info.<kernel>` sections.
pub(crate) fn param_counts<'a>(b: &'a [u8], out: &mut CountsBuilder<'a>) {
    if check(b).is_err() {
        return;
    }
    for (name, data) in sections(b) {
        let Some(kernel) = name.strip_prefix(b".nv.info.") else {
            continue;
        };
        let Ok(kernel) = std::str::from_utf8(kernel) else {
            continue;
        };
        if !kernel.is_empty() {
            out.insert(kernel, nv_info_param_count(data));
        }
    }
}

/// The parameter count a kernel's `.nv.info` attributes give, when they are well-formed and
/// consistent: one `EIATTR_KPARAM_INFO` per parameter with ordinals `0..n`; a kernel without
/// parameters counts only when a parameter size of 0 is recorded.
pub(crate) fn nv_info_param_count(d: &[u8]) -> Option<u32> {
    let mut ordinals = Vec::new();
    let mut sizes = Vec::new();
    let mut pos = 0usize;
    while pos < d.len() {
        let header = d.get(pos..pos.checked_add(4)?)?;
        let (format, attribute) = (header[0], header[1]);
        let value = u16::from_le_bytes([header[2], header[3]]);
        pos += 4;
        match format {
            EIFMT_NVAL | EIFMT_BVAL => {}
            EIFMT_HVAL => {
                if attribute == EIATTR_CBANK_PARAM_SIZE {
                    sizes.push(value);
                }
            }
            EIFMT_SVAL => {
                let data = d.get(pos..pos.checked_add(value as usize)?)?;
                pos += data.len();
                match attribute {
                    EIATTR_KPARAM_INFO => {
                        // index u32, ordinal u16, offset u16, flags u32.
                        let ordinal = data.get(4..6)?;
                        ordinals.push(u16::from_le_bytes([ordinal[0], ordinal[1]]));
                    }
                    EIATTR_PARAM_CBANK => {
                        // symbol u32, offset u16, size u16.
                        let size = data.get(6..8)?;
                        sizes.push(u16::from_le_bytes([size[0], size[1]]));
                    }
                    _ => {}
                }
            }
            _ => return None,
        }
    }
    ordinals.sort_unstable();
    if ordinals.iter().enumerate().any(|(i, &o)| o as usize != i) {
        return None;
    }
    let n = ordinals.len() as u32;
    let no_bytes = !sizes.is_empty() && sizes.iter().all(|&s| s == 0);
    match n {
        0 if no_bytes => Some(0),
        0 => None,
        _ if sizes.contains(&0) => None,
        _ => Some(n),
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{cubin, elf_with_section, nv_info, or_few_under_miri, Record};
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn elf_images_are_checked_against_their_length() {
        assert!(check(&elf_with_section(0x80, 0x20, 0xA0)).is_ok());
        // A section past the end.
        let e = check(&elf_with_section(0x80, 0x21, 0xA0)).unwrap_err();
        assert!(e.contains("section 0"), "{e}");
        // An offset that overflows.
        assert!(check(&elf_with_section(u64::MAX, 2, 0xA0)).is_err());
        // A truncated header.
        assert!(check(b"\x7fELF\x02\x01").is_err());
        // 32-bit ELF is refused.
        let mut b = elf_with_section(0x80, 0x20, 0xA0);
        b[4] = 1;
        let e = check(&b).unwrap_err();
        assert!(e.contains("64-bit"), "{e}");
        // A section table past the end.
        let mut b = elf_with_section(0x80, 0x20, 0xA0);
        b[0x3C..0x3E].copy_from_slice(&3u16.to_le_bytes());
        assert!(check(&b).is_err());
    }

    #[test]
    fn the_section_name_table_and_names_are_bounded() {
        let good = cubin(&[("k", &[8])]);
        assert!(check(&good).is_ok());
        // The name table's index past the section count.
        let mut b = good.clone();
        b[0x3E..0x40].copy_from_slice(&200u16.to_le_bytes());
        assert!(check(&b).unwrap_err().contains("section-name table"));
        // A name offset past the table: rewrite section 1's sh_name.
        let shoff = u64::from_le_bytes(good[0x28..0x30].try_into().unwrap()) as usize;
        let mut b = good.clone();
        b[shoff + 0x40..shoff + 0x44].copy_from_slice(&0xFFFFu32.to_le_bytes());
        assert!(
            check(&b).unwrap_err().contains("name"),
            "{}",
            check(&b).unwrap_err()
        );
        // Extended numbering: count 0 in the header, the real count in section 0's size.
        let count = u16::from_le_bytes(good[0x3C..0x3E].try_into().unwrap()) as u64;
        let mut b = good.clone();
        b[0x3C..0x3E].copy_from_slice(&0u16.to_le_bytes());
        b[shoff + 0x20..shoff + 0x28].copy_from_slice(&count.to_le_bytes());
        assert!(check(&b).is_ok());
        b[shoff + 0x20..shoff + 0x28].copy_from_slice(&(count + 1000).to_le_bytes());
        assert!(check(&b).is_err());
    }

    #[test]
    fn parameter_counts_come_from_nv_info_sections() {
        let b = cubin(&[("saxpy", &[4, 8, 8, 4]), ("_Z4nonev", &[]), ("one", &[16])]);
        let mut out = CountsBuilder::default();
        param_counts(&b, &mut out);
        let c = out.build().unwrap();
        assert_eq!(c.get("saxpy"), Some(4));
        assert_eq!(c.get("_Z4nonev"), Some(0));
        assert_eq!(c.get("one"), Some(1));
        assert_eq!(c.get("missing"), None);
    }

    #[test]
    fn nv_info_records_are_read_by_format() {
        // Other attributes of every format around the parameters.
        let d = nv_info(&[
            Record::H(0x2f, 12),
            Record::N(0x2a),
            Record::S(0x0a, [0u8, 0, 0, 0, 0x60, 0x01, 12, 0].to_vec()),
            Record::kparam(1, 8, 4),
            Record::S(0x1c, vec![1, 2, 3, 4, 5, 6, 7, 8]),
            Record::kparam(0, 0, 8),
            Record::H(0x19, 12),
        ]);
        assert_eq!(nv_info_param_count(&d), Some(2));
        // Ordinals with a hole: unknown.
        let d = nv_info(&[Record::kparam(0, 0, 8), Record::kparam(2, 8, 8)]);
        assert_eq!(nv_info_param_count(&d), None);
        // No parameter records and no size: unknown, not 0.
        assert_eq!(nv_info_param_count(&nv_info(&[Record::H(0x2f, 8)])), None);
        // No parameter records but a size: unknown; a size of 0: none.
        assert_eq!(nv_info_param_count(&nv_info(&[Record::H(0x19, 8)])), None);
        assert_eq!(
            nv_info_param_count(&nv_info(&[Record::H(0x19, 0)])),
            Some(0)
        );
        // Parameters with a recorded size of 0: inconsistent.
        let d = nv_info(&[Record::kparam(0, 0, 8), Record::H(0x19, 0)]);
        assert_eq!(nv_info_param_count(&d), None);
        // A truncated record or an unknown format: unknown.
        let mut d = nv_info(&[Record::kparam(0, 0, 8), Record::H(0x19, 8)]);
        d.pop();
        assert_eq!(nv_info_param_count(&d), None);
        assert_eq!(nv_info_param_count(&[0x09, 0x17, 0, 0]), None);
    }

    proptest! {
        #![proptest_config(or_few_under_miri(ProptestConfig::default()))]

        #[test]
        fn random_bytes_never_panic(mut b in proptest::collection::vec(any::<u8>(), 0..512)) {
            if b.len() >= 6 {
                b[..4].copy_from_slice(b"\x7fELF");
                b[4] = 2;
                b[5] = 1;
            }
            let _ = check(&b);
            let _ = sections(&b);
            let mut out = CountsBuilder::default();
            param_counts(&b, &mut out);
            let _ = nv_info_param_count(&b);
        }
    }
}
