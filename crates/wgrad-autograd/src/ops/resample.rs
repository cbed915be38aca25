//! Padding and resizing: `pad` (`torch.nn.functional.pad`) and
//! `interpolate` (`torch.nn.functional.interpolate`), composed from
//! `cat`/`narrow`, `index_select` and `matmul`, so both run on either device
//! and differentiate through those ops' backward rules. Index lists and
//! interpolation matrices depend only on shapes: they are computed on the
//! host and uploaded (never read back).

use wgrad_core::{Error, Result};

use crate::tensor::Tensor;

/// How `pad` fills the new border (PyTorch's `mode=`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PadMode {
    /// `mode="constant"` with `value`; negative pads crop.
    Constant(f32),
    /// `mode="reflect"`: mirror without repeating the edge (pad < size).
    Reflect,
    /// `mode="replicate"`: repeat the edge value.
    Replicate,
    /// `mode="circular"`: wrap around (pad <= size).
    Circular,
}

/// How `interpolate` samples (PyTorch's `mode=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InterpolateMode {
    /// `mode="nearest"`: source index `floor(dst * scale)`.
    Nearest,
    /// `mode="nearest-exact"`: source index `floor((dst + 0.5) * scale)`.
    NearestExact,
    /// `mode="linear"` (3-D input), `"bilinear"` (4-D) or `"trilinear"`
    /// (5-D): linear along every spatial axis.
    Linear,
    /// `mode="bicubic"` (4-D input only, as PyTorch): cubic convolution
    /// (`A = -0.75`) over 4 taps per axis, edges clamped.
    Bicubic,
    /// `mode="area"`: the mean over each output's adaptive window
    /// (`adaptive_avg_pool` of the output size).
    Area,
}

fn index_tensor(values: Vec<i32>, device: &crate::Device) -> Result<Tensor> {
    let n = values.len();
    Tensor::from_vec(values, &[n], device)
}

/// Padding and resizing: `pad` (`torch.nn.functional.pad`, see
/// [`PadMode`]) and `interpolate` (see [`InterpolateMode`]).
///
/// ```
/// use wgrad_autograd::{Device, InterpolateMode, PadMode, Tensor};
/// let x = Tensor::from_vec(vec![1.0f32, 2.0], &[1, 1, 2], &Device::Cpu)?;
/// let padded = x.pad(&[1, 2], PadMode::Constant(0.0))?;
/// assert_eq!(padded.to_vec_f32()?, [0.0, 1.0, 2.0, 0.0, 0.0]);
/// assert_eq!(x.pad(&[1, 1], PadMode::Replicate)?.to_vec_f32()?, [1.0, 1.0, 2.0, 2.0]);
/// let up = x.interpolate(None, Some(&[2.0]), InterpolateMode::Nearest, false)?;
/// assert_eq!(up.to_vec_f32()?, [1.0, 1.0, 2.0, 2.0]);
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
impl Tensor {
    /// `torch.nn.functional.pad(self, pad, mode, value)`: `pad` holds
    /// `(before, after)` pairs from the last dim backwards
    /// (`[left, right, top, bottom, ..]`); at most `rank` pairs. Negative
    /// pads crop, as PyTorch's: reflect and replicate pad from the whole
    /// dim, then crop; circular crops first and wraps what is left.
    /// Reflect needs each positive pad below the dim's size, circular at
    /// most the size left after cropping.
    pub fn pad(&self, pad: &[isize], mode: PadMode) -> Result<Tensor> {
        const OP: &str = "pad";
        let shape = self.shape();
        if !pad.len().is_multiple_of(2) || pad.len() / 2 > shape.len() {
            return Err(Error::invalid(
                OP,
                format!(
                    "padding length must be even and at most twice the rank ({}), got {pad:?} \
                     for shape {shape:?}",
                    shape.len()
                ),
            ));
        }
        // Reflect, replicate and circular pad the last 1-3 dims of a batch
        // (and channel) of them: PyTorch takes 2 pads for a 2-D or 3-D
        // input, 4 for 3-D or 4-D, 6 for 4-D or 5-D, and refuses the rest.
        let dims = pad.len() / 2;
        let ranks_fit = (1..=3).contains(&dims) && (dims + 1..=dims + 2).contains(&shape.len());
        if !ranks_fit && !matches!(mode, PadMode::Constant(_)) {
            return Err(Error::invalid(
                OP,
                format!(
                    "{mode:?} padding of {dims} dims ({pad:?}) needs a {}-D or {}-D input, got \
                     shape {shape:?}",
                    dims + 1,
                    dims + 2
                ),
            ));
        }
        let mut out = self.clone();
        for (pair, sides) in pad.chunks(2).enumerate() {
            let axis = shape.len() - 1 - pair;
            out = pad_axis(&out, axis, sides[0], sides[1], mode)?;
        }
        Ok(out)
    }

