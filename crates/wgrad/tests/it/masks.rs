//! Boolean masks (U32 0/1, what comparisons return) in arithmetic, sums,
//! comparisons and cumsum, promoted as PyTorch promotes `torch.bool`: the
//! accuracy idiom `(pred.argmax(1) == y).sum()`, `x * mask`, `x + mask`,
//! `mask * 0.5`, masks with I32 and F16 tensors, the gradient through a
//! masked product, and the errors that stay (mask with mask arithmetic).

use wgrad::{DType, Device, Tensor};

use crate::common::gpu;

fn devices() -> Vec<Device> {
    let mut d = vec![Device::Cpu];
    d.extend(gpu());
    d
}

fn f32s(v: &[f32], shape: &[usize], d: &Device) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape, d).unwrap()
}

#[test]
fn accuracy_idiom_counts_matches_in_i32() {
    for d in devices() {
        let logits = f32s(&[0.1, 0.9, 0.8, 0.2, 0.3, 0.7], &[3, 2], &d);
        let y = Tensor::from_vec(vec![1i32, 1, 1], &[3], &d).unwrap();
        let hits = logits.argmax(1, false).unwrap().eq(&y).unwrap();
        assert_eq!(hits.dtype(), DType::U32, "{d:?}");
        let n = hits.sum_all().unwrap();
        assert_eq!(n.dtype(), DType::I32, "{d:?}");
        assert_eq!(n.to_vec::<i32>().unwrap(), [2], "{d:?}");
        // `correct += (pred == y).sum().item()`, and a mask read as numbers.
        assert_eq!(n.item().unwrap(), 2.0);
        assert_eq!(hits.to_vec_f32().unwrap(), [1.0, 0.0, 1.0]);
        let per_row = hits.reshape(&[3, 1]).unwrap().sum(&[0], false).unwrap();
        assert_eq!(per_row.to_vec::<i32>().unwrap(), [2], "{d:?}");
        let running = hits.cumsum(0).unwrap();
        assert_eq!(running.dtype(), DType::I32, "{d:?}");
        assert_eq!(running.to_vec::<i32>().unwrap(), [1, 1, 2], "{d:?}");
    }
}

#[test]
fn masks_take_the_other_operands_dtype() {
    for d in devices() {
        let x = f32s(&[1.0, -2.0, 3.0, -4.0, 5.0, -6.0], &[2, 3], &d);
        let m = x.gt_scalar(0.0).unwrap();
        // Both sides, with broadcasting (a [3] mask over [2, 3]).
        let kept = x.mul(&m).unwrap();
        assert_eq!(kept.dtype(), DType::F32);
        assert_eq!(
            kept.to_vec_f32().unwrap(),
            [1.0, -0.0, 3.0, -0.0, 5.0, -0.0]
        );
        let row = m.narrow(0, 0, 1).unwrap().reshape(&[3]).unwrap();
        assert_eq!(
            row.add(&x).unwrap().to_vec_f32().unwrap(),
            [2.0, -2.0, 4.0, -3.0, 5.0, -5.0]
        );
        assert_eq!(
            x.sub(&m).unwrap().to_vec_f32().unwrap(),
            [0.0, -2.0, 2.0, -4.0, 4.0, -6.0]
        );
        // With a scalar: F32.
        let half = m.mul_scalar(0.5).unwrap();
        assert_eq!(half.dtype(), DType::F32);
        assert_eq!(half.to_vec_f32().unwrap(), [0.5, 0.0, 0.5, 0.0, 0.5, 0.0]);
        // With I32: I32.
        let i = Tensor::from_vec(vec![10i32, 20, 30, 40, 50, 60], &[2, 3], &d).unwrap();
        let s = i.add(&m).unwrap();
        assert_eq!(s.dtype(), DType::I32);
        assert_eq!(s.to_vec::<i32>().unwrap(), [11, 20, 31, 40, 51, 60]);
        // With F16: F16.
        let h = x.cast(DType::F16).unwrap().mul(&m).unwrap();
        assert_eq!(h.dtype(), DType::F16);
        assert_eq!(
            h.cast(DType::F32).unwrap().to_vec_f32().unwrap(),
            [1.0, 0.0, 3.0, 0.0, 5.0, 0.0]
        );
        // Comparisons: mask with mask, and mask with a scalar.
        assert_eq!(m.eq(&m).unwrap().to_vec::<u32>().unwrap(), [1; 6]);
        assert_eq!(
            m.eq_scalar(1.0).unwrap().to_vec::<u32>().unwrap(),
            [1, 0, 1, 0, 1, 0]
        );
        assert_eq!(
            x.gt(&m).unwrap().to_vec::<u32>().unwrap(),
            [0, 0, 1, 0, 1, 0]
        );
    }
}

#[test]
fn gradient_flows_through_a_masked_product() {
    for d in devices() {
        let x = f32s(&[1.0, -2.0, 3.0], &[3], &d);
        x.requires_grad_(true).unwrap();
        let m = x.detach().gt_scalar(0.0).unwrap();
        x.mul(&m).unwrap().sum_all().unwrap().backward().unwrap();
        let g = x.grad().unwrap();
        assert_eq!(g.dtype(), DType::F32);
        assert_eq!(g.to_vec_f32().unwrap(), [1.0, 0.0, 1.0], "{d:?}");
    }
}

