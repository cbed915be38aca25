//! BatchNorm (training statistics, running-stat updates, eval, buffers in
//! the state_dict), GroupNorm and Dropout2d, on the CPU and the GPU.

use wgrad_autograd::gradcheck::{GradcheckOptions, gradcheck};
use wgrad_autograd::{DType, Device, Tensor};
use wgrad_nn::batch_norm::{RunningStats, batch_norm};
use wgrad_nn::group_norm::group_norm;
use wgrad_nn::{
    BatchNorm1d, BatchNorm2d, BatchNormOptions, Dropout2d, GroupNorm, Module, Sequential,
    state_dict,
};
use wgrad_test_support::gpu;

fn devices() -> Vec<Device> {
    let mut d = vec![Device::Cpu];
    d.extend(gpu());
    d
}

fn values(t: &Tensor) -> Vec<f32> {
    t.to_vec_f32().unwrap()
}

fn close(a: &[f32], b: &[f32], tol: f32) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| (x - y).abs() <= tol * y.abs().max(1.0))
}

/// Per-channel mean and biased/unbiased variance of `[N, C, H, W]` data.
fn channel_stats(x: &[f32], shape: [usize; 4]) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let [n, c, h, w] = shape;
    let count = (n * h * w) as f64;
    let (mut mean, mut biased, mut unbiased) = (vec![], vec![], vec![]);
    for ch in 0..c {
        let vals: Vec<f64> = (0..n)
            .flat_map(|i| (0..h * w).map(move |j| (i, j)))
            .map(|(i, j)| x[(i * c + ch) * h * w + j] as f64)
            .collect();
        let m = vals.iter().sum::<f64>() / count;
        let ss: f64 = vals.iter().map(|v| (v - m) * (v - m)).sum();
        mean.push(m as f32);
        biased.push((ss / count) as f32);
        unbiased.push((ss / (count - 1.0)) as f32);
    }
    (mean, biased, unbiased)
}

#[test]
fn batch_norm_trains_on_batch_statistics_and_updates_running_stats() {
    for d in devices() {
        let shape = [4, 3, 5, 6];
        let x = Tensor::randn_with(&shape, 2.0, 3.0, 11, &d).unwrap();
        let xs = values(&x);
        let (mean, biased, unbiased) = channel_stats(&xs, shape);
        let bn = BatchNorm2d::new(3, &d).unwrap();
        let y = bn.forward(&x).unwrap();
        let ys = values(&y);
        let (ymean, yvar, _) = channel_stats(&ys, shape);
        assert!(close(&ymean, &[0.0; 3], 1e-5), "{d}: {ymean:?}");
        for (v, b) in yvar.iter().zip(&biased) {
            assert!((v - b / (b + 1e-5)).abs() < 1e-4, "{d}: {yvar:?}");
        }
        let rm: Vec<f32> = mean.iter().map(|m| 0.1 * m).collect();
        let rv: Vec<f32> = unbiased.iter().map(|v| 0.9 + 0.1 * v).collect();
        assert!(
            close(&values(bn.running_mean.as_ref().unwrap()), &rm, 1e-5),
            "{d}"
        );
        assert!(
            close(&values(bn.running_var.as_ref().unwrap()), &rv, 1e-5),
            "{d}"
        );
        let tracked = bn.num_batches_tracked.as_ref().unwrap();
        assert_eq!(tracked.to_vec::<i32>().unwrap(), vec![1]);
        bn.forward(&x).unwrap();
        assert_eq!(tracked.to_vec::<i32>().unwrap(), vec![2]);
    }
}

#[test]
fn batch_norm_eval_uses_running_stats_and_does_not_update_them() {
    for d in devices() {
        let mut bn = BatchNorm1d::new(2, &d).unwrap();
        let rm = Tensor::from_vec(vec![1.0f32, -2.0], &[2], &d).unwrap();
        let rv = Tensor::from_vec(vec![4.0f32, 0.25], &[2], &d).unwrap();
        bn.0.running_mean
            .as_ref()
            .unwrap()
            .set_storage(rm.storage())
            .unwrap();
        bn.0.running_var
            .as_ref()
            .unwrap()
            .set_storage(rv.storage())
            .unwrap();
        bn.eval();
        let x = Tensor::from_vec(vec![3.0f32, -1.0, 5.0, -2.0], &[2, 2], &d).unwrap();
        let y = values(&bn.forward(&x).unwrap());
        let want = [
            2.0 / (4.0f32 + 1e-5).sqrt(),
            1.0 / (0.25f32 + 1e-5).sqrt(),
            4.0 / (4.0f32 + 1e-5).sqrt(),
            0.0,
        ];
        assert!(close(&y, &want, 1e-5), "{d}: {y:?}");
        assert_eq!(values(bn.running_mean.as_ref().unwrap()), vec![1.0, -2.0]);
        assert_eq!(
            bn.num_batches_tracked
                .as_ref()
                .unwrap()
                .to_vec::<i32>()
                .unwrap(),
            vec![0]
        );
    }
}

