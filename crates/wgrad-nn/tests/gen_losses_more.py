"""Writes tests/it/losses_more/cases.rs: the PyTorch expectations that
tests/it/losses_more.rs replays (outputs and input gradients of the distance
functions and the margin/embedding/likelihood losses).

Run with PyTorch 2.15 from crates/wgrad-nn: python3 tests/gen_losses_more.py
Each case's upstream gradient is the weights 1, 1.5, 2, 1, ... over the
output's elements (row-major), so a mixed-up element shows in the gradients.
"""

import json
import math

import torch
import torch.nn.functional as F

torch.manual_seed(0)
nan, inf = float("nan"), float("inf")
CASES = []


def lit(v):
    v = float(torch.tensor(v, dtype=torch.float32))
    if math.isnan(v):
        return "f32::NAN"
    if math.isinf(v):
        return "f32::INFINITY" if v > 0 else "f32::NEG_INFINITY"
    s = "%.9g" % v
    if "e" not in s and "." not in s:
        s += ".0"
    return s


def flat(t):
    return "&[" + ", ".join(lit(v) for v in t.detach().reshape(-1).tolist()) + "]"


def shape(s):
    return "&[" + ", ".join(str(d) for d in s) + "]"


def inp(data, grad=True, t=False):
    """An input: data (a tensor or nested list), whether it requires grad,
    whether it is passed transposed (a non-contiguous view of a 2-D base)."""
    return (torch.as_tensor(data, dtype=torch.float32), grad, t)


def case(name, torch_fn, rust, inputs):
    leaves, args = [], []
    for data, grad, t in inputs:
        base = (data.t().contiguous() if t else data).clone().requires_grad_(grad)
        leaves.append(base)
        args.append(base.t() if t else base)
    out = torch_fn(*args)
    if any(g for _, g, _ in inputs) and out.requires_grad:
        w = torch.tensor([1.0 + 0.5 * (i % 3) for i in range(out.numel())]).reshape(out.shape)
        (out * w).sum().backward()
    grads = []
    for base, (_, g, _) in zip(leaves, inputs):
        if g:
            gr = base.grad if base.grad is not None else torch.zeros_like(base)
            grads.append(flat(gr))
    ins = ", ".join(
        "In { data: %s, shape: %s, grad: %s, t: %s }"
        % (flat(b), shape(b.shape), "true" if g else "false", "true" if t else "false")
        for b, (_, g, t) in zip(leaves, inputs)
    )
    CASES.append(
        "    Case {\n        name: %s,\n        f: |x| %s,\n        inputs: &[%s],\n"
        "        out_shape: %s,\n        out: %s,\n        grads: &[%s],\n    },"
        % (json.dumps(name), rust, ins, shape(out.shape), flat(out), ", ".join(grads))
    )


RED = [("none", "Reduction::None"), ("mean", "Reduction::Mean"), ("sum", "Reduction::Sum")]


def r(*shape, scale=1.0):
    return torch.randn(*shape) * scale


# ---- normalize ----
x = r(3, 4)
x[1] = 0.0
case("normalize p2 dim1", lambda x: F.normalize(x), "normalize(&x[0], 2.0, 1, 1e-12)", [inp(x)])
case("normalize p1 dim0", lambda x: F.normalize(x, p=1, dim=0), "normalize(&x[0], 1.0, 0, 1e-12)", [inp(x)])
case("normalize inf dim-1 t", lambda x: F.normalize(x, p=inf, dim=-1),
     "normalize(&x[0], f32::INFINITY, -1, 1e-12)", [inp(r(4, 3), t=True)])
