//! Device-side faults: what a kernel reports when it meets bad data (an index
//! out of range) that the host could not check without a readback.
//!
//! Like CUDA's device-side assert, the kernel writes the fault into a small
//! buffer and carries on (clamping so that it never reads out of bounds); the
//! next readback, or `synchronize()`, copies that buffer along with the data,
//! clears it, and turns a fault into an [`Error`](wgrad_core::Error). Layout
//! of the fault buffer (u32 words): `[code, index, size, unused]`; code 0
//! means no fault.
//!
//! The first fault wins: kernels set word 0 with a compare-exchange from 0
//! (WGSL `raise_fault`), and only the thread that set it writes the index
//! and size. So the error names the op the user called (an embedding lookup's
//! `index_select`) even when later kernels meet the same bad indices (its
//! backward `index_add`).
//!
//! A fault does not stop the queue. Everything recorded after the faulting
//! kernel and before the readback that reports it still runs, with the bad
//! indices clamped (forward) or skipped (backward): in a training step that
//! reads the loss only after `optimizer.step()`, that step **has already
//! updated the parameters** from gradients of the clamped lookup when the
//! error arrives. To keep the parameters of a faulting step, read back (or
//! `synchronize()`) before stepping, or restore them from a checkpoint.

/// Which kind of kernel raised a fault. The value is what kernels store in word 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum FaultCode {
    /// An `index_select` index outside its axis.
    IndexSelect = 1,
    /// A `gather` index outside its axis.
    Gather = 2,
    /// A `one_hot` class outside `0..num_classes`.
    OneHot = 3,
    /// An embedding id outside the table.
    Embedding = 4,
    /// A cross-entropy target outside `0..C` (and not `ignore_index`).
    CrossEntropyTarget = 5,
    /// An `index_add` index outside its axis.
    IndexAdd = 6,
    /// A `scatter_add` index outside its axis.
    ScatterAdd = 7,
    /// A `bernoulli` probability outside `[0, 1]` (index: the element).
    Bernoulli = 8,
    /// An invalid `multinomial` weight row (index: the row; size: the
    /// `wgrad_core::checks::sort::BadWeights` reason).
    Multinomial = 9,
    /// An integer floor division or remainder by zero (index: the output
    /// element; size: the `BinaryOp` code), PyTorch's ZeroDivisionError.
    ZeroDivision = 10,
    /// A `binary_cross_entropy` input outside `[0, 1]` or NaN (index: the
    /// element).
    UnitInterval = 11,
}

impl FaultCode {
    pub(crate) fn from_word(word: u32) -> Option<Self> {
        Some(match word {
            1 => FaultCode::IndexSelect,
            2 => FaultCode::Gather,
            3 => FaultCode::OneHot,
            4 => FaultCode::Embedding,
            5 => FaultCode::CrossEntropyTarget,
            6 => FaultCode::IndexAdd,
            7 => FaultCode::ScatterAdd,
            8 => FaultCode::Bernoulli,
            9 => FaultCode::Multinomial,
            10 => FaultCode::ZeroDivision,
            11 => FaultCode::UnitInterval,
            _ => return None,
        })
    }

    /// The op name used in the resulting error message.
    pub fn op_name(self) -> &'static str {
        match self {
            FaultCode::IndexSelect => "index_select",
            FaultCode::Gather => "gather",
            FaultCode::OneHot => "one_hot",
            FaultCode::Embedding => "embedding",
            FaultCode::CrossEntropyTarget => "cross_entropy (target)",
            FaultCode::IndexAdd => "index_add",
            FaultCode::ScatterAdd => "scatter_add",
            FaultCode::Bernoulli => "bernoulli",
            FaultCode::Multinomial => "multinomial",
            FaultCode::ZeroDivision => "integer division",
            FaultCode::UnitInterval => "binary_cross_entropy",
        }
    }
}

/// Size of the fault buffer in bytes.
pub(crate) const FAULT_BYTES: u64 = 16;

/// The four fault words at the start of `bytes` (little endian; zeros if short).
pub(crate) fn words(bytes: &[u8]) -> [u32; 4] {
    let mut words = [0u32; 4];
    for (w, chunk) in words.iter_mut().zip(bytes.chunks_exact(4)) {
        *w = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
    }
    words
}

/// Turns the four fault words into an error, if a fault was recorded.
pub(crate) fn check(words: [u32; 4]) -> wgrad_core::Result<()> {
    if words[0] == 0 {
        return Ok(());
    }
    // The samplers' faults are bad values, not bad indices.
    use wgrad_core::checks::sort::{BadWeights, bad_probability};
    match FaultCode::from_word(words[0]) {
        Some(FaultCode::Bernoulli) => return Err(bad_probability(words[1] as usize)),
        Some(FaultCode::UnitInterval) => {
            return Err(wgrad_core::checks::loss::outside_unit_interval(
                "binary_cross_entropy",
                words[1] as usize,
            ));
        }
        Some(FaultCode::ZeroDivision) => {
            let op = wgrad_core::BinaryOp::ALL
                .iter()
                .find(|o| o.code() == words[2])
                .map_or("integer division", |o| o.name());
            return Err(wgrad_core::checks::arith::zero_division(op));
        }
        Some(FaultCode::Multinomial) => {
            if let Some(why) = BadWeights::from_code(words[2]) {
                return Err(why.error(words[1] as usize));
            }
        }
        _ => {}
    }
    let op = FaultCode::from_word(words[0]).map_or("GPU kernel", FaultCode::op_name);
    Err(wgrad_core::Error::IndexOutOfRange {
        op,
        index: words[1] as i32 as i64,
        size: words[2] as usize,
    })
}
