//! `torch.amp.GradScaler`: dynamic loss scaling for mixed-precision training.
//!
//! Small f16 gradients underflow to zero; multiplying the loss by a large
//! scale before `backward` lifts them into range, and dividing the
//! gradients by it again before the optimizer step restores their values.
//! Too large a scale overflows instead: then some gradient holds an inf or
//! a NaN, the step is skipped and the scale backs off; after
//! `growth_interval` clean steps in a row it grows again.
//!
//! The scale lives on the host (an f32, as PyTorch's `_scale` tensor holds
//! it, so every growth and backoff rounds the same way). The inf/NaN check
//! runs on the gradients' device: `unscale_` folds every gradient into one
//! 0-d `max |g|` per device (NaN-propagating, so it is non-finite exactly
//! when some element is) without waiting for it; `step` reads that one
//! scalar back, as PyTorch's `found_inf.item()` does, and `update` reuses
//! what `step` read.

use std::collections::{BTreeMap, HashMap};

use wgrad_core::{BinaryOp, DType, Error, Result, UnaryOp};

use super::Optimizer;
use crate::{Device, Storage, Tensor};

/// The keys of [`GradScaler::state_dict`], as PyTorch spells them.
const KEY_SCALE: &str = "scale";
const KEY_GROWTH_FACTOR: &str = "growth_factor";
const KEY_BACKOFF_FACTOR: &str = "backoff_factor";
const KEY_GROWTH_INTERVAL: &str = "growth_interval";
const KEY_GROWTH_TRACKER: &str = "_growth_tracker";

/// Settings of a [`GradScaler`], with `torch.amp.GradScaler`'s defaults
/// (`init_scale = 65536`, `growth_factor = 2`, `backoff_factor = 0.5`,
/// `growth_interval = 2000`, enabled).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GradScalerConfig {
    /// The first scale (finite and > 0 as an f32).
    pub init_scale: f64,
    /// What the scale is multiplied by after `growth_interval` clean steps (> 1).
    pub growth_factor: f64,
    /// What the scale is multiplied by after a step with an inf or NaN (in (0, 1)).
    pub backoff_factor: f64,
    /// Clean steps in a row before the scale grows (> 0).
    pub growth_interval: u64,
    /// `false` makes every method a pass-through (scale 1, steps never skipped).
    pub enabled: bool,
}

impl Default for GradScalerConfig {
    fn default() -> Self {
        GradScalerConfig {
            init_scale: 65536.0,
            growth_factor: 2.0,
            backoff_factor: 0.5,
            growth_interval: 2000,
            enabled: true,
        }
    }
}

/// Where an optimizer is in the scale-backward-unscale-step-update cycle
/// (PyTorch's `OptState`; its `READY` is having no record).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Unscaled,
    Stepped,
}

/// What `unscale_` recorded for one optimizer since the last `update`.
#[derive(Debug)]
struct OptimizerRecord {
    stage: Stage,
    /// Whether any parameter had a gradient: PyTorch's
    /// `found_inf_per_device` is empty otherwise, and `step`/`update` refuse.
    checked: bool,
    /// One 0-d f32 `max |g|` per device holding non-empty gradients: inf or
    /// NaN exactly when some element of some gradient is.
    flags: Vec<Storage>,
    /// The flags read back (once; `step` and `update` share the answer).
    found_inf: Option<bool>,
}

impl OptimizerRecord {
    /// Whether some gradient held an inf or a NaN; reads each device's flag
    /// back the first time (one readback per device, one in practice).
    fn found_inf(&mut self) -> Result<bool> {
        if let Some(found) = self.found_inf {
            return Ok(found);
        }
        let mut found = false;
        for flag in &self.flags {
            found |= flag.to_vec::<f32>()?.iter().any(|v| !v.is_finite());
        }
        self.found_inf = Some(found);
        Ok(found)
    }
}

