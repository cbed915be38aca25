//! The [`Module`] trait: a layer or model with parameters, a forward pass and
//! a train/eval mode, like `torch.nn.Module`.

use wgrad_autograd::{Device, Tensor};
use wgrad_core::{DType, Result};

/// A building block of a model: maps an input tensor to an output tensor and
/// owns the parameters it learns.
///
/// Parameter names follow PyTorch's `state_dict` keys (`weight`, `bias`;
/// `0.weight`, `2.bias` inside a [`Sequential`](crate::Sequential)), so a
/// checkpoint's layout reads the same in both.
///
/// Modules are `Send + Sync`, so a model (also as `Box<dyn Module>`) can move
/// to a worker thread or be shared with one.
///
/// A model is usually written as a struct with `#[derive(Module)]` (the
/// derive shares this trait's name; see [its documentation](macro@crate::Module))
/// and an inherent `forward`:
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_core::Result;
/// use wgrad_nn::{Linear, Module};
///
/// #[derive(Module)]
/// struct TwoLayer {
///     hidden: Linear,
///     out: Linear,
/// }
///
/// impl TwoLayer {
///     fn forward(&self, x: &Tensor) -> Result<Tensor> {
///         self.out.forward(&self.hidden.forward(x)?.relu()?)
///     }
/// }
///
/// let device = Device::Cpu;
/// let model = TwoLayer {
///     hidden: Linear::new(3, 5, true, &device)?,
///     out: Linear::new(5, 1, false, &device)?,
/// };
/// let names: Vec<String> = model.named_parameters().into_iter().map(|(n, _)| n).collect();
/// assert_eq!(names, ["hidden.weight", "hidden.bias", "out.weight"]);
/// assert_eq!(model.forward(&Tensor::ones(&[2, 3], &device)?)?.shape(), [2, 1]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a wgrad Module",
    note = "a field of a #[derive(Module)] struct whose type is not a module (an options \
            struct, an enum) needs #[module(skip)]"
)]
pub trait Module: Send + Sync {
    /// Applies the module to `x`.
    fn forward(&self, x: &Tensor) -> Result<Tensor>;

    /// `forward` followed by a ReLU. Modules that can run the ReLU in their
    /// own pass override it (`Linear` and `Conv2d`: in their product's
    /// store on a GPU); a `Sequential` calls it for a module followed by a
    /// [`ReLU`](crate::ReLU). The numbers are those of `forward` then
    /// `relu` either way.
    fn forward_relu(&self, x: &Tensor) -> Result<Tensor> {
        self.forward(x)?.relu()
    }

    /// Whether the module is a plain ReLU, which a `Sequential` may fold
    /// into the module before it ([`forward_relu`](Self::forward_relu)).
    fn is_relu(&self) -> bool {
        false
    }

    /// Every learnable tensor with its dotted name, in registration order.
    /// A tensor shared by several places (tied weights) is listed once, under
    /// its first name, as in PyTorch ([`unique_parameters`] does that for
    /// containers).
    fn named_parameters(&self) -> Vec<(String, Tensor)>;

    /// Every buffer (state that is saved and moved with the module but not
    /// learned, like BatchNorm's `running_mean`) with its dotted name, as
    /// PyTorch's `named_buffers()`. Optimizers never see buffers; the
    /// default is none.
    fn named_buffers(&self) -> Vec<(String, Tensor)> {
        Vec::new()
    }

    /// Parameters then buffers under their `state_dict` names: what
    /// `state_dict::save`/`load` and checkpoints read and write.
    fn named_state(&self) -> Vec<(String, Tensor)> {
        let mut state = self.named_parameters();
        state.extend(self.named_buffers());
        state
    }

    /// Every learnable tensor, each once, in the order of
    /// [`named_parameters`](Self::named_parameters) (what an optimizer takes).
    fn parameters(&self) -> Vec<Tensor> {
        unique_parameters(self.named_parameters())
            .into_iter()
            .map(|(_, t)| t)
            .collect()
    }

    /// Switches training mode on or off (`module.train(on)` in PyTorch).
    /// Containers pass it on to their children; the default does nothing,
    /// which suits modules whose forward pass does not depend on the mode.
    fn train(&mut self, _on: bool) {}

    /// Switches to evaluation mode (`module.eval()`): `train(false)`.
    fn eval(&mut self) {
        self.train(false);
    }

    /// Whether the module is in training mode (modules start in it).
    fn is_training(&self) -> bool;

    /// Moves every parameter and buffer to `device`. Moved parameters are
    /// new leaf tensors (optimizers must be built after the move, as in
    /// PyTorch).
    fn to_device(&mut self, device: &Device) -> Result<()>;

    /// Converts every float parameter and buffer to `dtype` in place
    /// (`module.to(dtype)`; integer buffers such as `num_batches_tracked`
    /// stay). The tensors keep their identity, so an optimizer built before
    /// still holds them. All conversions are computed before any tensor
    /// changes, so a failure changes nothing.
    fn to_dtype(&self, dtype: DType) -> Result<()> {
        if !dtype.is_float() {
            return Err(wgrad_core::Error::invalid(
                "to_dtype",
                format!("modules convert to a float dtype, got {dtype}"),
            ));
        }
        let mut converted = Vec::new();
        for (_, t) in self.named_state() {
            if t.dtype().is_float() && t.dtype() != dtype {
                let data = t.storage().cast(dtype)?;
                converted.push((t, data));
            }
        }
        for (t, data) in converted {
            t.set_data(data)?;
        }
        Ok(())
    }

    /// `module.half()`: [`to_dtype`](Self::to_dtype) F16.
    fn half(&self) -> Result<()> {
        self.to_dtype(DType::F16)
    }

