//! Every differentiable op: finite-difference gradcheck on the CPU, and GPU
//! gradients equal to CPU gradients.

use wgrad_autograd::gradcheck::{GradcheckOptions, gradcheck};
use wgrad_autograd::{DType, Device, Result, Tensor};
use wgrad_test_support::gpu;

type Case = (
    &'static str,
    Vec<Vec<usize>>,
    fn(&[Tensor]) -> Result<Tensor>,
);

fn index(values: &[i32], shape: &[usize], device: &Device) -> Tensor {
    Tensor::from_vec(values.to_vec(), shape, device).unwrap()
}

/// Inputs away from kinks (|x| >= 0.1) so finite differences are meaningful.
fn input(shape: &[usize], seed: u64, device: &Device) -> Tensor {
    let t = Tensor::rand_with(shape, 0.1, 1.0, seed, &Device::Cpu).unwrap();
    let sign = Tensor::rand_with(shape, -1.0, 1.0, seed + 100, &Device::Cpu).unwrap();
    let v: Vec<f32> = t
        .to_vec_f32()
        .unwrap()
        .iter()
        .zip(sign.to_vec_f32().unwrap())
        .map(|(m, s)| if s < 0.0 { -m } else { *m })
        .collect();
    Tensor::from_vec(v, shape, device)
        .unwrap()
        .with_requires_grad(true)
        .unwrap()
}

fn positive(shape: &[usize], seed: u64, device: &Device) -> Tensor {
    Tensor::rand_with(shape, 0.5, 2.0, seed, device)
        .unwrap()
        .with_requires_grad(true)
        .unwrap()
}

