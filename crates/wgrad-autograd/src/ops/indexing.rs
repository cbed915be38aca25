//! Indexing ops.

use wgrad_core::{DType, Result};

use crate::graph::Op;
use crate::tensor::Tensor;

/// Indexing with I32 index tensors: `index_select` (whole rows),
/// `gather` (one element per index, `torch.gather`) and `one_hot`; the
/// structure ops add `select`/`slice`, masks, `stack`/`split`, and the
/// scatter ops the index writes.
///
/// ```
/// use wgrad_autograd::{DType, Device, Tensor};
/// let cpu = Device::Cpu;
/// let x = Tensor::from_vec(vec![10.0f32, 11.0, 20.0, 21.0, 30.0, 31.0], &[3, 2], &cpu)?;
/// let rows = Tensor::from_vec(vec![2i32, 0], &[2], &cpu)?;
/// assert_eq!(x.index_select(0, &rows)?.to_vec_f32()?, [30.0, 31.0, 10.0, 11.0]);
/// let cols = Tensor::from_vec(vec![1i32, 0, 1], &[3, 1], &cpu)?;
/// assert_eq!(x.gather(1, &cols)?.to_vec_f32()?, [11.0, 20.0, 31.0]);
/// let labels = Tensor::from_vec(vec![2i32, 0], &[2], &cpu)?;
/// let hot = labels.one_hot(3, DType::F32)?;
/// assert_eq!(hot.to_vec_f32()?, [0.0, 0.0, 1.0, 1.0, 0.0, 0.0]);
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
impl Tensor {
    /// Rows (along `axis`) picked by the I32 1-D `index`, like `torch.index_select`.
    pub fn index_select(&self, axis: isize, index: &Tensor) -> Result<Tensor> {
        let index = index.storage();
        let out = self.storage().index_select(axis, &index)?;
        Ok(Tensor::record(
            out,
            Op::IndexSelect { axis, index },
            &[self],
        ))
    }
    /// `torch.gather` along `axis` with an I32 index of the same rank.
    pub fn gather(&self, axis: isize, index: &Tensor) -> Result<Tensor> {
        let index = index.storage();
        let out = self.storage().gather(axis, &index)?;
        Ok(Tensor::record(out, Op::Gather { axis, index }, &[self]))
    }
    /// One-hot encoding of an I32 tensor (appends a dim of `num_classes`).
    pub fn one_hot(&self, num_classes: usize, dtype: DType) -> Result<Tensor> {
        Ok(Tensor::from_storage_leaf(
            self.storage().one_hot(num_classes, dtype)?,
        ))
    }
}