    /// `torch.nn.functional.interpolate` over the spatial dims (all after
    /// the first two) of `[N, C, ..]`: to `size`, or by `scale_factor`
    /// (output `floor(in * scale)`, and the sampling uses `1 / scale` as
    /// PyTorch does). `align_corners` applies to `Linear` and `Bicubic` only (PyTorch's
    /// default there: false).
    pub fn interpolate(
        &self,
        size: Option<&[usize]>,
        scale_factor: Option<&[f64]>,
        mode: InterpolateMode,
        align_corners: bool,
    ) -> Result<Tensor> {
        const OP: &str = "interpolate";
        if self.dtype().is_half() {
            // The weights are F32: compute in F32 and round once, as
            // PyTorch's kernels do (opmath), keeping the input's dtype.
            return self
                .float()?
                .interpolate(size, scale_factor, mode, align_corners)?
                .cast(self.dtype());
        }
        let shape = self.shape();
        if !(3..=5).contains(&shape.len()) {
            return Err(Error::invalid(
                OP,
                format!("expected a 3-D, 4-D or 5-D input [N, C, ..], got shape {shape:?}"),
            ));
        }
        let spatial = shape.len() - 2;
        if mode == InterpolateMode::Bicubic && shape.len() != 4 {
            return Err(Error::invalid(
                OP,
                format!(
                    "Got {}D input, but bicubic mode needs 4D input",
                    shape.len()
                ),
            ));
        }
        if align_corners
            && matches!(
                mode,
                InterpolateMode::Nearest | InterpolateMode::NearestExact | InterpolateMode::Area
            )
        {
            return Err(Error::invalid(
                OP,
                "align_corners option can only be set with the interpolating modes: linear | bilinear | bicubic | trilinear",
            ));
        }
        let mut plan = Vec::with_capacity(spatial);
        for i in 0..spatial {
            let input = shape[2 + i];
            let (output, scale) = match (size, scale_factor) {
                (Some(s), None) if s.len() == spatial || s.len() == 1 => {
                    let out = s[if s.len() == 1 { 0 } else { i }];
                    (out, input as f32 / out.max(1) as f32)
                }
                (None, Some(f)) if f.len() == spatial || f.len() == 1 => {
                    let factor = f[if f.len() == 1 { 0 } else { i }];
                    if !(factor > 0.0 && factor.is_finite()) {
                        return Err(Error::invalid(
                            OP,
                            format!("scale_factor must be positive, got {factor}"),
                        ));
                    }
                    (
                        (input as f64 * factor).floor() as usize,
                        (1.0 / factor) as f32,
                    )
                }
                _ => {
                    return Err(Error::invalid(
                        OP,
                        format!(
                            "give exactly one of size and scale_factor, with 1 or {spatial} values"
                        ),
                    ));
                }
            };
            // Area is adaptive average pooling, which PyTorch lets give an
            // empty result; the sampling modes refuse it.
            if output == 0 && mode != InterpolateMode::Area {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "output size must be positive along spatial dim {i} of shape {shape:?}"
                    ),
                ));
            }
            plan.push((input, output, scale));
        }
        let mut out = self.clone();
        for (i, &(input, output, scale)) in plan.iter().enumerate() {
            let axis = 2 + i;
            out = match mode {
                InterpolateMode::Nearest | InterpolateMode::NearestExact => {
                    let offset = if mode == InterpolateMode::NearestExact {
                        0.5
                    } else {
                        0.0
                    };
                    let index = (0..output)
                        .map(|dst| {
                            let src = ((dst as f32 + offset) * scale).floor() as usize;
                            src.min(input - 1) as i32
                        })
                        .collect();
                    out.index_select(axis as isize, &index_tensor(index, &self.device())?)?
                }
                InterpolateMode::Linear | InterpolateMode::Bicubic | InterpolateMode::Area => {
                    let weights = match mode {
                        InterpolateMode::Bicubic => {
                            cubic_weights(input, output, scale, align_corners)
                        }
                        InterpolateMode::Area => area_weights(input, output),
                        _ => linear_weights(input, output, scale, align_corners),
                    };
                    let matrix = Tensor::from_vec(weights, &[input, output], &self.device())?;
                    // [.., axis, ..] -> axis last, times [in, out], axis back.
                    let last = out.rank() as isize - 1;
                    out.transpose(axis as isize, last)?
                        .matmul(&matrix)?
                        .transpose(axis as isize, last)?
                }
            };
        }
        Ok(out)
    }
}