    /// `module.bfloat16()`: [`to_dtype`](Self::to_dtype) BF16.
    fn bfloat16(&self) -> Result<()> {
        self.to_dtype(DType::BF16)
    }

    /// `module.float()`: [`to_dtype`](Self::to_dtype) F32.
    fn float(&self) -> Result<()> {
        self.to_dtype(DType::F32)
    }

    /// Drops the gradient of every parameter (`zero_grad(set_to_none=True)`).
    fn zero_grad(&self) {
        for p in self.parameters() {
            p.zero_grad();
        }
    }

    /// Total number of learnable scalars.
    fn num_parameters(&self) -> usize {
        self.parameters().iter().map(Tensor::numel).sum()
    }
}

impl<M: Module + ?Sized> Module for Box<M> {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        (**self).forward(x)
    }
    fn forward_relu(&self, x: &Tensor) -> Result<Tensor> {
        (**self).forward_relu(x)
    }
    fn is_relu(&self) -> bool {
        (**self).is_relu()
    }
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        (**self).named_parameters()
    }
    fn parameters(&self) -> Vec<Tensor> {
        (**self).parameters()
    }
    fn named_buffers(&self) -> Vec<(String, Tensor)> {
        (**self).named_buffers()
    }
    fn named_state(&self) -> Vec<(String, Tensor)> {
        (**self).named_state()
    }
    fn train(&mut self, on: bool) {
        (**self).train(on);
    }
    fn eval(&mut self) {
        (**self).eval();
    }
    fn is_training(&self) -> bool {
        (**self).is_training()
    }
    fn to_device(&mut self, device: &Device) -> Result<()> {
        (**self).to_device(device)
    }
    fn zero_grad(&self) {
        (**self).zero_grad();
    }
    fn num_parameters(&self) -> usize {
        (**self).num_parameters()
    }
}

/// Keeps the first occurrence of every tensor (by identity, not value): what
/// a container's `named_parameters` returns when children share a tensor.
pub fn unique_parameters(named: Vec<(String, Tensor)>) -> Vec<(String, Tensor)> {
    let mut seen = std::collections::HashSet::with_capacity(named.len());
    named
        .into_iter()
        .filter(|(_, t)| seen.insert(t.id()))
        .collect()
}

/// A copy of the parameter `p` on `device`: a new leaf with the same
/// `requires_grad` (no-op when it is already there).
pub(crate) fn moved_parameter(p: &Tensor, device: &Device) -> Result<Tensor> {
    if p.device().same(device) {
        return Ok(p.clone());
    }
    // `detach` first so the copy is a leaf rather than a `ToDevice` node.
    p.detach().to(device)?.with_requires_grad(p.requires_grad())
}

/// The helpers `#[derive(Module)]`'s code calls (through
/// `wgrad_nn::__private`).
pub(crate) mod derive_support {
    use super::moved_parameter;
    use wgrad_autograd::{Device, Tensor};
    use wgrad_core::Result;

    /// A field that holds parameters or buffers: `Tensor`,
    /// `Option<Tensor>`, `Vec<Tensor>`, `[Tensor; N]`.
    pub trait TensorSlots {
        /// Appends the tensors as `name` (`name.i` for a list).
        fn push_named(&self, name: &str, out: &mut Vec<(String, Tensor)>);
        /// Moves every tensor to `device` as a new leaf with the same
        /// `requires_grad` (what the built-in layers always did).
        fn move_to(&mut self, device: &Device) -> Result<()>;
    }

    impl TensorSlots for Tensor {
        fn push_named(&self, name: &str, out: &mut Vec<(String, Tensor)>) {
            out.push((name.to_string(), self.clone()));
        }
        fn move_to(&mut self, device: &Device) -> Result<()> {
            *self = moved_parameter(self, device)?;
            Ok(())
        }
    }

    impl TensorSlots for Option<Tensor> {
        fn push_named(&self, name: &str, out: &mut Vec<(String, Tensor)>) {
            if let Some(t) = self {
                t.push_named(name, out);
            }
        }
        fn move_to(&mut self, device: &Device) -> Result<()> {
            self.as_mut().map_or(Ok(()), |t| t.move_to(device))
        }
    }

    impl TensorSlots for [Tensor] {
        fn push_named(&self, name: &str, out: &mut Vec<(String, Tensor)>) {
            for (i, t) in self.iter().enumerate() {
                t.push_named(&format!("{name}.{i}"), out);
            }
        }
        fn move_to(&mut self, device: &Device) -> Result<()> {
            self.iter_mut().try_for_each(|t| t.move_to(device))
        }
    }

    impl TensorSlots for Vec<Tensor> {
        fn push_named(&self, name: &str, out: &mut Vec<(String, Tensor)>) {
            self.as_slice().push_named(name, out);
        }
        fn move_to(&mut self, device: &Device) -> Result<()> {
            self.as_mut_slice().move_to(device)
        }
    }

    impl<const N: usize> TensorSlots for [Tensor; N] {
        fn push_named(&self, name: &str, out: &mut Vec<(String, Tensor)>) {
            self.as_slice().push_named(name, out);
        }
        fn move_to(&mut self, device: &Device) -> Result<()> {
            self.as_mut_slice().move_to(device)
        }
    }

    /// Appends a child's `named` tensors under `prefix.`.
    pub fn push_prefixed(
        out: &mut Vec<(String, Tensor)>,
        prefix: &str,
        named: Vec<(String, Tensor)>,
    ) {
        out.extend(
            named
                .into_iter()
                .map(|(name, t)| (format!("{prefix}.{name}"), t)),
        );
    }
}
