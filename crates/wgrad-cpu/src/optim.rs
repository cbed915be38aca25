//! Optimizer update steps (`torch.optim.SGD` and `torch.optim.Adam`/`AdamW`):
//! the reference semantics of `kernels/optim/*.wgsl`.
//!
//! Each step is pure: it returns the new parameter and the new optimizer
//! state instead of writing in place (CPU storage is immutable and shared),
//! and the caller swaps them in. The arithmetic follows PyTorch's
//! single-tensor implementations operation by operation and in f32, with the
//! scalar coefficients computed in f64 first (as Python does) and rounded to
//! f32 where PyTorch's kernels round them, so results agree to the last bits.

use wgrad_core::checks::optim::{AdamCoefficients, SgdCoefficients};
use wgrad_core::{DType, Result, checks};

use rayon::prelude::*;

use crate::alloc::{self, During};
use crate::parallel;
use crate::tensor::{CpuTensor, expect_dtype};

/// The coefficients of one SGD step (see [`CpuTensor::sgd_step`]).
#[derive(Clone, Copy)]
struct SgdCoeffs {
    k: SgdCoefficients,
    nesterov: bool,
    maximize: bool,
}

/// One chunk of an Adam step's outputs: param, exp_avg, exp_avg_sq,
/// max_exp_avg_sq (empty without amsgrad).
type AdamOut<'a> = (&'a mut [f32], &'a mut [f32], &'a mut [f32], &'a mut [f32]);
/// The same chunk of its inputs, and the gradient.
type AdamIn<'a> = (&'a [f32], &'a [f32], &'a [f32], &'a [f32], &'a [f32]);

/// The coefficients of one Adam step (see [`CpuTensor::adam_step`]).
#[derive(Clone, Copy)]
struct AdamCoeffs {
    k: AdamCoefficients,
    decoupled: bool,
    maximize: bool,
}

/// `torch.lerp` as ATen computes it: the formula switches at weight 0.5 so
/// that both ends are exact.
fn lerp(start: f32, end: f32, weight: f32) -> f32 {
    if weight.abs() < 0.5 {
        lerp_from_start(start, end, weight)
    } else {
        end - (end - start) * (1.0 - weight)
    }
}

/// The `|weight| < 0.5` branch of [`lerp`].
#[inline(always)]
fn lerp_from_start(start: f32, end: f32, weight: f32) -> f32 {
    start + weight * (end - start)
}

/// `torch.maximum`: NaN-propagating (f32::max is not).
fn nan_max(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else {
        a.max(b)
    }
}

/// One element of SGD: returns (new param, new momentum buffer value).
/// `buf` is `None` on the first step, when PyTorch clones the gradient
/// into the buffer instead of decaying it.
#[inline(always)] // inlined into the update loops so that they vectorise
fn sgd_element(p: f32, g: f32, buf: Option<f32>, c: &SgdCoeffs) -> (f32, f32) {
    let mut d = if c.maximize { -g } else { g };
    if c.k.weight_decay != 0.0 {
        // grad.add(param, alpha=weight_decay)
        d += c.k.weight_decay * p;
    }
    let mut new_buf = 0.0;
    if c.k.momentum != 0.0 {
        // buf.mul_(momentum).add_(grad, alpha=1 - dampening)
        new_buf = match buf {
            None => d,
            Some(b) => b * c.k.momentum + c.k.one_minus_dampening * d,
        };
        d = if c.nesterov {
            d + c.k.momentum * new_buf
        } else {
            new_buf
        };
    }
    // param.add_(grad, alpha=-lr)
    (p + c.k.neg_lr * d, new_buf)
}

/// One element of Adam: updates `(p, m, v, vmax)` in place.
///
/// With `PLAIN` the caller guarantees the default configuration (see
/// [`AdamCoeffs::is_plain`]) and passes no `vmax`: the configuration
/// branches then fold away and the update loop vectorises. The arithmetic
/// is the same either way.
#[inline(always)] // inlined into the update loops so that they vectorise
fn adam_element<const PLAIN: bool>(
    p: &mut f32,
    g: f32,
    m: &mut f32,
    v: &mut f32,
    vmax: Option<&mut f32>,
    c: &AdamCoeffs,
) {
    let mut g = if !PLAIN && c.maximize { -g } else { g };
    if !PLAIN && c.k.weight_decay != 0.0 {
        if c.decoupled {
            *p *= c.k.decay;
        } else {
            g += c.k.weight_decay * *p;
        }
    }
    *m = if PLAIN {
        lerp_from_start(*m, g, c.k.one_minus_beta1)
    } else {
        lerp(*m, g, c.k.one_minus_beta1)
    };
    // exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    *v = *v * c.k.beta2 + c.k.one_minus_beta2 * g * g;
    let second = match vmax {
        Some(vm) => {
            *vm = nan_max(*vm, *v);
            *vm
        }
        None => *v,
    };
    let denom = second.sqrt() / c.k.bias_correction2_sqrt + c.k.eps;
    // param.addcdiv_(exp_avg, denom, value=-step_size)
    *p += c.k.neg_step_size * *m / denom;
}

