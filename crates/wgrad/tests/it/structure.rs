//! The structure and indexing ops of a GPT (masked_fill, tril/triu, stack,
//! split, chunk, unbind, select, slice, repeat, flip, roll, index_add,
//! scatter_add, scatter, index_put, masked_select): values, finite-difference
//! gradchecks, GPU outputs and gradients equal to the CPU's, no readbacks
//! (but masked_select's one), bad input, 0-d/empty/non-contiguous inputs
//! and non-F32 dtypes. PyTorch ground truth: `fixtures_structure.rs`.

use crate::common::{gpu, max_rel_err};
use wgrad::gradcheck::{GradcheckOptions, gradcheck};
use wgrad::{DType, Device, Error, Result, Tensor};

fn f(data: &[f32], shape: &[usize]) -> Tensor {
    Tensor::from_vec(data.to_vec(), shape, &Device::Cpu).unwrap()
}

fn range(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    f(&(0..n).map(|v| v as f32).collect::<Vec<_>>(), shape)
}

/// An I32 tensor on `like`'s device.
fn ix(values: &[i32], shape: &[usize], like: &Tensor) -> Tensor {
    Tensor::from_vec(values.to_vec(), shape, &like.device()).unwrap()
}

/// A U32 mask on `like`'s device.
fn mask(values: &[u32], shape: &[usize], like: &Tensor) -> Tensor {
    Tensor::from_vec(values.to_vec(), shape, &like.device()).unwrap()
}

fn vals(t: &Tensor) -> Vec<f32> {
    t.to_vec_f32().unwrap()
}

fn shapes(parts: &[Tensor]) -> Vec<Vec<usize>> {
    parts.iter().map(|p| p.shape().to_vec()).collect()
}

/// Flattens and joins parts (to check multi-output ops as one tensor).
fn joined(parts: &[Tensor]) -> Result<Tensor> {
    let flat = parts
        .iter()
        .map(|p| p.reshape(&[-1]))
        .collect::<Result<Vec<_>>>()?;
    Tensor::cat(&flat.iter().collect::<Vec<_>>(), 0)
}

type Case = (
    &'static str,
    Vec<Vec<usize>>,
    fn(&[Tensor]) -> Result<Tensor>,
);