case("normalize p3", lambda x: F.normalize(x, p=3.0, dim=1), "normalize(&x[0], 3.0, 1, 1e-12)", [inp(r(2, 5))])
small = torch.tensor([[0.1, -0.2, 0.05], [3.0, 4.0, 0.0]])
case("normalize below eps", lambda x: F.normalize(x, eps=0.5), "normalize(&x[0], 2.0, 1, 0.5)", [inp(small)])
case("normalize 0d", lambda x: F.normalize(x, dim=0), "normalize(&x[0], 2.0, 0, 1e-12)", [inp(-2.5)])
case("normalize empty", lambda x: F.normalize(x), "normalize(&x[0], 2.0, 1, 1e-12)", [inp(torch.zeros(0, 3))])
case("normalize nan", lambda x: F.normalize(x), "normalize(&x[0], 2.0, 1, 1e-12)",
     [inp([[1.0, nan], [1.0, 2.0]])])

# ---- cosine_similarity ----
a, b = r(4, 5), r(4, 5)
a[1] = 0.0
a[2] = a[2] * 1e-9
case("cos dim1", lambda a, b: F.cosine_similarity(a, b), "cosine_similarity(&x[0], &x[1], 1, 1e-8)", [inp(a), inp(b)])
case("cos dim0 t", lambda a, b: F.cosine_similarity(a, b, dim=0),
     "cosine_similarity(&x[0], &x[1], 0, 1e-8)", [inp(r(4, 5), t=True), inp(r(4, 5))])
case("cos broadcast", lambda a, b: F.cosine_similarity(a, b, dim=-1),
     "cosine_similarity(&x[0], &x[1], -1, 1e-8)", [inp(r(3, 1, 4)), inp(r(2, 4))])
case("cos 1d", lambda a, b: F.cosine_similarity(a, b, dim=0), "cosine_similarity(&x[0], &x[1], 0, 1e-8)",
     [inp(r(6)), inp(r(6))])
case("cos 0d", lambda a, b: F.cosine_similarity(a, b, dim=0), "cosine_similarity(&x[0], &x[1], 0, 1e-8)",
     [inp(-1.5), inp(2.0)])
case("cos big eps", lambda a, b: F.cosine_similarity(a, b, eps=0.5),
     "cosine_similarity(&x[0], &x[1], 1, 0.5)", [inp([[0.1, 0.2], [1.0, 2.0]]), inp([[0.3, -0.1], [0.2, 0.1]])])
case("cos zeros", lambda a, b: F.cosine_similarity(a, b), "cosine_similarity(&x[0], &x[1], 1, 1e-8)",
     [inp([[0.0, 0.0], [0.0, 0.0]]), inp([[0.0, 0.0], [1.0, 2.0]])])
case("cos empty", lambda a, b: F.cosine_similarity(a, b), "cosine_similarity(&x[0], &x[1], 1, 1e-8)",
     [inp(torch.zeros(0, 3)), inp(torch.zeros(0, 3))])
case("cos nan", lambda a, b: F.cosine_similarity(a, b), "cosine_similarity(&x[0], &x[1], 1, 1e-8)",
     [inp([[nan, 1.0], [1.0, 1.0]]), inp([[1.0, 1.0], [2.0, -1.0]])])

# ---- pairwise_distance ----
a, b = r(4, 5), r(4, 5)
b[2] = a[2]
case("pd p2", lambda a, b: F.pairwise_distance(a, b), "pairwise_distance(&x[0], &x[1], 2.0, 1e-6, false)",
     [inp(a), inp(b)])
case("pd p2 eps0 equal", lambda a, b: F.pairwise_distance(a, b, eps=0.0),
     "pairwise_distance(&x[0], &x[1], 2.0, 0.0, false)", [inp(a), inp(b)])
case("pd p1 keepdim", lambda a, b: F.pairwise_distance(a, b, p=1, keepdim=True),
     "pairwise_distance(&x[0], &x[1], 1.0, 1e-6, true)", [inp(a), inp(b)])
case("pd inf ties", lambda a, b: F.pairwise_distance(a, b, p=inf, eps=0.0),
     "pairwise_distance(&x[0], &x[1], f32::INFINITY, 0.0, false)",
     [inp([[1.0, -2.0, 0.5]]), inp([[3.0, 0.0, 0.0]])])
