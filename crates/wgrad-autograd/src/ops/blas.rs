//! BLAS-style product shorthands of `torch`: `outer`, `dot`, `mv`, `bmm`,
//! `addmm`, `baddbmm`, composed from `matmul`, broadcasting `mul` and the
//! scalar ops, with PyTorch's rank and shape checks and messages.

use wgrad_core::{DType, Error, Result, shape};

use crate::tensor::Tensor;

fn expect_rank(op: &'static str, what: &str, t: &Tensor, rank: usize) -> Result<()> {
    if t.rank() == rank {
        Ok(())
    } else {
        Err(Error::invalid(
            op,
            format!(
                "expected {what} to be a {rank}-D tensor, but got a {}-D tensor of shape {:?}",
                t.rank(),
                t.shape()
            ),
        ))
    }
}

fn same_dtype(op: &'static str, a: &Tensor, b: &Tensor) -> Result<()> {
    if a.dtype() == b.dtype() {
        Ok(())
    } else {
        Err(Error::invalid(
            op,
            format!(
                "expected both operands to have the same dtype, but found {} and {}",
                a.dtype(),
                b.dtype()
            ),
        ))
    }
}

/// `beta * input + alpha * product`, the product of `rows x cols` already
/// made: `input` broadcasts to the product's shape (PyTorch's in-place
/// `expand`, so it may not enlarge it); `beta == 0` ignores `input`'s
/// values (NaN included) but keeps it in the graph with a zero gradient.
fn scaled_sum(
    op: &'static str,
    input: &Tensor,
    product: &Tensor,
    beta: f64,
    alpha: f64,
) -> Result<Tensor> {
    let out_shape = product.shape().to_vec();
    let joint = shape::broadcast_shapes(op, &input.shape(), &out_shape).ok();
    if joint.as_deref() != Some(&out_shape[..]) {
        return Err(Error::invalid(
            op,
            format!(
                "the input of shape {:?} cannot be broadcast to the product's shape {out_shape:?}",
                input.shape()
            ),
        ));
    }
    let scaled = if alpha == 1.0 {
        product.clone()
    } else {
        product.mul_scalar(alpha as f32)?
    };
    if beta == 0.0 {
        // PyTorch ignores `input` when beta is 0 (NaN and inf do not
        // propagate); `where` with a false mask gives 0 and a 0 gradient.
        let never = Tensor::full(&[], 0.0, DType::U32, &input.device())?;
        let zero = Tensor::full(&[], 0.0, input.dtype(), &input.device())?;
        let ignored = Tensor::where_cond(&never, input, &zero)?;
        return scaled.add(&ignored);
    }
    let input = if beta == 1.0 {
        input.clone()
    } else {
        input.mul_scalar(beta as f32)?
    };
    input.add(&scaled)?.expand(&out_shape)
}