/// Every differentiable op, including negative dims and non-contiguous
/// (transposed) inputs. Index tensors are made on the input's device.
fn cases() -> Vec<Case> {
    vec![
        ("masked_fill broadcast mask", vec![vec![3, 4]], |x| {
            let m = mask(&[1, 0, 0, 1], &[4], &x[0]);
            x[0].masked_fill(&m, 5.0)
        }),
        ("masked_fill transposed", vec![vec![4, 3]], |x| {
            let m = mask(&[1, 0, 1, 0, 0, 1, 1, 1, 0, 0, 0, 1], &[3, 4], &x[0]);
            x[0].t()?.masked_fill(&m, -1e9)
        }),
        ("tril batched", vec![vec![2, 3, 4]], |x| x[0].tril(0)),
        ("tril negative diagonal", vec![vec![4, 3]], |x| {
            x[0].tril(-1)
        }),
        ("triu positive diagonal", vec![vec![2, 4, 5]], |x| {
            x[0].triu(1)
        }),
        ("triu transposed", vec![vec![5, 4]], |x| x[0].t()?.triu(-2)),
        ("stack", vec![vec![2, 3], vec![2, 3], vec![2, 3]], |x| {
            Tensor::stack(&[&x[0], &x[1], &x[2]], -1)
        }),
        (
            "stack dim 0 transposed",
            vec![vec![3, 2], vec![2, 3]],
            |x| Tensor::stack(&[&x[0].t()?, &x[1]], 0),
        ),
        ("split", vec![vec![5, 3]], |x| joined(&x[0].split(2, 0)?)),
        ("split_with_sizes", vec![vec![2, 6]], |x| {
            joined(&x[0].split_with_sizes(&[1, 0, 3, 2], -1)?)
        }),
        ("chunk", vec![vec![3, 5]], |x| joined(&x[0].chunk(4, 1)?)),
        ("unbind", vec![vec![3, 2]], |x| {
            let mut parts = x[0].unbind(0)?;
            parts.reverse();
            Tensor::stack(&parts.iter().collect::<Vec<_>>(), 1)
        }),
        ("select negative", vec![vec![2, 3, 4]], |x| {
            x[0].select(-2, -1)
        }),
        ("slice step", vec![vec![3, 10]], |x| {
            x[0].slice(1, Some(1), None, 3)
        }),
        ("slice negative bounds transposed", vec![vec![7, 2]], |x| {
            x[0].t()?.slice(-1, Some(-6), Some(-1), 2)?.mul_scalar(2.0)
        }),
        ("repeat extra dims", vec![vec![2, 3]], |x| {
            x[0].repeat(&[2, 1, 3])
        }),
        ("repeat transposed", vec![vec![3, 2]], |x| {
            x[0].t()?.repeat(&[2, 2])
        }),
        ("flip", vec![vec![2, 3, 4]], |x| x[0].flip(&[0, -1])),
        ("roll", vec![vec![3, 4]], |x| x[0].roll(&[1, -5], &[0, 1])),
        ("roll flattened", vec![vec![3, 4]], |x| {
            x[0].t()?.roll(&[5], &[])
        }),
        ("index_add repeats", vec![vec![3, 4], vec![3, 5]], |x| {
            let i = ix(&[3, 0, 3, 1, 2], &[5], &x[0]);
            x[0].index_add(1, &i, &x[1])
        }),
        (
            "scatter_add larger src",
            vec![vec![3, 4], vec![2, 5]],
            |x| {
                let i = ix(&[2, 0, 2, 1, 1, 0], &[2, 3], &x[0]);
                x[0].scatter_add(0, &i, &x[1])
            },
        ),
        ("scatter", vec![vec![3, 4], vec![3, 2]], |x| {
            let i = ix(&[3, 0, 1, 2, 0, 1], &[3, 2], &x[0]);
            x[0].scatter(-1, &i, &x[1])
        }),
        ("index_put", vec![vec![5, 3], vec![3, 3]], |x| {
            let i = ix(&[-1, 0, 2], &[3], &x[0]);
            x[0].index_put(&i, &x[1], false)
        }),
        (
            "index_put accumulate broadcast",
            vec![vec![4, 3], vec![1, 3]],
            |x| {
                let i = ix(&[1, -3, 3, 0], &[4], &x[0]);
                x[0].index_put(&i, &x[1], true)
            },
        ),
        ("masked_select", vec![vec![3, 4]], |x| {
            let m = mask(&[1, 0, 0, 1, 1, 1, 0, 0, 0, 1, 0, 1], &[3, 4], &x[0]);
            x[0].masked_select(&m)
        }),
        ("masked_select broadcast", vec![vec![4]], |x| {
            let m = mask(&[1, 0, 1, 1, 0, 0, 1, 0], &[2, 4], &x[0]);
            x[0].masked_select(&m)
        }),
    ]
}

/// Inputs away from 0 (seeded per case and input).
fn inputs(shapes: &[Vec<usize>], seed: u64, device: &Device) -> Vec<Tensor> {
    shapes
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let host = Tensor::rand_with(s, -1.0, 1.0, seed * 10 + i as u64, &Device::Cpu)
                .unwrap()
                .to_vec_f32()
                .unwrap();
            Tensor::from_vec(host, s, device)
                .unwrap()
                .with_requires_grad(true)
                .unwrap()
        })
        .collect()
}

