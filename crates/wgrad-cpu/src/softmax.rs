//! Numerically stable softmax and log-softmax along one axis.

use ndarray::{ArrayD, Axis, IxDyn, Zip};
use wgrad_core::shape::normalize_axis;
use wgrad_core::{BinaryOp, Result};

use crate::parallel;
use crate::tensor::CpuTensor;

impl CpuTensor {
    /// `exp(x - max) / sum(exp(x - max))` along `axis`; F32 only.
    pub fn softmax(&self, axis: isize) -> Result<Self> {
        self.along_lanes("softmax", axis, |lane, out| {
            let m = lane_max(lane);
            let mut total = 0.0f32;
            for (o, &x) in out.iter_mut().zip(lane) {
                *o = (x - m).exp();
                total += *o;
            }
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
            let total: f32 = lane.iter().map(|&x| (x - m).exp()).sum();
            let log_total = total.ln();
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
            let mut out = vec![0.0f32; data.len()];
            parallel::for_each_row(&mut out, len, data.len() * parallel::HEAVY, |i, o| {
                f(&data[i * len..(i + 1) * len], o)
            });
            return CpuTensor::from_vec(out, self.shape());
        }
        let mut out = ArrayD::<f32>::zeros(IxDyn(self.shape()));
        let mut lane_in = vec![0.0f32; self.shape()[a.0]];
        let mut lane_out = vec![0.0f32; self.shape()[a.0]];
        // Lanes may be strided (axis not last), so each is staged through a
        // dense buffer; this keeps `f` simple slice code.
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
            });
        CpuTensor::from_array(out)
    }
}

/// Largest element of a lane (NaN propagates; `-inf` for an empty lane).
fn lane_max(lane: &[f32]) -> f32 {
    lane.iter()
        .copied()
        .fold(f32::NEG_INFINITY, |m, x| BinaryOp::Maximum.apply(m, x))
}
