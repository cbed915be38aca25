//! A small ResNet (a conv-BN-ReLU stem, BasicBlocks with BatchNorm and a
//! strided downsample path, global average pooling, a linear head) trained
//! with SGD + momentum and cosine annealing on a synthetic 32x32 RGB task
//! that needs no download: ten classes, each a shape (square, disk, cross,
//! ring, diagonal bar) in one of two colour schemes, drawn at random
//! positions and sizes over coloured noise.
//!
//! `cargo run --release --example resnet` (`--device gpu` for the GPU).
//!
//! Parameter and buffer names are torchvision's (`conv1.weight`,
//! `layer2.0.downsample.1.running_var`, ...), so the best epoch's weights
//! that `--save FILE` writes (to `FILE` with `.best` before the extension)
//! are a state_dict PyTorch's model of the same layout loads.

mod common;

use std::path::PathBuf;

use clap::Parser;
use wgrad::ConvPadding;
use wgrad::nn::data::{DataLoader, Dataset};
use wgrad::nn::{
    AdaptiveAvgPool2d, BatchNorm2d, Conv2d, Conv2dOptions, Linear, Module, Sequential, state_dict,
};
use wgrad::optim::{CosineAnnealingLR, LrScheduler, Sgd, SgdConfig};
use wgrad::prelude::*;

const SIZE: usize = 32;

fn conv(cin: usize, cout: usize, kernel: usize, stride: usize, device: &Device) -> Result<Conv2d> {
    let options = Conv2dOptions {
        stride: [stride; 2],
        padding: ConvPadding::Explicit(kernel / 2),
        bias: false,
        ..Conv2dOptions::default()
    };
    Conv2d::with_options(cin, cout, [kernel; 2], options, device)
}

/// torchvision's BasicBlock: conv-BN-ReLU-conv-BN plus the identity (or a
/// strided 1x1 conv + BN when the shape changes), then ReLU.
#[derive(Module)]
struct BasicBlock {
    conv1: Conv2d,
    bn1: BatchNorm2d,
    conv2: Conv2d,
    bn2: BatchNorm2d,
    downsample: Option<Sequential>,
}

