//! `--amp f16|bf16`: mixed-precision training as a PyTorch script writes it:
//! the forward pass and the loss under `torch.autocast`, and for float16 a
//! `GradScaler` around backward and the optimizer step (bfloat16 has
//! float32's range and needs none).

use wgrad::AutocastGuard;
use wgrad::amp::GradScaler;
use wgrad::optim::Optimizer;
use wgrad::prelude::*;

use super::cli::Precision;

/// The autocast dtype of a run and its loss scaler.
pub struct Amp {
    dtype: Option<DType>,
    scaler: Option<GradScaler>,
}

impl Amp {
    /// Mixed precision as `--amp` asks (`f32`: none).
    pub fn new(precision: Precision) -> Amp {
        let dtype = match precision {
            Precision::F32 => None,
            Precision::F16 => Some(DType::F16),
            Precision::Bf16 => Some(DType::BF16),
        };
        let scaler = (dtype == Some(DType::F16)).then(GradScaler::new);
        Amp { dtype, scaler }
    }

    /// The autocast region for a forward pass and its loss (`None` in
    /// float32); it ends when the guard is dropped.
    pub fn autocast(&self) -> Result<Option<AutocastGuard>> {
        self.dtype.map(AutocastGuard::new).transpose()
    }

    /// `scaler.scale(loss).backward()` (a plain backward without a scaler).
    pub fn backward(&self, loss: &Tensor) -> Result<()> {
        match &self.scaler {
            Some(s) => s.scale(loss)?.backward(),
            None => loss.backward(),
        }
    }

    /// `scaler.unscale_(opt)`, before gradients are clipped.
    pub fn unscale(&mut self, opt: &mut dyn Optimizer) -> Result<()> {
        match &mut self.scaler {
            Some(s) => s.unscale_(opt),
            None => Ok(()),
        }
    }

    /// `scaler.step(opt); scaler.update()` (`opt.step()` without a scaler):
    /// a step whose gradients overflowed is skipped and the scale halved.
    pub fn step(&mut self, opt: &mut dyn Optimizer) -> Result<()> {
        match &mut self.scaler {
            Some(s) => {
                s.step(opt)?;
                s.update()
            }
            None => opt.step(),
        }
    }
}
