//! Elementwise ops.

use wgrad_core::{BinaryOp, CompareOp, DType, Result, UnaryOp};

use crate::autocast;
use crate::graph::Op;
use crate::storage::Storage;
use crate::tensor::Tensor;

macro_rules! binary_methods {
    ($($name:ident $scalar:ident => $op:ident),* $(,)?) => {$(
        #[doc = concat!("Elementwise `", stringify!($name), "` with broadcasting.")]
        pub fn $name(&self, other: &Tensor) -> Result<Tensor> {
            self.binary(other, BinaryOp::$op)
        }
        #[doc = concat!("Elementwise `", stringify!($name), "` with a scalar on the right.")]
        pub fn $scalar(&self, scalar: f32) -> Result<Tensor> {
            self.binary_scalar(BinaryOp::$op, scalar, false)
        }
    )*};
}

macro_rules! compare_methods {
    ($($name:ident $scalar:ident => $op:ident),* $(,)?) => {$(
        #[doc = concat!("`", stringify!($name), "` comparison to a U32 mask (not differentiable).")]
        pub fn $name(&self, other: &Tensor) -> Result<Tensor> {
            self.compare(other, CompareOp::$op)
        }
        #[doc = concat!("`", stringify!($name), "` comparison with a scalar.")]
        pub fn $scalar(&self, scalar: f32) -> Result<Tensor> {
            Ok(Tensor::from_storage_leaf(self.storage().compare_scalar(CompareOp::$op, scalar)?))
        }
    )*};
}

/// Elementwise math: binary ops with broadcasting (`add`, `mul`, `pow`,
/// `maximum`, ...; also the operators `+ - * / %` on references, which
/// return `Result`), their scalar forms (`add_scalar`, ...), the named
/// unary ops (`relu`, `exp`, `clamp`, `gelu`, ...), comparisons to U32
/// masks, `where_cond`, `cast`, and `softmax`/`log_softmax`.
///
/// ```
/// use wgrad_autograd::{DType, Device, Tensor};
/// let cpu = Device::Cpu;
/// let a = Tensor::from_vec(vec![1.0f32, -2.0, 3.0], &[3], &cpu)?;
/// let b = Tensor::from_vec(vec![10.0f32], &[1], &cpu)?; // broadcasts
/// assert_eq!(a.add(&b)?.to_vec_f32()?, [11.0, 8.0, 13.0]);
/// assert_eq!((&(&a * &b)? - 1.0)?.to_vec_f32()?, [9.0, -21.0, 29.0]);
/// assert_eq!(a.relu()?.to_vec_f32()?, [1.0, 0.0, 3.0]);
/// assert_eq!(a.clamp(Some(-1.0), Some(2.0))?.to_vec_f32()?, [1.0, -1.0, 2.0]);
/// assert_eq!(a.pow_scalar(2.0)?.to_vec_f32()?, [1.0, 4.0, 9.0]);
/// // Comparisons give U32 masks of 0/1; where_cond picks by them.
/// let mask = a.gt_scalar(0.0)?;
/// assert_eq!(mask.to_vec::<u32>()?, [1, 0, 1]);
/// let picked = Tensor::where_cond(&mask, &a, &a.zeros_like()?)?;
/// assert_eq!(picked.to_vec_f32()?, [1.0, 0.0, 3.0]);
/// // Integers follow PyTorch's promotion: I32 // 2 stays I32 (rounding
/// // toward -inf), true division gives F32.
/// let i = Tensor::from_vec(vec![7i32, -7], &[2], &cpu)?;
/// assert_eq!(i.div_floor_scalar(2.0)?.to_vec::<i32>()?, [3, -4]);
/// assert_eq!(i.cast(DType::F32)?.div_scalar(2.0)?.to_vec_f32()?, [3.5, -3.5]);
/// let p = a.softmax(-1)?.to_vec_f32()?;
/// assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-6);
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
impl Tensor {
    /// `self (op) other` with broadcasting.
    pub fn binary(&self, other: &Tensor, op: BinaryOp) -> Result<Tensor> {
        let out = self.storage().binary(&other.storage(), op)?;
        Ok(Tensor::record(out, Op::Binary(op), &[self, other]))
    }

    /// `self (op) scalar`, or `scalar (op) self` if `scalar_on_left`.
    pub fn binary_scalar(&self, op: BinaryOp, scalar: f32, scalar_on_left: bool) -> Result<Tensor> {
        let out = self.storage().binary_scalar(op, scalar, scalar_on_left)?;
        Ok(Tensor::record(
            out,
            Op::BinaryScalar {
                op,
                scalar,
                scalar_on_left,
            },
            &[self],
        ))
    }

    binary_methods! {
        add add_scalar => Add,
        sub sub_scalar => Sub,
        mul mul_scalar => Mul,
        div div_scalar => Div,
        pow pow_scalar => Pow,
        maximum maximum_scalar => Maximum,
        minimum minimum_scalar => Minimum,
        div_floor div_floor_scalar => FloorDiv,
        remainder remainder_scalar => Remainder,
    }

