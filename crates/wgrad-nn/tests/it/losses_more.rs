//! `normalize`, `cosine_similarity`, `pairwise_distance`, `cdist` and the
//! margin, embedding and likelihood losses against PyTorch 2.15: the cases
//! in `losses_more/cases.rs` (outputs and input gradients computed by
//! PyTorch, written by `tests/gen_losses_more.py`) replayed on the CPU and,
//! when an adapter exists, on the GPU; every reduction; 0-d, empty, NaN,
//! broadcast and transposed (non-contiguous) inputs; gradients at the
//! hinges, ties and zero vectors. Then PyTorch's errors for bad inputs.

mod cases;

use wgrad_autograd::{Device, Error, Tensor};
use wgrad_nn::loss::{
    Reduction, cosine_embedding_loss, gaussian_nll_loss, hinge_embedding_loss, margin_ranking_loss,
    multilabel_soft_margin_loss, poisson_nll_loss, soft_margin_loss, triplet_margin_loss,
};
use wgrad_nn::{
    CosineSimilarity, PairwiseDistance, cdist, cosine_similarity, normalize, pairwise_distance,
};
use wgrad_test_support::{assert_close, gpu};

/// One input of a case: its data (of the shape PyTorch's leaf has), whether
/// it requires grad, and whether the function gets it transposed (a
/// non-contiguous view; `data` is then the transposed base, row-major).
pub struct In {
    pub data: &'static [f32],
    pub shape: &'static [usize],
    pub grad: bool,
    pub t: bool,
}

/// A function call PyTorch evaluated: `f` on the inputs gives `out`; the
/// output weighted 1, 1.5, 2, 1, ... and summed gives each input that
/// requires grad the gradient in `grads` (in input order).
pub struct Case {
    pub name: &'static str,
    pub f: fn(&[Tensor]) -> wgrad_autograd::Result<Tensor>,
    pub inputs: &'static [In],
    pub out_shape: &'static [usize],
    pub out: &'static [f32],
    pub grads: &'static [&'static [f32]],
}

fn run(case: &Case, d: &Device, tol: f32) {
    let name = case.name;
    let leaves: Vec<Tensor> = case
        .inputs
        .iter()
        .map(|i| {
            Tensor::from_vec(i.data.to_vec(), i.shape, d)
                .unwrap()
                .with_requires_grad(i.grad)
                .unwrap()
        })
        .collect();
    let args: Vec<Tensor> = leaves
        .iter()
        .zip(case.inputs)
        .map(|(x, i)| if i.t { x.t().unwrap() } else { x.clone() })
        .collect();
    let out = (case.f)(&args).unwrap_or_else(|e| panic!("{name} on {d}: {e}"));
    assert_eq!(out.shape(), case.out_shape, "{name} on {d}: shape");
    assert_close(
        &out.to_vec_f32().unwrap(),
        case.out,
        tol,
        &format!("{name} on {d}: out"),
    );
    if case.grads.is_empty() {
        return;
    }
    let weights: Vec<f32> = (0..out.numel())
        .map(|i| 1.0 + 0.5 * (i % 3) as f32)
        .collect();
    let w = Tensor::from_vec(weights, &out.shape(), d).unwrap();
    out.mul(&w).unwrap().sum_all().unwrap().backward().unwrap();
    let with_grad = leaves.iter().zip(case.inputs).filter(|(_, i)| i.grad);
    for (k, ((x, i), want)) in with_grad.zip(case.grads).enumerate() {
        let got = match x.grad() {
            Some(g) => g.to_vec_f32().unwrap(),
            None => vec![0.0; i.data.len()],
        };
        assert_close(
            &got,
            want,
            tol,
            &format!("{name} on {d}: grad of input {k}"),
        );
    }
}

#[test]
fn cases_match_pytorch_on_the_cpu() {
    for case in cases::CASES {
        run(case, &Device::Cpu, 2e-5);
    }
}

#[test]
fn cases_match_pytorch_on_the_gpu() {
    let Some(g) = gpu() else { return };
    for case in cases::CASES {
        run(case, &g, 2e-4);
    }
}

const CPU: Device = Device::Cpu;

fn t(values: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_vec(values.to_vec(), shape, &CPU).unwrap()
}

fn randn(shape: &[usize], seed: u64) -> Tensor {
    Tensor::randn_with(shape, 0.0, 1.0, seed, &CPU).unwrap()
}

