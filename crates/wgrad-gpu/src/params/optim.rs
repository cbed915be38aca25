//! Immediates of `kernels/optim/*.wgsl`.

use super::immediates;

immediates! {
    /// `SgdParams` of `optim/sgd.wgsl`.
    SgdParams {
        /// Elements of the parameter.
        numel: u32,
        /// Option flags.
        flags: u32,
        /// Offset of the gradient.
        grad_offset: u32,
        /// Offset of the parameter.
        param_offset: u32,
        /// `-lr`.
        neg_lr: f32,
        /// The weight decay.
        weight_decay: f32,
    }
}

immediates! {
    /// `SgdMomentumParams` of `optim/sgd_momentum.wgsl`.
    SgdMomentumParams {
        /// Elements of the parameter.
        numel: u32,
        /// Option flags.
        flags: u32,
        /// Offset of the gradient.
        grad_offset: u32,
        /// Offset of the parameter.
        param_offset: u32,
        /// Offset of the momentum buffer.
        buf_offset: u32,
        /// `-lr`.
        neg_lr: f32,
        /// The weight decay.
        weight_decay: f32,
        /// The momentum.
        momentum: f32,
        /// `1 - dampening`.
        one_minus_dampening: f32,
    }
}

immediates! {
    /// `AdamParams` of `optim/adam.wgsl`.
    AdamParams {
        /// Elements of the parameter.
        numel: u32,
        /// Option flags.
        flags: u32,
        /// Offset of the gradient.
        grad_offset: u32,
        /// Offset of the parameter.
        param_offset: u32,
        /// Offset of `exp_avg`.
        m_offset: u32,
        /// Offset of `exp_avg_sq`.
        v_offset: u32,
        /// `1 - beta1`.
        one_minus_beta1: f32,
        /// `beta2`.
        beta2: f32,
        /// `1 - beta2`.
        one_minus_beta2: f32,
        /// `eps`.
        eps: f32,
        /// The weight decay.
        weight_decay: f32,
        /// The decoupled decay factor.
        decay: f32,
        /// `-lr / bias_correction1`.
        neg_step_size: f32,
        /// `sqrt(bias_correction2)`.
        bias_correction2_sqrt: f32,
    }
}

immediates! {
    /// `AdamAmsgradParams` of `optim/adam_amsgrad.wgsl`.
    AdamAmsgradParams {
        /// Elements of the parameter.
        numel: u32,
        /// Option flags.
        flags: u32,
        /// Offset of the gradient.
        grad_offset: u32,
        /// Offset of the parameter.
        param_offset: u32,
        /// Offset of `exp_avg`.
        m_offset: u32,
        /// Offset of `exp_avg_sq`.
        v_offset: u32,
        /// Offset of `max_exp_avg_sq`.
        vmax_offset: u32,
        /// `1 - beta1`.
        one_minus_beta1: f32,
        /// `beta2`.
        beta2: f32,
        /// `1 - beta2`.
        one_minus_beta2: f32,
        /// `eps`.
        eps: f32,
        /// The weight decay.
        weight_decay: f32,
        /// The decoupled decay factor.
        decay: f32,
        /// `-lr / bias_correction1`.
        neg_step_size: f32,
        /// `sqrt(bias_correction2)`.
        bias_correction2_sqrt: f32,
    }
}

impl AdamParams {
    /// The AMSGrad kernel's block: these fields plus the offset of
    /// `max_exp_avg_sq`.
    pub(crate) fn amsgrad(self, vmax_offset: u32) -> AdamAmsgradParams {
        AdamAmsgradParams {
            numel: self.numel,
            flags: self.flags,
            grad_offset: self.grad_offset,
            param_offset: self.param_offset,
            m_offset: self.m_offset,
            v_offset: self.v_offset,
            vmax_offset,
            one_minus_beta1: self.one_minus_beta1,
            beta2: self.beta2,
            one_minus_beta2: self.one_minus_beta2,
            eps: self.eps,
            weight_decay: self.weight_decay,
            decay: self.decay,
            neg_step_size: self.neg_step_size,
            bias_correction2_sqrt: self.bias_correction2_sqrt,
        }
    }
}

immediates! {
    /// `RmsPropParams` of `common/rmsprop.wgsl` (every `optim/rmsprop*.wgsl`).
    RmsPropParams {
        /// Elements of the parameter.
        numel: u32,
        /// Option flags.
        flags: u32,
        /// Offset of the gradient.
        grad_offset: u32,
        /// Offset of the parameter.
        param_offset: u32,
        /// Offset of `square_avg`.
        v_offset: u32,
        /// Offset of `grad_avg` (centered).
        ga_offset: u32,
        /// Offset of the momentum buffer.
        buf_offset: u32,
        /// `alpha`.
        alpha: f32,
        /// `1 - alpha`.
        one_minus_alpha: f32,
        /// `eps`.
        eps: f32,
        /// The weight decay.
        weight_decay: f32,
        /// The momentum.
        momentum: f32,
        /// `-lr`.
        neg_lr: f32,
    }
}

immediates! {
    /// `AdagradParams` of `optim/adagrad.wgsl`.
    AdagradParams {
        /// Elements of the parameter.
        numel: u32,
        /// Option flags.
        flags: u32,
        /// Offset of the gradient.
        grad_offset: u32,
        /// Offset of the parameter.
        param_offset: u32,
        /// Offset of the sum of squares.
        sum_offset: u32,
        /// `eps`.
        eps: f32,
        /// The weight decay.
        weight_decay: f32,
        /// `-clr`.
        neg_clr: f32,
    }
}

immediates! {
    /// `AdamForeachParams` of `optim/adam_foreach.wgsl`.
    AdamForeachParams {
        /// Running element totals through each slot (unused slots repeat the last).
        ends: [u32; 4],
        /// Offset of each slot's gradient.
        grad_offsets: [u32; 4],
        /// Offset of each slot's parameter.
        param_offsets: [u32; 4],
        /// Offset of each slot's `exp_avg`.
        m_offsets: [u32; 4],
        /// Offset of each slot's `exp_avg_sq`.
        v_offsets: [u32; 4],
        /// Option flags (as [`AdamParams`]).
        flags: u32,
        /// `1 - beta1`.
        one_minus_beta1: f32,
        /// `beta2`.
        beta2: f32,
        /// `1 - beta2`.
        one_minus_beta2: f32,
        /// `eps`.
        eps: f32,
        /// The weight decay.
        weight_decay: f32,
        /// The decoupled decay factor.
        decay: f32,
        /// `-lr / bias_correction1`.
        neg_step_size: f32,
        /// `sqrt(bias_correction2)`.
        bias_correction2_sqrt: f32,
    }
}

immediates! {
    /// `AdamForeachWideParams` of `optim/adam_foreach_wide.wgsl`.
    AdamForeachWideParams {
        /// Running element totals through each slot (unused slots repeat the last).
        ends: [u32; 8],
        /// Offset of each slot's gradient.
        grad_offsets: [u32; 8],
        /// Option flags (as [`AdamParams`]).
        flags: u32,
        /// `1 - beta1`.
        one_minus_beta1: f32,
        /// `beta2`.
        beta2: f32,
        /// `1 - beta2`.
        one_minus_beta2: f32,
        /// `eps`.
        eps: f32,
        /// The weight decay.
        weight_decay: f32,
        /// The decoupled decay factor.
        decay: f32,
        /// `-lr / bias_correction1`.
        neg_step_size: f32,
        /// `sqrt(bias_correction2)`.
        bias_correction2_sqrt: f32,
    }
}
