//! In-place ops (`add_`, `sub_`, `mul_`, `div_`, `zero_`, `fill_`, `copy_`,
//! `clamp_` and the scalar forms), as `torch.Tensor`'s trailing-underscore
//! methods.
//!
//! Each computes its result out of place, checks it (shape: only the other
//! operand may broadcast; dtype: no narrowing but `copy_`'s cast; no
//! overlapping elements in the written view), then writes it into this
//! tensor's elements of the shared buffer and bumps the version counter
//! shared with every view and `detach()`:
//!
//! - GPU: one copy dispatch into the buffer itself, so every view sees it.
//! - CPU: buffers are immutable and shared, so the write is copy-on-write:
//!   a rewritten copy of the whole buffer, which this tensor takes at once
//!   and the other views of the old buffer take the next time they are read
//!   ([`DataCell`], shared like the version counter).
//!
//! Autograd: PyTorch's errors where PyTorch errors. With grad mode on, a
//! leaf that requires grad cannot be written ("a leaf Variable that requires
//! grad is being used in an in-place operation"); a tensor with a grad_fn
//! (a result, or a view of a leaf that requires grad), or an operand that
//! requires grad, is refused with an error that names the op: wgrad does not
//! rebase history, so use the out-of-place op. Under `no_grad` every write
//! is allowed. A tensor saved for backward and then written makes backward
//! fail with the "modified by an inplace operation" version error.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use wgrad_core::checks::arith;
use wgrad_core::{BinaryOp, DType, Error, Result, UnaryOp};
use wgrad_cpu::{BufferRef, CpuTensor};

use crate::grad_mode::is_grad_enabled;
use crate::storage::Storage;
use crate::tensor::Tensor;

/// Where a CPU in-place write leaves the rewritten buffer for the other
/// views of the buffer it replaced: (old buffer, a tensor over the new one).
#[derive(Default)]
pub(crate) struct DataCell {
    /// How many writes happened (0: nothing to follow; the common case
    /// costs one atomic load per `storage()`).
    writes: AtomicU64,
    rewrites: Mutex<Vec<(BufferRef, CpuTensor)>>,
    /// Why in-place ops must not write this data, if they must not: set
    /// for the tensors `Tensor::grad()` returns (a handle over the
    /// gradient's data that several gradients may share: an `add`'s
    /// backward gives both operands one buffer), and for results that
    /// PyTorch returns as views of their input but wgrad computes as
    /// copies (`diagonal`), where a write would silently miss the input.
    refusal: OnceLock<&'static str>,
}

/// Why the tensors `Tensor::grad()` returns are not written in place.
const SHARED_GRADIENT: &str = "the tensor grad() returns reads gradient storage that other \
                               gradients may share; write a gradient with set_grad (or \
                               zero_grad) instead of in place";

impl DataCell {
    /// The cell of a gradient handle (see [`SHARED_GRADIENT`]).
    pub(crate) fn read_only() -> Self {
        let cell = DataCell::default();
        cell.refuse_writes(SHARED_GRADIENT);
        cell
    }

    /// Makes in-place ops on this data (and its views) fail with `why`;
    /// a second reason leaves the first.
    pub(crate) fn refuse_writes(&self, why: &'static str) {
        let _ = self.refusal.set(why);
    }

    /// The storage a view with (possibly stale) storage `s` reads now: its
    /// layout over the newest rewrite of its buffer, or `None` if current.
    pub(crate) fn follow(&self, s: &Storage) -> Option<Storage> {
        if self.writes.load(Ordering::Acquire) == 0 {
            return None;
        }
        let Storage::Cpu(t) = s else { return None };
        let rewrites = self.rewrites.lock();
        let mut cur = t.clone();
        let mut moved = false;
        // Each rewrite replaces one buffer; follow the chain to its end.
        for _ in 0..=rewrites.len() {
            let Some(next) = rewrites
                .iter()
                .find(|(old, _)| old.is_buffer_of(&cur))
                .and_then(|(_, new)| cur.rebase(new))
            else {
                break;
            };
            cur = next;
            moved = true;
        }
        moved.then_some(Storage::Cpu(cur))
    }

    /// Records that `old`'s buffer was replaced by `new`'s; forgets the
    /// rewrites of buffers no tensor reads any more.
    fn record(&self, old: &CpuTensor, new: &CpuTensor) {
        let mut rewrites = self.rewrites.lock();
        rewrites.retain(|(buf, _)| buf.is_alive());
        rewrites.push((old.buffer_ref(), new.clone()));
        self.writes.fetch_add(1, Ordering::AcqRel);
    }
}

