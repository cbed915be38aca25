//! The integration tests of the facade, one binary: ops, models and
//! optimizers against PyTorch ground truth (`fixtures_*`, reading
//! `tests/fixtures/` at the repository root) and hardening cases through the
//! public API (`hardening`).

mod activations;
mod amp_training;
mod api_round4;
mod attention;
mod cnn_errors;
mod common;
mod data_tensors;
mod derive;
mod einsum;
mod fixtures_attention;
mod fixtures_cnn;
mod fixtures_half;
mod fixtures_models;
mod fixtures_ops;
mod fixtures_optim;
mod fixtures_optim2;
mod fixtures_optim3;
mod fixtures_rnn;
mod fixtures_sort;
mod fixtures_structure;
mod fixtures_transformer;
mod fixtures_transformer_stack;
mod fused_relu;
mod half_promotion;
mod hardening;
mod hooks;
mod inplace;
mod int_ops;
mod int_reductions;
mod layer_norm;
mod layers_more;
mod linear;
mod losses;
mod masks;
mod math_ops;
mod misc;
mod nn_round3;
mod pytorch_md;
mod sort;
mod structure;
