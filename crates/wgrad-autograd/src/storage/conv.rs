//! Convolution primitives: the CPU/GPU dispatch point of conv2d, its input
//! gradient (also conv_transpose2d) and its weight gradient.

use wgrad_core::checks::conv::{Conv2dArgs, Conv2dGeometry};
use wgrad_core::{BinaryOp, DType, Result, UnaryOp};

use super::{Storage, half_compute, mismatch};

impl Storage {
    /// Forward 2-D convolution without bias (NCHW input, OIHW weight).
    pub fn conv2d(&self, weight: &Storage, args: &Conv2dArgs) -> Result<Storage> {
        half_compute::compute([self, weight], |[x, w]| match (x, w) {
            (Storage::Cpu(x), Storage::Cpu(w)) => Ok(Storage::Cpu(x.conv2d(w, args)?)),
            (Storage::Gpu(x), Storage::Gpu(w)) => Ok(Storage::Gpu(x.conv2d(w, args)?)),
            (x, w) => Err(mismatch("conv2d", x, w)),
        })
    }

    /// [`conv2d`](Self::conv2d) plus `bias` `[C_out]` on channel axis 1: on
    /// a GPU added in the convolution's own store, on the CPU as an add.
    pub fn conv2d_with_bias(
        &self,
        weight: &Storage,
        bias: &Storage,
        args: &Conv2dArgs,
    ) -> Result<Storage> {
        self.conv2d_act(weight, Some(bias), false, args)
    }

    /// `relu(conv2d(self, weight) + bias)`: on a GPU in the convolution's
    /// own pass (the bias and the ReLU in its store), on the CPU as the ops
    /// one by one; the same numbers either way.
    pub fn conv2d_relu(
        &self,
        weight: &Storage,
        bias: Option<&Storage>,
        args: &Conv2dArgs,
    ) -> Result<Storage> {
        self.conv2d_act(weight, bias, true, args)
    }

    fn conv2d_act(
        &self,
        weight: &Storage,
        bias: Option<&Storage>,
        relu: bool,
        args: &Conv2dArgs,
    ) -> Result<Storage> {
        // Without a bias, `self` stands in for it (never read).
        let b = bias.unwrap_or(self);
        half_compute::compute([self, weight, b], |[x, w, b]| match (x, w, b) {
            (Storage::Cpu(x), Storage::Cpu(w), Storage::Cpu(b)) => {
                let mut y = x.conv2d(w, args)?;
                if bias.is_some() {
                    y = y.binary(&b.reshape(&[1, -1, 1, 1])?, BinaryOp::Add)?;
                }
                Ok(Storage::Cpu(if relu { y.unary(UnaryOp::Relu)? } else { y }))
            }
            (Storage::Gpu(x), Storage::Gpu(w), Storage::Gpu(b)) => {
                let b = bias.map(|_| b);
                Ok(Storage::Gpu(if relu {
                    x.conv2d_relu(w, b, args)?
                } else {
                    x.conv2d_with_bias(w, b, args)?
                }))
            }
            (x, w, b) => Err(if x.device().same(&w.device()) {
                mismatch("conv2d", x, b)
            } else {
                mismatch("conv2d", x, w)
            }),
        })
    }

    /// The gradient of a convolution's input given its output gradient
    /// `self` (the forward's adjoint; conv_transpose2d is this op).
    pub fn conv2d_input_grad(
        &self,
        weight: &Storage,
        geometry: &Conv2dGeometry,
    ) -> Result<Storage> {
        half_compute::compute([self, weight], |[g, w]| match (g, w) {
            (Storage::Cpu(g), Storage::Cpu(w)) => Ok(Storage::Cpu(
                wgrad_cpu::CpuTensor::conv2d_input_grad(g, w, geometry)?,
            )),
            (Storage::Gpu(g), Storage::Gpu(w)) => Ok(Storage::Gpu(
                wgrad_gpu::GpuTensor::conv2d_input_grad(g, w, geometry)?,
            )),
            (g, w) => Err(mismatch("conv2d_input_grad", g, w)),
        })
    }

    /// The gradient of a convolution's weight given its input `self` and
    /// output gradient `grad_out`.
    pub fn conv2d_weight_grad(
        &self,
        grad_out: &Storage,
        geometry: &Conv2dGeometry,
    ) -> Result<Storage> {
        half_compute::compute([self, grad_out], |[x, g]| match (x, g) {
            (Storage::Cpu(x), Storage::Cpu(g)) => Ok(Storage::Cpu(
                wgrad_cpu::CpuTensor::conv2d_weight_grad(x, g, geometry)?,
            )),
            (Storage::Gpu(x), Storage::Gpu(g)) => Ok(Storage::Gpu(
                wgrad_gpu::GpuTensor::conv2d_weight_grad(x, g, geometry)?,
            )),
            (x, g) => Err(mismatch("conv2d_weight_grad", x, g)),
        })
    }

    /// [`conv2d_weight_grad`](Self::conv2d_weight_grad) and the bias
    /// gradient (`grad_out` summed over batch and pixels): on a GPU, for
    /// F32 operands, from the weight gradient's own pass.
    pub fn conv2d_weight_and_bias_grad(
        &self,
        grad_out: &Storage,
        geometry: &Conv2dGeometry,
    ) -> Result<(Storage, Storage)> {
        match (self, grad_out) {
            (Storage::Gpu(x), Storage::Gpu(g))
                if x.dtype() == DType::F32 && g.dtype() == DType::F32 =>
            {
                let (w, b) = wgrad_gpu::GpuTensor::conv2d_weight_and_bias_grad(x, g, geometry)?;
                Ok((Storage::Gpu(w), Storage::Gpu(b)))
            }
            _ => Ok((
                self.conv2d_weight_grad(grad_out, geometry)?,
                grad_out.sum(&[0, 2, 3], false)?,
            )),
        }
    }
}
