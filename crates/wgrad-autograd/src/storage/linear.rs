//! `linear`: the CPU/GPU dispatch point of `F.linear`, the matrix product
//! with its bias added in the same pass (GPU: the matmul kernels' store or
//! the split-K sum; CPU: the GEMM accumulating onto the bias, beta = 1).

use wgrad_core::{DType, Result, UnaryOp};

use super::{Storage, all_cpu, all_gpu, half_compute, mismatch, stray};

impl Storage {
    /// `F.linear(self, weight, bias)`: `self` (`[..., in]`) times
    /// `weight^T` (`weight` `[out, in]`) plus `bias` (`[out]`, or one
    /// value) on every row; a 1-D `self` gives `[out]`. One device. 16-bit
    /// operands are widened, the product and the bias computed in f32 and
    /// the result rounded once, as PyTorch's addmm does; F16 products on
    /// the GPU run on its f16 tensor cores where it has them (exact on
    /// float16 values, as for `matmul_t`).
    pub fn linear(&self, weight: &Storage, bias: Option<&Storage>) -> Result<Storage> {
        self.linear_act(weight, bias, false)
    }

    /// `relu(linear(self, weight, bias))`: on a GPU in the product's own
    /// pass (the ReLU in its store), on the CPU as the two ops; the same
    /// numbers either way.
    pub fn linear_relu(&self, weight: &Storage, bias: Option<&Storage>) -> Result<Storage> {
        self.linear_act(weight, bias, true)
    }

    fn linear_act(&self, weight: &Storage, bias: Option<&Storage>, relu: bool) -> Result<Storage> {
        const OP: &str = "linear";
        let f16_gpu = matches!(
            (self, weight),
            (Storage::Gpu(x), Storage::Gpu(w)) if x.dtype() == DType::F16 && w.dtype() == DType::F16
        );
        // Without a bias, `self` stands in for it (never read).
        let b = bias.unwrap_or(self);
        half_compute::compute([self, weight, b], |[x, w, b]| {
            if let Some([x, w, b]) = all_cpu([x, w, b]) {
                let y = x.linear(w, bias.map(|_| b))?;
                return Ok(Storage::Cpu(if relu { y.unary(UnaryOp::Relu)? } else { y }));
            }
            if let Some([x, w, b]) = all_gpu([x, w, b]) {
                let b = bias.map(|_| b);
                let out = match (f16_gpu, relu) {
                    (true, false) => x.linear_f16_operands(w, b)?,
                    (true, true) => x.linear_relu_f16_operands(w, b)?,
                    (false, false) => x.linear(w, b)?,
                    (false, true) => x.linear_relu(w, b)?,
                };
                return Ok(Storage::Gpu(out));
            }
            Err(mismatch(OP, x, stray(x, &[w, b])))
        })
    }
}
