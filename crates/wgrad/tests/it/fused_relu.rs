//! A `Linear` or `Conv2d` followed by `ReLU` in a `Sequential` runs as one
//! node (`linear_relu`, `conv2d_relu`: on a GPU the ReLU in the product's
//! store). Outputs and every gradient must equal the unfused ops', on both
//! devices, with ties at 0, NaN inputs and layers without bias; the fused
//! nodes pass a finite-difference gradcheck.

use crate::common::gpu;
use wgrad::gradcheck::{GradcheckOptions, gradcheck};
use wgrad::nn::{Conv2d, Conv2dOptions, Linear, Module, ReLU, Sequential};
use wgrad::{Conv2dArgs, ConvPadding, Device, Tensor};

fn devices() -> Vec<Device> {
    let mut d = vec![Device::Cpu];
    d.extend(gpu());
    d
}

fn input(shape: &[usize], d: &Device, nan_at: Option<usize>) -> Tensor {
    let n: usize = shape.iter().product();
    let mut v: Vec<f32> = (0..n)
        .map(|i| ((i * 37 % 23) as f32 - 11.0) / 7.0)
        .collect();
    // An exact zero: ReLU's tie (gradient 0 there, as PyTorch).
    v[1] = 0.0;
    if let Some(i) = nan_at {
        v[i] = f32::NAN;
    }
    Tensor::from_vec(v, shape, d)
        .unwrap()
        .with_requires_grad(true)
        .unwrap()
}

fn bits(t: &Tensor) -> Vec<u32> {
    t.to_vec_f32()
        .unwrap()
        .iter()
        .map(|v| v.to_bits())
        .collect()
}

/// Runs `fused` and `plain` (the same layers, unfused) on the same input
/// and compares the outputs and the gradients of the input and of every
/// parameter bit for bit.
fn same_as_unfused(
    what: &str,
    x_shape: &[usize],
    nan_at: Option<usize>,
    d: &Device,
    fused: &dyn Fn(&Tensor) -> Tensor,
    plain: &dyn Fn(&Tensor) -> Tensor,
    params: &[Tensor],
) {
    let run = |f: &dyn Fn(&Tensor) -> Tensor| {
        for p in params {
            p.zero_grad();
        }
        let x = input(x_shape, d, nan_at);
        let y = f(&x);
        // A weighted sum, so each output's gradient differs.
        let w = Tensor::from_vec(
            (0..y.numel())
                .map(|i| (i % 5) as f32 - 1.5)
                .collect::<Vec<_>>(),
            &y.shape(),
            d,
        )
        .unwrap();
        y.mul(&w).unwrap().sum_all().unwrap().backward().unwrap();
        let mut out = vec![bits(&y), bits(&x.grad().unwrap())];
        out.extend(params.iter().map(|p| bits(&p.grad().unwrap())));
        out
    };
    let (a, b) = (run(fused), run(plain));
    for (i, (a, b)) in a.iter().zip(&b).enumerate() {
        assert_eq!(
            a, b,
            "{what} on {d}: tensor {i} (0 output, 1 input grad, then parameters)"
        );
    }
}

#[test]
fn sequential_linear_relu_matches_the_unfused_ops() {
    for d in devices() {
        for bias in [true, false] {
            for nan_at in [None, Some(5)] {
                wgrad::manual_seed(4);
                let l1 = Linear::new(12, 9, bias, &d).unwrap();
                let l2 = Linear::new(9, 4, true, &d).unwrap();
                let params: Vec<Tensor> =
                    l1.parameters().into_iter().chain(l2.parameters()).collect();
                let (w1, b1) = (l1.weight.clone(), l1.bias.clone());
                let (w2, b2) = (l2.weight.clone(), l2.bias.clone());
                let model = Sequential::new()
                    .add(l1)
                    .add(ReLU::new())
                    .add(l2)
                    .add(ReLU::new());
                let plain = |x: &Tensor| {
                    let h = x.linear(&w1, b1.as_ref()).unwrap().relu().unwrap();
                    h.linear(&w2, b2.as_ref()).unwrap().relu().unwrap()
                };
                same_as_unfused(
                    &format!("linear bias {bias} nan {nan_at:?}"),
                    &[6, 12],
                    nan_at,
                    &d,
                    &|x| model.forward(x).unwrap(),
                    &plain,
                    &params,
                );
            }
        }
    }
}

