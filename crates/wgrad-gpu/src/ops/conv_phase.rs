//! The stride phases of a convolution's input gradient (`conv.rs`): with
//! stride s, the input positions fall into s classes by `(h + pad) % s`,
//! and each class is reached by its own subset of the taps, so the input
//! gradient runs one implicit GEMM per phase over those taps alone.

/// One stride phase of one axis of the input gradient: the input positions
/// `h` with `(h + pad) % stride == phase`, and the taps `i` that reach them
/// (`i * dilation = phase` modulo the stride, an arithmetic progression).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Phase {
    /// The first such position.
    pub(super) first: usize,
    /// How many there are below the input size.
    pub(super) count: usize,
    /// The first tap (0 when none).
    pub(super) tap0: usize,
    /// How many taps (0: the phase's gradient is 0).
    pub(super) taps: usize,
    /// Between consecutive taps.
    pub(super) tap_step: usize,
    /// `(first + pad - tap0 * dilation) / stride` (exact): the output
    /// position of the first position through the first tap.
    pub(super) base: i32,
    /// `tap_step * dilation / stride`: output positions per tap step.
    pub(super) row_step: usize,
}

impl Phase {
    pub(super) fn new(
        size: usize,
        pad: usize,
        stride: usize,
        kernel: usize,
        dilation: usize,
        phase: usize,
    ) -> Phase {
        let first = (phase + stride - pad % stride) % stride;
        let count = if first < size {
            (size - first).div_ceil(stride)
        } else {
            0
        };
        let taps: Vec<usize> = (0..kernel)
            .filter(|i| i * dilation % stride == phase)
            .collect();
        let tap0 = taps.first().copied().unwrap_or(0);
        let tap_step = if taps.len() > 1 { taps[1] - taps[0] } else { 1 };
        // Exact when there are taps; sizes were checked to fit i32.
        let base = ((first + pad) as i64 - (tap0 * dilation) as i64) / stride as i64;
        Phase {
            first,
            count,
            tap0,
            taps: taps.len(),
            tap_step,
            base: base as i32,
            row_step: tap_step * dilation / stride,
        }
    }
}
