//! Which of naga's runtime checks the kernel library is compiled with.
//!
//! By default naga clamps every index into a fixed-size array (the
//! workgroup tiles, private arrays, dynamically indexed vectors) and adds
//! an iteration cap to every loop. Our kernels are a fixed library whose
//! indices are bounded by construction (and tested on lavapipe); those
//! clamps stop the driver from folding constant offsets into workgroup
//! loads and cost the inner loops of the GEMM and attention cores about
//! 10% (H100, 2026-11-27: matmul 4096 4.60 -> 4.09 ms, attention
//! fwd+bwd 3.00 -> 2.64 ms). Storage-buffer accesses keep whatever the
//! driver enforces (Vulkan's robustBufferAccess2, which wgpu enables and
//! relies on itself where present), and integer division keeps its guard
//! against a zero divisor.
//!
//! `WGRAD_SHADER_CHECKS=1` compiles every kernel with all of naga's
//! checks, for chasing a kernel that misbehaves.

use std::sync::OnceLock;

use wgrad_device::wgpu;

/// The environment variable that turns all checks back on.
const SHADER_CHECKS_VAR: &str = "WGRAD_SHADER_CHECKS";

/// Whether kernels are compiled with all of naga's runtime checks (read once).
fn checks_forced() -> bool {
    static FORCED: OnceLock<bool> = OnceLock::new();
    *FORCED.get_or_init(|| std::env::var(SHADER_CHECKS_VAR).is_ok_and(|v| v == "1"))
}

/// Creates the shader module of one kernel file with the checks above.
pub(crate) fn create_module(
    device: &wgpu::Device,
    desc: wgpu::ShaderModuleDescriptor<'_>,
) -> wgpu::ShaderModule {
    if checks_forced() {
        return device.create_shader_module(desc);
    }
    let checks = wgpu::ShaderRuntimeChecks {
        bounds_checks: false,
        force_loop_bounding: false,
        ..wgpu::ShaderRuntimeChecks::checked()
    };
    // SAFETY: `desc` is one of the library's own kernels (crate::sources),
    // never user code. Every index into their workgroup and private arrays
    // is bounded by the workgroup size and the tile constants of the file
    // (audited 2026-11-27), every loop runs over a bounded counter, and
    // their storage accesses are guarded in the kernels themselves.
    unsafe { device.create_shader_module_trusted(desc, checks) }
}
