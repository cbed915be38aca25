//! A hand-drawn-style stroke font for the digits 0–9.
//!
//! Each digit is a few polylines in a glyph box of `x ∈ [-0.3, 0.3]`,
//! `y ∈ [-0.5, 0.5]` (y pointing down, as in images). The proportions of
//! every glyph (loop sizes, where strokes start and end, optional flags and
//! crossbars) are drawn from the sample's generator, so that two samples of
//! one digit differ in shape, not only in position.

use super::Rng;

/// A polyline in glyph coordinates.
pub(crate) type Stroke = Vec<[f32; 2]>;

/// Points along the ellipse arc centred at `(cx, cy)` with radii `(rx, ry)`
/// from angle `a0` to `a1` in degrees (0° = right, 90° = down), one point
/// every 15° or less, so that curves stay smooth after scaling to ~20 px.
fn arc(cx: f32, cy: f32, rx: f32, ry: f32, a0: f32, a1: f32) -> Stroke {
    let steps = ((a1 - a0).abs() / 15.0).ceil().max(1.0) as usize;
    (0..=steps)
        .map(|k| {
            let a = (a0 + (a1 - a0) * k as f32 / steps as f32).to_radians();
            [cx + rx * a.cos(), cy + ry * a.sin()]
        })
        .collect()
}

/// `a` followed by the points of `b` (joining two pieces into one stroke).
fn join(mut a: Stroke, b: Stroke) -> Stroke {
    a.extend(b);
    a
}

/// The strokes of `digit` (0–9) with proportions drawn from `rng`.
pub(crate) fn glyph(digit: usize, rng: &mut Rng) -> Vec<Stroke> {
    let mut j = |amount: f32| rng.jitter(amount);
    match digit {
        0 => {
            let start = 250.0 + j(40.0);
            vec![arc(
                j(0.02),
                0.0,
                0.26 + j(0.05),
                0.47 + j(0.03),
                start,
                start + 360.0 + j(15.0).abs(),
            )]
        }
        1 => {
            let (top, bottom) = (
                [0.04 + j(0.06), -0.5 + j(0.03)],
                [-0.02 + j(0.06), 0.5 + j(0.03)],
            );
            let mut strokes = vec![vec![top, bottom]];
            if rng.chance(0.5) {
                strokes.push(vec![
                    [
                        top[0] - 0.15 + rng.jitter(0.04),
                        top[1] + 0.15 + rng.jitter(0.05),
                    ],
                    top,
                ]);
            }
            if rng.chance(0.25) {
                strokes.push(vec![
                    [bottom[0] - 0.13, bottom[1]],
                    [bottom[0] + 0.13, bottom[1]],
                ]);
            }
            strokes
        }
        2 => {
            let cy = -0.22 + j(0.04);
            let r = 0.25 + j(0.03);
            let top = arc(0.0, cy, r, 0.26 + j(0.03), 190.0 + j(15.0), 380.0 + j(15.0));
            let base_y = 0.48 + j(0.02);
            let corner = [-0.27 + j(0.04), base_y];
            vec![join(top, vec![corner, [0.28 + j(0.04), base_y + j(0.03)]])]
        }
        3 => {
            let (ur, lr) = (0.22 + j(0.03), 0.26 + j(0.03));
            let mid = j(0.04);
            let upper = arc(0.0, mid - 0.24, ur, 0.24, 200.0 + j(20.0), 450.0);
            let lower = arc(j(0.02), mid + 0.25, lr, 0.25, 270.0, 520.0 + j(20.0));
            vec![join(upper, lower)]
        }
        4 => {
            let bar_y = 0.15 + j(0.06);
            let stem_x = 0.14 + j(0.04);
            if rng.chance(0.5) {
                // Closed top: the slanted stroke meets the stem at its top.
                let top = [stem_x, -0.5 + rng.jitter(0.03)];
                vec![
                    vec![
                        top,
                        [-0.33 + rng.jitter(0.03), bar_y],
                        [0.32 + rng.jitter(0.03), bar_y],
                    ],
                    vec![top, [stem_x + rng.jitter(0.03), 0.5]],
                ]
            } else {
                // Open top: a separate near-vertical stroke down to the bar.
                vec![
                    vec![
                        [-0.2 + rng.jitter(0.04), -0.5],
                        [-0.27 + rng.jitter(0.03), bar_y],
                        [0.32, bar_y],
                    ],
                    vec![
                        [stem_x, -0.3 + rng.jitter(0.1)],
                        [stem_x + rng.jitter(0.03), 0.5],
                    ],
                ]
            }
        }
        5 => {
            let top_y = -0.5 + j(0.02);
            let left = -0.2 + j(0.04);
            let neck = [left - 0.03 + j(0.02), -0.05 + j(0.04)];
            let bowl = arc(
                0.0,
                0.21 + j(0.03),
                0.26 + j(0.03),
                0.28 + j(0.02),
                215.0,
                510.0 + j(20.0),
            );
            vec![join(
                vec![[0.25 + j(0.04), top_y], [left, top_y], neck],
                bowl,
            )]
        }
        6 => {
            let lr = 0.24 + j(0.03);
            let lcy = 0.22 + j(0.03);
            let descender = arc(0.3, lcy, 0.3 + lr, 0.7 + j(0.05), 250.0 + j(10.0), 180.0);
            let lp = arc(0.0, lcy, lr, 0.26 + j(0.02), 180.0, 520.0 + j(20.0));
            vec![join(descender, lp)]
        }
        7 => {
            let top_y = -0.48 + j(0.03);
            let mut strokes = vec![vec![
                [-0.27 + j(0.04), top_y + j(0.04)],
                [0.28 + j(0.03), top_y],
                [-0.06 + j(0.1), 0.5],
            ]];
            if rng.chance(0.3) {
                strokes.push(vec![[-0.1, 0.02], [0.2, 0.02]]);
            }
            strokes
        }
        8 => {
            let mid = j(0.04);
            let (ur, lr) = (0.2 + j(0.03), 0.25 + j(0.03));
            let start = 270.0 + j(30.0);
            vec![
                arc(j(0.03), mid - 0.26, ur, 0.24, start, start + 360.0),
                arc(j(0.03), mid + 0.23, lr, 0.27, start, start + 360.0),
            ]
        }
        _ => {
            let (lx, ly) = (j(0.02), -0.22 + j(0.04));
            let (rx, ry) = (0.24 + j(0.03), 0.25 + j(0.02));
            let lp = arc(lx, ly, rx, ry, 0.0, 360.0 + j(20.0).abs());
            let stem = if rng.chance(0.5) {
                vec![[lx + rx, ly], [lx + rx - 0.04 + rng.jitter(0.04), 0.5]]
            } else {
                arc(lx + rx - 0.35, ly, 0.35, 0.72, 0.0, 80.0 + rng.jitter(10.0))
            };
            vec![lp, stem]
        }
    }
}