#[test]
fn gradcheck_every_structure_op_on_cpu() {
    for (i, (name, shapes, op)) in cases().into_iter().enumerate() {
        let xs = inputs(&shapes, i as u64, &Device::Cpu);
        let report = gradcheck(op, &xs, GradcheckOptions::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        report.check().unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

/// Output and every input gradient of `op` (upstream: fixed weights).
fn run(
    op: fn(&[Tensor]) -> Result<Tensor>,
    xs: &[Tensor],
) -> (Vec<usize>, Vec<f32>, Vec<Vec<f32>>) {
    let out = op(xs).unwrap();
    let n = out.numel();
    let w: Vec<f32> = (0..n).map(|i| 0.5 + (i % 7) as f32 * 0.25).collect();
    let upstream = Tensor::from_vec(w, &out.shape(), &out.device()).unwrap();
    out.backward_with(&upstream).unwrap();
    let grads = xs
        .iter()
        .map(|x| x.grad().map(|g| vals(&g)).unwrap_or_default())
        .collect();
    (out.shape().to_vec(), vals(&out), grads)
}

#[test]
fn structure_ops_on_gpu_match_cpu() {
    let Some(device) = gpu() else { return };
    for (i, (name, shapes, op)) in cases().into_iter().enumerate() {
        let cpu = run(op, &inputs(&shapes, i as u64, &Device::Cpu));
        let gpu = run(op, &inputs(&shapes, i as u64, &device));
        assert_eq!(cpu.0, gpu.0, "{name}: shape");
        assert!(
            max_rel_err(&gpu.1, &cpu.1) <= 1e-6,
            "{name}: output {:?} vs {:?}",
            gpu.1,
            cpu.1
        );
        for (k, (g, c)) in gpu.2.iter().zip(&cpu.2).enumerate() {
            assert!(max_rel_err(g, c) <= 1e-5, "{name}: grad{k} {g:?} vs {c:?}");
        }
    }
}

#[test]
fn structure_ops_read_nothing_back_on_gpu() {
    // A device of its own: other tests read back from the shared one meanwhile.
    let Some(g) = wgrad_test_support::own_gpu() else {
        return;
    };
    let device = Device::Gpu(g.clone());
    for (i, (name, shapes, op)) in cases().into_iter().enumerate() {
        let xs = inputs(&shapes, i as u64, &device);
        let before = g.stats();
        let out = op(&xs).unwrap();
        let upstream = Tensor::full(&out.shape(), 1.0, DType::F32, &device).unwrap();
        out.backward_with(&upstream).unwrap();
        let d = g.stats().since(&before);
        let allowed = u64::from(name.starts_with("masked_select"));
        assert_eq!(d.readbacks, allowed, "{name}: {d:?}");
    }
}

#[test]
fn values_match_pytorch_by_hand() {
    let x = range(&[3, 4]);
    assert_eq!(
        vals(&x.tril(0).unwrap()),
        [0., 0., 0., 0., 4., 5., 0., 0., 8., 9., 10., 0.]
    );
    assert_eq!(
        vals(&x.triu(-1).unwrap()),
        [0., 1., 2., 3., 4., 5., 6., 7., 0., 9., 10., 11.]
    );
    assert_eq!(vals(&x.tril(-7).unwrap()), [0.0; 12]);
    assert_eq!(vals(&x.triu(i64::MIN).unwrap()), vals(&x));
    let m = x.gt_scalar(5.5).unwrap();
    assert_eq!(
        vals(&x.masked_fill(&m, -1.0).unwrap()),
        [0., 1., 2., 3., 4., 5., -1., -1., -1., -1., -1., -1.]
    );
    assert_eq!(
        vals(&x.masked_select(&m).unwrap()),
        [6., 7., 8., 9., 10., 11.]
    );
    assert_eq!(vals(&x.select(1, -1).unwrap()), [3., 7., 11.]);
    let s = x.slice(1, Some(-3), None, 2).unwrap();
    assert_eq!(
        (s.shape().to_vec(), vals(&s)),
        (vec![3, 2], vec![1., 3., 5., 7., 9., 11.])
    );
    assert_eq!(
        vals(&x.slice(0, Some(-100), Some(100), 2).unwrap()),
        [0., 1., 2., 3., 8., 9., 10., 11.]
    );
    assert_eq!(x.slice(0, Some(2), Some(1), 1).unwrap().shape(), [0, 4]);
    assert_eq!(vals(&x.flip(&[0, 1]).unwrap())[..3], [11., 10., 9.]);
    assert_eq!(vals(&x.roll(&[1], &[1]).unwrap())[..4], [3., 0., 1., 2.]);
    assert_eq!(vals(&x.roll(&[-13], &[]).unwrap())[..3], [1., 2., 3.]);
    let r = range(&[3]).repeat(&[2, 2]).unwrap();
    assert_eq!(
        (r.shape().to_vec(), vals(&r)),
        (
            vec![2, 6],
            vec![0., 1., 2., 0., 1., 2., 0., 1., 2., 0., 1., 2.]
        )
    );
    assert_eq!(
        shapes(&range(&[5]).chunk(4, 0).unwrap()),
        [vec![2], vec![2], vec![1]]
    );
    assert_eq!(
        shapes(&range(&[6]).chunk(4, 0).unwrap()),
        [vec![2], vec![2], vec![2]]
    );
    assert_eq!(shapes(&x.split(3, -1).unwrap()), [vec![3, 3], vec![3, 1]]);
    let st = Tensor::stack(&[&range(&[2]), &range(&[2])], 1).unwrap();
    assert_eq!(
        (st.shape().to_vec(), vals(&st)),
        (vec![2, 2], vec![0., 0., 1., 1.])
    );
    let i = ix(&[1, 1, 0], &[3], &x);
    let base = Tensor::zeros(&[2, 2], &Device::Cpu).unwrap();
    let src = range(&[3, 2]);
    assert_eq!(
        vals(&base.index_add(0, &i, &src).unwrap()),
        [4., 5., 2., 4.]
    );
    assert_eq!(
        vals(
            &base
                .index_put(&ix(&[-1], &[1], &x), &f(&[7.0], &[1]), false)
                .unwrap()
        ),
        [0., 0., 7., 7.]
    );
    // Duplicate targets of scatter get the mean of what was written there.
    let si = ix(&[1, 1], &[1, 2], &x);
    assert_eq!(
        vals(&base.scatter(1, &si, &f(&[2., 4.], &[1, 2])).unwrap()),
        [0., 3., 0., 0.]
    );
    assert_eq!(
        vals(&base.scatter_add(1, &si, &f(&[2., 4.], &[1, 2])).unwrap()),
        [0., 6., 0., 0.]
    );
}

#[test]
fn select_and_slice_are_views_and_split_parts_too() {
    let x = range(&[4, 6]);
    let parts = x.split(4, 1).unwrap();
    let whole = x.storage();
    for view in [
        x.select(0, 2).unwrap(),
        x.slice(1, None, None, 4).unwrap(),
        parts[1].clone(),
        x.unbind(1).unwrap()[5].clone(),
    ] {
        let (Storage::Cpu(a), Storage::Cpu(b)) = (view.storage(), whole.clone()) else {
            panic!("cpu")
        };
        assert!(a.shares_storage(&b));
    }
    assert_eq!(
        vals(&x.slice(1, None, None, 4).unwrap()),
        [0., 4., 6., 10., 12., 16., 18., 22.]
    );
}

use wgrad::Storage;

#[test]
fn zero_d_empty_and_other_dtypes() {
    let s = Tensor::scalar(3.0, &Device::Cpu).unwrap();
    assert_eq!(vals(&s.flip(&[0]).unwrap()), [3.0]);
    assert_eq!(s.roll(&[2], &[]).unwrap().shape(), [0usize; 0]);
    assert_eq!(s.repeat(&[2, 3]).unwrap().shape(), [2, 3]);
    assert_eq!(s.repeat(&[]).unwrap().shape(), [0usize; 0]);
    let st = Tensor::stack(&[&s, &s], 0).unwrap();
    assert_eq!(vals(&st), [3.0, 3.0]);
    let m0 = mask(&[1], &[], &s);
    assert_eq!(vals(&s.masked_fill(&m0, 1.5).unwrap()), [1.5]);
    assert_eq!(vals(&s.masked_select(&m0).unwrap()), [3.0]);
    assert!(matches!(s.select(0, 0), Err(Error::BadAxis { .. })));
    assert!(s.split(1, 0).is_err());
    assert!(s.roll(&[1], &[0]).is_err());

    let e = Tensor::zeros(&[0, 3], &Device::Cpu).unwrap();
    assert_eq!(e.tril(0).unwrap().shape(), [0, 3]);
    assert_eq!(shapes(&e.split(2, 0).unwrap()), [vec![0, 3]]);
    assert_eq!(shapes(&e.split(0, 0).unwrap()), [vec![0, 3]]);
    assert_eq!(shapes(&e.chunk(3, 0).unwrap()), vec![vec![0, 3]; 3]);
    assert!(e.unbind(0).unwrap().is_empty());
    assert_eq!(e.repeat(&[2, 2]).unwrap().shape(), [0, 6]);
    assert_eq!(range(&[2, 3]).repeat(&[0, 2]).unwrap().shape(), [0, 6]);
    assert_eq!(e.flip(&[0, 1]).unwrap().shape(), [0, 3]);
    assert_eq!(e.roll(&[1], &[]).unwrap().shape(), [0, 3]);
    assert_eq!(
        e.masked_select(&mask(&[], &[0, 3], &e)).unwrap().shape(),
        [0]
    );
    let x = range(&[2, 2]);
    assert_eq!(
        x.masked_select(&mask(&[0; 4], &[2, 2], &x))
            .unwrap()
            .shape(),
        [0]
    );

    // Integer tensors: masks and triangles of any dtype.
    let i = Tensor::from_vec(vec![1i32, -2, 3, 4], &[2, 2], &Device::Cpu).unwrap();
    let m = mask(&[0, 1, 2, 0], &[2, 2], &i);
    assert_eq!(
        i.masked_fill(&m, 9.0).unwrap().to_vec::<i32>().unwrap(),
        [1, 9, 9, 4]
    );
    assert_eq!(i.tril(0).unwrap().to_vec::<i32>().unwrap(), [1, 0, 3, 4]);
    assert_eq!(
        i.masked_select(&m).unwrap().to_vec::<i32>().unwrap(),
        [-2, 3]
    );
    let u = Tensor::full(&[2, 3], 1.0, DType::U32, &Device::Cpu).unwrap();
    assert_eq!(
        u.triu(1).unwrap().to_vec::<u32>().unwrap(),
        [0, 1, 1, 0, 0, 1]
    );
    // An I32 mask counts nonzero as true.
    let im = Tensor::from_vec(vec![0i32, 5, 0, -1], &[2, 2], &Device::Cpu).unwrap();
    assert_eq!(vals(&x.masked_fill(&im, 7.0).unwrap()), [0., 7., 2., 7.]);
}

#[test]
fn zero_d_empty_and_other_dtypes_on_gpu() {
    let Some(device) = gpu() else { return };
    let i = Tensor::from_vec(vec![1i32, -2, 3, 4], &[2, 2], &device).unwrap();
    let m = mask(&[0, 1, 2, 0], &[2, 2], &i);
    assert_eq!(
        i.masked_fill(&m, 9.0).unwrap().to_vec::<i32>().unwrap(),
        [1, 9, 9, 4]
    );
    assert_eq!(i.tril(0).unwrap().to_vec::<i32>().unwrap(), [1, 0, 3, 4]);
    assert_eq!(
        i.masked_select(&m).unwrap().to_vec::<i32>().unwrap(),
        [-2, 3]
    );
    let e = Tensor::zeros(&[2, 0, 3], &device).unwrap();
    assert_eq!(e.triu(0).unwrap().shape(), [2, 0, 3]);
    assert_eq!(
        e.masked_select(&mask(&[], &[0, 3], &e)).unwrap().shape(),
        [0]
    );
    let s = Tensor::scalar(3.0, &device).unwrap();
    assert_eq!(vals(&s.repeat(&[2]).unwrap()), [3.0, 3.0]);
    // A masked_select over many scan blocks (the cumsum carries).
    let n = 70_000;
    let x = Tensor::arange(0.0, n as f64, 1.0, DType::F32, &device).unwrap();
    let keep = x
        .unary(wgrad::UnaryOp::Sin)
        .unwrap()
        .gt_scalar(0.5)
        .unwrap();
    let got = vals(&x.masked_select(&keep).unwrap());
    let want: Vec<f32> = (0..n).map(|v| v as f32).filter(|v| v.sin() > 0.5).collect();
    assert_eq!(got.len(), want.len());
    assert_eq!(got, want);
}

#[test]
fn large_masked_select_on_cpu() {
    let n = 70_000;
    let x = Tensor::arange(0.0, n as f64, 1.0, DType::F32, &Device::Cpu).unwrap();
    let keep = x
        .unary(wgrad::UnaryOp::Sin)
        .unwrap()
        .gt_scalar(0.5)
        .unwrap();
    let got = vals(&x.masked_select(&keep).unwrap());
    let want: Vec<f32> = (0..n).map(|v| v as f32).filter(|v| v.sin() > 0.5).collect();
    assert_eq!(got, want);
}

#[track_caller]
fn message(r: Result<impl Sized>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_input_is_an_error_naming_op_and_sizes() {
    let x = range(&[5, 3]);
    let cases: Vec<(String, &[&str])> = vec![
        (
            message(x.split_with_sizes(&[2, 2], 0)),
            &["split_with_sizes", "[2, 2]", "5", "[5, 3]"],
        ),
        (message(x.split(0, 0)), &["split", "split_size", "[5, 3]"]),
        (message(x.chunk(0, 0)), &["chunk", "0"]),
        (
            message(Tensor::stack(&[&x, &range(&[5, 4])], 0)),
            &["stack", "[5, 3]", "[5, 4]", "entry 1"],
        ),
        (message(Tensor::stack(&[], 0)), &["stack", "non-empty"]),
        (message(x.select(0, 5)), &["select", "5", "size 5"]),
        (message(x.select(1, -4)), &["select", "-4", "size 3"]),
        (message(x.select(2, 0)), &["select", "axis 2", "rank 2"]),
        (message(x.slice(1, None, None, 0)), &["slice", "step", "0"]),
        (
            message(range(&[3]).tril(0)),
            &["tril", "2 dimensions", "[3]"],
        ),
        (message(range(&[3]).triu(0)), &["triu", "[3]"]),
        (message(x.repeat(&[2])), &["repeat", "[2]", "[5, 3]"]),
        (message(x.flip(&[0, -2])), &["flip", "more than once"]),
        (message(x.roll(&[1, 2], &[0])), &["roll", "[1, 2]", "[0]"]),
        (message(x.roll(&[1, 2], &[])), &["roll", "[1, 2]"]),
        (
            message(x.masked_fill(&x, 0.0)),
            &["masked_fill", "uint32", "float32"],
        ),
        (
            message(x.masked_fill(&mask(&[1; 4], &[4], &x), 0.0)),
            &["masked_fill", "[5, 3]", "[4]"],
        ),
        (
            message(x.masked_select(&mask(&[1; 4], &[4], &x))),
            &["masked_select", "[5, 3]", "[4]"],
        ),
        (
            message(x.index_put(&ix(&[0], &[1, 1], &x), &range(&[1, 3]), false)),
            &["index_put", "1-D", "[1, 1]"],
        ),
        (
            message(x.index_put(&ix(&[0, 1], &[2], &x), &range(&[3, 3]), false)),
            &["index_put", "[3, 3]", "[2, 3]"],
        ),
        (
            message(x.index_put(&ix(&[0, 7], &[2], &x), &range(&[2, 3]), true)),
            &["index_add", "7", "5"],
        ),
        (
            message(x.index_add(0, &ix(&[0, 1], &[2], &x), &range(&[3, 3]))),
            &["index_add", "[2]", "[3, 3]"],
        ),
        (
            message(x.index_add(0, &ix(&[0, 9], &[2], &x), &range(&[2, 3]))),
            &["index_add", "9", "5"],
        ),
        (
            message(x.scatter(1, &ix(&[0; 6], &[6, 1], &x), &range(&[6, 1]))),
            &["scatter", "[6, 1]", "[5, 3]"],
        ),
        (
            message(x.scatter_add(1, &ix(&[0; 6], &[2, 3], &x), &range(&[2, 2]))),
            &["scatter_add", "[2, 3]", "[2, 2]"],
        ),
        (
            message(x.scatter(1, &ix(&[0, 3], &[1, 2], &x), &range(&[1, 2]))),
            &["scatter_add", "3", "3"],
        ),
    ];
    for (msg, words) in cases {
        for w in words {
            assert!(msg.contains(w), "{msg:?} should mention {w:?}");
        }
    }
}

#[test]
fn out_of_range_indices_fault_on_gpu() {
    // A device of its own: a fault on the shared one would surface in
    // whichever test reads back next.
    let Some(g) = wgrad_test_support::own_gpu() else {
        return;
    };
    let device = Device::Gpu(g);
    let x = Tensor::zeros(&[4, 2], &device).unwrap();
    let src = Tensor::ones(&[2, 2], &device).unwrap();
    let out = x.index_add(0, &ix(&[1, 4], &[2], &x), &src).unwrap();
    assert!(matches!(
        out.to_vec_f32(),
        Err(Error::IndexOutOfRange { .. })
    ));
    let out = x
        .index_put(&ix(&[-5], &[1], &x), &src.narrow(0, 0, 1).unwrap(), false)
        .unwrap();
    assert!(matches!(
        out.to_vec_f32(),
        Err(Error::IndexOutOfRange { .. })
    ));
}

/// The causal mask of a GPT: `tril` of ones, `masked_fill(-inf)` above the
/// diagonal, softmax; masked weights are exactly 0 and the gradient has no
/// NaN, on both devices.
#[test]
fn causal_attention_mask() {
    let mut devices = vec![Device::Cpu];
    devices.extend(gpu());
    for device in devices {
        let t = 4;
        let scores = Tensor::randn_with(&[2, t, t], 0.0, 1.0, 7, &device)
            .unwrap()
            .with_requires_grad(true)
            .unwrap();
        let above = Tensor::ones(&[t, t], &device)
            .unwrap()
            .tril(0)
            .unwrap()
            .eq_scalar(0.0)
            .unwrap();
        let att = scores
            .masked_fill(&above, f64::NEG_INFINITY)
            .unwrap()
            .softmax(-1)
            .unwrap();
        let w = vals(&att);
        for b in 0..2 {
            for i in 0..t {
                let row = &w[(b * t + i) * t..(b * t + i + 1) * t];
                assert!(row[i + 1..].iter().all(|&v| v == 0.0), "{device}: {row:?}");
                assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-6);
            }
        }
        att.mul(&att)
            .unwrap()
            .sum_all()
            .unwrap()
            .backward()
            .unwrap();
        let g = vals(&scores.grad().unwrap());
        assert!(g.iter().all(|v| v.is_finite()), "{device}: {g:?}");
        // Nothing flows into the masked scores.
        assert_eq!(g[1], 0.0);
    }
}

/// PyTorch's legacy rules: `torch.cat` skips 1-D empty tensors (an
/// accumulator started as `torch.tensor([])`) whatever the others' rank,
/// and `t()` of a 0-d or 1-D tensor is the tensor itself.
#[test]
fn cat_skips_legacy_empty_tensors_and_t_keeps_vectors() {
    let mut devices = vec![Device::Cpu];
    devices.extend(crate::common::gpu());
    for d in devices {
        let acc = Tensor::from_vec(Vec::<f32>::new(), &[0], &d).unwrap();
        let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2], &d).unwrap();
        for axis in [0, 1, -1] {
            let y = Tensor::cat(&[&acc, &x, &acc], axis).unwrap();
            assert_eq!(y.shape().to_vec(), vec![2, 2], "{d:?} axis {axis}");
            assert_eq!(y.to_vec_f32().unwrap(), [1.0, 2.0, 3.0, 4.0]);
        }
        let both = Tensor::cat(&[&acc, &acc], 0).unwrap();
        assert_eq!(both.shape().to_vec(), vec![0]);
        // Other empty shapes still have to match.
        let e = Tensor::from_vec(Vec::<f32>::new(), &[0, 3], &d).unwrap();
        assert!(Tensor::cat(&[&e, &x], 0).is_err());
        let v = Tensor::from_vec(vec![1.0f32, 2.0], &[2], &d).unwrap();
        assert_eq!(v.t().unwrap().shape().to_vec(), vec![2]);
        let s = Tensor::from_vec(vec![5.0f32], &[], &d).unwrap();
        assert_eq!(s.t().unwrap().to_vec_f32().unwrap(), [5.0]);
        assert_eq!(x.t().unwrap().to_vec_f32().unwrap(), [1.0, 3.0, 2.0, 4.0]);
    }
}

/// Out of place, `masked_fill` broadcasts the input with the mask, as
/// PyTorch's does: a [3] input and a [2, 3] mask give [2, 3].
#[test]
fn masked_fill_broadcasts_the_input_with_the_mask() {
    let mut devices = vec![Device::Cpu];
    devices.extend(gpu());
    for d in devices {
        let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3], &d).unwrap();
        let m = Tensor::from_vec(vec![1.0f32, 0.0, 0.0, 0.0, 0.0, 1.0], &[2, 3], &d)
            .unwrap()
            .gt_scalar(0.5)
            .unwrap();
        x.requires_grad_(true).unwrap();
        let y = x.masked_fill(&m, -1.0).unwrap();
        assert_eq!(y.shape().to_vec(), vec![2, 3]);
        assert_eq!(y.to_vec_f32().unwrap(), [-1.0, 2.0, 3.0, 1.0, 2.0, -1.0]);
        y.sum_all().unwrap().backward().unwrap();
        assert_eq!(x.grad().unwrap().to_vec_f32().unwrap(), [1.0, 2.0, 1.0]);
    }
}

