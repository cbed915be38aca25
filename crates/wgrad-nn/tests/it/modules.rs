//! Modules on the CPU: parameter names and shapes, default init ranges,
//! forward values computed by hand, train/eval, gradients (gradcheck).

use wgrad_autograd::gradcheck::{GradcheckOptions, gradcheck};
use wgrad_autograd::{DType, Device, Error, Tensor};
use wgrad_nn::loss::{CrossEntropyOptions, cross_entropy};
use wgrad_nn::{
    Dropout, Embedding, Flatten, GELU, LayerNorm, LeakyReLU, Linear, Module, ReLU, Sequential,
    SiLU, Sigmoid, Tanh,
};
use wgrad_test_support::assert_close;

const CPU: Device = Device::Cpu;

fn t(values: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_vec(values.to_vec(), shape, &CPU).unwrap()
}

fn param(values: &[f32], shape: &[usize]) -> Tensor {
    t(values, shape).with_requires_grad(true).unwrap()
}

fn names_and_shapes(m: &dyn Module) -> Vec<(String, Vec<usize>)> {
    m.named_parameters()
        .into_iter()
        .map(|(n, p)| (n, p.shape().to_vec()))
        .collect()
}

#[test]
fn linear_parameters_follow_torch_names_and_shapes() {
    let l = Linear::new(4, 3, true, &CPU).unwrap();
    assert_eq!(
        names_and_shapes(&l),
        vec![("weight".into(), vec![3, 4]), ("bias".into(), vec![3])]
    );
    assert!(
        l.parameters()
            .iter()
            .all(|p| p.requires_grad() && p.is_leaf())
    );
    assert_eq!((l.in_features(), l.out_features()), (4, 3));
    assert_eq!(l.num_parameters(), 15);
    let no_bias = Linear::new(4, 3, false, &CPU).unwrap();
    assert_eq!(
        names_and_shapes(&no_bias),
        vec![("weight".into(), vec![3, 4])]
    );
}

#[test]
fn linear_default_init_is_uniform_within_one_over_sqrt_fan_in() {
    let l = Linear::new(16, 64, true, &CPU).unwrap();
    let bound = 0.25; // 1 / sqrt(16)
    let w = l.weight.to_vec_f32().unwrap();
    let b = l.bias.as_ref().unwrap().to_vec_f32().unwrap();
    for (name, v) in [("weight", &w), ("bias", &b)] {
        assert!(
            v.iter().all(|x| x.abs() <= bound),
            "{name} outside +-{bound}"
        );
        // Spread over the range: both signs and values near the bound.
        assert!(
            v.iter().any(|&x| x > 0.7 * bound) && v.iter().any(|&x| x < -0.7 * bound),
            "{name}: {v:?}"
        );
    }
    let mean = w.iter().sum::<f32>() / w.len() as f32;
    let var = w.iter().map(|x| (x - mean).powi(2)).sum::<f32>() / w.len() as f32;
    // U(-b, b) has variance b^2 / 3 = 0.02083; 1024 samples.
    assert!(mean.abs() < 0.02, "mean {mean}");
    assert!((var - 0.0208).abs() < 0.003, "var {var}");
    // Two layers draw different values.
    let other = Linear::new(16, 64, true, &CPU).unwrap();
    assert_ne!(other.weight.to_vec_f32().unwrap(), w);
}

#[test]
fn linear_forward_matches_hand_computation() {
    // W = [[1, 2], [3, 4], [5, 6]], b = [0.5, -1, 0]; x = [1, -1] -> xW^T = [-1, -1, -1].
    let l = Linear::from_parameters(
        param(&[1., 2., 3., 4., 5., 6.], &[3, 2]),
        Some(param(&[0.5, -1., 0.], &[3])),
    );
    let y = l.forward(&t(&[1., -1., 2., 0.5], &[2, 2])).unwrap();
    assert_eq!(y.shape(), vec![2, 3]);
    assert_close(
        &y.to_vec_f32().unwrap(),
        &[-0.5, -2., -1., 3.5, 7., 13.],
        1e-6,
        "linear",
    );
    // Leading batch dims broadcast over the weight; a 1-D input gives a 1-D output.
    let y = l.forward(&t(&[1., -1., 2., 0.5], &[2, 1, 2])).unwrap();
    assert_eq!(y.shape(), vec![2, 1, 3]);
    assert_close(
        &y.to_vec_f32().unwrap(),
        &[-0.5, -2., -1., 3.5, 7., 13.],
        1e-6,
        "batched linear",
    );
    let y = l.forward(&t(&[1., -1.], &[2])).unwrap();
    assert_eq!(y.shape(), vec![3]);
    // Wrong feature count is an error, not a panic.
    assert!(l.forward(&t(&[1., 2., 3.], &[1, 3])).is_err());
}

