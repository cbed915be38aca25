//! Synthetic datasets: shapes, balance, determinism, and that the digits are
//! a real (learnable but not trivial) classification task.

use wgrad_nn::data::synthetic::{DIGIT_SIDE, digits, digits_split, moons, two_spirals};
use wgrad_nn::data::{Dataset, ascii_preview};

fn balanced(data: &Dataset, classes: usize) {
    let counts = data.class_counts();
    assert_eq!(counts.len(), classes);
    let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
    assert!(max - min <= 1, "unbalanced classes {counts:?}");
}

#[test]
fn two_spirals_shapes_balance_and_geometry() {
    let data = two_spirals(150, 0.0, 3);
    assert_eq!(data.len(), 300);
    assert_eq!(data.features_shape(), &[2]);
    balanced(&data, 2);
    // Noise-free: radius at most 1 and class 1 is class 0 turned by half a turn.
    for pair in 0..150 {
        let (a, la) = data.get(2 * pair).unwrap();
        let (b, lb) = data.get(2 * pair + 1).unwrap();
        assert_eq!((la, lb), (0, 1));
        assert!(a[0].hypot(a[1]) <= 1.0 + 1e-6);
        assert_eq!([-a[0], -a[1]], [b[0], b[1]]);
    }
    assert_eq!(two_spirals(150, 0.1, 3), two_spirals(150, 0.1, 3));
    assert_ne!(two_spirals(150, 0.1, 3), two_spirals(150, 0.1, 4));
    assert_ne!(two_spirals(150, 0.1, 3), data, "noise must move the points");
}

#[test]
fn moons_shapes_balance_and_range() {
    let data = moons(201, 0.0, 9);
    assert_eq!(data.len(), 201);
    assert_eq!(data.features_shape(), &[2]);
    balanced(&data, 2);
    for i in 0..data.len() {
        let (p, label) = data.get(i).unwrap();
        // Upper moon: unit half circle at the origin; lower: shifted to (1, 0.5).
        let (cx, cy) = if label == 0 { (0.0, 0.0) } else { (1.0, 0.5) };
        assert!(
            ((p[0] - cx).hypot(p[1] - cy) - 1.0).abs() < 1e-5,
            "{p:?} {label}"
        );
        assert!(if label == 0 {
            p[1] >= -1e-6
        } else {
            p[1] <= 0.5 + 1e-6
        });
    }
    assert_eq!(moons(50, 0.2, 1), moons(50, 0.2, 1));
    assert_ne!(moons(50, 0.2, 1), moons(50, 0.2, 2));
}

#[test]
fn digits_values_labels_and_determinism() {
    let data = digits(200, 42);
    assert_eq!(data.len(), 200);
    assert_eq!(data.features_shape(), &[DIGIT_SIDE * DIGIT_SIDE]);
    assert!(data.features().iter().all(|v| (0.0..=1.0).contains(v)));
    balanced(&data, 10);
    assert_eq!(data.labels()[..12], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1]);
    // Every image has ink, and a fair amount of background.
    for i in 0..data.len() {
        let (x, _) = data.get(i).unwrap();
        let ink = x.iter().filter(|&&v| v > 0.5).count();
        assert!(
            (20..400).contains(&ink),
            "sample {i} has {ink} inked pixels"
        );
    }
    assert_eq!(data, digits(200, 42));
    // Sample i depends only on (seed, i): a shorter request is a prefix.
    assert_eq!(digits(30, 42), data.split_at(30).unwrap().0);
    assert_ne!(digits(30, 43), digits(30, 42));
}

#[test]
fn samples_of_the_same_digit_differ() {
    let data = digits(100, 5);
    for digit in 0..10 {
        let samples: Vec<&[f32]> = (digit..100)
            .step_by(10)
            .map(|i| data.get(i).unwrap().0)
            .collect();
        for a in 0..samples.len() {
            for b in a + 1..samples.len() {
                let diff: f32 = samples[a]
                    .iter()
                    .zip(samples[b])
                    .map(|(x, y)| (x - y).abs())
                    .sum();
                assert!(
                    diff > 10.0,
                    "digit {digit}: samples {a} and {b} are nearly identical ({diff})"
                );
            }
        }
    }
}

#[test]
fn digits_split_uses_independent_streams() {
    let (train, test) = digits_split(50, 20, 1);
    assert_eq!((train.len(), test.len()), (50, 20));
    assert_ne!(train.features()[..784], test.features()[..784]);
    assert_eq!(digits_split(50, 20, 1), (train, test));
}

#[test]
fn print_a_preview_of_each_digit() {
    let data = digits(10, 0);
    for i in 0..10 {
        let (x, label) = data.get(i).unwrap();
        let text = ascii_preview(x, DIGIT_SIDE, DIGIT_SIDE);
        assert_eq!(text.lines().count(), DIGIT_SIDE);
        assert!(text.lines().all(|l| l.chars().count() == DIGIT_SIDE));
        println!("digit {label}:\n{text}");
    }
    assert_eq!(ascii_preview(&[0.0, 1.0, 0.5, 2.0], 2, 2), " @\n+@\n");
    assert_eq!(ascii_preview(&[0.0], 1, 2), " ?\n");
}

/// Index of the nearest of `centroids` (each `d` values) to `x`.
fn nearest(x: &[f32], centroids: &[Vec<f32>]) -> usize {
    let dist = |c: &Vec<f32>| x.iter().zip(c).map(|(a, b)| (a - b) * (a - b)).sum::<f32>();
    (0..centroids.len())
        .min_by(|&a, &b| dist(&centroids[a]).total_cmp(&dist(&centroids[b])))
        .unwrap()
}

#[test]
fn digits_are_separable_but_not_trivial() {
    // A nearest-centroid classifier (no learning beyond class means) must do
    // well above chance, proving the classes are separable, yet fall short of
    // perfect, proving the jitter makes it a real learning task.
    let (train, test) = digits_split(2000, 1000, 7);
    let d = train.sample_numel();
    let mut centroids = vec![vec![0.0f32; d]; 10];
    let counts = train.class_counts();
    for i in 0..train.len() {
        let (x, y) = train.get(i).unwrap();
        for (c, v) in centroids[y as usize].iter_mut().zip(x) {
            *c += v / counts[y as usize] as f32;
        }
    }
    let correct = (0..test.len())
        .filter(|&i| {
            let (x, y) = test.get(i).unwrap();
            nearest(x, &centroids) == y as usize
        })
        .count();
    let accuracy = correct as f32 / test.len() as f32;
    println!("nearest-centroid test accuracy: {accuracy:.3}");
    assert!(accuracy > 0.80, "nearest-centroid accuracy {accuracy}");
    assert!(
        accuracy < 0.97,
        "nearest-centroid accuracy {accuracy}: the task is too easy"
    );
}
