//! Round 4 of the PyTorch comparison (tests/pytorch_diff/README.md): the
//! API-level semantics the op-level rounds left out, with PyTorch's answers
//! hard-coded or read from `tests/fixtures/print_repr.json` (written by
//! `tests/fixtures/make_print_fixtures.py`): `print(tensor)` of every
//! dtype, and `x.grad = g` refusing another shape, dtype or device.

use serde_json::Value;
use wgrad::{DType, Device, Error, Tensor};

use crate::common::gpu;

fn number(v: &Value) -> f64 {
    match v {
        Value::String(s) => s.parse().unwrap_or_else(|_| panic!("value {s}")),
        other => other.as_f64().unwrap_or_else(|| panic!("value {other}")),
    }
}

/// The tensor of one `print_repr.json` case on `device`.
fn printed_case(dtype: &str, values: &[f64], shape: &[usize], device: &Device) -> Tensor {
    match dtype {
        "i32" => Tensor::from_vec(values.iter().map(|&v| v as i32).collect(), shape, device),
        "bool" => Tensor::from_vec(values.iter().map(|&v| v as u32).collect(), shape, device),
        _ => {
            let f = Tensor::from_vec(values.iter().map(|&v| v as f32).collect(), shape, device)
                .unwrap();
            match dtype {
                "f16" => f.cast(DType::F16),
                "bf16" => f.cast(DType::BF16),
                _ => Ok(f),
            }
        }
    }
    .unwrap()
}

/// `print(tensor)`: PyTorch's column width counts only the nonzero finite
/// values of a float tensor (`tensor([nan, 1.])`, `tensor([0., -0.])`),
/// rows of a nested tensor wrap at (80 - indent) / (width + 2) elements,
/// and masks print as `True`/`False` (wgrad printed `tensor([nan,  1.])`,
/// wrapped 2-d rows one element early and printed masks as
/// `tensor([1, 0], dtype=uint32)`).
#[test]
fn print_matches_pytorch_repr() {
    let path = format!(
        "{}/../../tests/fixtures/print_repr.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}; run tests/fixtures/make_print_fixtures.py"));
    let cases: Vec<(String, Vec<Value>, Vec<usize>, String)> = serde_json::from_str(&text).unwrap();
    assert!(cases.len() >= 50, "{} cases", cases.len());
    let devices: Vec<Device> = std::iter::once(Device::Cpu).chain(gpu()).collect();
    for device in &devices {
        for (dtype, values, shape, want) in &cases {
            let values: Vec<f64> = values.iter().map(number).collect();
            let t = printed_case(dtype, &values, shape, device);
            let mut got = t.to_string();
            if !matches!(device, Device::Cpu) {
                // PyTorch's order: `device='cuda:0', dtype=torch.int32`.
                let device_part = format!(", device='{device}'");
                assert!(got.contains(&device_part), "{got}");
                got = got.replace(&device_part, "");
            }
            assert_eq!(&got, want, "{dtype} {shape:?} on {device}");
        }
    }
}

#[test]
fn u32_data_that_is_not_a_mask_prints_as_numbers() {
    let t = Tensor::from_vec(vec![0u32, 5, 1], &[3], &Device::Cpu).unwrap();
    assert_eq!(t.to_string(), "tensor([0, 5, 1], dtype=uint32)");
    let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2], &Device::Cpu).unwrap();
    let mask = x.gt_scalar(1.5).unwrap();
    assert_eq!(mask.to_string(), "tensor([False,  True])");
}

/// `x.grad = g` is PyTorch's error when `g` has another size, dtype or
/// device; wgrad's `set_grad` checked only the shape and stored an I32 or
/// F16 gradient on an F32 leaf (an optimizer step then failed or
/// promoted).
#[test]
fn set_grad_refuses_another_dtype_or_device() {
    for d in std::iter::once(Device::Cpu).chain(gpu()) {
        let w = Tensor::from_vec(vec![1.0f32, 2.0], &[2], &d)
            .unwrap()
            .with_requires_grad(true)
            .unwrap();
        let ints = Tensor::from_vec(vec![1i32, 2], &[2], &d).unwrap();
        let err = w.set_grad(Some(ints)).unwrap_err();
        assert!(
            matches!(
                err,
                Error::DTypeMismatch {
                    op: "set_grad",
                    expected: DType::F32,
                    got: DType::I32
                }
            ),
            "{err}"
        );
        let half = w.detach().cast(DType::F16).unwrap();
        assert!(matches!(
            w.set_grad(Some(half)),
            Err(Error::DTypeMismatch { .. })
        ));
        let long = Tensor::zeros(&[3], &d).unwrap();
        assert!(matches!(
            w.set_grad(Some(long)),
            Err(Error::ShapeMismatch { .. })
        ));
        assert!(w.grad().is_none(), "refused gradients are not stored");
        w.set_grad(Some(Tensor::ones(&[2], &d).unwrap())).unwrap();
        assert_eq!(w.grad().unwrap().to_vec_f32().unwrap(), [1.0, 1.0]);
    }
    if let Some(g) = gpu() {
        let w = Tensor::zeros(&[2], &Device::Cpu).unwrap();
        let err = w
            .set_grad(Some(Tensor::ones(&[2], &g).unwrap()))
            .unwrap_err();
        assert!(matches!(err, Error::DeviceMismatch { .. }), "{err}");
    }
}

/// clip_grad_norm_ keeps each gradient's dtype (a 0-d F16 gradient times
/// the F32 coefficient would otherwise promote, which set_grad refuses).
#[test]
fn clip_grad_norm_keeps_a_0d_half_gradient_half() {
    let w = Tensor::from_vec(vec![3.0f32], &[], &Device::Cpu)
        .unwrap()
        .cast(DType::F16)
        .unwrap()
        .with_requires_grad(true)
        .unwrap();
    w.square().unwrap().backward().unwrap(); // grad 6
    let norm = wgrad::optim::clip_grad_norm_(std::slice::from_ref(&w), 1.0, 2.0).unwrap();
    assert_eq!(norm.to_vec_f32().unwrap(), [6.0]);
    let g = w.grad().unwrap();
    assert_eq!(g.dtype(), DType::F16);
    assert!((g.to_vec_f32().unwrap()[0] - 1.0).abs() < 1e-3);
}
