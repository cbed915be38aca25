//! `kernels/optim/`: fused optimizer updates.
//!
//! Each kernel but `ADAM_FOREACH` and `ADAM_FOREACH_WIDE` updates one parameter in place: one thread per element
//! (1-D, `@workgroup_size(256)`, grid folded by `dispatch_1d`) reads the
//! gradient, the parameter and its optimizer state and writes the parameter
//! and the state, so a step is one dispatch per parameter. Hyper-parameters
//! and bias corrections arrive as immediates; `flags` bits are documented in
//! each file. Variants with extra state (momentum, amsgrad) are separate
//! files because a spec's binding count is fixed.

use crate::spec::{Access::*, Elem, KernelSpec};

/// SGD without momentum. Bindings: grad, param (rw).
/// Immediates: numel, flags, grad_offset, param_offset, neg_lr, weight_decay.
pub static SGD: KernelSpec = KernelSpec {
    file: "optim/sgd.wgsl",
    entry: "sgd",
    bindings: &[Read, ReadWrite],
    immediate_bytes: 24,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// SGD with momentum (and Nesterov). Bindings: grad, param (rw), buffer (rw).
/// Immediates: numel, flags, grad_offset, param_offset, buf_offset, neg_lr,
/// weight_decay, momentum, one_minus_dampening.
pub static SGD_MOMENTUM: KernelSpec = KernelSpec {
    file: "optim/sgd_momentum.wgsl",
    entry: "sgd_momentum",
    bindings: &[Read, ReadWrite, ReadWrite],
    immediate_bytes: 36,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Adam/AdamW. Bindings: grad, param (rw), exp_avg (rw), exp_avg_sq (rw).
/// Immediates: numel, flags, 4 offsets, one_minus_beta1, beta2,
/// one_minus_beta2, eps, weight_decay, decay, neg_step_size, bias_correction2_sqrt.
pub static ADAM: KernelSpec = KernelSpec {
    file: "optim/adam.wgsl",
    entry: "adam",
    bindings: &[Read, ReadWrite, ReadWrite, ReadWrite],
    immediate_bytes: 56,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Adam/AdamW over up to four parameters in one dispatch (amsgrad off).
/// Bindings, per slot: grad, param (rw), exp_avg (rw), exp_avg_sq (rw);
/// sixteen in all, so only for devices allowing that many storage buffers
/// per stage. Immediates: ends, grad/param/exp_avg/exp_avg_sq offsets (four
/// each), then flags and [`ADAM`]'s coefficients.
pub static ADAM_FOREACH: KernelSpec = KernelSpec {
    file: "optim/adam_foreach.wgsl",
    entry: "adam_foreach",
    bindings: &[
        Read, ReadWrite, ReadWrite, ReadWrite, Read, ReadWrite, ReadWrite, ReadWrite, Read,
        ReadWrite, ReadWrite, ReadWrite, Read, ReadWrite, ReadWrite, ReadWrite,
    ],
    immediate_bytes: 116,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Adam/AdamW with amsgrad. Bindings: grad, param, exp_avg, exp_avg_sq,
/// max_exp_avg_sq (all but grad rw). Immediates: as [`ADAM`] with a fifth offset.
pub static ADAM_AMSGRAD: KernelSpec = KernelSpec {
    file: "optim/adam_amsgrad.wgsl",
    entry: "adam_amsgrad",
    bindings: &[Read, ReadWrite, ReadWrite, ReadWrite, ReadWrite],
    immediate_bytes: 60,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// RMSprop without extra state. Bindings: grad, param (rw), square_avg (rw).
/// Immediates (all RMSprop kernels): numel, flags, grad/param/square_avg/
/// grad_avg/buffer offsets, alpha, one_minus_alpha, eps, weight_decay,
/// momentum, neg_lr.
pub static RMSPROP: KernelSpec = KernelSpec {
    file: "optim/rmsprop.wgsl",
    entry: "rmsprop",
    bindings: &[Read, ReadWrite, ReadWrite],
    immediate_bytes: 52,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// RMSprop with one extra state (rw): `grad_avg` (centered) or the
/// momentum buffer, as the flags say. Bindings: grad, param, square_avg, state.
pub static RMSPROP_AUX: KernelSpec = KernelSpec {
    file: "optim/rmsprop_aux.wgsl",
    entry: "rmsprop_aux",
    bindings: &[Read, ReadWrite, ReadWrite, ReadWrite],
    immediate_bytes: 52,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Centered RMSprop with momentum. Bindings: grad, param, square_avg,
/// grad_avg, momentum buffer (all but grad rw).
pub static RMSPROP_FULL: KernelSpec = KernelSpec {
    file: "optim/rmsprop_full.wgsl",
    entry: "rmsprop_full",
    bindings: &[Read, ReadWrite, ReadWrite, ReadWrite, ReadWrite],
    immediate_bytes: 52,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Adagrad. Bindings: grad, param (rw), sum (rw). Immediates: numel, flags,
/// grad/param/sum offsets, eps, weight_decay, neg_clr.
pub static ADAGRAD: KernelSpec = KernelSpec {
    file: "optim/adagrad.wgsl",
    entry: "adagrad",
    bindings: &[Read, ReadWrite, ReadWrite],
    immediate_bytes: 32,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// [`ADAM_FOREACH`] over up to eight parameters that, with their state,
/// start at element 0 of their buffers (gradients anywhere). Bindings: 32,
/// per slot as [`ADAM_FOREACH`]'s; only for devices allowing that many
/// storage buffers per stage. Immediates: ends and gradient offsets (eight
/// each), then flags and [`ADAM`]'s coefficients.
pub static ADAM_FOREACH_WIDE: KernelSpec = KernelSpec {
    file: "optim/adam_foreach_wide.wgsl",
    entry: "adam_foreach_wide",
    bindings: &[
        Read, ReadWrite, ReadWrite, ReadWrite, Read, ReadWrite, ReadWrite, ReadWrite, Read,
        ReadWrite, ReadWrite, ReadWrite, Read, ReadWrite, ReadWrite, ReadWrite, Read, ReadWrite,
        ReadWrite, ReadWrite, Read, ReadWrite, ReadWrite, ReadWrite, Read, ReadWrite, ReadWrite,
        ReadWrite, Read, ReadWrite, ReadWrite, ReadWrite,
    ],
    immediate_bytes: 100,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Every kernel of this family.
pub static ALL: &[&KernelSpec] = &[
    &SGD,
    &SGD_MOMENTUM,
    &ADAM,
    &ADAM_FOREACH,
    &ADAM_FOREACH_WIDE,
    &ADAM_AMSGRAD,
    &RMSPROP,
    &RMSPROP_AUX,
    &RMSPROP_FULL,
    &ADAGRAD,
];