fn cases() -> Vec<Case> {
    vec![
        ("add broadcast", vec![vec![2, 3], vec![3]], |x| {
            x[0].add(&x[1])
        }),
        ("sub broadcast", vec![vec![2, 1], vec![1, 3]], |x| {
            x[0].sub(&x[1])
        }),
        ("mul", vec![vec![2, 3], vec![2, 3]], |x| x[0].mul(&x[1])),
        ("div", vec![vec![2, 3], vec![3]], |x| {
            x[0].div(&x[1].abs()?.add_scalar(0.5)?)
        }),
        ("pow", vec![vec![2, 3], vec![2, 3]], |x| {
            x[0].abs()?.add_scalar(0.5)?.pow(&x[1])
        }),
        ("maximum", vec![vec![2, 3], vec![2, 3]], |x| {
            x[0].maximum(&x[1])
        }),
        ("minimum", vec![vec![2, 3], vec![1, 3]], |x| {
            x[0].minimum(&x[1])
        }),
        ("scalar ops", vec![vec![2, 3]], |x| {
            (2.0 - &x[0])?.mul_scalar(3.0)?.div_scalar(2.0)
        }),
        ("scalar pow/div", vec![vec![2, 3]], |x| {
            let p = x[0].abs()?.add_scalar(0.5)?;
            p.pow_scalar(1.5)?.add(&(1.0 / &p)?)?.add(&p.binary_scalar(
                wgrad_autograd::BinaryOp::Pow,
                2.0,
                true,
            )?)
        }),
        ("neg abs exp", vec![vec![2, 3]], |x| {
            x[0].neg()?.abs()?.exp()
        }),
        ("log sqrt rsqrt", vec![vec![2, 3]], |x| {
            let p = x[0].abs()?.add_scalar(0.5)?;
            p.log()?.add(&p.sqrt()?)?.add(&p.rsqrt()?)
        }),
        ("sin cos tanh", vec![vec![2, 3]], |x| {
            x[0].sin()?.add(&x[0].cos()?)?.mul(&x[0].tanh()?)
        }),
        ("sigmoid relu", vec![vec![2, 3]], |x| {
            x[0].sigmoid()?.add(&x[0].relu()?)
        }),
        ("gelu silu", vec![vec![2, 3]], |x| {
            x[0].gelu()?.add(&x[0].silu()?)
        }),
        ("leaky square recip", vec![vec![2, 3]], |x| {
            x[0].leaky_relu(0.1)?
                .add(&x[0].square()?)?
                .add(&x[0].abs()?.add_scalar(0.5)?.recip()?)
        }),
        ("clamp", vec![vec![2, 3]], |x| {
            x[0].clamp(Some(-0.5), Some(0.5))
        }),
        (
            "conv2d stride pad groups",
            vec![vec![2, 4, 5, 6], vec![6, 2, 3, 3], vec![6]],
            |x| {
                let args = wgrad_autograd::Conv2dArgs {
                    stride: [2, 1],
                    padding: [[1, 0], [1, 2]],
                    dilation: [1, 2],
                    groups: 2,
                };
                x[0].conv2d(&x[1], Some(&x[2]), &args)
            },
        ),
        ("conv1d same", vec![vec![2, 3, 7], vec![4, 3, 4]], |x| {
            x[0].conv1d(&x[1], None, 1, wgrad_autograd::ConvPadding::Same, 1, 1)
        }),
        (
            "conv_transpose2d",
            vec![vec![1, 4, 3, 4], vec![4, 3, 3, 2], vec![3]],
            |x| {
                let args = wgrad_autograd::ConvTranspose2dArgs {
                    stride: [2, 2],
                    padding: [1, 0],
                    output_padding: [1, 1],
                    ..Default::default()
                };
                x[0].conv_transpose2d(&x[1], Some(&x[2]), &args)
            },
        ),
        ("max_pool2d overlapping", vec![vec![2, 2, 5, 5]], |x| {
            let mut args = wgrad_autograd::Pool2dArgs::new([3, 3]);
            args.stride = [2, 2];
            args.padding = [1, 1];
            x[0].max_pool2d(&args)
        }),
        ("avg_pool2d ceil exclude pad", vec![vec![1, 2, 6, 5]], |x| {
            let mut args = wgrad_autograd::Pool2dArgs::new([3, 3]);
            args.stride = [2, 2];
            args.padding = [1, 1];
            args.ceil_mode = true;
            x[0].avg_pool2d(&args, false, None)
        }),
        ("adaptive_avg_pool2d", vec![vec![2, 2, 5, 7]], |x| {
            x[0].adaptive_avg_pool2d([3, 2])
        }),
        ("max_pool1d avg_pool1d", vec![vec![2, 3, 9]], |x| {
            x[0].max_pool1d(2, None, 0, 1, false)?
                .add(&x[0].avg_pool1d(2, None, 0, false, true)?)
        }),
        (
            "pad constant reflect replicate circular",
            vec![vec![1, 2, 4, 5]],
            |x| {
                use wgrad_autograd::PadMode;
                x[0].pad(&[1, 2], PadMode::Constant(0.5))?
                    .pad(&[2, 1, 1, 3], PadMode::Reflect)?
                    .pad(&[1, 1, 0, 0], PadMode::Replicate)?
                    .pad(&[0, 0, 2, 1], PadMode::Circular)
            },
        ),
        (
            "interpolate bilinear nearest",
            vec![vec![1, 2, 3, 4]],
            |x| {
                use wgrad_autograd::InterpolateMode;
                x[0].interpolate(Some(&[5, 7]), None, InterpolateMode::Linear, false)?
                    .interpolate(None, Some(&[0.5]), InterpolateMode::Nearest, false)
            },
        ),
        ("where", vec![vec![2, 3], vec![2, 3]], |x| {
            Tensor::where_cond(&x[0].gt(&x[1])?, &x[0], &x[1].mul_scalar(2.0)?)
        }),
        ("reshape transpose", vec![vec![2, 3]], |x| {
            x[0].reshape(&[3, 2])?.t()?.mul(&x[0])
        }),
        ("permute contiguous", vec![vec![2, 3, 2]], |x| {
            x[0].permute(&[2, 0, 1])?.contiguous()?.exp()
        }),
        ("narrow", vec![vec![3, 4]], |x| {
            x[0].narrow(1, 1, 2)?.square()
        }),
        // Gradients of several windows of one input (backward/windows.rs):
        // covering the axis (q, k, v of a fused projection), with gaps and
        // a dense use, overlapping, on two axes, and reaching the windows
        // as transposed (non-contiguous) gradients.
        ("chunks covering the axis", vec![vec![3, 6]], |x| {
            let p = x[0].chunk(3, 1)?;
            p[0].mul(&p[1])?.add(&p[2].square()?)
        }),
        ("windows with gaps and a dense use", vec![vec![4, 5]], |x| {
            let a = x[0].narrow(0, 0, 1)?.square()?;
            let b = x[0].narrow(0, 2, 2)?.mul_scalar(3.0)?;
            Tensor::cat(&[&a, &b, &x[0].exp()?], 0)
        }),
        ("overlapping windows", vec![vec![2, 5]], |x| {
            let a = x[0].narrow(1, 0, 3)?.square()?;
            let b = x[0].narrow(1, 2, 3)?.exp()?;
            Tensor::cat(&[&a, &b], 1)
        }),
        ("windows on two axes", vec![vec![3, 4]], |x| {
            let a = x[0].narrow(0, 0, 2)?.square()?;
            let b = x[0].narrow(1, 1, 2)?.exp()?;
            Tensor::cat(&[&a.reshape(&[-1])?, &b.reshape(&[-1])?], 0)
        }),
        ("chunks used transposed", vec![vec![4, 6]], |x| {
            let p = x[0].chunk(3, 1)?;
            let b = p[1].t()?.mul_scalar(2.0)?;
            Tensor::cat(&[&p[0].t()?, &b, &p[2].t()?.square()?], 0)
        }),
        ("expand", vec![vec![3, 1]], |x| {
            x[0].expand(&[2, 3, 4])?.mul_scalar(1.5)
        }),
        ("unsqueeze squeeze", vec![vec![3]], |x| {
            x[0].unsqueeze(0)?.square()?.squeeze(0)
        }),
        ("concat", vec![vec![2, 3], vec![2, 2]], |x| {
            Tensor::cat(&[&x[0], &x[1].square()?], 1)
        }),
        ("sum keepdim", vec![vec![2, 3, 2]], |x| {
            x[0].square()?.sum(&[0, 2], true)
        }),
        ("mean", vec![vec![2, 3]], |x| {
            x[0].square()?.mean(&[1], false)
        }),
        ("max", vec![vec![3, 4]], |x| x[0].max(&[1], false)),
        ("min all", vec![vec![3, 4]], |x| x[0].min(&[], false)),
        ("var", vec![vec![3, 4]], |x| x[0].var(&[1], 1, false)),
        ("softmax", vec![vec![3, 4]], |x| x[0].softmax(1)),
        ("log_softmax axis 0", vec![vec![3, 4]], |x| {
            x[0].log_softmax(0)
        }),
        ("matmul", vec![vec![3, 4], vec![4, 2]], |x| {
            x[0].matmul(&x[1])
        }),
        (
            "matmul batch broadcast",
            vec![vec![2, 3, 4], vec![4, 2]],
            |x| x[0].matmul(&x[1]),
        ),
        ("matmul vector", vec![vec![4], vec![4, 2]], |x| {
            x[0].matmul(&x[1])
        }),
        ("matmul_t both", vec![vec![4, 3], vec![2, 4]], |x| {
            x[0].matmul_t(&x[1], true, true)
        }),
        ("linear", vec![vec![3, 4], vec![2, 4], vec![2]], |x| {
            x[0].linear(&x[1], Some(&x[2]))
        }),
        ("linear no bias", vec![vec![3, 4], vec![2, 4]], |x| {
            x[0].linear(&x[1], None)
        }),
        (
            "linear 3-d",
            vec![vec![2, 3, 4], vec![5, 4], vec![5]],
            |x| x[0].linear(&x[1], Some(&x[2])),
        ),
        ("linear vector", vec![vec![4], vec![3, 4], vec![3]], |x| {
            x[0].linear(&x[1], Some(&x[2]))
        }),
        (
            "linear transposed views",
            vec![vec![4, 3], vec![4, 2], vec![2]],
            |x| {
                x[0].transpose(0, 1)?
                    .linear(&x[1].transpose(0, 1)?, Some(&x[2]))
            },
        ),
        (
            "linear unmerged rows",
            vec![vec![3, 2, 4], vec![2, 4], vec![]],
            |x| x[0].transpose(0, 1)?.linear(&x[1], Some(&x[2])),
        ),
        ("index_select", vec![vec![4, 3]], |x| {
            x[0].index_select(0, &index(&[2, 0, 2], &[3], &x[0].device()))
        }),
        ("gather", vec![vec![3, 4]], |x| {
            x[0].gather(1, &index(&[0, 3, 1, 1, 2, 2], &[3, 2], &x[0].device()))
        }),
        ("cross_entropy", vec![vec![3, 5]], |x| {
            x[0].cross_entropy_per_sample(&index(&[1, 4, 0], &[3], &x[0].device()), 0.1, -100)
        }),
    ]
}

