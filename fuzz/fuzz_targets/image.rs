//! What a safe load checks: the kind of image its first bytes tell, its check, its parameter
//! counts; an accepted binary lies within its bytes, accepted text has no inner NUL.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| cuda_driver::__fuzz::image(data));
