//! `docs/PYTORCH.md` spelled out: every wgrad call of the cheat sheet,
//! written as the page writes it, runs here on the CPU, so a renamed or
//! removed API breaks this test instead of leaving the page wrong.

use wgrad::nn::data::{DataLoader, Dataset};
use wgrad::nn::init::{self, FanMode, Nonlinearity};
use wgrad::nn::loss::{self, CrossEntropyOptions, Reduction};
use wgrad::nn::{
    AdaptiveAvgPool2d, AttentionOptions, AvgPool2d, BatchNorm2d, CELU, ConstantPad1d, Conv2d,
    Conv2dOptions, ConvTranspose1d, Dropout, ELU, Embedding, GELU, GLU, GRU, GRUCell, GroupNorm,
    Hardshrink, Hardsigmoid, Hardswish, Hardtanh, Identity, InstanceNorm2d, LSTM, LSTMCell,
    LayerNorm, Linear, LogSigmoid, LogSoftmax, MaxPool2d, Mish, ModuleDict, ModuleList,
    MultiheadAttention, PReLU, PixelShuffle, PixelUnshuffle, RMSNorm, ReLU, ReLU6, ReflectionPad2d,
    RnnOptions, SELU, Sequential, SiLU, Sigmoid, Softmax, Softmin, Softplus, Softshrink, Softsign,
    Tanh, Tanhshrink, Threshold, TransformerEncoderLayer, TransformerOptions, Unflatten, ZeroPad2d,
    checkpoint, state_dict,
};
use wgrad::optim::*;
use wgrad::prelude::*;
use wgrad::{
    BackwardOptions, Conv2dArgs, ConvPadding, InterpolateMode, PadMode, Pool2dArgs,
    autograd::GradOptions,
};

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pytorch_md");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn tensors() -> Result<()> {
    let d = &Device::Cpu;
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2], d)?;
    assert_eq!(Tensor::scalar(3.5, d)?.rank(), 0);
    let _ = (Tensor::zeros(&[2, 3], d)?, Tensor::ones(&[2, 3], d)?);
    let _ = Tensor::full(&[2], 7.0, DType::I32, d)?;
    let _ = (x.zeros_like()?, x.ones_like()?);
    let _ = Tensor::arange(0.0, 10.0, 2.0, DType::I32, d)?;
    let _ = (Tensor::rand(&[2, 3], d)?, Tensor::randn(&[2, 3], d)?);
    let _ = (Tensor::randint(0, 10, &[5], d)?, Tensor::randperm(4, d)?);
    manual_seed(0);
    assert!(x.shape() == [2, 2]);
    let _ = (x.rank(), x.numel(), x.dtype(), x.device());
    let _ = x.sum_all()?.item()?;
    let _: Vec<f32> = x.to_vec::<f32>()?;
    let _ = x.to_vec_f32()?;
    let _ = format!("{x}");
    let _ = (x.cast(DType::F32)?, x.cast(DType::I32)?);
    let _ = Device::parse("cpu")?;
    let _ = Device::gpu().is_ok();
    let _ = x.to(&Device::Cpu)?;
    d.synchronize()?;
    d.empty_cache();
    wgrad::set_float32_matmul_precision("highest")?;
    Ok(())
}

