//! Multi-tensor ("foreach") optimizer updates: one dispatch updates up to
//! four parameters (`kernels/optim/adam_foreach.wgsl`), or eight that with
//! their state start at element 0 of their buffers where the device allows
//! 32 storage buffers per stage (`adam_foreach_wide.wgsl`), as PyTorch's
//! `foreach` implementations batch theirs. Each dispatch costs the GPU
//! microseconds of launch and barrier whatever its size, so for the small
//! parameters of most layers the count of dispatches, not their work, is
//! the optimizer's time.

use wgrad_core::Result;
use wgrad_core::checks::optim::AdamCoefficients;
use wgrad_kernels::families;

use super::optim::{
    MAXIMIZE, NESTEROV_OR_DECOUPLED, WEIGHT_DECAY, check_distinct, check_operand, check_writable,
    dense_grad, flag,
};
use crate::GpuTensor;
use crate::params::{self, AdamForeachParams, AdamForeachWideParams, MAX_INDEX};

/// Parameters one `adam_foreach` dispatch updates.
const SLOTS: usize = 4;
/// Storage buffers one `adam_foreach` dispatch binds (grad, param,
/// exp_avg, exp_avg_sq per slot).
const BINDINGS: u32 = 4 * SLOTS as u32;
/// Parameters one `adam_foreach_wide` dispatch updates.
const WIDE_SLOTS: usize = 8;
/// Storage buffers one `adam_foreach_wide` dispatch binds.
const WIDE_BINDINGS: u32 = 4 * WIDE_SLOTS as u32;

/// One parameter's operands in [`GpuTensor::adam_step_foreach_`].
#[derive(Clone, Copy, Debug)]
pub struct AdamOperands<'a> {
    /// The parameter, updated in place.
    pub param: &'a GpuTensor,
    /// Its gradient (may be strided).
    pub grad: &'a GpuTensor,
    /// Its first moment, updated in place.
    pub exp_avg: &'a GpuTensor,
    /// Its second moment, updated in place.
    pub exp_avg_sq: &'a GpuTensor,
}

impl<'a> AdamOperands<'a> {
    fn written(&self) -> [&'a GpuTensor; 3] {
        [self.param, self.exp_avg, self.exp_avg_sq]
    }

    /// Whether the parameter and its state start at element 0 of their
    /// buffers, as the wide kernel needs (it takes gradient offsets only).
    fn at_buffer_start(&self) -> bool {
        self.written().iter().all(|t| t.layout.offset() == 0)
    }
}

