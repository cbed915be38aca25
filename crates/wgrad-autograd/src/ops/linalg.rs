//! Matrix products.

use wgrad_core::{Error, Result};

use crate::autocast::{self, AutocastGuard, lower_precision};
use crate::graph::Op;
use crate::tensor::Tensor;

/// Matrix products: `matmul` (`torch.matmul`, `@`: 1-D operands promoted,
/// batch dims broadcast) and `matmul_t`, which transposes either operand
/// for free (strides).
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// let cpu = Device::Cpu;
/// let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2], &cpu)?;
/// let b = Tensor::from_vec(vec![1.0f32, 0.0, 0.0, 2.0], &[2, 2], &cpu)?;
/// assert_eq!(a.matmul(&b)?.to_vec_f32()?, [1.0, 4.0, 3.0, 8.0]);
/// // a @ b.T without copying b.
/// assert_eq!(a.matmul_t(&b, false, true)?.to_vec_f32()?, [1.0, 4.0, 3.0, 8.0]);
/// // Matrix @ vector, and a batch of matrices @ one matrix.
/// let v = Tensor::from_vec(vec![1.0f32, 1.0], &[2], &cpu)?;
/// assert_eq!(a.matmul(&v)?.to_vec_f32()?, [3.0, 7.0]);
/// let batch = Tensor::ones(&[5, 3, 2], &cpu)?;
/// assert_eq!(batch.matmul(&a)?.shape(), [5, 3, 2]);
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
impl Tensor {
    /// `torch.matmul`: 1-D operands are promoted and the added dim removed;
    /// batch dims broadcast.
    pub fn matmul(&self, other: &Tensor) -> Result<Tensor> {
        let (ra, rb) = (self.rank(), other.rank());
        if ra == 0 || rb == 0 {
            return Err(Error::invalid(
                "matmul",
                format!(
                    "both operands need at least 1 dim, got shapes {:?} and {:?}",
                    self.shape(),
                    other.shape()
                ),
            ));
        }
        let a = if ra == 1 {
            self.unsqueeze(0)?
        } else {
            self.clone()
        };
        let b = if rb == 1 {
            other.unsqueeze(-1)?
        } else {
            other.clone()
        };
        let mut out = a.matmul_t(&b, false, false)?;
        // The promoted row dim goes first: counted from the end it is -2
        // only while the promoted column dim is still there (1-D @ 1-D
        // gives [1, 1] and must end as a 0-d tensor).
        if ra == 1 {
            out = out.squeeze(-2)?;
        }
        if rb == 1 {
            out = out.squeeze(-1)?;
        }
        Ok(out)
    }

    /// `op(self) @ op(other)` where `op` transposes the last two dims when
    /// its flag is set (free: strides only). Both operands rank >= 2.
    pub fn matmul_t(&self, other: &Tensor, trans_a: bool, trans_b: bool) -> Result<Tensor> {
        if autocast::is_autocast_enabled() {
            let (a, b) = (lower_precision(self)?, lower_precision(other)?);
            let _plain = AutocastGuard::disabled();
            return a.matmul_t(&b, trans_a, trans_b);
        }
        if self.rank() < 2 || other.rank() < 2 {
            return Err(Error::invalid(
                "matmul_t",
                format!(
                    "operands need rank >= 2, got shapes {:?} and {:?}",
                    self.shape(),
                    other.shape()
                ),
            ));
        }
        let out = self
            .storage()
            .matmul_t(&other.storage(), trans_a, trans_b)?;
        Ok(Tensor::record(
            out,
            Op::MatmulT { trans_a, trans_b },
            &[self, other],
        ))
    }
}
