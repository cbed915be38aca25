//! Numerically stable softmax and log-softmax along one axis.

use ndarray::{Axis, Zip};
use wgrad_core::Result;
use wgrad_core::math::exp;
use wgrad_core::shape::normalize_axis;

use crate::alloc::try_zeroed;
use crate::parallel;
use crate::tensor::CpuTensor;

impl CpuTensor {
    /// `exp(x - max) / sum(exp(x - max))` along `axis`; F32 only.
    pub fn softmax(&self, axis: isize) -> Result<Self> {
        self.along_lanes("softmax", axis, |lane, out| {
            let m = lane_max(lane);
            for (o, &x) in out.iter_mut().zip(lane) {
                *o = exp(x - m);
            }
            let total = lane_sum(out);
            for o in out.iter_mut() {
                *o /= total;
            }
        })
    }

    /// `x - max - ln(sum(exp(x - max)))` along `axis`; F32 only. Stays
    /// finite where `softmax(...).log()` would underflow to `-inf`.
    pub fn log_softmax(&self, axis: isize) -> Result<Self> {
        self.along_lanes("log_softmax", axis, |lane, out| {
            let m = lane_max(lane);
            let log_total = sum_exp_shifted(lane, m).ln();
            for (o, &x) in out.iter_mut().zip(lane) {
                *o = x - m - log_total;
            }
        })
    }

    /// Runs `f(input_lane, output_lane)` on every 1-D lane along `axis`.
    fn along_lanes(
        &self,
        op: &'static str,
        axis: isize,
        f: impl Fn(&[f32], &mut [f32]) + Sync,
    ) -> Result<Self> {
        let view = self.f32_input(op)?;
        let a = Axis(normalize_axis(op, axis, self.rank())?);
        let len = self.shape()[a.0];
        // The common case, the last axis of a dense tensor: lanes are rows
        // of the storage, read in place and processed in parallel.
        if a.0 + 1 == self.rank()
            && len > 0
            && let Some(data) = self.contiguous_slice::<f32>()?
        {
            let mut out = try_zeroed(op, data.len())?;
            parallel::for_each_row(&mut out, len, data.len() * parallel::HEAVY, |i, o| {
                f(&data[i * len..(i + 1) * len], o)
            });
            return CpuTensor::from_vec(out, self.shape());
        }
        let mut lane_in = try_zeroed(op, len)?;
        let mut lane_out = try_zeroed(op, len)?;
        // Lanes may be strided (axis not last), so each is staged through a
        // dense buffer; this keeps `f` simple slice code.
        CpuTensor::build(op, self.shape(), |mut out| {
            Zip::from(out.lanes_mut(a))
                .and(view.lanes(a))
                .for_each(|mut o, i| {
                    for (dst, &src) in lane_in.iter_mut().zip(i.iter()) {
                        *dst = src;
                    }
                    f(&lane_in, &mut lane_out);
                    for (dst, &src) in o.iter_mut().zip(&lane_out) {
                        *dst = src;
                    }
                })
        })
    }
}

/// Partial results a lane reduction keeps side by side: enough independent
/// chains for the adds to pipeline and for the compiler to use vector
/// registers, where one running value would serialise every step.
const PARTIALS: usize = 8;

/// Largest element of a lane (NaN propagates, as `torch.max` does; `-inf`
/// for an empty lane).
pub(crate) fn lane_max(lane: &[f32]) -> f32 {
    let mut best = [f32::NEG_INFINITY; PARTIALS];
    let mut nan = false;
    let chunks = lane.chunks_exact(PARTIALS);
    let rest = chunks.remainder();
    for c in chunks {
        for (b, &x) in best.iter_mut().zip(c) {
            // `f32::max` skips NaN; NaNs are tracked on the side instead,
            // which keeps the loop free of branches.
            *b = b.max(x);
            nan |= x.is_nan();
        }
    }
    for &x in rest {
        best[0] = best[0].max(x);
        nan |= x.is_nan();
    }
    if nan {
        return f32::NAN;
    }
    best.into_iter().fold(f32::NEG_INFINITY, f32::max)
}

/// Sum of a lane in [`PARTIALS`] interleaved partial sums (vectorises, and
/// is at least as accurate as a single running sum).
pub(crate) fn lane_sum(values: &[f32]) -> f32 {
    lane_sum_of(values, |x| x)
}

/// `sum(exp(x - m))` over a lane, summed as [`lane_sum`] does.
pub(crate) fn sum_exp_shifted(lane: &[f32], m: f32) -> f32 {
    lane_sum_of(lane, |x| exp(x - m))
}

/// `sum(f(x))` over a lane in [`PARTIALS`] interleaved partial sums.
#[inline(always)] // so that `f` is inlined into the loop and it vectorises
fn lane_sum_of(lane: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut acc = [0.0f32; PARTIALS];
    let chunks = lane.chunks_exact(PARTIALS);
    let rest: f32 = chunks.remainder().iter().map(|&x| f(x)).sum();
    for c in chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a += f(x);
        }
    }
    acc.iter().sum::<f32>() + rest
}
