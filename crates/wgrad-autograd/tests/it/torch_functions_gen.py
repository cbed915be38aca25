"""Generates the PyTorch expectations of torch_functions_cases.rs.

Run from the repository root: python3 crates/wgrad-autograd/tests/it/torch_functions_gen.py
(PyTorch 2.15 on the CPU). Every case runs `fn` on float32 inputs that
require grad, then backward of `(out * w).sum()` with fixed weights `w`.
"""
import math
import torch

torch.manual_seed(0)
nan, inf = float("nan"), float("inf")
T = torch.tensor


def lit(v):
    if isinstance(v, bool):
        return "1.0" if v else "0.0"
    v = float(v)
    if math.isnan(v):
        return "f64::NAN"
    if math.isinf(v):
        return "f64::INFINITY" if v > 0 else "f64::NEG_INFINITY"
    return repr(v)


def lit32(v):
    v = float(v)
    if math.isnan(v):
        return "f32::NAN"
    if math.isinf(v):
        return "f32::INFINITY" if v > 0 else "f32::NEG_INFINITY"
    return repr(v)


def vec(values, f=lit):
    return "vec![" + ", ".join(f(v) for v in values) + "]"


DT = {torch.float32: "F32", torch.int32: "I32", torch.int64: "I32", torch.bool: "U32",
      torch.float16: "F16", torch.bfloat16: "BF16"}

cases = []


def case(name, inputs, fn, rust, tol=1e-6, grad=True):
    ts = []
    for x in inputs:
        x = x.clone()
        if x.dtype.is_floating_point and grad:
            x.requires_grad_(True)
        ts.append(x)
    out = fn(*ts)
    w = torch.linspace(0.5, 1.5, max(out.numel(), 1))[: out.numel()].reshape(out.shape)
    grads = [None] * len(ts)
    if out.requires_grad:
        (out * w).sum().backward()
        grads = [t.grad if t.requires_grad else None for t in ts]
    ins = ", ".join(
        f"In {{ data: {vec(x.detach().reshape(-1).tolist(), lit32)}, shape: vec!{list(x.shape)}, dtype: DType::{DT[x.dtype]} }}"
        for x in ts)
    gs = ", ".join("None" if g is None else f"Some({vec(g.reshape(-1).tolist())})" for g in grads)
    o = out.detach()
    cases.append(
        f"""        Case {{
            name: {name!r},
            inputs: vec![{ins}],
            f: |x, d| {rust},
            out: {vec(o.reshape(-1).float().tolist() if o.dtype != torch.bool else o.reshape(-1).tolist())},
            out_shape: vec!{list(o.shape)},
            out_dtype: DType::{DT[o.dtype]},
            weights: {vec(w.reshape(-1).tolist())},
            grads: vec![{gs}],
            tol: {tol!r},
        }},""".replace("'", '"'))


f = torch.float32
a23 = torch.randn(2, 3)
a34 = torch.randn(3, 4)
a3 = torch.randn(3)
a4 = torch.randn(4)
special = T([1.5, nan, inf, -inf, -0.0, 0.0, -2.0, 3e38])

# predicates
case("isnan", [special], lambda x: torch.isnan(x), "x[0].isnan()")
case("isinf", [special], lambda x: torch.isinf(x), "x[0].isinf()")
case("isfinite", [special], lambda x: torch.isfinite(x), "x[0].isfinite()")
case("isnan int", [T([1, 2], dtype=torch.int32)], lambda x: torch.isnan(x), "x[0].isnan()")
case("isfinite 0-d", [T(inf)], lambda x: torch.isfinite(x), "x[0].isfinite()")
case("nan_to_num defaults", [special], lambda x: torch.nan_to_num(x), "x[0].nan_to_num(0.0, None, None)")
case("nan_to_num given", [special], lambda x: torch.nan_to_num(x, 1.0, 2.0, -3.0), "x[0].nan_to_num(1.0, Some(2.0), Some(-3.0))")
case("nan_to_num f16", [special], lambda x: torch.nan_to_num(x.half()).float(), "x[0].half()?.nan_to_num(0.0, None, None)?.float()")
case("nan_to_num int", [T([1, -2], dtype=torch.int32)], lambda x: torch.nan_to_num(x), "x[0].nan_to_num(0.0, None, None)")

