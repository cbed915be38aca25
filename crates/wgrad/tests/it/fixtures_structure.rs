//! The structure and indexing ops against PyTorch: replays every case of
//! `tests/fixtures/structure.safetensors` (written by
//! `tests/fixtures/make_structure_fixtures.py`) on the CPU and the GPU
//! through `fixtures_ops::run_file`: forward outputs and the gradient of
//! every float input. Ops with several outputs (split, chunk, unbind) are
//! compared joined, and their part shapes against PyTorch's.

use crate::common::{Fixture, array, gpu};
use serde_json::Value;
use wgrad::{Device, Error, Result, Tensor};

fn int(args: &Value, key: &str) -> i64 {
    args[key]
        .as_i64()
        .unwrap_or_else(|| panic!("arg {key} is not an integer: {args}"))
}

fn ints(args: &Value, key: &str) -> Vec<i64> {
    array(args, key)
        .iter()
        .map(|v| v.as_i64().unwrap_or_else(|| panic!("{key}: {v}")))
        .collect()
}

fn usizes(args: &Value, key: &str) -> Vec<usize> {
    ints(args, key).into_iter().map(|v| v as usize).collect()
}

fn isizes(args: &Value, key: &str) -> Vec<isize> {
    ints(args, key).into_iter().map(|v| v as isize).collect()
}

/// An optional slice bound (`null` is Python's `None`).
fn bound(args: &Value, key: &str) -> Option<isize> {
    args[key].as_i64().map(|v| v as isize)
}

/// Flattens and joins the parts after checking their shapes against
/// PyTorch's (`args["part_shapes"]`).
fn joined(op: &'static str, args: &Value, parts: Result<Vec<Tensor>>) -> Result<Tensor> {
    let parts = parts?;
    let got: Vec<Vec<usize>> = parts.iter().map(|p| p.shape().to_vec()).collect();
    let want: Vec<Vec<usize>> = array(args, "part_shapes")
        .iter()
        .map(|s| {
            s.as_array()
                .expect("part shape")
                .iter()
                .map(|d| d.as_u64().expect("dim") as usize)
                .collect()
        })
        .collect();
    if got != want {
        return Err(Error::invalid(
            op,
            format!("part shapes {got:?}, PyTorch {want:?}"),
        ));
    }
    let flat = parts
        .iter()
        .map(|p| p.reshape(&[-1]))
        .collect::<Result<Vec<_>>>()?;
    Tensor::cat(&flat.iter().collect::<Vec<_>>(), 0)
}

/// The replay of one structure case, or `None` for an op of another family.
pub(crate) fn apply(op: &str, args: &Value, x: &[Tensor]) -> Option<Result<Tensor>> {
    let dim = || int(args, "dim") as isize;
    Some(match op {
        "masked_fill" => x[0].masked_fill(&x[1], args["value"].as_f64().expect("value")),
        "tril" => x[0].tril(int(args, "diagonal")),
        "triu" => x[0].triu(int(args, "diagonal")),
        "stack" => Tensor::stack(&x.iter().collect::<Vec<_>>(), dim()),
        "split" => joined(
            "split",
            args,
            x[0].split(int(args, "split_size") as usize, dim()),
        ),
        "split_with_sizes" => joined(
            "split_with_sizes",
            args,
            x[0].split_with_sizes(&usizes(args, "sizes"), dim()),
        ),
        "chunk" => joined(
            "chunk",
            args,
            x[0].chunk(int(args, "chunks") as usize, dim()),
        ),
        "unbind" => joined("unbind", args, x[0].unbind(dim())),
        "select" => x[0].select(dim(), int(args, "index") as isize),
        "slice" => x[0].slice(
            dim(),
            bound(args, "start"),
            bound(args, "end"),
            int(args, "step") as usize,
        ),
        "repeat" => x[0].repeat(&usizes(args, "repeats")),
        "flip" => x[0].flip(&isizes(args, "dims")),
        "roll" => x[0].roll(&isizes(args, "shifts"), &isizes(args, "dims")),
        "index_add" => x[0].index_add(dim(), &x[1], &x[2]),
        "scatter_add" => x[0].scatter_add(dim(), &x[1], &x[2]),
        "scatter" => x[0].scatter(dim(), &x[1], &x[2]),
        "index_put" => x[0].index_put(
            &x[1],
            &x[2],
            args["accumulate"].as_bool().expect("accumulate"),
        ),
        "masked_select" => x[0].masked_select(&x[1]),
        _ => return None,
    })
}

/// Every op above has at least one case.
#[test]
fn structure_fixture_covers_every_op() {
    let fx = Fixture::load("structure.safetensors");
    let ops: Vec<&str> = array(&fx.meta, "cases")
        .iter()
        .map(|c| c["op"].as_str().expect("op"))
        .collect();
    for op in [
        "masked_fill",
        "tril",
        "triu",
        "stack",
        "split",
        "split_with_sizes",
        "chunk",
        "unbind",
        "select",
        "slice",
        "repeat",
        "flip",
        "roll",
        "index_add",
        "scatter_add",
        "scatter",
        "index_put",
        "masked_select",
    ] {
        assert!(ops.contains(&op), "no PyTorch case for {op}");
    }
}

#[test]
fn structure_ops_match_pytorch_on_cpu() {
    crate::fixtures_ops::run_file(
        "structure.safetensors",
        60,
        &Device::Cpu,
        "structure ops on the CPU",
    );
}

#[test]
fn structure_ops_match_pytorch_on_gpu() {
    let Some(device) = gpu() else { return };
    crate::fixtures_ops::run_file(
        "structure.safetensors",
        60,
        &device,
        "structure ops on the GPU",
    );
}