/// In-place ops (`add_`, `mul_`, `fill_`, `zero_`, `copy_`, `clamp_`, ...),
/// which write this tensor's elements and every view of them. As in
/// PyTorch, a leaf that requires grad can only be written under
/// [`no_grad`](crate::no_grad) (a manual parameter update).
///
/// ```
/// use wgrad_autograd::{Device, Tensor, no_grad};
/// let cpu = Device::Cpu;
/// let x = Tensor::zeros(&[2, 2], &cpu)?;
/// x.fill_(1.0)?;
/// x.narrow(0, 1, 1)?.mul_scalar_(5.0)?; // writes through the view
/// assert_eq!(x.to_vec_f32()?, [1.0, 1.0, 5.0, 5.0]);
/// x.clamp_(None, Some(2.0))?;
/// assert_eq!(x.to_vec_f32()?, [1.0, 1.0, 2.0, 2.0]);
/// // SGD by hand: w -= lr * grad.
/// let w = Tensor::ones(&[2], &cpu)?.with_requires_grad(true)?;
/// w.square()?.sum_all()?.backward()?;
/// let grad = w.grad().expect("w has a gradient");
/// assert!(w.sub_(&grad).is_err()); // refused while grad mode is on
/// {
///     let _guard = no_grad();
///     w.sub_(&grad.mul_scalar(0.25)?)?;
/// }
/// assert_eq!(w.to_vec_f32()?, [0.5, 0.5]);
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
impl Tensor {
    /// PyTorch's autograd checks of an in-place write to `self` with
    /// `operands` (see the module docs).
    fn check_inplace(&self, op: &'static str, operands: &[&Tensor]) -> Result<()> {
        let layout = match &self.storage() {
            Storage::Cpu(t) => t.layout().clone(),
            Storage::Gpu(t) => t.layout().clone(),
        };
        arith::writable_layout(op, &layout)?;
        if let Some(why) = self.inner.cell.refusal.get() {
            return Err(Error::invalid(op, *why));
        }
        if !is_grad_enabled() {
            return Ok(());
        }
        if self.is_leaf() && self.requires_grad() {
            return Err(Error::invalid(
                op,
                "a leaf Variable that requires grad is being used in an in-place operation; \
                 wrap it in no_grad() or use the out-of-place op",
            ));
        }
        if let Some(grad_fn) = self.grad_fn_name() {
            return Err(Error::invalid(
                op,
                format!(
                    "in-place ops on a tensor that is part of an autograd graph (grad_fn {grad_fn}) \
                     are not supported (wgrad does not rebase history); use the out-of-place op \
                     or no_grad()"
                ),
            ));
        }
        if operands.iter().any(|t| t.requires_grad()) {
            return Err(Error::invalid(
                op,
                "an operand requires grad, so the in-place result would need autograd history, \
                 which wgrad does not record; use the out-of-place op or no_grad()",
            ));
        }
        Ok(())
    }

    /// Writes `values` (this tensor's shape, any dtype: cast) into this
    /// tensor's elements, seen by every view of its data; bumps the version.
    fn write_values(&self, values: &Storage) -> Result<()> {
        let dst = self.storage();
        match (&dst, values) {
            (Storage::Gpu(d), Storage::Gpu(v)) => d.write_view(v)?,
            (Storage::Cpu(d), Storage::Cpu(v)) => {
                let new = d.write_view(v)?;
                self.inner.cell.record(d, &new);
                self.put_storage(Storage::Cpu(new));
            }
            (d, v) => {
                return Err(Error::DeviceMismatch {
                    op: "copy_",
                    lhs: d.device().to_string(),
                    rhs: v.device().to_string(),
                });
            }
        }
        self.bump_version();
        Ok(())
    }

    /// Writes an out-of-place result of `op` into `self` after the shape
    /// and dtype checks.
    fn assign_result(&self, op: &'static str, result: Storage) -> Result<Tensor> {
        arith::inplace_shape(op, &self.shape(), result.shape())?;
        arith::inplace_dtype(op, self.dtype(), result.dtype())?;
        self.write_values(&result)?;
        Ok(self.clone())
    }

    /// `self (op)= other` in place, with `other` broadcast to this shape.
    pub fn binary_(&self, other: &Tensor, op: BinaryOp) -> Result<Tensor> {
        let name = inplace_name(op);
        self.check_inplace(name, &[other])?;
        let result = self.storage().binary(&other.storage(), op)?;
        self.assign_result(name, result)
    }

    /// `self (op)= scalar` in place.
    pub fn binary_scalar_(&self, op: BinaryOp, scalar: f32) -> Result<Tensor> {
        let name = inplace_name(op);
        self.check_inplace(name, &[])?;
        let result = self.storage().binary_scalar(op, scalar, false)?;
        self.assign_result(name, result)
    }

