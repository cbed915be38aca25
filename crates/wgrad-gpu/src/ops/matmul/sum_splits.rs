//! The second pass of a split-K product: the splits' partial sums added
//! (`kernels/matmul/sum_splits.wgsl`), by one thread per output, or for
//! few outputs over many splits by one workgroup per output.

use wgrad_core::Result;
use wgrad_kernels::families;

use crate::GpuTensor;
use crate::params::SumSplitsParams;

/// The most outputs the one-workgroup-per-output sum takes, and the least
/// splits: below, one thread per output adds its splits faster than a
/// workgroup per output is dispatched (a convolution's weight gradient,
/// 320 values over 256 splits, was 17 us on the H100 that way).
const TREE_MAX_OUTPUTS: u32 = 4096;
const TREE_MIN_SPLITS: u32 = 32;

/// Adds `p.splits` partial sums of `p.numel` values from `part` into
/// `out` (`buffers`: part, out, bias), with the overrides `constants`
/// (HAS_BIAS, ACT_RELU).
pub(crate) fn dispatch(
    any: &GpuTensor,
    constants: &[(&'static str, f64)],
    buffers: [&GpuTensor; 3],
    p: &SumSplitsParams,
) -> Result<()> {
    let bufs = buffers.map(|t| &t.buffer);
    if p.numel <= TREE_MAX_OUTPUTS && p.splits >= TREE_MIN_SPLITS {
        return any.kernels().dispatch_groups(
            &families::matmul::SUM_SPLITS_TREE,
            constants,
            &bufs,
            p,
            u64::from(p.numel),
        );
    }
    any.kernels().dispatch_1d(
        &families::matmul::SUM_SPLITS,
        constants,
        &bufs,
        p,
        u64::from(p.numel),
    )
}
