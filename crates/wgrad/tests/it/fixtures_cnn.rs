//! The convolution family against PyTorch: replays the op cases of
//! `tests/fixtures/cnn.safetensors` (conv1d/conv2d/conv_transpose2d, the
//! pools, batch and group norm: outputs and every input gradient) on the
//! CPU and the GPU, and loads PyTorch's own `state_dict` files of the MNIST
//! tutorial net and of a small ResNet strictly, comparing their outputs.

use crate::common::{Fixture, check_close, gpu};
use serde_json::Value;
use wgrad::nn::batch_norm::{RunningStats, batch_norm};
use wgrad::nn::group_norm::group_norm;
use wgrad::nn::{
    AdaptiveAvgPool2d, BatchNorm2d, Conv2d, Conv2dOptions, Dropout, Flatten, Linear, MaxPool2d,
    Module, ReLU, Sequential, state_dict,
};
use wgrad::{
    Conv2dArgs, ConvPadding, ConvTranspose2dArgs, Device, InterpolateMode, PadMode, Pool2dArgs,
    Result, Tensor,
};

fn pair(args: &Value, key: &str) -> [usize; 2] {
    let v = args[key]
        .as_array()
        .unwrap_or_else(|| panic!("{key}: {args}"));
    [
        v[0].as_u64().unwrap() as usize,
        v[1].as_u64().unwrap() as usize,
    ]
}

fn int(args: &Value, key: &str) -> usize {
    args[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key}: {args}")) as usize
}

fn pool_args(args: &Value) -> Pool2dArgs {
    Pool2dArgs {
        kernel: pair(args, "kernel"),
        stride: pair(args, "stride"),
        padding: pair(args, "padding"),
        dilation: if args.get("dilation").is_some() {
            pair(args, "dilation")
        } else {
            [1, 1]
        },
        ceil_mode: args["ceil_mode"].as_bool().unwrap_or(false),
    }
}

/// The replay of one cnn op case, or `None` for an op this family does not have.
pub(crate) fn apply(op: &str, args: &Value, x: &[Tensor]) -> Option<Result<Tensor>> {
    Some(match op {
        "conv2d" => {
            let [ph, pw] = pair(args, "padding");
            let conv = Conv2dArgs {
                stride: pair(args, "stride"),
                padding: [[ph, ph], [pw, pw]],
                dilation: pair(args, "dilation"),
                groups: int(args, "groups"),
            };
            x[0].conv2d(&x[1], x.get(2), &conv)
        }
        "conv2d_same" => x[0].conv2d_padded(&x[1], None, 1, ConvPadding::Same, 1, 1),
        "conv1d" => x[0].conv1d(
            &x[1],
            x.get(2),
            int(args, "stride"),
            ConvPadding::Explicit(int(args, "padding")),
            int(args, "dilation"),
            int(args, "groups"),
        ),
        "conv_transpose2d" => {
            let t = ConvTranspose2dArgs {
                stride: pair(args, "stride"),
                padding: pair(args, "padding"),
                output_padding: pair(args, "output_padding"),
                groups: int(args, "groups"),
                dilation: pair(args, "dilation"),
            };
            x[0].conv_transpose2d(&x[1], x.get(2), &t)
        }
        "max_pool2d" => x[0].max_pool2d(&pool_args(args)),
        "max_pool2d_indices" => x[0]
            .max_pool2d_with_indices(&pool_args(args))
            .map(|(_, i)| i),
        "avg_pool2d" => x[0].avg_pool2d(
            &pool_args(args),
            args["count_include_pad"].as_bool().unwrap_or(true),
            args["divisor_override"].as_u64().map(|d| d as usize),
        ),
        "adaptive_avg_pool2d" => x[0].adaptive_avg_pool2d(pair(args, "output")),
        "batch_norm" => batch_norm(&x[0], None, Some(&x[1]), Some(&x[2]), true, 0.1, 1e-5),
        "batch_norm_eval" => batch_norm(
            &x[0],
            Some(RunningStats {
                mean: &x[1],
                var: &x[2],
            }),
            Some(&x[3]),
            Some(&x[4]),
            false,
            0.1,
            1e-5,
        ),
        "group_norm" => group_norm(&x[0], int(args, "groups"), Some(&x[1]), Some(&x[2]), 1e-5),
        "pad" => {
            let pad: Vec<isize> = args["pad"]
                .as_array()
                .expect("pad")
                .iter()
                .map(|v| v.as_i64().expect("pad value") as isize)
                .collect();
            let mode = match args["mode"].as_str().expect("mode") {
                "constant" => PadMode::Constant(args["value"].as_f64().expect("value") as f32),
                "reflect" => PadMode::Reflect,
                "replicate" => PadMode::Replicate,
                "circular" => PadMode::Circular,
                other => panic!("unknown pad mode {other}"),
            };
            x[0].pad(&pad, mode)
        }
        "interpolate" => {
            let size: Option<Vec<usize>> = args["size"].as_array().map(|v| {
                v.iter()
                    .map(|d| d.as_u64().expect("size") as usize)
                    .collect()
            });
            let scale: Option<Vec<f64>> = args["scale_factor"]
                .as_array()
                .map(|v| v.iter().map(|d| d.as_f64().expect("scale")).collect());
            let mode = match args["mode"].as_str().expect("mode") {
                "nearest" => InterpolateMode::Nearest,
                "nearest-exact" => InterpolateMode::NearestExact,
                "linear" => InterpolateMode::Linear,
                other => panic!("unknown interpolate mode {other}"),
            };
            x[0].interpolate(
                size.as_deref(),
                scale.as_deref(),
                mode,
                args["align_corners"].as_bool().unwrap_or(false),
            )
        }
        _ => return None,
    })
}