#[test]
fn sequential_conv_relu_matches_the_unfused_ops() {
    for d in devices() {
        for bias in [true, false] {
            wgrad::manual_seed(5);
            let options = Conv2dOptions {
                bias,
                padding: ConvPadding::Explicit(1),
                ..Default::default()
            };
            let conv = Conv2d::with_options(3, 5, [3, 3], options, &d).unwrap();
            let params = conv.parameters();
            let (w, b, args) = (conv.weight.clone(), conv.bias.clone(), *conv.args());
            let model = Sequential::new().add(conv).add(ReLU::new());
            let plain = |x: &Tensor| x.conv2d(&w, b.as_ref(), &args).unwrap().relu().unwrap();
            same_as_unfused(
                &format!("conv bias {bias}"),
                &[2, 3, 7, 6],
                Some(9),
                &d,
                &|x| model.forward(x).unwrap(),
                &plain,
                &params,
            );
        }
    }
}

#[test]
fn fused_nodes_pass_gradcheck() {
    let d = Device::Cpu;
    let w = Tensor::from_vec(
        (0..12).map(|i| (i as f32 - 5.5) / 4.0).collect::<Vec<_>>(),
        &[3, 4],
        &d,
    )
    .unwrap()
    .with_requires_grad(true)
    .unwrap();
    let b = Tensor::from_vec(vec![0.1f32, -0.2, 0.3], &[3], &d)
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
    let x = Tensor::from_vec(
        vec![0.7f32, -1.3, 0.4, 2.1, -0.6, 0.9, 1.7, -0.35],
        &[2, 4],
        &d,
    )
    .unwrap()
    .with_requires_grad(true)
    .unwrap();
    let report = gradcheck(
        |t| t[0].linear_relu(&t[1], Some(&t[2])),
        &[x, w, b],
        GradcheckOptions::default(),
    )
    .unwrap();
    report.check().unwrap();
    let cw = Tensor::from_vec(
        (0..2 * 2 * 2 * 2)
            .map(|i| (i as f32 - 7.5) / 5.0)
            .collect::<Vec<_>>(),
        &[2, 2, 2, 2],
        &d,
    )
    .unwrap()
    .with_requires_grad(true)
    .unwrap();
    let cb = Tensor::from_vec(vec![0.05f32, -0.1], &[2], &d)
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
    let cx = Tensor::from_vec(
        (0..2 * 3 * 3)
            .map(|i| ((i * 7 % 11) as f32 - 5.3) / 3.0)
            .collect::<Vec<_>>(),
        &[1, 2, 3, 3],
        &d,
    )
    .unwrap()
    .with_requires_grad(true)
    .unwrap();
    let report = gradcheck(
        |t| t[0].conv2d_relu(&t[1], Some(&t[2]), &Conv2dArgs::default()),
        &[cx, cw, cb],
        GradcheckOptions::default(),
    )
    .unwrap();
    report.check().unwrap();
}

