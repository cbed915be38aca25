//! Bad input to the convolution family: every case is an error naming the
//! op and what was wrong, on the CPU and the GPU, never a panic.

use crate::common::gpu;
use wgrad::nn::{BatchNorm1d, BatchNorm2d, Conv2d, GroupNorm, Module};
use wgrad::{
    Conv2dArgs, ConvPadding, ConvTranspose2dArgs, DType, Device, InterpolateMode, PadMode,
    Pool2dArgs, Tensor,
};

fn devices() -> Vec<Device> {
    let mut d = vec![Device::Cpu];
    d.extend(gpu());
    d
}

fn zeros(shape: &[usize], d: &Device) -> Tensor {
    Tensor::zeros(shape, d).unwrap()
}

/// `result` is an error whose message contains every one of `needles`.
fn fails_with<T: std::fmt::Debug>(what: &str, result: wgrad::Result<T>, needles: &[&str]) {
    let e = result.expect_err(what).to_string();
    for n in needles {
        assert!(e.contains(n), "{what}: error {e:?} does not mention {n:?}");
    }
}

#[test]
fn convolution_errors_name_the_op_and_the_shapes() {
    for d in devices() {
        let x = zeros(&[2, 3, 8, 8], &d);
        let args = Conv2dArgs::default();
        fails_with(
            "rank",
            zeros(&[3, 8], &d).conv2d(&zeros(&[4, 3, 3, 3], &d), None, &args),
            &["conv2d", "[3, 8]"],
        );
        fails_with(
            "weight rank",
            x.conv2d(&zeros(&[4, 3, 3], &d), None, &args),
            &["conv2d", "[4, 3, 3]"],
        );
        fails_with(
            "channels",
            x.conv2d(&zeros(&[4, 2, 3, 3], &d), None, &args),
            &["conv2d", "[4, 2, 3, 3]"],
        );
        let grouped = Conv2dArgs { groups: 2, ..args };
        fails_with(
            "groups",
            x.conv2d(&zeros(&[4, 1, 3, 3], &d), None, &grouped),
            &["conv2d", "groups"],
        );
        fails_with(
            "kernel too big",
            x.conv2d(&zeros(&[4, 3, 9, 9], &d), None, &args),
            &["conv2d", "smaller than the dilated kernel"],
        );
        let zero_stride = Conv2dArgs {
            stride: [0, 1],
            ..args
        };
        fails_with(
            "stride",
            x.conv2d(&zeros(&[4, 3, 3, 3], &d), None, &zero_stride),
            &["conv2d", "stride"],
        );
        fails_with(
            "bias",
            x.conv2d(&zeros(&[4, 3, 3, 3], &d), Some(&zeros(&[3], &d)), &args),
            &["conv2d", "bias"],
        );
        let ints = Tensor::full(&[2, 3, 8, 8], 0.0, DType::I32, &d).unwrap();
        fails_with(
            "dtype",
            ints.conv2d(&zeros(&[4, 3, 3, 3], &d), None, &args),
            &["conv2d", "int32"],
        );
        fails_with(
            "strided same",
            x.conv2d_padded(&zeros(&[4, 3, 3, 3], &d), None, 2, ConvPadding::Same, 1, 1),
            &["conv2d", "same"],
        );
        let bad_t = ConvTranspose2dArgs {
            output_padding: [2, 0],
            stride: [2, 2],
            ..Default::default()
        };
        fails_with(
            "output_padding",
            x.conv_transpose2d(&zeros(&[3, 4, 3, 3], &d), None, &bad_t),
            &["conv_transpose2d", "output_padding"],
        );
        let too_padded = ConvTranspose2dArgs {
            stride: [2, 1],
            padding: [1, 3],
            ..Default::default()
        };
        fails_with(
            "transposed output size below 0",
            zeros(&[2, 2, 2, 3], &d).conv_transpose2d(&zeros(&[2, 1, 1, 2], &d), None, &too_padded),
            &["conv_transpose2d", "padding [1, 3]", "[2, 2, 2, 3]"],
        );
        assert!(Conv2d::new(3, 4, 0, &d).is_err());
    }
    if let Some(g) = gpu() {
        let x = zeros(&[1, 3, 8, 8], &Device::Cpu);
        fails_with(
            "device",
            x.conv2d(&zeros(&[4, 3, 3, 3], &g), None, &Conv2dArgs::default()),
            &["conv2d", "cpu"],
        );
    }
}