/// An optimizer's identity across calls: its first parameter's id (PyTorch
/// keys by `id(optimizer)`; a Rust value may move, its parameters' ids do
/// not, and two optimizers never share a parameter in practice).
fn optimizer_key<O: Optimizer + ?Sized>(optimizer: &O) -> Option<u64> {
    optimizer.params().first().map(Tensor::id)
}

/// Dynamic loss scaling (`torch.amp.GradScaler`), for any [`Optimizer`].
///
/// Each iteration: `scaler.scale(&loss)?.backward()?`, optionally
/// `scaler.unscale_(&mut opt)?` (to clip the true gradients), then
/// `scaler.step(&mut opt)?` (skipped when a gradient overflowed) and
/// `scaler.update()?`.
///
/// ```
/// use wgrad_autograd::optim::{GradScaler, Optimizer, Sgd, SgdConfig};
/// use wgrad_autograd::{Device, Tensor};
/// let w = Tensor::from_vec(vec![1.0f32, -2.0], &[2], &Device::Cpu)?.with_requires_grad(true)?;
/// let mut opt = Sgd::new(vec![w.clone()], SgdConfig::new(0.1))?;
/// let mut scaler = GradScaler::new();
///
/// opt.zero_grad();
/// let loss = w.square()?.sum_all()?;
/// scaler.scale(&loss)?.backward()?; // gradients are 65536 * 2w
/// assert!(scaler.step(&mut opt)?); // unscaled to 2w, no inf: stepped
/// scaler.update()?;
/// let stepped = w.to_vec_f32()?; // w - 0.1 * 2w
/// assert!((stepped[0] - 0.8).abs() < 1e-6 && (stepped[1] + 1.6).abs() < 1e-6);
///
/// // A gradient that overflows f32 once scaled: the step is skipped and
/// // the scale backs off.
/// opt.zero_grad();
/// let loss = w.mul_scalar(1e38)?.sum_all()?;
/// scaler.scale(&loss)?.backward()?;
/// assert!(!scaler.step(&mut opt)?);
/// assert!(scaler.last_step_skipped());
/// scaler.update()?;
/// assert_eq!(scaler.get_scale(), 32768.0);
/// assert_eq!(w.to_vec_f32()?, stepped);
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
#[derive(Debug)]
pub struct GradScaler {
    enabled: bool,
    /// The current scale, an f32 as PyTorch's `_scale` tensor.
    scale: f32,
    growth_factor: f64,
    backoff_factor: f64,
    growth_interval: u64,
    /// Clean steps since the last growth or backoff (< `growth_interval`).
    growth_tracker: u64,
    /// Per optimizer (see [`optimizer_key`]), cleared by `update`.
    records: HashMap<Option<u64>, OptimizerRecord>,
    last_step_skipped: bool,
}

impl Default for GradScaler {
    fn default() -> Self {
        GradScaler::new()
    }
}

/// The f32 scale `value` stands for, if it is a usable scale (finite and > 0
/// after rounding to f32, the precision the scale is kept in).
fn check_scale(op: &'static str, name: &str, value: f64) -> Result<f32> {
    let rounded = value as f32;
    if rounded.is_finite() && rounded > 0.0 {
        Ok(rounded)
    } else {
        Err(Error::invalid(
            op,
            format!("{name} must be finite and > 0 as an f32, got {value}"),
        ))
    }
}

fn check_growth_factor(op: &'static str, value: f64) -> Result<()> {
    // `> 1` is false for NaN, so NaN is refused too.
    if value > 1.0 && value.is_finite() {
        Ok(())
    } else {
        Err(Error::invalid(
            op,
            format!("The growth factor must be > 1.0 (and finite), got {value}"),
        ))
    }
}

fn check_backoff_factor(op: &'static str, value: f64) -> Result<()> {
    if value > 0.0 && value < 1.0 {
        Ok(())
    } else {
        Err(Error::invalid(
            op,
            format!("The backoff factor must be in (0, 1), got {value}"),
        ))
    }
}

