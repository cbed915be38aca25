//! Mini-batch iteration over a [`Dataset`], like `torch.utils.data.DataLoader`.

use std::sync::atomic::{AtomicU64, Ordering};

use wgrad_autograd::{Device, Tensor};
use wgrad_core::{Error, Result};

use super::Dataset;
use super::shuffle::permutation;

/// Splits a [`Dataset`] into batches of `(features [B, ..shape] f32, labels [B] i32)`.
///
/// Batches are assembled on the host and each tensor is uploaded with a
/// single `from_vec`, so a GPU epoch costs two transfers per batch and no
/// per-sample traffic.
///
/// ```
/// use wgrad_autograd::Device;
/// use wgrad_nn::data::{DataLoader, synthetic};
/// let (train, _test) = synthetic::digits_split(200, 50, 0);
/// let loader = DataLoader::new(&train, 64)?.shuffle(42).drop_last(true);
/// assert_eq!(loader.num_batches(), 3); // 200 / 64, the last 8 dropped
/// let device = Device::Cpu;
/// for epoch in 0..2 {
///     for batch in loader.epoch(epoch, &device) {
///         let (x, y) = batch?;
///         assert_eq!(x.shape(), [64, 784]);
///         assert_eq!(y.shape(), [64]);
///     }
/// }
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Debug)]
pub struct DataLoader<'a> {
    dataset: &'a Dataset,
    batch_size: usize,
    seed: Option<u64>,
    drop_last: bool,
    /// The epoch that the next [`iter`](DataLoader::iter) call serves; atomic
    /// so that `iter` can take `&self` (as `for b in loader.iter(..)` wants)
    /// and the loader stays `Sync`.
    next_epoch: AtomicU64,
}

impl<'a> DataLoader<'a> {
    /// A loader over `dataset` in stored order, keeping a short last batch.
    /// Fails when `batch_size` is 0.
    pub fn new(dataset: &'a Dataset, batch_size: usize) -> Result<DataLoader<'a>> {
        if batch_size == 0 {
            return Err(Error::invalid(
                "DataLoader::new",
                "batch_size must be at least 1",
            ));
        }
        Ok(DataLoader {
            dataset,
            batch_size,
            seed: None,
            drop_last: false,
            next_epoch: AtomicU64::new(0),
        })
    }

    /// Reshuffles every epoch, in an order that depends only on `(seed, epoch)`
    /// (a Fisher–Yates shuffle driven by SplitMix64).
    pub fn shuffle(mut self, seed: u64) -> DataLoader<'a> {
        self.seed = Some(seed);
        self
    }

    /// Whether to drop the last batch when it is smaller than `batch_size`
    /// (PyTorch's default is `false`).
    pub fn drop_last(mut self, drop_last: bool) -> DataLoader<'a> {
        self.drop_last = drop_last;
        self
    }

    /// The dataset being iterated.
    pub fn dataset(&self) -> &'a Dataset {
        self.dataset
    }

    /// Samples per batch (the last one may be smaller unless `drop_last`).
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// Batches per epoch.
    pub fn num_batches(&self) -> usize {
        let n = self.dataset.len();
        if self.drop_last {
            n / self.batch_size
        } else {
            n.div_ceil(self.batch_size)
        }
    }

    /// The sample indices of epoch `epoch`, in visiting order, before
    /// `drop_last` is applied.
    pub fn epoch_order(&self, epoch: u64) -> Vec<usize> {
        match self.seed {
            Some(seed) => permutation(self.dataset.len(), seed, epoch),
            None => (0..self.dataset.len()).collect(),
        }
    }

    /// The batches of epoch `epoch` on `device`; the same `(seed, epoch)`
    /// always gives the same batches.
    pub fn epoch(&self, epoch: u64, device: &Device) -> Batches<'a> {
        Batches {
            dataset: self.dataset,
            order: self.epoch_order(epoch),
            batch_size: self.batch_size,
            next_batch: 0,
            num_batches: self.num_batches(),
            device: device.clone(),
        }
    }

    /// The batches of the next epoch: the first call serves epoch 0, the
    /// second epoch 1, and so on, so that a shuffling loader reshuffles
    /// every time it is iterated, as in PyTorch.
    pub fn iter(&self, device: &Device) -> Batches<'a> {
        let epoch = self.next_epoch.fetch_add(1, Ordering::Relaxed);
        self.epoch(epoch, device)
    }

    /// Makes the next [`iter`](Self::iter) call serve `epoch` (e.g. when
    /// resuming training), like `DistributedSampler.set_epoch`.
    pub fn set_epoch(&self, epoch: u64) {
        self.next_epoch.store(epoch, Ordering::Relaxed);
    }
}

/// The batches of one epoch; see [`DataLoader`].
#[derive(Debug)]
pub struct Batches<'a> {
    dataset: &'a Dataset,
    order: Vec<usize>,
    batch_size: usize,
    next_batch: usize,
    num_batches: usize,
    device: Device,
}

impl Batches<'_> {
    /// The positions in `order` of the next batch, advancing past it.
    fn next_range(&mut self) -> Option<std::ops::Range<usize>> {
        if self.next_batch >= self.num_batches {
            return None;
        }
        let start = self.next_batch * self.batch_size;
        let end = (start + self.batch_size).min(self.order.len());
        self.next_batch += 1;
        Some(start..end)
    }

    /// The sample indices of the next batch, advancing past it, without
    /// building tensors (for host-side consumers).
    pub fn next_indices(&mut self) -> Option<&[usize]> {
        let range = self.next_range()?;
        Some(&self.order[range])
    }
}

impl Iterator for Batches<'_> {
    type Item = Result<(Tensor, Tensor)>;

    fn next(&mut self) -> Option<Self::Item> {
        let range = self.next_range()?;
        let indices = &self.order[range];
        Some(self.dataset.gather(indices).and_then(|(features, labels)| {
            let mut shape = Vec::with_capacity(1 + self.dataset.features_shape().len());
            shape.push(indices.len());
            shape.extend_from_slice(self.dataset.features_shape());
            let x = Tensor::from_vec(features, &shape, &self.device)?;
            let y = Tensor::from_vec(labels, &[indices.len()], &self.device)?;
            Ok((x, y))
        }))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.num_batches - self.next_batch;
        (left, Some(left))
    }
}

impl ExactSizeIterator for Batches<'_> {}
