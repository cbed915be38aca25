//! The throughput probes of `kernels/probe/` (benchmarks of the GEMM
//! cores' ceilings; no op uses them).

use wgrad_core::Result;
use wgrad_kernels::{KernelCache, KernelSpec};

use crate::GpuTensor;
use crate::params::ProbeParams;

/// Dispatches `groups` workgroups of probe `spec` (one of
/// `wgrad_kernels::families::probe`): `out` takes one f32 per thread
/// (`groups * 256`), `src` is the staging probes' source (`stride` per row,
/// `len` elements, or vec4s for the vec4 probe). Benchmarks only.
#[doc(hidden)]
pub fn dispatch_probe(
    spec: &'static KernelSpec,
    out: &GpuTensor,
    src: &GpuTensor,
    iters: u32,
    stride: u32,
    len: u32,
    groups: u64,
) -> Result<()> {
    let kernels = KernelCache::of(out.device())?;
    let p = ProbeParams {
        iters,
        seed: 0.0,
        stride,
        len,
    };
    let buffers = [out.buffer(), src.buffer(), src.buffer()];
    kernels.dispatch_groups(spec, &[], &buffers, &p, groups)
}