impl BasicBlock {
    fn new(cin: usize, cout: usize, stride: usize, device: &Device) -> Result<Self> {
        let downsample = if stride != 1 || cin != cout {
            Some(
                Sequential::new()
                    .add(conv(cin, cout, 1, stride, device)?)
                    .add(BatchNorm2d::new(cout, device)?),
            )
        } else {
            None
        };
        Ok(BasicBlock {
            conv1: conv(cin, cout, 3, stride, device)?,
            bn1: BatchNorm2d::new(cout, device)?,
            conv2: conv(cout, cout, 3, 1, device)?,
            bn2: BatchNorm2d::new(cout, device)?,
            downsample,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let out = self.bn1.forward(&self.conv1.forward(x)?)?.relu()?;
        let out = self.bn2.forward(&self.conv2.forward(&out)?)?;
        let identity = match &self.downsample {
            Some(d) => d.forward(x)?,
            None => x.clone(),
        };
        out.add(&identity)?.relu()
    }
}

/// Stem (16 channels), layer1 (16), layer2 (32, stride 2), layer3 (64,
/// stride 2), global average pool, fc.
#[derive(Module)]
struct ResNet {
    conv1: Conv2d,
    bn1: BatchNorm2d,
    layer1: Sequential,
    layer2: Sequential,
    layer3: Sequential,
    avgpool: AdaptiveAvgPool2d,
    fc: Linear,
}

impl ResNet {
    fn new(classes: usize, device: &Device) -> Result<Self> {
        Ok(ResNet {
            conv1: conv(3, 16, 3, 1, device)?,
            bn1: BatchNorm2d::new(16, device)?,
            layer1: Sequential::new().add(BasicBlock::new(16, 16, 1, device)?),
            layer2: Sequential::new().add(BasicBlock::new(16, 32, 2, device)?),
            layer3: Sequential::new().add(BasicBlock::new(32, 64, 2, device)?),
            avgpool: AdaptiveAvgPool2d::new([1, 1]),
            fc: Linear::new(64, classes, true, device)?,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let images = x.reshape(&[-1, 3, SIZE as isize, SIZE as isize])?;
        let x = self.bn1.forward(&self.conv1.forward(&images)?)?.relu()?;
        let x = self.layer1.forward(&x)?;
        let x = self.layer2.forward(&x)?;
        let x = self.layer3.forward(&x)?;
        self.fc.forward(&self.avgpool.forward(&x)?.flatten(1)?)
    }
}

/// A small deterministic generator (splitmix64) for the synthetic images.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn uniform(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// `n` images `[3*32*32]` (channel-major) with labels 0..10: shape
/// `label % 5` in colour scheme `label / 5`.
fn shapes(n: usize, seed: u64) -> Result<Dataset> {
    let mut rng = Rng(seed);
    let mut pixels = Vec::with_capacity(n * 3 * SIZE * SIZE);
    let mut labels = Vec::with_capacity(n);
    for _ in 0..n {
        let label = rng.below(10);
        let (shape, scheme) = (label % 5, label / 5);
        let color: [f32; 3] = if scheme == 0 {
            [0.9, 0.3 + 0.3 * rng.uniform(), 0.2]
        } else {
            [0.2, 0.3 + 0.3 * rng.uniform(), 0.9]
        };
        let background = [
            rng.uniform() * 0.4,
            rng.uniform() * 0.4,
            rng.uniform() * 0.4,
        ];
        let radius = 5.0 + rng.uniform() * 6.0;
        let cy = radius + rng.uniform() * (SIZE as f32 - 2.0 * radius);
        let cx = radius + rng.uniform() * (SIZE as f32 - 2.0 * radius);
        let mut image = vec![0f32; 3 * SIZE * SIZE];
        for y in 0..SIZE {
            for x in 0..SIZE {
                let (dy, dx) = (y as f32 - cy, x as f32 - cx);
                let r = (dy * dy + dx * dx).sqrt();
                let inside = match shape {
                    0 => dy.abs() < radius * 0.8 && dx.abs() < radius * 0.8,
                    1 => r < radius,
                    2 => (dy.abs() < radius * 0.25 || dx.abs() < radius * 0.25) && r < radius,
                    3 => r < radius && r > radius * 0.6,
                    _ => (dy - dx).abs() < radius * 0.35 && r < radius,
                };
                for c in 0..3 {
                    let noise = (rng.uniform() - 0.5) * 0.2;
                    let v = if inside { color[c] } else { background[c] };
                    image[(c * SIZE + y) * SIZE + x] = v + noise;
                }
            }
        }
        pixels.extend(image);
        labels.push(label as i32);
    }
    Dataset::new(pixels, &[3 * SIZE * SIZE], labels)
}

/// A small ResNet on synthetic 32x32 RGB shapes.
#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    device: common::DeviceArgs,
    #[command(flatten)]
    train: common::TrainArgs,
    #[command(flatten)]
    output: common::OutputArgs,

    /// Train on N synthetic images (the test set has N/4, at most 1000)
    #[arg(long, value_name = "N", default_value_t = 6_000)]
    train_size: usize,

    /// Start from these weights and BatchNorm buffers (a state_dict, or a
    /// checkpoint of --save)
    #[arg(long, value_name = "FILE")]
    resume: Option<PathBuf>,
}

fn main() -> anyhow::Result<()> {
    let args: Cli = common::cli::parse(&[("epochs", "3"), ("batch_size", "64"), ("lr", "0.05")]);
    let device = &args.device.setup()?;
    let seed = args.device.seed;
    let n_train = args.train_size;
    let n_test = (n_train / 4).clamp(64, 1_000);
    println!("data: synthetic 32x32 RGB shapes, {n_train} training and {n_test} test images");
    let train = shapes(n_train, seed ^ 0x0074_7261_696e)?;
    let test = shapes(n_test, seed ^ 0x7465_7374)?;

    let mut model = ResNet::new(10, device)?;
    if let Some(path) = &args.resume {
        state_dict::load(&model, path)?;
        println!("loaded weights and buffers from {}", path.display());
    }
    let mut opt = Sgd::new(
        model.parameters(),
        SgdConfig {
            lr: args.train.lr,
            momentum: 0.9,
            weight_decay: 5e-4,
            ..Default::default()
        },
    )?;
    let epochs = args.train.epochs;
    let mut scheduler = CosineAnnealingLR::new(&mut opt, epochs.max(1), 0.0)?;

    let loader = DataLoader::new(&train, args.train.batch_size)?.shuffle(seed);
    let mut run = common::Run::new("resnet", epochs, &args.output)?;
    let mut amp = common::Amp::new(args.train.amp);
    for epoch in 0..epochs {
        let stats = common::train_epoch(
            &mut model, &mut opt, &mut amp, &loader, epoch, epochs, device,
        )?;
        let test_result = common::evaluate(&mut model, &test, 256, device)?;
        scheduler.step(&mut opt);
        run.end_epoch(epoch, &stats, test_result, &model, &opt)?;
    }
    run.finish();
    Ok(())
}
