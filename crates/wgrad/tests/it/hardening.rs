//! Semantics and autograd-safety cases found by trying wgrad as a new user
//! would, each checked through the public API on the CPU and on the GPU
//! (when one is present): PyTorch's rules for 0-d tensors, squeeze,
//! flatten and NaN; checked shape arithmetic; freed graphs; version
//! counters; tied weights; threads.

use crate::common;

use wgrad::nn::{self, Module};
use wgrad::optim::{Optimizer, Sgd, SgdConfig};
use wgrad::{BackwardOptions, Device, Result, Tensor};

/// The CPU, and the GPU when there is one.
fn devices() -> Vec<Device> {
    let mut out = vec![Device::Cpu];
    out.extend(common::gpu());
    out
}

fn values(t: &Tensor) -> Vec<f32> {
    t.to_vec_f32().unwrap()
}

fn i32s(t: &Tensor) -> Vec<i32> {
    t.to_vec::<i32>().unwrap()
}

fn vec_on(data: &[f32], shape: &[usize], device: &Device) -> Tensor {
    Tensor::from_vec(data.to_vec(), shape, device).unwrap()
}

fn err_text<T>(result: Result<T>) -> String {
    match result {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

// ---- 1. a 0-d tensor has dims in [-1, 0] ----

#[test]
fn zero_d_tensor_accepts_axis_0_and_minus_1() {
    for d in devices() {
        let s = Tensor::scalar(2.0, &d).unwrap();
        for axis in [0isize, -1] {
            for keepdim in [false, true] {
                let reduced = [
                    s.sum(&[axis], keepdim).unwrap(),
                    s.mean(&[axis], keepdim).unwrap(),
                    s.max(&[axis], keepdim).unwrap(),
                    s.min(&[axis], keepdim).unwrap(),
                ];
                for r in &reduced {
                    assert_eq!(r.shape(), Vec::<usize>::new(), "{d}");
                    assert_eq!(values(r), vec![2.0], "{d}");
                }
                // One element, unbiased: 0/0 as in PyTorch; biased: 0.
                assert!(values(&s.var(&[axis], 1, keepdim).unwrap())[0].is_nan());
                assert_eq!(values(&s.var(&[axis], 0, keepdim).unwrap()), vec![0.0]);
                assert_eq!(i32s(&s.argmax(axis, keepdim).unwrap()), vec![0]);
                assert_eq!(i32s(&s.argmin(axis, keepdim).unwrap()), vec![0]);
            }
            let sm = s.softmax(axis).unwrap();
            assert_eq!(sm.shape(), Vec::<usize>::new());
            assert_eq!(values(&sm), vec![1.0], "{d}");
            assert_eq!(values(&s.log_softmax(axis).unwrap()), vec![0.0], "{d}");
        }
        let e = err_text(s.narrow(0, 0, 1));
        assert!(
            e.contains("narrow") && e.contains("at least one dim"),
            "{e}"
        );
        for bad in [1isize, -2] {
            let e = err_text(s.sum(&[bad], false));
            assert!(e.contains("sum") && e.contains("-1 or 0"), "{e}");
            assert!(s.softmax(bad).is_err());
            assert!(s.argmax(bad, false).is_err());
        }
        // Gradients flow through the implicit dim.
        let x = Tensor::scalar(3.0, &d)
            .unwrap()
            .with_requires_grad(true)
            .unwrap();
        let y = x.sum(&[0], false).unwrap().mul_scalar(2.0).unwrap();
        let z = y.add(&x.log_softmax(-1).unwrap()).unwrap();
        z.backward().unwrap();
        assert_eq!(values(&x.grad().unwrap()), vec![2.0], "{d}");
    }
}

// ---- 2. squeeze of a dim that is not 1 ----

#[test]
fn squeeze_of_a_dim_that_is_not_1_returns_the_tensor_unchanged() {
    for d in devices() {
        let x = vec_on(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3], &d)
            .with_requires_grad(true)
            .unwrap();
        let y = x.squeeze(0).unwrap();
        assert_eq!(y.shape(), vec![2, 3]);
        assert_eq!(values(&y), values(&x));
        y.sum_all().unwrap().backward().unwrap();
        assert_eq!(values(&x.grad().unwrap()), vec![1.0; 6], "{d}");
        let s = Tensor::scalar(1.0, &d).unwrap();
        assert_eq!(s.squeeze(0).unwrap().shape(), Vec::<usize>::new());
        assert!(x.squeeze(2).is_err());
    }
}

// ---- 3. NaN propagates as in PyTorch ----

/// Every unary op maps NaN to NaN in PyTorch (relu and clamp included),
/// except `sign`, which gives 0 there.
#[test]
fn nan_propagates_through_every_unary_op() {
    type Unary = fn(&Tensor) -> Result<Tensor>;
    let ops: [(&str, Unary); 18] = [
        ("neg", Tensor::neg),
        ("abs", Tensor::abs),
        ("exp", Tensor::exp),
        ("log", Tensor::log),
        ("sqrt", Tensor::sqrt),
        ("rsqrt", Tensor::rsqrt),
        ("sin", Tensor::sin),
        ("cos", Tensor::cos),
        ("tanh", Tensor::tanh),
        ("sigmoid", Tensor::sigmoid),
        ("relu", Tensor::relu),
        ("gelu", Tensor::gelu),
        ("silu", Tensor::silu),
        ("square", Tensor::square),
        ("recip", Tensor::recip),
        ("leaky_relu", |t| t.leaky_relu(0.01)),
        ("clamp", |t| t.clamp(Some(0.0), Some(1.0))),
        ("nn::ReLU", |t| nn::ReLU::new().forward(t)),
    ];
    for d in devices() {
        let x = vec_on(&[f32::NAN, 1.0], &[2], &d);
        // Every selector, new ones included, through the generic entry point.
        for op in wgrad::UnaryOp::ALL {
            let got = values(&x.unary(op).unwrap());
            if op == wgrad::UnaryOp::Sign {
                assert_eq!(got[0].to_bits(), 0, "sign(NaN) = {} on {d}", got[0]);
                continue;
            }
            assert!(got[0].is_nan(), "{op:?}(NaN) = {} on {d}", got[0]);
        }
        for (name, op) in ops {
            let got = values(&op(&x).unwrap());
            assert!(got[0].is_nan(), "{name}(NaN) = {} on {d}", got[0]);
            assert!(!got[1].is_nan(), "{name}(1) = NaN on {d}");
        }
    }
}

/// Binary ops, tensor and scalar forms, with the IEEE exceptions PyTorch
/// keeps: `pow(NaN, 0) = 1` and `pow(1, NaN) = 1`.
#[test]
fn nan_propagates_through_every_binary_op() {
    let nan = f32::NAN;
    // (op, a, b, PyTorch's result)
    let cases: [(&str, f32, f32, f32); 16] = [
        ("add", nan, 1.0, nan),
        ("add", 1.0, nan, nan),
        ("sub", nan, 1.0, nan),
        ("sub", 1.0, nan, nan),
        ("mul", nan, 0.0, nan),
        ("mul", 0.0, nan, nan),
        ("div", nan, 1.0, nan),
        ("div", 1.0, nan, nan),
        ("pow", nan, 2.0, nan),
        ("pow", 2.0, nan, nan),
        ("pow", nan, 0.0, 1.0),
        ("pow", 1.0, nan, 1.0),
        ("maximum", nan, 1.0, nan),
        ("maximum", 1.0, nan, nan),
        ("minimum", nan, 1.0, nan),
        ("minimum", 1.0, nan, nan),
    ];
    for d in devices() {
        for (name, a, b, want) in cases {
            let (ta, tb) = (vec_on(&[a], &[1], &d), vec_on(&[b], &[1], &d));
            let tensor = match name {
                "add" => ta.add(&tb),
                "sub" => ta.sub(&tb),
                "mul" => ta.mul(&tb),
                "div" => ta.div(&tb),
                "pow" => ta.pow(&tb),
                "maximum" => ta.maximum(&tb),
                _ => ta.minimum(&tb),
            };
            let scalar = match name {
                "add" => ta.add_scalar(b),
                "sub" => ta.sub_scalar(b),
                "mul" => ta.mul_scalar(b),
                "div" => ta.div_scalar(b),
                "pow" => ta.pow_scalar(b),
                "maximum" => ta.maximum_scalar(b),
                _ => ta.minimum_scalar(b),
            };
            for (form, got) in [("tensor", tensor), ("scalar", scalar)] {
                let got = values(&got.unwrap())[0];
                let ok = if want.is_nan() {
                    got.is_nan()
                } else {
                    got == want
                };
                assert!(ok, "{name}({a}, {b}) [{form}] = {got}, want {want} on {d}");
            }
        }
        // Comparisons with NaN: only `ne` is true.
        let (n, one) = (vec_on(&[nan], &[1], &d), vec_on(&[1.0], &[1], &d));
        let masks = [
            ("eq", n.eq(&one), 0),
            ("ne", n.ne(&one), 1),
            ("lt", n.lt(&one), 0),
            ("le", n.le(&one), 0),
            ("gt", n.gt(&one), 0),
            ("ge", n.ge(&one), 0),
            ("eq self", n.eq(&n), 0),
        ];
        for (name, mask, want) in masks {
            let got = mask.unwrap().to_vec::<u32>().unwrap()[0];
            assert_eq!(got, want, "{name} with NaN on {d}");
        }
    }
}

/// Reductions propagate NaN; argmax/argmin pick the NaN; softmax of a row
/// with a NaN is all NaN (and other rows are untouched).
#[test]
fn nan_propagates_through_every_reduction() {
    let nan = f32::NAN;
    for d in devices() {
        let x = vec_on(&[1.0, nan, 3.0, 4.0, 5.0, 6.0], &[2, 3], &d);
        for (name, r) in [
            ("sum", x.sum(&[1], false)),
            ("mean", x.mean(&[1], false)),
            ("max", x.max(&[1], false)),
            ("min", x.min(&[1], false)),
            ("var", x.var(&[1], 1, false)),
        ] {
            let got = values(&r.unwrap());
            assert!(
                got[0].is_nan(),
                "{name} of a row with NaN = {} on {d}",
                got[0]
            );
            assert!(!got[1].is_nan(), "{name} of a row without NaN on {d}");
        }
        assert!(values(&x.sum_all().unwrap())[0].is_nan());
        // An empty sum is +0.0 on both devices, as in PyTorch.
        let empty = Tensor::zeros(&[0, 3], &d)
            .unwrap()
            .sum(&[0], false)
            .unwrap();
        assert!(values(&empty).iter().all(|v| v.to_bits() == 0), "{d}");
        assert_eq!(i32s(&x.argmax(1, false).unwrap()), vec![1, 2], "{d}");
        assert_eq!(i32s(&x.argmin(1, false).unwrap()), vec![1, 0], "{d}");
        for sm in [x.softmax(1).unwrap(), x.log_softmax(1).unwrap()] {
            let got = values(&sm);
            assert!(got[..3].iter().all(|v| v.is_nan()), "{got:?} on {d}");
            assert!(got[3..].iter().all(|v| !v.is_nan()), "{got:?} on {d}");
        }
    }
}

// ---- 4. flatten ----

#[test]
fn flatten_keeps_empty_batches_and_rejects_start_past_the_rank() {
    for d in devices() {
        let empty = Tensor::zeros(&[0, 4], &d).unwrap();
        assert_eq!(empty.flatten(1).unwrap().shape(), vec![0, 4]);
        assert_eq!(empty.flatten(0).unwrap().shape(), vec![0]);
        let images = Tensor::zeros(&[0, 1, 28, 28], &d).unwrap();
        assert_eq!(
            nn::Flatten::new().forward(&images).unwrap().shape(),
            vec![0, 784]
        );
        let x = Tensor::zeros(&[2, 3, 4], &d).unwrap();
        assert_eq!(x.flatten(1).unwrap().shape(), vec![2, 12]);
        assert_eq!(x.flatten(2).unwrap().shape(), vec![2, 3, 4]);
        let e = err_text(x.flatten(3));
        assert!(e.contains("flatten") && e.contains("axis 3"), "{e}");
        assert_eq!(
            Tensor::scalar(1.0, &d).unwrap().flatten(0).unwrap().shape(),
            vec![1]
        );
    }
}

// ---- 5. shape arithmetic is checked ----

#[test]
fn overflowing_shapes_are_errors_on_every_device() {
    for d in devices() {
        let e = err_text(Tensor::zeros(&[1 << 32, 1 << 32, 16], &d));
        assert!(e.contains("more elements than fit"), "{d}: {e}");
        let x = Tensor::zeros(&[2, 3], &d).unwrap();
        let e = err_text(x.narrow(1, usize::MAX, 2));
        assert!(e.contains("narrow") && e.contains("start"), "{e}");
        assert!(x.expand(&[usize::MAX, 2, 3]).is_err());
        assert!(x.reshape(&[isize::MAX, isize::MAX, 0]).is_err());
    }
}

// ---- 10. a CPU allocation that fails ----

#[test]
fn cpu_allocation_failure_is_out_of_memory_not_an_abort() {
    // 2^61 f32 (8 EiB) is more than any machine has; the exact
    // `ulimit -v` cases run in wgrad-cpu's `oom` tests.
    let result = Tensor::zeros(&[1usize << 61], &Device::Cpu);
    assert!(
        matches!(
            result,
            Err(wgrad::Error::OutOfMemory {
                device: "CPU",
                op: "full",
                ..
            })
        ),
        "{:?}",
        result.map(|t| t.shape())
    );
    let big = Tensor::ones(&[1], &Device::Cpu)
        .unwrap()
        .expand(&[1usize << 61])
        .unwrap();
    let e = err_text(big.exp());
    assert!(e.contains("out of CPU memory"), "{e}");
}

// ---- 6. a freed graph ----

#[test]
fn second_backward_through_a_freed_graph_is_an_error() {
    for d in devices() {
        let x = vec_on(&[1.0, 2.0], &[2], &d)
            .with_requires_grad(true)
            .unwrap();
        let loss = x.mul(&x).unwrap().sum_all().unwrap();
        loss.backward().unwrap();
        let e = err_text(loss.backward());
        assert!(
            e.contains("second time") && e.contains("retain_graph"),
            "{e}"
        );
        // The failed call changed nothing.
        assert_eq!(values(&x.grad().unwrap()), vec![2.0, 4.0], "{d}");

        // With retain_graph the second backward accumulates, as in PyTorch.
        x.zero_grad();
        let loss = x.mul(&x).unwrap().sum_all().unwrap();
        let keep = BackwardOptions { retain_graph: true };
        loss.backward_with_options(None, keep).unwrap();
        loss.backward_with_options(None, keep).unwrap();
        assert_eq!(values(&x.grad().unwrap()), vec![4.0, 8.0], "{d}");
        // The last one may free it.
        loss.backward().unwrap();
        assert!(loss.backward().is_err());
    }
}

/// Backward frees what the graph saved: on the GPU the intermediate
/// activations go back to the pool while the loss is still alive.
#[test]
fn backward_frees_the_saved_tensors() {
    let Some(Device::Gpu(_)) = common::gpu() else {
        return;
    };
    // A device of its own, so other tests do not move its counters.
    let gpu = wgrad::GpuDevice::new().unwrap();
    let d = Device::Gpu(gpu.clone());
    let live = |retain: bool| -> (u64, u64) {
        let w = Tensor::randn(&[256, 256], &d)
            .unwrap()
            .with_requires_grad(true)
            .unwrap();
        let x = Tensor::randn(&[512, 256], &d).unwrap();
        let mut h = x.clone();
        for _ in 0..4 {
            h = h.matmul(&w).unwrap().tanh().unwrap();
        }
        let loss = h.sum_all().unwrap();
        drop(h);
        let before = gpu.stats().live_bytes;
        loss.backward_with_options(
            None,
            BackwardOptions {
                retain_graph: retain,
            },
        )
        .unwrap();
        let after = gpu.stats().live_bytes;
        drop((loss, w, x));
        (before, after)
    };
    let (before, freed) = live(false);
    let (_, retained) = live(true);
    // 8 saved activations of 512 KiB each (matmul outputs and tanh outputs).
    assert!(
        retained >= freed + 8 * 512 * 1024,
        "live bytes after backward: retained {retained}, freed {freed} (before {before})"
    );
}

// ---- 7. version counters ----

#[test]
fn changing_saved_data_before_backward_is_an_error() {
    for d in devices() {
        let x = vec_on(&[1.0, 1.0], &[2], &d)
            .with_requires_grad(true)
            .unwrap();
        let w = vec_on(&[1.0, 1.0], &[2], &d)
            .with_requires_grad(true)
            .unwrap();
        let loss = x.mul(&w).unwrap().sum_all().unwrap();
        w.set_storage(vec_on(&[100.0, 100.0], &[2], &d).storage())
            .unwrap();
        let e = err_text(loss.backward());
        assert!(
            e.contains("modified by an inplace operation") && e.contains("mul"),
            "{e}"
        );
        assert!(x.grad().is_none(), "a failed backward must not touch .grad");

        // A view shares the counter: the transposed weight saved by a
        // matmul sees an optimizer step on the weight itself (x requires
        // grad, so its gradient needs the weight; without that, PyTorch
        // and wgrad do not read the weight and the step is fine).
        let w = vec_on(&[1.0, 2.0, 3.0, 4.0], &[2, 2], &d)
            .with_requires_grad(true)
            .unwrap();
        let free = vec_on(&[1.0, 1.0], &[1, 2], &d);
        let ok = free.matmul(&w.t().unwrap()).unwrap().sum_all().unwrap();
        w.set_grad(Some(vec_on(&[1.0; 4], &[2, 2], &d))).unwrap();
        Sgd::new(vec![w.clone()], SgdConfig::new(0.1))
            .unwrap()
            .step()
            .unwrap();
        w.set_grad(None).unwrap();
        ok.backward().unwrap();
        assert_eq!(values(&w.grad().unwrap()), [1.0; 4], "{d}");
        w.set_grad(None).unwrap();
        let x = vec_on(&[1.0, 1.0], &[1, 2], &d)
            .with_requires_grad(true)
            .unwrap();
        let loss = x.matmul(&w.t().unwrap()).unwrap().sum_all().unwrap();
        w.set_grad(Some(vec_on(&[1.0; 4], &[2, 2], &d))).unwrap();
        let mut opt = Sgd::new(vec![w.clone()], SgdConfig::new(0.1)).unwrap();
        opt.step().unwrap();
        let e = err_text(loss.backward());
        assert!(e.contains("modified by an inplace operation"), "{d}: {e}");

        // add saves nothing, so changing its input is fine (as in PyTorch).
        let a = vec_on(&[1.0], &[1], &d).with_requires_grad(true).unwrap();
        let y = a.add_scalar(1.0).unwrap().sum_all().unwrap();
        a.set_storage(vec_on(&[5.0], &[1], &d).storage()).unwrap();
        y.backward().unwrap();
        assert_eq!(values(&a.grad().unwrap()), vec![1.0]);
    }
}

#[test]
fn version_counts_changes_across_views() {
    let d = Device::Cpu;
    let w = vec_on(&[1.0, 2.0], &[2], &d);
    let view = w.unsqueeze(0).unwrap();
    let detached = w.detach();
    assert_eq!(w.version(), 0);
    view.set_storage(vec_on(&[3.0, 4.0], &[1, 2], &d).storage())
        .unwrap();
    assert_eq!((w.version(), detached.version()), (1, 1));
    // A copy (reshape of a non-contiguous view) has a counter of its own.
    let m = vec_on(&[1.0, 2.0, 3.0, 4.0], &[2, 2], &d);
    let copy = m.t().unwrap().reshape(&[4]).unwrap();
    m.set_storage(vec_on(&[0.0; 4], &[2, 2], &d).storage())
        .unwrap();
    assert_eq!(copy.version(), 0);
}

// ---- 8. tied weights ----

/// Two layers sharing one weight tensor (like a tied embedding and head).
struct Tied {
    first: Tensor,
    second: Tensor,
}

impl Module for Tied {
    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        x.mul(&self.first)?.mul(&self.second)
    }
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        nn::unique_parameters(vec![
            ("first".into(), self.first.clone()),
            ("second".into(), self.second.clone()),
        ])
    }
    fn is_training(&self) -> bool {
        true
    }
    fn to_device(&mut self, _device: &Device) -> Result<()> {
        Ok(())
    }
}