# products
case("outer", [a3, a4], lambda a, b: torch.outer(a, b), "x[0].outer(&x[1])", 1e-6)
case("dot", [a4, torch.randn(4)], lambda a, b: torch.dot(a, b), "x[0].dot(&x[1])", 1e-5)
case("dot empty", [torch.zeros(0), torch.zeros(0)], lambda a, b: torch.dot(a, b), "x[0].dot(&x[1])")
case("dot int", [T([1, 2, 3], dtype=torch.int32), T([4, -5, 6], dtype=torch.int32)], lambda a, b: torch.dot(a, b), "x[0].dot(&x[1])")
case("mv", [a34, a4], lambda m, v: torch.mv(m, v), "x[0].mv(&x[1])", 1e-5)
case("mv transposed", [torch.randn(4, 3), a4], lambda m, v: torch.mv(m.t(), v), "x[0].t()?.mv(&x[1])", 1e-5)
case("bmm", [torch.randn(2, 3, 4), torch.randn(2, 4, 2)], lambda a, b: torch.bmm(a, b), "x[0].bmm(&x[1])", 1e-5)
case("addmm", [torch.randn(3), a23, torch.randn(3, 3)], lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=2.0), "x[0].addmm(&x[1], &x[2], 0.5, 2.0)", 1e-5)
case("addmm defaults", [torch.randn(2, 3), a23, torch.randn(3, 3)], lambda c, a, b: torch.addmm(c, a, b), "x[0].addmm(&x[1], &x[2], 1.0, 1.0)", 1e-5)
case("addmm beta 0 ignores nan", [T([[nan, inf, 1.0]]), a23, torch.randn(3, 3)], lambda c, a, b: torch.addmm(c, a, b, beta=0.0), "x[0].addmm(&x[1], &x[2], 0.0, 1.0)", 1e-5)
case("baddbmm", [torch.randn(1, 3), torch.randn(2, 2, 4), torch.randn(2, 4, 3)], lambda c, a, b: torch.baddbmm(c, a, b, beta=-1.0, alpha=0.5), "x[0].baddbmm(&x[1], &x[2], -1.0, 0.5)", 1e-5)

# diagonals
m34 = torch.arange(12.0).reshape(3, 4)
for off in [0, 1, 3, 4, -1, -2, -3]:
    case(f"diagonal offset {off}", [m34], lambda x, off=off: torch.diagonal(x, off), f"x[0].diagonal({off}, 0, 1)")
case("diagonal dims 2,0", [torch.randn(2, 3, 4)], lambda x: torch.diagonal(x, 1, 2, 0), "x[0].diagonal(1, 2, 0)")
case("diagonal neg dims", [torch.randn(2, 3, 4)], lambda x: torch.diagonal(x, -1, -1, -2), "x[0].diagonal(-1, -1, -2)")
case("diagonal transposed view", [torch.randn(3, 4)], lambda x: torch.diagonal(x.t(), 0), "x[0].t()?.diagonal(0, 0, 1)")
case("diag 1-D", [a3], lambda x: torch.diag(x), "x[0].diag(0)")
case("diag 1-D +2", [a3], lambda x: torch.diag(x, 2), "x[0].diag(2)")
case("diag 1-D -1", [a3], lambda x: torch.diag(x, -1), "x[0].diag(-1)")
case("diag 1-D int", [T([1, 2], dtype=torch.int32)], lambda x: torch.diag(x, 1), "x[0].diag(1)")
case("diag 2-D", [m34], lambda x: torch.diag(x, 1), "x[0].diag(1)")
case("diag empty", [torch.zeros(0)], lambda x: torch.diag(x, 1), "x[0].diag(1)")
case("trace", [m34], lambda x: torch.trace(x), "x[0].trace()")
case("trace int", [T([[1, 2], [3, 4]], dtype=torch.int32)], lambda x: torch.trace(x), "x[0].trace()")