#[test]
fn cnn_ops_match_pytorch_on_cpu() {
    crate::fixtures_ops::run_file("cnn.safetensors", 20, &Device::Cpu, "cnn ops on the CPU");
}

#[test]
fn cnn_ops_match_pytorch_on_gpu() {
    let Some(device) = gpu() else { return };
    crate::fixtures_ops::run_file("cnn.safetensors", 20, &device, "cnn ops on the GPU");
}

/// PyTorch's MNIST example net, with its attribute names as `state_dict` keys.
pub(crate) struct TutorialNet {
    conv1: Conv2d,
    conv2: Conv2d,
    head: Sequential,
    training: bool,
}

impl TutorialNet {
    pub(crate) fn new(device: &Device) -> Result<Self> {
        Ok(TutorialNet {
            conv1: Conv2d::new(1, 32, 3, device)?,
            conv2: Conv2d::new(32, 64, 3, device)?,
            head: Sequential::new()
                .add(MaxPool2d::new(2))
                .add(Dropout::new(0.25)?)
                .add(Flatten::new())
                .add(Linear::new(9216, 128, true, device)?)
                .add(ReLU::new())
                .add(Dropout::new(0.5)?)
                .add(Linear::new(128, 10, true, device)?),
            training: true,
        })
    }
}

impl Module for TutorialNet {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let x = self.conv1.forward(x)?.relu()?;
        let x = self.conv2.forward(&x)?.relu()?;
        self.head.forward(&x)?.log_softmax(1)
    }
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        let mut out = Vec::new();
        for (prefix, m) in [
            ("conv1", &self.conv1 as &dyn Module),
            ("conv2", &self.conv2),
        ] {
            out.extend(
                m.named_parameters()
                    .into_iter()
                    .map(|(n, t)| (format!("{prefix}.{n}"), t)),
            );
        }
        // head: 3 = fc1, 6 = fc2 in the Sequential; PyTorch names them fc1/fc2.
        for (n, t) in self.head.named_parameters() {
            let name = n.replacen("3.", "fc1.", 1).replacen("6.", "fc2.", 1);
            out.push((name, t));
        }
        out
    }
    fn train(&mut self, on: bool) {
        self.training = on;
        self.head.train(on);
    }
    fn is_training(&self) -> bool {
        self.training
    }
    fn to_device(&mut self, device: &Device) -> Result<()> {
        self.conv1.to_device(device)?;
        self.conv2.to_device(device)?;
        self.head.to_device(device)
    }
}

/// A module's named state under `prefix.`.
fn prefixed(prefix: &str, m: &dyn Module, state: bool) -> Vec<(String, Tensor)> {
    let items = if state {
        m.named_state()
    } else {
        m.named_parameters()
    };
    items
        .into_iter()
        .map(|(n, t)| (format!("{prefix}.{n}"), t))
        .collect()
}

/// torchvision's BasicBlock, with its attribute names.
struct BasicBlock {
    conv1: Conv2d,
    bn1: BatchNorm2d,
    conv2: Conv2d,
    bn2: BatchNorm2d,
    downsample: Option<Sequential>,
}

