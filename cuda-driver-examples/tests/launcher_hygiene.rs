//! The launchers cuda-driver-build generates (`build.rs`) are `include!`d in the user's
//! module, so they name everything by its full path: here they compile in a module without
//! the prelude whose own `assert!`, `concat!`, `core`, `Option`, `Ok`, `f32`, `str`, ... stand
//! for something else, and their size checks still run (`::core::assert!`).

#[no_implicit_prelude]
#[allow(dead_code, unused_macros, unused_imports, non_camel_case_types)]
mod hostile {
    // Macros that check nothing or stand for something else.
    macro_rules! assert { ($($t:tt)*) => {}; }
    macro_rules! concat { ($($t:tt)*) => { "" }; }
    macro_rules! include_str { ($($t:tt)*) => { "" }; }
    macro_rules! compile_error { ($($t:tt)*) => {}; }
    // Modules, types, values, traits and primitive types under the names of std's.
    pub mod core {}
    pub mod std {}
    pub mod cuda_driver {}
    pub struct Option;
    pub struct Some;
    pub struct None;
    pub struct Result;
    pub struct Ok;
    pub struct Err;
    pub struct Vec;
    pub struct String;
    pub struct Box;
    pub trait Clone {}
    pub trait Copy {}
    pub struct str;
    pub struct f32;
    pub struct f64;
    pub struct i32;
    pub struct u32;
    pub struct u64;
    pub struct usize;

    pub mod vector_add {
        ::core::include!(::core::concat!(::core::env!("OUT_DIR"), "/vector_add.rs"));
    }
    pub mod bench {
        ::core::include!(::core::concat!(::core::env!("OUT_DIR"), "/bench.rs"));
    }
    pub mod typed_kernels {
        ::core::include!(::core::concat!(::core::env!("OUT_DIR"), "/typed_kernels.rs"));
    }
}

#[test]
fn generated_launchers_compile_in_a_module_without_prelude_and_own_assert_and_types() {
    // The embedded PTX is the real one (not the hostile `include_str!`'s empty string).
    assert!(hostile::vector_add::PTX.contains(".entry VecAdd"));
    assert!(hostile::typed_kernels::PTX.ends_with('\0'));
    assert_eq!(hostile::bench::Add4::ENTRY, "add4");
}
