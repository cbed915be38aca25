//! In-place ops (`add_`, `sub_`, `mul_`, `div_`, their scalar forms,
//! `zero_`, `fill_`, `copy_`, `clamp_`) through the public API, on the CPU
//! and the GPU: values against the out-of-place ops, views and `detach()`
//! sharing data and the version counter, and PyTorch's errors (a leaf that
//! requires grad, a tensor saved for backward and then modified, narrowing
//! dtypes, broadcasting into the written tensor, overlapping elements), plus
//! wgrad's refusal of in-place ops on tensors inside a graph.

use wgrad::{DType, Device, Tensor, no_grad};

use crate::common::gpu;

fn devices() -> Vec<Device> {
    let mut all = vec![Device::Cpu];
    all.extend(gpu());
    all
}

fn t(data: &[f32], shape: &[usize], d: &Device) -> Tensor {
    Tensor::from_vec(data.to_vec(), shape, d).unwrap()
}

fn vals(x: &Tensor) -> Vec<f32> {
    x.to_vec_f32().unwrap()
}

#[test]
fn inplace_values_match_the_out_of_place_ops() {
    for d in devices() {
        let a = || t(&[1.0, -2.0, 3.0, 4.5, -5.0, 6.0], &[2, 3], &d);
        let b = t(&[2.0, 0.5, -1.0], &[3], &d); // broadcast over the rows
        for (name, inplace, want) in [
            ("add_", a().add_(&b).unwrap(), a().add(&b).unwrap()),
            ("sub_", a().sub_(&b).unwrap(), a().sub(&b).unwrap()),
            ("mul_", a().mul_(&b).unwrap(), a().mul(&b).unwrap()),
            ("div_", a().div_(&b).unwrap(), a().div(&b).unwrap()),
            (
                "add_scalar_",
                a().add_scalar_(1.5).unwrap(),
                a().add_scalar(1.5).unwrap(),
            ),
            (
                "sub_scalar_",
                a().sub_scalar_(1.5).unwrap(),
                a().sub_scalar(1.5).unwrap(),
            ),
            (
                "mul_scalar_",
                a().mul_scalar_(-2.0).unwrap(),
                a().mul_scalar(-2.0).unwrap(),
            ),
            (
                "div_scalar_",
                a().div_scalar_(4.0).unwrap(),
                a().div_scalar(4.0).unwrap(),
            ),
            (
                "clamp_",
                a().clamp_(Some(-1.0), Some(4.0)).unwrap(),
                a().clamp(Some(-1.0), Some(4.0)).unwrap(),
            ),
        ] {
            assert_eq!(vals(&inplace), vals(&want), "{name} on {d}");
            assert_eq!(inplace.version(), 1, "{name} bumps the version");
        }
        let x = a();
        let same = x.mul_scalar_(2.0).unwrap();
        assert_eq!(same.id(), x.id(), "returns the tensor itself");
        assert_eq!(vals(&x), vec![2.0, -4.0, 6.0, 9.0, -10.0, 12.0]);
        x.zero_().unwrap();
        assert_eq!(vals(&x), vec![0.0; 6]);
        x.fill_(2.5).unwrap();
        assert_eq!(vals(&x), vec![2.5; 6]);
        assert_eq!(x.version(), 3);
        // Integer tensors: in-place integer arithmetic stays I32.
        let i = Tensor::from_vec(vec![7i32, -7], &[2], &d).unwrap();
        i.add_scalar_(3.0).unwrap();
        assert_eq!(i.to_vec::<i32>().unwrap(), vec![10, -4]);
        i.clamp_(Some(-2.0), Some(5.0)).unwrap();
        assert_eq!(i.to_vec::<i32>().unwrap(), vec![5, -2]);
        let e = i.clamp_(Some(0.5), None).unwrap_err().to_string();
        assert!(e.contains("clamp_") && e.contains("can't be cast"), "{e}");
        i.fill_(-3.7).unwrap();
        assert_eq!(i.to_vec::<i32>().unwrap(), vec![-3, -3]);
        // Empty and 0-d tensors.
        let e = t(&[], &[0, 3], &d);
        e.add_scalar_(1.0).unwrap().zero_().unwrap();
        assert_eq!(e.shape(), [0, 3]);
        let s = Tensor::scalar(2.0, &d).unwrap();
        s.mul_(&t(&[3.0], &[], &d)).unwrap();
        assert_eq!(s.item().unwrap(), 6.0);
    }
}