fn conv3x3(cin: usize, cout: usize, stride: usize, device: &Device) -> Result<Conv2d> {
    let options = Conv2dOptions {
        stride: [stride; 2],
        padding: ConvPadding::Explicit(1),
        bias: false,
        ..Conv2dOptions::default()
    };
    Conv2d::with_options(cin, cout, [3, 3], options, device)
}

impl BasicBlock {
    fn new(cin: usize, cout: usize, stride: usize, device: &Device) -> Result<Self> {
        let downsample = if stride != 1 || cin != cout {
            let options = Conv2dOptions {
                stride: [stride; 2],
                bias: false,
                ..Conv2dOptions::default()
            };
            Some(
                Sequential::new()
                    .add(Conv2d::with_options(cin, cout, [1, 1], options, device)?)
                    .add(BatchNorm2d::new(cout, device)?),
            )
        } else {
            None
        };
        Ok(BasicBlock {
            conv1: conv3x3(cin, cout, stride, device)?,
            bn1: BatchNorm2d::new(cout, device)?,
            conv2: conv3x3(cout, cout, 1, device)?,
            bn2: BatchNorm2d::new(cout, device)?,
            downsample,
        })
    }

    fn parts(&self) -> Vec<(&'static str, &dyn Module)> {
        let mut parts: Vec<(&'static str, &dyn Module)> = vec![
            ("conv1", &self.conv1),
            ("bn1", &self.bn1),
            ("conv2", &self.conv2),
            ("bn2", &self.bn2),
        ];
        if let Some(d) = &self.downsample {
            parts.push(("downsample", d));
        }
        parts
    }
}

impl Module for BasicBlock {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let out = self.bn1.forward(&self.conv1.forward(x)?)?.relu()?;
        let out = self.bn2.forward(&self.conv2.forward(&out)?)?;
        let identity = match &self.downsample {
            Some(d) => d.forward(x)?,
            None => x.clone(),
        };
        out.add(&identity)?.relu()
    }
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        self.parts()
            .into_iter()
            .flat_map(|(p, m)| prefixed(p, m, false))
            .collect()
    }
    fn named_buffers(&self) -> Vec<(String, Tensor)> {
        self.parts()
            .into_iter()
            .flat_map(|(p, m)| {
                m.named_buffers()
                    .into_iter()
                    .map(move |(n, t)| (format!("{p}.{n}"), t))
            })
            .collect()
    }
    fn train(&mut self, on: bool) {
        self.bn1.train(on);
        self.bn2.train(on);
        if let Some(d) = &mut self.downsample {
            d.train(on);
        }
    }
    fn is_training(&self) -> bool {
        self.bn1.is_training()
    }
    fn to_device(&mut self, device: &Device) -> Result<()> {
        self.conv1.to_device(device)?;
        self.bn1.to_device(device)?;
        self.conv2.to_device(device)?;
        self.bn2.to_device(device)?;
        if let Some(d) = &mut self.downsample {
            d.to_device(device)?;
        }
        Ok(())
    }
}

/// The fixture's SmallResNet: stem, `layer1.0` (8->8), `layer2.0` (8->16,
/// stride 2, downsample), global average pool, `fc`.
struct SmallResNet {
    stem: Sequential,
    layer1: Sequential,
    layer2: Sequential,
    pool: AdaptiveAvgPool2d,
    fc: Linear,
}

impl SmallResNet {
    fn new(device: &Device) -> Result<Self> {
        Ok(SmallResNet {
            stem: Sequential::new()
                .add(conv3x3(3, 8, 1, device)?)
                .add(BatchNorm2d::new(8, device)?),
            layer1: Sequential::new().add(BasicBlock::new(8, 8, 1, device)?),
            layer2: Sequential::new().add(BasicBlock::new(8, 16, 2, device)?),
            pool: AdaptiveAvgPool2d::new([1, 1]),
            fc: Linear::new(16, 10, true, device)?,
        })
    }

    fn named(&self, state: bool) -> Vec<(String, Tensor)> {
        let mut out: Vec<(String, Tensor)> = prefixed("stem", &self.stem, state)
            .into_iter()
            .map(|(n, t)| {
                (
                    n.replacen("stem.0.", "conv1.", 1)
                        .replacen("stem.1.", "bn1.", 1),
                    t,
                )
            })
            .collect();
        out.extend(prefixed("layer1", &self.layer1, state));
        out.extend(prefixed("layer2", &self.layer2, state));
        out.extend(prefixed("fc", &self.fc, state));
        out
    }
}

