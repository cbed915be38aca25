//! Indexing ops.

use wgrad_core::shape::normalize_axis;
use wgrad_core::{DType, Error, Result};

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
        // PyTorch's 0-d cases: a 0-d index is a one-element vector; a 0-d
        // input is a one-element vector along axis 0/-1 whose result is
        // 0-d again (the index then must hold exactly one value).
        if index.rank() == 0 {
            return self.index_select(axis, &index.reshape(&[1])?);
        }
        if self.rank() == 0 {
            normalize_axis("index_select", axis, 1)?;
            if index.numel() != 1 {
                return Err(Error::invalid(
                    "index_select",
                    format!(
                        "index to a 0-d tensor can have only 1 value, got shape {:?}",
                        index.shape()
                    ),
                ));
            }
            return self.reshape(&[1])?.index_select(0, index)?.reshape(&[]);
        }
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
        // PyTorch counts a 0-d input or index as one dim of size 1; the
        // output takes the index's shape (0-d for a 0-d index).
        let (rank, index_rank) = (self.rank(), index.rank());
        if (rank == 0 || index_rank == 0) && rank <= 1 && index_rank <= 1 {
            normalize_axis("gather", axis, 1)?;
            let x = if rank == 0 {
                self.reshape(&[1])?
            } else {
                self.clone()
            };
            let i = if index_rank == 0 {
                index.reshape(&[1])?
            } else {
                index.clone()
            };
            let out = x.gather(0, &i)?;
            return if index_rank == 0 {
                out.reshape(&[])
            } else {
                Ok(out)
            };
        }
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