/// `[in, out]` weights of linear interpolation along one axis (column `dst`
/// holds the two source weights), PyTorch's source-index rule.
fn linear_weights(input: usize, output: usize, scale: f32, align_corners: bool) -> Vec<f32> {
    let mut w = vec![0f32; input * output];
    for dst in 0..output {
        let src = if align_corners {
            if output > 1 {
                dst as f32 * (input as f32 - 1.0) / (output as f32 - 1.0)
            } else {
                0.0
            }
        } else {
            ((dst as f32 + 0.5) * scale - 0.5).max(0.0)
        };
        let i0 = (src.floor() as usize).min(input - 1);
        let i1 = (i0 + 1).min(input - 1);
        let l1 = src - i0 as f32;
        w[i0 * output + dst] += 1.0 - l1;
        w[i1 * output + dst] += l1;
    }
    w
}

/// `[in, out]` weights of bicubic interpolation along one axis: PyTorch's
/// cubic convolution (`A = -0.75`) over the 4 source taps around the
/// unclamped source index, taps past the edges clamped onto them.
fn cubic_weights(input: usize, output: usize, scale: f32, align_corners: bool) -> Vec<f32> {
    const A: f32 = -0.75;
    let near = |x: f32| ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    let far = |x: f32| ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A;
    let mut w = vec![0f32; input * output];
    for dst in 0..output {
        let src = if align_corners {
            if output > 1 {
                dst as f32 * (input as f32 - 1.0) / (output as f32 - 1.0)
            } else {
                0.0
            }
        } else {
            (dst as f32 + 0.5) * scale - 0.5
        };
        let base = src.floor();
        let t = src - base;
        let taps = [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)];
        for (k, tap) in taps.iter().enumerate() {
            let i = (base as isize - 1 + k as isize).clamp(0, input as isize - 1) as usize;
            w[i * output + dst] += tap;
        }
    }
    w
}

/// `[in, out]` weights of area interpolation along one axis: output `j`
/// averages inputs `[floor(j in / out), ceil((j + 1) in / out))`, the
/// adaptive average pool's window.
fn area_weights(input: usize, output: usize) -> Vec<f32> {
    let mut w = vec![0f32; input * output];
    for dst in 0..output {
        let start = dst * input / output;
        let end = ((dst + 1) * input).div_ceil(output);
        let share = 1.0 / (end - start) as f32;
        for i in start..end {
            w[i * output + dst] = share;
        }
    }
    w
}

