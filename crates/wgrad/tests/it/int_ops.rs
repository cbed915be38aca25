//! Integer arithmetic, floor division and remainder through the public
//! API: the PyTorch cases of `tests/fixtures/int_ops.safetensors` (written
//! by `tests/fixtures/make_int_fixtures.py`) replayed on the CPU and the
//! GPU through `fixtures_ops::run_file`, plus PyTorch's errors (integer
//! division by zero: at once on the CPU, at the next readback on the GPU
//! through the device fault), type promotion, gradcheck of remainder, and
//! the `%` operator.

use serde_json::Value;
use wgrad::{BinaryOp, DType, Device, Result, Tensor};

use crate::common::{Fixture, array, gpu};

fn str_arg<'a>(args: &'a Value, key: &str) -> &'a str {
    args[key]
        .as_str()
        .unwrap_or_else(|| panic!("arg {key}: {args}"))
}

fn f32_arg(args: &Value, key: &str) -> f32 {
    args[key]
        .as_f64()
        .unwrap_or_else(|| panic!("arg {key}: {args}")) as f32
}

fn on_left(args: &Value) -> bool {
    args["scalar_on_left"].as_bool().unwrap_or(false)
}

fn binary_op(name: &str) -> BinaryOp {
    BinaryOp::ALL
        .into_iter()
        .find(|op| op.name() == name)
        .unwrap_or_else(|| panic!("unknown binary op {name}"))
}

/// The replay of this file's ops (`fixtures_ops::apply` falls back to it).
pub(crate) fn apply(op: &str, args: &Value, x: &[Tensor]) -> Option<Result<Tensor>> {
    Some(match op {
        "floor_divide" => x[0].div_floor(&x[1]),
        "remainder" => x[0].remainder(&x[1]),
        "int_scalar" => x[0].binary_scalar(
            binary_op(str_arg(args, "fn")),
            f32_arg(args, "scalar"),
            on_left(args),
        ),
        "floor_divide_scalar" => {
            x[0].binary_scalar(BinaryOp::FloorDiv, f32_arg(args, "scalar"), on_left(args))
        }
        "remainder_scalar" => {
            x[0].binary_scalar(BinaryOp::Remainder, f32_arg(args, "scalar"), on_left(args))
        }
        "inplace_view_writes" => (|| {
            let a = x[0].contiguous()?;
            a.narrow(1, 1, 2)?.mul_scalar_(-2.0)?;
            a.transpose(0, 1)?.narrow(0, 0, 1)?.add_scalar_(5.0)?;
            a.narrow(0, 2, 1)?.clamp_(Some(-0.5), Some(0.5))?;
            Ok(a)
        })(),
        "inplace_copy" => (|| {
            x[0].narrow(0, 1, 2)?.copy_(&x[1])?;
            Ok(x[0].clone())
        })(),
        "inplace_int_writes" => (|| {
            let a = &x[0];
            a.add_scalar_(3.0)?.mul_(&x[1])?.sub_(&x[1])?;
            a.clamp_(Some(-40.0), Some(40.0))?;
            a.narrow(1, 0, 2)?.fill_(7.0)?;
            Ok(a.clone())
        })(),
        _ => return None,
    })
}

#[test]
fn int_fixture_covers_the_ops() {
    let fx = Fixture::load("int_ops.safetensors");
    let ops: Vec<&str> = array(&fx.meta, "cases")
        .iter()
        .map(|c| c["op"].as_str().expect("op"))
        .collect();
    for op in [
        "add",
        "sub",
        "mul",
        "div",
        "maximum",
        "minimum",
        "floor_divide",
        "remainder",
        "int_scalar",
        "sum",
        "compare",
        "floor_divide_scalar",
        "remainder_scalar",
        "inplace_view_writes",
        "inplace_copy",
        "inplace_int_writes",
    ] {
        assert!(ops.contains(&op), "no PyTorch case for {op}");
    }
}

#[test]
fn int_ops_match_pytorch_on_cpu() {
    crate::fixtures_ops::run_file(
        "int_ops.safetensors",
        50,
        &Device::Cpu,
        "int ops on the CPU",
    );
}

