//! Macros shared by the modules.

/// Adds the accessors of a typed device memory type (over its `ptr` and `len` fields), each
/// item documented by the caller where its meaning differs between the types:
///
/// * `as_raw` (its documentation says how long the address is valid), `len`, `is_empty`,
///   `bytes`;
/// * with `fn context(x) -> &Context { .. }`, `context`, whose body is an expression of the
///   receiver, named `x` by the caller;
/// * for a view ([`DeviceSlice`](crate::DeviceSlice), [`DeviceSliceMut`](crate::DeviceSliceMut)),
///   whose `ctx` field borrows the context for its lifetime, `from_raw` and `context`.
macro_rules! device_memory_accessors {
    (
        impl<$lt:lifetime, T> $ty:ident<$_lt:lifetime, T>, $what:literal {
            $(#[doc = $from_raw_doc:literal])+
            unsafe fn from_raw;
            $(#[doc = $as_raw_doc:literal])+
            fn as_raw;
            $(#[doc = $context_doc:literal])+
            fn context;
        }
    ) => {
        impl<$lt, T: $crate::DeviceRepr> $ty<$lt, T> {
            $(#[doc = $from_raw_doc])+
            #[inline]
            pub unsafe fn from_raw(
                ptr: ::cuda_driver_sys::CUdeviceptr,
                len: usize,
                ctx: &$lt $crate::Context,
            ) -> Self {
                $ty {
                    ptr,
                    len,
                    ctx,
                    _marker: ::std::marker::PhantomData,
                }
            }
        }

        device_memory_accessors! {
            impl<$lt, T> $ty<$lt, T>, $what {
                $(#[doc = $as_raw_doc])+
                fn as_raw;
                $(#[doc = $context_doc])+
                fn context(view) -> &$lt Context { view.ctx }
            }
        }
    };
    (
        impl<$($lt:lifetime,)? T> $ty:ty, $what:literal {
            $(#[doc = $as_raw_doc:literal])+
            fn as_raw;
            $(#[doc = $context_doc:literal])+
            fn context($this:ident) -> &$($ctx_lt:lifetime)? Context $context:block
        }
    ) => {
        device_memory_accessors! {
            impl<$($lt,)? T> $ty, $what {
                $(#[doc = $as_raw_doc])+
                fn as_raw;
            }
        }

        impl<$($lt,)? T: $crate::DeviceRepr> $ty {
            $(#[doc = $context_doc])+
            #[inline]
            pub fn context(&self) -> &$($ctx_lt)? $crate::Context {
                let $this = self;
                $context
            }
        }
    };
    (
        impl<$($lt:lifetime,)? T> $ty:ty, $what:literal {
            $(#[doc = $as_raw_doc:literal])+
            fn as_raw;
        }
    ) => {
        impl<$($lt,)? T: $crate::DeviceRepr> $ty {
            $(#[doc = $as_raw_doc])+
            #[inline]
            pub fn as_raw(&self) -> ::cuda_driver_sys::CUdeviceptr {
                self.ptr
            }

            /// Number of elements.
            #[inline]
            pub fn len(&self) -> usize {
                self.len
            }

            #[doc = concat!("Whether the ", $what, " holds no elements.")]
            #[inline]
            pub fn is_empty(&self) -> bool {
                self.len == 0
            }

            /// Size in bytes.
            #[inline]
            pub fn bytes(&self) -> usize {
                self.len * ::std::mem::size_of::<T>()
            }
        }
    };
}
