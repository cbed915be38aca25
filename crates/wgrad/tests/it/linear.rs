//! `F.linear` through the public API (`Tensor::linear`,
//! `wgrad::nn::linear`, `nn::Linear`): CPU against GPU forward and
//! gradients (1-d/2-d/3-d inputs, views, empty batches, split-K shapes),
//! one node and one GPU dispatch per call, the 16-bit dtypes and autocast,
//! and the errors of bad calls. PyTorch's values are checked by the
//! `linear_*` cases of the fixture replays (`fixtures_ops`, `fixtures_half`).

use wgrad::nn::{Linear, Module};
use wgrad::{DType, Device, Result, Tensor, autocast, f16};

use crate::common::{gpu, max_rel_err};

/// `x`, `weight`, `bias` (optional) of the given shapes, random, requiring
/// grad, on `device` (the same values on every device).
fn operands(x: &[usize], w: &[usize], b: Option<&[usize]>, device: &Device) -> Vec<Tensor> {
    let mut shapes = vec![x, w];
    shapes.extend(b);
    shapes
        .iter()
        .enumerate()
        .map(|(i, s)| {
            Tensor::rand_with(s, -1.0, 1.0, 40 + i as u64, &Device::Cpu)
                .and_then(|t| t.to(device))
                .and_then(|t| t.with_requires_grad(true))
                .unwrap()
        })
        .collect()
}

/// The output and every input's gradient under a fixed random upstream.
fn forward_backward(
    t: &[Tensor],
    f: impl Fn(&[Tensor]) -> Result<Tensor>,
) -> (Vec<f32>, Vec<Vec<f32>>) {
    let y = f(t).unwrap();
    let up = Tensor::rand_with(&y.shape(), -1.0, 1.0, 7, &Device::Cpu)
        .and_then(|u| u.to(&y.device()))
        .unwrap();
    y.backward_with(&up).unwrap();
    let grads = t
        .iter()
        .map(|t| {
            t.grad()
                .expect("every operand requires grad")
                .to_vec_f32()
                .unwrap()
        })
        .collect();
    (y.to_vec_f32().unwrap(), grads)
}

type Case = (
    &'static [usize],
    &'static [usize],
    Option<&'static [usize]>,
    fn(&[Tensor]) -> Result<Tensor>,
);

#[test]
fn gpu_forward_and_gradients_match_cpu() {
    let Some(gpu) = gpu() else { return };
    let bias = |t: &[Tensor]| t[0].linear(&t[1], t.get(2));
    let cases: &[Case] = &[
        (&[5, 7], &[3, 7], Some(&[3]), bias),
        (&[5, 7], &[3, 7], None, bias),
        (&[7], &[3, 7], Some(&[3]), bias),
        (&[2, 4, 7], &[70, 7], Some(&[70]), bias),
        // Rows no view merges ([4, 2, 7] stored as [2, 4, 7]), a
        // transposed weight, a single-value bias.
        (&[2, 4, 7], &[7, 6], Some(&[1]), |t| {
            t[0].transpose(0, 1)?
                .linear(&t[1].transpose(0, 1)?, t.get(2))
        }),
        (&[0, 7], &[3, 7], Some(&[3]), bias),
        (&[3, 0], &[4, 0], Some(&[4]), bias),
        // Long K, few outputs: the GPU splits K (the bias in the split sum).
        (&[6, 1500], &[10, 1500], Some(&[10]), bias),
    ];
    for (sx, sw, sb, f) in cases {
        let what = format!("x{sx:?} w{sw:?} b{sb:?}");
        let (cpu_y, cpu_g) = forward_backward(&operands(sx, sw, *sb, &Device::Cpu), f);
        let (gpu_y, gpu_g) = forward_backward(&operands(sx, sw, *sb, &gpu), f);
        let tol = if sx.last() == Some(&1500) { 1e-3 } else { 1e-4 };
        assert!(max_rel_err(&gpu_y, &cpu_y) <= tol, "{what}: output");
        for (i, (g, c)) in gpu_g.iter().zip(&cpu_g).enumerate() {
            assert!(max_rel_err(g, c) <= tol, "{what}: gradient of input {i}");
        }
    }
}

#[test]
fn one_node_and_one_dispatch() {
    let x = Tensor::randn(&[4, 3], &Device::Cpu).unwrap();
    let layer = Linear::new(3, 2, true, &Device::Cpu).unwrap();
    assert_eq!(layer.forward(&x).unwrap().grad_fn_name(), Some("linear"));
    let w = layer.weight.clone();
    let y = wgrad::nn::linear(&x, &w, layer.bias.as_ref()).unwrap();
    assert_eq!(y.grad_fn_name(), Some("linear"));

    let Some(dev) = wgrad_test_support::own_gpu() else {
        return;
    };
    let device = Device::Gpu(dev.clone());
    let layer = Linear::new(64, 32, true, &device).unwrap();
    let x = Tensor::randn(&[16, 64], &device).unwrap();
    layer.forward(&x).unwrap(); // pipelines created, pool warm
    let before = dev.stats();
    let y = layer.forward(&x).unwrap();
    let stats = dev.stats().since(&before);
    assert_eq!(
        (stats.dispatches, stats.readbacks),
        (1, 0),
        "the bias rides in the product's dispatch"
    );
    y.sum_all().unwrap().backward().unwrap();
    assert_eq!(dev.stats().since(&before).readbacks, 0);
}

