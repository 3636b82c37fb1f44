//! The raw API every handle type shares: [`Handle::as_raw`], [`OwnedHandle::from_raw`] and
//! [`OwnedHandle::into_raw`], each defined once (as git2's `Binding` and rustix's
//! `AsFd`/`OwnedFd` say it).
//!
//! * An **owner** (a [`Stream`](crate::stream::Stream), an [`Event`](crate::event::Event), a
//!   [`Module`](crate::module::Module), a [`Context`](crate::context::Context), ...) releases
//!   its handle in `Drop`. It implements [`OwnedHandle`]: `from_raw` *takes ownership* of a
//!   raw handle (it is released when the owner drops), and `into_raw` *gives it up* (the
//!   caller releases it). `from_raw(into_raw(x), parent)` gives back an equivalent owner.
//! * A **borrowed form** ([`StreamRef`](crate::stream::StreamRef),
//!   [`FunctionRef`](crate::module::FunctionRef), [`ContextRef`](crate::context::ContextRef),
//!   [`MemPoolRef`](crate::memory::pool::MemPoolRef), the array views, ...) is a different type,
//!   never an owner with a flag: it carries the lifetime of what keeps the handle alive,
//!   releases nothing, and implements [`Handle`] only. It is made with an inherent
//!   `unsafe fn borrow_raw(raw, ..)` (as rustix's `BorrowedFd::borrow_raw`), never `from_raw`.
//!
//! Memory is not a handle: the owners of device and host memory and their views have a
//! `(pointer, length, ..)` raw API of their own, tied to the memory-view mechanism (see
//! [`memory`](crate::memory)), with the same two words: an owner's `from_raw(ptr, len, ..)`
//! takes ownership of an allocation (`DeviceBuffer`, `PinnedBuffer`, ...), a view's
//! `borrow_raw(ptr, len, ctx)` borrows memory something else keeps allocated
//! ([`DeviceSlice::borrow_raw`](crate::memory::view::DeviceSlice::borrow_raw)).
//!
//! `from_raw` takes what the owner needs besides the raw handle as one argument, its
//! [`Parent`](OwnedHandle::Parent): the context a stream lives in, the device of a pool, the
//! module a function belongs to, `()` for a handle that needs nothing. Both traits are in the
//! [`prelude`](crate::prelude).
//!
//! ```
//! use cuda_driver::prelude::*;
//!
//! /// Hands a stream to C code and takes it back: the round trip of every owner.
//! fn through_c(stream: Stream) -> Stream {
//!     let ctx = stream.context().clone();
//!     let raw = stream.into_raw(); // the caller owns the stream now...
//!     // SAFETY: `raw` is a live stream of `ctx` that nothing else destroys.
//!     unsafe { Stream::from_raw(raw, &ctx) } // ...and hands it back
//! }
//! ```
//!
//! Adding a handle kind is one file: the type, its `Drop`, and an `impl Handle` /
//! `impl OwnedHandle` (whose `into_raw` is one line of the crate's `give_up!` macro, the one
//! place that takes an owner apart without running its `Drop`).

/// A type that wraps a raw driver handle (`CUstream`, `CUevent`, `CUfunction`, ...), owned or
/// borrowed: [`as_raw`](Self::as_raw) gives the handle for `cuda_driver_sys` calls.
///
/// ```
/// use cuda_driver::prelude::*;
///
/// fn raw_stream(stream: &Stream) -> cuda_driver::sys::CUstream {
///     stream.as_raw()
/// }
/// ```
pub trait Handle {
    /// The raw handle (`sys::CUstream` for a stream).
    type Raw: Copy;

    /// The raw handle, for `cuda_driver_sys` calls. It stays valid while `self` lives (and,
    /// for a borrowed form, while what it borrows does); it still belongs to `self`: never
    /// release it.
    fn as_raw(&self) -> Self::Raw;
}

/// An owner of a raw driver handle, which it releases in `Drop` (`cuStreamDestroy`,
/// `cuEventDestroy`, ...). Ownership goes in with [`from_raw`](Self::from_raw) and out with
/// [`into_raw`](Self::into_raw); one does what the other undoes.
pub trait OwnedHandle: Handle + Sized {
    /// What [`from_raw`](Self::from_raw) needs besides the raw handle: the context the handle
    /// lives in (`&'p Context`), the device (`Device`), the module or library that holds the
    /// code, or `()`.
    type Parent<'p>;