#[test]
fn copy_broadcasts_and_converts_dtype_and_device() {
    for d in devices() {
        let x = t(&[0.0; 6], &[2, 3], &d);
        x.copy_(&t(&[1.0, 2.0, 3.0], &[3], &d)).unwrap();
        assert_eq!(vals(&x), vec![1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
        // I32 into F32 and F32 into I32 (truncating), as torch's copy_.
        let i = Tensor::from_vec(vec![4i32, -5, 6], &[3], &d).unwrap();
        x.copy_(&i).unwrap();
        assert_eq!(vals(&x), vec![4.0, -5.0, 6.0, 4.0, -5.0, 6.0]);
        i.copy_(&t(&[1.9, -1.9, 0.5], &[3], &d)).unwrap();
        assert_eq!(i.to_vec::<i32>().unwrap(), vec![1, -1, 0]);
        // From the CPU onto this device.
        x.copy_(&t(&[9.0; 6], &[2, 3], &Device::Cpu)).unwrap();
        assert_eq!(vals(&x), vec![9.0; 6]);
        // From an overlapping view of itself: reads before it writes.
        x.copy_(&t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3], &d))
            .unwrap();
        let xt = x.reshape(&[3, 2]).unwrap();
        let flipped = x.narrow(1, 0, 2).unwrap();
        flipped.copy_(&x.narrow(1, 1, 2).unwrap()).unwrap();
        assert_eq!(vals(&x), vec![2.0, 3.0, 3.0, 5.0, 6.0, 6.0]);
        assert_eq!(vals(&xt), vec![2.0, 3.0, 3.0, 5.0, 6.0, 6.0]);
        let e = x.copy_(&t(&[1.0, 2.0], &[2], &d)).unwrap_err().to_string();
        assert!(
            e.contains("copy_") && e.contains("[2]") && e.contains("[2, 3]"),
            "{e}"
        );
    }
}

#[test]
fn views_and_detach_share_data_and_version() {
    for d in devices() {
        let base = t(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0], &[2, 3], &d);
        let col = base.narrow(1, 1, 1).unwrap();
        let tr = base.transpose(0, 1).unwrap();
        col.add_scalar_(10.0).unwrap();
        assert_eq!(vals(&base), vec![0.0, 11.0, 2.0, 3.0, 14.0, 5.0], "{d}");
        assert_eq!(vals(&tr), vec![0.0, 3.0, 11.0, 14.0, 2.0, 5.0]);
        assert_eq!((base.version(), col.version(), tr.version()), (1, 1, 1));
        // Writing the base is seen through the views, through a chain of writes.
        base.mul_scalar_(2.0).unwrap();
        tr.narrow(0, 2, 1).unwrap().fill_(-1.0).unwrap();
        assert_eq!(vals(&col), vec![22.0, 28.0]);
        assert_eq!(vals(&base), vec![0.0, 22.0, -1.0, 6.0, 28.0, -1.0]);
        assert_eq!(base.version(), 3);
        let det = base.detach();
        det.zero_().unwrap();
        assert_eq!(vals(&base), vec![0.0; 6]);
        assert_eq!(vals(&col), vec![0.0; 2]);
        assert_eq!(base.version(), 4);
        // A tensor made from the data before the writes is not a view: unchanged.
        let other = t(&[1.0; 6], &[2, 3], &d);
        let snapshot = other.add_scalar(0.0).unwrap();
        other.zero_().unwrap();
        assert_eq!(vals(&snapshot), vec![1.0; 6]);
    }
}

#[test]
fn gpu_inplace_matches_cpu_on_views() {
    let Some(g) = gpu() else { return };
    let data: Vec<f32> = (0..24).map(|v| v as f32 * 0.5 - 3.0).collect();
    let run = |d: &Device| {
        let x = t(&data, &[2, 3, 4], d);
        let v = x.permute(&[2, 0, 1]).unwrap().narrow(0, 1, 2).unwrap();
        v.mul_(&t(&[2.0, -1.0, 0.5], &[3], d)).unwrap();
        v.clamp_(Some(-2.0), None).unwrap();
        x.narrow(2, 0, 1).unwrap().sub_scalar_(1.0).unwrap();
        vals(&x)
    };
    assert_eq!(run(&g), run(&Device::Cpu));
}

