//! Fatbins: the entries, the check (with the cubins inside), the parameter counts; an
//! accepted fatbin lies within its bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cuda_driver::__fuzz::fatbin(data));
