//! The one error type of wgrad's tensor layers.
//!
//! Every message names what was wrong and with which shapes, axes, dtypes,
//! devices or sizes, so that a user can fix the call without a debugger.

use std::path::{Path, PathBuf};

use crate::DType;

/// Result alias used across wgrad.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in a tensor operation.
///
/// Match on the variant to react to a kind of failure; the message names
/// the op and what was wrong, and file errors keep their cause as
/// [`source()`](std::error::Error::source):
///
/// ```
/// use std::error::Error as _;
/// use wgrad_core::Error;
/// let cause = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
/// let e = Error::io("load", "model.safetensors", "cannot read", cause);
/// assert!(matches!(&e, Error::Io { path, .. } if path.ends_with("model.safetensors")));
/// assert_eq!(e.to_string(), "load: model.safetensors: cannot read: no such file");
/// assert!(e.source().is_some());
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Two shapes that must agree (or broadcast) do not.
    #[error("{op}: shapes {lhs:?} and {rhs:?} are incompatible")]
    ShapeMismatch {
        /// Name of the failing op (e.g. `"matmul"`); the message starts with it.
        op: &'static str,
        /// Shape of the first (left) operand.
        lhs: Vec<usize>,
        /// Shape of the second (right) operand.
        rhs: Vec<usize>,
    },
    /// An axis outside `-rank..rank`, or given twice.
    #[error("{op}: axis {axis} is out of range for a tensor of rank {rank} ({})", valid_axes(*axis, *rank))]
    BadAxis {
        /// Name of the failing op (e.g. `"matmul"`); the message starts with it.
        op: &'static str,
        /// The axis as given (negative counts from the end).
        axis: isize,
        /// Rank of the tensor the axis was applied to.
        rank: usize,
    },
    /// An operand has the wrong element type.
    #[error("{op}: expected dtype {expected}, got {got}")]
    DTypeMismatch {
        /// Name of the failing op (e.g. `"matmul"`); the message starts with it.
        op: &'static str,
        /// The dtype the operation needs.
        expected: DType,
        /// The dtype the operand has.
        got: DType,
    },
    /// An index (from an argument or an index tensor) is outside its dimension.
    #[error("{op}: index {index} is out of range for a dimension of size {size}")]
    IndexOutOfRange {
        /// Name of the failing op (e.g. `"matmul"`); the message starts with it.
        op: &'static str,
        /// The offending index as given (may be negative).
        index: i64,
        /// Size of the dimension it indexes.
        size: usize,
    },
    /// Operands live on different devices.
    #[error("{op}: operands are on different devices: {lhs} and {rhs}")]
    DeviceMismatch {
        /// Name of the failing op (e.g. `"matmul"`); the message starts with it.
        op: &'static str,
        /// Device of the first operand, as its `Display` writes it.
        lhs: String,
        /// Device of the second operand, as its `Display` writes it.
        rhs: String,
    },
    /// Any other argument that is not acceptable, with the reason.
    #[error("{op}: {message}")]
    InvalidArgument {
        /// Name of the failing op (e.g. `"matmul"`); the message starts with it.
        op: &'static str,
        /// Why the argument was rejected (names the value and what was expected).
        message: String,
    },
    /// A buffer larger than the device can bind or allocate.
    #[error(
        "{op}: {bytes} bytes exceed the device's {limit_name} of {limit} bytes; split the tensor or use Device::Cpu"
    )]
    TooLarge {
        /// Name of the failing op (e.g. `"matmul"`); the message starts with it.
        op: &'static str,
        /// Size of the requested buffer, in bytes.
        bytes: u64,
        /// The device limit it exceeds, in bytes.
        limit: u64,
        /// Which limit, in words (e.g. `"storage buffer binding size"`).
        limit_name: &'static str,
    },
    /// No GPU adapter could be opened.
    #[error(
        "no GPU adapter found ({detail}). Install a Vulkan driver (on Debian/Ubuntu: `sudo apt-get install mesa-vulkan-drivers`), or use Device::Cpu, which always works"
    )]
    NoAdapter {
        /// Why none was found: wgpu enumerated no adapter, or `WGRAD_ADAPTER`
        /// matched none of those it did.
        detail: String,
    },
    /// A device (the GPU, or the host for CPU tensors) ran out of memory.
    #[error(
        "{op}: out of {device} memory while allocating {bytes} bytes; free tensors you no longer need, call device.empty_cache() or use smaller batches"
    )]
    OutOfMemory {
        /// Name of the failing op (e.g. `"matmul"`); the message starts with it.
        op: &'static str,
        /// `"GPU"` or `"CPU"`.
        device: &'static str,
        /// Size of the allocation that failed, in bytes.
        bytes: u64,
    },
    /// A failure reported by the GPU driver or wgpu (validation, device lost, mapping).
    #[error("GPU device error: {0}")]
    Device(String),
    /// Reading or writing a file failed in the operating system (missing
    /// file, permissions, full disk, a lock held by another save).
    /// [`source()`](std::error::Error::source) is the [`std::io::Error`];
    /// the message repeats it after the file and what was being done, so a
    /// plain `{}` says why too.
    #[error("{op}: {}: {context}: {source}", path.display())]
    Io {
        /// Name of the failing op (e.g. `"load"`); the message starts with it.
        op: &'static str,
        /// The file the caller named.
        path: PathBuf,
        /// What was being done (e.g. `"cannot read"`, or which temporary
        /// file or directory of a save failed).
        context: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A file's contents could not be decoded or encoded: a corrupt
    /// safetensors header, a gzip stream that does not decompress.
    /// [`source()`](std::error::Error::source) is the format library's
    /// error (e.g. `safetensors::SafeTensorError`, reachable with
    /// `downcast_ref`); boxed so that wgrad-core, which every backend
    /// builds on, depends on no file-format crate and its API does not
    /// change with their versions.
    #[error("{op}: {}: {context}: {source}", path.display())]
    Serialization {
        /// Name of the failing op (e.g. `"load"`); the message starts with it.
        op: &'static str,
        /// The file the caller named.
        path: PathBuf,
        /// What was wrong, in words (e.g. `"not a valid safetensors file
        /// (truncated or corrupted?)"`).
        context: String,
        /// The format library's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// The axes a tensor of `rank` accepts, as the error text names them.
fn valid_axes(axis: isize, rank: usize) -> String {
    match rank {
        // Ops that take a dim accept a 0-d tensor's implicit dim (0 or -1)
        // where PyTorch does; the others need a real one.
        0 if axis == 0 || axis == -1 => "this op needs a tensor with at least one dim".to_string(),
        0 => "valid: -1 or 0".to_string(),
        r => format!("valid: {} to {}", -(r as isize), r - 1),
    }
}

impl Error {
    /// Shorthand for [`Error::InvalidArgument`].
    pub fn invalid(op: &'static str, message: impl Into<String>) -> Self {
        Error::InvalidArgument {
            op,
            message: message.into(),
        }
    }

    /// Shorthand for [`Error::Io`].
    pub fn io(
        op: &'static str,
        path: impl AsRef<Path>,
        context: impl Into<String>,
        source: std::io::Error,
    ) -> Self {
        Error::Io {
            op,
            path: path.as_ref().to_path_buf(),
            context: context.into(),
            source,
        }
    }

    /// Shorthand for [`Error::Serialization`].
    pub fn serialization(
        op: &'static str,
        path: impl AsRef<Path>,
        context: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Error::Serialization {
            op,
            path: path.as_ref().to_path_buf(),
            context: context.into(),
            source: source.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::Error;

    #[test]
    fn io_errors_keep_their_source_and_name_the_file() {
        let cause = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let e = Error::io("load", "/tmp/model.safetensors", "cannot read", cause);
        assert_eq!(
            e.to_string(),
            "load: /tmp/model.safetensors: cannot read: no such file"
        );
        let source = e.source().and_then(|s| s.downcast_ref::<std::io::Error>());
        assert_eq!(
            source.map(std::io::Error::kind),
            Some(std::io::ErrorKind::NotFound)
        );
    }

    #[test]
    fn serialization_errors_keep_their_source() {
        let e = Error::serialization("load", "x.bin", "corrupt header", "bad JSON");
        assert_eq!(e.to_string(), "load: x.bin: corrupt header: bad JSON");
        assert_eq!(
            e.source().map(|s| s.to_string()).as_deref(),
            Some("bad JSON")
        );
    }
}