fn message(r: wgrad_autograd::Result<Tensor>) -> String {
    match r {
        Ok(x) => panic!("expected an error, got a tensor of shape {:?}", x.shape()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn modules_match_the_functions_and_keep_pytorchs_defaults() {
    let (a, b) = (randn(&[3, 4], 1), randn(&[3, 4], 2));
    let cos = CosineSimilarity::default();
    assert_eq!((cos.dim, cos.eps), (1, 1e-8));
    assert_eq!(
        cos.forward(&a, &b).unwrap().to_vec_f32().unwrap(),
        cosine_similarity(&a, &b, 1, 1e-8)
            .unwrap()
            .to_vec_f32()
            .unwrap()
    );
    let along0 = CosineSimilarity::new(0, 1e-8).forward(&a, &b).unwrap();
    assert_eq!(along0.shape(), [4]);
    let pd = PairwiseDistance::default();
    assert_eq!((pd.norm, pd.eps, pd.keepdim), (2.0, 1e-6, false));
    assert_eq!(
        pd.forward(&a, &b).unwrap().to_vec_f32().unwrap(),
        pairwise_distance(&a, &b, 2.0, 1e-6, false)
            .unwrap()
            .to_vec_f32()
            .unwrap()
    );
    let kept = PairwiseDistance::new(1.0, 0.0, true)
        .forward(&a, &b)
        .unwrap();
    assert_eq!(kept.shape(), [3, 1]);
}

#[test]
fn integer_inputs_are_taken_as_floats_where_pytorch_promotes_them() {
    let a = Tensor::from_vec(vec![3i32, 4], &[1, 2], &CPU).unwrap();
    let b = Tensor::from_vec(vec![0i32, 0], &[1, 2], &CPU).unwrap();
    let d = pairwise_distance(&a, &b, 2.0, 0.0, false).unwrap();
    assert_eq!(d.to_vec_f32().unwrap(), [5.0]);
    let c = cosine_similarity(&a, &a, 1, 1e-8).unwrap();
    assert_close(&c.to_vec_f32().unwrap(), &[1.0], 1e-6, "cos of ints");
    // cdist refuses them, as PyTorch.
    let e = message(cdist(&a, &a, 2.0));
    assert!(
        e.contains("cdist only supports floating-point dtypes, X1 got: int32"),
        "{e}"
    );
}

#[test]
fn distance_errors_are_pytorchs() {
    let (a, b) = (randn(&[2, 3], 1), randn(&[2, 4], 2));
    let e = message(cosine_similarity(&a, &b, 1, 1e-8));
    assert!(
        e.contains("cosine_similarity") && e.contains("[2, 3]"),
        "{e}"
    );
    assert!(matches!(
        cosine_similarity(&a, &a, 2, 1e-8),
        Err(Error::BadAxis { axis: 2, .. })
    ));
    assert!(matches!(
        normalize(&a, 2.0, -3, 1e-12),
        Err(Error::BadAxis { axis: -3, .. })
    ));
    // The default dim 1 on a 1-D input: PyTorch's IndexError.
    assert!(matches!(
        normalize(&randn(&[3], 3), 2.0, 1, 1e-12),
        Err(Error::BadAxis { axis: 1, .. })
    ));
    assert!(matches!(
        normalize(&a, f32::NAN, 1, 1e-12),
        Err(Error::InvalidArgument { .. })
    ));
    let e = message(pairwise_distance(&a, &b, 2.0, 1e-6, false));
    assert!(e.contains("pairwise_distance"), "{e}");

    let e = message(cdist(&randn(&[3], 1), &a, 2.0));
    assert!(
        e.contains("cdist only supports at least 2D tensors, X1 got: 1D"),
        "{e}"
    );
    let e = message(cdist(&a, &randn(&[3], 1), 2.0));
    assert!(e.contains("X2 got: 1D"), "{e}");
    let e = message(cdist(&a, &b, 2.0));
    assert!(
        e.contains("X1 and X2 must have the same number of columns. X1: 3 X2: 4"),
        "{e}"
    );
    for p in [-1.0, f32::NAN] {
        let e = message(cdist(&a, &a, p));
        assert!(
            e.contains("cdist only supports non-negative p values"),
            "{e}"
        );
    }
    let e = message(cdist(&randn(&[2, 2, 3], 1), &randn(&[3, 2, 3], 2), 2.0));
    assert!(
        e.contains("cdist") && e.contains("[2]") && e.contains("[3]"),
        "{e}"
    );
}

#[test]
fn loss_errors_are_pytorchs() {
    let (x, y) = (randn(&[3], 1), randn(&[3], 2));
    let row = randn(&[1, 3], 3);
    let e = message(margin_ranking_loss(&x, &y, &row, 0.0, Reduction::Mean));
    assert!(
        e.contains("All input tensors should have same dimension but got sizes: input1: [3], input2: [3], target: [1, 3]"),
        "{e}"
    );
    let e = message(margin_ranking_loss(&x, &y, &x, 0.0, Reduction::BatchMean));
    assert!(
        e.contains("batchmean is not a valid value for reduction"),
        "{e}"
    );

    let e = message(hinge_embedding_loss(
        &x,
        &randn(&[2], 4),
        1.0,
        Reduction::Mean,
    ));
    assert!(e.contains("hinge_embedding_loss"), "{e}");

    // soft_margin_loss: the target may broadcast to the input, not enlarge it.
    let e = message(soft_margin_loss(
        &randn(&[3, 1], 1),
        &randn(&[2], 2),
        Reduction::None,
    ));
    assert!(
        e.contains("output with shape [3, 1] doesn't match the broadcast shape [3, 2]"),
        "{e}"
    );
    let target = randn(&[3], 5).with_requires_grad(true).unwrap();
    let e = message(soft_margin_loss(&x, &target, Reduction::Mean));
    assert!(
        e.contains("not differentiable with respect to argument 'target'"),
        "{e}"
    );
    {
        let _guard = wgrad_autograd::no_grad();
        assert!(soft_margin_loss(&x, &target, Reduction::Mean).is_ok());
    }

    let (m, n) = (randn(&[2, 3], 1), randn(&[2, 3], 2));
    let e = message(cosine_embedding_loss(
        &m,
        &n,
        &t(&[1.0], &[1, 1]),
        0.0,
        Reduction::Mean,
    ));
    assert!(
        e.contains("0D or 1D target tensor expected, multi-target not supported"),
        "{e}"
    );
    let e = message(cosine_embedding_loss(
        &x,
        &y,
        &t(&[1.0], &[1]),
        0.0,
        Reduction::Mean,
    ));
    assert!(
        e.contains(
            "1D target tensor expects 2D input tensors, but found inputs with sizes [3] and [3]."
        ),
        "{e}"
    );
    let e = message(cosine_embedding_loss(
        &m,
        &y,
        &t(&[1.0, 1.0], &[2]),
        0.0,
        Reduction::Mean,
    ));
    assert!(e.contains("sizes [2, 3] and [3]."), "{e}");
    let e = message(cosine_embedding_loss(
        &m,
        &n,
        &t(&[1.0], &[]),
        0.0,
        Reduction::Mean,
    ));
    assert!(
        e.contains("0D target tensor expects 1D input tensors"),
        "{e}"
    );
    let e = message(cosine_embedding_loss(
        &m,
        &n,
        &t(&[1.0; 3], &[3]),
        0.0,
        Reduction::Mean,
    ));
    assert!(e.contains("cosine_embedding_loss"), "{e}");

    let trip = |a: &Tensor, p: &Tensor, n: &Tensor, margin: f32| {
        triplet_margin_loss(a, p, n, margin, 2.0, 1e-6, false, Reduction::Mean)
    };
    let e = message(trip(&m, &n, &x, 1.0));
    assert!(
        e.contains(
            "same number of dimensions, but got: anchor 2D, positive 2D, and negative 1D inputs"
        ),
        "{e}"
    );
    for margin in [0.0, -1.0] {
        let e = message(trip(&m, &n, &n, margin));
        assert!(e.contains("margin must be greater than 0, got"), "{e}");
    }
    let e = message(trip(&m, &randn(&[2, 4], 3), &n, 1.0));
    assert!(e.contains("triplet_margin_loss"), "{e}");

    let e = message(poisson_nll_loss(
        &x,
        &randn(&[2], 1),
        true,
        false,
        1e-8,
        Reduction::Mean,
    ));
    assert!(e.contains("poisson_nll_loss"), "{e}");

    let e = message(multilabel_soft_margin_loss(
        &t(&[1.0], &[]),
        &t(&[1.0], &[]),
        None,
        Reduction::None,
    ));
    assert!(e.contains("multilabel_soft_margin_loss"), "{e}");
    let w = randn(&[4], 1);
    let e = message(multilabel_soft_margin_loss(
        &m,
        &n,
        Some(&w),
        Reduction::Mean,
    ));
    assert!(e.contains("[2, 3]") && e.contains("[4]"), "{e}");
}

#[test]
fn gaussian_nll_loss_checks_var_as_pytorch() {
    let (x, y) = (randn(&[4, 3], 1), randn(&[4, 3], 2));
    let gnll = |v: &Tensor| gaussian_nll_loss(&x, &y, v, false, 1e-6, Reduction::None);
    let e = message(gaussian_nll_loss(
        &x,
        &y,
        -1.0,
        false,
        1e-6,
        Reduction::Mean,
    ));
    assert!(e.contains("var has negative entry/entries"), "{e}");
    let e = message(gnll(&t(&[1.0, -1.0, 1.0, 1.0], &[4])));
    assert!(e.contains("var has negative entry/entries"), "{e}");
    // NaN is not negative (PyTorch's `var < 0` test): a NaN loss, no error.
    let nan_var = gnll(&t(&[f32::NAN, 1.0, 1.0, 1.0], &[4])).unwrap();
    assert!(
        nan_var.to_vec_f32().unwrap()[..3]
            .iter()
            .all(|v| v.is_nan())
    );
    for bad in [&[2][..], &[4, 3, 1], &[2, 3], &[]] {
        let v = Tensor::ones(bad, &CPU).unwrap();
        let e = message(gnll(&v));
        assert!(e.contains("var is of incorrect size"), "{bad:?}: {e}");
    }
    for good in [&[4][..], &[4, 1], &[1, 3], &[4, 3]] {
        let v = Tensor::ones(good, &CPU).unwrap();
        assert_eq!(gnll(&v).unwrap().shape(), [4, 3], "{good:?}");
    }
    // A 1-D input takes a 0-d var (its shape without the last dim)...
    let v0 = Tensor::scalar(2.0, &CPU).unwrap();
    let one_d = gaussian_nll_loss(
        &randn(&[3], 1),
        &randn(&[3], 2),
        &v0,
        false,
        1e-6,
        Reduction::None,
    );
    assert_eq!(one_d.unwrap().shape(), [3]);
    // ... and a 0-d input does not take a [1] var.
    let e = message(gaussian_nll_loss(
        &v0,
        &v0,
        &t(&[1.0], &[1]),
        false,
        1e-6,
        Reduction::None,
    ));
    assert!(e.contains("var is of incorrect size"), "{e}");
    let e = message(gaussian_nll_loss(
        &x,
        &y,
        1.0,
        false,
        1e-6,
        Reduction::BatchMean,
    ));
    assert!(e.contains("batchmean"), "{e}");
}

#[test]
fn gaussian_nll_loss_negative_var_is_an_error_on_the_gpu() {
    let Some(g) = gpu() else { return };
    let x = Tensor::zeros(&[2, 2], &g).unwrap();
    let v = Tensor::from_vec(vec![1.0f32, -0.5], &[2], &g).unwrap();
    let e = message(gaussian_nll_loss(&x, &x, &v, false, 1e-6, Reduction::Mean));
    assert!(e.contains("var has negative entry/entries"), "{e}");
}

/// The loss functions stay on the tensors' device: a GPU loss and its
/// gradients come back from the GPU (no host values in the graph).
#[test]
fn gpu_results_stay_on_the_gpu() {
    let Some(g) = gpu() else { return };
    let a = Tensor::randn_with(&[30, 4], 0.0, 1.0, 1, &g)
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
    let b = Tensor::randn_with(&[3, 4], 0.0, 1.0, 2, &g).unwrap();
    let d = cdist(&a, &b, 2.0).unwrap();
    let n = normalize(&a, 2.0, 1, 1e-12).unwrap();
    let v = Tensor::ones(&[30], &g).unwrap();
    let loss = gaussian_nll_loss(&n, &a, &v, true, 1e-6, Reduction::Mean).unwrap();
    for x in [&d, &n, &loss] {
        assert!(x.device().is_gpu());
    }
    loss.add(&d.sum_all().unwrap()).unwrap().backward().unwrap();
    assert!(a.grad().unwrap().device().is_gpu());
}