#[test]
fn leaf_requiring_grad_is_pytorchs_error_outside_no_grad() {
    for d in devices() {
        let w = t(&[1.0, 2.0], &[2], &d).with_requires_grad(true).unwrap();
        let e = w.add_scalar_(1.0).unwrap_err().to_string();
        assert!(
            e.contains("add_")
                && e.contains(
                    "a leaf Variable that requires grad is being used in an in-place operation"
                ),
            "{e}"
        );
        assert_eq!(w.version(), 0, "a refused op changes nothing");
        assert_eq!(vals(&w), vec![1.0, 2.0]);
        {
            let _guard = no_grad();
            w.mul_scalar_(3.0).unwrap();
            w.narrow(0, 0, 1).unwrap().zero_().unwrap();
        }
        assert_eq!(vals(&w), vec![0.0, 6.0]);
        assert_eq!(w.version(), 2);
        // Still a leaf that trains.
        w.mul_scalar(2.0)
            .unwrap()
            .sum_all()
            .unwrap()
            .backward()
            .unwrap();
        assert_eq!(vals(&w.grad().unwrap()), vec![2.0, 2.0]);
        // Gradients may share storage (add's backward gives both operands
        // one buffer): the handle grad() returns cannot be written.
        let (a, b) = (
            t(&[1.0], &[1], &d).with_requires_grad(true).unwrap(),
            t(&[2.0], &[1], &d).with_requires_grad(true).unwrap(),
        );
        a.add(&b).unwrap().sum_all().unwrap().backward().unwrap();
        let e = a.grad().unwrap().zero_().unwrap_err().to_string();
        assert!(e.contains("set_grad"), "{e}");
        assert_eq!(vals(&b.grad().unwrap()), vec![1.0]);
    }
}

#[test]
fn tensors_in_a_graph_are_refused_with_a_clear_error() {
    for d in devices() {
        let w = t(&[1.0, 2.0], &[2], &d).with_requires_grad(true).unwrap();
        let y = w.mul_scalar(2.0).unwrap();
        let e = y.add_scalar_(1.0).unwrap_err().to_string();
        assert!(e.contains("add_") && e.contains("autograd graph"), "{e}");
        // A view of a leaf that requires grad is in the graph too.
        let e = w.narrow(0, 0, 1).unwrap().zero_().unwrap_err().to_string();
        assert!(e.contains("fill_") || e.contains("zero_"), "{e}");
        // An operand that requires grad would need history.
        let buf = t(&[0.0, 0.0], &[2], &d);
        let e = buf.add_(&w).unwrap_err().to_string();
        assert!(e.contains("add_") && e.contains("requires grad"), "{e}");
        let e = buf.copy_(&w).unwrap_err().to_string();
        assert!(e.contains("copy_"), "{e}");
        {
            let _guard = no_grad();
            buf.add_(&w).unwrap();
        }
        assert_eq!(vals(&buf), vec![1.0, 2.0]);
    }
}

#[test]
fn modifying_a_saved_tensor_makes_backward_fail() {
    for d in devices() {
        let w = t(&[1.0, 2.0], &[2], &d).with_requires_grad(true).unwrap();
        let x = t(&[3.0, 4.0], &[2], &d);
        let loss = w.mul(&x).unwrap().sum_all().unwrap();
        x.mul_scalar_(2.0).unwrap(); // mul saved x for w's gradient
        let e = loss.backward().unwrap_err().to_string();
        assert!(e.contains("modified by an inplace operation"), "{e}");
        // Through a view of the saved tensor as well.
        let x = t(&[3.0, 4.0], &[2], &d);
        let loss = w.mul(&x).unwrap().sum_all().unwrap();
        x.narrow(0, 1, 1).unwrap().fill_(0.0).unwrap();
        let e = loss.backward().unwrap_err().to_string();
        assert!(e.contains("modified by an inplace operation"), "{e}");
        // Untouched: fine.
        let loss = w.mul(&x).unwrap().sum_all().unwrap();
        loss.backward().unwrap();
    }
}

