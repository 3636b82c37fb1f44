//! Fatbins: the bounds check of a safe load, and the entries to read parameter counts from.
//!
//! A fatbin (`nvcc -fatbin`) is a 16-byte header (magic `0xBA55ED50` u32, version u16 = 1,
//! header size u16, size of the entries u64) followed by entries, each a header (kind u16:
//! 1 PTX, 2 cubin; version u16; header size u32; payload size u64; compressed size u32 at
//! 0x10; the object name's offset and length u32 at 0x20 and 0x24; flags u64 at 0x28, bit
//! 0x2000 for a compressed payload) and its payload. The check bounds the header, every entry
//! header and payload (and object name) by the entries' size, and that by the image, and checks
//! every uncompressed embedded cubin as [`elf::check`] does.

use super::{elf, ptx, read_u16, read_u32, read_u64, sub, within, CountsBuilder};

/// The fatbin magic.
pub(crate) const MAGIC: u32 = 0xBA55_ED50;
const HEADER_MIN: u64 = 16;
/// The fields up to the payload size.
const ENTRY_MIN: u64 = 16;
const KIND_PTX: u64 = 1;
const KIND_ELF: u64 = 2;
const FLAG_COMPRESSED: u64 = 0x2000;

/// One entry of a fatbin.
pub(crate) struct Entry<'a> {
    pub(crate) kind: u64,
    pub(crate) compressed: bool,
    pub(crate) payload: &'a [u8],
}

/// The entries of a fatbin, all within bounds, or why not.
pub(crate) fn entries(b: &[u8]) -> Result<Vec<Entry<'_>>, String> {
    let len = b.len();
    if read_u32(b, 0) != Some(MAGIC as u64) {
        return Err("no fatbin magic 0xBA55ED50".into());
    }
    let (Some(version), Some(header), Some(size)) =
        (read_u16(b, 4), read_u16(b, 6), read_u64(b, 8))
    else {
        return Err(format!("{len} bytes, fewer than the 16 of a fatbin header"));
    };
    if version != 1 {
        return Err(format!("version {version}; this crate checks version 1"));
    }
    if header < HEADER_MIN {
        return Err(format!("a header size of {header} bytes, fewer than 16"));
    }
    if !within(header, size, len) {
        return Err(format!(
            "its header says {header} + {size:#x} bytes, past the end ({len:#x} bytes)"
        ));
    }
    let end = header + size;
    let mut pos = header;
    let mut out = Vec::new();
    while pos < end {
        let i = out.len();
        if !within(pos, ENTRY_MIN, end as usize) {
            return Err(format!(
                "entry {i} at offset {pos:#x}: {} bytes left, fewer than an entry header",
                end - pos
            ));
        }
        // Within `end` (checked above): the reads cannot fail.
        let kind = read_u16(b, pos).unwrap_or(0);
        let entry_header = read_u32(b, pos + 4).unwrap_or(0);
        let payload = read_u64(b, pos + 8).unwrap_or(0);
        if entry_header < ENTRY_MIN || !within(pos, entry_header, end as usize) {
            return Err(format!(
                "entry {i} at offset {pos:#x}: a header of {entry_header} bytes"
            ));
        }
        let start = pos + entry_header;
        if !within(start, payload, end as usize) {
            return Err(format!(
                "entry {i} at offset {pos:#x}: a payload of {payload:#x} bytes past the end of \
                 the entries ({end:#x})"
            ));
        }
        let field = |at: u64, read: fn(&[u8], u64) -> Option<u64>, width: u64| {
            if at + width <= entry_header {
                read(b, pos + at)
            } else {
                None
            }
        };
        let compressed_size = field(0x10, read_u32, 4).unwrap_or(0);
        let flags = field(0x28, read_u64, 8).unwrap_or(0);
        if let (Some(name), Some(name_len)) = (field(0x20, read_u32, 4), field(0x24, read_u32, 4)) {
            if name != 0 && !within(pos + name, name_len, (start + payload) as usize) {
                return Err(format!(
                    "entry {i} at offset {pos:#x}: an object name past the entry"
                ));
            }
        }
        if compressed_size > payload {
            return Err(format!(
                "entry {i} at offset {pos:#x}: {compressed_size:#x} compressed bytes in a payload \
                 of {payload:#x}"
            ));
        }
        out.push(Entry {
            kind,
            compressed: flags & FLAG_COMPRESSED != 0 || compressed_size != 0,
            payload: sub(b, start, payload).unwrap_or_default(),
        });
        pos = start + payload;
    }
    Ok(out)
}

