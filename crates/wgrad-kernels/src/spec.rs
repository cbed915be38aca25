//! Static description of one kernel entry point.

/// How a kernel binds one storage buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// `var<storage, read>`
    Read,
    /// `var<storage, read_write>`
    ReadWrite,
}

/// One entry point of one `.wgsl` file and the interface it expects.
///
/// Bindings are group 0, numbered in order: `bindings[i]` is `@binding(i)`.
/// When `uses_fault` is set, the device's fault buffer is bound right after
/// them as `var<storage, read_write> fault: array<atomic<u32>, 4>`.
#[derive(Debug)]
pub struct KernelSpec {
    /// Path under `kernels/`, e.g. `elementwise/binary.wgsl`.
    pub file: &'static str,
    /// Entry point name in that file.
    pub entry: &'static str,
    /// Storage buffer bindings in order: inputs first, then outputs.
    pub bindings: &'static [Access],
    /// Size of the `var<immediate>` parameter block in bytes (0 if none).
    pub immediate_bytes: u32,
    /// Whether the kernel reports faults through the device fault buffer.
    pub uses_fault: bool,
}
