//! What cuda-driver-build generates (`build.rs`) is `include!`d in the user's module, and the
//! examples' macros (`check!`, `ensure!`, `check_driver!`) expand in the caller's: both name
//! everything by its full path. Here they compile in a module without the prelude whose own
//! `assert!`, `concat!`, `format!`, `core`, `Option`, `Ok`, `f32`, `str`, ... stand for
//! something else, and the launchers' size checks still run (`::core::assert!`).

#[no_implicit_prelude]
#[allow(dead_code, unused_macros, unused_imports, non_camel_case_types)]
mod hostile {
    // Macros that check nothing or stand for something else.
    macro_rules! assert {
        ($($t:tt)*) => {};
    }
    macro_rules! concat {
        ($($t:tt)*) => {
            ""
        };
    }
    macro_rules! include_str {
        ($($t:tt)*) => {
            ""
        };
    }
    macro_rules! compile_error {
        ($($t:tt)*) => {};
    }
    macro_rules! format {
        ($($t:tt)*) => {
            ""
        };
    }
    macro_rules! stringify {
        ($($t:tt)*) => {
            ""
        };
    }
    macro_rules! eprintln {
        ($($t:tt)*) => {};
    }
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
        ::core::include!(::core::concat!(
            ::core::env!("OUT_DIR"),
            "/typed_kernels.rs"
        ));
    }

    pub fn checks(
        n: ::core::primitive::u32,
    ) -> ::core::result::Result<(), ::cuda_driver_examples::Failure> {
        ::cuda_driver_examples::ensure!(n < 100, "n = {n}");
        ::cuda_driver_examples::check_driver!(::cuda_driver_sys::CUDA_SUCCESS);
        ::cuda_driver_examples::check!(n % 2 == 0, "n = {n}");
        ::core::result::Result::Ok(())
    }
}

#[test]
fn generated_launchers_compile_in_a_module_without_prelude_and_own_macros_and_types() {
    // The embedded PTX is the real one (not the hostile `include_str!`'s empty string).
    assert!(hostile::vector_add::PTX.contains(".entry VecAdd"));
    assert!(hostile::typed_kernels::PTX.ends_with('\0'));
    assert_eq!(hostile::bench::Add4::ENTRY, "add4");
}

#[test]
fn the_examples_macros_check_in_a_module_without_prelude_and_own_macros() {
    assert!(hostile::checks(4).is_ok());
    let e = hostile::checks(3).unwrap_err().to_string();
    assert_eq!(e, "check failed: n % 2 == 0: n = 3");
}
