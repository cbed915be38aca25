//! `linear` (`torch.nn.functional.linear`): `x @ weight^T + bias` as one
//! node, the bias added in the product's own pass ([`Storage::linear`]),
//! and its backward rule.

use wgrad_core::{DType, Result, UnaryOp, checks};

use crate::autocast::{self, AutocastGuard, lower_opt, lower_precision};
use crate::graph::Op;
use crate::storage::Storage;
use crate::tensor::Tensor;

const OP: &str = "linear";

impl Tensor {
    /// `F.linear(x, weight, bias)` (PyTorch's addmm): `self` (`[..., in]`,
    /// any leading dims; a 1-D `[in]` gives `[out]`) times `weight^T`
    /// (`weight` `[out_features, in_features]`, never copied) plus `bias`
    /// (`[out_features]`, or one value that broadcasts) on every row. One
    /// graph node; the bias is added in the product's own pass on either
    /// device rather than by a second pass over the output. The operands
    /// share one float dtype (F32, F16 or BF16), as PyTorch requires;
    /// under autocast all of them go to the region's dtype. Wrong
    /// in-features, a bias of the wrong length, mixed dtypes or devices are
    /// errors naming the op and the shapes.
    /// [`Linear`](../wgrad_nn/struct.Linear.html) is this with learned
    /// parameters.
    ///
    /// ```
    /// use wgrad_autograd::{Device, Tensor};
    /// let cpu = Device::Cpu;
    /// let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2], &cpu)?;
    /// let w = Tensor::from_vec(vec![1.0f32, 0.0, 1.0, 1.0, 0.0, 2.0], &[3, 2], &cpu)?;
    /// let b = Tensor::from_vec(vec![0.5f32, 0.0, -1.0], &[3], &cpu)?;
    /// let y = x.linear(&w, Some(&b))?; // x @ w.T + b
    /// assert_eq!(y.to_vec_f32()?, [1.5, 3.0, 3.0, 3.5, 7.0, 7.0]);
    /// assert_eq!(x.linear(&w, None)?.shape(), [2, 3]);
    /// // One sample: [in] -> [out].
    /// let v = Tensor::from_vec(vec![1.0f32, 1.0], &[2], &cpu)?;
    /// assert_eq!(v.linear(&w, Some(&b))?.to_vec_f32()?, [1.5, 2.0, 1.0]);
    /// # Ok::<(), wgrad_autograd::Error>(())
    /// ```
    pub fn linear(&self, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
        self.linear_act(weight, bias, false)
    }

    /// `relu(linear(x, weight, bias))` as one graph node: on a GPU the ReLU
    /// runs in the product's own pass (no pass over the output of its
    /// own), with the numbers of the two ops on either device. What a
    /// `Sequential`'s `Linear` followed by `ReLU` runs.
    pub fn linear_relu(&self, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
        self.linear_act(weight, bias, true)
    }

    fn linear_act(&self, weight: &Tensor, bias: Option<&Tensor>, relu: bool) -> Result<Tensor> {
        if autocast::is_autocast_enabled() {
            // CUDA autocast's lower-precision list: input, weight and bias.
            let (x, w, b) = (
                lower_precision(self)?,
                lower_precision(weight)?,
                lower_opt(bias)?,
            );
            let _plain = AutocastGuard::disabled();
            return x.linear_act(&w, b.as_ref(), relu);
        }
        checks::matmul::linear_dtypes(OP, self.dtype(), weight.dtype(), bias.map(Tensor::dtype))?;
        let bias_shape = bias.map(Tensor::shape);
        if weight.rank() != 2 || bias_shape.as_ref().is_some_and(|b| b.len() > 1) {
            let y = self.linear_composite(weight, bias)?;
            return if relu { y.relu() } else { Ok(y) };
        }
        checks::matmul::linear(OP, &self.shape(), &weight.shape(), bias_shape.as_deref())?;
        let (w, b) = (weight.storage(), bias.map(Tensor::storage));
        let out = if relu {
            self.storage().linear_relu(&w, b.as_ref())?
        } else {
            self.storage().linear(&w, b.as_ref())?
        };
        let mut inputs = vec![self, weight];
        inputs.extend(bias);
        Ok(Tensor::record(out, Op::Linear { relu }, &inputs))
    }

    /// The calls the fused node does not take, as ATen's `linear` writes
    /// them: a 1-D weight (`x @ weight`, the last dim contracted away) or a
    /// bias of rank 2 or more. `matmul(x, weight^T)` and then the bias
    /// added in place, so the bias must broadcast to the product's shape
    /// without enlarging it (PyTorch's `output.add_(bias)`).
    fn linear_composite(&self, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
        let weight_t = match weight.rank() {
            1 => weight.clone(),
            2 => weight.t()?,
            _ => {
                return Err(wgrad_core::Error::invalid(
                    OP,
                    format!(
                        "weight must be 1-D or 2-D [out_features, in_features], got shape {:?}",
                        weight.shape()
                    ),
                ));
            }
        };
        // in_features is the weight's last dim, 1-D or 2-D.
        let (x_shape, w_shape) = (self.shape(), weight.shape());
        if x_shape.last() != w_shape.last() {
            return Err(wgrad_core::Error::invalid(
                OP,
                format!(
                    "input {x_shape:?} and weight {w_shape:?} cannot be multiplied: the \
                     input's last dim must equal the weight's in_features (its last dim)"
                ),
            ));
        }
        let product = self.matmul(&weight_t)?;
        let Some(bias) = bias else {
            return Ok(product);
        };
        let out_shape = product.shape();
        let broadcast = wgrad_core::shape::broadcast_shapes(OP, &out_shape, &bias.shape());
        if broadcast.as_deref().ok() != Some(out_shape.as_slice()) {
            return Err(wgrad_core::Error::invalid(
                OP,
                format!(
                    "bias of shape {:?} does not broadcast to the output's shape {out_shape:?}",
                    bias.shape()
                ),
            ));
        }
        product.add(bias)
    }
}

