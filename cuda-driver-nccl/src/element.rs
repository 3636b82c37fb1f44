//! Element types and reduction operators: the `ncclDataType_t` of each Rust type, and
//! `ncclRedOp_t`.

use cuda_driver::DeviceRepr;

use crate::sys;

/// An NCCL data type (`ncclDataType_t`). A newtype, not an enum: a newer library may know
/// types nccl.h 2.28.9 does not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(transparent)]
#[doc(alias = "ncclDataType_t")]
pub struct DataType(sys::ncclDataType_t);

impl DataType {
    /// `ncclInt8`.
    pub const INT8: DataType = DataType(sys::ncclInt8);
    /// `ncclUint8`.
    pub const UINT8: DataType = DataType(sys::ncclUint8);
    /// `ncclInt32`.
    pub const INT32: DataType = DataType(sys::ncclInt32);
    /// `ncclUint32`.
    pub const UINT32: DataType = DataType(sys::ncclUint32);
    /// `ncclInt64`.
    pub const INT64: DataType = DataType(sys::ncclInt64);
    /// `ncclUint64`.
    pub const UINT64: DataType = DataType(sys::ncclUint64);
    /// `ncclFloat16`.
    pub const FLOAT16: DataType = DataType(sys::ncclFloat16);
    /// `ncclFloat32`.
    pub const FLOAT32: DataType = DataType(sys::ncclFloat32);
    /// `ncclFloat64`.
    pub const FLOAT64: DataType = DataType(sys::ncclFloat64);
    /// `ncclBfloat16`.
    pub const BFLOAT16: DataType = DataType(sys::ncclBfloat16);

    /// The raw value.
    pub const fn as_raw(self) -> sys::ncclDataType_t {
        self.0
    }
}

/// An element type NCCL reduces and moves: `i8`, `u8`, `i32`, `u32`, `i64`, `u64`, `f32`,
/// `f64`, [`half::f16`] and [`half::bf16`], each mapped to its `ncclDataType_t`. Sealed: the
/// data type tells NCCL the element's size, so it must be exact.
pub trait Element: DeviceRepr + sealed::Sealed {
    /// The element's NCCL data type.
    const DATA_TYPE: DataType;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! element {
    ($($t:ty => $dt:ident),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DATA_TYPE: DataType = DataType::$dt;
        }
    )*};
}

element!(
    i8 => INT8,
    u8 => UINT8,
    i32 => INT32,
    u32 => UINT32,
    i64 => INT64,
    u64 => UINT64,
    f32 => FLOAT32,
    f64 => FLOAT64,
    half::f16 => FLOAT16,
    half::bf16 => BFLOAT16,
);

/// A reduction operator (`ncclRedOp_t`): one of NCCL's built-in operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(transparent)]
#[doc(alias = "ncclRedOp_t")]
pub struct ReduceOp(sys::ncclRedOp_t);

impl ReduceOp {
    /// `ncclSum`.
    pub const SUM: ReduceOp = ReduceOp(sys::ncclSum);
    /// `ncclProd`.
    pub const PROD: ReduceOp = ReduceOp(sys::ncclProd);
    /// `ncclMax`.
    pub const MAX: ReduceOp = ReduceOp(sys::ncclMax);
    /// `ncclMin`.
    pub const MIN: ReduceOp = ReduceOp(sys::ncclMin);
    /// `ncclAvg`: the sum divided by the number of ranks (integers round toward zero).
    pub const AVG: ReduceOp = ReduceOp(sys::ncclAvg);

    /// An operator from its raw value, such as one created with
    /// `ncclRedOpCreatePreMulSum` through [`sys`](crate::sys).
    ///
    /// # Safety
    /// `raw` is a built-in operator, or an operator created for the communicator and the
    /// element type of every operation it is passed to, and not destroyed while they use it.
    pub const unsafe fn from_raw(raw: sys::ncclRedOp_t) -> ReduceOp {
        ReduceOp(raw)
    }

    /// The raw value.
    pub const fn as_raw(self) -> sys::ncclRedOp_t {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size_of_type(dt: DataType) -> usize {
        match dt.as_raw() {
            sys::ncclInt8 | sys::ncclUint8 => 1,
            sys::ncclFloat16 | sys::ncclBfloat16 => 2,
            sys::ncclInt32 | sys::ncclUint32 | sys::ncclFloat32 => 4,
            sys::ncclInt64 | sys::ncclUint64 | sys::ncclFloat64 => 8,
            other => panic!("unexpected data type {other}"),
        }
    }

    fn agrees<T: Element>() {
        assert_eq!(
            size_of_type(T::DATA_TYPE),
            std::mem::size_of::<T>(),
            "{}",
            std::any::type_name::<T>()
        );
    }

    #[test]
    fn every_element_type_maps_to_an_nccl_type_of_its_size() {
        agrees::<i8>();
        agrees::<u8>();
        agrees::<i32>();
        agrees::<u32>();
        agrees::<i64>();
        agrees::<u64>();
        agrees::<f32>();
        agrees::<f64>();
        agrees::<half::f16>();
        agrees::<half::bf16>();
    }
}
