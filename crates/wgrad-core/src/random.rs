//! The counter-based random generator shared by the CPU and the GPU.
//!
//! Element `i` of a random tensor drawn with key `seed` is a pure function of
//! `(seed, i)`, so the CPU backend and the WGSL kernel in
//! `kernels/random/random.wgsl` produce the same bits. The mixing function is
//! the `lowbias32` integer hash (Wellons); two rounds keyed by the two halves
//! of the seed decorrelate streams with nearby seeds.

/// One round of the `lowbias32` integer hash.
pub fn mix32(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^= x >> 16;
    x
}

/// Splits a 64-bit seed into the two 32-bit keys the kernels take.
pub fn seed_keys(seed: u64) -> [u32; 2] {
    [
        mix32(seed as u32 ^ 0x9e37_79b9),
        mix32((seed >> 32) as u32 ^ 0x85eb_ca6b),
    ]
}

/// Random bits for counter `counter` in stream `stream` (0 or 1) under `keys`.
pub fn random_bits(keys: [u32; 2], stream: u32, counter: u32) -> u32 {
    let k1 = keys[1] ^ stream.wrapping_mul(0x27d4_eb2f);
    mix32(mix32(counter ^ keys[0]).wrapping_add(k1) ^ 0x1656_67b1)
}

/// Uniform float in `[0, 1)` from 24 random bits (exactly representable).
pub fn bits_to_unit(bits: u32) -> f32 {
    (bits >> 8) as f32 * (1.0 / 16_777_216.0)
}

/// Uniform in `[low, high)` for element `i`.
pub fn uniform(keys: [u32; 2], i: u32, low: f32, high: f32) -> f32 {
    low + (high - low) * bits_to_unit(random_bits(keys, 0, i))
}

/// Standard normal for element `i` via Box–Muller (f32 math, as on the GPU).
pub fn normal(keys: [u32; 2], i: u32, mean: f32, std: f32) -> f32 {
    let u1 = 1.0 - bits_to_unit(random_bits(keys, 0, i)); // (0, 1]: log is finite
    let u2 = bits_to_unit(random_bits(keys, 1, i));
    let r = (-2.0 * u1.ln()).sqrt();
    mean + std * r * (std::f32::consts::TAU * u2).cos()
}

/// Uniform integer in `low .. low + range` for element `i` (`range` >= 1):
/// the high word of `bits * range` (Lemire's multiply-shift), as the
/// `randint` kernel computes it; `range` 0 means all 2^32 values.
pub fn uniform_int(keys: [u32; 2], i: u32, low: i32, range: u32) -> i32 {
    let bits = random_bits(keys, 0, i);
    let offset = if range == 0 {
        bits
    } else {
        ((u64::from(bits) * u64::from(range)) >> 32) as u32
    };
    low.wrapping_add(offset as i32)
}

/// A seeded source of fresh seeds (SplitMix64), like `torch.Generator`:
/// each random op takes the next seed so that consecutive draws differ.
#[derive(Clone, Debug)]
pub struct Generator {
    state: u64,
}

impl Generator {
    /// A generator whose sequence depends only on `seed`.
    pub fn new(seed: u64) -> Self {
        Generator { state: seed }
    }

    /// The next 64-bit seed.
    pub fn next_seed(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_is_in_range_and_mean_half() {
        let keys = seed_keys(7);
        let xs: Vec<f32> = (0..10_000).map(|i| uniform(keys, i, 0.0, 1.0)).collect();
        assert!(xs.iter().all(|&x| (0.0..1.0).contains(&x)));
        let mean = xs.iter().sum::<f32>() / xs.len() as f32;
        assert!((mean - 0.5).abs() < 0.02, "{mean}");
    }

    #[test]
    fn normal_has_unit_variance() {
        let keys = seed_keys(11);
        let xs: Vec<f32> = (0..20_000).map(|i| normal(keys, i, 0.0, 1.0)).collect();
        let mean = xs.iter().sum::<f32>() / xs.len() as f32;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f32>() / xs.len() as f32;
        assert!(
            mean.abs() < 0.03 && (var - 1.0).abs() < 0.05,
            "{mean} {var}"
        );
    }

    #[test]
    fn seeds_give_different_streams() {
        let a = seed_keys(1);
        let b = seed_keys(2);
        assert_ne!(random_bits(a, 0, 0), random_bits(b, 0, 0));
        let mut g = Generator::new(0);
        assert_ne!(g.next_seed(), g.next_seed());
    }
}
