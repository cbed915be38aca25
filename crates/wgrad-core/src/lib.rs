//! Device-independent building blocks shared by the CPU and GPU backends.
//!
//! Nothing here knows about wgpu or ndarray: this crate holds the vocabulary
//! both backends speak (dtypes, shapes, strided layouts, broadcasting rules,
//! axis normalisation, the error type and the counter-based random generator)
//! so that the two backends agree by construction.

#![deny(missing_docs)]

pub mod checks;
pub mod dims;
pub mod dtype;
pub mod error;
pub mod layout;
pub mod math;
mod methods;
pub mod ops;
pub mod precision;
pub mod random;
pub mod shape;

pub use dims::Dims;
pub use dtype::{DType, Element};
pub use error::{Error, Result};
pub use layout::Layout;
pub use ops::{BinaryOp, CompareOp, UnaryOp};
pub use precision::MatmulPrecision;
pub use random::Generator;

/// Highest tensor rank the GPU kernels index directly. Views of higher rank
/// are rejected with [`Error::InvalidArgument`]; the CPU backend uses the same
/// bound so that both devices accept the same programs.
pub const MAX_RANK: usize = 6;