#[test]
fn bad_inplace_inputs_are_pytorchs_errors() {
    for d in devices() {
        let i = Tensor::from_vec(vec![4i32, 6], &[2], &d).unwrap();
        let e = i.div_(&i).unwrap_err().to_string();
        assert!(e.contains("div_") && e.contains("can't be cast"), "{e}");
        let e = i.add_(&t(&[0.5, 0.5], &[2], &d)).unwrap_err().to_string();
        assert!(e.contains("add_") && e.contains("can't be cast"), "{e}");
        assert_eq!(i.to_vec::<i32>().unwrap(), vec![4, 6], "nothing written");
        assert_eq!(i.version(), 0);
        let x = t(&[1.0, 2.0, 3.0], &[3], &d);
        let e = x.add_(&t(&[0.0; 6], &[2, 3], &d)).unwrap_err().to_string();
        assert!(
            e.contains("add_") && e.contains("[3]") && e.contains("[2, 3]"),
            "{e}"
        );
        let e = x
            .unsqueeze(0)
            .unwrap()
            .expand(&[2, 3])
            .unwrap()
            .fill_(1.0)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("fill_") && e.contains("single memory location"),
            "{e}"
        );
        // A mask promotes to the float it is added to, as torch.bool does.
        let m = x.gt_scalar(1.0).unwrap();
        x.add_(&m).unwrap();
        assert_eq!(vals(&x), vec![1.0, 3.0, 4.0]);
        assert_eq!(x.dtype(), DType::F32);
        if let Some(g) = gpu() {
            let (c, gt) = (t(&[1.0], &[1], &Device::Cpu), t(&[1.0], &[1], &g));
            let e = c.add_(&gt).unwrap_err().to_string();
            assert!(e.contains("add"), "{e}");
        }
    }
}

/// `reshape` returns a view whenever strides can express it, as PyTorch's
/// does: a write through the reshaped third of a row writes the base, and
/// reads through it see the right elements.
#[test]
fn reshape_of_a_strided_view_is_a_view_where_strides_allow() {
    for d in devices() {
        let base = Tensor::arange(0.0, 24.0, 1.0, DType::F32, &d)
            .unwrap()
            .reshape(&[2, 12])
            .unwrap();
        // Columns 4..8 of each row, split into [2, 2, 2]: a view.
        let third = base.narrow(1, 4, 4).unwrap();
        let heads = third.reshape(&[2, 2, 2]).unwrap();
        assert_eq!(vals(&heads), [4., 5., 6., 7., 16., 17., 18., 19.]);
        heads.add_scalar_(100.0).unwrap();
        let row = vals(&base);
        assert_eq!(&row[4..8], [104., 105., 106., 107.]);
        assert_eq!(&row[16..20], [116., 117., 118., 119.]);
        assert_eq!(row[3], 3.0);
        // Merging across the gap needs a copy: writes do not reach the base.
        let flat = third.reshape(&[8]).unwrap();
        flat.zero_().unwrap();
        assert_eq!(vals(&base)[4], 104.0, "{d}");
    }
}

/// A backward reads only the saved tensors the gradients it needs use, as
/// PyTorch's does: in `y = a * b` with only `b` requiring grad, `b`'s
/// gradient needs `a` (modifying `a` in place makes backward fail) but not
/// `b` itself (modifying the `b` side in place is fine).
#[test]
fn backward_checks_only_the_saved_tensors_it_needs() {
    let mut devices = vec![Device::Cpu];
    devices.extend(gpu());
    for d in devices {
        let a = Tensor::from_vec(vec![1.0f32, 2.0], &[2], &d).unwrap();
        let b = Tensor::from_vec(vec![3.0f32, 4.0], &[2], &d).unwrap();
        b.requires_grad_(true).unwrap();
        let bb = b.mul_scalar(1.0).unwrap();
        let y = a.mul(&bb).unwrap();
        {
            let _off = no_grad();
            bb.add_scalar_(1.0).unwrap();
        }
        y.sum_all().unwrap().backward().unwrap();
        assert_eq!(vals(&b.grad().unwrap()), vec![1.0, 2.0], "{d:?}");

        let a = Tensor::from_vec(vec![1.0f32, 2.0], &[2], &d).unwrap();
        let b = Tensor::from_vec(vec![3.0f32, 4.0], &[2], &d).unwrap();
        b.requires_grad_(true).unwrap();
        let y = a.mul(&b.mul_scalar(1.0).unwrap()).unwrap();
        a.add_scalar_(1.0).unwrap();
        let e = y.sum_all().unwrap().backward().unwrap_err().to_string();
        assert!(
            e.contains("modified by an inplace operation") || e.contains("in place"),
            "{e}"
        );
    }
}
