//! `Dims`: a tensor's shape as a shared, immutable list of sizes.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// The sizes of a tensor's dimensions (PyTorch's `torch.Size`), as
/// `Tensor::shape()` returns them.
///
/// It is a handle on a list stored once per tensor: getting it takes no lock
/// and allocates nothing (cloning bumps a reference count). It reads like a
/// slice (`dims[0]`, `dims.len()`, `dims.iter()`, `&dims` where a `&[usize]`
/// is wanted) and compares equal to slices, arrays and `Vec`s with the same
/// sizes; `to_vec()` gives an owned copy.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Dims(Arc<[usize]>);

impl Dims {
    /// The sizes as a slice.
    pub fn as_slice(&self) -> &[usize] {
        &self.0
    }
}

impl Deref for Dims {
    type Target = [usize];
    fn deref(&self) -> &[usize] {
        &self.0
    }
}

impl AsRef<[usize]> for Dims {
    fn as_ref(&self) -> &[usize] {
        &self.0
    }
}

impl std::borrow::Borrow<[usize]> for Dims {
    fn borrow(&self) -> &[usize] {
        &self.0
    }
}

impl From<&[usize]> for Dims {
    fn from(sizes: &[usize]) -> Dims {
        Dims(sizes.into())
    }
}

impl From<Vec<usize>> for Dims {
    fn from(sizes: Vec<usize>) -> Dims {
        Dims(sizes.into())
    }
}

impl From<Dims> for Vec<usize> {
    fn from(dims: Dims) -> Vec<usize> {
        dims.0.to_vec()
    }
}

impl<'a> IntoIterator for &'a Dims {
    type Item = &'a usize;
    type IntoIter = std::slice::Iter<'a, usize>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl IntoIterator for Dims {
    type Item = usize;
    type IntoIter = std::vec::IntoIter<usize>;
    fn into_iter(self) -> Self::IntoIter {
        Vec::from(self).into_iter()
    }
}

/// Prints like a slice: `[2, 3]`.
impl fmt::Debug for Dims {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

macro_rules! dims_eq {
    ($($other:ty),*) => {$(
        impl PartialEq<$other> for Dims {
            fn eq(&self, other: &$other) -> bool {
                *self.0 == other[..]
            }
        }
        impl PartialEq<Dims> for $other {
            fn eq(&self, other: &Dims) -> bool {
                self[..] == *other.0
            }
        }
    )*};
}
dims_eq!([usize], &[usize], Vec<usize>, &Vec<usize>);

impl<const N: usize> PartialEq<[usize; N]> for Dims {
    fn eq(&self, other: &[usize; N]) -> bool {
        *self.0 == other[..]
    }
}

impl<const N: usize> PartialEq<&[usize; N]> for Dims {
    fn eq(&self, other: &&[usize; N]) -> bool {
        *self.0 == other[..]
    }
}

impl<const N: usize> PartialEq<Dims> for [usize; N] {
    fn eq(&self, other: &Dims) -> bool {
        self[..] == *other.0
    }
}

#[cfg(test)]
mod tests {
    use super::Dims;

    #[test]
    fn compares_with_slices_arrays_and_vecs() {
        let d = Dims::from(vec![2, 3]);
        assert_eq!(d, [2, 3]);
        assert_eq!(d, &[2, 3]);
        assert_eq!(d, vec![2, 3]);
        assert_eq!(vec![2, 3], d);
        assert_eq!(d, &[2usize, 3][..]);
        assert_ne!(d, [2, 3, 1]);
        assert_eq!(format!("{d:?}"), "[2, 3]");
        assert_eq!(d[1], 3);
        assert_eq!(d.iter().product::<usize>(), 6);
        let v: Vec<usize> = d.clone().into();
        assert_eq!(v, d.to_vec());
        let scalar = Dims::from(Vec::new());
        assert!(scalar.is_empty());
    }
}