    /// Takes ownership of `raw`: the returned owner releases it when dropped, as the owner
    /// made by this crate would (the owner's type says how).
    ///
    /// # Safety
    /// * `raw` is a live handle of the kind `Self` wraps, created in (or belonging to)
    ///   `parent`, as the implementing type's documentation details;
    /// * the caller owns the release of `raw` and hands it over: nothing else releases `raw`
    ///   or uses it after the returned owner has released it (as with `into_raw`'s result
    ///   given back, or a handle the caller created itself).
    unsafe fn from_raw(raw: Self::Raw, parent: Self::Parent<'_>) -> Self;

    /// Gives up ownership: returns the raw handle without releasing it. The caller now owns
    /// its release (with the driver call the owner's `Drop` would make) and may hand it back
    /// with [`from_raw`](Self::from_raw). What the owner kept besides the handle (its context
    /// clone, cached data) is dropped; where the owner is shared (a cloned
    /// [`Context`](crate::context::Context) or [`Module`](crate::module::Module)), the other
    /// clones stay usable and release nothing, so the caller must not release the handle
    /// while they are in use.
    #[must_use = "the raw handle is no longer released: release it or hand it back with from_raw"]
    fn into_raw(self) -> Self::Raw;
}

/// Gives up an owner without running its `Drop`: `give_up!(self, raw; drop(a, b))` reads the
/// raw handle from field `raw`, drops the fields `a` then `b` in place, and returns the raw
/// handle. Every other field is forgotten (leaked on purpose, as a linker's JIT buffers the
/// caller takes over); list them with `forget(..)`. The fields named must be all the fields of
/// `Self`, each once: a field left out or named twice does not compile, so no field is dropped
/// twice and none is forgotten by accident. The one place that writes the
/// `ManuallyDrop` + drop-in-place dance.
macro_rules! give_up {
    ($owner:expr, $raw:ident; drop($($d:ident),* $(,)?) $(; forget($($f:ident),* $(,)?))?) => {{
        #[allow(unused_mut)] // mutable for the drops, when there are any
        let mut this = ::core::mem::ManuallyDrop::new($owner);
        // Names every field of `Self` once (no `..`): the check that makes the drops below
        // drop each field at most once.
        let Self { $raw: _, $($d: _,)* $($($f: _,)*)? } = &*this;
        let raw = this.$raw;
        $(
            // SAFETY: `this` is a ManuallyDrop that is never used or dropped after this
            // block, and the pattern above proves each dropped field a distinct field of
            // `Self`: this field is dropped exactly once, here, and never read again.
            unsafe { ::core::ptr::drop_in_place(&mut this.$d) };
        )*
        raw
    }};
}
pub(crate) use give_up;

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use super::{Handle, OwnedHandle};

    /// An owner shaped as most are: a raw handle, a parent clone, and a cache.
    struct Owner {
        raw: u32,
        parent: Rc<()>,
        cache: Vec<u8>,
        released: Rc<std::cell::Cell<u32>>,
    }

    impl Drop for Owner {
        fn drop(&mut self) {
            self.released.set(self.released.get() + 1);
        }
    }

    impl Handle for Owner {
        type Raw = u32;
        fn as_raw(&self) -> u32 {
            self.raw
        }
    }

    impl OwnedHandle for Owner {
        type Parent<'p> = (&'p Rc<()>, &'p Rc<std::cell::Cell<u32>>);
        unsafe fn from_raw(raw: u32, (parent, released): Self::Parent<'_>) -> Owner {
            Owner {
                raw,
                parent: parent.clone(),
                cache: vec![1, 2, 3],
                released: released.clone(),
            }
        }
        fn into_raw(self) -> u32 {
            give_up!(self, raw; drop(parent, cache, released))
        }
    }

    #[test]
    fn into_raw_drops_the_rest_once_and_releases_nothing() {
        let parent = Rc::new(());
        let released = Rc::new(std::cell::Cell::new(0));
        // SAFETY: a test handle; nothing is released but a counter.
        let owner = unsafe { Owner::from_raw(7, (&parent, &released)) };
        assert_eq!(Rc::strong_count(&parent), 2);
        assert_eq!(owner.as_raw(), 7);
        let raw = owner.into_raw();
        assert_eq!(raw, 7);
        // The parent clone and the counter clone were dropped, the Drop impl did not run.
        assert_eq!(Rc::strong_count(&parent), 1);
        assert_eq!(Rc::strong_count(&released), 1);
        assert_eq!(released.get(), 0);
        // SAFETY: as above: the raw handle comes back.
        let back = unsafe { Owner::from_raw(raw, (&parent, &released)) };
        drop(back);
        assert_eq!(released.get(), 1);
    }
}
