//! Finite-difference gradient checking, like `torch.autograd.gradcheck`.
//!
//! The function's output is reduced to a scalar with fixed random weights
//! (so every output element is checked), the analytic gradient comes from
//! `backward()`, and the numeric one from central differences whose
//! weighted sums are accumulated in f64 on the host.

use wgrad_core::{DType, Error, Result, random};

use crate::grad_mode::no_grad;
use crate::tensor::Tensor;

/// Tolerances and step of [`gradcheck`].
#[derive(Clone, Copy, Debug)]
pub struct GradcheckOptions {
    /// Finite-difference step (inputs are f32, so not too small).
    pub eps: f64,
    /// Absolute tolerance.
    pub atol: f64,
    /// Relative tolerance (against the numeric gradient's magnitude).
    pub rtol: f64,
}

impl Default for GradcheckOptions {
    fn default() -> Self {
        GradcheckOptions {
            eps: 1e-3,
            atol: 2e-3,
            rtol: 2e-2,
        }
    }
}

/// The worst disagreement found.
#[derive(Clone, Debug)]
pub struct GradcheckReport {
    /// Largest `|analytic - numeric| - rtol*|numeric|` over all checked elements (<= atol passes).
    pub worst_excess: f64,
    /// Where it was: (input index, flat element index, analytic, numeric).
    pub worst_at: Option<(usize, usize, f64, f64)>,
    /// Elements checked.
    pub checked: usize,
    /// The options the check ran with (`atol` decides [`passed`](Self::passed)).
    pub options: GradcheckOptions,
}

impl GradcheckReport {
    /// Whether every element agreed: `worst_excess <= options.atol`.
    pub fn passed(&self) -> bool {
        self.worst_excess <= self.options.atol
    }

    /// `Ok` if passed, else an error describing the worst element.
    pub fn check(&self) -> Result<()> {
        if self.passed() {
            return Ok(());
        }
        let (input, element, analytic, numeric) =
            self.worst_at.unwrap_or((0, 0, f64::NAN, f64::NAN));
        Err(Error::invalid(
            "gradcheck",
            format!(
                "input {input} element {element}: analytic {analytic:.6} vs numeric {numeric:.6} (tolerances atol {} rtol {})",
                self.options.atol, self.options.rtol
            ),
        ))
    }
}

fn weighted_sum(out: &Tensor, weights: &[f64]) -> Result<f64> {
    let values = out.to_vec::<f32>()?;
    Ok(values
        .iter()
        .zip(weights)
        .map(|(&v, &w)| f64::from(v) * w)
        .sum())
}

/// Checks the gradients of `f` at `inputs` (every input that requires grad).
/// Inputs should be small: each element costs two evaluations of `f`.
///
/// ```
/// use wgrad_autograd::gradcheck::{GradcheckOptions, gradcheck};
/// use wgrad_autograd::{Device, Tensor};
/// let x = Tensor::from_vec(vec![0.3f32, -0.7, 1.2], &[3], &Device::Cpu)?
///     .with_requires_grad(true)?;
/// let report = gradcheck(|t| t[0].tanh()?.mul(&t[0]), &[x], GradcheckOptions::default())?;
/// assert!(report.passed());
/// report.check()?; // the same as an error naming the worst element
/// # Ok::<(), wgrad_autograd::Error>(())
/// ```
pub fn gradcheck(
    f: impl Fn(&[Tensor]) -> Result<Tensor>,
    inputs: &[Tensor],
    options: GradcheckOptions,
) -> Result<GradcheckReport> {
    for t in inputs {
        t.zero_grad();
    }
    let out = f(inputs)?;
    let keys = random::seed_keys(0x6772_6164);
    let weights: Vec<f64> = (0..out.numel() as u32)
        .map(|i| f64::from(random::uniform(keys, i, 0.5, 1.5)))
        .collect();
    let weight_tensor = Tensor::from_vec(
        weights.iter().map(|&w| w as f32).collect(),
        &out.shape(),
        &out.device(),
    )?;
    let loss = out.mul(&weight_tensor)?.sum_all()?;
    loss.backward()?;

    let mut report = GradcheckReport {
        worst_excess: f64::NEG_INFINITY,
        worst_at: None,
        checked: 0,
        options,
    };
    for (which, input) in inputs.iter().enumerate() {
        if !input.requires_grad() {
            continue;
        }
        if input.dtype() != DType::F32 {
            return Err(Error::DTypeMismatch {
                op: "gradcheck",
                expected: DType::F32,
                got: input.dtype(),
            });
        }
        let analytic = match input.grad() {
            Some(g) => g.to_vec::<f32>()?,
            None => vec![0.0; input.numel()],
        };
        let base = input.to_vec::<f32>()?;
        let shape = input.shape();
        let device = input.device();
        for element in 0..base.len() {
            // Perturb in f32 and divide by the step actually taken after rounding.
            let evaluate = |delta: f64| -> Result<(f64, f64)> {
                let _guard = no_grad();
                let mut values = base.clone();
                values[element] = (f64::from(values[element]) + delta) as f32;
                let moved_to = f64::from(values[element]);
                let perturbed = Tensor::from_vec(values, &shape, &device)?;
                let args: Vec<Tensor> = inputs
                    .iter()
                    .enumerate()
                    .map(|(i, t)| {
                        if i == which {
                            perturbed.clone()
                        } else {
                            t.clone()
                        }
                    })
                    .collect();
                Ok((weighted_sum(&f(&args)?, &weights)?, moved_to))
            };
            let (plus, x_plus) = evaluate(options.eps)?;
            let (minus, x_minus) = evaluate(-options.eps)?;
            let numeric = (plus - minus) / (x_plus - x_minus);
            let a = f64::from(analytic[element]);
            let excess = (a - numeric).abs() - options.rtol * numeric.abs();
            let excess = if excess.is_nan() {
                f64::INFINITY
            } else {
                excess
            };
            report.checked += 1;
            if excess > report.worst_excess {
                report.worst_excess = excess;
                report.worst_at = Some((which, element, a, numeric));
            }
        }
    }
    if report.checked == 0 {
        report.worst_excess = 0.0;
    }
    Ok(report)
}
