//! Batch normalisation: [`batch_norm`] (`torch.nn.functional.batch_norm`)
//! and the modules [`BatchNorm1d`] and [`BatchNorm2d`], with running
//! statistics kept as buffers.

use wgrad_autograd::{DType, Device, Tensor, no_grad};
use wgrad_core::{Error, Result};

use crate::Module;

/// The running statistics a batch norm reads in evaluation and updates in
/// training: `running_mean` and `running_var`, shape `[C]`.
pub struct RunningStats<'a> {
    /// Per-channel mean estimate.
    pub mean: &'a Tensor,
    /// Per-channel (unbiased) variance estimate.
    pub var: &'a Tensor,
}

/// `[1, C, 1, ..]`: a per-channel vector shaped to broadcast over `rank` dims.
fn per_channel(t: &Tensor, rank: usize) -> Result<Tensor> {
    let mut shape = vec![1isize; rank];
    shape[1] = t.numel() as isize;
    t.reshape(&shape)
}

/// Batch normalisation over channel axis 1 of `x` `[N, C, ..]`, as
/// `torch.nn.functional.batch_norm(x, running_mean, running_var, weight,
/// bias, training, momentum, eps)`.
///
/// In training (or without running statistics) it normalises with the
/// batch's mean and biased variance over every axis but 1 and, when `running`
/// is given, updates it in place without recording gradients:
/// `running = (1 - momentum) * running + momentum * batch`, with the
/// unbiased batch variance, as PyTorch. Otherwise it normalises with the
/// running statistics. `weight`/`bias` (`[C]`) scale and shift afterwards.
/// A training batch with one value per channel is an error, as in PyTorch.
pub fn batch_norm(
    x: &Tensor,
    running: Option<RunningStats<'_>>,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    training: bool,
    momentum: f32,
    eps: f32,
) -> Result<Tensor> {
    const OP: &str = "batch_norm";
    let mixed = [weight, bias, running.as_ref().map(|r| r.mean)]
        .into_iter()
        .flatten()
        .any(|t| t.dtype() != x.dtype());
    if x.dtype().is_half() && mixed {
        // A 16-bit input with F32 parameters and statistics (autocast, or
        // a half input to a float model): computed in F32, the output in
        // the input's dtype, as PyTorch's mixed-dtype batch norm.
        return batch_norm(&x.float()?, running, weight, bias, training, momentum, eps)?
            .cast(x.dtype());
    }
    let shape = x.shape();
    if shape.len() < 2 {
        return Err(Error::invalid(
            OP,
            format!("expected an input [N, C, ..] with at least 2 dims, got shape {shape:?}"),
        ));
    }
    let channels = shape[1];
    for (what, t) in [
        ("running_mean", running.as_ref().map(|r| r.mean)),
        ("running_var", running.as_ref().map(|r| r.var)),
        ("weight", weight),
        ("bias", bias),
    ] {
        if let Some(t) = t
            && t.shape() != [channels]
        {
            return Err(Error::invalid(
                OP,
                format!(
                    "{what} must have shape [{channels}] for input shape {shape:?}, got {:?}",
                    t.shape()
                ),
            ));
        }
    }
    let rank = shape.len();
    let axes: Vec<isize> = (0..rank as isize).filter(|&a| a != 1).collect();
    let count: usize = shape
        .iter()
        .enumerate()
        .filter(|&(a, _)| a != 1)
        .map(|(_, &d)| d)
        .product();
    let (mean, var) = match (&running, training) {
        (Some(stats), false) => (
            per_channel(stats.mean, rank)?,
            per_channel(stats.var, rank)?,
        ),
        _ => {
            if count <= 1 {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "expected more than 1 value per channel when training, got input shape \
                         {shape:?}"
                    ),
                ));
            }
            let mean = x.mean(&axes, true)?;
            let var = x.var(&axes, 0, true)?;
            if let Some(stats) = &running {
                let _guard = no_grad();
                let unbiased = var.mul_scalar(count as f32 / (count - 1) as f32)?;
                let blend = |old: &Tensor, new: &Tensor| -> Result<()> {
                    let updated = old
                        .mul_scalar(1.0 - momentum)?
                        .add(&new.reshape(&[channels as isize])?.mul_scalar(momentum)?)?;
                    old.set_storage(updated.storage())
                };
                blend(stats.mean, &mean.detach())?;
                blend(stats.var, &unbiased.detach())?;
            }
            (mean, var)
        }
    };
    let mut y = x.sub(&mean)?.div(&var.add_scalar(eps)?.sqrt()?)?;
    if let Some(w) = weight {
        y = y.mul(&per_channel(w, rank)?)?;
    }
    if let Some(b) = bias {
        y = y.add(&per_channel(b, rank)?)?;
    }
    Ok(y)
}