#[test]
fn sequential_names_indices_like_a_state_dict() {
    let inner = Sequential::new()
        .add(Linear::new(3, 3, false, &CPU).unwrap())
        .add(Tanh::new());
    let model = Sequential::new()
        .add(Linear::new(4, 8, true, &CPU).unwrap())
        .add(ReLU::new())
        .add(Dropout::new(0.5).unwrap())
        .add(Linear::new(8, 3, true, &CPU).unwrap())
        .add(inner)
        .add(LayerNorm::new(&[3], 1e-5, true, &CPU).unwrap());
    assert_eq!(
        names_and_shapes(&model),
        vec![
            ("0.weight".into(), vec![8, 4]),
            ("0.bias".into(), vec![8]),
            ("3.weight".into(), vec![3, 8]),
            ("3.bias".into(), vec![3]),
            ("4.0.weight".into(), vec![3, 3]),
            ("5.weight".into(), vec![3]),
            ("5.bias".into(), vec![3]),
        ]
    );
    assert_eq!(model.len(), 6);
    assert_eq!(model.parameters().len(), 7);
    assert_eq!(model.num_parameters(), 32 + 8 + 24 + 3 + 9 + 6);
    assert!(
        model
            .get(1)
            .is_some_and(|m| m.named_parameters().is_empty())
    );
    let y = model
        .forward(&Tensor::randn(&[5, 4], &CPU).unwrap())
        .unwrap();
    assert_eq!(y.shape(), vec![5, 3]);
}

#[test]
fn train_and_eval_propagate_through_containers() {
    let mut model = Sequential::new()
        .add(Linear::new(2, 2, true, &CPU).unwrap())
        .add(Sequential::new().add(Dropout::new(0.5).unwrap()));
    assert!(model.is_training());
    assert!(model.get(1).unwrap().is_training());
    model.eval();
    assert!(!model.is_training());
    assert!(!model.get(0).unwrap().is_training());
    assert!(!model.get(1).unwrap().is_training());
    // In eval mode dropout is the identity, so the whole model is deterministic.
    let x = Tensor::randn(&[4, 2], &CPU).unwrap();
    let a = model.forward(&x).unwrap().to_vec_f32().unwrap();
    let b = model.forward(&x).unwrap().to_vec_f32().unwrap();
    assert_eq!(a, b);
    model.train(true);
    assert!(model.get(1).unwrap().is_training());
    // A module pushed into an eval-mode container takes its mode.
    let mut seq = Sequential::new();
    seq.eval();
    seq.push(Dropout::new(0.1).unwrap());
    assert!(!seq.get(0).unwrap().is_training());
}

#[test]
fn activations_match_their_formulas() {
    let x = t(&[-2.0, -0.5, 0.0, 1.0, 3.0], &[5]);
    let cases: Vec<(Box<dyn Module>, Vec<f32>)> = vec![
        (Box::new(ReLU::new()), vec![0.0, 0.0, 0.0, 1.0, 3.0]),
        (
            Box::new(LeakyReLU::new(0.1)),
            vec![-0.2, -0.05, 0.0, 1.0, 3.0],
        ),
        (
            Box::new(Tanh::new()),
            vec![-0.9640276, -0.46211717, 0.0, 0.7615942, 0.9950547],
        ),
        (
            Box::new(Sigmoid::new()),
            vec![0.11920292, 0.37754068, 0.5, 0.7310586, 0.95257413],
        ),
        // x * sigmoid(x)
        (
            Box::new(SiLU::new()),
            vec![-0.23840584, -0.18877032, 0.0, 0.7310586, 2.8577223],
        ),
        // x * Phi(x), exact erf GELU (torch.nn.GELU()).
        (
            Box::new(GELU::new()),
            vec![-0.04550026, -0.15426877, 0.0, 0.8413448, 2.9959502],
        ),
    ];
    for (m, want) in cases {
        assert!(m.named_parameters().is_empty());
        assert_close(
            &m.forward(&x).unwrap().to_vec_f32().unwrap(),
            &want,
            2e-6,
            &format!("{want:?}"),
        );
    }
    assert_eq!(LeakyReLU::default().negative_slope, 0.01);
}

