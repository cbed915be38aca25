//! Deterministic permutations for shuffling, with no external `rand` crate.
//!
//! The order of epoch `e` under seed `s` is a pure function of `(s, e)`, so a
//! run can be replayed (or resumed at any epoch) without carrying generator
//! state around.

use wgrad_core::random::Generator;

/// The SplitMix64 finaliser: a bijective 64-bit mix.
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Combines a seed with a stream index (an epoch, a sample index) into a
/// fresh generator.
///
/// `Generator::new(seed + k * gamma)` would not do: SplitMix advances its state
/// by the same constant, so stream `k + 1` would be stream `k` shifted by one
/// draw. Hashing the pair first decorrelates neighbouring streams.
pub(crate) fn stream(seed: u64, index: u64) -> Generator {
    Generator::new(mix64(
        seed ^ mix64(index.wrapping_add(0x632b_e59b_d9b4_e019)),
    ))
}

/// Uniform integer in `0..bound` (`bound > 0`) by Lemire's multiply-high;
/// the bias (at most `bound / 2^64`) is far below anything observable.
pub(crate) fn below(generator: &mut Generator, bound: usize) -> usize {
    ((u128::from(generator.next_seed()) * bound as u128) >> 64) as usize
}

/// A Fisher–Yates shuffle of `0..n` determined by `(seed, epoch)`.
pub fn permutation(n: usize, seed: u64, epoch: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut generator = stream(seed, epoch);
    for i in (1..n).rev() {
        let j = below(&mut generator, i + 1);
        order.swap(i, j);
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_a_permutation_and_depends_on_seed_and_epoch() {
        let p = permutation(100, 3, 0);
        let mut sorted = p.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..100).collect::<Vec<_>>());
        assert_ne!(p, (0..100).collect::<Vec<_>>());
        assert_eq!(p, permutation(100, 3, 0));
        assert_ne!(p, permutation(100, 3, 1));
        assert_ne!(p, permutation(100, 4, 0));
    }

    #[test]
    fn every_position_is_reachable() {
        // Element 0 should land in each of 4 slots about equally often.
        let mut counts = [0usize; 4];
        for epoch in 0..4000 {
            let p = permutation(4, 9, epoch);
            let slot = p.iter().position(|&x| x == 0).unwrap();
            counts[slot] += 1;
        }
        assert!(
            counts.iter().all(|&c| (850..1150).contains(&c)),
            "{counts:?}"
        );
    }
}