#[test]
fn int_ops_match_pytorch_on_gpu() {
    let Some(device) = gpu() else { return };
    crate::fixtures_ops::run_file("int_ops.safetensors", 50, &device, "int ops on the GPU");
}

fn devices() -> Vec<Device> {
    let mut all = vec![Device::Cpu];
    all.extend(gpu());
    all
}

#[test]
fn int_results_keep_i32_and_promote_like_pytorch() {
    for d in devices() {
        let a = Tensor::from_vec(vec![7i32, -7, 9], &[3], &d).unwrap();
        let b = Tensor::from_vec(vec![2i32, 2, -4], &[3], &d).unwrap();
        let q = a.div_floor(&b).unwrap();
        assert_eq!(q.dtype(), DType::I32);
        assert_eq!(q.to_vec::<i32>().unwrap(), vec![3, -4, -3], "{d}");
        assert_eq!((&a % &b).unwrap().to_vec::<i32>().unwrap(), vec![1, 1, -3]);
        assert_eq!(
            a.floor_divide(&b).unwrap().to_vec::<i32>().unwrap(),
            vec![3, -4, -3]
        );
        // True division and mixed operands give F32.
        let t = (&a / &b).unwrap();
        assert_eq!(t.dtype(), DType::F32);
        assert_eq!(t.to_vec_f32().unwrap(), vec![3.5, -3.5, -2.25]);
        let f = Tensor::from_vec(vec![0.5f32, 0.5, 0.5], &[3], &d).unwrap();
        let m = a.mul(&f).unwrap();
        assert_eq!(m.dtype(), DType::F32);
        assert_eq!(m.to_vec_f32().unwrap(), vec![3.5, -3.5, 4.5]);
        // Scalars: a whole number keeps I32, a fraction promotes.
        assert_eq!(a.add_scalar(1.0).unwrap().dtype(), DType::I32);
        assert_eq!(a.add_scalar(0.5).unwrap().dtype(), DType::F32);
        assert_eq!(a.div_scalar(2.0).unwrap().dtype(), DType::F32);
        // pow, as PyTorch's int pow: `a ** 2` and `a ** b` stay I32; a
        // negative exponent scalar gives the float power.
        let p2 = a.pow_scalar(2.0).unwrap();
        assert_eq!(p2.dtype(), DType::I32);
        assert_eq!(p2.to_vec::<i32>().unwrap(), vec![49, 49, 81], "{d}");
        let pb = a.pow(&b).unwrap();
        assert_eq!(pb.dtype(), DType::I32);
        assert_eq!(pb.to_vec::<i32>().unwrap(), vec![49, 49, 0], "{d}");
        assert_eq!(a.pow_scalar(-1.0).unwrap().dtype(), DType::F32);
        let s = a.sum_all().unwrap();
        assert_eq!(
            (s.dtype(), s.to_vec::<i32>().unwrap()),
            (DType::I32, vec![9])
        );
        // Index arithmetic stays on the device: row * width + col.
        let rows = Tensor::from_vec(vec![0i32, 1, 2], &[3, 1], &d).unwrap();
        let cols = Tensor::from_vec(vec![0i32, 1], &[2], &d).unwrap();
        let flat = rows.mul_scalar(2.0).unwrap().add(&cols).unwrap();
        assert_eq!(flat.to_vec::<i32>().unwrap(), vec![0, 1, 2, 3, 4, 5]);
    }
}

