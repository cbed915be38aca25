//! Indexing ops.

use wgrad_core::{DType, Result};

use crate::graph::Op;
use crate::tensor::Tensor;

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
