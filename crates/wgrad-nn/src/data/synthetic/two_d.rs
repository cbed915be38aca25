//! Two-dimensional toy classification problems (as in scikit-learn).

use std::f32::consts::PI;

use super::Rng;
use crate::data::Dataset;

/// Builds a dataset of 2-D points from `(x, y, label)` triples.
fn from_points(points: Vec<(f32, f32, i32)>) -> Dataset {
    let mut features = Vec::with_capacity(2 * points.len());
    let mut labels = Vec::with_capacity(points.len());
    for (x, y, label) in points {
        features.extend_from_slice(&[x, y]);
        labels.push(label);
    }
    Dataset::from_parts(features, vec![2], labels)
}

/// Two interleaved spirals of `n_per_class` points each (1.5 turns, radius up
/// to 1), labels 0 and 1 alternating, with Gaussian noise of standard
/// deviation `noise` added to each coordinate. Samples are shaped `[2]`.
///
/// Not linearly separable: a small MLP (2-32-32-2) separates it; a linear
/// model stays near 50 %.
pub fn two_spirals(n_per_class: usize, noise: f32, seed: u64) -> Dataset {
    let mut rng = Rng::new(seed, 0x5a1a);
    let mut points = Vec::with_capacity(2 * n_per_class);
    for _ in 0..n_per_class {
        // Radius grows with the angle; class 1 is class 0 turned by half a turn.
        let t = rng.uniform(0.05, 1.0);
        let angle = 3.0 * PI * t;
        let (x, y) = (t * angle.cos(), t * angle.sin());
        for (label, sign) in [(0, 1.0), (1, -1.0)] {
            let nx = noise * rng.normal();
            let ny = noise * rng.normal();
            points.push((sign * x + nx, sign * y + ny, label));
        }
    }
    from_points(points)
}

/// Two interleaving half circles (`sklearn.datasets.make_moons`): `n` points,
/// labels alternating 0 (upper moon, centred at the origin) and 1 (lower
/// moon, shifted to `(1, 0.5)` and flipped), with Gaussian noise of standard
/// deviation `noise` on each coordinate. Samples are shaped `[2]`.
pub fn moons(n: usize, noise: f32, seed: u64) -> Dataset {
    let mut rng = Rng::new(seed, 0x300b);
    let points = (0..n)
        .map(|i| {
            let t = rng.uniform(0.0, PI);
            let label = (i % 2) as i32;
            let (x, y) = if label == 0 {
                (t.cos(), t.sin())
            } else {
                (1.0 - t.cos(), 0.5 - t.sin())
            };
            (x + noise * rng.normal(), y + noise * rng.normal(), label)
        })
        .collect();
    from_points(points)
}
