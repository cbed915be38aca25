//! RMSprop and Adagrad update steps (`torch.optim.RMSprop`,
//! `torch.optim.Adagrad`): the reference semantics of
//! `kernels/optim/rmsprop*.wgsl` and `kernels/optim/adagrad.wgsl`.
//!
//! As in `optim.rs`, each step is pure (it returns the new parameter and
//! state for the caller to swap in) and follows PyTorch's single-tensor
//! implementation operation by operation in f32, with the coefficients
//! rounded as torch rounds them ([`RmsPropCoefficients`], [`AdagradCoefficients`]).

use rayon::prelude::*;
use wgrad_core::checks::optim::{AdagradCoefficients, RmsPropCoefficients};
use wgrad_core::{DType, Result, checks};

use crate::alloc::{self, During};
use crate::parallel;
use crate::tensor::{CpuTensor, expect_dtype};

/// Checks that an optimizer operand is F32 with the parameter's shape.
fn check_operand(op: &'static str, param: &CpuTensor, t: &CpuTensor) -> Result<()> {
    expect_dtype(op, t, DType::F32)?;
    checks::optim::operand(op, param.shape(), t.shape())
}

/// `torch.lerp` as ATen computes it (exact at both ends).
fn lerp(start: f32, end: f32, weight: f32) -> f32 {
    if weight.abs() < 0.5 {
        start + weight * (end - start)
    } else {
        end - (end - start) * (1.0 - weight)
    }
}

/// The gradient as the update sees it: negated under `maximize`, plus the
/// L2 term (`grad.add(param, alpha=weight_decay)`) when there is one.
#[inline(always)]
fn effective_grad(g: f32, p: f32, maximize: bool, weight_decay: f32) -> f32 {
    let g = if maximize { -g } else { g };
    if weight_decay != 0.0 {
        g + weight_decay * p
    } else {
        g
    }
}

/// One chunk of RMSprop: `ga` (centered) and `buf` (momentum) are empty
/// when that state is off.
fn rmsprop_chunk(
    p: &mut [f32],
    v: &mut [f32],
    ga: &mut [f32],
    buf: &mut [f32],
    g: &[f32],
    k: &RmsPropCoefficients,
) {
    let (centered, momentum) = (!ga.is_empty(), !buf.is_empty());
    for i in 0..p.len() {
        let gi = effective_grad(g[i], p[i], k.maximize, k.weight_decay);
        // square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
        v[i] = v[i] * k.alpha + k.one_minus_alpha * gi * gi;
        let avg = if centered {
            ga[i] = lerp(ga[i], gi, k.one_minus_alpha);
            // square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
            (v[i] - ga[i] * ga[i]).sqrt()
        } else {
            v[i].sqrt()
        } + k.eps;
        if momentum {
            // buf.mul_(momentum).addcdiv_(grad, avg); param.add_(buf, alpha=-lr)
            buf[i] = buf[i] * k.momentum + gi / avg;
            p[i] += k.neg_lr * buf[i];
        } else {
            // param.addcdiv_(grad, avg, value=-lr)
            p[i] += k.neg_lr * gi / avg;
        }
    }
}

/// The chunks a parallel update walks: `Some` when worth splitting.
fn task_len(numel: usize) -> Option<usize> {
    parallel::worth_splitting(numel * parallel::HEAVY).then_some(parallel::TASK_ELEMS)
}

/// `v` cut into `n` chunks of `t`, or `n` empty slices when `v` is empty.
fn read_chunks(v: &[f32], t: usize, n: usize) -> Vec<&[f32]> {
    if v.is_empty() {
        (0..n).map(|_| &[][..]).collect()
    } else {
        v.chunks(t).collect()
    }
}

/// `v` cut into `n` chunks of `t`, or `n` empty slices when `v` is empty.
fn chunks_or_empty(v: &mut [f32], t: usize, n: usize) -> Vec<&mut [f32]> {
    if v.is_empty() {
        (0..n).map(|_| &mut [][..]).collect()
    } else {
        v.chunks_mut(t).collect()
    }
}

