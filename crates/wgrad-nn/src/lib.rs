//! Neural-network building blocks on top of `wgrad-autograd`, after
//! `torch.nn`: the [`Module`] trait and layers ([`Linear`], [`Embedding`],
//! [`LayerNorm`], [`Dropout`], activations; the containers [`Sequential`],
//! [`ModuleList`], [`ModuleDict`]), parameter initialisation ([`init`]),
//! loss functions ([`loss`]), and data loading ([`data`]).
//!
//! ```
//! use wgrad_autograd::optim::{Adam, AdamConfig, Optimizer};
//! use wgrad_autograd::{Device, Tensor};
//! use wgrad_nn::loss::{CrossEntropyOptions, cross_entropy};
//! use wgrad_nn::{Linear, Module, ReLU, Sequential};
//! let device = Device::Cpu; // or Device::best()?
//! let model = Sequential::new()
//!     .add(Linear::new(784, 128, true, &device)?)
//!     .add(ReLU::new())
//!     .add(Linear::new(128, 10, true, &device)?);
//! let mut opt = Adam::new(model.parameters(), AdamConfig::default())?;
//! let x = Tensor::randn(&[32, 784], &device)?;
//! let y = Tensor::from_vec(vec![3i32; 32], &[32], &device)?;
//! let mut losses = Vec::new();
//! for _ in 0..5 {
//!     opt.zero_grad();
//!     let loss = cross_entropy(&model.forward(&x)?, &y, CrossEntropyOptions::default())?;
//!     loss.backward()?;
//!     opt.step()?;
//!     losses.push(loss.item()?);
//! }
//! assert!(losses[4] < losses[0]);
//! # Ok::<(), wgrad_core::Error>(())
//! ```

#![deny(missing_docs)]

// The derive's impls name `::wgrad_nn::...`; this makes that path resolve
// inside this crate too, so its own layers can derive `Module`.
extern crate self as wgrad_nn;

mod activation;
mod activation_more;
pub mod attention;
pub mod batch_norm;
mod bilinear;
mod cdist;
pub mod checkpoint;
mod codec;
mod container;
pub mod conv;
pub mod data;
mod distance;
mod dropout;
mod embedding;
mod flatten;
pub mod group_norm;
pub mod init;
mod layer_norm;
mod linear;
pub mod loss;
mod module;
mod norm_more;
pub mod pool;
pub mod rnn;
mod rnn_cell;
mod sequential;
mod shape_layers;
pub mod state_dict;
pub mod transformer;
mod transformer_stack;

pub use activation::{GELU, LeakyReLU, ReLU, SiLU, Sigmoid, Tanh};
pub use activation_more::{
    CELU, ELU, GLU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh, Identity, LogSigmoid, LogSoftmax,
    Mish, PReLU, ReLU6, SELU, Softmax, Softmin, Softplus, Softshrink, Softsign, Tanhshrink,
    Threshold,
};
pub use attention::{AttentionOptions, MultiheadAttention, MultiheadAttentionOptions};
pub use batch_norm::{BatchNorm, BatchNorm1d, BatchNorm2d, BatchNormOptions};
pub use bilinear::Bilinear;
pub use cdist::cdist;
pub use checkpoint::{
    OptimizerCheckpoint, OptimizerConfig, OptimizerStateDict, ParamGroupState, ParamState,
};
pub use container::{ModuleDict, ModuleList, prefixed};
pub use conv::{Conv1d, Conv2d, Conv2dOptions, ConvTranspose1d, ConvTranspose2d};
pub use distance::{
    CosineSimilarity, PairwiseDistance, cosine_similarity, normalize, pairwise_distance,
};
pub use dropout::{Dropout, Dropout2d, dropout, dropout2d};
pub use embedding::{Embedding, embedding};
pub use flatten::Flatten;
pub use group_norm::GroupNorm;
pub use layer_norm::LayerNorm;
pub use linear::{Linear, linear};
pub use loss::{CrossEntropyOptions, Reduction};
pub use module::{Module, unique_parameters};
pub use norm_more::{InstanceNorm1d, InstanceNorm2d, RMSNorm};
pub use shape_layers::{
    CircularPad1d, CircularPad2d, ConstantPad1d, ConstantPad2d, PixelShuffle, PixelUnshuffle,
    ReflectionPad1d, ReflectionPad2d, ReplicationPad1d, ReplicationPad2d, Unflatten, ZeroPad1d,
    ZeroPad2d,
};
/// `#[derive(Module)]`: see [the derive's documentation](macro@Module).
/// It shares the trait's name (as serde's `Serialize` does), so
/// `use wgrad_nn::Module;` brings in both.
pub use wgrad_derive::Module;

/// What the code `#[derive(Module)]` writes refers to; not an API.
#[doc(hidden)]
pub mod __private {
    pub use crate::module::derive_support::{TensorSlots, push_prefixed};
    pub use crate::module::unique_parameters;
    pub use wgrad_autograd::{Device, Tensor};
    pub use wgrad_core::Result;
}
pub use pool::{
    AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d, AdaptiveMaxPool2d, AvgPool1d,
    AvgPool2d, MaxPool1d, MaxPool2d, Upsample,
};
pub use rnn::{GRU, LSTM, RNN, RnnNonlinearity, RnnOptions};
pub use rnn_cell::{GRUCell, LSTMCell, RNNCell};
pub use sequential::Sequential;
pub use transformer::{
    Activation, LayerMasks, TransformerDecoderLayer, TransformerEncoderLayer, TransformerOptions,
    generate_square_subsequent_mask,
};
pub use transformer_stack::{Transformer, TransformerDecoder, TransformerEncoder};
