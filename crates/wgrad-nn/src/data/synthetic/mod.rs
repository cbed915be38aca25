//! Seeded synthetic datasets that need no download.
//!
//! Every generator is a pure function of its arguments: the same seed gives
//! bit-identical data on every machine, so tests and examples are
//! reproducible without shipping files.

mod digits;
mod glyphs;
mod two_d;

pub use digits::{DIGIT_SIDE, digits, digits_split};
pub use two_d::{moons, two_spirals};

use wgrad_core::random::Generator;

use super::shuffle::stream;

/// A small sampler over SplitMix64 for the generators in this module.
pub(crate) struct Rng(Generator);

impl Rng {
    /// The stream `index` under `seed` (independent of other indices).
    pub(crate) fn new(seed: u64, index: u64) -> Rng {
        Rng(stream(seed, index))
    }

    /// Uniform in `[0, 1)` from 24 random bits (exact in f32).
    pub(crate) fn unit(&mut self) -> f32 {
        (self.0.next_seed() >> 40) as f32 * (1.0 / 16_777_216.0)
    }

    /// Uniform in `[low, high)`.
    pub(crate) fn uniform(&mut self, low: f32, high: f32) -> f32 {
        low + (high - low) * self.unit()
    }

    /// Uniform in `[-amount, amount)`.
    pub(crate) fn jitter(&mut self, amount: f32) -> f32 {
        self.uniform(-amount, amount)
    }

    /// `true` with probability `p`.
    pub(crate) fn chance(&mut self, p: f32) -> bool {
        self.unit() < p
    }

    /// Standard normal via Box–Muller.
    pub(crate) fn normal(&mut self) -> f32 {
        let u1 = 1.0 - self.unit(); // (0, 1]: the log stays finite
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
    }
}