#[test]
fn indexing_and_shapes() -> Result<()> {
    let d = &Device::Cpu;
    let x = Tensor::arange(0.0, 12.0, 1.0, DType::F32, d)?.reshape(&[3, 4])?;
    let idx = Tensor::from_vec(vec![2i32, 0], &[2], d)?;
    let _ = (x.select(0, 0)?, x.select(0, -1)?);
    let _ = (x.slice(1, Some(1), Some(3), 1)?, x.slice(0, None, None, 2)?);
    let _ = x.narrow(1, 0, 2)?;
    let _ = x.index_select(0, &idx)?;
    let mask = x.gt_scalar(5.0)?;
    let _ = x.masked_select(&mask)?;
    let _ = x.masked_fill(&mask, 0.0)?;
    let v = Tensor::ones(&[2, 4], d)?;
    let _ = (x.index_put(&idx, &v, false)?, x.index_put(&idx, &v, true)?);
    let cols = Tensor::from_vec(vec![0i32, 1, 2], &[3, 1], d)?;
    let _ = x.gather(1, &cols)?;
    let src = Tensor::ones(&[2, 4], d)?;
    let rows = idx.unsqueeze(1)?.expand(&[2, 4])?.contiguous()?;
    let _ = x.scatter_add(0, &rows, &src)?;
    let _ = x.index_add(0, &idx, &src)?;
    let _ = (x.reshape(&[2, -1])?, x.flatten(1)?);
    let _ = (
        x.unsqueeze(0)?.permute(&[2, 0, 1])?,
        x.transpose(0, 1)?,
        x.t()?,
    );
    let _ = (x.unsqueeze(0)?, x.unsqueeze(0)?.squeeze(0)?);
    let row = Tensor::ones(&[1, 4], d)?;
    let _ = (row.expand(&[3, 4])?, x.contiguous()?);
    let _ = (Tensor::cat(&[&x, &x], 0)?, Tensor::stack(&[&x, &x], 0)?);
    let _ = (x.split(2, 0)?, x.chunk(3, 0)?, x.unbind(0)?);
    let _ = (x.repeat(&[2, 1])?, x.flip(&[0])?, x.roll(&[1], &[0])?);
    let _ = (x.tril(0)?, x.triu(1)?);
    let _ = idx.one_hot(10, DType::F32)?;
    Ok(())
}

#[test]
fn math_and_reductions() -> Result<()> {
    let d = &Device::Cpu;
    let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2], d)?;
    let b = a.add_scalar(1.0)?;
    let _ = ((&a + &b)?, (&a * 2.0)?, a.div(&b)?, (&a % &b)?, (-&a)?);
    let _ = a.floor_divide(&b)?;
    let _ = (a.exp()?, a.log()?, a.sqrt()?, a.abs()?, a.sin()?);
    let _ = (a.pow_scalar(2.0)?, a.pow(&b)?);
    let lo = Tensor::zeros(&[2, 2], d)?;
    let _ = (
        a.clamp(Some(0.0), Some(1.0))?,
        a.clamp_tensor(Some(&lo), None)?,
    );
    let _ = a.maximum(&b)?;
    let (c, _) = (a.gt_scalar(0.0)?, a.eq(&b)?);
    let _ = Tensor::where_cond(&c, &a, &b)?;
    let _ = (a.sum_all()?, a.sum(&[1], true)?, a.mean(&[0], false)?);
    let _ = (a.max(&[1], false)?, a.min(&[1], false)?);
    let (_values, _idx) = a.max_dim(1, false)?;
    let _ = (a.argmax(1, false)?, a.argmax_all()?);
    let _ = (a.var(&[1], 1, false)?, a.std(&[1], 0, false)?);
    let _ = (a.prod(&[], false)?, a.logsumexp(&[1], false)?);
    let _ = a.norm(2.0, &[1], false)?;
    let _ = (a.cumsum(0)?, a.cumprod(0)?);
    let _ = (a.sort(-1, true)?, a.argsort(-1, false)?);
    let _ = a.topk(1, -1, true, true)?;
    let p = Tensor::from_vec(vec![0.25f32, 0.75], &[2], d)?;
    let _ = (p.multinomial(1, false)?, p.bernoulli()?);
    let _ = (a.matmul(&b)?, a.matmul_t(&b, false, true)?);
    let x = Tensor::zeros(&[2, 2], d)?;
    x.add_(&b)?;
    x.mul_scalar_(2.0)?;
    x.zero_()?;
    x.fill_(1.0)?;
    x.copy_(&b)?;
    Ok(())
}