/// F16/BF16 operands: computed in f32 and rounded once, so on the CPU the
/// result equals the f32 linear of the same values rounded, bit for bit;
/// the GPU's (on its f16 tensor cores where it has them) agrees to an ulp.
#[test]
fn half_operands_round_once() {
    let mut devices = vec![Device::Cpu];
    devices.extend(gpu());
    for dtype in [DType::F16, DType::BF16] {
        let t = operands(&[3, 5, 40], &[24, 40], Some(&[24]), &Device::Cpu);
        let h: Vec<Tensor> = t.iter().map(|t| t.detach().cast(dtype).unwrap()).collect();
        let wide: Vec<Tensor> = h.iter().map(|t| t.cast(DType::F32).unwrap()).collect();
        let want = wide[0]
            .linear(&wide[1], Some(&wide[2]))
            .unwrap()
            .cast(dtype)
            .unwrap()
            .to_vec_f32()
            .unwrap();
        let ulp = if dtype == DType::F16 { 9.8e-4 } else { 7.9e-3 };
        for device in &devices {
            let hd: Vec<Tensor> = h
                .iter()
                .map(|t| {
                    t.to(device)
                        .unwrap()
                        .detach()
                        .with_requires_grad(true)
                        .unwrap()
                })
                .collect();
            let y = hd[0].linear(&hd[1], Some(&hd[2])).unwrap();
            assert_eq!(y.dtype(), dtype);
            let got = y.to_vec_f32().unwrap();
            let err = max_rel_err(&got, &want);
            let tol = if matches!(device, Device::Cpu) {
                0.0
            } else {
                ulp
            };
            assert!(err <= tol, "{dtype} on {device}: {err}");
            y.sum_all().unwrap().backward().unwrap();
            for t in &hd {
                assert_eq!(t.grad().unwrap().dtype(), dtype, "{dtype} on {device}");
            }
        }
    }
    // The host type round trip, as a port writes it.
    let x = Tensor::from_vec(
        vec![f16::from_f32(1.0), f16::from_f32(2.0)],
        &[1, 2],
        &Device::Cpu,
    );
    let w = Tensor::from_vec(vec![f16::from_f32(0.5); 2], &[1, 2], &Device::Cpu);
    let y = x.unwrap().linear(&w.unwrap(), None).unwrap();
    assert_eq!(y.to_vec::<f16>().unwrap(), [f16::from_f32(1.5)]);
}

/// Under autocast, x, weight and bias all run in the region's dtype (CUDA
/// autocast's lower-precision list); F32 parameters get F32 gradients.
#[test]
fn autocast_lowers_all_three_operands() {
    let mut devices = vec![Device::Cpu];
    devices.extend(gpu());
    for device in &devices {
        for dtype in [DType::F16, DType::BF16] {
            let t = operands(&[4, 2, 6], &[5, 6], Some(&[5]), device);
            let y = autocast(dtype, || t[0].linear(&t[1], Some(&t[2])))
                .unwrap()
                .unwrap();
            assert_eq!(y.dtype(), dtype, "{device}");
            let cast: Vec<Tensor> = t.iter().map(|t| t.detach().cast(dtype).unwrap()).collect();
            let want = cast[0].linear(&cast[1], Some(&cast[2])).unwrap();
            assert_eq!(
                y.to_vec_f32().unwrap(),
                want.to_vec_f32().unwrap(),
                "{dtype} on {device}"
            );
            y.cast(DType::F32)
                .unwrap()
                .sum_all()
                .unwrap()
                .backward()
                .unwrap();
            for t in &t {
                assert_eq!(t.grad().unwrap().dtype(), DType::F32);
            }
            // The layer does the same.
            let layer = Linear::from_parameters(t[1].clone(), Some(t[2].clone()));
            let y = autocast(dtype, || layer.forward(&t[0])).unwrap().unwrap();
            assert_eq!(y.dtype(), dtype);
        }
    }
}