impl Module for SmallResNet {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let x = self.stem.forward(x)?.relu()?;
        let x = self.layer2.forward(&self.layer1.forward(&x)?)?;
        self.fc.forward(&self.pool.forward(&x)?.flatten(1)?)
    }
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        self.named(false)
    }
    fn named_state(&self) -> Vec<(String, Tensor)> {
        self.named(true)
    }
    fn named_buffers(&self) -> Vec<(String, Tensor)> {
        let params: Vec<String> = self.named(false).into_iter().map(|(n, _)| n).collect();
        self.named(true)
            .into_iter()
            .filter(|(n, _)| !params.contains(n))
            .collect()
    }
    fn train(&mut self, on: bool) {
        self.stem.train(on);
        self.layer1.train(on);
        self.layer2.train(on);
    }
    fn is_training(&self) -> bool {
        self.stem.is_training()
    }
    fn to_device(&mut self, device: &Device) -> Result<()> {
        self.stem.to_device(device)?;
        self.layer1.to_device(device)?;
        self.layer2.to_device(device)?;
        self.fc.to_device(device)
    }
}

fn fixture_path(file: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(file)
}

fn devices() -> Vec<Device> {
    let mut d = vec![Device::Cpu];
    d.extend(gpu());
    d
}

#[test]
fn pytorch_tutorial_net_state_dict_loads_strictly_and_matches() {
    let fx = Fixture::load("cnn.safetensors");
    for device in devices() {
        let mut net = TutorialNet::new(&device).unwrap();
        state_dict::load(&net, fixture_path("cnn_tutorial.safetensors")).unwrap();
        net.eval();
        let x = fx.tensor_f32("tutorial.input", &device);
        let got = net.forward(&x).unwrap().to_vec_f32().unwrap();
        check_close(
            &format!("tutorial net on {device}"),
            &got,
            &fx.f32("tutorial.eval_out").data,
            1e-4,
        )
        .unwrap();
    }
}

#[test]
fn pytorch_resnet_state_dict_loads_strictly_and_matches_in_eval_and_train() {
    let fx = Fixture::load("cnn.safetensors");
    for device in devices() {
        let mut net = SmallResNet::new(&device).unwrap();
        state_dict::load(&net, fixture_path("cnn_resnet.safetensors")).unwrap();
        net.eval();
        let x = fx.tensor_f32("resnet.input", &device);
        let got = net.forward(&x).unwrap().to_vec_f32().unwrap();
        check_close(
            &format!("resnet eval on {device}"),
            &got,
            &fx.f32("resnet.eval_out").data,
            1e-4,
        )
        .unwrap();
        net.train(true);
        let got = net.forward(&x).unwrap().to_vec_f32().unwrap();
        check_close(
            &format!("resnet train on {device}"),
            &got,
            &fx.f32("resnet.train_out").data,
            1e-4,
        )
        .unwrap();
        for (name, t) in net.named_buffers() {
            if name.contains("running") {
                let want = fx.f32(&format!("resnet.after_train.{name}"));
                check_close(
                    &format!("{name} on {device}"),
                    &t.to_vec_f32().unwrap(),
                    &want.data,
                    1e-4,
                )
                .unwrap();
            }
        }
    }
}

/// `Dropout2d` reads a 3-D input as `[N, C, L]`, as PyTorch 2.x does: each
/// (sample, channel) row is all dropped or all kept and scaled.
#[test]
fn dropout2d_drops_whole_rows_of_a_3d_input() {
    let d = Device::Cpu;
    let drop = wgrad::nn::Dropout2d::new(0.5).unwrap();
    let y = drop
        .forward(&Tensor::ones(&[4, 8, 16], &d).unwrap())
        .unwrap();
    let v = y.to_vec_f32().unwrap();
    let mut kinds = std::collections::BTreeSet::new();
    for row in v.chunks(16) {
        assert!(row.iter().all(|&x| x == row[0]), "{row:?}");
        assert!(row[0] == 0.0 || row[0] == 2.0, "{row:?}");
        kinds.insert(row[0] as i32);
    }
    assert_eq!(kinds.len(), 2, "32 rows at p = 0.5 keep some and drop some");
}