/// PyTorch's 0-d cases of `index_select` and `gather` (values from PyTorch
/// 2.15): a 0-d index is a one-element vector, a 0-d input one element
/// along axis 0/-1, and the gradient flows back through both.
#[test]
fn index_select_and_gather_take_0d_operands() {
    let mut devices = vec![Device::Cpu];
    devices.extend(gpu());
    for d in devices {
        let x = Tensor::from_vec((0..6).map(|v| v as f32).collect(), &[2, 3], &d).unwrap();
        let i0 = Tensor::from_vec(vec![1i32], &[], &d).unwrap();
        let picked = x.index_select(0, &i0).unwrap();
        assert_eq!(picked.shape().to_vec(), vec![1, 3], "{d:?}");
        assert_eq!(picked.to_vec_f32().unwrap(), [3.0, 4.0, 5.0]);
        let s = Tensor::from_vec(vec![5.0f32], &[], &d).unwrap();
        s.requires_grad_(true).unwrap();
        let zero = Tensor::from_vec(vec![0i32], &[], &d).unwrap();
        let y = s.index_select(-1, &zero).unwrap();
        assert_eq!(y.shape().to_vec(), Vec::<usize>::new());
        assert_eq!(y.to_vec_f32().unwrap(), [5.0]);
        let two = Tensor::from_vec(vec![0i32, 0], &[2], &d).unwrap();
        let e = s.index_select(0, &two).unwrap_err().to_string();
        assert!(e.contains("index_select") && e.contains("[2]"), "{e}");
        assert!(s.index_select(1, &zero).is_err());
        // gather: output takes the index's shape.
        let g = s.gather(0, &two).unwrap();
        assert_eq!(g.to_vec_f32().unwrap(), [5.0, 5.0]);
        g.sum_all().unwrap().backward().unwrap();
        assert_eq!(s.grad().unwrap().to_vec_f32().unwrap(), [2.0]);
        let v = Tensor::from_vec(vec![1.0f32, 2.0], &[2], &d).unwrap();
        let one = Tensor::from_vec(vec![1i32], &[], &d).unwrap();
        let got = v.gather(0, &one).unwrap();
        assert_eq!(got.shape().to_vec(), Vec::<usize>::new());
        assert_eq!(got.to_vec_f32().unwrap(), [2.0]);
        assert!(
            x.gather(0, &one).is_err(),
            "a 0-d index against a 2-D input"
        );
    }
}