impl AdamCoeffs {
    /// Whether this is the default configuration that
    /// `adam_element::<true>` covers: no `maximize`, no weight decay, and
    /// `lerp`'s first formula for the first moment (`|1 - beta1| < 0.5`).
    fn is_plain(&self) -> bool {
        !self.maximize && self.k.weight_decay == 0.0 && self.k.one_minus_beta1.abs() < 0.5
    }
}

/// Checks that an optimizer operand is F32 with the parameter's shape.
fn check_operand(op: &'static str, param: &CpuTensor, t: &CpuTensor) -> Result<()> {
    expect_dtype(op, t, DType::F32)?;
    checks::optim::operand(op, param.shape(), t.shape())
}

impl CpuTensor {
    /// One `torch.optim.SGD` update of this parameter (F32) given its
    /// gradient, returning the new parameter and the new momentum buffer
    /// (`Some` exactly when `momentum != 0`):
    ///
    /// ```text
    /// g = maximize ? -grad : grad;  g += weight_decay * param
    /// buf = (first step) ? g : momentum * buf + (1 - dampening) * g
    /// g = nesterov ? g + momentum * buf : buf          (when momentum != 0)
    /// param -= lr * g
    /// ```
    ///
    /// `momentum_buffer` is `None` on the first step (the buffer is then
    /// initialised to the gradient, as PyTorch does). Hyper-parameters are
    /// not validated here (the optimizer does that); operands may have any
    /// strides. The results are contiguous.
    #[allow(clippy::too_many_arguments)] // torch.optim.SGD's hyper-parameters, one argument each like torch.optim._functional.sgd
    pub fn sgd_step(
        &self,
        grad: &CpuTensor,
        momentum_buffer: Option<&CpuTensor>,
        lr: f64,
        momentum: f64,
        dampening: f64,
        weight_decay: f64,
        nesterov: bool,
        maximize: bool,
    ) -> Result<(CpuTensor, Option<CpuTensor>)> {
        const OP: &str = "sgd_step";
        check_operand(OP, self, self)?;
        check_operand(OP, self, grad)?;
        if let Some(b) = momentum_buffer {
            check_operand(OP, self, b)?;
        }
        let coeffs = SgdCoeffs {
            k: SgdCoefficients::new(lr, momentum, dampening, weight_decay),
            nesterov,
            maximize,
        };
        // Inputs read where they lie, outputs written once (see adam_step).
        let grads = grad.dense::<f32>(OP)?;
        let p_in = self.dense::<f32>(OP)?;
        let buf_in = momentum_buffer.map(|b| b.dense::<f32>(OP)).transpose()?;
        let n = p_in.len();
        let mut new_params = alloc::for_overwrite::<f32>(n).during(OP)?;
        let has_buf = momentum != 0.0;
        let mut new_bufs = if has_buf {
            alloc::for_overwrite::<f32>(n).during(OP)?
        } else {
            Vec::new()
        };
        // On the first step there is no buffer: `sgd_element` gets `None`.
        let bi: &[f32] = buf_in.as_deref().unwrap_or_default();
        let run = |p: &mut [f32], b: &mut [f32], pi: &[f32], bi: &[f32], g: &[f32]| {
            if !has_buf {
                for ((p, &pi), &g) in p.iter_mut().zip(pi).zip(g) {
                    *p = sgd_element(pi, g, None, &coeffs).0;
                }
            } else if bi.is_empty() {
                for (((p, b), &pi), &g) in p.iter_mut().zip(b.iter_mut()).zip(pi).zip(g) {
                    (*p, *b) = sgd_element(pi, g, None, &coeffs);
                }
            } else {
                let lanes = p.iter_mut().zip(b.iter_mut()).zip(pi.iter().zip(bi)).zip(g);
                for (((p, b), (&pi, &bi)), &g) in lanes {
                    (*p, *b) = sgd_element(pi, g, Some(bi), &coeffs);
                }
            }
        };
        if parallel::worth_splitting(2 * n) {
            let t = parallel::TASK_ELEMS;
            let ins = p_in.par_chunks(t).zip(grads.par_chunks(t));
            match (has_buf, bi.is_empty()) {
                (true, false) => new_params
                    .par_chunks_mut(t)
                    .zip(new_bufs.par_chunks_mut(t))
                    .zip(ins.zip(bi.par_chunks(t)))
                    .for_each(|((p, b), ((pi, g), bi))| run(p, b, pi, bi, g)),
                (true, true) => new_params
                    .par_chunks_mut(t)
                    .zip(new_bufs.par_chunks_mut(t))
                    .zip(ins)
                    .for_each(|((p, b), (pi, g))| run(p, b, pi, &[], g)),
                (false, _) => new_params
                    .par_chunks_mut(t)
                    .zip(ins)
                    .for_each(|(p, (pi, g))| run(p, &mut [], pi, &[], g)),
            }
            parallel::keep_warm();
        } else {
            run(&mut new_params, &mut new_bufs, &p_in, bi, &grads);
        }
        let new_param = CpuTensor::from_vec(new_params, self.shape())?;
        let new_buf = if has_buf {
            Some(CpuTensor::from_vec(new_bufs, self.shape())?)
        } else {
            None
        };
        Ok((new_param, new_buf))
    }