#[test]
fn batch_norm_cumulative_average_without_momentum() {
    let d = Device::Cpu;
    let options = BatchNormOptions {
        momentum: None,
        ..BatchNormOptions::default()
    };
    let bn = BatchNorm1d::with_options(1, options, &d).unwrap();
    for (i, batch) in [[1.0f32, 3.0], [5.0, 7.0]].iter().enumerate() {
        bn.forward(&Tensor::from_vec(batch.to_vec(), &[2, 1], &d).unwrap())
            .unwrap();
        let want = if i == 0 { 2.0 } else { 4.0 };
        assert_eq!(values(bn.running_mean.as_ref().unwrap()), vec![want]);
    }
    // Unbiased variances 2 and 2, averaged.
    assert_eq!(values(bn.running_var.as_ref().unwrap()), vec![2.0]);
}

#[test]
fn batch_norm_rejects_single_values_per_channel_and_wrong_shapes() {
    let d = Device::Cpu;
    let bn = BatchNorm1d::new(3, &d).unwrap();
    let e = bn
        .forward(&Tensor::zeros(&[1, 3], &d).unwrap())
        .unwrap_err();
    assert!(
        e.to_string().contains("more than 1 value per channel"),
        "{e}"
    );
    let e = bn
        .forward(&Tensor::zeros(&[4, 2], &d).unwrap())
        .unwrap_err();
    assert!(e.to_string().contains("3 channels"), "{e}");
    let bn2 = BatchNorm2d::new(3, &d).unwrap();
    assert!(bn2.forward(&Tensor::zeros(&[4, 3], &d).unwrap()).is_err());
}