#[test]
fn int_division_by_zero_is_pytorchs_error() {
    let a = Tensor::from_vec(vec![4i32, 5], &[2], &Device::Cpu).unwrap();
    let z = Tensor::from_vec(vec![1i32, 0], &[2], &Device::Cpu).unwrap();
    for e in [
        a.div_floor(&z).unwrap_err(),
        a.remainder(&z).unwrap_err(),
        a.remainder_scalar(0.0).unwrap_err(),
        a.binary_scalar(BinaryOp::FloorDiv, 3.0, true)
            .and_then(|_| z.binary_scalar(BinaryOp::FloorDiv, 3.0, true))
            .unwrap_err(),
    ] {
        assert!(e.to_string().contains("ZeroDivisionError"), "{e}");
    }
    // True division of integers by zero is float division: inf, no error.
    let inf = (&a / &z).unwrap().to_vec_f32().unwrap();
    assert_eq!(inf[1], f32::INFINITY);
    // A device of its own: the fault is handed to whoever syncs the device
    // next, which on the shared one may be another test.
    let Some(d) = wgrad_test_support::own_gpu().map(Device::Gpu) else {
        return;
    };
    let a = a.to(&d).unwrap();
    let z = z.to(&d).unwrap();
    // The GPU cannot look without a readback: the op records, and the
    // next readback reports the device fault.
    let q = a.div_floor(&z).unwrap();
    let e = q.to_vec::<i32>().unwrap_err();
    assert!(
        e.to_string().contains("floor_divide") && e.to_string().contains("ZeroDivisionError"),
        "{e}"
    );
    assert_eq!(
        a.to_vec::<i32>().unwrap(),
        vec![4, 5],
        "the fault is reported once"
    );
    let e = a.remainder_scalar(0.0).unwrap_err();
    assert!(e.to_string().contains("ZeroDivisionError"), "{e}");
}

#[test]
fn int_bad_inputs_are_errors() {
    for d in devices() {
        let a = Tensor::from_vec(vec![1i32, 2], &[2], &d).unwrap();
        let m = a.gt_scalar(1.0).unwrap(); // U32 mask: only mask (op) mask is refused
        let e = m.add(&m).unwrap_err().to_string();
        assert!(e.contains("add") && e.contains("uint32"), "{e}");
        let b = Tensor::from_vec(vec![1i32, 2, 3], &[3], &d).unwrap();
        let e = a.remainder(&b).unwrap_err().to_string();
        assert!(
            e.contains("remainder") && e.contains("[2]") && e.contains("[3]"),
            "{e}"
        );
        let e = a.sum(&[1], false).unwrap_err().to_string();
        assert!(e.contains("sum"), "{e}");
    }
}

#[test]
fn remainder_and_floor_divide_gradients() {
    for d in devices() {
        let a = Tensor::from_vec(vec![5.5f32, -3.25, 7.0, 0.4], &[4], &d)
            .unwrap()
            .with_requires_grad(true)
            .unwrap();
        let b = Tensor::from_vec(vec![2.0f32, 1.5, -2.5, 0.3], &[4], &d)
            .unwrap()
            .with_requires_grad(true)
            .unwrap();
        a.remainder(&b)
            .unwrap()
            .sum_all()
            .unwrap()
            .backward()
            .unwrap();
        assert_eq!(a.grad().unwrap().to_vec_f32().unwrap(), vec![1.0; 4]);
        // -floor(a / b)
        assert_eq!(
            b.grad().unwrap().to_vec_f32().unwrap(),
            vec![-2.0, 3.0, 3.0, -1.0]
        );
        a.zero_grad();
        b.zero_grad();
        a.div_floor(&b)
            .unwrap()
            .sum_all()
            .unwrap()
            .backward()
            .unwrap();
        assert_eq!(a.grad().unwrap().to_vec_f32().unwrap(), vec![0.0; 4]);
        assert_eq!(b.grad().unwrap().to_vec_f32().unwrap(), vec![0.0; 4]);
    }
    // Finite differences, away from the jumps of remainder.
    let leaf = |v: Vec<f32>| {
        Tensor::from_vec(v, &[4], &Device::Cpu)
            .and_then(|t| t.with_requires_grad(true))
            .unwrap()
    };
    let a = leaf(vec![5.5, -3.25, 7.1, 0.45]);
    let b = leaf(vec![2.0, 1.5, -2.5, 0.3]);
    let report = wgrad::gradcheck(
        |x| x[0].remainder(&x[1])?.sum_all(),
        &[a.clone(), b.clone()],
        Default::default(),
    )
    .unwrap();
    assert!(report.passed(), "{report:?}");
    let report = wgrad::gradcheck(
        |x| x[0].remainder_scalar(1.75)?.sum_all(),
        &[a],
        Default::default(),
    )
    .unwrap();
    assert!(report.passed(), "{report:?}");
}
