//! Counts and sizes a caller passes, converted to the integer types the driver takes.
//!
//! A slice's length or a `u32` argument that the driver takes as `unsigned int` or `int`
//! goes through these checks instead of an `as` cast: a value that does not fit is an error
//! before the driver is called, never a truncated or negative count.

use crate::error::{Error, Result};

/// `n` (the length of a caller's slice) as the `unsigned int` count the driver takes, or
/// [`Error::CapacityExceeded`] naming `what` and the `unit` counted.
#[inline]
pub(crate) fn count_u32(what: &'static str, unit: &'static str, n: usize) -> Result<u32> {
    u32::try_from(n).map_err(|_| Error::CapacityExceeded {
        what,
        capacity: u32::MAX as usize,
        unit,
    })
}

/// `v` (an argument the driver takes as `int`: a block size, a number of blocks) as an
/// `i32`, or [`Error::InvalidArgument`] naming `what` and the argument.
#[inline]
pub(crate) fn int_arg(what: &'static str, name: &'static str, v: u32) -> Result<i32> {
    i32::try_from(v).map_err(|_| {
        Error::InvalidArgument(format!(
            "{what}: the {name} {v} is more than the driver's int holds ({})",
            i32::MAX
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_that_fit_pass_and_larger_ones_are_errors() {
        assert_eq!(count_u32("x", "items", 0).unwrap(), 0);
        assert_eq!(
            count_u32("x", "items", u32::MAX as usize).unwrap(),
            u32::MAX
        );
        let e = count_u32("Graph::add_x", "semaphores", u32::MAX as usize + 1).unwrap_err();
        assert!(matches!(
            e,
            Error::CapacityExceeded {
                what: "Graph::add_x",
                capacity,
                unit: "semaphores"
            } if capacity == u32::MAX as usize
        ));
        assert!(count_u32("x", "items", usize::MAX).is_err());
    }

    #[test]
    fn int_arguments_above_i32_max_are_errors() {
        assert_eq!(int_arg("x", "block size", 0).unwrap(), 0);
        assert_eq!(
            int_arg("x", "block size", i32::MAX as u32).unwrap(),
            i32::MAX
        );
        for v in [i32::MAX as u32 + 1, u32::MAX] {
            let e = int_arg("Function::max_active_blocks", "block size", v).unwrap_err();
            let text = e.to_string();
            assert!(matches!(e, Error::InvalidArgument(_)), "{e:?}");
            assert!(
                text.contains("block size") && text.contains(&v.to_string()),
                "{text}"
            );
        }
    }
}
