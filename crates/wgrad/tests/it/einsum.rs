//! `Tensor::einsum` against PyTorch: every case of
//! `tests/fixtures/einsum.safetensors` (written by
//! `tests/fixtures/make_einsum_fixtures.py`: products, batched attention
//! shapes, traces and diagonals, ellipses with broadcasting, implicit
//! outputs, three operands, size-1 broadcast, 0-d and empty operands,
//! transposed views) on the CPU and the GPU: output and every operand's
//! gradient. Also the equations PyTorch rejects.

use crate::common::{Fixture, array, check_close, gpu, report};
use serde_json::Value;
use wgrad::{Device, Tensor};

const TOL: f32 = 1e-4;

fn run_case(fx: &Fixture, i: usize, meta: &Value, d: &Device) -> Result<(), String> {
    let eq = meta["equation"].as_str().expect("equation");
    let n = meta["operands"].as_u64().expect("operands") as usize;
    let transposed: Vec<u64> = meta["transposed"]
        .as_array()
        .map(|v| v.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default();
    let what = format!("case {i} {eq:?}");
    let leaves: Vec<Tensor> = (0..n)
        .map(|k| {
            fx.tensor_f32(&format!("{i}.in.{k}"), d)
                .with_requires_grad(true)
                .unwrap()
        })
        .collect();
    let operands: Vec<Tensor> = leaves
        .iter()
        .enumerate()
        .map(|(k, t)| {
            if transposed.contains(&(k as u64)) {
                t.transpose(-1, -2).unwrap()
            } else {
                t.clone()
            }
        })
        .collect();
    let refs: Vec<&Tensor> = operands.iter().collect();
    let out = Tensor::einsum(eq, &refs).map_err(|e| format!("{what}: {e}"))?;
    let want = fx.f32(&format!("{i}.out"));
    if out.shape() != want.shape.as_slice() {
        return Err(format!(
            "{what}: shape {:?}, PyTorch {:?}",
            out.shape(),
            want.shape
        ));
    }
    let mut errors = Vec::new();
    let vec = |t: &Tensor| t.to_vec::<f32>().unwrap();
    errors.extend(check_close(&format!("{what} output"), &vec(&out), &want.data, TOL).err());
    let up = fx.tensor_f32(&format!("{i}.up"), d);
    out.mul(&up)
        .and_then(|t| t.sum_all())
        .and_then(|l| l.backward())
        .map_err(|e| format!("{what}: backward: {e}"))?;
    for (k, leaf) in leaves.iter().enumerate() {
        let want = fx.f32(&format!("{i}.grad.{k}"));
        // A stored-transposed operand's gradient is PyTorch's, transposed.
        let got = match leaf.grad() {
            Some(g) if transposed.contains(&(k as u64)) => {
                vec(&g.transpose(-1, -2).unwrap().contiguous().unwrap())
            }
            Some(g) => vec(&g),
            None => vec![0.0; want.data.len()],
        };
        errors.extend(check_close(&format!("{what} grad {k}"), &got, &want.data, TOL).err());
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("\n"))
    }
}

fn run_all(d: &Device, what: &str) {
    let fx = Fixture::load("einsum.safetensors");
    let cases = array(&fx.meta, "cases");
    let failures: Vec<String> = cases
        .iter()
        .enumerate()
        .filter_map(|(i, m)| run_case(&fx, i, m, d).err())
        .collect();
    report(what, cases.len(), &failures);
}

#[test]
fn einsum_matches_pytorch_on_cpu() {
    run_all(&Device::Cpu, "einsum on the CPU");
}

#[test]
fn einsum_matches_pytorch_on_gpu() {
    let Some(d) = gpu() else { return };
    run_all(&d, "einsum on the GPU");
}

#[test]
fn einsum_rejects_bad_equations() {
    let d = Device::Cpu;
    let a = Tensor::randn(&[2, 3], &d).unwrap();
    let b = Tensor::randn(&[4, 5], &d).unwrap();
    let err = |eq: &str, ops: &[&Tensor]| Tensor::einsum(eq, ops).expect_err(eq).to_string();
    let e = err("ij,jk->ik", &[&a]);
    assert!(
        e.contains("einsum") && e.contains("2 operands but 1"),
        "{e}"
    );
    let e = err("ij,jk->ik", &[&a, &b]);
    assert!(e.contains("'j'") && e.contains("size"), "{e}");
    let e = err("ijk->i", &[&a]);
    assert!(e.contains("3 subscripts but 2 dims"), "{e}");
    let e = err("ij->iz", &[&a]);
    assert!(e.contains("'z'") && e.contains("does not appear"), "{e}");
    let e = err("ij->ii", &[&a]);
    assert!(e.contains("more than once"), "{e}");
    let e = err("i1->i", &[&a]);
    assert!(e.contains("invalid subscript"), "{e}");
    let e = err("ii->i", &[&a]);
    assert!(
        e.contains("repeated") && e.contains("2") && e.contains("3"),
        "{e}"
    );
    let e = err("ij->...", &[&a]);
    assert!(e.contains("ellipsis"), "{e}");
}