    /// `torch.floor_divide` / Python's `//`: the same as [`div_floor`](Self::div_floor).
    pub fn floor_divide(&self, other: &Tensor) -> Result<Tensor> {
        self.div_floor(other)
    }

    /// Elementwise unary op.
    pub fn unary(&self, op: UnaryOp) -> Result<Tensor> {
        if autocast::unary_in_f32(op) && autocast::is_autocast_enabled() && self.dtype().is_half() {
            return autocast::full_precision(self)?.unary(op);
        }
        let out = self.storage().unary(op)?;
        Ok(Tensor::record(out, Op::Unary(op), &[self]))
    }

    // The named wrappers (`relu`, `erf`, `clamp`, ...), the same list as
    // CpuTensor's and GpuTensor's.
    wgrad_core::unary_methods!();

    /// Comparison to a U32 mask of 0/1 (not differentiable).
    pub fn compare(&self, other: &Tensor, op: CompareOp) -> Result<Tensor> {
        Ok(Tensor::from_storage_leaf(
            self.storage().compare(&other.storage(), op)?,
        ))
    }

    compare_methods! {
        eq eq_scalar => Eq, ne ne_scalar => Ne, lt lt_scalar => Lt,
        le le_scalar => Le, gt gt_scalar => Gt, ge ge_scalar => Ge,
    }

    /// `mask ? a : b` elementwise with broadcasting (`torch.where`); `mask`
    /// is U32. `a` and `b` promote as in PyTorch: two floats as the binary
    /// ops do, I32 (or a U32 mask) with a float takes the float's dtype,
    /// two I32 (or two U32) stay as they are.
    pub fn where_cond(mask: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        let (da, db) = (a.dtype(), b.dtype());
        if !(da.is_float() && db.is_float()) {
            if da == db {
                return crate::ops::structure::where_any(mask, a, b);
            }
            // One float: the other side takes its dtype; I32 with U32: I32.
            let to = match (da.is_float(), db.is_float()) {
                (true, _) => da,
                (_, true) => db,
                _ => DType::I32,
            };
            return Tensor::where_cond(mask, &a.cast(to)?, &b.cast(to)?);
        }
        let mask = mask.storage();
        let out = Storage::where_cond(&mask, &a.storage(), &b.storage())?;
        Ok(Tensor::record(out, Op::Where { mask }, &[a, b]))
    }

    /// Converts the dtype (`x.to(dtype)`; the same dtype returns `self`).
    /// Differentiable between float dtypes (F32, F16, BF16: the gradient is
    /// converted back); a conversion to or from an integer dtype cuts the
    /// graph, as PyTorch's does. U32 is PyTorch's `bool`: a cast to it is
    /// `x.to(torch.bool)`, 1 wherever `x` is nonzero (NaN included), not a
    /// numeric conversion (the backends' `cast` to U32 truncates).
    pub fn cast(&self, dtype: DType) -> Result<Tensor> {
        let from = self.dtype();
        if dtype == from {
            return Ok(self.clone());
        }
        if dtype == DType::U32 {
            return self.detach().ne_scalar(0.0);
        }
        let out = self.storage().cast(dtype)?;
        if from.is_float() && dtype.is_float() {
            return Ok(Tensor::record(out, Op::Cast { from }, &[self]));
        }
        Ok(Tensor::from_storage_leaf(out))
    }

    /// `x.half()`: [`cast`](Self::cast) to F16.
    pub fn half(&self) -> Result<Tensor> {
        self.cast(DType::F16)
    }

    /// `x.bfloat16()`: [`cast`](Self::cast) to BF16.
    pub fn bfloat16(&self) -> Result<Tensor> {
        self.cast(DType::BF16)
    }

    /// `x.bool()`: [`cast`](Self::cast) to a U32 mask (nonzero is 1).
    pub fn bool(&self) -> Result<Tensor> {
        self.cast(DType::U32)
    }

    /// `x.float()`: [`cast`](Self::cast) to F32.
    pub fn float(&self) -> Result<Tensor> {
        self.cast(DType::F32)
    }

    /// Softmax along `axis`.
    pub fn softmax(&self, axis: isize) -> Result<Tensor> {
        if autocast::is_autocast_enabled() && self.dtype().is_half() {
            return autocast::full_precision(self)?.softmax(axis);
        }
        let out = self.storage().softmax(axis)?;
        Ok(Tensor::record(
            out,
            Op::Softmax { axis, log: false },
            &[self],
        ))
    }

    /// Log-softmax along `axis`.
    pub fn log_softmax(&self, axis: isize) -> Result<Tensor> {
        if autocast::is_autocast_enabled() && self.dtype().is_half() {
            return autocast::full_precision(self)?.log_softmax(axis);
        }
        let out = self.storage().log_softmax(axis)?;
        Ok(Tensor::record(
            out,
            Op::Softmax { axis, log: true },
            &[self],
        ))
    }
}
