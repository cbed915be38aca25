//! Parameters of the throughput probes (`kernels/probe/`).

use super::immediates;

immediates! {
    /// `ProbeParams` of `probe/fma_peak.wgsl`.
    ProbeParams {
        /// Loop iterations per thread.
        iters: u32,
        /// Added to every start value (0; unknown to the compiler).
        seed: f32,
        /// Row stride of the staging probes' source matrix.
        stride: u32,
        /// Its length (elements or vec4s), for the bounds checks.
        len: u32,
    }
}
