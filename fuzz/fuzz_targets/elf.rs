//! ELF cubins: the check, the sections, the `.nv.info` parameter counts; an accepted image
//! lies within its bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cuda_driver::__fuzz::elf(data));
