//! Pooling primitives: the CPU/GPU dispatch point of max, average and
//! adaptive-average 2-D pooling and their backward passes.

use wgrad_core::Result;
use wgrad_core::checks::pool::Pool2dArgs;

use super::{Storage, half_compute, mismatch};

impl Storage {
    /// Window maxima and their I32 flat indices `h*W + w` in the input plane.
    pub fn max_pool2d(&self, args: &Pool2dArgs) -> Result<(Storage, Storage)> {
        half_compute::compute2(self, |x| {
            Ok(match x {
                Storage::Cpu(x) => {
                    let (v, i) = x.max_pool2d(args)?;
                    (Storage::Cpu(v), Storage::Cpu(i))
                }
                Storage::Gpu(x) => {
                    let (v, i) = x.max_pool2d(args)?;
                    (Storage::Gpu(v), Storage::Gpu(i))
                }
            })
        })
    }

    /// The input gradient of max pooling, `self` being the output gradient.
    pub fn max_pool2d_backward(
        &self,
        indices: &Storage,
        input_shape: &[usize],
        args: &Pool2dArgs,
    ) -> Result<Storage> {
        half_compute::compute([self, indices], |[g, i]| match (g, i) {
            (Storage::Cpu(g), Storage::Cpu(i)) => {
                Ok(Storage::Cpu(g.max_pool2d_backward(i, input_shape, args)?))
            }
            (Storage::Gpu(g), Storage::Gpu(i)) => {
                Ok(Storage::Gpu(g.max_pool2d_backward(i, input_shape, args)?))
            }
            (g, i) => Err(mismatch("max_pool2d_backward", g, i)),
        })
    }

    /// Average pooling (PyTorch's divisor rules).
    pub fn avg_pool2d(
        &self,
        args: &Pool2dArgs,
        count_include_pad: bool,
        divisor_override: Option<usize>,
    ) -> Result<Storage> {
        half_compute::compute([self], |[x]| match x {
            Storage::Cpu(x) => Ok(Storage::Cpu(x.avg_pool2d(
                args,
                count_include_pad,
                divisor_override,
            )?)),
            Storage::Gpu(x) => Ok(Storage::Gpu(x.avg_pool2d(
                args,
                count_include_pad,
                divisor_override,
            )?)),
        })
    }

    /// The input gradient of average pooling, `self` being the output gradient.
    pub fn avg_pool2d_backward(
        &self,
        input_shape: &[usize],
        args: &Pool2dArgs,
        count_include_pad: bool,
        divisor_override: Option<usize>,
    ) -> Result<Storage> {
        half_compute::compute([self], |[x]| match x {
            Storage::Cpu(g) => Ok(Storage::Cpu(g.avg_pool2d_backward(
                input_shape,
                args,
                count_include_pad,
                divisor_override,
            )?)),
            Storage::Gpu(g) => Ok(Storage::Gpu(g.avg_pool2d_backward(
                input_shape,
                args,
                count_include_pad,
                divisor_override,
            )?)),
        })
    }

    /// Adaptive average pooling to `output_hw`.
    pub fn adaptive_avg_pool2d(&self, output_hw: [usize; 2]) -> Result<Storage> {
        half_compute::compute([self], |[x]| match x {
            Storage::Cpu(x) => Ok(Storage::Cpu(x.adaptive_avg_pool2d(output_hw)?)),
            Storage::Gpu(x) => Ok(Storage::Gpu(x.adaptive_avg_pool2d(output_hw)?)),
        })
    }

    /// The input gradient of adaptive average pooling.
    pub fn adaptive_avg_pool2d_backward(&self, input_shape: &[usize]) -> Result<Storage> {
        half_compute::compute([self], |[x]| match x {
            Storage::Cpu(g) => Ok(Storage::Cpu(g.adaptive_avg_pool2d_backward(input_shape)?)),
            Storage::Gpu(g) => Ok(Storage::Gpu(g.adaptive_avg_pool2d_backward(input_shape)?)),
        })
    }
}