# pointwise
s3 = torch.randn(2, 3)
e3 = torch.randn(2, 3)
case("lerp tensor weight", [s3, e3, T([-0.5, 0.25, 0.5])], lambda a, b, w: torch.lerp(a, b, w), "x[0].lerp(&x[1], &x[2])", 1e-6)
case("lerp scalar 0.3", [s3, e3[0]], lambda a, b: torch.lerp(a, b, 0.3), "x[0].lerp_scalar(&x[1], 0.3)", 1e-6)
case("lerp scalar 0.75", [s3, e3], lambda a, b: torch.lerp(a, b, 0.75), "x[0].lerp_scalar(&x[1], 0.75)", 1e-6)
case("lerp inf", [T([inf, 1.0, nan]), T([inf, -inf, 2.0])], lambda a, b: torch.lerp(a, b, 0.6), "x[0].lerp_scalar(&x[1], 0.6)", 1e-6)
la = T([1.0, -3.0, inf, -inf, nan, 0.5, 100.0, -inf, inf])
lb = T([2.0, -3.0, inf, -inf, 1.0, -inf, -100.0, 5.0, -inf])
case("logaddexp", [la, lb], lambda a, b: torch.logaddexp(a, b), "x[0].logaddexp(&x[1])", 1e-6)
case("logaddexp broadcast", [torch.randn(2, 1), torch.randn(3)], lambda a, b: torch.logaddexp(a, b), "x[0].logaddexp(&x[1])", 1e-6)
ha = T([3.0, 0.0, 1e30, -inf, nan, 1e-30, -5.0, 0.0])
hb = T([4.0, 0.0, 1e30, nan, 2.0, 1e-30, 12.0, -1.5])
case("hypot", [ha, hb], lambda a, b: torch.hypot(a, b), "x[0].hypot(&x[1])", 2e-7)
case("hypot int promotes", [T([3.0, 5.0]), T([4, 12], dtype=torch.int32)], lambda a, b: torch.hypot(a, b), "x[0].hypot(&x[1])")

# reductions
r = T([[1.0, 3.0, 3.0, nan], [2.0, 2.0, 0.0, 1.0], [-1.0, 5.0, 5.0, 4.0]])
case("amax dim 1", [r], lambda x: torch.amax(x, 1), "x[0].amax(&[1], false)")
case("amin dims 0,1 keepdim", [r[1:]], lambda x: torch.amin(x, (0, 1), keepdim=True), "x[0].amin(&[0, 1], true)")
case("amax all", [r[1:]], lambda x: torch.amax(x), "x[0].amax(&[], false)")
case("amax int", [T([[1, 7], [3, 2]], dtype=torch.int32)], lambda x: torch.amax(x, -1), "x[0].amax(&[-1], false)")
case("amax empty rows", [torch.zeros(0, 3)], lambda x: torch.amax(x, 1), "x[0].amax(&[1], false)")
case("aminmax min", [r[1:]], lambda x: torch.aminmax(x, dim=0).min, "Ok(x[0].aminmax(Some(0), false)?.0)")
case("aminmax max keepdim", [r[1:]], lambda x: torch.aminmax(x, dim=1, keepdim=True).max, "Ok(x[0].aminmax(Some(1), true)?.1)")
case("aminmax all keepdim", [r[1:]], lambda x: torch.aminmax(x, keepdim=True).max, "Ok(x[0].aminmax(None, true)?.1)")
case("aminmax all nan", [r], lambda x: torch.aminmax(x).min, "Ok(x[0].aminmax(None, false)?.0)")
v = torch.randn(3, 5)
case("var_mean var", [v], lambda x: torch.var_mean(x, 1)[0], "Ok(x[0].var_mean(&[1], 1, false)?.0)", 1e-5)
case("var_mean mean", [v], lambda x: torch.var_mean(x, 1, correction=0, keepdim=True)[1], "Ok(x[0].var_mean(&[1], 0, true)?.1)", 1e-6)
case("std_mean std", [v], lambda x: torch.std_mean(x, (0, 1))[0], "Ok(x[0].std_mean(&[0, 1], 1, false)?.0)", 1e-5)
case("std_mean mean", [v], lambda x: torch.std_mean(x)[1], "Ok(x[0].std_mean(&[], 1, false)?.1)", 1e-6)
case("count_nonzero", [T([[0.0, 1.0, nan], [-0.0, 0.0, 2.0]])], lambda x: torch.count_nonzero(x, 1), "x[0].count_nonzero(&[1])")
case("count_nonzero all int", [T([[0, 1], [2, 0]], dtype=torch.int32)], lambda x: torch.count_nonzero(x), "x[0].count_nonzero(&[])")
case("median all", [T([1.0, 2.0, 2.0, 1.0, 3.0, 2.0])], lambda x: torch.median(x), "x[0].median()")
case("median all even", [T([[4.0, 1.0], [3.0, 2.0]])], lambda x: torch.median(x), "x[0].median()")
case("median all nan", [T([1.0, nan, 3.0, nan])], lambda x: torch.median(x), "x[0].median()")
case("median all empty", [torch.zeros(0)], lambda x: torch.median(x), "x[0].median()")
case("median all int", [T([5, 1, 4, 2], dtype=torch.int32)], lambda x: torch.median(x), "x[0].median()")
md = T([[1.0, 2.0, 2.0, 1.0], [5.0, 5.0, 5.0, 5.0], [nan, 1.0, nan, 0.0], [2.0, -1.0, 2.0, nan], [3.0, 1.0, 2.0, 0.0]])
case("median dim values", [md], lambda x: torch.median(x, 1).values, "Ok(x[0].median_dim(1, false)?.0)")
case("median dim indices", [md], lambda x: torch.median(x, 1).indices, "Ok(x[0].median_dim(1, false)?.1)")
case("median dim 0 keepdim", [md], lambda x: torch.median(x, 0, keepdim=True).values, "Ok(x[0].median_dim(0, true)?.0)")
case("median dim 0 indices", [md], lambda x: torch.median(x, 0).indices, "Ok(x[0].median_dim(-2, false)?.1)")
ties = T([2.0, 1.0, 2.0, 1.0, 3.0, 2.0, 1.0, 2.0])
case("median dim ties", [ties], lambda x: torch.median(x, 0).indices, "Ok(x[0].median_dim(0, false)?.1)")
case("median dim 0-d", [T(4.0)], lambda x: torch.median(x, 0).values, "Ok(x[0].median_dim(0, false)?.0)")
case("median dim int", [T([[3, 1, 2], [7, 7, 1]], dtype=torch.int32)], lambda x: torch.median(x, 1).indices, "Ok(x[0].median_dim(1, false)?.1)")
case("median dim transposed", [torch.randn(5, 3)], lambda x: torch.median(x.t(), 1).values, "Ok(x[0].t()?.median_dim(1, false)?.0)")