#[test]
fn pooling_and_resampling_errors_name_the_op() {
    for d in devices() {
        let x = zeros(&[1, 2, 5, 5], &d);
        let mut args = Pool2dArgs::new([2, 2]);
        args.padding = [2, 2];
        fails_with(
            "pad > half kernel",
            x.max_pool2d(&args),
            &["max_pool2d", "half"],
        );
        fails_with(
            "zero kernel",
            x.avg_pool2d(&Pool2dArgs::new([0, 2]), true, None),
            &["avg_pool2d"],
        );
        fails_with(
            "too big",
            x.max_pool2d(&Pool2dArgs::new([6, 6])),
            &["max_pool2d"],
        );
        fails_with(
            "rank",
            zeros(&[5, 5], &d).max_pool2d(&Pool2dArgs::new([2, 2])),
            &["max_pool2d", "[5, 5]"],
        );
        fails_with(
            "reflect too wide",
            x.pad(&[5, 0, 0, 0], PadMode::Reflect),
            &["pad", "Reflect"],
        );
        // PyTorch pads the last 1-3 dims of [N, C, ..] or [C, ..] only.
        for (pad, mode, shape) in [
            (&[1, 1][..], PadMode::Reflect, &[1, 2, 5, 5][..]),
            (&[1, 1, 1, 1][..], PadMode::Replicate, &[5, 5][..]),
            (&[1, 1, 1, 1][..], PadMode::Circular, &[1, 1, 1, 5, 5][..]),
            (&[1, 1][..], PadMode::Replicate, &[5][..]),
            (&[][..], PadMode::Reflect, &[2, 5][..]),
        ] {
            fails_with(
                "pad rank",
                zeros(shape, &d).pad(pad, mode),
                &["pad", &format!("{mode:?}"), &format!("{shape:?}")],
            );
        }
        assert_eq!(
            zeros(&[2, 5], &d)
                .pad(&[1, 1], PadMode::Reflect)
                .unwrap()
                .shape()
                .to_vec(),
            vec![2, 7]
        );
        fails_with(
            "odd pad",
            x.pad(&[1, 2, 3], PadMode::Constant(0.0)),
            &["pad", "even"],
        );
        fails_with(
            "interpolate both",
            x.interpolate(Some(&[3, 3]), Some(&[2.0]), InterpolateMode::Nearest, false),
            &["interpolate", "exactly one"],
        );
        // An output size of 0: an error for the sampling modes, an empty
        // result (and zero gradients) for area, as PyTorch's
        // adaptive_avg_pool (`F.interpolate(x[2, 3, 1], scale_factor=0.5,
        // mode="area")` is [2, 3, 0]).
        let narrow = zeros(&[2, 3, 1], &d);
        fails_with(
            "interpolate to nothing",
            narrow.interpolate(None, Some(&[0.5]), InterpolateMode::Nearest, false),
            &["interpolate", "positive"],
        );
        let x1 = Tensor::ones(&[2, 3, 1], &d)
            .unwrap()
            .with_requires_grad(true)
            .unwrap();
        let empty = x1
            .interpolate(None, Some(&[0.5]), InterpolateMode::Area, false)
            .unwrap();
        assert_eq!(empty.shape().to_vec(), vec![2, 3, 0]);
        empty.sum_all().unwrap().backward().unwrap();
        assert_eq!(x1.grad().unwrap().to_vec_f32().unwrap(), vec![0.0; 6]);
    }
}

