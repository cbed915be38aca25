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
    /// Element type the source is instantiated for (`alias elem`).
    pub elem: Elem,
    /// The enum its `override OP` selects from, if it switches on one.
    pub selector: Option<Selector>,
}

/// Element type one instantiation of a kernel source computes in. The
/// preprocessor ([`crate::sources::instantiate`]) starts the module with
/// `alias elem = <type>;` (after `enable f16;` for [`Elem::F16`]), so a
/// source written against `elem` serves every type it is instantiated for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Elem {
    /// `f32`.
    F32,
    /// `f16` (needs the adapter's SHADER_F16 feature).
    F16,
    /// `i32`.
    I32,
    /// `u32`.
    U32,
}

impl Elem {
    /// Every element type, for tests that instantiate a source for each.
    pub const ALL: [Elem; 4] = [Elem::F32, Elem::F16, Elem::I32, Elem::U32];

    /// The WGSL scalar type.
    pub const fn wgsl(self) -> &'static str {
        match self {
            Elem::F32 => "f32",
            Elem::F16 => "f16",
            Elem::I32 => "i32",
            Elem::U32 => "u32",
        }
    }

    /// The `enable` directive the type needs, if any.
    pub const fn enable(self) -> Option<&'static str> {
        match self {
            Elem::F16 => Some("f16"),
            _ => None,
        }
    }
}

/// The Rust enum whose `code()` a kernel's `override OP` carries. Its WGSL
/// constants (`<PREFIX>_<NAME>: u32 = <code>u`) are generated from the enum
/// and prepended to every kernel; `tests/validate_kernels.rs` checks that
/// every `switch OP` of the kernel has a case for every variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Selector {
    /// [`wgrad_core::ops::BinaryOp`]
    Binary,
    /// [`wgrad_core::ops::CompareOp`]
    Compare,
    /// [`wgrad_core::ops::UnaryOp`]
    Unary,
    /// [`crate::families::reduce::Fold`]
    Reduce,
}

impl Selector {
    /// Every selector enum.
    pub const ALL: [Selector; 4] = [
        Selector::Binary,
        Selector::Compare,
        Selector::Unary,
        Selector::Reduce,
    ];

    /// The override that carries the selector in the kernels.
    pub const OVERRIDE: &'static str = "OP";

    /// Prefix of the generated constant names.
    pub const fn prefix(self) -> &'static str {
        match self {
            Selector::Binary => "BINARY",
            Selector::Compare => "COMPARE",
            Selector::Unary => "UNARY",
            Selector::Reduce => "REDUCE",
        }
    }

    /// `(name, code)` of every variant, from the enum's `ALL`.
    pub fn variants(self) -> Vec<(&'static str, u32)> {
        use wgrad_core::ops::{BinaryOp, CompareOp, UnaryOp};
        match self {
            Selector::Binary => BinaryOp::ALL.iter().map(|o| (o.name(), o.code())).collect(),
            Selector::Compare => CompareOp::ALL
                .iter()
                .map(|o| (o.name(), o.code()))
                .collect(),
            Selector::Unary => UnaryOp::ALL.iter().map(|o| (o.name(), o.code())).collect(),
            Selector::Reduce => crate::families::reduce::Fold::ALL
                .iter()
                .map(|o| (o.name(), o.code()))
                .collect(),
        }
    }

    /// WGSL name of the constant for variant `name`, e.g. `UNARY_LEAKY_RELU`.
    pub fn constant(self, name: &str) -> String {
        format!("{}_{}", self.prefix(), name.to_ascii_uppercase())
    }
}