case("pd p3 t", lambda a, b: F.pairwise_distance(a, b, p=3),
     "pairwise_distance(&x[0], &x[1], 3.0, 1e-6, false)", [inp(r(3, 5), t=True), inp(r(3, 5))])
case("pd p0", lambda a, b: F.pairwise_distance(a, b, p=0),
     "pairwise_distance(&x[0], &x[1], 0.0, 1e-6, false)", [inp(a), inp(b)])
case("pd broadcast", lambda a, b: F.pairwise_distance(a, b),
     "pairwise_distance(&x[0], &x[1], 2.0, 1e-6, false)", [inp(r(3, 1, 4)), inp(r(2, 4))])
case("pd 0d", lambda a, b: F.pairwise_distance(a, b), "pairwise_distance(&x[0], &x[1], 2.0, 1e-6, false)",
     [inp(1.0), inp(3.5)])
case("pd 1d vs 0d", lambda a, b: F.pairwise_distance(a, b),
     "pairwise_distance(&x[0], &x[1], 2.0, 1e-6, false)", [inp([3.0, 4.0]), inp(1.0)])
case("pd empty", lambda a, b: F.pairwise_distance(a, b), "pairwise_distance(&x[0], &x[1], 2.0, 1e-6, false)",
     [inp(torch.zeros(0, 4)), inp(torch.zeros(0, 4))])
case("pd empty cols", lambda a, b: F.pairwise_distance(a, b),
     "pairwise_distance(&x[0], &x[1], 2.0, 1e-6, false)", [inp(torch.zeros(2, 0)), inp(torch.zeros(2, 0))])

# ---- cdist ----
a, b = r(3, 4), r(2, 4)
b[1] = a[0]
case("cdist p2", lambda a, b: torch.cdist(a, b), "cdist(&x[0], &x[1], 2.0)", [inp(a), inp(b)])
case("cdist p1", lambda a, b: torch.cdist(a, b, p=1), "cdist(&x[0], &x[1], 1.0)", [inp(a), inp(b)])
case("cdist p3", lambda a, b: torch.cdist(a, b, p=3), "cdist(&x[0], &x[1], 3.0)", [inp(a), inp(b)])
case("cdist p0.5", lambda a, b: torch.cdist(a, b, p=0.5), "cdist(&x[0], &x[1], 0.5)", [inp(a), inp(b)])
case("cdist p0", lambda a, b: torch.cdist(a, b, p=0), "cdist(&x[0], &x[1], 0.0)", [inp(a), inp(b)])
ia = torch.randint(-3, 4, (3, 4)).float()
ib = torch.randint(-3, 4, (2, 4)).float()
case("cdist inf ties", lambda a, b: torch.cdist(a, b, p=inf), "cdist(&x[0], &x[1], f32::INFINITY)",
     [inp(ia), inp(ib)])
case("cdist batched", lambda a, b: torch.cdist(a, b), "cdist(&x[0], &x[1], 2.0)", [inp(r(2, 3, 4)), inp(r(2, 5, 4))])
case("cdist batch broadcast p1", lambda a, b: torch.cdist(a, b, p=1), "cdist(&x[0], &x[1], 1.0)",
     [inp(r(2, 1, 3, 2)), inp(r(3, 2, 2))])
case("cdist t", lambda a, b: torch.cdist(a, b), "cdist(&x[0], &x[1], 2.0)", [inp(r(4, 3), t=True), inp(r(5, 3))])
# More than 25 rows: PyTorch's matrix-product path. Integer coordinates keep
# every product exact, so repeated rows are exactly 0 apart on both sides.
ma = torch.randint(-3, 4, (30, 3)).float()
mb = torch.randint(-3, 4, (4, 3)).float()
mb[0] = ma[5]
mb[2] = ma[17]
case("cdist mm path", lambda a, b: torch.cdist(a, b), "cdist(&x[0], &x[1], 2.0)", [inp(ma), inp(mb)])
case("cdist mm batched", lambda a, b: torch.cdist(a, b), "cdist(&x[0], &x[1], 2.0)",
     [inp(torch.randint(-3, 4, (2, 3, 2)).float()), inp(torch.randint(-3, 4, (1, 27, 2)).float())])