fn check_growth_interval(op: &'static str, value: u64) -> Result<()> {
    if value > 0 {
        Ok(())
    } else {
        Err(Error::invalid(op, "growth_interval must be > 0, got 0"))
    }
}

/// `value` as a whole number in `[min, max]` (state dicts hold every value
/// as an f64; the counts must be integers).
fn whole(op: &'static str, key: &str, value: f64, min: u64, max: u64) -> Result<u64> {
    // Integers up to 2^53 are exact in f64; u64 beyond that is not needed.
    let limit = (max as f64).min(9_007_199_254_740_992.0);
    if value.fract() == 0.0 && value >= min as f64 && value <= limit {
        Ok(value as u64)
    } else {
        Err(Error::invalid(
            op,
            format!("state_dict[\"{key}\"] must be a whole number in [{min}, {max}], got {value}"),
        ))
    }
}

impl GradScaler {
    /// A scaler with PyTorch's defaults (see [`GradScalerConfig`]).
    pub fn new() -> GradScaler {
        GradScaler::from_checked(GradScalerConfig::default(), 65536.0)
    }

    /// A scaler from settings already checked, starting at `scale`.
    fn from_checked(config: GradScalerConfig, scale: f32) -> GradScaler {
        GradScaler {
            enabled: config.enabled,
            scale,
            growth_factor: config.growth_factor,
            backoff_factor: config.backoff_factor,
            growth_interval: config.growth_interval,
            growth_tracker: 0,
            records: HashMap::new(),
            last_step_skipped: false,
        }
    }

    /// A scaler with `config`'s settings. When enabled, they must be valid
    /// (`init_scale` finite and > 0, `growth_factor > 1`,
    /// `0 < backoff_factor < 1`, `growth_interval > 0`), else
    /// `InvalidArgument`; a disabled scaler ignores them, as PyTorch only
    /// checks an enabled one.
    pub fn with_config(config: GradScalerConfig) -> Result<GradScaler> {
        const OP_NEW: &str = "GradScaler::with_config";
        let scale = if config.enabled {
            check_growth_factor(OP_NEW, config.growth_factor)?;
            check_backoff_factor(OP_NEW, config.backoff_factor)?;
            check_growth_interval(OP_NEW, config.growth_interval)?;
            check_scale(OP_NEW, "init_scale", config.init_scale)?
        } else {
            config.init_scale as f32
        };
        Ok(GradScaler::from_checked(config, scale))
    }

    /// `loss * scale`, recorded for backward (the loss unchanged when disabled).
    pub fn scale(&self, loss: &Tensor) -> Result<Tensor> {
        if !self.enabled {
            return Ok(loss.clone());
        }
        loss.binary_scalar(BinaryOp::Mul, self.scale, false)
    }

    /// Divides every gradient of `optimizer`'s parameters by the scale (in
    /// place, as `clip_grad_norm_` rewrites them) and records on the device
    /// whether any element is inf or NaN, without reading it back. Call it
    /// before clipping gradients; `step` then does not unscale again.
    ///
    /// A second call before [`update`](Self::update), or one after
    /// [`step`](Self::step), is an error (PyTorch's `RuntimeError`), as are
    /// f16 gradients (PyTorch's "Attempting to unscale FP16 gradients.":
    /// keep f32 master parameters). All-or-nothing: on an error no
    /// gradient has changed.
    pub fn unscale_<O: Optimizer + ?Sized>(&mut self, optimizer: &mut O) -> Result<()> {
        const OP_UNSCALE: &str = "GradScaler::unscale_";
        if !self.enabled {
            return Ok(());
        }
        let key = optimizer_key(optimizer);
        match self.records.get(&key).map(|r| r.stage) {
            Some(Stage::Unscaled) => {
                return Err(Error::invalid(
                    OP_UNSCALE,
                    "unscale_() has already been called on this optimizer since the last update().",
                ));
            }
            Some(Stage::Stepped) => {
                return Err(Error::invalid(
                    OP_UNSCALE,
                    "unscale_() is being called after step().",
                ));
            }
            None => {}
        }
        // PyTorch: `self._scale.double().reciprocal().float()`.
        let inv_scale = (1.0 / f64::from(self.scale)) as f32;
        let record = unscale_grads(OP_UNSCALE, optimizer.params(), inv_scale)?;
        self.records.insert(key, record);
        Ok(())
    }

