//! An in-memory labelled dataset kept on the host.

use wgrad_core::{Error, Result};

use super::shuffle::permutation;

/// Samples with a fixed per-sample shape and an integer class label each.
///
/// Features are stored row-major as one `Vec<f32>` (sample `i` occupies
/// `features[i * sample_numel .. (i + 1) * sample_numel]`) so that a batch
/// is assembled with plain slice copies and uploaded in one go; tensors are
/// only created per batch by [`DataLoader`](super::DataLoader).
#[derive(Clone, Debug, PartialEq)]
pub struct Dataset {
    features: Vec<f32>,
    shape: Vec<usize>,
    labels: Vec<i32>,
}

impl Dataset {
    /// A dataset of `labels.len()` samples of shape `sample_shape`.
    ///
    /// Fails when `features.len()` is not `labels.len() * prod(sample_shape)`.
    pub fn new(features: Vec<f32>, sample_shape: &[usize], labels: Vec<i32>) -> Result<Dataset> {
        let numel: usize = sample_shape.iter().product();
        let expected = labels.len().checked_mul(numel).ok_or_else(|| {
            Error::invalid(
                "Dataset::new",
                format!(
                    "{} samples of shape {sample_shape:?} overflow usize",
                    labels.len()
                ),
            )
        })?;
        if features.len() != expected {
            return Err(Error::invalid(
                "Dataset::new",
                format!(
                    "{} labels of samples shaped {sample_shape:?} need {expected} feature values, got {}",
                    labels.len(),
                    features.len()
                ),
            ));
        }
        if numel == 0 && !labels.is_empty() {
            return Err(Error::invalid(
                "Dataset::new",
                format!("sample shape {sample_shape:?} has no elements"),
            ));
        }
        Ok(Dataset {
            features,
            shape: sample_shape.to_vec(),
            labels,
        })
    }

    /// A dataset from parts that the caller built consistently
    /// (`features.len() == labels.len() * prod(shape)`).
    pub(crate) fn from_parts(features: Vec<f32>, shape: Vec<usize>, labels: Vec<i32>) -> Dataset {
        debug_assert_eq!(
            features.len(),
            labels.len() * shape.iter().product::<usize>()
        );
        Dataset {
            features,
            shape,
            labels,
        }
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether there are no samples.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// The shape of one sample (e.g. `[784]` or `[2]`); a batch is `[B, ..shape]`.
    pub fn features_shape(&self) -> &[usize] {
        &self.shape
    }

    /// Number of feature values per sample.
    pub fn sample_numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// All features, row-major, sample after sample.
    pub fn features(&self) -> &[f32] {
        &self.features
    }

    /// All labels.
    pub fn labels(&self) -> &[i32] {
        &self.labels
    }

    /// The features and label of sample `index`, or `None` past the end.
    pub fn get(&self, index: usize) -> Option<(&[f32], i32)> {
        let label = *self.labels.get(index)?;
        let n = self.sample_numel();
        Some((&self.features[index * n..(index + 1) * n], label))
    }

    /// `1 + ` the largest label (0 for an empty dataset or only negative labels).
    pub fn num_classes(&self) -> usize {
        self.labels
            .iter()
            .map(|&l| i64::from(l).max(-1) + 1)
            .max()
            .unwrap_or(0) as usize
    }

    /// How many samples carry each label `0..num_classes()` (negative labels
    /// are not counted).
    pub fn class_counts(&self) -> Vec<usize> {
        let mut counts = vec![0; self.num_classes()];
        for &label in &self.labels {
            if let Ok(l) = usize::try_from(label) {
                counts[l] += 1;
            }
        }
        counts
    }

    /// The same samples viewed with another per-sample shape of equal size
    /// (e.g. `[784]` to `[1, 28, 28]` for a convolutional model).
    pub fn with_features_shape(mut self, sample_shape: &[usize]) -> Result<Dataset> {
        let numel: usize = sample_shape.iter().product();
        if numel != self.sample_numel() {
            return Err(Error::invalid(
                "Dataset::with_features_shape",
                format!(
                    "cannot view samples of shape {:?} ({} values) as {sample_shape:?} ({numel} values)",
                    self.shape,
                    self.sample_numel()
                ),
            ));
        }
        self.shape = sample_shape.to_vec();
        Ok(self)
    }

    /// Copies samples `indices` (in that order) into one contiguous feature
    /// buffer and one label buffer: the host side of a batch.
    pub fn gather(&self, indices: &[usize]) -> Result<(Vec<f32>, Vec<i32>)> {
        let n = self.sample_numel();
        let mut features = Vec::with_capacity(indices.len() * n);
        let mut labels = Vec::with_capacity(indices.len());
        for &i in indices {
            let (x, y) = self.get(i).ok_or(Error::IndexOutOfRange {
                op: "Dataset::gather",
                index: i as i64,
                size: self.len(),
            })?;
            features.extend_from_slice(x);
            labels.push(y);
        }
        Ok((features, labels))
    }

    /// A new dataset of samples `indices` (in that order; repeats allowed).
    pub fn subset(&self, indices: &[usize]) -> Result<Dataset> {
        let (features, labels) = self.gather(indices)?;
        Ok(Dataset {
            features,
            shape: self.shape.clone(),
            labels,
        })
    }

    /// The samples in a random order fixed by `seed` (use before
    /// [`split`](Self::split) when the stored order is sorted by class).
    pub fn shuffled(&self, seed: u64) -> Dataset {
        let order = permutation(self.len(), seed, 0);
        let n = self.sample_numel();
        let mut features = Vec::with_capacity(self.features.len());
        let mut labels = Vec::with_capacity(self.len());
        for i in order {
            features.extend_from_slice(&self.features[i * n..(i + 1) * n]);
            labels.push(self.labels[i]);
        }
        Dataset {
            features,
            shape: self.shape.clone(),
            labels,
        }
    }

    /// The first `n` samples and the rest.
    pub fn split_at(&self, n: usize) -> Result<(Dataset, Dataset)> {
        if n > self.len() {
            return Err(Error::invalid(
                "Dataset::split_at",
                format!("cannot take {n} samples from a dataset of {}", self.len()),
            ));
        }
        let cut = n * self.sample_numel();
        let part = |features: &[f32], labels: &[i32]| Dataset {
            features: features.to_vec(),
            shape: self.shape.clone(),
            labels: labels.to_vec(),
        };
        Ok((
            part(&self.features[..cut], &self.labels[..n]),
            part(&self.features[cut..], &self.labels[n..]),
        ))
    }

    /// The first `round(frac * len)` samples and the rest, in stored order
    /// (call [`shuffled`](Self::shuffled) first for a random split).
    /// `frac` must lie in `[0, 1]`.
    pub fn split(&self, frac: f64) -> Result<(Dataset, Dataset)> {
        if !(0.0..=1.0).contains(&frac) {
            return Err(Error::invalid(
                "Dataset::split",
                format!("fraction {frac} is not in [0, 1]"),
            ));
        }
        self.split_at((frac * self.len() as f64).round() as usize)
    }
}
