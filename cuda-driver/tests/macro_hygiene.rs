//! `#[derive(DeviceRepr)]` names everything it expands to by its full path (`::core::assert!`,
//! `::core::mem::size_of`, `::cuda_driver::DeviceRepr`), so that nothing a user defines in the
//! deriving scope changes what its checks do. Here the scope has no prelude at all and its
//! own `assert!`, `core`, `std`, `Option`, `Result`, ...: a struct without padding still gets
//! the impl. The struct with padding in such a scope is refused: the `compile_fail` example on
//! [`cuda_driver::DeviceRepr`] (its error code is the failed padding check's, E0080).

#[no_implicit_prelude]
#[allow(dead_code, unused_macros, non_camel_case_types)]
mod hostile {
    // Macros that check nothing or stand for something else.
    macro_rules! assert {
        ($($t:tt)*) => {};
    }
    macro_rules! assert_eq {
        ($($t:tt)*) => {};
    }
    macro_rules! panic {
        ($($t:tt)*) => {};
    }
    macro_rules! compile_error {
        ($($t:tt)*) => {};
    }
    macro_rules! concat {
        ($($t:tt)*) => {
            ""
        };
    }
    macro_rules! stringify {
        ($($t:tt)*) => {
            ""
        };
    }
    // Modules, types, values and traits under the names of std's.
    pub mod core {}
    pub mod std {}
    pub mod alloc {}
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
    pub struct usize;
    pub struct str;
    pub trait Copy {}
    pub trait Clone {}
    pub trait Sized {}
    pub trait DeviceRepr {}
    pub fn size_of() {}
    pub fn align_of() {}
    pub fn assert_device_repr() {}
    pub fn assert_fields() {}

    #[repr(C)]
    #[derive(::core::clone::Clone, ::core::marker::Copy, ::cuda_driver::DeviceRepr)]
    pub struct Params {
        pub scale: f32,
        pub n: u32,
        pub offsets: [i32; 2],
        pub dir: ::cuda_driver::vector::Float4,
    }

    #[repr(transparent)]
    #[derive(::core::clone::Clone, ::core::marker::Copy, ::cuda_driver::DeviceRepr)]
    pub struct Handle(pub u64);
}

fn is_device_repr<T: cuda_driver::DeviceRepr>() {}

#[test]
fn a_struct_without_padding_derives_device_repr_in_a_scope_without_prelude_and_own_assert() {
    is_device_repr::<hostile::Params>();
    is_device_repr::<hostile::Handle>();
}
