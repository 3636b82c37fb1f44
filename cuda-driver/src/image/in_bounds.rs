//! What [`Image::check`](super::Image::check) promises, stated a second time, independently of
//! the checks (in 128-bit arithmetic, reading past the end as `0xFF`): for an accepted binary,
//! everything its headers point to lies within its bytes. The property tests and the fuzz
//! targets hold every accepted image to it.

/// An accepted ELF image: its program headers and segments, its section header table and
/// every section with bytes lie within `b`, and the section-name table is one of its sections.
pub(crate) fn elf_in_bounds(b: &[u8]) -> bool {
    let n = b.len() as u128;
    let u = |at: usize, w: usize| -> u128 {
        let mut v = 0u128;
        for i in (0..w).rev() {
            v = (v << 8) | *b.get(at + i).unwrap_or(&0xFF) as u128;
        }
        v
    };
    if n < 64 || u(0x34, 2) < 64 {
        return false;
    }
    let (phoff, phent, phnum) = (u(0x20, 8), u(0x36, 2), u(0x38, 2));
    if phnum > 0 {
        if phent < 56 || phoff + phent * phnum > n {
            return false;
        }
        for i in 0..phnum {
            let at = (phoff + i * phent) as usize;
            if u(at + 8, 8) + u(at + 0x20, 8) > n {
                return false;
            }
        }
    }
    let (shoff, shent) = (u(0x28, 8), u(0x3A, 2));
    if shoff == 0 {
        return u(0x3C, 2) == 0;
    }
    if shent < 64 || shoff + shent > n {
        return false;
    }
    let mut shnum = u(0x3C, 2);
    if shnum == 0 {
        shnum = u(shoff as usize + 0x20, 8);
    }
    if shoff + shent * shnum > n {
        return false;
    }
    let mut names = u(0x3E, 2);
    if names == 0xFFFF {
        names = u(shoff as usize + 0x28, 4);
    }
    if names >= shnum {
        return false;
    }
    for i in 0..shnum {
        let at = (shoff + i * shent) as usize;
        let kind = u(at + 4, 4);
        if kind != 0 && kind != 8 && u(at + 0x18, 8) + u(at + 0x20, 8) > n {
            return false;
        }
    }
    true
}

/// An accepted fatbin: its entries lie within `b`, each entry's header and payload within the
/// entries, and each uncompressed cubin in it is in bounds as [`elf_in_bounds`] says.
pub(crate) fn fatbin_in_bounds(b: &[u8]) -> bool {
    let n = b.len() as u128;
    let u = |at: u128, w: u128| -> u128 {
        (0..w).rev().fold(0u128, |v, i| {
            (v << 8) | *b.get((at + i) as usize).unwrap_or(&0xFF) as u128
        })
    };
    if n < 16 {
        return false;
    }
    let (header, size) = (u(6, 2), u(8, 8));
    let end = header + size;
    if header < 16 || end > n {
        return false;
    }
    let mut pos = header;
    while pos < end {
        let (kind, h, payload) = (u(pos, 2), u(pos + 4, 4), u(pos + 8, 8));
        if pos + 16 > end || h < 16 || pos + h + payload > end {
            return false;
        }
        let data = &b[(pos + h) as usize..(pos + h + payload) as usize];
        let compressed =
            (h >= 0x30 && u(pos + 0x28, 8) & 0x2000 != 0) || (h >= 0x14 && u(pos + 0x10, 4) != 0);
        if kind == 2 && !compressed && data.starts_with(b"\x7fELF") && !elf_in_bounds(data) {
            return false;
        }
        pos += h + payload;
    }
    true
}