/// Batch normalisation over channel axis 1, the layer behind
/// [`BatchNorm1d`] (input `[N, C]` or `[N, C, L]`) and [`BatchNorm2d`]
/// (input `[N, C, H, W]`): learnable `weight` (ones) and `bias` (zeros) of shape
/// `[C]` when `affine`, and the buffers `running_mean` (zeros),
/// `running_var` (ones) and `num_batches_tracked` (I32 0) when
/// `track_running_stats`, under PyTorch's `state_dict` names.
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{BatchNorm2d, Module};
/// let mut bn = BatchNorm2d::new(3, &Device::Cpu)?;
/// let x = Tensor::randn(&[4, 3, 5, 5], &Device::Cpu)?;
/// assert_eq!(bn.forward(&x)?.shape(), [4, 3, 5, 5]);
/// let state: Vec<String> = bn.named_state().into_iter().map(|(n, _)| n).collect();
/// assert_eq!(
///     state,
///     ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
/// );
/// bn.eval(); // normalises with the running statistics now
/// assert_eq!(bn.forward(&x)?.shape(), [4, 3, 5, 5]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Module)]
pub struct BatchNorm {
    num_features: usize,
    /// The input ranks this layer accepts (`[2, 3]` for 1d, `[4]` for 2d).
    ranks: &'static [usize],
    name: &'static str,
    eps: f32,
    /// `None`: a cumulative moving average (factor `1 / num_batches_tracked`).
    momentum: Option<f32>,
    /// Per-channel scale, when affine.
    pub weight: Option<Tensor>,
    /// Per-channel shift, when affine.
    pub bias: Option<Tensor>,
    /// The running mean, when tracking running statistics.
    #[module(buffer)]
    pub running_mean: Option<Tensor>,
    /// The running (unbiased) variance, when tracking running statistics.
    #[module(buffer)]
    pub running_var: Option<Tensor>,
    /// Training batches seen (I32), when tracking running statistics.
    #[module(buffer)]
    pub num_batches_tracked: Option<Tensor>,
    training: bool,
}

/// Options of a [`BatchNorm`] layer, with PyTorch's defaults.
#[derive(Clone, Copy, Debug)]
pub struct BatchNormOptions {
    /// Added to the variance (default `1e-5`).
    pub eps: f32,
    /// Running-statistics update factor (default `Some(0.1)`; `None` for a
    /// cumulative average).
    pub momentum: Option<f32>,
    /// Learnable weight and bias (default `true`).
    pub affine: bool,
    /// Keep running statistics for evaluation (default `true`).
    pub track_running_stats: bool,
}

impl Default for BatchNormOptions {
    fn default() -> Self {
        BatchNormOptions {
            eps: 1e-5,
            momentum: Some(0.1),
            affine: true,
            track_running_stats: true,
        }
    }
}