#[test]
fn dropout_zeroes_and_rescales_in_training_only() {
    let x = Tensor::ones(&[4000], &CPU)
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
    let mut d = Dropout::new(0.25).unwrap();
    let y = d.forward(&x).unwrap();
    let v = y.to_vec_f32().unwrap();
    let scale = 1.0 / 0.75;
    assert!(
        v.iter().all(|&e| e == 0.0 || (e - scale).abs() < 1e-6),
        "values other than 0 and 1/(1-p)"
    );
    let dropped = v.iter().filter(|&&e| e == 0.0).count() as f32 / v.len() as f32;
    assert!((dropped - 0.25).abs() < 0.03, "dropped fraction {dropped}");
    // The gradient flows through kept elements with the same scale.
    y.sum_all().unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().to_vec_f32().unwrap(), v);
    // A second call draws a new mask.
    assert_ne!(d.forward(&x).unwrap().to_vec_f32().unwrap(), v);
    // Eval: identity.
    d.eval();
    assert_eq!(
        d.forward(&x).unwrap().to_vec_f32().unwrap(),
        vec![1.0; 4000]
    );
    // p = 0 and p = 1.
    d.train(true);
    assert_eq!(
        Dropout::new(0.0)
            .unwrap()
            .forward(&x)
            .unwrap()
            .to_vec_f32()
            .unwrap(),
        vec![1.0; 4000]
    );
    assert_eq!(
        Dropout::new(1.0)
            .unwrap()
            .forward(&x)
            .unwrap()
            .to_vec_f32()
            .unwrap(),
        vec![0.0; 4000]
    );
    for bad in [-0.1, 1.1, f32::NAN] {
        let e = Dropout::new(bad).unwrap_err().to_string();
        assert!(e.contains("between 0 and 1"), "{e}");
    }
}

#[test]
fn embedding_looks_up_rows_and_accumulates_gradients() {
    let e = Embedding::from_weight(param(&[0., 1., 2., 3., 4., 5.], &[3, 2])).unwrap();
    assert_eq!(names_and_shapes(&e), vec![("weight".into(), vec![3, 2])]);
    let idx = Tensor::from_vec(vec![2i32, 0, 2, 1], &[2, 2], &CPU).unwrap();
    let y = e.forward(&idx).unwrap();
    assert_eq!(y.shape(), vec![2, 2, 2]);
    assert_eq!(
        y.to_vec_f32().unwrap(),
        vec![4., 5., 0., 1., 4., 5., 2., 3.]
    );
    y.sum_all().unwrap().backward().unwrap();
    // Row 2 was picked twice.
    assert_eq!(
        e.weight.grad().unwrap().to_vec_f32().unwrap(),
        vec![1., 1., 1., 1., 2., 2.]
    );
    // A 0-d index gives one row; an empty index gives [0, dim].
    let one = e
        .forward(&Tensor::from_vec(vec![1i32], &[], &CPU).unwrap())
        .unwrap();
    assert_eq!(
        (one.shape().to_vec(), one.to_vec_f32().unwrap()),
        (vec![2], vec![2., 3.])
    );
    let none = e
        .forward(&Tensor::from_vec(Vec::<i32>::new(), &[0], &CPU).unwrap())
        .unwrap();
    assert_eq!(none.shape(), vec![0, 2]);
    // Out of range and wrong dtype are errors.
    let bad = Tensor::from_vec(vec![3i32], &[1], &CPU).unwrap();
    assert!(matches!(
        e.forward(&bad),
        Err(Error::IndexOutOfRange {
            index: 3,
            size: 3,
            ..
        })
    ));
    assert!(matches!(
        e.forward(&t(&[1.0], &[1])),
        Err(Error::DTypeMismatch { .. })
    ));
    // Default init: N(0, 1).
    let big = Embedding::new(100, 50, &CPU).unwrap();
    assert_eq!((big.num_embeddings(), big.embedding_dim()), (100, 50));
    let v = big.weight.to_vec_f32().unwrap();
    let mean = v.iter().sum::<f32>() / v.len() as f32;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f32>() / v.len() as f32;
    assert!(
        mean.abs() < 0.05 && (var - 1.0).abs() < 0.08,
        "mean {mean} var {var}"
    );
    assert!(Embedding::from_weight(t(&[1.0], &[1])).is_err());
}

