//! Builders of synthetic images for the tests: cubins with `.nv.info` sections, fatbins; and
//! the property tests' configuration for the crate's pure-Rust parts, which CI also runs
//! under Miri.

use proptest::test_runner::Config;

use super::fatbin::MAGIC;

/// `native` as it is, or a handful of cases under Miri (which interprets every step, some
/// thousand times slower), without failure files there (Miri isolates the program from the
/// file system).
pub(crate) fn or_few_under_miri(native: Config) -> Config {
    if cfg!(miri) {
        Config {
            cases: 4,
            failure_persistence: None,
            ..native
        }
    } else {
        native
    }
}

/// One `.nv.info` attribute.
pub(crate) enum Record {
    /// `EIFMT_NVAL`.
    N(u8),
    /// `EIFMT_HVAL` with its value.
    H(u8, u16),
    /// `EIFMT_SVAL` with its bytes.
    S(u8, Vec<u8>),
}

impl Record {
    /// `EIATTR_KPARAM_INFO` for parameter `ordinal` at `offset`, `size` bytes.
    pub(crate) fn kparam(ordinal: u16, offset: u16, size: u32) -> Record {
        let mut v = 0u32.to_le_bytes().to_vec();
        v.extend_from_slice(&ordinal.to_le_bytes());
        v.extend_from_slice(&offset.to_le_bytes());
        v.extend_from_slice(&(0x1f000 | (size << 18)).to_le_bytes());
        Record::S(0x17, v)
    }
}

/// The bytes of a `.nv.info.<kernel>` section.
pub(crate) fn nv_info(records: &[Record]) -> Vec<u8> {
    let mut out = Vec::new();
    for r in records {
        match r {
            Record::N(a) => out.extend_from_slice(&[0x01, *a, 0, 0]),
            Record::H(a, v) => {
                out.extend_from_slice(&[0x03, *a]);
                out.extend_from_slice(&v.to_le_bytes());
            }
            Record::S(a, bytes) => {
                out.extend_from_slice(&[0x04, *a]);
                out.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
                out.extend_from_slice(bytes);
            }
        }
    }
    out
}

/// A 64-bit little-endian ELF file with the given named sections (type PROGBITS), a
/// section-name table and a section header table at the end.
pub(crate) fn elf(sections: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut b = vec![0u8; 0x40];
    b[..4].copy_from_slice(b"\x7fELF");
    b[4] = 2; // ELFCLASS64
    b[5] = 1; // little-endian
    b[6] = 1; // EV_CURRENT
    b[0x12..0x14].copy_from_slice(&190u16.to_le_bytes()); // EM_CUDA
    b[0x34..0x36].copy_from_slice(&0x40u16.to_le_bytes());
    // The names: every section's, then the name table's own.
    let mut names = vec![0u8];
    let mut name_at = Vec::new();
    for (name, _) in sections {
        name_at.push(names.len() as u32);
        names.extend_from_slice(name.as_bytes());
        names.push(0);
    }
    name_at.push(names.len() as u32);
    names.extend_from_slice(b".shstrtab\0");
    // Section data, each 8-aligned; the name table last. (name, type, offset, size)
    let mut headers = vec![(0u32, 0u32, 0u64, 0u64)];
    let data = sections
        .iter()
        .map(|(_, d)| (1u32, d.as_slice()))
        .chain(std::iter::once((3u32, names.as_slice())));
    for ((kind, d), name) in data.zip(&name_at) {
        while b.len() % 8 != 0 {
            b.push(0);
        }
        headers.push((*name, kind, b.len() as u64, d.len() as u64));
        b.extend_from_slice(d);
    }
    while b.len() % 8 != 0 {
        b.push(0);
    }
    let shoff = b.len() as u64;
    for (name, kind, offset, size) in &headers {
        let mut h = [0u8; 0x40];
        h[..4].copy_from_slice(&name.to_le_bytes());
        h[4..8].copy_from_slice(&kind.to_le_bytes());
        h[0x18..0x20].copy_from_slice(&offset.to_le_bytes());
        h[0x20..0x28].copy_from_slice(&size.to_le_bytes());
        b.extend_from_slice(&h);
    }
    b[0x28..0x30].copy_from_slice(&shoff.to_le_bytes());
    b[0x3A..0x3C].copy_from_slice(&0x40u16.to_le_bytes());
    b[0x3C..0x3E].copy_from_slice(&(headers.len() as u16).to_le_bytes());
    b[0x3E..0x40].copy_from_slice(&(headers.len() as u16 - 1).to_le_bytes());
    b
}