impl CpuTensor {
    /// One `torch.optim.RMSprop` update of this parameter (F32), returning
    /// the new `(param, square_avg, grad_avg, momentum_buffer)`:
    ///
    /// ```text
    /// g = maximize ? -grad : grad;  g += weight_decay * param
    /// square_avg = alpha * square_avg + (1 - alpha) * g * g
    /// centered:  grad_avg = lerp(grad_avg, g, 1 - alpha)
    ///            avg = sqrt(square_avg - grad_avg^2) + eps
    /// else:      avg = sqrt(square_avg) + eps
    /// momentum:  buf = momentum * buf + g / avg;  param -= lr * buf
    /// else:      param -= lr * g / avg
    /// ```
    ///
    /// `grad_avg` is given exactly when centered, `momentum_buffer` exactly
    /// when `momentum > 0`; the state starts at zeros. Hyper-parameters are
    /// not validated here (the optimizer does that); operands may have any
    /// strides, the results are contiguous.
    #[allow(clippy::type_complexity)] // the four updated tensors, as torch's state
    pub fn rmsprop_step(
        &self,
        grad: &CpuTensor,
        square_avg: &CpuTensor,
        grad_avg: Option<&CpuTensor>,
        momentum_buffer: Option<&CpuTensor>,
        k: &RmsPropCoefficients,
    ) -> Result<(CpuTensor, CpuTensor, Option<CpuTensor>, Option<CpuTensor>)> {
        const OP: &str = "rmsprop_step";
        for t in [self, grad, square_avg]
            .into_iter()
            .chain(grad_avg)
            .chain(momentum_buffer)
        {
            check_operand(OP, self, t)?;
        }
        // The inputs are read where they lie and copied into fresh outputs
        // chunk by chunk inside the parallel tasks, where the update then
        // runs on cache-warm data (a serial copy of every input first cost
        // ~6% of a small model's step; see optim.rs).
        let grads = grad.dense::<f32>(OP)?;
        let p_in = self.dense::<f32>(OP)?;
        let v_in = square_avg.dense::<f32>(OP)?;
        let ga_in = grad_avg.map(|t| t.dense::<f32>(OP)).transpose()?;
        let buf_in = momentum_buffer.map(|t| t.dense::<f32>(OP)).transpose()?;
        let n = p_in.len();
        let fresh = |given: bool| -> Result<Vec<f32>> {
            if given {
                alloc::for_overwrite(n).during(OP)
            } else {
                Ok(Vec::new())
            }
        };
        let (mut params, mut v) = (fresh(true)?, fresh(true)?);
        let mut ga = fresh(ga_in.is_some())?;
        let mut buf = fresh(buf_in.is_some())?;
        let ga_src: &[f32] = ga_in.as_deref().unwrap_or_default();
        let buf_src: &[f32] = buf_in.as_deref().unwrap_or_default();
        let run = |out: [&mut [f32]; 4], src: [&[f32]; 4], g: &[f32]| {
            let [p, v, ga, b] = out;
            for (o, i) in [&mut *p, &mut *v, &mut *ga, &mut *b].into_iter().zip(src) {
                o.copy_from_slice(i);
            }
            rmsprop_chunk(p, v, ga, b, g, k);
        };
        match task_len(n) {
            Some(t) => {
                let tasks = n.div_ceil(t);
                let outs = params
                    .chunks_mut(t)
                    .zip(v.chunks_mut(t))
                    .zip(chunks_or_empty(&mut ga, t, tasks))
                    .zip(chunks_or_empty(&mut buf, t, tasks));
                let ins = p_in
                    .chunks(t)
                    .zip(v_in.chunks(t))
                    .zip(read_chunks(ga_src, t, tasks))
                    .zip(read_chunks(buf_src, t, tasks))
                    .zip(grads.chunks(t));
                let tasks: Vec<_> = outs.zip(ins).collect();
                tasks.into_par_iter().for_each(
                    |((((p, v), ga), b), ((((pi, vi), gai), bi), g))| {
                        run([p, v, ga, b], [pi, vi, gai, bi], g)
                    },
                );
                parallel::keep_warm();
            }
            None => run(
                [&mut params, &mut v, &mut ga, &mut buf],
                [&p_in, &v_in, ga_src, buf_src],
                &grads,
            ),
        }
        let shape = self.shape();
        let wrap = |data: Vec<f32>, given: bool| {
            given.then(|| CpuTensor::from_vec(data, shape)).transpose()
        };
        Ok((
            CpuTensor::from_vec(params, shape)?,
            CpuTensor::from_vec(v, shape)?,
            wrap(ga, grad_avg.is_some())?,
            wrap(buf, momentum_buffer.is_some())?,
        ))
    }

