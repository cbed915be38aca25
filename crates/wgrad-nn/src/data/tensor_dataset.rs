//! [`TensorDataset`] and [`TensorLoader`] (`torch.utils.data.TensorDataset`
//! with a `DataLoader` over it): samples are the rows (first dim) of any
//! number of tensors of any dtype and device, and a batch is each tensor's
//! rows gathered with one `index_select` on its own device, so features,
//! float targets, token sequences and masks batch alike.

use std::sync::atomic::{AtomicU64, Ordering};

use wgrad_autograd::Tensor;
use wgrad_core::{Error, Result};

use super::shuffle::permutation;

/// Tensors sharing their first dim: sample `i` is row `i` of each.
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::data::{TensorDataset, TensorLoader};
/// let d = Device::Cpu;
/// let x = Tensor::randn(&[10, 3], &d)?;
/// let y = Tensor::randn(&[10], &d)?;
/// let data = TensorDataset::new(vec![x, y])?;
/// let loader = TensorLoader::new(&data, 4)?.shuffle(7);
/// let sizes: Vec<usize> = loader
///     .epoch(0)
///     .map(|b| b.map(|b| b[1].shape()[0]))
///     .collect::<Result<_, _>>()?;
/// assert_eq!(sizes, [4, 4, 2]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct TensorDataset {
    tensors: Vec<Tensor>,
}

impl TensorDataset {
    /// The dataset of `tensors` (at least one; each at least 1-D, all with
    /// the same first dim, all on one device), as PyTorch's
    /// `TensorDataset(*tensors)`.
    pub fn new(tensors: Vec<Tensor>) -> Result<Self> {
        const OP: &str = "TensorDataset";
        let first = tensors
            .first()
            .ok_or_else(|| Error::invalid(OP, "needs at least one tensor"))?;
        if first.rank() == 0 {
            return Err(Error::invalid(OP, "tensors need a first dim to index"));
        }
        let n = first.shape()[0];
        let device = first.device();
        for (i, t) in tensors.iter().enumerate() {
            if t.rank() == 0 || t.shape()[0] != n {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "Size mismatch between tensors: tensor 0 has {n} rows, tensor {i} has shape {:?}",
                        t.shape().as_slice()
                    ),
                ));
            }
            if !t.device().same(&device) {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "tensor {i} is on {} but tensor 0 is on {device}",
                        t.device()
                    ),
                ));
            }
        }
        Ok(TensorDataset { tensors })
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.tensors[0].shape()[0]
    }

    /// Whether there are no samples.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The tensors.
    pub fn tensors(&self) -> &[Tensor] {
        &self.tensors
    }

    /// Sample `index` (`dataset[index]`): each tensor's row, without the
    /// first dim.
    pub fn get(&self, index: usize) -> Result<Vec<Tensor>> {
        if index >= self.len() {
            return Err(Error::IndexOutOfRange {
                op: "TensorDataset::get",
                index: index as i64,
                size: self.len(),
            });
        }
        self.tensors
            .iter()
            .map(|t| t.select(0, index as isize))
            .collect()
    }

    /// The samples at `indices`, batched: each tensor's rows gathered on
    /// its device.
    pub fn gather(&self, indices: &[usize]) -> Result<Vec<Tensor>> {
        let n = self.len();
        if let Some(&bad) = indices.iter().find(|&&i| i >= n) {
            return Err(Error::IndexOutOfRange {
                op: "TensorDataset::gather",
                index: bad as i64,
                size: n,
            });
        }
        let device = self.tensors[0].device();
        let idx: Vec<i32> = indices.iter().map(|&i| i as i32).collect();
        let index = Tensor::from_vec(idx, &[indices.len()], &device)?;
        self.tensors
            .iter()
            .map(|t| t.index_select(0, &index))
            .collect()
    }
}

/// Mini-batches of a [`TensorDataset`] (`DataLoader(dataset, batch_size,
/// shuffle, drop_last)`): in order, or in a seeded permutation per epoch
/// (the same one [`DataLoader`](super::DataLoader) uses).
#[derive(Debug)]
pub struct TensorLoader<'a> {
    dataset: &'a TensorDataset,
    batch_size: usize,
    seed: Option<u64>,
    drop_last: bool,
    next_epoch: AtomicU64,
}

impl<'a> TensorLoader<'a> {
    /// Batches of `batch_size` (at least 1), in order, the last one partial.
    pub fn new(dataset: &'a TensorDataset, batch_size: usize) -> Result<Self> {
        if batch_size == 0 {
            return Err(Error::invalid(
                "TensorLoader::new",
                "batch_size must be at least 1",
            ));
        }
        Ok(TensorLoader {
            dataset,
            batch_size,
            seed: None,
            drop_last: false,
            next_epoch: AtomicU64::new(0),
        })
    }

    /// Shuffles every epoch, from `seed` and the epoch number.
    pub fn shuffle(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Drops the last batch when it is partial.
    pub fn drop_last(mut self, drop_last: bool) -> Self {
        self.drop_last = drop_last;
        self
    }

    /// Batches per epoch (`len(loader)`).
    pub fn num_batches(&self) -> usize {
        let n = self.dataset.len();
        if self.drop_last {
            n / self.batch_size
        } else {
            n.div_ceil(self.batch_size)
        }
    }

    /// The batches of `epoch`: each a `Vec` with one tensor per dataset
    /// tensor.
    pub fn epoch(&self, epoch: u64) -> impl Iterator<Item = Result<Vec<Tensor>>> + 'a {
        let n = self.dataset.len();
        let order = match self.seed {
            Some(seed) => permutation(n, seed, epoch),
            None => (0..n).collect(),
        };
        let (dataset, batch_size) = (self.dataset, self.batch_size);
        (0..self.num_batches()).map(move |b| {
            let start = b * batch_size;
            let end = (start + batch_size).min(n);
            dataset.gather(&order[start..end])
        })
    }

    /// The next epoch's batches (`for batch in loader:`), counting epochs
    /// from 0.
    pub fn iter(&self) -> impl Iterator<Item = Result<Vec<Tensor>>> + 'a {
        let epoch = self.next_epoch.fetch_add(1, Ordering::Relaxed);
        self.epoch(epoch)
    }
}