/// Declares a PyTorch-named batch-norm layer over [`BatchNorm`] for inputs
/// of the given ranks; it derefs to the [`BatchNorm`] (fields, options).
/// The layer is a tuple struct (`BatchNorm2d(pub BatchNorm)`, public API)
/// whose one field is flattened: its state keeps PyTorch's names
/// (`weight`, `running_mean`), not `0.weight`.
macro_rules! batch_norm_layer {
    ($(#[$doc:meta])* $name:ident, $ranks:expr) => {
        $(#[$doc])*
        #[derive(Module)]
        pub struct $name(#[module(flatten)] pub BatchNorm);

        impl $name {
            #[doc = concat!("`", stringify!($name), "(num_features)` with PyTorch's defaults.")]
            pub fn new(num_features: usize, device: &Device) -> Result<Self> {
                Self::with_options(num_features, BatchNormOptions::default(), device)
            }

            #[doc = concat!("`", stringify!($name), "(num_features, eps, momentum, affine, track_running_stats)`.")]
            pub fn with_options(
                num_features: usize,
                options: BatchNormOptions,
                device: &Device,
            ) -> Result<Self> {
                Ok($name(BatchNorm::build(
                    num_features,
                    options,
                    $ranks,
                    stringify!($name),
                    device,
                )?))
            }
        }

        impl std::ops::Deref for $name {
            type Target = BatchNorm;
            fn deref(&self) -> &BatchNorm {
                &self.0
            }
        }

        impl $name {
            fn forward(&self, x: &Tensor) -> Result<Tensor> {
                Module::forward(&self.0, x)
            }
        }
    };
}

batch_norm_layer!(
    /// `torch.nn.BatchNorm1d`: input `[N, C]` or `[N, C, L]` (see [`BatchNorm`]).
    ///
    /// ```
    /// use wgrad_autograd::{Device, Tensor};
    /// use wgrad_nn::{BatchNorm1d, Module};
    /// let bn = BatchNorm1d::new(4, &Device::Cpu)?;
    /// let y = bn.forward(&Tensor::randn(&[8, 4], &Device::Cpu)?)?;
    /// assert_eq!(y.shape(), [8, 4]);
    /// # Ok::<(), wgrad_core::Error>(())
    /// ```
    BatchNorm1d,
    &[2, 3]
);
batch_norm_layer!(
    /// `torch.nn.BatchNorm2d`: input `[N, C, H, W]` (see [`BatchNorm`]).
    ///
    /// ```
    /// use wgrad_autograd::{Device, Tensor};
    /// use wgrad_nn::{BatchNorm2d, Module};
    /// let bn = BatchNorm2d::new(3, &Device::Cpu)?;
    /// let y = bn.forward(&Tensor::randn(&[2, 3, 4, 4], &Device::Cpu)?)?;
    /// assert_eq!(y.shape(), [2, 3, 4, 4]);
    /// # Ok::<(), wgrad_core::Error>(())
    /// ```
    BatchNorm2d,
    &[4]
);

impl BatchNorm {
    fn build(
        num_features: usize,
        options: BatchNormOptions,
        ranks: &'static [usize],
        name: &'static str,
        device: &Device,
    ) -> Result<Self> {
        if let Some(m) = options.momentum
            && !(0.0..=1.0).contains(&m)
        {
            return Err(Error::invalid(
                name,
                format!("momentum must be in [0, 1], got {m}"),
            ));
        }
        let c = [num_features];
        let (weight, bias) = if options.affine {
            (
                Some(Tensor::ones(&c, device)?.with_requires_grad(true)?),
                Some(Tensor::zeros(&c, device)?.with_requires_grad(true)?),
            )
        } else {
            (None, None)
        };
        let (running_mean, running_var, num_batches_tracked) = if options.track_running_stats {
            (
                Some(Tensor::zeros(&c, device)?),
                Some(Tensor::ones(&c, device)?),
                Some(Tensor::full(&[], 0.0, DType::I32, device)?),
            )
        } else {
            (None, None, None)
        };
        Ok(BatchNorm {
            num_features,
            ranks,
            name,
            eps: options.eps,
            momentum: options.momentum,
            weight,
            bias,
            running_mean,
            running_var,
            num_batches_tracked,
            training: true,
        })
    }

    /// `num_features` (the channel count C).
    pub fn num_features(&self) -> usize {
        self.num_features
    }

    /// Adds one to `num_batches_tracked` on its device (exact up to 2^24
    /// batches) and returns the momentum to use for this batch.
    fn count_batch(&self, counter: &Tensor) -> Result<Option<Tensor>> {
        let _guard = no_grad();
        let next = counter.cast(DType::F32)?.add_scalar(1.0)?;
        counter.set_storage(next.cast(DType::I32)?.storage())?;
        // A cumulative average weighs this batch by 1 / batches seen.
        match self.momentum {
            Some(_) => Ok(None),
            None => Ok(Some(next)),
        }
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        if !self.ranks.contains(&x.rank()) {
            return Err(Error::invalid(
                self.name,
                format!(
                    "expected a {:?}-D input, got shape {:?}",
                    self.ranks,
                    x.shape()
                ),
            ));
        }
        if x.shape()[1] != self.num_features {
            return Err(Error::invalid(
                self.name,
                format!(
                    "expected {} channels (axis 1), got input shape {:?}",
                    self.num_features,
                    x.shape()
                ),
            ));
        }
        let running = match (&self.running_mean, &self.running_var) {
            (Some(mean), Some(var)) => Some(RunningStats { mean, var }),
            _ => None,
        };
        let mut momentum = self.momentum.unwrap_or(0.0);
        if self.training
            && let Some(counter) = &self.num_batches_tracked
            && let Some(batches) = self.count_batch(counter)?
        {
            return cumulative(self, x, running, &batches);
        }
        if running.is_none() {
            momentum = 0.0;
        }
        batch_norm(
            x,
            running,
            self.weight.as_ref(),
            self.bias.as_ref(),
            self.training || self.running_mean.is_none(),
            momentum,
            self.eps,
        )
    }
}

/// Training with `momentum = None`: the running statistics become the
/// cumulative average, factor `1 / batches` (a device tensor, so nothing is
/// read back).
fn cumulative(
    layer: &BatchNorm,
    x: &Tensor,
    running: Option<RunningStats<'_>>,
    batches: &Tensor,
) -> Result<Tensor> {
    let Some(stats) = running else {
        return batch_norm(
            x,
            None,
            layer.weight.as_ref(),
            layer.bias.as_ref(),
            true,
            0.0,
            layer.eps,
        );
    };
    // Snapshot, normalise with the batch (momentum 0 leaves the stats as
    // they were), then blend old and new with the device-side factor.
    let (old_mean, old_var) = (
        stats.mean.detach().contiguous()?,
        stats.var.detach().contiguous()?,
    );
    let y = batch_norm(
        x,
        Some(RunningStats {
            mean: stats.mean,
            var: stats.var,
        }),
        layer.weight.as_ref(),
        layer.bias.as_ref(),
        true,
        1.0,
        layer.eps,
    )?;
    let _guard = no_grad();
    let factor = batches.recip()?;
    for (old, now) in [(&old_mean, stats.mean), (&old_var, stats.var)] {
        // momentum 1 stored the batch statistic; blend it with the old value.
        let blended = old.add(&now.sub(old)?.mul(&factor)?)?;
        now.set_storage(blended.storage())?;
    }
    Ok(y)
}