/// Pads (or, constant mode, crops) one axis by `before` and `after`.
fn pad_axis(x: &Tensor, axis: usize, before: isize, after: isize, mode: PadMode) -> Result<Tensor> {
    const OP: &str = "pad";
    if before == 0 && after == 0 {
        return Ok(x.clone());
    }
    let n = x.shape()[axis];
    let ax = axis as isize;
    if let PadMode::Constant(value) = mode {
        let mut t = x.clone();
        let (crop_before, crop_after) = (before.min(0).unsigned_abs(), after.min(0).unsigned_abs());
        if crop_before + crop_after > 0 {
            let keep = n.checked_sub(crop_before + crop_after).ok_or_else(|| {
                Error::invalid(
                    OP,
                    format!("negative padding ({before}, {after}) removes more than the {n} elements of dim {axis}"),
                )
            })?;
            t = t.narrow(ax, crop_before, keep)?;
        }
        let mut parts = Vec::new();
        let block = |len: usize| -> Result<Tensor> {
            let mut s = t.shape().to_vec();
            s[axis] = len;
            // The tensor's own dtype, so a 16-bit input stays 16-bit.
            Tensor::full(&s, value as f64, x.dtype(), &x.device())
        };
        if before > 0 {
            parts.push(block(before as usize)?);
        }
        let middle = parts.len();
        parts.push(t.clone());
        if after > 0 {
            parts.push(block(after as usize)?);
        }
        if parts.len() == 1 {
            return Ok(parts.swap_remove(middle));
        }
        let refs: Vec<&Tensor> = parts.iter().collect();
        return Tensor::cat(&refs, ax);
    }
    // Negative pads crop, as PyTorch's: reflect and replicate pad the
    // whole dim by the positive sides and then crop; circular crops first
    // and wraps what is left.
    let (crop_before, crop_after) = (before.min(0).unsigned_abs(), after.min(0).unsigned_abs());
    let (grow_before, grow_after) = (before.max(0) as usize, after.max(0) as usize);
    let source = match mode {
        PadMode::Circular => n.checked_sub(crop_before + crop_after),
        _ => Some(n),
    };
    let kept = (n + grow_before + grow_after).checked_sub(crop_before + crop_after);
    let limit_ok = match (mode, source, kept) {
        (_, None, _) | (_, _, None) => false,
        (PadMode::Reflect, _, Some(k)) => grow_before < n && grow_after < n && k > 0,
        (PadMode::Circular, Some(m), _) => grow_before <= m && grow_after <= m,
        (_, _, Some(k)) => n > 0 && k > 0,
    };
    let (Some(m), Some(kept)) = (source, kept) else {
        return Err(pad_size_error(mode, before, after, n, axis));
    };
    if !limit_ok {
        return Err(pad_size_error(mode, before, after, n, axis));
    }
    let index: Vec<i32> = match mode {
        PadMode::Circular => (0..grow_before + m + grow_after)
            .map(|j| {
                (crop_before as isize + (j as isize - grow_before as isize).rem_euclid(m as isize))
                    as i32
            })
            .collect(),
        _ => (crop_before..crop_before + kept)
            .map(|j| {
                let p = j as isize - grow_before as isize;
                let last = n as isize - 1;
                let src = match mode {
                    PadMode::Reflect => {
                        if p < 0 {
                            -p
                        } else if p > last {
                            2 * last - p
                        } else {
                            p
                        }
                    }
                    _ => p.clamp(0, last),
                };
                src as i32
            })
            .collect(),
    };
    x.index_select(ax, &index_tensor(index, &x.device())?)
}

/// PyTorch's complaint about pads a dim of size `n` cannot take.
fn pad_size_error(mode: PadMode, before: isize, after: isize, n: usize, axis: usize) -> Error {
    Error::invalid(
        "pad",
        format!(
            "{mode:?} padding ({before}, {after}) does not fit dim {axis} of size {n}: reflect \
             pads must be smaller than the size, circular ones at most the size left after \
             negative pads crop it, and the output must not be empty (except circular)"
        ),
    )
}
