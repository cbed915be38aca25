//! Replays `tests/fixtures/sort.safetensors` (written by
//! `tests/fixtures/make_sort_fixtures.py` with PyTorch): sort, argsort,
//! topk, cumsum and cumprod, with ties, NaN, negative dims, non-contiguous inputs,
//! long rows, and their gradients, on the CPU and the GPU. Sorts and indices
//! must match exactly (stable sorts have one answer); scans within 1e-4.

use serde_json::Value;
use wgrad::{DType, Device, Result, Tensor};

use crate::common::{Fixture, array, check_close, gpu, report};

/// Tolerance of scans (PyTorch's CPU accumulates them in f64).
const SUM_TOL: f32 = 1e-4;

fn view(t: &Tensor, spec: &Value) -> Result<Tensor> {
    let spec = spec.as_array().expect("a view is a list");
    let int = |i: usize| spec[i].as_i64().expect("view arg") as isize;
    match spec[0].as_str().expect("view name") {
        "transpose" => t.transpose(int(1), int(2)),
        "narrow" => t.narrow(int(1), int(2) as usize, int(3) as usize),
        "permute" => {
            let dims: Vec<isize> = spec[1]
                .as_array()
                .expect("permute dims")
                .iter()
                .map(|d| d.as_i64().expect("dim") as isize)
                .collect();
            t.permute(&dims)
        }
        other => panic!("unknown view {other}"),
    }
}

/// `(values, indices)` of the case's op; one of them is `None` for
/// argsort (indices only) and the scans (values only).
fn apply(op: &str, args: &Value, x: &Tensor) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let dim = args["dim"].as_i64().expect("dim") as isize;
    let flag = |k: &str| args[k].as_bool().expect("flag");
    Ok(match op {
        "sort" => {
            let (v, i) = x.sort(dim, flag("descending"))?;
            (Some(v), Some(i))
        }
        "topk" => {
            let k = args["k"].as_u64().expect("k") as usize;
            let (v, i) = x.topk(k, dim, flag("largest"), true)?;
            (Some(v), Some(i))
        }
        "argsort" => (None, Some(x.argsort(dim, flag("descending"))?)),
        "cumsum" => (Some(x.cumsum(dim)?), None),
        "cumprod" => (Some(x.cumprod(dim)?), None),
        other => panic!("no replay for op {other}"),
    })
}

fn compare(
    fx: &Fixture,
    what: &str,
    key: &str,
    got: &Tensor,
    tol: f32,
) -> std::result::Result<(), String> {
    let err = |e: wgrad::Error| format!("{what}: {e}");
    if got.dtype() == DType::I32 {
        let want = fx.i32(key);
        let data = got.to_vec::<i32>().map_err(err)?;
        if got.shape() != want.shape || data != want.data {
            return Err(format!(
                "{what}: wgrad {:?} {data:?}, PyTorch {:?} {:?}",
                got.shape(),
                want.shape,
                want.data
            ));
        }
        return Ok(());
    }
    let want = fx.f32(key);
    if got.shape() != want.shape {
        return Err(format!(
            "{what}: shape {:?}, PyTorch {:?}",
            got.shape(),
            want.shape
        ));
    }
    check_close(what, &got.to_vec_f32().map_err(err)?, &want.data, tol)
}

fn run_case(fx: &Fixture, case: &Value, device: &Device) -> std::result::Result<(), String> {
    let name = case["name"].as_str().expect("case name");
    let op = case["op"].as_str().expect("op");
    let err = |e: wgrad::Error| format!("{name} ({op}): wgrad error: {e}");
    let grad = case["grad"].as_bool().expect("grad");
    let key = format!("{name}.in");
    let leaf = if case["dtype"] == "f32" {
        fx.tensor_f32(&key, device)
            .with_requires_grad(grad)
            .map_err(err)?
    } else {
        fx.tensor_i32(&key, device)
    };
    let mut x = leaf.clone();
    for spec in array(case, "views") {
        x = view(&x, spec).map_err(err)?;
    }
    let (values, indices) = apply(op, &case["args"], &x).map_err(err)?;
    let tol = if op.starts_with("cum") { SUM_TOL } else { 0.0 };
    let mut failures = Vec::new();
    let both = values.is_some() && indices.is_some();
    if let Some(v) = &values {
        let k = if both { "values" } else { "out" };
        if let Err(e) = compare(
            fx,
            &format!("{name} ({op}) {k}"),
            &format!("{name}.{k}"),
            v,
            tol,
        ) {
            failures.push(e);
        }
    }
    if let Some(i) = &indices {
        let k = if both { "indices" } else { "out" };
        if let Err(e) = compare(
            fx,
            &format!("{name} ({op}) {k}"),
            &format!("{name}.{k}"),
            i,
            0.0,
        ) {
            failures.push(e);
        }
    }
    if grad && let Some(v) = &values {
        let upstream = fx.tensor_f32(&format!("{name}.upstream"), device);
        v.backward_with(&upstream).map_err(err)?;
        match leaf.grad() {
            Some(g) => {
                if let Err(e) = compare(
                    fx,
                    &format!("{name} ({op}) grad"),
                    &format!("{name}.grad"),
                    &g,
                    tol,
                ) {
                    failures.push(e);
                }
            }
            None => failures.push(format!("{name} ({op}): no gradient")),
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

fn run_all(device: &Device, what: &str) {
    let fx = Fixture::load("sort.safetensors");
    let cases = array(&fx.meta, "cases");
    assert!(
        cases.len() >= 30,
        "sort.safetensors has only {} cases",
        cases.len()
    );
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| run_case(&fx, case, device).err())
        .collect();
    report(what, cases.len(), &failures);
}

#[test]
fn sort_ops_match_pytorch_on_cpu() {
    run_all(&Device::Cpu, "sort ops on the CPU");
}

#[test]
fn sort_ops_match_pytorch_on_gpu() {
    let Some(device) = gpu() else { return };
    run_all(&device, "sort ops on the GPU");
}