#[test]
fn mask_with_mask_arithmetic_stays_an_error() {
    for d in devices() {
        let m = f32s(&[1.0, -1.0], &[2], &d).gt_scalar(0.0).unwrap();
        let e = m.add(&m).unwrap_err().to_string();
        assert!(e.contains("add") && e.contains("uint32"), "{e}");
        // A mask cannot hold a float result in place.
        let x = f32s(&[0.5, 0.5], &[2], &d);
        assert!(m.add_(&x).is_err());
        assert_eq!(m.to_vec::<u32>().unwrap(), [1, 0]);
    }
}

/// `torch.where` promotes its value operands: I32 with F32 gives F32, two
/// I32 stay I32, a mask with I32 gives I32.
#[test]
fn where_promotes_its_operands() {
    for d in devices() {
        let m = f32s(&[1.0, -1.0, 2.0], &[3], &d).gt_scalar(0.0).unwrap();
        let i = Tensor::from_vec(vec![7i32, 8, 9], &[3], &d).unwrap();
        let x = f32s(&[0.5, 1.5, 2.5], &[3], &d);
        let mixed = Tensor::where_cond(&m, &i, &x).unwrap();
        assert_eq!(mixed.dtype(), DType::F32);
        assert_eq!(mixed.to_vec_f32().unwrap(), [7.0, 1.5, 9.0]);
        let ints = Tensor::where_cond(&m, &i, &i.neg().unwrap()).unwrap();
        assert_eq!(ints.dtype(), DType::I32);
        assert_eq!(ints.to_vec::<i32>().unwrap(), [7, -8, 9]);
        let with_mask = Tensor::where_cond(&m, &m, &i).unwrap();
        assert_eq!(with_mask.dtype(), DType::I32);
        assert_eq!(with_mask.to_vec::<i32>().unwrap(), [1, 8, 1]);
    }
}

/// `torch.logical_and/or/xor/not`, `any`, `all` and the mask operators,
/// with PyTorch 2.15's results (NaN and any nonzero are true; results are
/// U32 masks); `&` on integers (bitwise in PyTorch) is an error.
#[test]
fn logical_ops_follow_pytorch() {
    for d in devices() {
        let a = f32s(&[1.0, 0.0, f32::NAN, -2.0], &[4], &d);
        let b = Tensor::from_vec(vec![0i32, 0, 3, 1], &[4], &d).unwrap();
        let m = |t: Tensor| {
            assert_eq!(t.dtype(), DType::U32);
            t.to_vec::<u32>().unwrap()
        };
        assert_eq!(m(a.logical_and(&b).unwrap()), [0, 0, 1, 1], "{d:?}");
        assert_eq!(m(a.logical_or(&b).unwrap()), [1, 0, 1, 1]);
        assert_eq!(m(a.logical_xor(&b).unwrap()), [1, 0, 0, 0]);
        assert_eq!(m(a.logical_not().unwrap()), [0, 1, 0, 0]);
        let x = f32s(&[0.0, 1.0, 0.0, 0.0], &[2, 2], &d);
        assert_eq!(m(x.any_all().unwrap()), [1]);
        assert_eq!(m(x.all_all().unwrap()), [0]);
        assert_eq!(m(x.any(&[1], false).unwrap()), [1, 0]);
        assert_eq!(m(x.all(&[0], false).unwrap()), [0, 0]);
        let empty = f32s(&[], &[0], &d);
        assert_eq!(m(empty.any_all().unwrap()), [0]);
        assert_eq!(m(empty.all_all().unwrap()), [1]);
        // Operators on masks, with broadcasting.
        let p = x.gt_scalar(0.5).unwrap();
        let q = f32s(&[1.0, 1.0], &[2], &d).gt_scalar(0.5).unwrap();
        assert_eq!(m((&p & &q).unwrap()), [0, 1, 0, 0]);
        assert_eq!(m((&p | &q).unwrap()), [1, 1, 1, 1]);
        assert_eq!(m((&p ^ &q).unwrap()), [1, 0, 1, 1]);
        assert_eq!(m((!&p).unwrap()), [1, 0, 1, 1]);
        let e = (&b & &b).unwrap_err().to_string();
        assert!(e.contains('&') && e.contains("logical_and"), "{e}");
    }
}

/// `x.to(torch.bool)`: a cast to U32 (PyTorch's bool) is `x != 0`, NaN
/// and fractions included, from every dtype (it used to truncate: 0.5 gave
/// 0 and 2049 stayed 2049).
#[test]
fn cast_to_mask_is_nonzero_as_torch_bool() {
    for d in devices() {
        let x = f32s(
            &[0.0, -0.0, 0.5, -2.5, f32::NAN, f32::INFINITY, 3.0],
            &[7],
            &d,
        );
        let want = [0u32, 0, 1, 1, 1, 1, 1];
        for dt in [DType::F32, DType::F16, DType::BF16] {
            let m = x.cast(dt).unwrap().cast(DType::U32).unwrap();
            assert_eq!(m.dtype(), DType::U32);
            assert_eq!(m.to_vec::<u32>().unwrap(), want, "{dt:?} {d:?}");
        }
        assert_eq!(x.bool().unwrap().to_vec::<u32>().unwrap(), want, "{d:?}");
        let i = Tensor::from_vec(vec![0i32, 2049, -1], &[3], &d).unwrap();
        assert_eq!(
            i.bool().unwrap().to_vec::<u32>().unwrap(),
            [0, 1, 1],
            "{d:?}"
        );
    }
}