    /// Unscales the gradients unless [`unscale_`](Self::unscale_) already
    /// did, then runs `optimizer.step()` unless some gradient held an inf or
    /// a NaN. Returns whether the optimizer stepped (`false`: skipped, also
    /// [`last_step_skipped`](Self::last_step_skipped)). Reads the inf/NaN
    /// flag back (one scalar per device), as PyTorch does.
    ///
    /// Errors: a second `step` before `update`, or no parameter having a
    /// gradient (PyTorch's "No inf checks were recorded for this
    /// optimizer."). Disabled: just `optimizer.step()`.
    pub fn step<O: Optimizer + ?Sized>(&mut self, optimizer: &mut O) -> Result<bool> {
        const OP_STEP: &str = "GradScaler::step";
        if !self.enabled {
            optimizer.step()?;
            self.last_step_skipped = false;
            return Ok(true);
        }
        let key = optimizer_key(optimizer);
        let unscaled_here = match self.records.get(&key).map(|r| r.stage) {
            Some(Stage::Stepped) => {
                return Err(Error::invalid(
                    OP_STEP,
                    "step() has already been called since the last update().",
                ));
            }
            Some(Stage::Unscaled) => false,
            None => {
                self.unscale_(optimizer)?;
                true
            }
        };
        let record = self
            .records
            .get_mut(&key)
            .ok_or_else(|| Error::invalid(OP_STEP, "internal error: unscale_ recorded nothing"))?;
        if !record.checked {
            if unscaled_here {
                // Nothing was unscaled; forget the attempt so that a step
                // after backward works (PyTorch stays stuck until update).
                self.records.remove(&key);
            }
            return Err(Error::invalid(
                OP_STEP,
                "No inf checks were recorded for this optimizer (no parameter has a gradient: \
                 run backward on the scaled loss first).",
            ));
        }
        let found_inf = record.found_inf()?;
        if !found_inf {
            optimizer.step()?;
        }
        record.stage = Stage::Stepped;
        self.last_step_skipped = found_inf;
        Ok(!found_inf)
    }