    /// One `torch.optim.Adam` update (or `AdamW` with
    /// `decoupled_weight_decay`) of this parameter (F32) at step `step`
    /// (1-based, already incremented for this update), returning the new
    /// `(param, exp_avg, exp_avg_sq, max_exp_avg_sq)`:
    ///
    /// ```text
    /// g = maximize ? -grad : grad
    /// AdamW: param *= 1 - lr * weight_decay      Adam: g += weight_decay * param
    /// m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g
    /// vmax = max(vmax, v)                          (amsgrad: `max_exp_avg_sq` given)
    /// denom = sqrt(v or vmax) / sqrt(1 - beta2^t) + eps
    /// param -= lr / (1 - beta1^t) * m / denom
    /// ```
    ///
    /// The state starts at zeros (PyTorch's `zeros_like`). Hyper-parameters
    /// are not validated here (the optimizer does that) except `step >= 1`.
    #[allow(clippy::too_many_arguments, clippy::type_complexity)] // torch.optim.Adam's hyper-parameters, one argument each like torch.optim._functional.adam
    pub fn adam_step(
        &self,
        grad: &CpuTensor,
        exp_avg: &CpuTensor,
        exp_avg_sq: &CpuTensor,
        max_exp_avg_sq: Option<&CpuTensor>,
        step: u64,
        lr: f64,
        betas: (f64, f64),
        eps: f64,
        weight_decay: f64,
        decoupled_weight_decay: bool,
        maximize: bool,
    ) -> Result<(CpuTensor, CpuTensor, CpuTensor, Option<CpuTensor>)> {
        const OP: &str = "adam_step";
        let coeffs = AdamCoeffs {
            k: AdamCoefficients::new(OP, step, lr, betas, eps, weight_decay)?,
            decoupled: decoupled_weight_decay,
            maximize,
        };
        for t in [self, grad, exp_avg, exp_avg_sq]
            .into_iter()
            .chain(max_exp_avg_sq)
        {
            check_operand(OP, self, t)?;
        }
        // The inputs are read where they lie (borrowed when dense) and the
        // new values written once into fresh buffers: one pass, split
        // across threads, instead of copying each input first (a serial
        // memcpy of three parameter-sized arrays: ~6% of W2's CPU step).
        let grads = grad.dense::<f32>(OP)?;
        let p_in = self.dense::<f32>(OP)?;
        let m_in = exp_avg.dense::<f32>(OP)?;
        let v_in = exp_avg_sq.dense::<f32>(OP)?;
        let vmax_in = max_exp_avg_sq.map(|t| t.dense::<f32>(OP)).transpose()?;
        let n = p_in.len();
        let fresh = || alloc::for_overwrite::<f32>(n).during(OP);
        let (mut params, mut m, mut v) = (fresh()?, fresh()?, fresh()?);
        let mut vmax = vmax_in.as_ref().map(|_| fresh()).transpose()?;
        let plain = coeffs.is_plain();
        let run = |out: AdamOut, inp: AdamIn| {
            let (po, mo, vo, vmo) = out;
            let (pi, mi, vi, vmi, g) = inp;
            let lanes = po.iter_mut().zip(mo.iter_mut()).zip(vo.iter_mut());
            let lanes = lanes.zip(pi.iter().zip(mi).zip(vi)).zip(g);
            if !vmo.is_empty() {
                for (((((po, mo), vo), ((&p, &m), &v)), &g), (vmo, &vm)) in
                    lanes.zip(vmo.iter_mut().zip(vmi))
                {
                    (*po, *mo, *vo, *vmo) = (p, m, v, vm);
                    adam_element::<false>(po, g, mo, vo, Some(vmo), &coeffs);
                }
            } else if plain {
                for ((((po, mo), vo), ((&p, &m), &v)), &g) in lanes {
                    (*po, *mo, *vo) = (p, m, v);
                    adam_element::<true>(po, g, mo, vo, None, &coeffs);
                }
            } else {
                for ((((po, mo), vo), ((&p, &m), &v)), &g) in lanes {
                    (*po, *mo, *vo) = (p, m, v);
                    adam_element::<false>(po, g, mo, vo, None, &coeffs);
                }
            }
        };
        let vmi: &[f32] = vmax_in.as_deref().unwrap_or_default();
        if parallel::worth_splitting(n * parallel::HEAVY) {
            let t = parallel::TASK_ELEMS;
            let outs = params
                .par_chunks_mut(t)
                .zip(m.par_chunks_mut(t))
                .zip(v.par_chunks_mut(t));
            let ins = p_in
                .par_chunks(t)
                .zip(m_in.par_chunks(t))
                .zip(v_in.par_chunks(t))
                .zip(grads.par_chunks(t));
            match vmax.as_mut() {
                Some(vmax) => outs
                    .zip(vmax.par_chunks_mut(t))
                    .zip(ins.zip(vmi.par_chunks(t)))
                    .for_each(|((((po, mo), vo), vmo), ((((pi, mi), vi), g), vmi))| {
                        run((po, mo, vo, vmo), (pi, mi, vi, vmi, g))
                    }),
                None => outs
                    .zip(ins)
                    .for_each(|(((po, mo), vo), (((pi, mi), vi), g))| {
                        run((po, mo, vo, &mut []), (pi, mi, vi, &[], g))
                    }),
            }
            parallel::keep_warm();
        } else {
            run(
                (
                    &mut params,
                    &mut m,
                    &mut v,
                    vmax.as_deref_mut().unwrap_or_default(),
                ),
                (&p_in, &m_in, &v_in, vmi, &grads),
            );
        }
        let shape = self.shape();
        let vmax = vmax.map(|x| CpuTensor::from_vec(x, shape)).transpose()?;
        Ok((
            CpuTensor::from_vec(params, shape)?,
            CpuTensor::from_vec(m, shape)?,
            CpuTensor::from_vec(v, shape)?,
            vmax,
        ))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::ops::Range;
    use wgrad_core::Error;

    /// Deterministic values in [-1, 1) (or [0, 1) when `positive`).
    pub(crate) fn values(n: usize, seed: u32, positive: bool) -> Vec<f32> {
        (0..n as u32)
            .map(|i| {
                let x = (i.wrapping_mul(2_654_435_761).wrapping_add(seed) % 2000) as f32 / 1000.0;
                if positive { x / 2.0 } else { x - 1.0 }
            })
            .collect()
    }

    pub(crate) fn tensor(v: &[f32]) -> CpuTensor {
        CpuTensor::from_vec(v.to_vec(), &[v.len()]).unwrap()
    }

    pub(crate) fn bits(t: &CpuTensor) -> Vec<u32> {
        t.to_vec::<f32>()
            .unwrap()
            .iter()
            .map(|x| x.to_bits())
            .collect()
    }

    /// Elements enough for every optimizer step to split across threads
    /// (SGD's light work included).
    pub(crate) fn threaded_len() -> usize {
        (parallel::PAR_MIN_WORK / 2).max(3 * parallel::TASK_ELEMS) + 5
    }

    /// Checks that `steps` (the result bits of some optimizer steps over
    /// the elements in a range) gives over [`threaded_len`]
    /// elements what it gives over serial pieces of 1000, bit for bit.
    pub(crate) fn parallel_matches_serial_pieces(steps: impl Fn(Range<usize>) -> Vec<Vec<u32>>) {
        let n = threaded_len();
        let whole = steps(0..n);
        let mut pieces = vec![Vec::new(); whole.len()];
        for start in (0..n).step_by(1000) {
            for (all, part) in pieces.iter_mut().zip(steps(start..(start + 1000).min(n))) {
                all.extend(part);
            }
        }
        assert_eq!(whole, pieces);
    }

    /// Adam (amsgrad, AdamW decay) and SGD (momentum with and without a
    /// buffer yet) over threads equal small serial pieces, bit for bit.
    #[test]
    fn parallel_steps_match_serial_pieces() {
        let n = threaded_len();
        let [p, g, m] = [1, 2, 3].map(|seed| values(n, seed, false));
        let [v, vm] = [4, 5].map(|seed| values(n, seed, true));
        parallel_matches_serial_pieces(|r| {
            let piece = |x: &[f32]| tensor(&x[r.clone()]);
            let (ap, am, av, avm) = piece(&p)
                .adam_step(
                    &piece(&g),
                    &piece(&m),
                    &piece(&v),
                    Some(&piece(&vm)),
                    3,
                    1e-3,
                    (0.9, 0.999),
                    1e-8,
                    0.01,
                    true,
                    false,
                )
                .unwrap();
            let (sp, sb) = piece(&p)
                .sgd_step(
                    &piece(&g),
                    Some(&piece(&m)),
                    0.1,
                    0.9,
                    0.1,
                    0.01,
                    true,
                    false,
                )
                .unwrap();
            let (fp, fb) = piece(&p)
                .sgd_step(&piece(&g), None, 0.1, 0.9, 0.0, 0.0, false, false)
                .unwrap();
            [
                &ap,
                &am,
                &av,
                &avm.unwrap(),
                &sp,
                &sb.unwrap(),
                &fp,
                &fb.unwrap(),
            ]
            .map(bits)
            .to_vec()
        });
    }

    #[test]
    fn lerp_is_exact_at_both_ends() {
        assert_eq!(lerp(3.0, 7.0, 0.0), 3.0);
        assert_eq!(lerp(3.0, 7.0, 1.0), 7.0);
        assert_eq!(lerp(3.0, 7.0, 0.25), 4.0);
    }

    #[test]
    fn sgd_first_step_clones_grad_into_buffer() {
        let p = CpuTensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
        let g = CpuTensor::from_vec(vec![0.5f32, -1.0], &[2]).unwrap();
        let (np, buf) = p
            .sgd_step(&g, None, 0.1, 0.9, 0.5, 0.0, false, false)
            .unwrap();
        // First step: buf = g (dampening not applied), p -= lr * buf.
        assert_eq!(buf.unwrap().to_vec::<f32>().unwrap(), vec![0.5, -1.0]);
        assert_eq!(np.to_vec::<f32>().unwrap(), vec![1.0 - 0.05, 2.0 + 0.1]);
    }

    #[test]
    fn plain_adam_element_matches_the_general_one() {
        let c = AdamCoeffs {
            k: AdamCoefficients::new("test", 7, 1e-3, (0.9, 0.999), 1e-8, 0.0).unwrap(),
            decoupled: false,
            maximize: false,
        };
        assert!(c.is_plain());
        let values = [
            0.0f32,
            -0.0,
            1.0,
            -1.5,
            3.0e-5,
            -2.0e7,
            1.0e-30,
            f32::INFINITY,
            f32::NAN,
        ];
        for &p0 in &values {
            for &g in &values {
                for &m0 in &values[..7] {
                    for &v0 in &[0.0f32, 1.0e-12, 0.25, 4.0e6] {
                        let (mut p1, mut m1, mut v1) = (p0, m0, v0);
                        let (mut p2, mut m2, mut v2) = (p0, m0, v0);
                        adam_element::<true>(&mut p1, g, &mut m1, &mut v1, None, &c);
                        adam_element::<false>(&mut p2, g, &mut m2, &mut v2, None, &c);
                        let same = |a: f32, b: f32| {
                            a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
                        };
                        assert!(
                            same(p1, p2) && same(m1, m2) && same(v1, v2),
                            "{p0} {g} {m0} {v0}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn adam_rejects_step_zero_and_shape_mismatch() {
        let p = CpuTensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
        let z = CpuTensor::from_vec(vec![0.0f32; 2], &[2]).unwrap();
        let bad = CpuTensor::from_vec(vec![0.0f32; 3], &[3]).unwrap();
        assert!(matches!(
            p.adam_step(
                &z,
                &z,
                &z,
                None,
                0,
                1e-3,
                (0.9, 0.999),
                1e-8,
                0.0,
                false,
                false
            ),
            Err(Error::InvalidArgument { .. })
        ));
        assert!(matches!(
            p.adam_step(
                &bad,
                &z,
                &z,
                None,
                1,
                1e-3,
                (0.9, 0.999),
                1e-8,
                0.0,
                false,
                false
            ),
            Err(Error::ShapeMismatch { .. })
        ));
    }
}