    /// One `torch.optim.Adagrad` update of this parameter (F32), returning
    /// the new `(param, sum)`:
    ///
    /// ```text
    /// g = maximize ? -grad : grad;  g += weight_decay * param
    /// sum += g * g
    /// param -= clr * g / (sqrt(sum) + eps),   clr = lr / (1 + (t - 1) * lr_decay)
    /// ```
    ///
    /// The sum starts at `initial_accumulator_value` (the optimizer's job).
    pub fn adagrad_step(
        &self,
        grad: &CpuTensor,
        sum: &CpuTensor,
        k: &AdagradCoefficients,
    ) -> Result<(CpuTensor, CpuTensor)> {
        const OP: &str = "adagrad_step";
        for t in [self, grad, sum] {
            check_operand(OP, self, t)?;
        }
        // Inputs read where they lie, outputs written once (see optim.rs).
        let grads = grad.dense::<f32>(OP)?;
        let p_in = self.dense::<f32>(OP)?;
        let s_in = sum.dense::<f32>(OP)?;
        let n = p_in.len();
        let mut params = alloc::for_overwrite::<f32>(n).during(OP)?;
        let mut sums = alloc::for_overwrite::<f32>(n).during(OP)?;
        let run = |p: &mut [f32], s: &mut [f32], pi: &[f32], si: &[f32], g: &[f32]| {
            let lanes = p.iter_mut().zip(s.iter_mut()).zip(pi.iter().zip(si)).zip(g);
            for (((p, s), (&pi, &si)), &g) in lanes {
                let g = effective_grad(g, pi, k.maximize, k.weight_decay);
                // state_sum.addcmul_(grad, grad, value=1)
                *s = si + g * g;
                let std = s.sqrt() + k.eps;
                // param.addcdiv_(grad, std, value=-clr)
                *p = pi + k.neg_clr * g / std;
            }
        };
        match task_len(n) {
            Some(t) => {
                params
                    .par_chunks_mut(t)
                    .zip(sums.par_chunks_mut(t))
                    .zip(p_in.par_chunks(t).zip(s_in.par_chunks(t)))
                    .zip(grads.par_chunks(t))
                    .for_each(|(((p, s), (pi, si)), g)| run(p, s, pi, si, g));
                parallel::keep_warm();
            }
            None => run(&mut params, &mut sums, &p_in, &s_in, &grads),
        }
        let shape = self.shape();
        Ok((
            CpuTensor::from_vec(params, shape)?,
            CpuTensor::from_vec(sums, shape)?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optim::tests::{bits, parallel_matches_serial_pieces, tensor, threaded_len, values};

    /// RMSprop (centered with momentum, and plain) and Adagrad over threads
    /// equal small serial pieces, bit for bit.
    #[test]
    fn parallel_steps_match_serial_pieces() {
        let n = threaded_len();
        let [p, g, ga, b] = [1, 2, 3, 6].map(|seed| values(n, seed, false));
        let [v, s] = [4, 5].map(|seed| values(n, seed, true));
        let centered = RmsPropCoefficients::new(0.01, 0.9, 1e-8, 0.01, 0.5, false);
        let plain = RmsPropCoefficients::new(0.01, 0.9, 1e-8, 0.0, 0.0, true);
        let ada = AdagradCoefficients::new("t", 2, 0.5, 0.01, 1e-10, 0.01, false).unwrap();
        parallel_matches_serial_pieces(|r| {
            let piece = |x: &[f32]| tensor(&x[r.clone()]);
            let (a, bb, c, d) = piece(&p)
                .rmsprop_step(
                    &piece(&g),
                    &piece(&v),
                    Some(&piece(&ga)),
                    Some(&piece(&b)),
                    &centered,
                )
                .unwrap();
            let (e, f, _, _) = piece(&p)
                .rmsprop_step(&piece(&g), &piece(&v), None, None, &plain)
                .unwrap();
            let (h, i) = piece(&p)
                .adagrad_step(&piece(&g), &piece(&s), &ada)
                .unwrap();
            [&a, &bb, &c.unwrap(), &d.unwrap(), &e, &f, &h, &i]
                .map(bits)
                .to_vec()
        });
    }

    #[test]
    fn rmsprop_first_step_by_hand() {
        let p = CpuTensor::from_vec(vec![1.0f32, -2.0], &[2]).unwrap();
        let g = CpuTensor::from_vec(vec![0.5f32, 0.25], &[2]).unwrap();
        let z = CpuTensor::from_vec(vec![0.0f32; 2], &[2]).unwrap();
        let k = RmsPropCoefficients::new(0.01, 0.75, 0.0, 0.0, 0.0, false);
        let (np, v, ga, buf) = p.rmsprop_step(&g, &z, None, None, &k).unwrap();
        assert!(ga.is_none() && buf.is_none());
        // v = 0.25 g^2, so g / sqrt(v) = 2 (sign of g).
        assert_eq!(v.to_vec::<f32>().unwrap(), vec![0.0625, 0.015625]);
        assert_eq!(np.to_vec::<f32>().unwrap(), vec![1.0 - 0.02, -2.0 - 0.02]);
    }

    #[test]
    fn adagrad_first_step_by_hand() {
        let p = CpuTensor::from_vec(vec![1.0f32], &[1]).unwrap();
        let g = CpuTensor::from_vec(vec![3.0f32], &[1]).unwrap();
        let s = CpuTensor::from_vec(vec![7.0f32], &[1]).unwrap();
        let k = AdagradCoefficients::new("t", 1, 0.5, 0.0, 0.0, 0.0, false).unwrap();
        let (np, ns) = p.adagrad_step(&g, &s, &k).unwrap();
        assert_eq!(ns.to_vec::<f32>().unwrap(), vec![16.0]);
        assert_eq!(np.to_vec::<f32>().unwrap(), vec![1.0 - 0.5 * 3.0 / 4.0]);
    }
}
