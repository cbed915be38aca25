//! `linear` (`F.linear`, PyTorch's addmm): the product `x @ weight^T` with
//! the bias added in the matmul kernels' store, or in the split-K sum, so
//! no second pass over the output reads it back.

use wgrad_core::{DType, Layout, Result, checks};

use super::{Extras, Force, Kernel};
use crate::GpuTensor;

impl GpuTensor {
    /// `F.linear(x, weight, bias)`: `self` (`[..., in]`) times `weight^T`
    /// (`weight` `[out, in]`, read through swapped strides, never copied)
    /// plus `bias` (`[out]`, or one value) on every row; a 1-D `self`
    /// gives `[out]`. All F32 on one device; shapes as
    /// `wgrad_core::checks::matmul::linear`. One dispatch (two with split
    /// K); each output is the product's f32 sum plus the bias, rounded
    /// once, bit-identical to [`matmul_t`](Self::matmul_t) then `add` of
    /// the same product. The leading dims of `self` are folded into the
    /// rows of one product where its strides allow, else they are a batch
    /// that the weight broadcasts over.
    pub fn linear(&self, weight: &GpuTensor, bias: Option<&GpuTensor>) -> Result<GpuTensor> {
        self.linear_forced(weight, bias, None, false, false)
    }

    /// `relu(linear(self, weight, bias))` in the product's own pass: the
    /// ReLU applied in the store after the bias (or in the split-K sum),
    /// bit-identical to [`linear`](Self::linear) then `unary(Relu)`. A
    /// `Linear` followed by a `ReLU` in a `Sequential` runs as this.
    pub fn linear_relu(&self, weight: &GpuTensor, bias: Option<&GpuTensor>) -> Result<GpuTensor> {
        self.linear_forced(weight, bias, None, false, true)
    }

    /// [`linear_relu`](Self::linear_relu) of widened F16 operands (see
    /// [`linear_f16_operands`](Self::linear_f16_operands)).
    pub fn linear_relu_f16_operands(
        &self,
        weight: &GpuTensor,
        bias: Option<&GpuTensor>,
    ) -> Result<GpuTensor> {
        self.linear_forced(weight, bias, None, true, true)
    }

    /// [`linear_relu`](Self::linear_relu) with the kernel and split count
    /// forced, as [`linear_variant`](Self::linear_variant).
    #[doc(hidden)]
    pub fn linear_relu_variant(
        &self,
        weight: &GpuTensor,
        bias: Option<&GpuTensor>,
        kernel: &str,
        splits: usize,
    ) -> Result<GpuTensor> {
        let kernel = Kernel::by_name(kernel)?;
        self.linear_forced(weight, bias, Some((kernel, splits)), false, true)
    }

    /// [`linear`](Self::linear) of F32 operands whose `self` and `weight`
    /// values are all float16 values (widened F16 tensors), so large
    /// products may run on the f16 tensor cores whatever the matmul
    /// precision, as [`matmul_t_f16_operands`](Self::matmul_t_f16_operands).
    pub fn linear_f16_operands(
        &self,
        weight: &GpuTensor,
        bias: Option<&GpuTensor>,
    ) -> Result<GpuTensor> {
        self.linear_forced(weight, bias, None, true, false)
    }

    /// [`linear`](Self::linear) with the kernel and/or split count forced,
    /// as [`matmul_t_variant`](Self::matmul_t_variant) takes them.
    #[doc(hidden)]
    pub fn linear_variant(
        &self,
        weight: &GpuTensor,
        bias: Option<&GpuTensor>,
        kernel: &str,
        splits: usize,
    ) -> Result<GpuTensor> {
        let kernel = Kernel::by_name(kernel)?;
        self.linear_forced(weight, bias, Some((kernel, splits)), false, false)
    }

    fn linear_forced(
        &self,
        weight: &GpuTensor,
        bias: Option<&GpuTensor>,
        force: Force,
        f16_operands: bool,
        relu: bool,
    ) -> Result<GpuTensor> {
        const OP: &str = "linear";
        self.same_device(OP, weight)?;
        self.expect_dtype(OP, DType::F32)?;
        weight.expect_dtype(OP, DType::F32)?;
        if let Some(b) = bias {
            self.same_device(OP, b)?;
            b.expect_dtype(OP, DType::F32)?;
        }
        let shape =
            checks::matmul::linear(OP, self.shape(), weight.shape(), bias.map(|b| b.shape()))?;
        let a = checks::matmul::linear_input(&self.layout)?;
        let b = weight.layout.transpose(-1, -2)?;
        let shapes = checks::matmul::matmul(OP, a.shape(), b.shape())?;
        let bias = bias
            .map(|t| Ok::<_, wgrad_core::Error>(t.with_layout(t.layout.expand(&[shape.n])?)))
            .transpose()?;
        let extras = Extras {
            force,
            f16_operands,
            bias: bias.as_ref(),
            row_sums: false,
            relu,
            ..Extras::default()
        };
        let out = self.product(&a, weight, &b, &shapes, OP, extras)?;
        // The product's contiguous [rows, out] (or [batch.., rows, out]) is
        // [..., out] in order.
        Ok(out.with_layout(Layout::contiguous(&shape.out)))
    }
}
