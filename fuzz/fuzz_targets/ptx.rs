//! PTX text: the parameter counts and layouts of the `.entry` declarations.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cuda_driver::__fuzz::ptx(data));