#[test]
fn autograd() -> Result<()> {
    let d = &Device::Cpu;
    let x = Tensor::randn(&[3], d)?.with_requires_grad(true)?;
    let y = x.square()?.sum_all()?;
    y.backward_with_options(None, BackwardOptions { retain_graph: true })?;
    y.backward()?;
    assert!(x.grad().is_some());
    x.zero_grad();
    let _ = x.detach();
    {
        let _guard = no_grad();
    }
    let y = x.square()?.sum_all()?;
    let _ = wgrad::autograd::grad(&[&y], &[&x], None, GradOptions::default())?;
    let _ = (x.is_leaf(), y.grad_fn_name());
    let f = |t: &[Tensor]| t[0].tanh();
    wgrad::gradcheck(f, &[x], wgrad::gradcheck::GradcheckOptions::default())?.check()?;
    Ok(())
}

#[test]
fn modules_functional_and_losses() -> Result<()> {
    let d = &Device::Cpu;
    let mut model = Sequential::new()
        .add(Linear::new(4, 8, true, d)?)
        .add(ReLU::new());
    let _ = (ModuleList::new(), ModuleDict::new());
    let x = Tensor::randn(&[2, 4], d)?;
    let _ = model.forward(&x)?;
    let _ = (model.parameters(), model.named_parameters());
    let _ = (model.named_buffers(), model.num_parameters());
    model.train(true);
    model.eval();
    model.to_device(&Device::Cpu)?;
    let options = Conv2dOptions {
        padding: ConvPadding::Explicit(1),
        ..Default::default()
    };
    let _ = Conv2d::with_options(3, 16, [3, 3], options, d)?;
    let _ = Conv2d::new(3, 16, 3, d)?;
    let _ = (
        MaxPool2d::new(2),
        AvgPool2d::new(2),
        AdaptiveAvgPool2d::new([1, 1]),
    );
    let _ = BatchNorm2d::new(16, d)?;
    let _ = (
        LayerNorm::new(&[64], 1e-5, true, d)?,
        GroupNorm::new(4, 16, 1e-5, true, d)?,
    );
    let _ = (Dropout::new(0.1)?, Embedding::new(1000, 64, d)?);
    let _ = (GELU::new(), SiLU::new(), Tanh::new(), Sigmoid::new());
    let mha = MultiheadAttention::new(64, 8, 0.0, true, true, d)?;
    let q = Tensor::randn(&[1, 3, 64], d)?;
    let _ = mha.forward_attention(&q, &q, &q, &AttentionOptions::default())?;
    let _ = TransformerEncoderLayer::new(&TransformerOptions::new(64, 8), d)?;
    let (q4, k4) = (
        Tensor::randn(&[1, 2, 3, 4], d)?,
        Tensor::randn(&[1, 2, 5, 4], d)?,
    );
    let _ = Tensor::einsum("bhqd,bhkd->bhqk", &[&q4, &k4])?;
    let acts: Vec<Box<dyn Module>> = vec![
        Box::new(GELU::with_approximate("tanh")?),
        Box::new(ELU::new(0.5)),
        Box::new(SELU::new()),
        Box::new(Softplus::new(2.0, 10.0)),
        Box::new(Hardtanh::new(-2.0, 2.0)?),
        Box::new(ReLU6::new()),
        Box::new(Mish::new()),
        Box::new(LogSigmoid::new()),
        Box::new(Softsign::new()),
        Box::new(Softmax::new(1)),
        Box::new(LogSoftmax::new(-1)),
        Box::new(Identity::new()),
        Box::new(PReLU::new(64, 0.25, d)?),
    ];
    let more: Vec<Box<dyn Module>> = vec![
        Box::new(CELU::new(0.5)?),
        Box::new(GLU::new(1)),
        Box::new(Softmin::new(1)),
        Box::new(Tanhshrink::new()),
        Box::new(Hardswish::new()),
        Box::new(Hardsigmoid::new()),
        Box::new(Threshold::new(0.1, 20.0)),
        Box::new(Hardshrink::default()),
        Box::new(Softshrink::new(0.3)),
        Box::new(RMSNorm::new(&[64], None, true, d)?),
    ];
    for m in &more {
        let _ = m.forward(&Tensor::randn(&[2, 64], d)?)?;
    }
    let img4 = Tensor::randn(&[1, 32, 4, 4], d)?;
    let _ = InstanceNorm2d::new(32, 1e-5, true, d)?.forward(&img4)?;
    let _ = PixelUnshuffle::new(2).forward(&PixelShuffle::new(2).forward(&img4)?)?;
    let _ = Unflatten::new(1, &[2, -1]).forward(&img4)?;
    let _ = ZeroPad2d::uniform(1).forward(&img4)?;
    let _ = ReflectionPad2d::with_sides([1, 1, 2, 0]).forward(&img4)?;
    let seq3 = Tensor::randn(&[1, 16, 5], d)?;
    let _ = ConstantPad1d::new([2, 3], 1.5).forward(&seq3)?;
    let up1 = ConvTranspose1d::new(16, 8, 4, 2, 1, 0, 1, true, 1, d)?;
    let _ = up1.forward(&seq3)?;
    let _ = seq3.conv_transpose1d(&up1.weight, up1.bias.as_ref(), 2, 1, 0, 1, 1)?;
    let o = TransformerOptions::new(64, 8);
    let stack = wgrad::nn::TransformerEncoder::new(
        || TransformerEncoderLayer::new(&o, d),
        2,
        Some(LayerNorm::new(&[64], 1e-5, true, d)?),
    )?;
    let _ = stack.forward_masked(
        &Tensor::randn(&[3, 1, 64], d)?,
        &wgrad::nn::LayerMasks::default(),
    )?;
    let _ = wgrad::nn::Transformer::new(&o, 1, 1, d)?;
    {
        let _g = wgrad::enable_grad();
        let _h = wgrad::set_grad_enabled(false);
        let _i = wgrad::inference_mode();
    }
    let hx = Tensor::ones(&[2], d)?.with_requires_grad(true)?;
    let hy = hx.mul_scalar(3.0)?;
    hy.retain_grad()?;
    let h = hx.register_hook(|g| Ok(Some(g.mul_scalar(2.0)?)))?;
    hy.sum_all()?.backward()?;
    let _ = hy.grad();
    h.remove();
    let wi = Tensor::zeros(&[8, 4], d)?;
    init::trunc_normal_(&wi, 0.0, 0.02, -2.0, 2.0)?;
    init::orthogonal_(&wi, 1.0)?;
    init::eye_(&wi)?;
    let (sa, sb) = (Tensor::ones(&[3, 2], d)?, Tensor::ones(&[1, 2], d)?);
    let _ = wgrad::nn::rnn::pad_sequence(&[&sa, &sb], true, 0.0, false)?;
    let act_in = Tensor::randn(&[2, 64], d)?;
    for act in &acts {
        let _ = act.forward(&act_in)?;
    }
    let _ = ELU::default();
    let lstm = LSTM::new(
        RnnOptions {
            num_layers: 2,
            batch_first: true,
            ..RnnOptions::new(10, 20)
        },
        d,
    )?;
    let seq = Tensor::randn(&[3, 5, 10], d)?;
    let (h0, c0) = (
        Tensor::zeros(&[2, 3, 20], d)?,
        Tensor::zeros(&[2, 3, 20], d)?,
    );
    let (_out, (_h_n, _c_n)) = lstm.forward_state(&seq, Some((&h0, &c0)))?;
    let _ = lstm.forward(&seq)?;
    let gru = GRU::new(RnnOptions::new(10, 20), d)?;
    let _ = gru.forward_hidden(&seq, Some(&Tensor::zeros(&[1, 5, 20], d)?))?;
    let cell = LSTMCell::new(10, 20, true, d)?;
    let step = Tensor::randn(&[3, 10], d)?;
    let (h, c) = cell.forward_state(&step, None)?;
    let _ = cell.forward_state(&step, Some((&h, &c)))?;
    let _ = GRUCell::new(10, 20, true, d)?.forward_hidden(&step, Some(&h))?;
    let (w, b) = (Tensor::zeros(&[8, 4], d)?, Tensor::zeros(&[8], d)?);
    init::kaiming_uniform_(&w, 0.0, FanMode::FanIn, Nonlinearity::LeakyRelu)?;
    init::zeros_(&b)?;

    let _ = (x.relu()?, x.gelu()?, x.silu()?, x.sigmoid()?);
    let _ = (x.softmax(-1)?, x.log_softmax(-1)?);
    let img = Tensor::randn(&[1, 3, 8, 8], d)?;
    let (cw, cb) = (Tensor::randn(&[4, 3, 3, 3], d)?, Tensor::zeros(&[4], d)?);
    let args = Conv2dArgs {
        stride: [2, 2],
        padding: [[1, 1], [1, 1]],
        ..Default::default()
    };
    let _ = img.conv2d(&cw, Some(&cb), &args)?;
    let _ = (
        img.max_pool2d(&Pool2dArgs::new([2, 2]))?,
        img.avg_pool2d(&Pool2dArgs::new([2, 2]), true, None)?,
    );
    let _ = img.pad(&[1, 1, 1, 1], PadMode::Reflect)?;
    let _ = img.interpolate(None, Some(&[2.0, 2.0]), InterpolateMode::Nearest, false)?;
    let _ = q.scaled_dot_product_attention(&q, &q, None, 0.0, true, None)?;
    let idx = Tensor::from_vec(vec![1i32, 2], &[2], d)?;
    let _ = wgrad::nn::embedding(&idx, &w, None)?;
    let _ = Dropout::new(0.1)?.forward(&x)?;

    let logits = Tensor::randn(&[2, 5], d)?;
    let y = Tensor::from_vec(vec![1i32, 4], &[2], d)?;
    let _ = loss::cross_entropy(&logits, &y, CrossEntropyOptions::default())?;
    let smoothed = CrossEntropyOptions {
        label_smoothing: 0.1,
        ignore_index: -1,
        ..Default::default()
    };
    let _ = loss::cross_entropy(&logits, &y, smoothed)?;
    let _ = loss::nll_loss(&logits.log_softmax(-1)?, &y, Reduction::Mean)?;
    let t = Tensor::zeros(&[2, 4], d)?;
    let _ = (
        loss::mse_loss(&x, &t, Reduction::Mean)?,
        loss::l1_loss(&x, &t, Reduction::Mean)?,
    );
    let _ = loss::smooth_l1_loss(&x, &t, 1.0, Reduction::Mean)?;
    let _ = loss::binary_cross_entropy_with_logits(&x, &t, Reduction::Mean)?;
    Ok(())
}

