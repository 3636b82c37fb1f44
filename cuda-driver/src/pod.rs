//! [`Pod`]: any [`bytemuck::Pod`] type as device memory and kernel arguments (the `bytemuck`
//! feature).

use bytemuck::TransparentWrapper;

use crate::repr::DeviceRepr;

/// A [`bytemuck::Pod`] value as a [`DeviceRepr`]: the way to put the types a program already
/// shares with bytemuck (vertices, pixels, `#[derive(Pod)]` structs of other crates) into
/// [`DeviceBuffer`](crate::DeviceBuffer)s and kernel arguments without an `unsafe impl`.
///
/// `Pod<T>` is `#[repr(transparent)]`: it has `T`'s size, alignment and bytes, so a
/// `&[T]` is a `&[Pod<T>]` and back, without copying ([`Pod::wrap_slice`],
/// [`Pod::peel_slice`] and their `_mut` twins; `Pod<T>` is also
/// [`bytemuck::TransparentWrapper<T>`]), and `Pod<T>` is itself `bytemuck::Pod` (so
/// [`bytemuck::cast_slice`] works too).
///
/// A wrapper rather than `impl<T: bytemuck::Pod> DeviceRepr for T`: that blanket impl would
/// overlap the impls of [`DeviceRepr`] for numbers, arrays and this crate's vector types (and
/// forbid any `unsafe impl DeviceRepr` for a type that might one day be `Pod`). `bytemuck::Pod`
/// promises what `DeviceRepr` needs: `Copy + 'static`, no padding, and every bit pattern a valid
/// value.
///
/// As for every `DeviceRepr`, the layout must be the one the kernel expects: a struct of four
/// `f32` is 4-byte aligned on the host, but CUDA's `float4` is 16-byte aligned (use
/// [`Float4`](crate::vector::Float4) for that).
///
/// ```no_run
/// use bytemuck::{Pod as BytemuckPod, Zeroable};
/// use cuda_driver::prelude::*;
/// use cuda_driver::{Device, DeviceBuffer, Pod};
///
/// #[repr(C)]
/// #[derive(Clone, Copy, BytemuckPod, Zeroable)]
/// struct Vertex {
///     position: [f32; 3],
///     weight: f32,
/// }
///
/// let vertices = vec![Vertex { position: [0.0; 3], weight: 1.0 }; 1024];
/// let ctx = Device::get(0)?.primary_context()?;
/// // &[Vertex] -> &[Pod<Vertex>]: the same memory, no copy.
/// let buf = DeviceBuffer::from_slice(&ctx, Pod::wrap_slice(&vertices))?;
/// // Back into a Vec<Vertex> of the host, no conversion needed.
/// let mut back = vec![Vertex::zeroed(); vertices.len()];
/// buf.copy_to_host(Pod::wrap_slice_mut(&mut back))?;
/// assert_eq!(back[0].weight, 1.0);
/// // Or a Vec<Pod<Vertex>>, whose elements are `.0`.
/// let back: Vec<Pod<Vertex>> = buf.to_vec()?;
/// assert_eq!(back[0].0.weight, 1.0);
/// // A single value is a kernel argument as `&Pod(value)`.
/// let _arg = &Pod(vertices[0]);
/// # Ok::<(), cuda_driver::Error>(())
/// ```
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pod<T>(pub T);

impl<T> Pod<T> {
    /// The wrapped value.
    #[inline]
    pub fn into_inner(self) -> T {
        self.0
    }

    /// `&[T]` as `&[Pod<T>]`: the same memory, for [`DeviceBuffer::from_slice`] and
    /// [`copy_from_host`](crate::DeviceSliceMut::copy_from_host).
    ///
    /// [`DeviceBuffer::from_slice`]: crate::DeviceBuffer::from_slice
    #[inline]
    pub fn wrap_slice(s: &[T]) -> &[Pod<T>] {
        <Pod<T> as TransparentWrapper<T>>::wrap_slice(s)
    }

    /// `&mut [T]` as `&mut [Pod<T>]`: the same memory, for
    /// [`copy_to_host`](crate::DeviceSlice::copy_to_host).
    #[inline]
    pub fn wrap_slice_mut(s: &mut [T]) -> &mut [Pod<T>] {
        <Pod<T> as TransparentWrapper<T>>::wrap_slice_mut(s)
    }

