//! The products of a fused `Linear` + ReLU's backward (`linear_relu`):
//! both take the output gradient through ReLU's gradient first. Rather
//! than a pass writing `g * (out > 0)`, the products read `g` and the
//! layer's output side by side and zero the masked elements as A loads
//! (the kernels' `A_RELU_MASK`), which needs the output laid out as `g`
//! (the usual case: both contiguous); otherwise the mask is applied first.
//! The extra load per A element slows a long product more than a pass
//! costs (H100: the W2 MLP's 1024^3 products, 535 -> 610 us), so only
//! products of at most [`MASK_MACS`] multiply-adds, where the dispatch is
//! the cost, fold it.

/// Largest product (multiply-adds) that folds the mask into its loads.
const MASK_MACS: usize = 1 << 26;

use wgrad_core::precision::{MatmulPrecision, matmul_precision};
use wgrad_core::{Result, UnaryOp, checks};

use super::Extras;
use crate::GpuTensor;

impl GpuTensor {
    /// [`matmul_t`](Self::matmul_t) of `self * relu'(relu_out)` (`relu_out`
    /// a ReLU's output with `self`'s shape: the gradient passes where it is
    /// positive or NaN, as PyTorch's ReLU backward), without writing the
    /// masked gradient.
    pub fn matmul_t_relu_grad(
        &self,
        relu_out: &GpuTensor,
        other: &GpuTensor,
        trans_a: bool,
        trans_b: bool,
    ) -> Result<GpuTensor> {
        const OP: &str = "matmul_t";
        let a = checks::matmul::operand_layout(OP, &self.layout, trans_a)?;
        let b = checks::matmul::operand_layout(OP, &other.layout, trans_b)?;
        let shapes = checks::matmul::matmul(OP, a.shape(), b.shape())?;
        let macs = shapes.batch.iter().product::<usize>() * shapes.m * shapes.n * shapes.k;
        if !self.mask_fits(relu_out) || macs > MASK_MACS {
            let masked = self.unary_backward(relu_out, UnaryOp::Relu)?;
            return masked.matmul_t(other, trans_a, trans_b);
        }
        let extras = Extras {
            a_relu_mask: Some(relu_out),
            ..Extras::default()
        };
        self.product(&a, other, &b, &shapes, OP, extras)
    }

    /// [`matmul_t_with_row_sums`](Self::matmul_t_with_row_sums) of
    /// `self * relu'(relu_out)`, as [`matmul_t_relu_grad`](Self::matmul_t_relu_grad).
    pub fn matmul_t_with_row_sums_relu_grad(
        &self,
        relu_out: &GpuTensor,
        other: &GpuTensor,
        trans_a: bool,
        trans_b: bool,
    ) -> Result<(GpuTensor, GpuTensor)> {
        let a = checks::matmul::operand_layout("matmul_t_with_row_sums", &self.layout, trans_a)?;
        let b = checks::matmul::operand_layout("matmul_t_with_row_sums", &other.layout, trans_b)?;
        let shapes = checks::matmul::matmul("matmul_t_with_row_sums", a.shape(), b.shape())?;
        if !self.mask_fits(relu_out) || shapes.m * shapes.n * shapes.k > MASK_MACS {
            let masked = self.unary_backward(relu_out, UnaryOp::Relu)?;
            return masked.matmul_t_with_row_sums(other, trans_a, trans_b);
        }
        self.row_sums_product(other, trans_a, trans_b, Some(relu_out))
    }

    /// [`matmul_t`](Self::matmul_t) through ReLU's gradient at `relu_out`:
    /// each output is kept where `relu_out` (a ReLU's output) is positive
    /// or NaN and zeroed where it is +0.0, in the product's store, so that
    /// the ReLU's backward has nothing left to do (`x -> linear_relu -> h
    /// -> linear`: `dh = g W` already masked). `None` (nothing recorded)
    /// where it does not fold: `relu_out` not a contiguous F32 tensor of
    /// the product's shape on this device, or under
    /// `set_float32_matmul_precision("medium")`, where products may run on
    /// the tensor cores, which have no such epilogue.
    pub fn matmul_t_masked_by_relu(
        &self,
        other: &GpuTensor,
        trans_a: bool,
        trans_b: bool,
        relu_out: &GpuTensor,
    ) -> Result<Option<GpuTensor>> {
        const OP: &str = "matmul_t";
        let a = checks::matmul::operand_layout(OP, &self.layout, trans_a)?;
        let b = checks::matmul::operand_layout(OP, &other.layout, trans_b)?;
        let shapes = checks::matmul::matmul(OP, a.shape(), b.shape())?;
        let folds = matmul_precision() != MatmulPrecision::Medium
            && self.device().same_device(relu_out.device())
            && relu_out.dtype == wgrad_core::DType::F32
            && self.dtype == wgrad_core::DType::F32
            && relu_out.layout.is_contiguous()
            && relu_out.shape() == shapes.out.as_slice();
        if !folds {
            return Ok(None);
        }
        let extras = Extras {
            out_relu_mask: Some(relu_out),
            ..Extras::default()
        };
        self.product(&a, other, &b, &shapes, OP, extras).map(Some)
    }

    /// Whether [`matmul_t_relu_grad`](Self::matmul_t_relu_grad) folds
    /// `relu_out`'s mask into a product of `macs` multiply-adds rather than
    /// masking `self` in a pass of its own: a caller with two products of
    /// one gradient (a layer's input and weight gradients) masks once for
    /// both where it would not.
    pub fn relu_grad_folds(&self, relu_out: &GpuTensor, macs: usize) -> bool {
        self.mask_fits(relu_out) && macs <= MASK_MACS
    }

    /// Whether `mask` can be read at A's own indices: F32 on this device,
    /// with this view's shape, strides and offset.
    fn mask_fits(&self, mask: &GpuTensor) -> bool {
        self.device().same_device(mask.device())
            && mask.dtype == wgrad_core::DType::F32
            && self.dtype == wgrad_core::DType::F32
            && mask.layout == self.layout
    }
}
