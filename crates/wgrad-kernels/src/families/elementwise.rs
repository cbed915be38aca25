//! `kernels/elementwise/`: fills and broadcasting elementwise math.
//!
//! Every kernel here is 1-D (`@workgroup_size(256)`, grid folded by
//! `dispatch_1d`) and reads its inputs through strided views, writing a
//! contiguous output. `fill` and `binary` take one element per thread; the
//! others take [`ELEMENTS_PER_THREAD`].

use crate::spec::{Access::*, Elem, KernelSpec, Selector};

/// Output elements each thread of `UNARY`, `BINARY_SCALAR`, `COMPARE`,
/// `WHERE_COND` and `CAST` handles (their WGSL `EPT`): dispatch
/// `numel.div_ceil(ELEMENTS_PER_THREAD)` threads. Several loads in flight per
/// thread are what lets a 1-D kernel approach HBM bandwidth on large GPUs.
pub const ELEMENTS_PER_THREAD: u64 = 8;

/// Fill a contiguous range with one 32-bit pattern. Immediates: numel, offset, bits, pad.
pub static FILL: KernelSpec = KernelSpec {
    file: "elementwise/fill.wgsl",
    entry: "fill",
    bindings: &[ReadWrite],
    immediate_bytes: 16,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Broadcasting f32 binary op; override `OP` = `BinaryOp::code()`.
/// Immediates: numel, rank, a_offset, b_offset, shape\[6\], a_strides\[6\], b_strides\[6\].
pub static BINARY: KernelSpec = KernelSpec {
    file: "elementwise/binary.wgsl",
    entry: "binary",
    bindings: &[Read, Read, ReadWrite],
    immediate_bytes: 88,
    uses_fault: false,
    elem: Elem::F32,
    selector: Some(Selector::Binary),
};

/// Vectors of four f32 elements each thread of [`BINARY_VEC4`] handles
/// (its WGSL `VPT`): dispatch `(numel / 4).div_ceil(VEC4_PER_THREAD)` threads.
pub const VEC4_PER_THREAD: u64 = 4;

/// [`BINARY`] over dense, same-shape operands whose offsets and element
/// count are multiples of 4: 16-byte loads and stores, the same results.
/// Override `OP`; immediates as [`BINARY`] (numel and the two offsets read).
pub static BINARY_VEC4: KernelSpec = KernelSpec {
    file: "elementwise/binary_vec4.wgsl",
    entry: "binary_vec4",
    bindings: &[Read, Read, ReadWrite],
    immediate_bytes: 88,
    uses_fault: false,
    elem: Elem::F32,
    selector: Some(Selector::Binary),
};

/// [`BINARY`] where an operand or the output is F16/BF16, in one pass:
/// operands read in their own dtype (f32 words or packed halves), `apply` in
/// f32, the result rounded once to the 16-bit output. Overrides `OP`,
/// `A_KIND`, `B_KIND`, `OUT_KIND` (0 f32, 3 f16, 4 bf16). Each thread writes
/// [`HALF_WORDS_PER_THREAD`] output words (two elements each). Immediates as
/// [`BINARY`].
pub static BINARY_HALF: KernelSpec = KernelSpec {
    file: "elementwise/binary_half.wgsl",
    entry: "binary_half",
    bindings: &[Read, Read, ReadWrite],
    immediate_bytes: 88,
    uses_fault: false,
    elem: Elem::F32,
    selector: Some(Selector::Binary),
};

/// [`BINARY_HALF`] with an f32 output (a 16-bit operand with an F32 one);
/// [`ELEMENTS_PER_THREAD`] elements per thread.
pub static BINARY_HALF_TO_F32: KernelSpec = KernelSpec {
    file: "elementwise/binary_half.wgsl",
    entry: "binary_half_to_f32",
    bindings: &[Read, Read, ReadWrite],
    immediate_bytes: 88,
    uses_fault: false,
    elem: Elem::F32,
    selector: Some(Selector::Binary),
};

/// f32 unary math; override `OP` = `UnaryOp::code()`.
/// Immediates: numel, rank, offset, p0: f32, p1: f32 (`UnaryOp::params()`),
/// shape\[6\], strides\[6\].
pub static UNARY: KernelSpec = KernelSpec {
    file: "elementwise/unary.wgsl",
    entry: "unary",
    bindings: &[Read, ReadWrite],
    immediate_bytes: 68,
    uses_fault: false,
    elem: Elem::F32,
    selector: Some(Selector::Unary),
};

/// [`UNARY`] over a dense input whose offset and element count are
/// multiples of 4: 16-byte loads and stores, [`VEC4_PER_THREAD`] vectors a
/// thread, the same results. Immediates as [`UNARY`].
pub static UNARY_VEC4: KernelSpec = KernelSpec {
    file: "elementwise/unary.wgsl",
    entry: "unary_vec4",
    bindings: &[Read, ReadWrite],
    immediate_bytes: 68,
    uses_fault: false,
    elem: Elem::F32,
    selector: Some(Selector::Unary),
};

/// [`UNARY`] on an F16/BF16 tensor in one pass (override `KIND`: 3 f16,
/// 4 bf16; the output has the input's dtype): elements widened exactly,
/// `apply` in f32, rounded once. [`HALF_WORDS_PER_THREAD`] output words per
/// thread. Immediates as [`UNARY`].
pub static UNARY_HALF: KernelSpec = KernelSpec {
    file: "elementwise/unary.wgsl",
    entry: "unary_half",
    bindings: &[Read, ReadWrite],
    immediate_bytes: 68,
    uses_fault: false,
    elem: Elem::F32,
    selector: Some(Selector::Unary),
};

/// f32 binary op with a scalar operand; overrides `OP` = `BinaryOp::code()`
/// and `LEFT` (1: `scalar op x`, 0: `x op scalar`).
/// Immediates: numel, rank, offset, scalar: f32, shape\[6\], strides\[6\].
pub static BINARY_SCALAR: KernelSpec = KernelSpec {
    file: "elementwise/scalar.wgsl",
    entry: "binary_scalar",
    bindings: &[Read, ReadWrite],
    immediate_bytes: 64,
    uses_fault: false,
    elem: Elem::F32,
    selector: Some(Selector::Binary),
};

/// Broadcasting comparison to a u32 mask; overrides `OP` = `CompareOp::code()`,
/// `INT` (0 f32, 1 i32 operands) and `SCALAR` (1: compare with the immediate
/// scalar; binding 1 is then unused).
/// Immediates: numel, rank, a_offset, b_offset, scalar: f32, shape\[6\],
/// a_strides\[6\], b_strides\[6\].
pub static COMPARE: KernelSpec = KernelSpec {
    file: "elementwise/compare.wgsl",
    entry: "compare",
    bindings: &[Read, Read, ReadWrite],
    immediate_bytes: 92,
    uses_fault: false,
    elem: Elem::F32,
    selector: Some(Selector::Compare),
};

/// `mask != 0 ? a : b` over three broadcast views (mask u32, a/b f32).
/// Immediates: numel, rank, m_offset, a_offset, b_offset, shape\[6\],
/// m_strides\[6\], a_strides\[6\], b_strides\[6\].
pub static WHERE_COND: KernelSpec = KernelSpec {
    file: "elementwise/where.wgsl",
    entry: "where_cond",
    bindings: &[Read, Read, Read, ReadWrite],
    immediate_bytes: 116,
    uses_fault: false,
    elem: Elem::U32,
    selector: None,
};

/// Dtype conversion with Rust `as` semantics to a 32-bit dtype (entry
/// `cast_dtype`: `cast` is reserved in WGSL), from any dtype; overrides
/// `FROM`/`TO` (0 f32, 1 i32, 2 u32, 3 f16, 4 bf16; `TO` < 3). A 16-bit
/// float source goes through f32. Immediates: numel, rank, offset,
/// shape\[6\], strides\[6\].
pub static CAST: KernelSpec = KernelSpec {
    file: "elementwise/cast.wgsl",
    entry: "cast_dtype",
    bindings: &[Read, ReadWrite],
    immediate_bytes: 60,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Conversion to a 16-bit float (`TO` 3 f16 or 4 bf16) from any dtype, or a
/// bit-exact contiguous copy of a half view (`FROM == TO`), into a
/// contiguous output from word 0. Each thread writes [`HALF_WORDS_PER_THREAD`]
/// whole output words (two elements each): dispatch
/// `numel.div_ceil(2).div_ceil(HALF_WORDS_PER_THREAD)` threads.
/// Overrides and immediates as [`CAST`].
pub static CAST_HALF: KernelSpec = KernelSpec {
    file: "elementwise/cast.wgsl",
    entry: "cast_half",
    bindings: &[Read, ReadWrite],
    immediate_bytes: 60,
    uses_fault: false,
    elem: Elem::F32,
    selector: None,
};

/// Output words each thread of [`CAST_HALF`] writes (its WGSL `WPT`).
pub const HALF_WORDS_PER_THREAD: u64 = 4;

/// Broadcasting integer binary op (I32 instantiation of a source written
/// against `elem`); override `OP` = `BinaryOp::code()` of an op that keeps
/// integers; one element per thread. A zero divisor of floor division or
/// remainder raises fault 10. Immediates: as [`BINARY`].
pub static BINARY_I32: KernelSpec = KernelSpec {
    file: "elementwise/binary_int.wgsl",
    entry: "binary_int",
    bindings: &[Read, Read, ReadWrite],
    immediate_bytes: 88,
    uses_fault: true,
    elem: Elem::I32,
    selector: Some(Selector::Binary),
};

/// Integer binary op with a scalar operand (I32); overrides `OP` and `LEFT`
/// as [`BINARY_SCALAR`]; one element per thread; fault 10 on a zero
/// divisor. Immediates: as [`BINARY_SCALAR`] with the scalar's bits an i32.
pub static BINARY_SCALAR_I32: KernelSpec = KernelSpec {
    file: "elementwise/scalar_int.wgsl",
    entry: "binary_scalar_int",
    bindings: &[Read, ReadWrite],
    immediate_bytes: 64,
    uses_fault: true,
    elem: Elem::I32,
    selector: Some(Selector::Binary),
};

/// Every kernel of this family.
pub static ALL: &[&KernelSpec] = &[
    &FILL,
    &BINARY,
    &BINARY_VEC4,
    &BINARY_HALF,
    &BINARY_HALF_TO_F32,
    &UNARY,
    &UNARY_VEC4,
    &UNARY_HALF,
    &BINARY_SCALAR,
    &COMPARE,
    &WHERE_COND,
    &CAST,
    &CAST_HALF,
    &BINARY_I32,
    &BINARY_SCALAR_I32,
];
