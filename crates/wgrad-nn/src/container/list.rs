//! [`ModuleList`]: modules held in a list (`torch.nn.ModuleList`).

use std::ops::{Index, IndexMut};

use wgrad_autograd::Tensor;
use wgrad_core::{Error, Result};

use crate::Module;

/// Modules in a list, registered so that their parameters and buffers are
/// the list's (named `0.weight`, `1.bias`, ...; `layers.0.weight` once a
/// model prefixes them with its field name, see [`prefixed`](super::prefixed)),
/// their mode follows [`train`](Module::train)/[`eval`](Module::eval) and
/// they move with [`to_device`](Module::to_device). Like PyTorch's
/// `nn.ModuleList` it has no forward: a model iterates over it and calls
/// its modules (so [`forward`](Module::forward) is an error). As in
/// PyTorch, adding a module leaves its training mode as it is.
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_nn::{Linear, Module, ModuleList, ReLU};
/// let device = Device::Cpu;
/// let mut layers = ModuleList::new();
/// layers.push(Linear::new(4, 8, true, &device)?);
/// layers.push(ReLU::new());
/// layers.push(Linear::new(8, 2, true, &device)?);
/// let mut h = Tensor::ones(&[3, 4], &device)?;
/// for layer in &layers {
///     h = layer.forward(&h)?;
/// }
/// assert_eq!(h.shape(), [3, 2]);
/// assert_eq!(layers.named_parameters()[2].0, "2.weight");
/// # Ok::<(), wgrad_core::Error>(())
/// ```
#[derive(Module)]
pub struct ModuleList {
    /// Flattened: the modules are named by index alone (`0.weight`).
    #[module(flatten)]
    modules: Vec<Box<dyn Module>>,
    training: bool,
}

impl ModuleList {
    /// An empty list, in training mode.
    pub fn new() -> Self {
        ModuleList {
            modules: Vec::new(),
            training: true,
        }
    }

    /// A list of `modules` (`nn.ModuleList([...])`).
    pub fn from_modules(modules: Vec<Box<dyn Module>>) -> Self {
        ModuleList {
            modules,
            training: true,
        }
    }

    /// Appends `module`.
    pub fn push(&mut self, module: impl Module + 'static) {
        self.modules.push(Box::new(module));
    }

    /// Appends an already boxed module.
    pub fn push_boxed(&mut self, module: Box<dyn Module>) {
        self.modules.push(module);
    }

    /// Appends `module` and returns the list for chaining, like PyTorch's
    /// `append`, which returns `self`.
    pub fn append(&mut self, module: impl Module + 'static) -> &mut Self {
        self.push(module);
        self
    }

    /// Appends every module of `modules` (`extend`).
    pub fn extend(&mut self, modules: impl IntoIterator<Item = Box<dyn Module>>) {
        self.modules.extend(modules);
    }

    /// Inserts `module` before position `index` (`insert`); `index` may be
    /// `len()` (append) and counts from the end when negative, as Python's
    /// `list.insert` does (PyTorch's `ModuleList.insert` mishandles negative
    /// indices). An index outside `-len..=len` is an error naming it.
    pub fn insert(&mut self, index: isize, module: impl Module + 'static) -> Result<()> {
        let len = self.modules.len();
        let at = if index < 0 {
            len.checked_sub(index.unsigned_abs())
        } else {
            Some(index.unsigned_abs()).filter(|&i| i <= len)
        };
        let Some(at) = at else {
            return Err(Error::invalid(
                "ModuleList.insert",
                format!("index {index} is out of range for a list of {len} modules"),
            ));
        };
        self.modules.insert(at, Box::new(module));
        Ok(())
    }

    /// Number of modules.
    pub fn len(&self) -> usize {
        self.modules.len()
    }

    /// Whether the list holds no module.
    pub fn is_empty(&self) -> bool {
        self.modules.is_empty()
    }

    /// The module at `index`, if there is one.
    pub fn get(&self, index: usize) -> Option<&dyn Module> {
        self.modules.get(index).map(|m| &**m)
    }

    /// The module at `index`, mutably, if there is one.
    pub fn get_mut(&mut self, index: usize) -> Option<&mut (dyn Module + 'static)> {
        self.modules.get_mut(index).map(|m| &mut **m)
    }

    /// The modules in order.
    pub fn iter(&self) -> impl Iterator<Item = &dyn Module> {
        self.modules.iter().map(|m| &**m)
    }

    /// The modules in order, mutably.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut (dyn Module + 'static)> {
        self.modules.iter_mut().map(|m| &mut **m)
    }
}

impl Default for ModuleList {
    fn default() -> Self {
        ModuleList::new()
    }
}

impl FromIterator<Box<dyn Module>> for ModuleList {
    fn from_iter<I: IntoIterator<Item = Box<dyn Module>>>(iter: I) -> Self {
        ModuleList::from_modules(iter.into_iter().collect())
    }
}

impl<'a> IntoIterator for &'a ModuleList {
    type Item = &'a dyn Module;
    type IntoIter = Box<dyn Iterator<Item = &'a dyn Module> + 'a>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

/// `list[i]`; panics when `i` is out of range, as slice indexing does
/// ([`ModuleList::get`] returns an `Option` instead).
impl Index<usize> for ModuleList {
    type Output = dyn Module;

    fn index(&self, index: usize) -> &Self::Output {
        &*self.modules[index]
    }
}

/// `list[i]`, mutably; panics when `i` is out of range, as slice indexing
/// does ([`ModuleList::get_mut`] returns an `Option` instead).
impl IndexMut<usize> for ModuleList {
    fn index_mut(&mut self, index: usize) -> &mut Self::Output {
        &mut *self.modules[index]
    }
}

// The forward `Module::forward` calls (the derive writes the rest).
impl ModuleList {
    /// An error: like PyTorch's `nn.ModuleList`, the list has no forward.
    fn forward(&self, _x: &Tensor) -> Result<Tensor> {
        Err(Error::invalid(
            "ModuleList.forward",
            "ModuleList has no forward (as in PyTorch): it only holds modules; iterate over \
             it and call each module's forward (or use Sequential)",
        ))
    }
}
