//! Fallible allocation: every buffer whose size follows from the data (op
//! outputs, dense copies, index lists, staging lanes) is allocated here, so
//! that a request the host cannot satisfy is [`Error::OutOfMemory`] instead
//! of Rust's default reaction to a failed allocation, which aborts the
//! process.
//!
//! Three primitives allocate, all checked (an overflowing byte count is an
//! error too), and all recycle large buffers through the
//! [`buffer_cache`] first:
//!
//! - [`reserve`]: an empty vector (`Vec::try_reserve_exact`), then filled
//!   by `extend` from a slice iterator, which compiles to the same vector
//!   loops as `collect`.
//! - [`zeroed`]: a zero-filled vector; a fresh one from the allocator's
//!   zeroed allocation (`calloc`, through
//!   `bytemuck::allocation::try_zeroed_vec`), as `vec![0.0; n]` does.
//! - [`for_overwrite`]: a vector of valid but unspecified values, for ops
//!   that write every element (in parallel, for the ops that split a dense
//!   output across threads), so a recycled buffer needs no fill.
//!
//! [`filled`] picks between the first two for a constant fill.

use bytemuck::{Pod, Zeroable};
use wgrad_core::{Error, Result};

use crate::buffer_cache;

/// A failed allocation of `bytes` (`u64::MAX` when the byte count itself
/// overflows). [`During::during`] names the op that asked for it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AllocError {
    bytes: u64,
}

impl AllocError {
    /// The user-facing error for `op`.
    pub(crate) fn during(self, op: &'static str) -> Error {
        Error::OutOfMemory {
            op,
            device: "CPU",
            bytes: self.bytes,
        }
    }
}

/// Turns a failed allocation into [`Error::OutOfMemory`] for `op`.
pub(crate) trait During<T> {
    fn during(self, op: &'static str) -> Result<T>;
}

impl<T> During<T> for Result<T, AllocError> {
    fn during(self, op: &'static str) -> Result<T> {
        self.map_err(|e| e.during(op))
    }
}

/// The error for `len` elements of `T` (the byte count saturates).
fn failed<T>(len: usize) -> AllocError {
    let bytes = len
        .checked_mul(size_of::<T>())
        .and_then(|b| u64::try_from(b).ok())
        .unwrap_or(u64::MAX);
    AllocError { bytes }
}

/// An empty vector with room for `len` elements of `T`: exactly `len`,
/// or for large buffers the capacity of their size class, recycled from
/// the [`buffer_cache`] when it holds one.
pub(crate) fn reserve<T: Send + 'static>(len: usize) -> Result<Vec<T>, AllocError> {
    if let Some(mut v) = buffer_cache::take::<T>(len) {
        v.clear();
        return Ok(v);
    }
    let capacity = buffer_cache::class_len::<T>(len).unwrap_or(len);
    let mut v = Vec::new();
    // `try_reserve_exact` also rejects byte counts past `isize::MAX`
    // (including ones that overflow `usize`). A failure frees the cached
    // buffers and tries once more, as PyTorch's caching allocators do.
    if v.try_reserve_exact(capacity).is_err() {
        buffer_cache::empty_cache();
        v.try_reserve_exact(capacity)
            .map_err(|_| failed::<T>(len))?;
    }
    Ok(v)
}

/// `len` zeros of `T`: a recycled buffer zeroed here, or a fresh zeroed
/// allocation (`calloc`, whose large blocks arrive as untouched zero pages).
pub(crate) fn zeroed<T: Zeroable + Send + 'static>(len: usize) -> Result<Vec<T>, AllocError> {
    if let Some(mut v) = buffer_cache::take::<T>(len) {
        v.clear();
        v.resize_with(len, T::zeroed);
        return Ok(v);
    }
    fresh_zeroed(len)
}

/// `len` elements of `T` with unspecified values, for an op
/// that writes every one of them: a recycled buffer keeps what its last
/// tensor held, values of the same `T` (the cache keys buffers by type;
/// zeros past its old length), so reuse costs no fill at all.
pub(crate) fn for_overwrite<T: Zeroable + Copy + Send + 'static>(
    len: usize,
) -> Result<Vec<T>, AllocError> {
    if let Some(mut v) = buffer_cache::take::<T>(len) {
        if v.len() >= len {
            v.truncate(len);
        } else {
            v.resize(len, T::zeroed());
        }
        return Ok(v);
    }
    fresh_zeroed(len)
}