    /// `torch.Tensor.add_`: `self += other` (broadcasting `other`).
    pub fn add_(&self, other: &Tensor) -> Result<Tensor> {
        self.binary_(other, BinaryOp::Add)
    }
    /// `torch.Tensor.sub_`: `self -= other`.
    pub fn sub_(&self, other: &Tensor) -> Result<Tensor> {
        self.binary_(other, BinaryOp::Sub)
    }
    /// `torch.Tensor.mul_`: `self *= other`.
    pub fn mul_(&self, other: &Tensor) -> Result<Tensor> {
        self.binary_(other, BinaryOp::Mul)
    }
    /// `torch.Tensor.div_`: `self /= other` (true division: an I32 tensor
    /// cannot hold the F32 result, an error as in PyTorch).
    pub fn div_(&self, other: &Tensor) -> Result<Tensor> {
        self.binary_(other, BinaryOp::Div)
    }
    /// `self += scalar`.
    pub fn add_scalar_(&self, scalar: f32) -> Result<Tensor> {
        self.binary_scalar_(BinaryOp::Add, scalar)
    }
    /// `self -= scalar`.
    pub fn sub_scalar_(&self, scalar: f32) -> Result<Tensor> {
        self.binary_scalar_(BinaryOp::Sub, scalar)
    }
    /// `self *= scalar`.
    pub fn mul_scalar_(&self, scalar: f32) -> Result<Tensor> {
        self.binary_scalar_(BinaryOp::Mul, scalar)
    }
    /// `self /= scalar`.
    pub fn div_scalar_(&self, scalar: f32) -> Result<Tensor> {
        self.binary_scalar_(BinaryOp::Div, scalar)
    }

    /// `torch.Tensor.fill_`: every element set to `value` (converted to
    /// this dtype with `as` semantics).
    pub fn fill_(&self, value: f64) -> Result<Tensor> {
        const OP: &str = "fill_";
        self.check_inplace(OP, &[])?;
        let one = Storage::full(&[], value, self.dtype(), &self.device())?;
        self.write_values(&one.expand(&self.shape())?)?;
        Ok(self.clone())
    }

    /// `torch.Tensor.zero_`.
    pub fn zero_(&self) -> Result<Tensor> {
        self.fill_(0.0).map_err(|e| rename(e, "fill_", "zero_"))
    }

    /// `torch.Tensor.copy_`: `src` broadcast to this shape, moved to this
    /// device and converted to this dtype (`as` casts) if need be.
    pub fn copy_(&self, src: &Tensor) -> Result<Tensor> {
        const OP: &str = "copy_";
        self.check_inplace(OP, &[src])?;
        let shape = self.shape();
        let src = src.storage();
        let expanded = src.expand(&shape).map_err(|_| {
            Error::invalid(
                OP,
                format!(
                    "source of shape {:?} cannot be broadcast to the destination's shape {:?}",
                    src.shape(),
                    shape.to_vec()
                ),
            )
        })?;
        let moved = if self.device().same(&src.device()) {
            expanded
        } else {
            // Across devices: move the (smaller) source, then broadcast.
            src.to_device(&self.device())?.expand(&shape)?
        };
        self.write_values(&moved)?;
        Ok(self.clone())
    }

    /// `torch.Tensor.clamp_`: elements limited to `[min, max]` (either may
    /// be `None`; `min > max` gives `max`); F32 or I32 (whole-number bounds).
    pub fn clamp_(&self, min: Option<f32>, max: Option<f32>) -> Result<Tensor> {
        const OP: &str = "clamp_";
        self.check_inplace(OP, &[])?;
        let x = self.storage();
        let clamped = if x.dtype() == DType::I32 {
            // Integer clamp through the I32 maximum/minimum (a fractional
            // bound promotes to F32, which the dtype check then refuses, as
            // PyTorch does).
            if min.is_none() && max.is_none() {
                return Err(Error::invalid(
                    OP,
                    "at least one of min and max must be given",
                ));
            }
            let mut out = x;
            if let Some(lo) = min {
                out = out.binary_scalar(BinaryOp::Maximum, lo, false)?;
            }
            if let Some(hi) = max {
                out = out.binary_scalar(BinaryOp::Minimum, hi, false)?;
            }
            out
        } else {
            x.unary(UnaryOp::Clamp { min, max })?
        };
        self.assign_result(OP, clamped)
    }
}

/// The name of the in-place form of `op` in errors (`add_`).
fn inplace_name(op: BinaryOp) -> &'static str {
    match op {
        BinaryOp::Add => "add_",
        BinaryOp::Sub => "sub_",
        BinaryOp::Mul => "mul_",
        BinaryOp::Div => "div_",
        BinaryOp::Pow => "pow_",
        BinaryOp::Maximum => "maximum_",
        BinaryOp::Minimum => "minimum_",
        BinaryOp::FloorDiv => "floor_divide_",
        BinaryOp::Remainder => "remainder_",
    }
}

/// `e` with its op name `from` replaced by `to` (for ops that delegate).
fn rename(e: Error, from: &'static str, to: &'static str) -> Error {
    match e {
        Error::InvalidArgument { op, message } if op == from => {
            Error::InvalidArgument { op: to, message }
        }
        other => other,
    }
}