# shapes
b = torch.randn(2, 3, 4)
case("movedim", [b], lambda x: torch.movedim(x, (0, 1), (2, 0)), "x[0].movedim(&[0, 1], &[2, 0])")
case("movedim neg", [b], lambda x: torch.movedim(x, -1, 0), "x[0].movedim(&[-1], &[0])")
case("swapaxes", [b], lambda x: torch.swapaxes(x, 0, -1), "x[0].swapaxes(0, -1)")
case("swapdims", [b], lambda x: torch.swapdims(x, 1, 2), "x[0].swapdims(1, 2)")
case("tile short", [a23], lambda x: torch.tile(x, (2,)), "x[0].tile(&[2])")
case("tile long", [a3], lambda x: torch.tile(x, (2, 1, 2)), "x[0].tile(&[2, 1, 2])")
case("tile 0-d", [T(2.0)], lambda x: torch.tile(x, (3,)), "x[0].tile(&[3])")
case("meshgrid ij 0", [a3, torch.randn(2)], lambda p, q: torch.meshgrid(p, q, indexing="ij")[0], "Ok(Tensor::meshgrid(&[&x[0], &x[1]], \"ij\")?.swap_remove(0))")
case("meshgrid ij 1", [a3, torch.randn(2)], lambda p, q: torch.meshgrid(p, q, indexing="ij")[1], "Ok(Tensor::meshgrid(&[&x[0], &x[1]], \"ij\")?.swap_remove(1))")
case("meshgrid xy 0", [a3, torch.randn(2), T(1.5)], lambda p, q, r: torch.meshgrid(p, q, r, indexing="xy")[0], "Ok(Tensor::meshgrid(&[&x[0], &x[1], &x[2]], \"xy\")?.swap_remove(0))")
case("meshgrid xy 2", [a3, torch.randn(2), T(1.5)], lambda p, q, r: torch.meshgrid(p, q, r, indexing="xy")[2], "Ok(Tensor::meshgrid(&[&x[0], &x[1], &x[2]], \"xy\")?.swap_remove(2))")

