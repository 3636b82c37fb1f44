//! Macros shared by the modules.

/// Declares a `#[repr(transparent)]` newtype over a C enum's integer type. Its named constants
/// are generated into `consts.rs` by `cargo xtask bindgen`; any other value (a newer driver's)
/// is representable too, so no value the driver returns is undefined behaviour.
macro_rules! c_enum {
    ($(#[$m:meta])* $name:ident($raw:ty)) => {
        $(#[$m])*
        #[repr(transparent)]
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub(crate) $raw);

        impl $name {
            /// Wraps a raw value, also one that this crate's cuda.h does not name.
            pub const fn from_raw(raw: $raw) -> Self {
                Self(raw)
            }

            /// The raw value, for `cuda_driver_sys` calls.
            pub const fn as_raw(self) -> $raw {
                self.0
            }

            /// The C name of this value (`CU_...`), or `None` for a value that cuda.h 13.0
            /// does not define.
            pub const fn c_name(self) -> Option<&'static str> {
                match self.c_info() {
                    Some((name, _)) => Some(name),
                    None => None,
                }
            }
        }

        impl ::core::fmt::Debug for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                match self.c_name() {
                    Some(name) => f.write_str(name),
                    None => write!(f, "{}({})", stringify!($name), self.0),
                }
            }
        }

        impl From<$name> for $raw {
            fn from(v: $name) -> $raw {
                v.0
            }
        }
    };
}

/// Declares a `#[repr(transparent)]` set of C flag bits with `|`, `&`, `contains` and `empty`.
macro_rules! c_flags {
    ($(#[$m:meta])* $name:ident($raw:ty) { $($(#[$fm:meta])* const $flag:ident = $value:expr;)* }) => {
        $(#[$m])*
        #[repr(transparent)]
        #[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub struct $name(pub(crate) $raw);

        impl $name {
            $($(#[$fm])* pub const $flag: Self = Self($value as $raw);)*

            /// No flags.
            pub const fn empty() -> Self {
                Self(0)
            }

            /// Wraps raw bits, also ones this crate does not name.
            pub const fn from_raw(raw: $raw) -> Self {
                Self(raw)
            }

            /// The raw bits, for `cuda_driver_sys` calls.
            pub const fn as_raw(self) -> $raw {
                self.0
            }

            /// Whether every bit of `other` is set in `self`.
            pub const fn contains(self, other: Self) -> bool {
                self.0 & other.0 == other.0
            }
        }

        impl ::core::ops::BitOr for $name {
            type Output = Self;
            fn bitor(self, rhs: Self) -> Self {
                Self(self.0 | rhs.0)
            }
        }

        impl ::core::ops::BitOrAssign for $name {
            fn bitor_assign(&mut self, rhs: Self) {
                self.0 |= rhs.0;
            }
        }

        impl ::core::ops::BitAnd for $name {
            type Output = Self;
            fn bitand(self, rhs: Self) -> Self {
                Self(self.0 & rhs.0)
            }
        }

        impl ::core::fmt::Debug for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                let mut rest = self.0;
                let mut first = true;
                write!(f, "{}(", stringify!($name))?;
                $(
                    let bits = $value as $raw;
                    if bits != 0 && rest & bits == bits {
                        if !first { f.write_str(" | ")?; }
                        f.write_str(stringify!($flag))?;
                        rest &= !bits;
                        first = false;
                    }
                )*
                if rest != 0 || first {
                    if !first { f.write_str(" | ")?; }
                    write!(f, "{:#x}", rest)?;
                }
                f.write_str(")")
            }
        }
    };
}