    /// Adjusts the scale for the next iteration: times `backoff_factor` if
    /// any optimizer's gradients held an inf or a NaN since the last update
    /// (and the growth count restarts), else the clean-step count goes up
    /// and at `growth_interval` the scale grows by `growth_factor` (unless
    /// that would overflow f32). Errors when no optimizer was unscaled or
    /// stepped since the last update (PyTorch's "No inf checks were
    /// recorded prior to update."). A no-op when disabled.
    pub fn update(&mut self) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        let mut checked = false;
        let mut found_inf = false;
        for record in self.records.values_mut().filter(|r| r.checked) {
            checked = true;
            found_inf |= record.found_inf()?;
        }
        if !checked {
            return Err(Error::invalid(
                "GradScaler::update",
                "No inf checks were recorded prior to update() (call step() or unscale_() first).",
            ));
        }
        // PyTorch's `_amp_update_scale_`: f32 scale times an f64 factor,
        // rounded back to f32.
        if found_inf {
            self.scale = (f64::from(self.scale) * self.backoff_factor) as f32;
            self.growth_tracker = 0;
        } else {
            let successful = self.growth_tracker + 1;
            if successful >= self.growth_interval {
                let grown = (f64::from(self.scale) * self.growth_factor) as f32;
                // Never grow past f32's range to inf.
                if grown.is_finite() {
                    self.scale = grown;
                }
                self.growth_tracker = 0;
            } else {
                self.growth_tracker = successful;
            }
        }
        self.records.clear();
        Ok(())
    }

    /// Sets the scale to `new_scale` instead of adjusting it (PyTorch's
    /// `update(new_scale)`): the growth count is kept, the per-optimizer
    /// records are cleared. `new_scale` must be finite and > 0 as an f32
    /// (PyTorch does not check; a zero or NaN scale would silently break
    /// training). A no-op when disabled.
    pub fn update_to(&mut self, new_scale: f64) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        self.scale = check_scale("GradScaler::update_to", "new_scale", new_scale)?;
        self.records.clear();
        Ok(())
    }

    /// The current scale (1 when disabled, as PyTorch's `get_scale`).
    pub fn get_scale(&self) -> f64 {
        if self.enabled {
            f64::from(self.scale)
        } else {
            1.0
        }
    }
    /// Whether scaling is on.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }
    /// The growth factor.
    pub fn get_growth_factor(&self) -> f64 {
        self.growth_factor
    }
    /// Sets the growth factor (> 1, else `InvalidArgument`).
    pub fn set_growth_factor(&mut self, value: f64) -> Result<()> {
        check_growth_factor("GradScaler::set_growth_factor", value)?;
        self.growth_factor = value;
        Ok(())
    }
    /// The backoff factor.
    pub fn get_backoff_factor(&self) -> f64 {
        self.backoff_factor
    }
    /// Sets the backoff factor (in (0, 1), else `InvalidArgument`).
    pub fn set_backoff_factor(&mut self, value: f64) -> Result<()> {
        check_backoff_factor("GradScaler::set_backoff_factor", value)?;
        self.backoff_factor = value;
        Ok(())
    }
    /// The number of clean steps after which the scale grows.
    pub fn get_growth_interval(&self) -> u64 {
        self.growth_interval
    }
    /// Sets the growth interval (> 0, else `InvalidArgument`). A growth
    /// count already at or past the new interval grows the scale at the
    /// next clean update.
    pub fn set_growth_interval(&mut self, value: u64) -> Result<()> {
        check_growth_interval("GradScaler::set_growth_interval", value)?;
        self.growth_interval = value;
        Ok(())
    }
    /// Clean steps since the scale last grew or backed off (0 when disabled).
    pub fn get_growth_tracker(&self) -> u64 {
        if self.enabled { self.growth_tracker } else { 0 }
    }
    /// Whether the last [`step`](Self::step) skipped the optimizer step
    /// because a gradient held an inf or a NaN (kept until the next step).
    pub fn last_step_skipped(&self) -> bool {
        self.last_step_skipped
    }

    /// The scaler's state with PyTorch's keys (`scale`, `growth_factor`,
    /// `backoff_factor`, `growth_interval`, `_growth_tracker`), every value
    /// an f64 (the two counts are whole numbers); empty when disabled, as
    /// in PyTorch.
    pub fn state_dict(&self) -> BTreeMap<String, f64> {
        if !self.enabled {
            return BTreeMap::new();
        }
        [
            (KEY_SCALE, f64::from(self.scale)),
            (KEY_GROWTH_FACTOR, self.growth_factor),
            (KEY_BACKOFF_FACTOR, self.backoff_factor),
            (KEY_GROWTH_INTERVAL, self.growth_interval as f64),
            (KEY_GROWTH_TRACKER, self.growth_tracker as f64),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
    }

    /// Restores a [`state_dict`](Self::state_dict) (other keys are ignored,
    /// as in PyTorch). Every value is checked before anything changes: a
    /// missing key, a scale that is not finite and > 0, factors or an
    /// interval that `with_config` would refuse, or a growth count that is
    /// not a whole number below the interval is `InvalidArgument` and
    /// leaves the scaler as it was. Loading into a disabled scaler, or an
    /// empty dict (saved by a disabled one), is an error as in PyTorch.
    pub fn load_state_dict(&mut self, state: &BTreeMap<String, f64>) -> Result<()> {
        const OP_LOAD: &str = "GradScaler::load_state_dict";
        if !self.enabled {
            return Err(Error::invalid(
                OP_LOAD,
                "Attempting to load_state_dict on a disabled instance of GradScaler.",
            ));
        }
        if state.is_empty() {
            return Err(Error::invalid(
                OP_LOAD,
                "The source state dict is empty, possibly because it was saved from a disabled \
                 instance of GradScaler.",
            ));
        }
        let get = |key: &str| {
            state.get(key).copied().ok_or_else(|| {
                Error::invalid(OP_LOAD, format!("state_dict is missing the key \"{key}\""))
            })
        };
        let scale = check_scale(OP_LOAD, "state_dict[\"scale\"]", get(KEY_SCALE)?)?;
        let growth_factor = get(KEY_GROWTH_FACTOR)?;
        check_growth_factor(OP_LOAD, growth_factor)?;
        let backoff_factor = get(KEY_BACKOFF_FACTOR)?;
        check_backoff_factor(OP_LOAD, backoff_factor)?;
        let interval = whole(
            OP_LOAD,
            KEY_GROWTH_INTERVAL,
            get(KEY_GROWTH_INTERVAL)?,
            1,
            u64::MAX,
        )?;
        // A count at or past the interval could never have been saved.
        let tracker = whole(
            OP_LOAD,
            KEY_GROWTH_TRACKER,
            get(KEY_GROWTH_TRACKER)?,
            0,
            interval - 1,
        )?;
        self.scale = scale;
        self.growth_factor = growth_factor;
        self.backoff_factor = backoff_factor;
        self.growth_interval = interval;
        self.growth_tracker = tracker;
        Ok(())
    }
}

