//! [`ModuleDict`]: modules held by name (`torch.nn.ModuleDict`).

use wgrad_autograd::{Device, Tensor};
use wgrad_core::{Error, Result};

use super::named_children;
use crate::module::{Module, unique_parameters};

/// Modules by name, in insertion order (as PyTorch's `nn.ModuleDict`, an
/// ordered dict): parameters and buffers are named `{key}.weight`, ...
/// (`heads.{key}.weight` once a model prefixes them with its field name,
/// see [`prefixed`](super::prefixed)), [`train`](Module::train)/
/// [`eval`](Module::eval) and [`to_device`](Module::to_device) reach every
/// module, and there is no forward ([`forward`](Module::forward) is an
/// error). Modules are looked up with [`get`](Self::get) (no `dict[key]`
/// indexing: a missing key would have to panic). Replacing the module under an existing key keeps the key's
/// place, as assigning to a Python dict does. As in PyTorch, adding a
/// module leaves its training mode as it is.
///
/// ```
/// use wgrad_autograd::Device;
/// use wgrad_nn::{Linear, Module, ModuleDict};
/// let device = Device::Cpu;
/// let mut heads = ModuleDict::new();
/// heads.insert("policy", Linear::new(8, 4, true, &device)?)?;
/// heads.insert("value", Linear::new(8, 1, false, &device)?)?;
/// assert_eq!(heads.keys().collect::<Vec<_>>(), ["policy", "value"]);
/// assert_eq!(heads.named_parameters()[2].0, "value.weight");
/// # Ok::<(), wgrad_core::Error>(())
/// ```
pub struct ModuleDict {
    entries: Vec<(String, Box<dyn Module>)>,
    training: bool,
}

impl ModuleDict {
    /// An empty dict, in training mode.
    pub fn new() -> Self {
        ModuleDict {
            entries: Vec::new(),
            training: true,
        }
    }

    /// Stores `module` under `key` (`dict[key] = module`) and returns the
    /// module it replaces, if any; a new key goes last, an existing one
    /// keeps its place. A key that is empty or contains `.` is an error
    /// naming it (PyTorch's `add_module` refuses both: a dot would make
    /// state_dict names ambiguous).
    pub fn insert(
        &mut self,
        key: impl Into<String>,
        module: impl Module + 'static,
    ) -> Result<Option<Box<dyn Module>>> {
        self.insert_boxed(key, Box::new(module))
    }

    /// [`insert`](Self::insert) of an already boxed module.
    pub fn insert_boxed(
        &mut self,
        key: impl Into<String>,
        module: Box<dyn Module>,
    ) -> Result<Option<Box<dyn Module>>> {
        let key = key.into();
        if key.is_empty() || key.contains('.') {
            return Err(Error::invalid(
                "ModuleDict.insert",
                format!("module name can't be empty or contain \".\", got: {key:?}"),
            ));
        }
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some((_, slot)) => Ok(Some(std::mem::replace(slot, module))),
            None => {
                self.entries.push((key, module));
                Ok(None)
            }
        }
    }

    /// Removes the module under `key` and returns it (`pop`); the others
    /// keep their order.
    pub fn remove(&mut self, key: &str) -> Option<Box<dyn Module>> {
        let at = self.entries.iter().position(|(k, _)| k == key)?;
        Some(self.entries.remove(at).1)
    }

    /// Number of modules.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the dict holds no module.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether a module is stored under `key` (`key in dict`).
    pub fn contains_key(&self, key: &str) -> bool {
        self.entries.iter().any(|(k, _)| k == key)
    }

    /// The module under `key`, if any.
    pub fn get(&self, key: &str) -> Option<&dyn Module> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, m)| &**m)
    }

    /// The module under `key`, mutably, if any.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut (dyn Module + 'static)> {
        self.entries
            .iter_mut()
            .find(|(k, _)| k == key)
            .map(|(_, m)| &mut **m)
    }

    /// The keys in insertion order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(k, _)| k.as_str())
    }

    /// The modules in insertion order.
    pub fn values(&self) -> impl Iterator<Item = &dyn Module> {
        self.entries.iter().map(|(_, m)| &**m)
    }

    /// `(key, module)` pairs in insertion order (`items()`).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &dyn Module)> {
        self.entries.iter().map(|(k, m)| (k.as_str(), &**m))
    }

    /// `(key, module)` pairs in insertion order, the modules mutably.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&str, &mut (dyn Module + 'static))> {
        self.entries.iter_mut().map(|(k, m)| (k.as_str(), &mut **m))
    }

    fn children(&self) -> impl Iterator<Item = (String, &dyn Module)> {
        self.entries.iter().map(|(k, m)| (k.clone(), &**m))
    }
}

impl Default for ModuleDict {
    fn default() -> Self {
        ModuleDict::new()
    }
}

// Written by hand, not derived: the children are a runtime collection
// named by their keys (`policy.weight`), which no field of a struct
// gives the derive.
impl Module for ModuleDict {
    /// An error: like PyTorch's `nn.ModuleDict`, the dict has no forward.
    fn forward(&self, _x: &Tensor) -> Result<Tensor> {
        Err(Error::invalid(
            "ModuleDict.forward",
            "ModuleDict has no forward (as in PyTorch): it only holds modules; look a module \
             up by key and call its forward",
        ))
    }

    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        unique_parameters(named_children(self.children(), |m| m.named_parameters()))
    }

    fn named_buffers(&self) -> Vec<(String, Tensor)> {
        named_children(self.children(), |m| m.named_buffers())
    }

    /// Per module, its parameters then its buffers, as PyTorch orders a
    /// `state_dict` (tied parameters once, under their first name).
    fn named_state(&self) -> Vec<(String, Tensor)> {
        unique_parameters(named_children(self.children(), |m| m.named_state()))
    }

    fn train(&mut self, on: bool) {
        self.training = on;
        for (_, module) in &mut self.entries {
            module.train(on);
        }
    }

    fn is_training(&self) -> bool {
        self.training
    }

    fn to_device(&mut self, device: &Device) -> Result<()> {
        self.entries
            .iter_mut()
            .try_for_each(|(_, module)| module.to_device(device))
    }
}