/// The distance functions and the margin, embedding and likelihood losses
/// of the Functional and Losses tables.
#[test]
fn distances_and_margin_losses() -> Result<()> {
    use wgrad::nn::{CosineSimilarity, PairwiseDistance};
    let d = &Device::Cpu;
    let (x, a, b) = (
        Tensor::randn(&[4, 3], d)?,
        Tensor::randn(&[4, 3], d)?,
        Tensor::randn(&[4, 3], d)?,
    );
    let _ = wgrad::nn::normalize(&x, 2.0, 1, 1e-12)?;
    let _ = wgrad::nn::cosine_similarity(&a, &b, 1, 1e-8)?;
    let _ = CosineSimilarity::new(1, 1e-8).forward(&a, &b)?;
    let _ = CosineSimilarity::default().forward(&a, &b)?;
    let _ = wgrad::nn::pairwise_distance(&a, &b, 2.0, 1e-6, false)?;
    let _ = PairwiseDistance::default().forward(&a, &b)?;
    let (x1, x2) = (Tensor::randn(&[2, 5, 3], d)?, Tensor::randn(&[2, 6, 3], d)?);
    assert_eq!(wgrad::nn::cdist(&x1, &x2, 2.0)?.shape(), [2, 5, 6]);

    let (s1, s2) = (Tensor::randn(&[4], d)?, Tensor::randn(&[4], d)?);
    let y = Tensor::from_vec(vec![1.0f32, -1.0, 1.0, -1.0], &[4], d)?;
    let _ = loss::margin_ranking_loss(&s1, &s2, &y, 0.0, Reduction::Mean)?;
    let _ = loss::hinge_embedding_loss(&s1, &y, 1.0, Reduction::Mean)?;
    let _ = loss::soft_margin_loss(&s1, &y, Reduction::Mean)?;
    let (labels, w) = (Tensor::ones(&[4, 3], d)?, Tensor::ones(&[3], d)?);
    let _ = loss::multilabel_soft_margin_loss(&x, &labels, Some(&w), Reduction::Mean)?;
    let _ = loss::cosine_embedding_loss(&a, &b, &y, 0.0, Reduction::Mean)?;
    let (p, n) = (&a, &b);
    let _ = loss::triplet_margin_loss(&x, p, n, 1.0, 2.0, 1e-6, false, Reduction::Mean)?;
    let t = Tensor::ones(&[4, 3], d)?;
    let _ = loss::poisson_nll_loss(&x, &t, true, false, 1e-8, Reduction::Mean)?;
    let var = Tensor::ones(&[4, 3], d)?;
    let _ = loss::gaussian_nll_loss(&x, &t, &var, false, 1e-6, Reduction::Mean)?;
    let _ = loss::gaussian_nll_loss(&x, &t, 0.5, false, 1e-6, Reduction::Mean)?;
    Ok(())
}