/// A new zeroed allocation of `len` elements with its size class's
/// capacity (the slack stays unwritten and untouched).
fn fresh_zeroed<T: Zeroable + Send + 'static>(len: usize) -> Result<Vec<T>, AllocError> {
    let Some(class) = buffer_cache::class_len::<T>(len) else {
        return bytemuck::allocation::try_zeroed_vec(len).map_err(|()| failed::<T>(len));
    };
    let mut v = bytemuck::allocation::try_zeroed_vec(class)
        .or_else(|()| {
            buffer_cache::empty_cache();
            bytemuck::allocation::try_zeroed_vec(class)
        })
        .map_err(|()| failed::<T>(len))?;
    v.truncate(len);
    Ok(v)
}

/// `len` copies of `value`: [`zeroed`] when `value` is all zero bits
/// (`0`, `+0.0`; not `-0.0`), else [`reserve`] and a fill loop.
pub(crate) fn filled<T: Pod + Send>(len: usize, value: T) -> Result<Vec<T>, AllocError> {
    if bytemuck::bytes_of(&value).iter().all(|&b| b == 0) {
        return zeroed(len);
    }
    let mut v = reserve(len)?;
    v.resize(len, value);
    Ok(v)
}

/// [`reserve`] for `op`: an empty vector with capacity `len`.
pub(crate) fn try_vec<T: Send + 'static>(op: &'static str, len: usize) -> Result<Vec<T>> {
    reserve(len).during(op)
}

/// [`zeroed`] for `op`: `len` zeros.
pub(crate) fn try_zeroed<T: Zeroable + Send + 'static>(
    op: &'static str,
    len: usize,
) -> Result<Vec<T>> {
    zeroed(len).during(op)
}

/// [`filled`] for `op`: `len` copies of `value`.
pub(crate) fn try_filled<T: Pod + Send>(op: &'static str, len: usize, value: T) -> Result<Vec<T>> {
    filled(len, value).during(op)
}

/// A copy of `xs` in a fresh vector, for `op`.
pub(crate) fn try_copy<T: Clone + Send + 'static>(op: &'static str, xs: &[T]) -> Result<Vec<T>> {
    let mut out = try_vec(op, xs.len())?;
    out.extend_from_slice(xs);
    Ok(out)
}

/// Element count of an output made of `dims`, or the
/// [`Error::OutOfMemory`] of an overflowing (so unallocatable) size.
pub(crate) fn checked_len(op: &'static str, dims: &[usize]) -> Result<usize> {
    if dims.contains(&0) {
        return Ok(0);
    }
    dims.iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or(AllocError { bytes: u64::MAX }.during(op))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn assert_oom<T: std::fmt::Debug>(r: Result<T>, want_bytes: u64) {
        match r {
            Err(Error::OutOfMemory {
                op: "t",
                device: "CPU",
                bytes,
            }) => assert_eq!(bytes, want_bytes),
            other => panic!("expected OutOfMemory, got {other:?}"),
        }
    }

    #[test]
    fn impossible_sizes_are_errors() {
        // Byte counts that overflow usize saturate.
        assert_oom(try_vec::<f32>("t", usize::MAX / 2), u64::MAX);
        assert_oom(try_zeroed::<u32>("t", usize::MAX / 2), u64::MAX);
        // Byte counts past isize::MAX can never be allocated.
        assert_oom(try_filled::<u8>("t", usize::MAX, 1), usize::MAX as u64);
        assert_oom(try_filled::<i32>("t", 1 << 61, 0), 1 << 63);
        assert_oom(checked_len("t", &[usize::MAX, 2]), u64::MAX);
        assert_eq!(checked_len("t", &[usize::MAX, 2, 0]).unwrap(), 0);
        assert_eq!(checked_len("t", &[3, 5]).unwrap(), 15);
    }

    #[test]
    fn fills_hold_their_values() {
        assert_eq!(try_copy("t", &[1, 2]).unwrap(), vec![1, 2]);
        assert_eq!(try_filled("t", 3, 7u32).unwrap(), vec![7; 3]);
        let z = try_filled("t", 4, 0.0f32).unwrap();
        assert!(z.iter().all(|x| x.to_bits() == 0));
        let nz = try_filled("t", 4, -0.0f32).unwrap();
        assert!(nz.iter().all(|x| x.to_bits() == (-0.0f32).to_bits()));
        assert_eq!(try_zeroed::<i32>("t", 0).unwrap(), Vec::<i32>::new());
        assert_eq!(try_vec::<f32>("t", 5).unwrap().capacity(), 5);
    }
}