/// Checks a fatbin and the cubins in it; the reason otherwise.
pub(crate) fn check(b: &[u8]) -> Result<(), String> {
    for (i, e) in entries(b)?.iter().enumerate() {
        if e.kind == KIND_ELF && !e.compressed && e.payload.starts_with(b"\x7fELF") {
            elf::check(e.payload).map_err(|r| format!("entry {i}, a cubin: {r}"))?;
        }
    }
    Ok(())
}

/// The parameter counts of the kernels in the uncompressed entries of a fatbin.
pub(crate) fn param_counts<'a>(b: &'a [u8], out: &mut CountsBuilder<'a>) {
    let Ok(entries) = entries(b) else { return };
    for e in entries.iter().filter(|e| !e.compressed) {
        match e.kind {
            KIND_ELF => elf::param_counts(e.payload, out),
            KIND_PTX => ptx::param_counts(e.payload, out),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{cubin, fatbin_of, FatEntry};
    use super::*;

    #[test]
    fn fatbins_are_checked_against_their_length() {
        let mut b = vec![0u8; 64];
        b[..4].copy_from_slice(&MAGIC.to_le_bytes());
        b[4..6].copy_from_slice(&1u16.to_le_bytes());
        b[6..8].copy_from_slice(&16u16.to_le_bytes());
        // 48 bytes of entries: one of a 48-byte header and no payload.
        b[8..16].copy_from_slice(&48u64.to_le_bytes());
        b[16..18].copy_from_slice(&2u16.to_le_bytes());
        b[20..24].copy_from_slice(&48u32.to_le_bytes());
        assert!(check(&b).is_ok());
        b[8..16].copy_from_slice(&49u64.to_le_bytes());
        assert!(check(&b).unwrap_err().contains("past the end"));
        assert!(check(&b[..10]).is_err());
        // Another version.
        let mut v = b.clone();
        v[8..16].copy_from_slice(&48u64.to_le_bytes());
        v[4..6].copy_from_slice(&2u16.to_le_bytes());
        assert!(check(&v).unwrap_err().contains("version 2"));
    }

    #[test]
    fn entries_are_bounded_by_the_fatbin() {
        let elf = cubin(&[("k", &[8, 8])]);
        let good = fatbin_of(&[FatEntry::elf(&elf), FatEntry::ptx(b".version 8.0\n")]);
        assert!(check(&good).is_ok());
        assert_eq!(entries(&good).unwrap().len(), 2);
        // The first entry's payload size past the entries' end.
        let mut b = good.clone();
        b[16 + 8..16 + 16].copy_from_slice(&(good.len() as u64).to_le_bytes());
        assert!(check(&b).unwrap_err().contains("entry 0"));
        // An entry header size below 16, or past the end.
        let mut b = good.clone();
        b[16 + 4..16 + 8].copy_from_slice(&8u32.to_le_bytes());
        assert!(check(&b).is_err());
        let mut b = good.clone();
        b[16 + 4..16 + 8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(check(&b).is_err());
        // Trailing bytes that are no entry.
        let mut b = good.clone();
        let size = u64::from_le_bytes(b[8..16].try_into().unwrap());
        b[8..16].copy_from_slice(&(size + 8).to_le_bytes());
        b.extend_from_slice(&[0; 8]);
        assert!(check(&b)
            .unwrap_err()
            .contains("fewer than an entry header"));
        // A broken cubin inside.
        let mut bad_elf = elf.clone();
        bad_elf[0x3C..0x3E].copy_from_slice(&5000u16.to_le_bytes());
        let b = fatbin_of(&[FatEntry::elf(&bad_elf)]);
        assert!(check(&b).unwrap_err().contains("entry 0, a cubin"));
        // ... unless it is compressed: the driver decompresses it, the crate cannot check it.
        let b = fatbin_of(&[FatEntry::elf(&bad_elf).compressed()]);
        assert!(check(&b).is_ok());
    }

    #[test]
    fn counts_skip_compressed_entries() {
        let elf = cubin(&[("k", &[8, 8])]);
        let b = fatbin_of(&[FatEntry::elf(&elf).compressed()]);
        let mut out = CountsBuilder::default();
        param_counts(&b, &mut out);
        assert!(out.build().is_none());
    }
}
