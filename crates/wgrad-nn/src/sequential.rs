//! [`Sequential`]: modules applied one after another (`torch.nn.Sequential`).

use wgrad_autograd::Tensor;
use wgrad_core::Result;

use crate::Module;

/// A chain of modules; `forward` feeds each one's output to the next.
/// Parameters are named `"{index}.{name}"` (`0.weight`, `2.bias`), with
/// parameterless modules (activations, dropout) still taking an index.
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{Linear, Module, ReLU, Sequential};
/// let device = Device::Cpu;
/// let mlp = Sequential::new()
///     .add(Linear::new(4, 8, true, &device)?)
///     .add(ReLU::new())
///     .add(Linear::new(8, 2, true, &device)?);
/// assert_eq!(mlp.named_parameters()[2].0, "2.weight");
/// assert_eq!(mlp.forward(&Tensor::randn(&[3, 4], &device)?)?.shape(), [3, 2]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Module)]
pub struct Sequential {
    /// Flattened: the layers are named by index alone (`0.weight`).
    #[module(flatten)]
    layers: Vec<Box<dyn Module>>,
    training: bool,
}

impl Sequential {
    /// An empty chain (its forward is the identity), in training mode.
    pub fn new() -> Self {
        Sequential {
            layers: Vec::new(),
            training: true,
        }
    }

    /// Appends `module` (builder form of [`push`](Self::push)).
    #[allow(clippy::should_implement_trait)] // `add` mirrors torch's `add_module`, not `+`
    pub fn add(mut self, module: impl Module + 'static) -> Self {
        self.push(module);
        self
    }

    /// Appends `module`; it takes on the chain's current mode.
    pub fn push(&mut self, module: impl Module + 'static) {
        let mut module: Box<dyn Module> = Box::new(module);
        module.train(self.training);
        self.layers.push(module);
    }

    /// Number of modules.
    pub fn len(&self) -> usize {
        self.layers.len()
    }

    /// Whether the chain has no modules.
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// The module at `index`.
    pub fn get(&self, index: usize) -> Option<&dyn Module> {
        self.layers.get(index).map(|m| &**m)
    }
}

impl Default for Sequential {
    fn default() -> Self {
        Sequential::new()
    }
}

// The forward `Module::forward` calls (the derive writes the rest).
impl Sequential {
    /// Each module in turn; a module followed by a [`ReLU`](crate::ReLU)
    /// runs the pair as its `forward_relu` (`Linear` and `Conv2d` apply the
    /// ReLU in their own pass on a GPU: one dispatch and one pass over the
    /// output fewer, the same numbers).
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let mut h = x.clone();
        let mut layers = self.layers.iter().peekable();
        while let Some(layer) = layers.next() {
            h = match layers.peek() {
                Some(next) if next.is_relu() => {
                    layers.next();
                    layer.forward_relu(&h)?
                }
                _ => layer.forward(&h)?,
            };
        }
        Ok(h)
    }
}