#[test]
fn tied_weights_are_listed_and_updated_once() {
    for d in devices() {
        let w = vec_on(&[1.0], &[1], &d).with_requires_grad(true).unwrap();
        let tied = Tied {
            first: w.clone(),
            second: w.clone(),
        };
        let names: Vec<String> = tied.named_parameters().into_iter().map(|p| p.0).collect();
        assert_eq!(names, vec!["first".to_string()]);
        assert_eq!(tied.parameters().len(), 1);

        // In a Sequential, too: one tensor in two layers is listed once.
        let mut seq = nn::Sequential::new();
        for _ in 0..2 {
            seq.push(Tied {
                first: w.clone(),
                second: w.clone(),
            });
        }
        let names: Vec<String> = seq.named_parameters().into_iter().map(|p| p.0).collect();
        assert_eq!(names, vec!["0.first".to_string()]);

        w.set_grad(Some(vec_on(&[1.0], &[1], &d))).unwrap();
        let mut opt = Sgd::new(tied.parameters(), SgdConfig::new(0.1)).unwrap();
        opt.step().unwrap();
        assert!(
            (values(&w)[0] - 0.9).abs() < 1e-6,
            "{:?} on {d}",
            values(&w)
        );

        let e = err_text(Sgd::new(vec![w.clone(), w.clone()], SgdConfig::new(0.1)));
        assert!(e.contains("same tensor"), "{e}");
        let e = err_text(wgrad::optim::Adam::new(
            vec![w.clone(), w],
            wgrad::optim::AdamConfig::default(),
        ));
        assert!(e.contains("same tensor"), "{e}");
    }
}