# Random coordinates through the product path: its rounding, not exact.
case("cdist mm random", lambda a, b: torch.cdist(a, b), "cdist(&x[0], &x[1], 2.0)", [inp(r(30, 5)), inp(r(26, 5))])
case("cdist empty rows", lambda a, b: torch.cdist(a, b), "cdist(&x[0], &x[1], 2.0)",
     [inp(torch.zeros(0, 3)), inp(r(2, 3))])
case("cdist empty cols", lambda a, b: torch.cdist(a, b, p=inf), "cdist(&x[0], &x[1], f32::INFINITY)",
     [inp(torch.zeros(2, 0)), inp(torch.zeros(3, 0))])

# ---- losses ----
for red, rr in RED:
    x1 = torch.tensor([1.0, 1.0, 1.0, 2.0, -0.3, 0.7])
    x2 = torch.tensor([1.5, 0.5, 0.0, 0.0, 0.4, 0.2])
    t = torch.tensor([1.0, 1.0, -1.0, 0.0, -1.0, 1.0])
    case(f"margin_ranking {red}", lambda a, b, t: F.margin_ranking_loss(a, b, t, margin=0.5, reduction=red),
         f"margin_ranking_loss(&x[0], &x[1], &x[2], 0.5, {rr})", [inp(x1), inp(x2), inp(t)])
    case(f"margin_ranking 2d broadcast {red}",
         lambda a, b, t: F.margin_ranking_loss(a, b, t, reduction=red),
         f"margin_ranking_loss(&x[0], &x[1], &x[2], 0.0, {rr})",
         [inp(r(3, 1)), inp(r(1, 4)), inp(torch.randint(0, 2, (3, 4)).float() * 2 - 1, grad=False)])

    xh = torch.tensor([1.0, 1.0, 0.5, 2.0, -3.0, 0.3, 0.0, nan])
    th = torch.tensor([-1.0, 1.0, -1.0, -1.0, 1.0, 0.0, -1.0, -1.0])
    case(f"hinge {red}", lambda x, t: F.hinge_embedding_loss(x, t, reduction=red),
         f"hinge_embedding_loss(&x[0], &x[1], 1.0, {rr})", [inp(xh), inp(th, grad=False)])
    case(f"hinge broadcast margin {red}", lambda x, t: F.hinge_embedding_loss(x, t, margin=0.5, reduction=red),
         f"hinge_embedding_loss(&x[0], &x[1], 0.5, {rr})",
         [inp(r(3, 1)), inp(torch.tensor([1.0, -1.0]), grad=False)])

    xs = torch.tensor([[0.0, 1.0, -2.0], [100.0, -100.0, 0.5]])
    ts = torch.tensor([[1.0, -1.0, 1.0], [-1.0, 1.0, -1.0]])
    case(f"soft_margin {red}", lambda x, t: F.soft_margin_loss(x, t, reduction=red),
         f"soft_margin_loss(&x[0], &x[1], {rr})", [inp(xs), inp(ts, grad=False)])
    case(f"soft_margin broadcast t {red}", lambda x, t: F.soft_margin_loss(x, t, reduction=red),
         f"soft_margin_loss(&x[0], &x[1], {rr})", [inp(r(2, 3), t=True), inp(torch.tensor([1.0, -1.0, 1.0]), grad=False)])

    c1 = torch.tensor([[0.0, 0.0, 0.0], [1.0, 2.0, 0.5], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.3, -1.0, 2.0]])
    c2 = torch.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [1.0, 0.2, 0.0], [1.0, 0.0, 0.0], [-0.5, 0.8, 1.0]])
    ct = torch.tensor([1.0, -1.0, -1.0, 0.0, -1.0])
    case(f"cosine_embedding {red}",
         lambda a, b, t: F.cosine_embedding_loss(a, b, t, margin=0.2, reduction=red),
         f"cosine_embedding_loss(&x[0], &x[1], &x[2], 0.2, {rr})", [inp(c1), inp(c2), inp(ct, grad=False)])
    case(f"cosine_embedding 1d {red}", lambda a, b, t: F.cosine_embedding_loss(a, b, t, reduction=red),
         f"cosine_embedding_loss(&x[0], &x[1], &x[2], 0.0, {rr})", [inp(r(4)), inp(r(4)), inp(-1.0, grad=False)])
    case(f"cosine_embedding t {red}", lambda a, b, t: F.cosine_embedding_loss(a, b, t, margin=-0.5, reduction=red),
         f"cosine_embedding_loss(&x[0], &x[1], &x[2], -0.5, {rr})",
         [inp(r(4, 3), t=True), inp(r(4, 3)), inp(torch.tensor([1.0, -1.0, -1.0, 1.0]), grad=False)])

    an, po, ne = r(4, 5), r(4, 5), r(4, 5)
    case(f"triplet {red}", lambda a, p, n: F.triplet_margin_loss(a, p, n, reduction=red),
         f"triplet_margin_loss(&x[0], &x[1], &x[2], 1.0, 2.0, 1e-6, false, {rr})", [inp(an), inp(po), inp(ne)])
    case(f"triplet swap p1 {red}",
         lambda a, p, n: F.triplet_margin_loss(a, p, n, margin=2.0, p=1, swap=True, reduction=red),
         f"triplet_margin_loss(&x[0], &x[1], &x[2], 2.0, 1.0, 1e-6, true, {rr})", [inp(an), inp(po), inp(ne)])
    case(f"triplet boundary {red}",
         lambda a, p, n: F.triplet_margin_loss(a, p, n, eps=0.0, swap=True, reduction=red),
         f"triplet_margin_loss(&x[0], &x[1], &x[2], 1.0, 2.0, 0.0, true, {rr})",
         [inp([[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]]), inp([[3.0, 4.0], [0.0, 0.0], [1.0, 0.0]]),
          inp([[0.0, 6.0], [0.0, 0.0], [0.5, 1.0]])])
    case(f"triplet 1d broadcast {red}",
         lambda a, p, n: F.triplet_margin_loss(a, p, n, margin=0.5, reduction=red),
         f"triplet_margin_loss(&x[0], &x[1], &x[2], 0.5, 2.0, 1e-6, false, {rr})",
         [inp(r(3, 4)), inp(r(1, 4)), inp(r(3, 4), t=False)])

    xp = torch.tensor([0.0, 1.0, -2.0, 3.0, 0.5, 2.5])
    tp = torch.tensor([0.0, 1.0, 2.0, 5.0, 1.5, 0.5])
    case(f"poisson {red}", lambda x, t: F.poisson_nll_loss(x, t, reduction=red),
         f"poisson_nll_loss(&x[0], &x[1], true, false, 1e-8, {rr})", [inp(xp), inp(tp)])
    case(f"poisson rate full {red}", lambda x, t: F.poisson_nll_loss(x, t, log_input=False, full=True, reduction=red),
         f"poisson_nll_loss(&x[0], &x[1], false, true, 1e-8, {rr})", [inp(xp.abs()), inp(tp + 0.25)])
    case(f"poisson full broadcast {red}", lambda x, t: F.poisson_nll_loss(x, t, full=True, eps=1e-3, reduction=red),
         f"poisson_nll_loss(&x[0], &x[1], true, true, 1e-3, {rr})",
         [inp(r(3, 1)), inp(torch.tensor([0.0, 1.0, 2.0, 7.0]))])

    xg, tg = r(4, 3), r(4, 3)
    vg = r(4, 3).abs()
    vg[0, 0] = 0.0
    vg[1, 2] = 1e-8
    case(f"gaussian {red}", lambda x, t, v: F.gaussian_nll_loss(x, t, v, reduction=red),
         f"gaussian_nll_loss(&x[0], &x[1], &x[2], false, 1e-6, {rr})", [inp(xg), inp(tg), inp(vg)])
    case(f"gaussian row var full {red}",
         lambda x, t, v: F.gaussian_nll_loss(x, t, v, full=True, eps=1e-2, reduction=red),
         f"gaussian_nll_loss(&x[0], &x[1], &x[2], true, 1e-2, {rr})",
         [inp(xg), inp(tg), inp(torch.tensor([0.5, 0.0, 2.0, 0.005]))])
    case(f"gaussian one mismatch {red}", lambda x, t, v: F.gaussian_nll_loss(x, t, v, reduction=red),
         f"gaussian_nll_loss(&x[0], &x[1], &x[2], false, 1e-6, {rr})",
         [inp(xg), inp(r(3)), inp(r(1, 3).abs())])
    case(f"gaussian float var {red}", lambda x, t: F.gaussian_nll_loss(x, t, 0.5, reduction=red),
         f"gaussian_nll_loss(&x[0], &x[1], 0.5, false, 1e-6, {rr})", [inp(xg, t=False), inp(tg)])

    xm = torch.tensor([[0.0, 1.0, -2.0], [30.0, -30.0, 0.5]])
    tm = torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    case(f"multilabel {red}", lambda x, t: F.multilabel_soft_margin_loss(x, t, reduction=red),
         f"multilabel_soft_margin_loss(&x[0], &x[1], None, {rr})", [inp(xm), inp(tm)])
    case(f"multilabel weight {red}",
         lambda x, t, w: F.multilabel_soft_margin_loss(x, t, weight=w, reduction=red),
         f"multilabel_soft_margin_loss(&x[0], &x[1], Some(&x[2]), {rr})",
         [inp(xm), inp(tm, grad=False), inp([1.0, 2.0, 0.5])])
    case(f"multilabel 3d t {red}", lambda x, t: F.multilabel_soft_margin_loss(x, t, reduction=red),
         f"multilabel_soft_margin_loss(&x[0], &x[1], None, {rr})",
         [inp(r(4, 3), t=True), inp(torch.randint(0, 2, (4, 3)).float(), grad=False)])