/// Product shorthands: `outer`, `dot`, `mv`, `bmm`, and the fused-form
/// `addmm`/`baddbmm` (`beta * input + alpha * (mat1 @ mat2)`).
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// let cpu = Device::Cpu;
/// let a = Tensor::from_vec(vec![1.0f32, 2.0], &[2], &cpu)?;
/// let b = Tensor::from_vec(vec![3.0f32, 4.0, 5.0], &[3], &cpu)?;
/// assert_eq!(a.outer(&b)?.to_vec_f32()?, [3.0, 4.0, 5.0, 6.0, 8.0, 10.0]);
/// assert_eq!(a.dot(&a)?.item()?, 5.0);
/// let m = Tensor::ones(&[3, 2], &cpu)?;
/// assert_eq!(m.mv(&a)?.to_vec_f32()?, [3.0, 3.0, 3.0]);
/// let c = Tensor::zeros(&[3, 3], &cpu)?;
/// assert_eq!(c.addmm(&m, &m.t()?, 0.5, 2.0)?.to_vec_f32()?, [4.0; 9]);
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
impl Tensor {
    /// `torch.outer(a, b)`: the `[n, m]` outer product of two 1-D tensors
    /// (`a[:, None] * b`, so dtypes promote as `mul`'s).
    pub fn outer(&self, vec2: &Tensor) -> Result<Tensor> {
        const OP: &str = "outer";
        for (what, t) in [("self", self), ("vec2", vec2)] {
            if t.rank() != 1 {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "outer: Expected 1-D argument {what}, but got {}-D (shape {:?})",
                        t.rank(),
                        t.shape()
                    ),
                ));
            }
        }
        self.unsqueeze(1)?.mul(vec2)
    }

    /// `torch.dot(a, b)`: the 0-d inner product of two 1-D tensors of the
    /// same length and dtype (PyTorch rejects other ranks, lengths and
    /// mixed dtypes). I32 sums wrap.
    pub fn dot(&self, other: &Tensor) -> Result<Tensor> {
        const OP: &str = "dot";
        if self.rank() != 1 || other.rank() != 1 {
            return Err(Error::invalid(
                OP,
                format!(
                    "1D tensors expected, but got {}D and {}D tensors",
                    self.rank(),
                    other.rank()
                ),
            ));
        }
        same_dtype(OP, self, other)?;
        let (n, m) = (self.numel(), other.numel());
        if n != m {
            return Err(Error::invalid(
                OP,
                format!(
                    "inconsistent tensor size, expected tensor [{n}] and src [{m}] to have the \
                     same number of elements, but got {n} and {m} elements respectively"
                ),
            ));
        }
        if self.dtype().is_float() {
            self.matmul(other)
        } else {
            self.mul(other)?.sum_all()
        }
    }

    /// `torch.mv(mat, vec)`: a `[n, m]` matrix times a `[m]` vector, `[n]`.
    pub fn mv(&self, vec: &Tensor) -> Result<Tensor> {
        const OP: &str = "mv";
        if self.rank() != 2 || vec.rank() != 1 {
            return Err(Error::invalid(
                OP,
                format!(
                    "vector + matrix @ vector expected, got a {}-D matrix and a {}-D vector",
                    self.rank(),
                    vec.rank()
                ),
            ));
        }
        same_dtype(OP, self, vec)?;
        if self.shape()[1] != vec.shape()[0] {
            return Err(Error::invalid(
                OP,
                format!(
                    "size mismatch, got mat ({}x{}), vec ({})",
                    self.shape()[0],
                    self.shape()[1],
                    vec.shape()[0]
                ),
            ));
        }
        self.matmul(vec)
    }

    /// `torch.bmm(b1, b2)`: batched products of `[b, n, m]` and `[b, m, p]`
    /// (no broadcasting), `[b, n, p]`.
    pub fn bmm(&self, mat2: &Tensor) -> Result<Tensor> {
        self.check_bmm("bmm", mat2)?;
        self.matmul(mat2)
    }

    fn check_bmm(&self, op: &'static str, mat2: &Tensor) -> Result<()> {
        expect_rank(op, "batch1", self, 3)?;
        expect_rank(op, "batch2", mat2, 3)?;
        same_dtype(op, self, mat2)?;
        let (a, b) = (self.shape(), mat2.shape());
        if b[0] != a[0] || b[1] != a[2] {
            return Err(Error::invalid(
                op,
                format!(
                    "Expected size for first two dimensions of batch2 tensor to be: [{}, {}] but \
                     got: [{}, {}] (batch1 {:?}, batch2 {:?})",
                    a[0],
                    a[2],
                    b[0],
                    b[1],
                    &a[..],
                    &b[..]
                ),
            ));
        }
        Ok(())
    }

    /// `torch.addmm(input, mat1, mat2, beta=beta, alpha=alpha)`:
    /// `beta * input + alpha * (mat1 @ mat2)` with `input` broadcast to the
    /// `[n, p]` product. With `beta == 0`, `input` is ignored (NaN in it
    /// does not propagate), as in PyTorch. PyTorch's defaults are
    /// `beta = 1, alpha = 1`.
    pub fn addmm(&self, mat1: &Tensor, mat2: &Tensor, beta: f64, alpha: f64) -> Result<Tensor> {
        const OP: &str = "addmm";
        expect_rank(OP, "mat1", mat1, 2)?;
        expect_rank(OP, "mat2", mat2, 2)?;
        same_dtype(OP, mat1, mat2)?;
        let (a, b) = (mat1.shape(), mat2.shape());
        if a[1] != b[0] {
            return Err(Error::invalid(
                OP,
                format!(
                    "mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})",
                    a[0], a[1], b[0], b[1]
                ),
            ));
        }
        same_dtype(OP, self, mat1)?;
        scaled_sum(OP, self, &mat1.matmul(mat2)?, beta, alpha)
    }

    /// `torch.baddbmm(input, batch1, batch2, beta=beta, alpha=alpha)`:
    /// `beta * input + alpha * bmm(batch1, batch2)`, `input` broadcast to
    /// the `[b, n, p]` product (see [`addmm`](Self::addmm)).
    pub fn baddbmm(
        &self,
        batch1: &Tensor,
        batch2: &Tensor,
        beta: f64,
        alpha: f64,
    ) -> Result<Tensor> {
        const OP: &str = "baddbmm";
        batch1.check_bmm(OP, batch2)?;
        same_dtype(OP, self, batch1)?;
        scaled_sum(OP, self, &batch1.matmul(batch2)?, beta, alpha)
    }
}