fn make_inputs(shapes: &[Vec<usize>], device: &Device) -> Vec<Tensor> {
    shapes
        .iter()
        .enumerate()
        .map(|(i, s)| {
            if s.is_empty() {
                positive(s, i as u64, device)
            } else {
                input(s, 7 + i as u64, device)
            }
        })
        .collect()
}

#[test]
fn gradcheck_every_op_on_cpu() {
    let mut failures = Vec::new();
    for (name, shapes, f) in cases() {
        let inputs = make_inputs(&shapes, &Device::Cpu);
        let report = gradcheck(f, &inputs, GradcheckOptions::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        if let Err(e) = report.check() {
            failures.push(format!("{name}: {e}"));
        }
    }
    assert!(
        failures.is_empty(),
        "gradcheck failures:\n{}",
        failures.join("\n")
    );
}

/// Every `UnaryOp` (so a new one is covered without editing a list), on
/// inputs away from 0; ops undefined for negatives (NaN at -0.5: log,
/// sqrt, ...) get positive inputs.
#[test]
fn gradcheck_every_unary_op_on_cpu() {
    use wgrad_autograd::UnaryOp;
    let mut failures = Vec::new();
    // Parameterised ops again with parameters other than ALL's.
    let parameterised = [
        UnaryOp::Softplus {
            beta: 2.0,
            threshold: 3.0,
        },
        UnaryOp::Elu { alpha: 0.4 },
        UnaryOp::Hardtanh {
            min: -0.3,
            max: 2.5,
        },
        UnaryOp::LeakyRelu { slope: 0.2 },
    ];
    for op in UnaryOp::ALL.into_iter().chain(parameterised) {
        let x = if op.apply(-0.5).is_nan() {
            positive(&[2, 3], 7, &Device::Cpu)
        } else {
            input(&[2, 3], 7, &Device::Cpu)
        };
        let report = gradcheck(|x| x[0].unary(op), &[x], GradcheckOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", op.name()));
        if let Err(e) = report.check() {
            failures.push(format!("{}: {e}", op.name()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn gpu_gradients_match_cpu_for_every_op() {
    let Some(gpu) = gpu() else { return };
    let mut failures = Vec::new();
    for (name, shapes, f) in cases() {
        let grads = |device: &Device| -> Result<(Vec<f32>, Vec<Vec<f32>>)> {
            let inputs = make_inputs(&shapes, device);
            let out = f(&inputs)?;
            let weights = Tensor::rand_with(&out.shape(), 0.5, 1.5, 99, device)?;
            out.mul(&weights)?.sum_all()?.backward()?;
            let g = inputs
                .iter()
                .map(|t| t.grad().map_or(Ok(vec![]), |g| g.to_vec_f32()))
                .collect::<Result<_>>()?;
            Ok((out.to_vec_f32()?, g))
        };
        let (cpu_out, cpu_grads) =
            grads(&Device::Cpu).unwrap_or_else(|e| panic!("{name} on cpu: {e}"));
        let (gpu_out, gpu_grads) = grads(&gpu).unwrap_or_else(|e| panic!("{name} on gpu: {e}"));
        let close = |a: &[f32], b: &[f32]| {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(x, y)| (x - y).abs() <= 1e-4 * y.abs().max(1.0))
        };
        if !close(&gpu_out, &cpu_out) {
            failures.push(format!(
                "{name}: forward differs\n gpu {gpu_out:?}\n cpu {cpu_out:?}"
            ));
        }
        for (i, (g, c)) in gpu_grads.iter().zip(&cpu_grads).enumerate() {
            if !close(g, c) {
                failures.push(format!(
                    "{name}: grad of input {i} differs\n gpu {g:?}\n cpu {c:?}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn gradcheck_catches_a_wrong_gradient() {
    // A function whose recorded graph lies: detach() hides x from the product.
    let x = input(&[3], 1, &Device::Cpu);
    let report = gradcheck(
        |x| x[0].mul(&x[0].detach()),
        &[x],
        GradcheckOptions::default(),
    )
    .unwrap();
    assert!(
        !report.passed(),
        "gradcheck must reject a wrong gradient: {report:?}"
    );
}

#[test]
fn grads_accumulate_until_zeroed() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2], &Device::Cpu)
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
    for _ in 0..2 {
        x.square().unwrap().sum_all().unwrap().backward().unwrap();
    }
    assert_eq!(x.grad().unwrap().to_vec_f32().unwrap(), vec![4.0, 8.0]);
    x.zero_grad();
    assert!(x.grad().is_none());
}

/// A result none of whose elements come from an input still depends on it,
/// as in PyTorch: `pad` cropping every element, or padding an empty input
/// (whose `[0]` shape `cat` skips), requires grad and gives a zero (or
/// empty) gradient.
#[test]
fn pads_that_keep_no_element_still_require_grad() {
    use wgrad_autograd::PadMode;
    for device in [Some(Device::Cpu), gpu()].into_iter().flatten() {
        let x = Tensor::from_vec(vec![2.0f32], &[1], &device)
            .unwrap()
            .with_requires_grad(true)
            .unwrap();
        let y = x.pad(&[1, -1], PadMode::Constant(0.0)).unwrap();
        assert!(y.requires_grad());
        y.sum_all().unwrap().backward().unwrap();
        assert_eq!(x.grad().unwrap().to_vec_f32().unwrap(), [0.0]);

        let e = Tensor::from_vec(Vec::<f32>::new(), &[0], &device)
            .unwrap()
            .with_requires_grad(true)
            .unwrap();
        let y = e.pad(&[1, 1], PadMode::Constant(3.0)).unwrap();
        assert_eq!(y.to_vec_f32().unwrap(), [3.0, 3.0]);
        assert!(y.requires_grad());
        y.sum_all().unwrap().backward().unwrap();
        assert_eq!(e.grad().unwrap().shape(), [0]);
        // The same skip in `cat` of a 2-D tensor and a legacy `[0]` one.
        let a = Tensor::from_vec(vec![1.0f32, 2.0], &[1, 2], &device).unwrap();
        let e = Tensor::from_vec(Vec::<f32>::new(), &[0], &device)
            .unwrap()
            .with_requires_grad(true)
            .unwrap();
        let y = Tensor::cat(&[&a, &e], 0).unwrap();
        assert_eq!(y.shape(), [1, 2]);
        y.sum_all().unwrap().backward().unwrap();
        assert_eq!(e.grad().unwrap().shape(), [0]);
    }
}

#[test]
fn a_value_used_twice_gets_both_gradients() {
    let x = Tensor::from_vec(vec![3.0f32], &[1], &Device::Cpu)
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
    let y = x.mul(&x).unwrap().add(&x).unwrap(); // x^2 + x
    y.sum_all().unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().to_vec_f32().unwrap(), vec![7.0]);
}

#[test]
fn no_grad_records_nothing() {
    let x = Tensor::ones(&[2], &Device::Cpu)
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
    let y = {
        let _g = wgrad_autograd::no_grad();
        x.mul_scalar(2.0).unwrap()
    };
    assert!(!y.requires_grad());
    assert!(y.sum_all().unwrap().backward().is_err());
}

#[test]
fn deep_graphs_do_not_overflow_the_stack() {
    let x = Tensor::ones(&[1], &Device::Cpu)
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
    let mut y = x.clone();
    for _ in 0..20_000 {
        y = y.add_scalar(1.0).unwrap();
    }
    y.sum_all().unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().to_vec_f32().unwrap(), vec![1.0]);
}

#[test]
fn backward_of_a_non_scalar_needs_a_gradient() {
    let x = Tensor::ones(&[2], &Device::Cpu)
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
    let err = x
        .mul_scalar(2.0)
        .unwrap()
        .backward()
        .unwrap_err()
        .to_string();
    assert!(err.contains("[2]"), "{err}");
}

#[test]
fn linear_records_one_node() {
    let x = input(&[3, 4], 1, &Device::Cpu);
    let w = input(&[2, 4], 2, &Device::Cpu);
    let b = input(&[2], 3, &Device::Cpu);
    let y = x.linear(&w, Some(&b)).unwrap();
    assert_eq!(y.grad_fn_name(), Some("linear"));
    // Only inputs that require grad get one.
    let c = Tensor::ones(&[3, 4], &Device::Cpu).unwrap();
    c.linear(&w, Some(&b))
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    assert!(c.grad().is_none() && w.grad().is_some() && b.grad().is_some());
}

#[test]
fn mixing_devices_names_both() {
    let Some(gpu) = gpu() else { return };
    let a = Tensor::ones(&[2], &Device::Cpu).unwrap();
    let b = Tensor::ones(&[2], &gpu).unwrap();
    let err = a.add(&b).unwrap_err().to_string();
    assert!(err.contains("cpu") && err.contains("gpu"), "{err}");
    let w = Tensor::ones(&[3, 2], &gpu).unwrap();
    let err = a.linear(&w, None).unwrap_err().to_string();
    assert!(
        err.starts_with("linear:") && err.contains("cpu") && err.contains("gpu"),
        "{err}"
    );
    let _ = DType::F32;
}

/// `F.cross_entropy` (mean) on the GPU seeds `backward()` with the 1.0 its
/// one-pass forward wrote: the loss's retained gradient is 1, the logits'
/// gradient is the CPU's, a retained graph accumulates on a second
/// backward, and a freed graph is still an error.
#[test]
fn gpu_cross_entropy_loss_seeds_its_own_backward() {
    use wgrad_autograd::BackwardOptions;
    let Some(dev) = gpu() else { return };
    let logits_cpu = input(&[16, 10], 31, &Device::Cpu);
    let target: Vec<i32> = (0..16).map(|i| i * 7 % 10).collect();
    let loss_cpu = logits_cpu
        .cross_entropy_mean_loss(&index(&target, &[16], &Device::Cpu), 0.0, -100)
        .unwrap();
    loss_cpu.backward().unwrap();
    let want = logits_cpu.grad().unwrap().to_vec_f32().unwrap();

    let logits = input(&[16, 10], 31, &dev);
    let loss = logits
        .cross_entropy_mean_loss(&index(&target, &[16], &dev), 0.0, -100)
        .unwrap();
    loss.retain_grad().unwrap();
    let keep = BackwardOptions { retain_graph: true };
    loss.backward_with_options(None, keep).unwrap();
    assert_eq!(loss.grad().unwrap().to_vec_f32().unwrap(), vec![1.0]);
    let got = logits.grad().unwrap().to_vec_f32().unwrap();
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-6 + 1e-5 * w.abs(), "{g} vs {w}");
    }
    loss.backward_with_options(None, keep).unwrap();
    let twice = logits.grad().unwrap().to_vec_f32().unwrap();
    for (t, g) in twice.iter().zip(&got) {
        assert!(
            (t - 2.0 * g).abs() <= 1e-6 + 1e-5 * g.abs(),
            "{t} vs 2 x {g}"
        );
    }
    loss.backward().unwrap();
    assert!(loss.backward().is_err(), "a freed graph is an error");

    // The forward pass also wrote the gradient for its own seed; another
    // upstream gradient (a scaled loss) takes the backward kernel instead.
    let logits = input(&[16, 10], 31, &dev);
    let loss = logits
        .cross_entropy_mean_loss(&index(&target, &[16], &dev), 0.0, -100)
        .unwrap();
    loss.mul_scalar(3.0).unwrap().backward().unwrap();
    let got = logits.grad().unwrap().to_vec_f32().unwrap();
    for (g, w) in got.iter().zip(&want) {
        assert!(
            (g - 3.0 * w).abs() <= 1e-6 + 1e-5 * w.abs(),
            "{g} vs 3 x {w}"
        );
    }
    // Logits changed after the forward pass: the usual in-place error,
    // not the stale gradient.
    let logits = input(&[16, 10], 31, &dev);
    let loss = logits
        .cross_entropy_mean_loss(&index(&target, &[16], &dev), 0.0, -100)
        .unwrap();
    {
        let _no_grad = wgrad_autograd::no_grad();
        logits.add_scalar_(1.0).unwrap();
    }
    let err = loss.backward().unwrap_err().to_string();
    assert!(err.contains("modified by an inplace operation"), "{err}");
}

/// `linear_relu`'s gradients where the GPU masks the output gradient in a
/// pass of its own (products past the folding bound: 256 x 512 x 1024
/// multiply-adds), once for both products, against the CPU; and a small
/// layer where the mask is folded into the products.
#[test]
fn gpu_linear_relu_grads_match_cpu_on_both_sides_of_the_folding_bound() {
    let Some(dev) = gpu() else { return };
    for (rows, inp, out) in [(256, 1024, 512), (16, 24, 8)] {
        let run = |device: &Device| {
            let x = input(&[rows, inp], 41, device);
            let w = input(&[out, inp], 42, device);
            let b = input(&[out], 43, device);
            let y = x.linear_relu(&w, Some(&b)).unwrap();
            let up = input(&[rows, out], 44, device).detach();
            y.mul(&up).unwrap().sum_all().unwrap().backward().unwrap();
            [x, w, b].map(|t| t.grad().unwrap().to_vec_f32().unwrap())
        };
        let (want, got) = (run(&Device::Cpu), run(&dev));
        for (i, (w, g)) in want.iter().zip(&got).enumerate() {
            let scale = w.iter().fold(0f32, |m, v| m.max(v.abs())).max(1.0);
            for (a, b) in w.iter().zip(g) {
                assert!(
                    (a - b).abs() <= 1e-4 * scale,
                    "[{rows}, {inp}] -> {out}, grad {i}: {b} vs {a}"
                );
            }
        }
    }
}