/// Between two linear layers (`linear_relu` then `linear`), a GPU makes the
/// hidden output's gradient already masked by the first layer's ReLU (in
/// the second layer's product, backward/relu_premask.rs). What users see
/// of that gradient must stay the unmasked one PyTorch gives: through
/// `retain_grad`, a hook, or `autograd::grad` with the hidden output as an
/// input; and with the hidden output also used elsewhere, every gradient
/// is the unfused graph's. All bit for bit against the unfused ops.
#[test]
fn hidden_gradients_users_see_are_unmasked() {
    use std::sync::{Arc, Mutex};
    use wgrad::autograd::{GradOptions, grad};
    for d in devices() {
        wgrad::manual_seed(6);
        let l1 = Linear::new(12, 9, true, &d).unwrap();
        let l2 = Linear::new(9, 4, true, &d).unwrap();
        let (w1, b1) = (l1.weight.clone(), l1.bias.clone());
        let (w2, b2) = (l2.weight.clone(), l2.bias.clone());
        let hidden = |fused: bool, x: &Tensor| {
            if fused {
                x.linear_relu(&w1, b1.as_ref()).unwrap()
            } else {
                x.linear(&w1, b1.as_ref()).unwrap().relu().unwrap()
            }
        };
        let head = |h: &Tensor| {
            let y = h.linear(&w2, b2.as_ref()).unwrap();
            let wts = Tensor::from_vec(
                (0..y.numel())
                    .map(|i| (i % 7) as f32 - 2.5)
                    .collect::<Vec<_>>(),
                &y.shape(),
                &d,
            )
            .unwrap();
            y.mul(&wts).unwrap().sum_all().unwrap()
        };
        let runs: Vec<Vec<Vec<u32>>> = [true, false]
            .iter()
            .map(|&fused| {
                for p in [&w1, &w2] {
                    p.zero_grad();
                }
                let x = input(&[6, 12], &d, Some(7));
                let mut seen = Vec::new();
                // retain_grad.
                let h = hidden(fused, &x);
                h.retain_grad().unwrap();
                head(&h).backward().unwrap();
                seen.push(bits(&h.grad().unwrap()));
                seen.push(bits(&w1.grad().unwrap()));
                // A hook.
                let hooked = Arc::new(Mutex::new(Vec::new()));
                let h = hidden(fused, &x);
                let keep = hooked.clone();
                let _handle = h
                    .register_hook(move |g| {
                        *keep.lock().unwrap() = bits(g);
                        Ok(None)
                    })
                    .unwrap();
                head(&h).backward().unwrap();
                seen.push(hooked.lock().unwrap().clone());
                // autograd::grad with the hidden output as an input.
                let h = hidden(fused, &x);
                let out = head(&h);
                let g = grad(&[&out], &[&h, &w1], None, GradOptions::default()).unwrap();
                seen.push(bits(g[0].as_ref().unwrap()));
                seen.push(bits(g[1].as_ref().unwrap()));
                // The hidden output used twice: in the head and in a sum.
                w1.zero_grad();
                let h = hidden(fused, &x);
                let loss = head(&h)
                    .add(&h.mul_scalar(0.25).unwrap().sum_all().unwrap())
                    .unwrap();
                loss.backward().unwrap();
                seen.push(bits(&w1.grad().unwrap()));
                seen.push(bits(&x.grad().unwrap()));
                seen
            })
            .collect();
        for (i, (a, b)) in runs[0].iter().zip(&runs[1]).enumerate() {
            assert_eq!(
                a, b,
                "on {d}: observation {i} differs from the unfused graph's"
            );
        }
        // The retained gradient is not masked: some entries where h is 0
        // are nonzero.
        assert!(runs[0][0].iter().any(|&b| b != 0));
    }
}

/// One sample without a batch dim (`[in]`) through `Linear, ReLU, Linear`:
/// the fused node's and the producer-masked gradients handle 1-D inputs
/// and outputs as the unfused ops do, on every device.
#[test]
fn unbatched_input_through_linear_relu_linear() {
    let cpu = Device::Cpu;
    wgrad::manual_seed(7);
    let l1 = Linear::new(12, 9, true, &cpu).unwrap();
    let l2 = Linear::new(9, 4, true, &cpu).unwrap();
    let run = |d: &Device| {
        let (w1, b1) = (
            l1.weight.to(d).unwrap(),
            l1.bias.as_ref().unwrap().to(d).unwrap(),
        );
        let (w2, b2) = (
            l2.weight.to(d).unwrap(),
            l2.bias.as_ref().unwrap().to(d).unwrap(),
        );
        let params = [&w1, &b1, &w2, &b2].map(|t| t.detach().with_requires_grad(true).unwrap());
        let x = input(&[12], d, None);
        let h = x.linear_relu(&params[0], Some(&params[1])).unwrap();
        let y = h.linear(&params[2], Some(&params[3])).unwrap();
        assert_eq!(y.shape(), [4]);
        y.mul_scalar(1.5)
            .unwrap()
            .sum_all()
            .unwrap()
            .backward()
            .unwrap();
        let mut out = vec![
            y.to_vec_f32().unwrap(),
            x.grad().unwrap().to_vec_f32().unwrap(),
        ];
        out.extend(
            params
                .iter()
                .map(|p| p.grad().unwrap().to_vec_f32().unwrap()),
        );
        out
    };
    let want = run(&cpu);
    if let Some(d) = gpu() {
        for (i, (g, w)) in run(&d).iter().zip(&want).enumerate() {
            for (a, b) in g.iter().zip(w) {
                assert!(
                    (a - b).abs() <= 1e-5 + 1e-5 * b.abs(),
                    "{d}: tensor {i}: {a} vs {b}"
                );
            }
        }
    }
}