/// Multiplies every gradient in `params` by `inv_scale` and folds them into
/// one `max |g|` flag per device. Every new gradient is computed before any
/// is replaced, so an error leaves them all as they were.
fn unscale_grads(op: &'static str, params: &[Tensor], inv_scale: f32) -> Result<OptimizerRecord> {
    let mut unscaled: Vec<(&Tensor, Storage)> = Vec::new();
    let mut flags: Vec<(Device, Storage)> = Vec::new();
    for param in params {
        let Some(grad) = param.grad() else { continue };
        if grad.dtype() == DType::F16 {
            return Err(Error::invalid(op, "Attempting to unscale FP16 gradients."));
        }
        let g = grad.storage();
        // PyTorch checks the gradient as it was, before the multiply.
        if g.numel() > 0 {
            let mut part = g.unary(UnaryOp::Abs)?.max(&[], false)?;
            if part.dtype() != DType::F32 {
                // One f32 flag per device, whatever the gradients' dtypes.
                part = part.cast(DType::F32)?;
            }
            let device = g.device();
            match flags.iter_mut().find(|(d, _)| d.same(&device)) {
                // Maximum propagates NaN (torch.maximum), so one NaN taints the flag.
                Some((_, acc)) => *acc = acc.binary(&part, BinaryOp::Maximum)?,
                None => flags.push((device, part)),
            }
        }
        // Multiplying by 1 changes nothing; keep the gradient's buffer then.
        let new = if inv_scale == 1.0 {
            g
        } else {
            g.binary_scalar(BinaryOp::Mul, inv_scale, false)?
        };
        unscaled.push((param, new));
    }
    let checked = !unscaled.is_empty();
    for (param, g) in unscaled {
        param.set_grad(Some(Tensor::from_storage_leaf(g)))?;
    }
    Ok(OptimizerRecord {
        stage: Stage::Unscaled,
        checked,
        flags: flags.into_iter().map(|(_, f)| f).collect(),
        found_inf: None,
    })
}
