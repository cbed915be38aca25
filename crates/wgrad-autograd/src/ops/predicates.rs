//! Floating-point predicates (`isnan`, `isinf`, `isfinite`) and
//! `nan_to_num`, composed from comparisons and `where` on the tensor's
//! device.

use wgrad_core::{CompareOp, DType, Result};

use crate::tensor::Tensor;

/// The largest finite value of `dtype` (PyTorch's `finfo(dtype).max`).
fn finite_max(dtype: DType) -> f64 {
    match dtype {
        DType::F16 => f64::from(half::f16::MAX.to_f32()),
        DType::BF16 => f64::from(half::bf16::MAX.to_f32()),
        _ => f64::from(f32::MAX),
    }
}

/// Predicates on float values and `nan_to_num`.
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// let x = Tensor::from_vec(vec![1.0f32, f32::NAN, f32::INFINITY, -f32::INFINITY], &[4], &Device::Cpu)?;
/// assert_eq!(x.isnan()?.to_vec::<u32>()?, [0, 1, 0, 0]);
/// assert_eq!(x.isinf()?.to_vec::<u32>()?, [0, 0, 1, 1]);
/// assert_eq!(x.isfinite()?.to_vec::<u32>()?, [1, 0, 0, 0]);
/// let y = x.nan_to_num(0.0, None, Some(-1.0))?;
/// assert_eq!(y.to_vec_f32()?, [1.0, 0.0, f32::MAX, -1.0]);
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
impl Tensor {
    /// `torch.isnan`: a U32 mask, 1 where the element is NaN (all 0 for
    /// integer tensors). Not differentiable.
    pub fn isnan(&self) -> Result<Tensor> {
        if !self.dtype().is_float() {
            return Tensor::full(&self.shape(), 0.0, DType::U32, &self.device());
        }
        let x = self.detach();
        x.compare(&x, CompareOp::Ne)
    }

    /// `torch.isinf`: a U32 mask, 1 where the element is +inf or -inf (all
    /// 0 for integer tensors).
    pub fn isinf(&self) -> Result<Tensor> {
        if !self.dtype().is_float() {
            return Tensor::full(&self.shape(), 0.0, DType::U32, &self.device());
        }
        self.detach().abs()?.eq_scalar(f32::INFINITY)
    }

    /// `torch.isfinite`: a U32 mask, 1 where the element is neither NaN
    /// nor infinite (all 1 for integer tensors).
    pub fn isfinite(&self) -> Result<Tensor> {
        if !self.dtype().is_float() {
            return Tensor::full(&self.shape(), 1.0, DType::U32, &self.device());
        }
        self.detach().abs()?.lt_scalar(f32::INFINITY)
    }

    /// `torch.nan_to_num(x, nan, posinf, neginf)`: NaN becomes `nan`
    /// (PyTorch's default 0.0), +inf `posinf` and -inf `neginf` (by default
    /// the dtype's largest and lowest finite values); each is converted to
    /// the tensor's dtype. Integer tensors come back unchanged. The
    /// gradient passes where the value is kept and is 0 where replaced.
    pub fn nan_to_num(&self, nan: f64, posinf: Option<f64>, neginf: Option<f64>) -> Result<Tensor> {
        let dtype = self.dtype();
        if !dtype.is_float() {
            return Ok(self.clone());
        }
        let device = self.device();
        let max = finite_max(dtype);
        let value = |v: f64| Tensor::full(&[], v, dtype, &device);
        let pos = value(posinf.unwrap_or(max))?;
        let neg = value(neginf.unwrap_or(-max))?;
        let is_pos = self.detach().eq_scalar(f32::INFINITY)?;
        let is_neg = self.detach().eq_scalar(f32::NEG_INFINITY)?;
        let out = Tensor::where_cond(&self.isnan()?, &value(nan)?, self)?;
        let out = Tensor::where_cond(&is_pos, &pos, &out)?;
        Tensor::where_cond(&is_neg, &neg, &out)
    }
}