    /// `&[Pod<T>]` as `&[T]`: the same memory.
    #[inline]
    pub fn peel_slice(s: &[Pod<T>]) -> &[T] {
        <Pod<T> as TransparentWrapper<T>>::peel_slice(s)
    }

    /// `&mut [Pod<T>]` as `&mut [T]`: the same memory.
    #[inline]
    pub fn peel_slice_mut(s: &mut [Pod<T>]) -> &mut [T] {
        <Pod<T> as TransparentWrapper<T>>::peel_slice_mut(s)
    }
}

impl<T> From<T> for Pod<T> {
    #[inline]
    fn from(value: T) -> Self {
        Pod(value)
    }
}

// SAFETY: repr(transparent) over T, and T: bytemuck::Pod is Copy + 'static, has no padding and
// accepts every bit pattern, which is what DeviceRepr asks.
unsafe impl<T: bytemuck::Pod> DeviceRepr for Pod<T> {}

// SAFETY: repr(transparent) over T: the all-zero Pod<T> is the all-zero T.
unsafe impl<T: bytemuck::Zeroable> bytemuck::Zeroable for Pod<T> {}

// SAFETY: repr(transparent) over a Pod T: no padding, every bit pattern valid, Copy + 'static.
unsafe impl<T: bytemuck::Pod> bytemuck::Pod for Pod<T> {}

// SAFETY: repr(transparent) with T as its only field.
unsafe impl<T> TransparentWrapper<T> for Pod<T> {}

#[cfg(test)]
mod tests {
    use std::mem::{align_of, size_of};

    use bytemuck::{Pod as BytemuckPod, Zeroable};

    use super::*;
    use crate::launch::args::KernelArg;
    use crate::launch::param_buffer::ParamBuffer;

    #[repr(C)]
    #[derive(Clone, Copy, Debug, PartialEq, BytemuckPod, Zeroable)]
    struct Vertex {
        position: [f32; 3],
        id: u32,
    }

    fn is_repr<T: DeviceRepr>() {}

    #[test]
    fn pod_types_are_device_repr() {
        is_repr::<Pod<Vertex>>();
        is_repr::<Pod<[u16; 3]>>();
        is_repr::<Pod<u64>>();
        is_repr::<[Pod<Vertex>; 2]>();
    }

    #[test]
    fn pod_has_the_layout_of_its_value() {
        assert_eq!(size_of::<Pod<Vertex>>(), size_of::<Vertex>());
        assert_eq!(align_of::<Pod<Vertex>>(), align_of::<Vertex>());
        assert_eq!(size_of::<Pod<[u8; 3]>>(), 3);
        assert_eq!(<&Pod<Vertex> as KernelArg>::PARAM_SIZE, 16);
        assert_eq!(<&Pod<Vertex> as KernelArg>::PARAM_ALIGN, 4);
    }

    #[test]
    fn slices_convert_both_ways_in_place() {
        let v = [
            Vertex {
                position: [1.0, 2.0, 3.0],
                id: 7,
            },
            Vertex {
                position: [4.0, 5.0, 6.0],
                id: 8,
            },
        ];
        let wrapped: &[Pod<Vertex>] = Pod::wrap_slice(&v);
        assert_eq!(wrapped.as_ptr().cast::<Vertex>(), v.as_ptr());
        assert_eq!(wrapped[1].0.id, 8);
        assert_eq!(Pod::peel_slice(wrapped), &v);
        let cast: &[Vertex] = bytemuck::cast_slice(wrapped);
        assert_eq!(cast, &v);
        let bytes: &[u8] = bytemuck::cast_slice(wrapped);
        assert_eq!(bytes, bytemuck::cast_slice::<Vertex, u8>(&v));
    }

    #[test]
    fn a_pod_argument_packs_its_bytes() {
        let v = Vertex {
            position: [1.5, -2.0, 0.25],
            id: 0xdead_beef,
        };
        let mut b = ParamBuffer::new();
        b.push(1u8).unwrap().push(Pod(v)).unwrap();
        let params: Vec<_> = b.params().collect();
        assert_eq!((params[1].offset, params[1].size), (4, 16));
        // SAFETY: every byte below len() is initialised (push zeroes the gaps).
        let packed = unsafe { std::slice::from_raw_parts(b.as_ptr(), b.len()) };
        assert_eq!(&packed[4..20], bytemuck::bytes_of(&v));
        assert_eq!(Pod::from(v).into_inner(), v);
    }
}
