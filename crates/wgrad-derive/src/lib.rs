//! `#[derive(Module)]` for wgrad: implements `wgrad_nn::Module` for a
//! struct from its fields, as PyTorch's `nn.Module` registers the
//! parameters and submodules assigned in `__init__`. Use it through its
//! re-export, `wgrad::nn::Module` (or `wgrad_nn::Module`), which names both
//! the trait and this derive.
//!
//! This crate is a proc macro only; see [`Module`](macro@Module).

#![deny(missing_docs)]

mod expand;
mod fields;

use proc_macro::TokenStream;

/// Implements the whole `Module` trait for a struct.
///
/// ```
/// use wgrad_autograd::{Device, Tensor};
/// use wgrad_core::Result;
/// use wgrad_nn::{Dropout, Linear, Module};
///
/// #[derive(Module)]
/// struct Mlp {
///     fc1: Linear,
///     drop: Dropout,
///     fc2: Linear,
///     /// A learned scalar (a parameter named `scale`).
///     scale: Tensor,
///     hidden: usize, // configuration: skipped
/// }
///
/// impl Mlp {
///     fn new(device: &Device) -> Result<Self> {
///         Ok(Mlp {
///             fc1: Linear::new(4, 8, true, device)?,
///             drop: Dropout::new(0.1)?,
///             fc2: Linear::new(8, 2, true, device)?,
///             scale: Tensor::ones(&[], device)?.with_requires_grad(true)?,
///             hidden: 8,
///         })
///     }
///
///     // `Module::forward` calls this inherent method.
///     fn forward(&self, x: &Tensor) -> Result<Tensor> {
///         let h = self.drop.forward(&self.fc1.forward(x)?.relu()?)?;
///         self.fc2.forward(&h)?.mul(&self.scale)
///     }
/// }
///
/// let device = Device::Cpu;
/// let mut model = Mlp::new(&device)?;
/// let names: Vec<String> = model.named_parameters().into_iter().map(|(n, _)| n).collect();
/// // The struct's own tensors first, then each child's, as PyTorch lists them.
/// assert_eq!(names, ["scale", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]);
/// model.eval();
/// assert!(!model.drop.is_training());
/// let y = Module::forward(&model, &Tensor::randn(&[3, 4], &device)?)?;
/// assert_eq!(y.shape(), [3, 2]);
/// assert_eq!(model.hidden, 8);
/// # Ok::<(), wgrad_core::Error>(())
/// ```
///
/// # Fields
///
/// Each field's role comes from its type, or from a `#[module(...)]`
/// attribute:
///
/// | field | role |
/// |---|---|
/// | `Tensor` | a parameter named after the field |
/// | `Option<Tensor>` | a parameter when `Some` |
/// | `Vec<Tensor>`, `[Tensor; N]` | parameters `field.0`, `field.1`, ... (PyTorch's `ParameterList`) |
/// | `#[module(buffer)]` on one of those | a buffer: in `named_buffers` and `named_state`, moved by `to_device`, never in `parameters` |
/// | `training: bool`, or a `bool` marked `#[module(training)]` | the train/eval flag |
/// | `bool`, `char`, integers, floats, `String`, references, `PhantomData`, `Device`, `DType`, and `Option`/`Vec`/`Box`/arrays/tuples of them | configuration: skipped |
/// | `#[module(skip)]` | skipped (any other configuration type needs it) |
/// | `Vec<M>`, `[M; N]` | children named `field.0`, `field.1`, ... |
/// | `Option<M>` | a child when `Some` |
/// | anything else (`Linear`, `Box<dyn Module>`, a derived struct, `M`) | a child: its names prefixed with `field.` |
/// | `#[module(flatten)]` on a child, `Option` or `Vec` of children | its names unprefixed (`weight`; `0.weight` for a list): a wrapper or container that PyTorch names by its contents, like `Sequential` |
///
/// A field of a configuration type that is not a module (an options
/// struct, an enum) must be marked `#[module(skip)]`; otherwise the compiler
/// reports that the type does not implement `Module`. Type aliases of
/// `Tensor` are not recognised (the macro sees names, not types): spell
/// `Tensor`.
///
/// # The methods it writes
///
/// - `forward(&self, x)` calls the struct's inherent
///   `fn forward(&self, x: &Tensor) -> Result<Tensor>`, or the inherent
///   method named by `#[module(forward = method_name)]` on the struct.
///   `#[module(forward_relu = method_name)]` likewise names the inherent
///   method `Module::forward_relu` calls (the module's output with a ReLU
///   applied, fused into its own pass), and `#[module(relu)]` marks a plain
///   ReLU (`Module::is_relu`), which `Sequential` folds into the module
///   before it.
///   Without such a method `Self::forward` would be the trait method itself;
///   the generated method is `#[deny(unconditional_recursion)]`, so that is a
///   compile error ("function cannot return without recursing"), never an
///   endless recursion at run time.
/// - `named_parameters`: the struct's own parameters in field order, then
///   each child's under its prefix, in field order (PyTorch lists a
///   module's own parameters before its submodules'); a tensor held in
///   several places (tied weights) is listed once, under its first name.
/// - `named_buffers`: own buffers, then the children's.
/// - `named_state` (what `state_dict` saves): own parameters, own buffers,
///   then each child's state, PyTorch's `state_dict` order.
/// - `train(on)` sets the flag and recurses into every child.
/// - `is_training` is the flag; a struct without one reports its first
///   child's mode (true when it has no child, or the first is an empty list
///   or an absent option).
/// - `to_device(device)` moves every parameter and buffer (a new leaf with
///   the same `requires_grad`, as the built-in layers move theirs) and
///   recurses into every child.
///
/// Generic structs work: a child whose type names a type parameter gets
/// a `Module` bound on the impl (`struct Residual<M> { inner: M }`
/// implements `Module` where `M: Module`).
///
/// Tuple structs name their fields by index (`0.weight`), so a wrapper
/// marks its one field `#[module(flatten)]`
/// (`struct BatchNorm2d(#[module(flatten)] pub BatchNorm);` keeps
/// `weight`, `running_mean`); unit structs have no state. Enums and unions
/// are refused with a compile error.
#[proc_macro_derive(Module, attributes(module))]
pub fn derive_module(input: TokenStream) -> TokenStream {
    let input = syn::parse_macro_input!(input as syn::DeriveInput);
    expand::derive(input)
        .unwrap_or_else(syn::Error::into_compile_error)
        .into()
}
