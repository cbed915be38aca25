//! Containers that hold modules without a forward of their own:
//! [`ModuleList`] (`torch.nn.ModuleList`) and [`ModuleDict`]
//! (`torch.nn.ModuleDict`), plus [`prefixed`] for naming a container that
//! is a field of a bigger model (`layers.0.weight`).

mod dict;
mod list;

pub use dict::ModuleDict;
pub use list::ModuleList;

use wgrad_autograd::Tensor;

/// Prefixes every name with `prefix.`: what a model's `named_parameters`
/// (or `named_buffers`, `named_state`) does with a child stored in the
/// field `prefix`, as PyTorch names `layers.0.weight` for an
/// `nn.ModuleList` in `self.layers`.
///
/// ```
/// use wgrad_autograd::Device;
/// use wgrad_nn::{Linear, Module, ModuleList, prefixed};
/// let mut layers = ModuleList::new();
/// layers.push(Linear::new(4, 4, true, &Device::Cpu)?);
/// let names: Vec<String> = prefixed("layers", layers.named_parameters())
///     .into_iter()
///     .map(|(n, _)| n)
///     .collect();
/// assert_eq!(names, ["layers.0.weight", "layers.0.bias"]);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
pub fn prefixed(prefix: &str, named: Vec<(String, Tensor)>) -> Vec<(String, Tensor)> {
    named
        .into_iter()
        .map(|(name, t)| (format!("{prefix}.{name}"), t))
        .collect()
}

/// Every child's names under `{child name}.`, in the children's order.
fn named_children<'a>(
    children: impl Iterator<Item = (String, &'a dyn crate::Module)>,
    names: impl Fn(&dyn crate::Module) -> Vec<(String, Tensor)>,
) -> Vec<(String, Tensor)> {
    children
        .flat_map(|(child, module)| prefixed(&child, names(module)))
        .collect()
}
