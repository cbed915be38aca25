//! `kernels/attention/` kernel specs: fused scaled-dot-product attention
//! (forward and the two backward passes) in the flash-attention manner.
//!
//! All of them share one binding layout and one immediate block
//! (`AttentionParams`, 120 bytes; see `kernels/common/attention.wgsl`):
//! q, k, v, mask, dout, stats (per query row: log-sum-exp and the
//! backward's delta; read), out0, out1 (read_write); the kernels that do
//! not use a binding get an alias of another buffer.

use crate::spec::{Access::*, Elem, KernelSpec};

/// Bytes of `AttentionParams`.
const ATTENTION_IMMEDIATES: u32 = 120;

/// The binding layout all three kernels share.
const BINDINGS: &[crate::spec::Access] =
    &[Read, Read, Read, Read, Read, Read, ReadWrite, ReadWrite];

/// Output and per-row log-sum-exp. Bindings: q, k, v, mask, (alias),
/// (alias), out, lse.
pub static ATTENTION_FORWARD: KernelSpec = KernelSpec {
    file: "attention/attention_forward.wgsl",
    entry: "attention_forward",
    bindings: BINDINGS,
    immediate_bytes: ATTENTION_IMMEDIATES,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Query gradient. Bindings: q, k, v, mask, dout, stats, dq, (alias of dq).
pub static ATTENTION_BACKWARD_DQ: KernelSpec = KernelSpec {
    file: "attention/attention_backward.wgsl",
    entry: "attention_backward_dq",
    bindings: BINDINGS,
    immediate_bytes: ATTENTION_IMMEDIATES,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Query gradient from the score-gradient tiles the dk/dv pass saved.
/// Bindings: (alias), k, (alias), (alias), (alias), saved dS tiles, dq,
/// (alias of dq).
pub static ATTENTION_BACKWARD_DQ_SAVED: KernelSpec = KernelSpec {
    file: "attention/attention_backward.wgsl",
    entry: "attention_backward_dq_saved",
    bindings: BINDINGS,
    immediate_bytes: ATTENTION_IMMEDIATES,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Each query row's (log-sum-exp, delta = dout . out), interleaved: the
/// `stats` the other backward passes read. Bindings: out (the forward's),
/// lse, (alias), (alias), dout, (alias), stats, (alias of stats).
pub static ATTENTION_BACKWARD_STATS: KernelSpec = KernelSpec {
    file: "attention/attention_backward.wgsl",
    entry: "attention_backward_stats",
    bindings: BINDINGS,
    immediate_bytes: ATTENTION_IMMEDIATES,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Key and value gradients (with `FLAG_SAVE_DS`: dk then dv in out0, the
/// score-gradient tiles in out1). Bindings: q, k, v, mask, dout, stats, dk, dv.
pub static ATTENTION_BACKWARD_DKDV: KernelSpec = KernelSpec {
    file: "attention/attention_backward.wgsl",
    entry: "attention_backward_dkdv",
    bindings: BINDINGS,
    immediate_bytes: ATTENTION_IMMEDIATES,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Every kernel of this family (what the validation test walks).
pub static ALL: &[&KernelSpec] = &[
    &ATTENTION_FORWARD,
    &ATTENTION_BACKWARD_DQ,
    &ATTENTION_BACKWARD_DKDV,
    &ATTENTION_BACKWARD_DQ_SAVED,
    &ATTENTION_BACKWARD_STATS,
];