#[test]
fn mixed_precision() -> Result<()> {
    use wgrad::amp::{GradScaler, GradScalerConfig};
    use wgrad::{AutocastGuard, autocast};
    let d = &Device::Cpu;
    let x = Tensor::randn(&[3, 4], d)?;
    let _ = (
        x.half()?,
        x.bfloat16()?,
        x.half()?.float()?,
        x.cast(DType::F16)?,
    );
    let model = Linear::new(4, 2, true, d)?;
    model.half()?;
    model.to_dtype(DType::BF16)?;
    model.float()?;
    let loss = autocast(DType::BF16, || -> Result<Tensor> {
        model.forward(&x)?.square()?.mean_all()
    })??;
    {
        let _ac = AutocastGuard::new(DType::BF16)?;
        assert!(wgrad::is_autocast_enabled());
        assert_eq!(wgrad::autocast_dtype(), Some(DType::BF16));
    }
    let mut opt = Sgd::new(model.parameters(), SgdConfig::new(0.1))?;
    let mut scaler = GradScaler::new();
    let _ = GradScaler::with_config(GradScalerConfig::default())?;
    scaler.scale(&loss)?.backward()?;
    scaler.unscale_(&mut opt)?;
    let _stepped: bool = scaler.step(&mut opt)?;
    scaler.update()?;
    let sd = scaler.state_dict();
    scaler.load_state_dict(&sd)?;
    Ok(())
}