# 16-bit floats (computed in f32, rounded to the dtype)
case("lerp f16", [s3, e3], lambda a, b: torch.lerp(a.half(), b.half(), 0.3).float(), "x[0].half()?.lerp_scalar(&x[1].half()?, 0.3)?.float()", 1e-3)
case("logaddexp bf16", [la, lb], lambda a, b: torch.logaddexp(a.bfloat16(), b.bfloat16()).float(), "x[0].bfloat16()?.logaddexp(&x[1].bfloat16()?)?.float()", 1e-2)
case("hypot f16", [ha[:2], hb[:2]], lambda a, b: torch.hypot(a.half(), b.half()).float(), "x[0].half()?.hypot(&x[1].half()?)?.float()", 1e-3)
case("isinf f16", [special], lambda x: torch.isinf(x.half()), "x[0].half()?.isinf()")
case("median f16", [md], lambda x: torch.median(x.half(), 1).values.float(), "x[0].half()?.median_dim(1, false)?.0.float()", 1e-3)
case("median all f16", [T([1.0, 2.0, 2.0, 1.0, 3.0, 2.0])], lambda x: torch.median(x.half()).float(), "x[0].half()?.median()?.float()", 1e-3)
case("amax bf16", [r], lambda x: torch.amax(x.bfloat16(), 0).float(), "x[0].bfloat16()?.amax(&[0], false)?.float()", 1e-2)
case("diagonal f16", [m34], lambda x: torch.diagonal(x.half(), 1).float(), "x[0].half()?.diagonal(1, 0, 1)?.float()", 1e-3)
case("outer f16", [a3, a4], lambda a, b: torch.outer(a.half(), b.half()).float(), "x[0].half()?.outer(&x[1].half()?)?.float()", 1e-3)

# creation (inputs only give the device and shape)
case("linspace", [], lambda: torch.linspace(-1.3, 2.7, 7), "Tensor::linspace(-1.3, 2.7, 7, DType::F32, d)", 0.0)
case("linspace long", [], lambda: torch.linspace(-123.456, 0.789, 1001), "Tensor::linspace(-123.456, 0.789, 1001, DType::F32, d)", 0.0)
case("linspace down", [], lambda: torch.linspace(10, -3.3, 33), "Tensor::linspace(10.0, -3.3, 33, DType::F32, d)", 0.0)
case("linspace one", [], lambda: torch.linspace(3.5, 9, 1), "Tensor::linspace(3.5, 9.0, 1, DType::F32, d)", 0.0)
case("linspace zero", [], lambda: torch.linspace(3.5, 9, 0), "Tensor::linspace(3.5, 9.0, 0, DType::F32, d)", 0.0)
case("linspace int", [], lambda: torch.linspace(-3.7, 10.2, 9, dtype=torch.int32), "Tensor::linspace(-3.7, 10.2, 9, DType::I32, d)", 0.0)
case("linspace bf16", [], lambda: torch.linspace(-3.7, 10.2, 9, dtype=torch.bfloat16), "Tensor::linspace(-3.7, 10.2, 9, DType::BF16, d)", 0.0)
case("logspace", [], lambda: torch.logspace(-2, 2.5, 7), "Tensor::logspace(-2.0, 2.5, 7, 10.0, DType::F32, d)", 0.0)
case("logspace base 2", [], lambda: torch.logspace(0, 10, 11, base=2.0), "Tensor::logspace(0.0, 10.0, 11, 2.0, DType::F32, d)", 0.0)
case("eye", [], lambda: torch.eye(3), "Tensor::eye(3, None, DType::F32, d)", 0.0)
case("eye 2x4 int", [], lambda: torch.eye(2, 4, dtype=torch.int32), "Tensor::eye(2, Some(4), DType::I32, d)", 0.0)
case("eye 0", [], lambda: torch.eye(0, 3), "Tensor::eye(0, Some(3), DType::F32, d)", 0.0)
case("full_like", [T([[1, 2]], dtype=torch.int32)], lambda x: torch.full_like(x, 7.9), "x[0].full_like(7.9)", 0.0)

print("// @generated by torch_functions_gen.py from PyTorch", torch.__version__, "(CPU): do not edit.")
print("#![allow(clippy::excessive_precision, clippy::approx_constant, unused_variables)]")
print("use super::torch_functions::{Case, In};")
print("use wgrad_autograd::{DType, Tensor};")
print("pub(super) fn cases() -> Vec<Case> {")
print("    vec![")
print("\n".join(cases))
print("    ]")
print("}")