#[test]
fn layer_norm_normalizes_trailing_dims() {
    let ln = LayerNorm::new(&[3], 1e-5, true, &CPU).unwrap();
    assert_eq!(
        names_and_shapes(&ln),
        vec![("weight".into(), vec![3]), ("bias".into(), vec![3])]
    );
    assert_eq!(
        ln.weight.as_ref().unwrap().to_vec_f32().unwrap(),
        vec![1.0; 3]
    );
    assert_eq!(
        ln.bias.as_ref().unwrap().to_vec_f32().unwrap(),
        vec![0.0; 3]
    );
    // Row [1, 2, 3]: mean 2, biased var 2/3 -> (x - 2) / sqrt(2/3 + 1e-5).
    // Row [2, 4, 6]: mean 4, var 8/3.
    let x = t(&[1., 2., 3., 2., 4., 6.], &[2, 3]);
    let y = ln.forward(&x).unwrap().to_vec_f32().unwrap();
    assert_close(
        &y,
        &[-1.2247357, 0.0, 1.2247357, -1.2247426, 0.0, 1.2247426],
        1e-5,
        "layer_norm",
    );
    // Affine: weight and bias apply per element.
    let ln2 = LayerNorm::new(&[2, 3], 1e-5, false, &CPU).unwrap();
    assert!(ln2.named_parameters().is_empty());
    let y2 = ln2
        .forward(&x.reshape(&[1, 2, 3]).unwrap())
        .unwrap()
        .to_vec_f32()
        .unwrap();
    // Mean 3, var (4+1+0+1+1+9)/6 = 8/3 over all six.
    let s = (8.0f32 / 3.0 + 1e-5).sqrt();
    assert_close(
        &y2,
        &[-2. / s, -1. / s, 0., -1. / s, 1. / s, 3. / s],
        1e-5,
        "layer_norm 2-D",
    );
    assert!(matches!(
        ln.forward(&t(&[1., 2.], &[1, 2])),
        Err(Error::ShapeMismatch { .. })
    ));
    assert!(LayerNorm::new(&[], 1e-5, true, &CPU).is_err());
}

#[test]
fn flatten_keeps_the_batch_dim() {
    let x = Tensor::zeros(&[2, 3, 4, 5], &CPU).unwrap();
    assert_eq!(Flatten::new().forward(&x).unwrap().shape(), vec![2, 60]);
    assert_eq!(
        Flatten::from_dim(2).forward(&x).unwrap().shape(),
        vec![2, 3, 20]
    );
}

#[test]
fn to_device_on_the_same_device_keeps_the_parameters() {
    let mut model = Sequential::new()
        .add(Linear::new(2, 2, true, &CPU).unwrap())
        .add(LayerNorm::new(&[2], 1e-5, true, &CPU).unwrap());
    let before: Vec<u64> = model.parameters().iter().map(Tensor::id).collect();
    model.to_device(&CPU).unwrap();
    let after: Vec<u64> = model.parameters().iter().map(Tensor::id).collect();
    assert_eq!(before, after);
}

