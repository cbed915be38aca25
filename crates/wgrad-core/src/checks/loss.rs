//! Cross-entropy with class-index targets: the shapes of logits, targets and
//! the upstream gradient, and the smoothing factor.

use crate::{Error, Result};

/// Validates logits `[N, C]`, target `[N]` and the smoothing factor;
/// returns `(N, C)`. (Dtypes, F32 logits and I32 targets, are the caller's.)
pub fn cross_entropy(
    op: &'static str,
    logits: &[usize],
    target: &[usize],
    label_smoothing: f32,
) -> Result<(usize, usize)> {
    let &[n, c] = logits else {
        return Err(Error::invalid(
            op,
            format!("logits must be 2-D [N, C], got shape {logits:?}"),
        ));
    };
    if target != [n] {
        return Err(Error::ShapeMismatch {
            op,
            lhs: logits.to_vec(),
            rhs: target.to_vec(),
        });
    }
    // Same range check as torch (which also rejects NaN).
    if !(0.0..=1.0).contains(&label_smoothing) {
        return Err(Error::invalid(
            op,
            format!("label_smoothing must be in [0, 1], got {label_smoothing}"),
        ));
    }
    Ok((n, c))
}

/// Error unless the per-sample upstream gradient of a batch of `n` samples
/// has shape `[n]`.
pub fn cross_entropy_grad(op: &'static str, n: usize, grad: &[usize]) -> Result<()> {
    if grad != [n] {
        return Err(Error::ShapeMismatch {
            op,
            lhs: vec![n],
            rhs: grad.to_vec(),
        });
    }
    Ok(())
}

/// Per-sample losses `[N]` and their targets `[N]` for a 'mean'
/// reduction that skips ignored targets.
pub fn loss_mean(op: &'static str, losses: &[usize], target: &[usize]) -> Result<()> {
    if losses.len() != 1 || target != losses {
        return Err(Error::ShapeMismatch {
            op,
            lhs: losses.to_vec(),
            rhs: target.to_vec(),
        });
    }
    Ok(())
}

/// PyTorch's error for a probability input outside [0, 1] (NaN included),
/// naming the first bad element found.
pub fn outside_unit_interval(op: &'static str, index: usize) -> Error {
    Error::invalid(
        op,
        format!("all elements of input should be between 0 and 1 (element {index} is not)"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logits_targets_and_smoothing() {
        assert_eq!(cross_entropy("ce", &[4, 3], &[4], 0.1).unwrap(), (4, 3));
        assert_eq!(
            cross_entropy("ce", &[4], &[4], 0.0)
                .unwrap_err()
                .to_string(),
            "ce: logits must be 2-D [N, C], got shape [4]"
        );
        assert!(matches!(
            cross_entropy("ce", &[4, 3], &[3], 0.0),
            Err(Error::ShapeMismatch { .. })
        ));
        for bad in [-0.1, 1.5, f32::NAN] {
            assert!(matches!(
                cross_entropy("ce", &[4, 3], &[4], bad),
                Err(Error::InvalidArgument { .. })
            ));
        }
    }

    #[test]
    fn grad_is_one_per_sample() {
        assert!(cross_entropy_grad("ce", 4, &[4]).is_ok());
        let Err(Error::ShapeMismatch { lhs, rhs, .. }) = cross_entropy_grad("ce", 4, &[4, 1])
        else {
            panic!("expected ShapeMismatch");
        };
        assert_eq!((lhs, rhs), (vec![4], vec![4, 1]));
    }
}