#[test]
fn normalization_errors_follow_pytorch() {
    for d in devices() {
        let bn = BatchNorm1d::new(3, &d).unwrap();
        fails_with(
            "one value per channel",
            bn.forward(&zeros(&[1, 3], &d)),
            &["more than 1 value per channel"],
        );
        let bn2 = BatchNorm2d::new(3, &d).unwrap();
        fails_with(
            "channels",
            bn2.forward(&zeros(&[2, 4, 2, 2], &d)),
            &["BatchNorm2d", "3 channels"],
        );
        assert!(GroupNorm::new(4, 6, 1e-5, true, &d).is_err());
    }
}

/// A transposed convolution whose padding takes its whole output along a
/// dim, as PyTorch's CPU computes it: an empty result (with zero
/// gradients) on its oneDNN path, which takes a batch of more than one or
/// groups; an error naming the padding on `slow_conv_transpose2d`, which
/// takes one ungrouped image or an output_padding not below its stride
/// ("Output size is too small"). PyTorch 2.15:
/// `F.conv_transpose2d(x[2, 2, 2, 3], w[2, 1, 1, 2], b, stride=(2, 1),
/// padding=(1, 2))` is `[2, 1, 1, 0]`, x[1, 2, 2, 3] raises.
#[test]
fn transposed_convolution_without_output_is_empty_or_an_error_as_in_pytorch() {
    let args = ConvTranspose2dArgs {
        stride: [2, 1],
        padding: [1, 2],
        ..Default::default()
    };
    for d in devices() {
        let leaf = |shape: &[usize]| zeros(shape, &d).with_requires_grad(true).unwrap();
        let (x, w, b) = (leaf(&[2, 2, 2, 3]), leaf(&[2, 1, 1, 2]), leaf(&[1]));
        let y = x.conv_transpose2d(&w, Some(&b), &args).unwrap();
        assert_eq!(y.shape(), &[2, 1, 1, 0], "on {d}");
        y.sum_all().unwrap().backward().unwrap();
        for (t, what) in [(&x, "x"), (&w, "weight"), (&b, "bias")] {
            let g = t.grad().unwrap().to_vec_f32().unwrap();
            assert!(g.iter().all(|&v| v == 0.0), "{what} grad on {d}: {g:?}");
        }
        let grouped = ConvTranspose2dArgs { groups: 2, ..args };
        let y = zeros(&[1, 2, 2, 3], &d)
            .conv_transpose2d(&zeros(&[2, 1, 1, 2], &d), None, &grouped)
            .unwrap();
        assert_eq!(y.shape(), &[1, 2, 1, 0], "on {d}");
        // An output_padding not below its stride (allowed under a larger
        // dilation) takes PyTorch's slow path, which raises even for a
        // batch: x[2, 2, 1, 4], stride 1, padding (1, 0), output_padding
        // (1, 0), dilation (2, 1) has 0 rows.
        let opad_args = ConvTranspose2dArgs {
            stride: [1, 1],
            padding: [1, 0],
            output_padding: [1, 0],
            dilation: [2, 1],
            ..Default::default()
        };
        fails_with(
            "transposed output size 0 with output_padding >= stride",
            zeros(&[2, 2, 1, 4], &d).conv_transpose2d(&zeros(&[2, 1, 1, 1], &d), None, &opad_args),
            &["conv_transpose2d", "no output", "[2, 2, 1, 4]"],
        );
        fails_with(
            "transposed output size 0, one ungrouped image",
            zeros(&[1, 2, 2, 3], &d).conv_transpose2d(&zeros(&[2, 1, 1, 2], &d), None, &args),
            &[
                "conv_transpose2d",
                "padding [1, 2]",
                "[1, 2, 2, 3]",
                "no output",
            ],
        );
    }
}