/// A cubin with `.text.<k>` and `.nv.info.<k>` for each kernel `(k, parameter sizes)`, the
/// parameters at 8-byte offsets, their records in reverse order (as the compiler writes
/// them).
pub(crate) fn cubin(kernels: &[(&str, &[u32])]) -> Vec<u8> {
    let mut sections = vec![(".nv.info".to_string(), nv_info(&[Record::H(0x2f, 0)]))];
    for (k, sizes) in kernels {
        let mut records = vec![Record::H(0x2f, 16), Record::N(0x2a)];
        for (i, &s) in sizes.iter().enumerate().rev() {
            records.push(Record::kparam(i as u16, i as u16 * 8, s));
        }
        let total = sizes.len() as u16 * 8;
        let mut cbank = 0u32.to_le_bytes().to_vec();
        cbank.extend_from_slice(&0x160u16.to_le_bytes());
        cbank.extend_from_slice(&total.to_le_bytes());
        records.push(Record::S(0x0a, cbank));
        records.push(Record::H(0x19, total));
        sections.push((format!(".text.{k}"), vec![0u8; 16]));
        sections.push((format!(".nv.info.{k}"), nv_info(&records)));
    }
    elf(&sections)
}

/// The old tests' ELF: one PROGBITS section header at 0x40 of (offset, size), `total` bytes.
pub(crate) fn elf_with_section(offset: u64, size: u64, total: usize) -> Vec<u8> {
    let mut b = vec![0u8; total];
    b[..4].copy_from_slice(b"\x7fELF");
    b[4] = 2; // ELFCLASS64
    b[5] = 1; // little-endian
    b[0x34..0x36].copy_from_slice(&0x40u16.to_le_bytes());
    // One section header at 0x40, 0x40 bytes, of type PROGBITS.
    b[0x28..0x30].copy_from_slice(&0x40u64.to_le_bytes());
    b[0x3A..0x3C].copy_from_slice(&0x40u16.to_le_bytes());
    b[0x3C..0x3E].copy_from_slice(&1u16.to_le_bytes());
    b[0x44..0x48].copy_from_slice(&1u32.to_le_bytes());
    b[0x58..0x60].copy_from_slice(&offset.to_le_bytes());
    b[0x60..0x68].copy_from_slice(&size.to_le_bytes());
    b
}

/// One entry of a synthetic fatbin.
pub(crate) struct FatEntry {
    kind: u16,
    flags: u64,
    payload: Vec<u8>,
}

impl FatEntry {
    pub(crate) fn elf(cubin: &[u8]) -> FatEntry {
        FatEntry {
            kind: 2,
            flags: 0x11,
            payload: cubin.to_vec(),
        }
    }

    pub(crate) fn ptx(text: &[u8]) -> FatEntry {
        FatEntry {
            kind: 1,
            flags: 0x11,
            payload: text.to_vec(),
        }
    }

    /// Marked compressed (the payload is left as it is).
    pub(crate) fn compressed(mut self) -> FatEntry {
        self.flags |= 0x2000;
        self
    }
}

/// A fatbin of `entries`, each with a 64-byte header and its payload padded to 8 bytes.
pub(crate) fn fatbin_of(entries: &[FatEntry]) -> Vec<u8> {
    let mut body = Vec::new();
    for e in entries {
        let mut payload = e.payload.clone();
        while payload.len() % 8 != 0 {
            payload.push(0);
        }
        let mut h = [0u8; 0x40];
        h[..2].copy_from_slice(&e.kind.to_le_bytes());
        h[2..4].copy_from_slice(&0x0101u16.to_le_bytes());
        h[4..8].copy_from_slice(&0x40u32.to_le_bytes());
        h[8..16].copy_from_slice(&(payload.len() as u64).to_le_bytes());
        h[0x18..0x1a].copy_from_slice(&0u16.to_le_bytes());
        h[0x1a..0x1c].copy_from_slice(&8u16.to_le_bytes());
        h[0x1c..0x20].copy_from_slice(&90u32.to_le_bytes());
        h[0x28..0x30].copy_from_slice(&e.flags.to_le_bytes());
        body.extend_from_slice(&h);
        body.extend_from_slice(&payload);
    }
    let mut b = MAGIC.to_le_bytes().to_vec();
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&16u16.to_le_bytes());
    b.extend_from_slice(&(body.len() as u64).to_le_bytes());
    b.extend_from_slice(&body);
    b
}