/// The calls ATen's `linear` takes outside addmm: a 1-D weight contracts
/// the last dim away, a rank-2 bias broadcasts over the product; values
/// and gradients as `x @ w^T + b` written out, on every device.
#[test]
fn one_dim_weights_and_two_dim_biases_follow_aten() {
    let mut devices = vec![Device::Cpu];
    devices.extend(gpu());
    for dev in &devices {
        let x = Tensor::from_vec(vec![1.0f32, -2.0, 0.5, 3.0, 0.25, -1.0], &[2, 3], dev).unwrap();
        let w1 = Tensor::from_vec(vec![0.5f32, 1.5, -2.0], &[3], dev).unwrap();
        x.requires_grad_(true).unwrap();
        w1.requires_grad_(true).unwrap();
        let y = x.linear(&w1, None).unwrap();
        assert_eq!(y.shape(), [2]);
        assert_eq!(y.to_vec_f32().unwrap(), [-3.5, 3.875]);
        y.sum(&[], false).unwrap().backward().unwrap();
        assert_eq!(w1.grad().unwrap().to_vec_f32().unwrap(), [4.0, -1.75, -0.5]);
        assert_eq!(
            x.grad().unwrap().to_vec_f32().unwrap(),
            [0.5, 1.5, -2.0, 0.5, 1.5, -2.0]
        );
        // A 1-D weight with a 0-d bias.
        let b0 = Tensor::from_vec(vec![1.0f32], &[], dev).unwrap();
        let y = x.linear(&w1, Some(&b0)).unwrap();
        assert_eq!(y.to_vec_f32().unwrap(), [-2.5, 4.875]);
        // A [rows, out] bias: one value per output element.
        let w = Tensor::from_vec(vec![1.0f32, 0.0, 0.0, 0.0, 1.0, 0.0], &[2, 3], dev).unwrap();
        let b2 = Tensor::from_vec(vec![10.0f32, 20.0, 30.0, 40.0], &[2, 2], dev).unwrap();
        b2.requires_grad_(true).unwrap();
        let y = x.linear(&w, Some(&b2)).unwrap();
        assert_eq!(y.to_vec_f32().unwrap(), [11.0, 18.0, 33.0, 40.25]);
        y.sum(&[], false).unwrap().backward().unwrap();
        assert_eq!(b2.grad().unwrap().to_vec_f32().unwrap(), [1.0; 4]);
        // A [1, out] bias over a 3-D input.
        let b1 = Tensor::from_vec(vec![1.0f32, 2.0], &[1, 2], dev).unwrap();
        let y = x
            .reshape(&[1, 2, 3])
            .unwrap()
            .linear(&w, Some(&b1))
            .unwrap();
        assert_eq!(y.shape(), [1, 2, 2]);
        assert_eq!(y.to_vec_f32().unwrap(), [2.0, 0.0, 4.0, 2.25]);
    }
}

#[test]
fn bad_calls_are_errors_naming_linear_and_the_shapes() {
    let cpu = Device::Cpu;
    let t = |shape: &[usize]| Tensor::zeros(shape, &cpu).unwrap();
    let err = |r: Result<Tensor>| r.unwrap_err().to_string();
    let x = t(&[2, 3]);
    let msg = err(x.linear(&t(&[4, 5]), None));
    assert!(
        msg.starts_with("linear:") && msg.contains("[2, 3]") && msg.contains("[4, 5]"),
        "{msg}"
    );
    let msg = err(x.linear(&t(&[4, 3]), Some(&t(&[5]))));
    assert!(
        msg.contains("bias must have shape [4]") && msg.contains("[5]"),
        "{msg}"
    );
    assert!(err(x.linear(&t(&[4, 3, 1]), None)).contains("weight must be 1-D or 2-D"));
    // A bias of rank 2 is added in place after the product, as ATen's
    // `output.add_(bias)`: it may not enlarge the output.
    let msg = err(x.linear(&t(&[4, 3]), Some(&t(&[5, 2, 4]))));
    assert!(
        msg.starts_with("linear:") && msg.contains("[5, 2, 4]") && msg.contains("[2, 4]"),
        "{msg}"
    );
    let msg = err(x.linear(&t(&[2]), None));
    assert!(
        msg.starts_with("linear:") && msg.contains("[2, 3]"),
        "{msg}"
    );
    assert!(err(t(&[]).linear(&t(&[4, 3]), None)).contains("0-d"));
    let w16 = t(&[4, 3]).cast(DType::F16).unwrap();
    let msg = err(x.linear(&w16, None));
    assert!(
        msg.contains("same dtype") && msg.contains("float16"),
        "{msg}"
    );
    let xi = Tensor::from_vec(vec![1i32; 6], &[2, 3], &cpu).unwrap();
    assert!(matches!(
        xi.linear(&t(&[4, 3]), None),
        Err(wgrad::Error::DTypeMismatch {
            op: "linear",
            got: DType::I32,
            ..
        })
    ));
    let Some(gpu) = gpu() else { return };
    let msg = err(x.linear(&Tensor::zeros(&[4, 3], &gpu).unwrap(), None));
    assert!(
        msg.starts_with("linear:") && msg.contains("cpu") && msg.contains("gpu"),
        "{msg}"
    );
    // The composite path (a 1-D weight) keeps the product's own error.
    assert!(matches!(
        x.linear(&Tensor::zeros(&[3], &gpu).unwrap(), None),
        Err(wgrad::Error::DeviceMismatch { .. })
    ));
    let xg = Tensor::zeros(&[2, 3], &gpu).unwrap();
    let wg = Tensor::zeros(&[4, 3], &gpu).unwrap();
    let msg = err(xg.linear(&wg, Some(&t(&[4]))));
    assert!(msg.contains("cpu") && msg.contains("gpu"), "{msg}");
}