# Empty batches: 'mean' is NaN, 'sum' 0, as PyTorch.
for red, rr in RED:
    z = torch.zeros(0)
    case(f"margin_ranking empty {red}", lambda a, b, t: F.margin_ranking_loss(a, b, t, reduction=red),
         f"margin_ranking_loss(&x[0], &x[1], &x[2], 0.0, {rr})", [inp(z), inp(z), inp(z, grad=False)])
    case(f"triplet empty {red}", lambda a, p, n: F.triplet_margin_loss(a, p, n, reduction=red),
         f"triplet_margin_loss(&x[0], &x[1], &x[2], 1.0, 2.0, 1e-6, false, {rr})",
         [inp(torch.zeros(0, 3)), inp(torch.zeros(0, 3)), inp(torch.zeros(0, 3))])
    case(f"multilabel empty classes {red}", lambda x, t: F.multilabel_soft_margin_loss(x, t, reduction=red),
         f"multilabel_soft_margin_loss(&x[0], &x[1], None, {rr})",
         [inp(torch.zeros(2, 0)), inp(torch.zeros(2, 0), grad=False)])

with open("tests/it/losses_more/cases.rs", "w") as f:
    f.write("//! Generated by tests/gen_losses_more.py from PyTorch %s: do not edit.\n" % torch.__version__)
    f.write("//! Outputs and input gradients (of the output weighted 1, 1.5, 2, 1, ...)\n")
    f.write("//! of torch.nn.functional / torch.cdist.\n\n")
    f.write("use super::{Case, In};\nuse wgrad_nn::loss::*;\nuse wgrad_nn::*;\n\n")
    f.write("#[rustfmt::skip]\n#[allow(clippy::excessive_precision, clippy::approx_constant)]\n")
    f.write("pub const CASES: &[Case] = &[\n" + "\n".join(CASES) + "\n];\n")
print(len(CASES), "cases")