#[test]
fn optimizers_data_and_files() -> Result<()> {
    let d = &Device::Cpu;
    let model = Linear::new(4, 2, true, d)?;
    let params = model.parameters();
    let mut opt = Sgd::new(
        model.parameters(),
        SgdConfig {
            momentum: 0.9,
            ..SgdConfig::new(0.1)
        },
    )?;
    let _ = (
        Adam::new(params.clone(), AdamConfig::default())?,
        AdamW::new(params.clone(), AdamWConfig::default())?,
    );
    let _ = RmsProp::new(params.clone(), RmsPropConfig::default())?;
    let _ = Adagrad::new(params.clone(), AdagradConfig::default())?;
    let _ = (
        NAdam::new(params.clone(), NAdamConfig::default())?,
        RAdam::new(params.clone(), RAdamConfig::default())?,
        Adamax::new(params.clone(), AdamaxConfig::default())?,
        Adadelta::new(params.clone(), AdadeltaConfig::default())?,
    );
    let _ = NAdam::new(
        params.clone(),
        NAdamConfig {
            weight_decay: 0.01,
            decoupled_weight_decay: true,
            ..Default::default()
        },
    )?;
    let x = Tensor::randn(&[3, 4], d)?;
    opt.zero_grad();
    model.forward(&x)?.square()?.mean_all()?.backward()?;
    opt.step()?;
    let cfg = AdamWConfig::default();
    let _ = AdamW::with_groups(vec![
        ParamGroup::new(vec![params[0].clone()], cfg),
        ParamGroup::new(vec![params[1].clone()], cfg),
    ])?;
    let _ = (opt.lr(), opt.group_lrs());
    opt.set_lr(0.1);
    let mut sched = StepLR::new(&mut opt, 30, 0.1)?;
    sched.step(&mut opt);
    let _ = MultiStepLR::new(&mut opt, &[30, 80], 0.1)?;
    let _ = ExponentialLR::new(&mut opt, 0.9)?;
    let _ = LambdaLR::new(&mut opt, |e| 1.0 / (e + 1) as f64)?;
    let _ = CosineAnnealingLR::new(&mut opt, 10, 0.0)?;
    let _ = CosineAnnealingWarmRestarts::new(&mut opt, 10, 1, 0.0)?;
    let warm = LinearLR::new(&mut opt, 0.1, 1.0, 5)?;
    let cos = CosineAnnealingLR::new(&mut opt, 10, 0.0)?;
    let _ = SequentialLR::new(&mut opt, vec![Box::new(warm), Box::new(cos)], vec![5])?;
    let _ = (
        ConstantLR::new(&mut opt, 1.0 / 3.0, 5)?,
        PolynomialLR::new(&mut opt, 5, 1.0)?,
    );
    let _ = OneCycleLR::new(&mut opt, 0.1, 10)?;
    let mut plateau = ReduceLROnPlateau::new(&opt, ReduceLROnPlateauConfig::default())?;
    plateau.step(&mut opt, 1.0);
    let _ = clip_grad_norm_(&params, 1.0, 2.0)?;

    let ds = Dataset::new(vec![0.0; 40], &[4], vec![0, 1, 0, 1, 0, 1, 0, 1, 0, 1])?;
    let _ = (
        ds.split(0.9)?,
        ds.subset(&[0, 1])?,
        ds.split_at(5)?,
        ds.shuffled(1),
    );
    let loader = DataLoader::new(&ds, 4)?.shuffle(7).drop_last(true);
    for batch in loader.epoch(0, d) {
        let (_x, _y) = batch?;
    }

    let p = scratch("model.safetensors");
    state_dict::save(&model, &p)?;
    state_dict::load(&model, &p)?;
    let sd = state_dict::state_dict(&model)?;
    state_dict::load_state_dict(&model, &sd)?;
    state_dict::save_file(&sd, &p)?;
    let _ = state_dict::load_file(&p, d)?;
    checkpoint::save(&p, &model, &opt, 3)?;
    assert_eq!(checkpoint::load(&p, &model, &mut opt)?, 3);
    use wgrad::nn::OptimizerCheckpoint;
    let osd = opt.optimizer_state_dict()?;
    opt.load_optimizer_state_dict(&osd)?;
    Ok(())
}