#[test]
fn zero_grad_clears_every_parameter() {
    let model = Sequential::new()
        .add(Linear::new(3, 2, true, &CPU).unwrap())
        .add(Tanh::new());
    model
        .forward(&Tensor::ones(&[1, 3], &CPU).unwrap())
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap();
    assert!(model.parameters().iter().all(|p| p.grad().is_some()));
    model.zero_grad();
    assert!(model.parameters().iter().all(|p| p.grad().is_none()));
}

// ------------------------------------------------------------------ gradcheck

/// A small MLP rebuilt from `args` = [w0, b0, w1, b1, ..]: Linear -> Tanh ->
/// Linear -> GELU (gradcheck passes perturbed copies, so the module is
/// rebuilt around them on every evaluation).
fn mlp(args: &[Tensor]) -> Sequential {
    Sequential::new()
        .add(Linear::from_parameters(
            args[0].clone(),
            Some(args[1].clone()),
        ))
        .add(Tanh::new())
        .add(Linear::from_parameters(
            args[2].clone(),
            Some(args[3].clone()),
        ))
        .add(GELU::new())
}

#[test]
fn gradcheck_small_mlp_with_cross_entropy() {
    let l0 = Linear::new(3, 4, true, &CPU).unwrap();
    let l1 = Linear::new(4, 3, true, &CPU).unwrap();
    let x = Tensor::randn(&[5, 3], &CPU)
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
    let target = Tensor::from_vec(vec![0i32, 2, 1, 2, -100], &[5], &CPU).unwrap();
    let inputs = vec![
        l0.weight.clone(),
        l0.bias.clone().unwrap(),
        l1.weight.clone(),
        l1.bias.clone().unwrap(),
        x,
    ];
    let options = CrossEntropyOptions {
        label_smoothing: 0.1,
        ..Default::default()
    };
    let f = |a: &[Tensor]| cross_entropy(&mlp(a).forward(&a[4])?, &target, options);
    let report = gradcheck(f, &inputs, GradcheckOptions::default()).unwrap();
    assert_eq!(report.checked, 12 + 4 + 12 + 3 + 15);
    report.check().unwrap();
}

#[test]
fn gradcheck_layer_norm_and_leaky_relu() {
    let x = Tensor::randn(&[2, 2, 3], &CPU)
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
    let w = Tensor::randn(&[2, 3], &CPU)
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
    let b = Tensor::randn(&[2, 3], &CPU)
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
    let f = |a: &[Tensor]| {
        let mut ln = LayerNorm::new(&[2, 3], 1e-5, true, &CPU)?;
        ln.weight = Some(a[1].clone());
        ln.bias = Some(a[2].clone());
        LeakyReLU::new(0.2).forward(&ln.forward(&a[0])?)
    };
    gradcheck(f, &[x, w, b], GradcheckOptions::default())
        .unwrap()
        .check()
        .unwrap();
}

#[test]
fn gradcheck_embedding() {
    let w = Tensor::randn(&[4, 3], &CPU)
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
    let idx = Tensor::from_vec(vec![3i32, 0, 3, 2], &[2, 2], &CPU).unwrap();
    let f = |a: &[Tensor]| {
        Embedding::from_weight(a[0].clone())?
            .forward(&idx)?
            .square()
    };
    gradcheck(f, &[w], GradcheckOptions::default())
        .unwrap()
        .check()
        .unwrap();
}

#[test]
fn gradcheck_fails_on_a_wrong_gradient() {
    // The checks above can fail: detaching half the graph breaks the gradient.
    let x = Tensor::randn(&[3, 2], &CPU)
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
    let f = |a: &[Tensor]| a[0].detach().mul(&a[0]);
    assert!(
        !gradcheck(f, &[x], GradcheckOptions::default())
            .unwrap()
            .passed()
    );
}

#[test]
fn modules_report_dtype_errors() {
    let l = Linear::new(2, 2, true, &CPU).unwrap();
    let xi = Tensor::from_vec(vec![1i32, 2], &[1, 2], &CPU).unwrap();
    assert!(matches!(
        l.forward(&xi),
        Err(Error::DTypeMismatch {
            got: DType::I32,
            ..
        })
    ));
}