/// The gradients of a `linear` node's inputs `[x, weight, bias?]` (`input`
/// reads input `i` as the forward saw it) from the output gradient `g`
/// (`[..., out]`), each only where that input requires grad, on `g`'s
/// device through the existing products and sums: `dx = g @ weight`,
/// `dweight = g^T @ x` over every row (the leading dims folded into one
/// product), `dbias = g` summed over all but its last dim (on a GPU, by
/// that same product: `matmul_t_with_row_sums`). With `relu_out` (a fused
/// `linear_relu`'s output) `g` first goes through ReLU's gradient: on a
/// GPU inside those products' loads, elsewhere as a pass of its own.
/// With `dx_relu_mask` (`x` the output of a fused `linear_relu`), `dx`
/// may come out through that ReLU's gradient too, made in the product's
/// store; the returned flag says whether it did.
pub(crate) fn linear_grads(
    g: &Storage,
    relu_out: Option<&Storage>,
    dx_relu_mask: Option<&Storage>,
    input: &dyn Fn(usize) -> Result<Storage>,
    inputs: &[Tensor],
) -> Result<(Vec<Option<Storage>>, bool)> {
    let needs = |i: usize| inputs.get(i).is_some_and(Tensor::requires_grad);
    // The GPU folds the mask into the products (F32 operands); any other
    // case masks g first and proceeds as an unfused linear.
    // Both products (g W and g^T x) have g.numel() x in_features
    // multiply-adds; where the GPU would not fold the mask into them, g is
    // masked once below instead of once per product.
    let in_features = inputs
        .get(1)
        .and_then(|w| w.shape().last().copied())
        .unwrap_or(1);
    let gpu_mask = match (g, relu_out) {
        (Storage::Gpu(gg), Some(Storage::Gpu(out)))
            if gg.dtype() == DType::F32
                && out.dtype() == DType::F32
                && gg.relu_grad_folds(out, gg.numel() * in_features) =>
        {
            Some(out.clone())
        }
        _ => None,
    };
    let masked;
    let g = match relu_out {
        Some(out) if gpu_mask.is_none() => {
            masked = g.unary_backward(out, UnaryOp::Relu)?;
            &masked
        }
        _ => g,
    };
    let mut dx_masked = false;
    let dx = if needs(0) {
        let w = input(1)?;
        let premasked = match (g, &w, &gpu_mask, dx_relu_mask) {
            (Storage::Gpu(gg), Storage::Gpu(w), None, Some(Storage::Gpu(h))) => {
                gg.matmul_t_masked_by_relu(w, false, false, h)?
            }
            _ => None,
        };
        dx_masked = premasked.is_some();
        match (premasked, g, &w, &gpu_mask) {
            (Some(dx), ..) => Some(Storage::Gpu(dx)),
            (None, Storage::Gpu(gg), Storage::Gpu(w), Some(out)) => {
                Some(Storage::Gpu(gg.matmul_t_relu_grad(out, w, false, false)?))
            }
            _ => Some(g.matmul_t(&w, false, false)?),
        }
    } else {
        None
    };
    let n = g.shape().last().copied().unwrap_or(1);
    let mut db = None;
    let dw = if needs(1) {
        let x = input(0)?;
        let (rows, k) = match x.shape().split_last() {
            Some((&k, lead)) => (lead.iter().product::<usize>(), k),
            None => (1, 1),
        };
        let (rows, n, k) = (rows as isize, n as isize, k as isize);
        let g2 = g.reshape(&[rows, n])?;
        let x2 = x.reshape(&[rows, k])?;
        let mask2 = gpu_mask
            .as_ref()
            .map(|out| out.reshape(&[rows, n]))
            .transpose()?;
        let with_bias = inputs
            .get(2)
            .is_some_and(|b| needs(2) && b.shape() == [n as usize]);
        match (&g2, &x2) {
            // A [n] bias's gradient (g summed over the rows, g^T 1) comes
            // out of the weight gradient's own product on a GPU.
            (Storage::Gpu(g2), Storage::Gpu(x2))
                if with_bias && g2.dtype() == DType::F32 && x2.dtype() == DType::F32 =>
            {
                let (dw, sums) = match &mask2 {
                    Some(out) => g2.matmul_t_with_row_sums_relu_grad(out, x2, true, false)?,
                    None => g2.matmul_t_with_row_sums(x2, true, false)?,
                };
                db = Some(Storage::Gpu(sums));
                Some(Storage::Gpu(dw))
            }
            (Storage::Gpu(g2), Storage::Gpu(x2)) if mask2.is_some() => {
                let out = mask2
                    .as_ref()
                    .ok_or_else(|| wgrad_core::Error::invalid(OP, "the ReLU mask went missing"))?;
                Some(Storage::Gpu(g2.matmul_t_relu_grad(out, x2, true, false)?))
            }
            _ => Some(g2.matmul_t(&x2, true, false)?),
        }
    } else {
        None
    };
    let mut grads = vec![dx, dw];
    if let Some(bias) = inputs.get(2) {
        grads.push(match db {
            Some(db) => Some(db),
            None if needs(2) => {
                // g through the mask, for the bias alone.
                let g = match &gpu_mask {
                    Some(out) => &g.unary_backward(&Storage::Gpu(out.clone()), UnaryOp::Relu)?,
                    None => g,
                };
                Some(g.sum_to_shape(&bias.shape())?)
            }
            None => None,
        });
    }
    Ok((grads, dx_masked))
}
