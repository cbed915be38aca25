//! The WGSL kernel library.
//!
//! Every kernel source lives under the workspace's `kernels/<family>/*.wgsl`
//! and is embedded at build time ([`sources::SOURCES`]); shared helpers live
//! in `kernels/common/` and are pulled in by `//! include` lines, and
//! [`sources::instantiate`] prepends the element type and the selector
//! constants generated from the Rust enums. Each kernel entry
//! point is described once by a [`KernelSpec`] in `families/` — the only place
//! that knows file names and entry points. [`KernelCache`] creates pipelines
//! lazily (keyed by kernel and override constants), caches bind groups
//! (keyed by layout and buffer ids) and records dispatches through
//! `wgrad-device`.

#![deny(missing_docs)]

mod cache;
pub mod families;
mod grid;
mod runtime_checks;
pub mod sources;
mod spec;

pub use cache::KernelCache;
pub use grid::{WORKGROUP_SIZE, grid_for};
pub use spec::{Access, Elem, KernelSpec, Selector};