// ---- 9. threads ----

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn modules_move_to_worker_threads() {
    assert_send_sync::<nn::Sequential>();
    assert_send_sync::<Box<dyn Module>>();
    assert_send_sync::<Tensor>();
    let mut model = nn::Sequential::new();
    model.push(nn::Linear::new(3, 2, true, &Device::Cpu).unwrap());
    model.push(nn::ReLU::new());
    let boxed: Box<dyn Module> = Box::new(model);
    let out = std::thread::spawn(move || {
        let x = Tensor::ones(&[4, 3], &Device::Cpu)?;
        boxed.forward(&x).map(|y| y.shape())
    })
    .join()
    .unwrap()
    .unwrap();
    assert_eq!(out, vec![4, 2]);
    // Grad mode is per thread; a guard cannot leave its thread (a
    // compile_fail doctest on NoGradGuard proves it), so this one cannot
    // turn grad off for good.
    {
        let _guard = wgrad::no_grad();
        assert!(!wgrad::is_grad_enabled());
    }
    assert!(wgrad::is_grad_enabled());
}

/// A batch of matrices times one matrix, with a zero among the dims: the
/// matrix's gradient comes from the batch folded into rows, which must
/// not ask reshape to infer a dim from 0 elements (PyTorch: empty or zero
/// gradients of the operands' shapes).
#[test]
fn batch_times_matrix_with_empty_dims_has_gradients() {
    // (a, b, b given as the transpose of a [N, K] tensor)
    let cases: [(&[usize], &[usize], bool); 4] = [
        (&[1, 0, 3], &[0, 3], true),
        (&[2, 0, 3], &[3, 4], false),
        (&[2, 5, 0], &[0, 4], false),
        (&[0, 5, 3], &[3, 2], false),
    ];
    for d in devices() {
        for &(sa, sb, transposed) in &cases {
            let a = Tensor::ones(sa, &d)
                .unwrap()
                .with_requires_grad(true)
                .unwrap();
            let b = Tensor::ones(sb, &d)
                .unwrap()
                .with_requires_grad(true)
                .unwrap();
            let right = if transposed {
                b.t().unwrap()
            } else {
                b.clone()
            };
            let y = a.matmul(&right).unwrap();
            y.sum_all().unwrap().backward().unwrap();
            let what = format!("{sa:?} @ {sb:?} (transposed {transposed}) on {d:?}");
            let (ga, gb) = (a.grad().unwrap(), b.grad().unwrap());
            assert_eq!(ga.shape().to_vec(), sa.to_vec(), "{what}");
            assert_eq!(gb.shape().to_vec(), sb.to_vec(), "{what}");
            assert!(values(&ga).iter().all(|&v| v == 0.0), "{what}");
            assert!(values(&gb).iter().all(|&v| v == 0.0), "{what}");
        }
    }
}