impl GpuTensor {
    /// [`adam_step_`](Self::adam_step_) (amsgrad off) of several parameters
    /// that share the step count and hyper-parameters, in as few dispatches
    /// as possible: four parameters per dispatch on devices that allow
    /// sixteen storage buffers per shader stage, else one each. The results
    /// are those of one `adam_step_` per parameter, bit for bit.
    ///
    /// Every operand is checked before anything is recorded, so an invalid
    /// one (wrong dtype, shape, device, a strided or shared state buffer)
    /// is an error that updates nothing. Parameters whose buffers overlap
    /// another's go into different dispatches.
    #[allow(clippy::too_many_arguments)] // torch.optim.Adam's hyper-parameters, as adam_step_
    pub fn adam_step_foreach_(
        items: &[AdamOperands<'_>],
        step: u64,
        lr: f64,
        betas: (f64, f64),
        eps: f64,
        weight_decay: f64,
        decoupled_weight_decay: bool,
        maximize: bool,
    ) -> Result<()> {
        const OP: &str = "adam_step";
        let k = AdamCoefficients::new(OP, step, lr, betas, eps, weight_decay)?;
        let Some(first) = items.first() else {
            return Ok(());
        };
        for item in items {
            first.param.same_device(OP, item.param)?;
            check_operand(OP, item.param, item.grad)?;
            for (t, what) in
                item.written()
                    .into_iter()
                    .zip(["the parameter", "exp_avg", "exp_avg_sq"])
            {
                check_operand(OP, item.param, t)?;
                check_writable(OP, what, t)?;
            }
            check_distinct(OP, &item.written())?;
            params::to_u32(OP, "element count", item.param.numel())?;
        }
        let limits = first.param.device().limits();
        if limits.max_storage_buffers_per_shader_stage < BINDINGS {
            return items.iter().try_for_each(|item| {
                item.param.adam_step_(
                    item.grad,
                    item.exp_avg,
                    item.exp_avg_sq,
                    None,
                    step,
                    lr,
                    betas,
                    eps,
                    weight_decay,
                    decoupled_weight_decay,
                    maximize,
                )
            });
        }
        let flags = flag(maximize, MAXIMIZE)
            | flag(weight_decay != 0.0, WEIGHT_DECAY)
            | flag(decoupled_weight_decay, NESTEROV_OR_DECOUPLED);
        let base = AdamForeachParams {
            ends: [0; SLOTS],
            grad_offsets: [0; SLOTS],
            param_offsets: [0; SLOTS],
            m_offsets: [0; SLOTS],
            v_offsets: [0; SLOTS],
            flags,
            one_minus_beta1: k.one_minus_beta1,
            beta2: k.beta2,
            one_minus_beta2: k.one_minus_beta2,
            eps: k.eps,
            weight_decay: k.weight_decay,
            decay: k.decay,
            neg_step_size: k.neg_step_size,
            bias_correction2_sqrt: k.bias_correction2_sqrt,
        };
        let wide = limits.max_storage_buffers_per_shader_stage >= WIDE_BINDINGS;
        let live: Vec<&AdamOperands<'_>> = items.iter().filter(|i| i.param.numel() > 0).collect();
        for (chunk, wide) in chunks(&live, |item| wide && item.at_buffer_start()) {
            dispatch_chunk(&chunk, base, wide)?;
        }
        Ok(())
    }
}

/// `items` cut into dispatches, in order (so a gradient that is another
/// parameter's buffer is read as one step per parameter would read it):
/// a chunk holds parameters of one kernel (`wide(item)`: the eight-slot
/// one) and ends where the next parameter takes the other kernel, would
/// overlap one of its written buffers, pass the 32-bit element numbering
/// or a full kernel.
fn chunks<'a>(
    items: &[&AdamOperands<'a>],
    wide: impl Fn(&AdamOperands<'a>) -> bool,
) -> Vec<(Vec<AdamOperands<'a>>, bool)> {
    let mut out: Vec<(Vec<AdamOperands<'a>>, bool)> = Vec::new();
    let mut total = 0usize;
    for &item in items {
        let item_wide = wide(item);
        let slots = if item_wide { WIDE_SLOTS } else { SLOTS };
        let fits = out.last().is_some_and(|(chunk, chunk_wide)| {
            let mut written: Vec<&GpuTensor> =
                chunk.iter().flat_map(AdamOperands::written).collect();
            written.extend(item.written());
            *chunk_wide == item_wide
                && chunk.len() < slots
                && check_distinct("adam_step", &written).is_ok()
                && total + item.param.numel() <= MAX_INDEX
        });
        if !fits {
            out.push((Vec::with_capacity(slots), item_wide));
            total = 0;
        }
        total += item.param.numel();
        if let Some((chunk, _)) = out.last_mut() {
            chunk.push(*item);
        }
    }
    out
}

/// One `adam_foreach` dispatch over `chunk` (1 to [`SLOTS`] parameters
/// with pairwise distinct written buffers), or with `wide` one
/// `adam_foreach_wide` over up to [`WIDE_SLOTS`] that with their state
/// start at element 0; unused slots repeat the last parameter's buffers and end, so
/// no thread reaches them.
fn dispatch_chunk(chunk: &[AdamOperands<'_>], mut p: AdamForeachParams, wide: bool) -> Result<()> {
    const OP: &str = "adam_step";
    let Some(last) = chunk.last() else {
        return Ok(());
    };
    let written: Vec<&GpuTensor> = chunk.iter().flat_map(AdamOperands::written).collect();
    let grads = chunk
        .iter()
        .map(|item| dense_grad(OP, item.grad, &written))
        .collect::<Result<Vec<GpuTensor>>>()?;
    let slots = if wide { WIDE_SLOTS } else { SLOTS };
    let mut ends = [0u32; WIDE_SLOTS];
    let mut grad_offsets = [0u32; WIDE_SLOTS];
    let mut end = 0usize;
    let mut buffers = Vec::with_capacity(4 * slots);
    for (slot, slot_end) in ends.iter_mut().enumerate().take(slots) {
        let i = slot.min(chunk.len() - 1);
        let (item, grad) = (&chunk[i], &grads[i]);
        if slot < chunk.len() {
            end += item.param.numel();
        }
        *slot_end = params::to_u32(OP, "element count", end)?;
        let [g, pa, m, v] = [grad, item.param, item.exp_avg, item.exp_avg_sq]
            .map(|t| params::to_u32(OP, "offset", t.layout.offset()));
        let offsets = [g?, pa?, m?, v?];
        if wide {
            // `at_buffer_start` chose this parameter.
            if offsets[1..].iter().any(|&o| o != 0) {
                return Err(wgrad_core::Error::invalid(
                    OP,
                    "a parameter or state of the wide foreach step does not start its buffer",
                ));
            }
            grad_offsets[slot] = offsets[0];
        } else {
            [
                p.grad_offsets[slot],
                p.param_offsets[slot],
                p.m_offsets[slot],
                p.v_offsets[slot],
            ] = offsets;
        }
        buffers.extend([
            &grad.buffer,
            &item.param.buffer,
            &item.exp_avg.buffer,
            &item.exp_avg_sq.buffer,
        ]);
    }
    let kernels = last.param.kernels();
    if wide {
        let w = AdamForeachWideParams {
            ends,
            grad_offsets,
            flags: p.flags,
            one_minus_beta1: p.one_minus_beta1,
            beta2: p.beta2,
            one_minus_beta2: p.one_minus_beta2,
            eps: p.eps,
            weight_decay: p.weight_decay,
            decay: p.decay,
            neg_step_size: p.neg_step_size,
            bias_correction2_sqrt: p.bias_correction2_sqrt,
        };
        return kernels.dispatch_1d(
            &families::optim::ADAM_FOREACH_WIDE,
            &[],
            &buffers,
            &w,
            end as u64,
        );
    }
    p.ends.copy_from_slice(&ends[..SLOTS]);
    kernels.dispatch_1d(
        &families::optim::ADAM_FOREACH,
        &[],
        &buffers,
        &p,
        end as u64,
    )
}