#[test]
fn batch_norm_buffers_are_in_the_state_dict_not_the_parameters() {
    let d = Device::Cpu;
    let net = Sequential::new()
        .add(wgrad_nn::Linear::new(2, 3, true, &d).unwrap())
        .add(BatchNorm1d::new(3, &d).unwrap());
    let params: Vec<String> = net.named_parameters().into_iter().map(|(n, _)| n).collect();
    assert_eq!(params, ["0.weight", "0.bias", "1.weight", "1.bias"]);
    let state: Vec<String> = net.named_state().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        state,
        [
            "0.weight",
            "0.bias",
            "1.weight",
            "1.bias",
            "1.running_mean",
            "1.running_var",
            "1.num_batches_tracked"
        ]
    );
    // Save after a training step, load into a fresh net: buffers come along.
    net.forward(&Tensor::randn_with(&[5, 2], 0.0, 1.0, 3, &d).unwrap())
        .unwrap();
    let dir = std::env::temp_dir().join(format!("wgrad-bn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bn.safetensors");
    state_dict::save(&net, &path).unwrap();
    let fresh = Sequential::new()
        .add(wgrad_nn::Linear::new(2, 3, true, &d).unwrap())
        .add(BatchNorm1d::new(3, &d).unwrap());
    state_dict::load(&fresh, &path).unwrap();
    for ((n, a), (_, b)) in net.named_state().iter().zip(fresh.named_state()) {
        if a.dtype() == DType::I32 {
            assert_eq!(
                a.to_vec::<i32>().unwrap(),
                b.to_vec::<i32>().unwrap(),
                "{n}"
            );
        } else {
            assert_eq!(values(a), values(&b), "{n}");
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn batch_norm_moves_its_buffers_with_the_module() {
    let Some(g) = gpu() else { return };
    let mut bn = BatchNorm2d::new(2, &Device::Cpu).unwrap();
    bn.0.to_device(&g).unwrap();
    for (name, t) in bn.named_state() {
        assert!(t.device().same(&g), "{name} stayed on {}", t.device());
    }
    let x = Tensor::randn_with(&[2, 2, 3, 3], 0.0, 1.0, 5, &g).unwrap();
    bn.forward(&x).unwrap();
}

#[test]
fn batch_and_group_norm_gradients_check_out() {
    let d = Device::Cpu;
    let x = Tensor::randn_with(&[3, 4, 2, 2], 0.0, 1.0, 21, &d)
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
    let w = Tensor::randn_with(&[4], 1.0, 0.3, 22, &d)
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
    let b = Tensor::randn_with(&[4], 0.0, 0.3, 23, &d)
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
    let opts = GradcheckOptions::default();
    let report = gradcheck(
        |t| batch_norm(&t[0], None, Some(&t[1]), Some(&t[2]), true, 0.1, 1e-5),
        &[x.clone(), w.clone(), b.clone()],
        opts,
    )
    .unwrap();
    report.check().unwrap();
    let report = gradcheck(
        |t| group_norm(&t[0], 2, Some(&t[1]), Some(&t[2]), 1e-5),
        &[x, w, b],
        opts,
    )
    .unwrap();
    report.check().unwrap();
}

#[test]
fn norms_agree_between_cpu_and_gpu() {
    let Some(g) = gpu() else { return };
    let run = |d: &Device| -> Vec<Vec<f32>> {
        let x = Tensor::randn_with(&[4, 6, 3, 5], 0.5, 2.0, 31, d)
            .unwrap()
            .with_requires_grad(true)
            .unwrap();
        let mean = Tensor::zeros(&[6], d).unwrap();
        let var = Tensor::ones(&[6], d).unwrap();
        let y = batch_norm(
            &x,
            Some(RunningStats {
                mean: &mean,
                var: &var,
            }),
            None,
            None,
            true,
            0.3,
            1e-5,
        )
        .unwrap();
        let gn = GroupNorm::new(3, 6, 1e-5, true, d).unwrap();
        let z = gn.forward(&y).unwrap();
        let weights = Tensor::randn_with(&[4, 6, 3, 5], 0.0, 1.0, 32, d).unwrap();
        z.mul(&weights)
            .unwrap()
            .sum_all()
            .unwrap()
            .backward()
            .unwrap();
        vec![
            values(&z),
            values(&x.grad().unwrap()),
            values(&mean),
            values(&var),
        ]
    };
    let (c, gpu_out) = (run(&Device::Cpu), run(&g));
    for (i, (a, b)) in gpu_out.iter().zip(&c).enumerate() {
        assert!(close(a, b, 1e-4), "output {i} differs");
    }
}

#[test]
fn group_norm_matches_a_direct_computation() {
    let d = Device::Cpu;
    let x = Tensor::from_vec(
        (0..12).map(|v| v as f32).collect::<Vec<_>>(),
        &[1, 4, 3],
        &d,
    )
    .unwrap();
    let y = values(&group_norm(&x, 2, None, None, 0.0).unwrap());
    // Group 0 is 0..6, group 1 is 6..12: each normalised to mean 0, var 1.
    let std = (35.0f32 / 12.0).sqrt();
    let want: Vec<f32> = (0..12).map(|v| ((v % 6) as f32 - 2.5) / std).collect();
    assert!(close(&y, &want, 1e-5), "{y:?}");
    assert!(GroupNorm::new(3, 4, 1e-5, true, &d).is_err());
}

#[test]
fn dropout2d_drops_whole_channels() {
    for d in devices() {
        let layer = Dropout2d::new(0.5).unwrap();
        let x = Tensor::ones(&[8, 16, 3, 3], &d).unwrap();
        let y = values(&layer.forward(&x).unwrap());
        let mut dropped = 0;
        for plane in y.chunks(9) {
            assert!(
                plane.iter().all(|&v| v == plane[0]),
                "{d}: a channel is partly dropped"
            );
            assert!(plane[0] == 0.0 || plane[0] == 2.0);
            dropped += usize::from(plane[0] == 0.0);
        }
        assert!(
            (20..108).contains(&dropped),
            "{d}: {dropped} of 128 dropped"
        );
        let mut eval = layer.clone();
        eval.eval();
        assert_eq!(values(&eval.forward(&x).unwrap()), values(&x));
        assert!(Dropout2d::new(1.5).is_err());
    }
}

#[test]
fn one_d_pools_and_upsample_modules_apply_their_ops() {
    use wgrad_autograd::InterpolateMode;
    use wgrad_nn::{AvgPool1d, MaxPool1d, Upsample};
    for d in devices() {
        let x = Tensor::from_vec(
            (0..12).map(|v| v as f32).collect::<Vec<_>>(),
            &[1, 2, 6],
            &d,
        )
        .unwrap();
        let max = MaxPool1d::new(2).forward(&x).unwrap();
        assert_eq!(max.shape(), [1, 2, 3]);
        assert_eq!(values(&max), vec![1.0, 3.0, 5.0, 7.0, 9.0, 11.0]);
        let mut avg = AvgPool1d::new(3);
        avg.stride = Some(1);
        let a = avg.forward(&x).unwrap();
        assert_eq!(a.shape(), [1, 2, 4]);
        assert_eq!(values(&a)[..4], [1.0, 2.0, 3.0, 4.0]);
        let img = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[1, 1, 2, 2], &d).unwrap();
        let up = Upsample::with_scale(2.0, InterpolateMode::Nearest)
            .forward(&img)
            .unwrap();
        assert_eq!(up.shape(), [1, 1, 4, 4]);
        assert_eq!(values(&up)[..8], [1.0, 1.0, 2.0, 2.0, 1.0, 1.0, 2.0, 2.0]);
        let sized = Upsample::with_size(&[3, 3], InterpolateMode::Linear)
            .forward(&img)
            .unwrap();
        assert_eq!(sized.shape(), [1, 1, 3, 3]);
    }
}
